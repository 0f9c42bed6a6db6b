"""The record of what ``esrag sync`` did (issue 39), apart from the syncing itself
(:mod:`esrag.gitsync`) so that readers of it — ``resolve_library`` and ``llms.txt`` taking a
source's site title, ``esrag status`` — need not import the sync: per source and version the
commit indexed, when, the outcome of the last attempt and what the version's site says of
itself, as JSON beside the store (:func:`state_path`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from esrag.config import Settings
from esrag.errors import ConfigError


@dataclass
class VersionState:
    """What esrag knows of one version of a source (a ``--json`` contract of ``esrag sync`` and
    ``esrag status``): ``ref`` (the branch or tag), ``commit`` indexed last ('' = none yet),
    ``indexed_at`` (Unix seconds of that commit's ingest; 0 = never), ``synced_at`` (when the
    version was last found to hold its ref's commit: indexed or unchanged; what ``esrag status``
    ages), ``checked_at`` (of the last attempt, whatever its outcome),
    ``outcome`` of the last attempt (``indexed``, ``unchanged``, ``error``, ``refused``,
    ``removed``), its one-line ``error`` ('' when none) and ``settings``, the digest of the
    source's settings the commit was indexed with (:func:`esrag.gitsync.settings_digest`; '' = not recorded):
    a version whose commit did not move but whose settings did is indexed again. ``title`` and
    ``description``: what the version's site configuration says of itself
    (:attr:`esrag.sites.Site.title`; '' = nothing), for ``resolve_library`` and ``llms.txt``
    (:func:`site_titles`)."""

    ref: str
    commit: str = ""
    synced_at: float = 0.0
    indexed_at: float = 0.0
    checked_at: float = 0.0
    outcome: str = ""
    error: str = ""
    settings: str = ""
    title: str = ""
    description: str = ""


class SyncState:
    """The sync record beside the store: ``{"sources": {NAME: {VERSION: VersionState}}}`` as JSON
    in :func:`state_path`, written whole (to a temporary file, then renamed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sources: dict[str, dict[str, VersionState]] = {}
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.sources = {
                    name: {v: VersionState(**row) for v, row in versions.items()} for name, versions in data.get("sources", {}).items()
                }
            except (ValueError, TypeError, AttributeError, OSError) as exc:  # not JSON, or not its shape
                raise ConfigError(f"{path}: unreadable sync state ({exc}); delete it and run esrag sync again") from None

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        data = {"sources": {n: {v: asdict(s) for v, s in vs.items()} for n, vs in self.sources.items()}}
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(self.path)


def data_dir(settings: Settings) -> Path:
    """Where mirrors, work trees and the sync state live: the embedded store's folder (also
    with Elasticsearch: ``.esrag`` under the working directory unless ``ESRAG_DB`` says
    otherwise), as an absolute path — git runs in other folders (``git -C``), where a relative
    one would name nothing."""
    return settings.db_path.absolute().parent


def state_path(settings: Settings) -> Path:
    """The sync state of the configured store, in :func:`data_dir`: ``sync-state-sqlite-<file
    stem>.json`` for the SQLite file, ``sync-state-es-<alias>.json`` for an Elasticsearch alias."""
    if settings.store_name == "sqlite":
        return data_dir(settings) / f"sync-state-sqlite-{settings.db_path.stem}.json"
    return data_dir(settings) / f"sync-state-es-{re.sub(r'[^A-Za-z0-9._-]', '_', settings.index)}.json"


def site_titles(settings: Settings, versions: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """``{source: {"title", "description"}}``: what each synced source's site configuration
    says of itself (MkDocs ``site_name``, Docusaurus ``title``/``tagline``… :class:`esrag.sites.
    generator.Detected`), of its version in ``versions`` (``{corpus: version}``, e.g. the
    default ones) when it has that version, else of its most recently indexed version whose
    site says something; sources (or wanted versions) whose site says nothing, and sources no
    longer in ``[sources]``, are left out.
    Read from the sync state (:func:`state_path`); an unreadable state gives ``{}`` (a search
    must not fail for it: ``esrag sync`` and ``esrag status`` report it)."""
    try:
        sources = SyncState(state_path(settings)).sources
    except ConfigError:
        return {}
    out: dict[str, dict[str, str]] = {}
    for name, rows in sources.items():
        if name not in settings.sources:  # a source taken out of the configuration: a corpus by that name is another's
            continue
        said = [r for r in rows.values() if r.title or r.description]
        wanted = (versions or {}).get(name)
        row = rows[wanted] if wanted in rows else max(said, key=lambda r: r.indexed_at) if said else None
        if row is not None and (row.title or row.description):
            out[name] = {"title": row.title, "description": row.description}
    return out
