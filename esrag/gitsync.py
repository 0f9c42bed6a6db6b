"""Git sources kept fresh: ``esrag sync`` (issue 39, "Sources in configuration").

Each ``[sources.NAME]`` (:class:`esrag.config.SourceSettings`) has a bare partial mirror
(``git clone --mirror --filter=blob:none``; later runs ``git fetch --prune``, so only what changed
comes over) at ``<data dir>/sources/NAME.git`` and, per indexed ref, a sparse detached work tree of
its ``path`` at ``<data dir>/sources/NAME/<version>`` (only that folder's blobs are fetched). A ref
whose commit is the one indexed last is skipped; otherwise its work tree moves to the new commit
(git rewrites only the files that changed) and the normal incremental ingest
(:func:`esrag.app.ingest_tree`, corpus NAME, doc_version = the ref) re-embeds only changed chunks,
through the deletion guard. ``<data dir>`` is the folder of the embedded store
(``Settings.db_path.parent``, as the embedding cache).

Rules (docs/hub.md "Host a docs hub"):

* a ref named in ``refs`` that the repository does not have is a one-line error; that version is
  left as it was;
* a version indexed before that no ref selects any more (a tag gone from a pattern's matches, a ref
  taken out of ``refs``, one pushed out of ``last``) is removed, unless that would delete more than
  ``[ingest] max_delete_fraction`` of the corpus's chunks (``--allow-delete`` overrides);
* a ref that moved to a commit not descending from the one indexed last (a force-push, a moved tag)
  is a one-line error unless ``allow_force_push``;
* the token in ``ESRAG_SOURCE_<NAME>_TOKEN`` (:func:`token_variable`) reaches git only through its
  environment (``GIT_CONFIG_COUNT``/``KEY``/``VALUE``: an ``http.extraHeader``), never argv; every
  message is scrubbed of it and of URL userinfo (:func:`esrag.urls.scrub_credentials`).

What each run did is kept per source and version in ``sync-state*.json`` beside the store
(:class:`esrag.sync_state.SyncState`): the commit indexed, when, and the outcome of the last attempt.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from esrag.config import Settings, SourceSettings
from esrag.errors import ConfigError, EsragError
from esrag.ingest import DeletionGuard
from esrag.stores.base import Store
from esrag.stores.staged import StagedStore, SwapGate
from esrag.sync_state import SyncState, VersionState, data_dir, state_path
from esrag.urls import scrub_credentials

if TYPE_CHECKING:
    from esrag.sites import Site

#: seconds one git command may take (a first mirror of a large repository included)
GIT_TIMEOUT = 1800
#: git variables that would print request headers (the token) or prompt for a password
_GIT_DROP = ("GIT_TRACE", "GIT_TRACE_CURL", "GIT_TRACE_PACKET", "GIT_CURL_VERBOSE", "GIT_ASKPASS", "SSH_ASKPASS")


class SyncError(EsragError):
    """One source or one version of it could not be synced; one line naming ``[sources.NAME]``."""


def token_variable(name: str) -> str:
    """``ESRAG_SOURCE_<NAME>_TOKEN``: ``name`` upper-cased, every character but A-Z/0-9 as ``_``
    (``docs-hub.v2`` -> ``ESRAG_SOURCE_DOCS_HUB_V2_TOKEN``)."""
    return "ESRAG_SOURCE_" + re.sub(r"[^A-Z0-9]", "_", name.upper()) + "_TOKEN"


def version_key(name: str) -> tuple:
    """Sort key of ref names in version order: digit runs compare as numbers (``v5.10`` > ``v5.9``),
    a name with fewer parts first (``v5`` < ``v5.0``), text parts as text."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|[^\d.\-_/]+", name))


def select_refs(patterns: list[str], last: int | None, available: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The versions to index: ``({ref: commit}, [missing])``. A plain name is taken when
    ``available`` (``{short ref name: commit}``) has it, else listed in ``missing``; a pattern
    (``*``, ``?``, ``[``) takes every name it matches (``fnmatch``), only the ``last`` highest by
    :func:`version_key` when ``last`` is set (a pattern matching nothing is not missing)."""
    chosen: dict[str, str] = {}
    missing = []
    for pattern in patterns:
        if is_pattern(pattern):
            names = sorted((n for n in available if fnmatch.fnmatchcase(n, pattern)), key=version_key, reverse=True)
            for n in names[:last] if last else names:
                chosen[n] = available[n]
        elif pattern in available:
            chosen[pattern] = available[pattern]
        else:
            missing.append(pattern)
    return chosen, missing


def is_pattern(ref: str) -> bool:
    """Whether a ``refs`` entry is a shell-style pattern (holds ``*``, ``?`` or ``[``), not a name."""
    return any(c in ref for c in "*?[")


def unmatched_patterns(patterns: list[str], available: dict[str, str]) -> list[str]:
    """The patterns of ``patterns`` (:func:`is_pattern`) that match none of ``available``'s
    names: most often a typo, so ``esrag sync`` names them instead of indexing nothing quietly."""
    return [p for p in patterns if is_pattern(p) and not any(fnmatch.fnmatchcase(n, p) for n in available)]


def settings_digest(source: SourceSettings) -> str:
    """SHA-256 (16 hex digits) of what a source's settings make of its files: everything but
    where and which refs to fetch (``git``, ``refs``, ``last``, ``allow_force_push``), i.e.
    ``path`` and the corpus settings (site, base_url…)."""
    shaping = source.model_dump(mode="json", exclude={"git", "refs", "last", "allow_force_push"})
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]


def is_remote(url: str) -> bool:
    """True for a clone URL (``scheme://`` or scp-like ``user@host:path``), False for a local path."""
    return "://" in url or bool(re.match(r"^[\w.\-]+@[\w.\-]+:", url))


class Git:
    """git commands for one source, with its token in the environment only.

    ``token`` (may be None) becomes ``http.extraHeader: Authorization: Basic
    base64(x-access-token:TOKEN)`` through ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_0``/
    ``GIT_CONFIG_VALUE_0`` (the form GitHub, GitLab and Gitea accept for a token); prompts are off.
    """

    def __init__(self, source: str, token: str | None) -> None:
        self.source = source
        self._secrets = [t for t in (token,) if t]
        env = {k: v for k, v in os.environ.items() if k not in _GIT_DROP and not k.startswith("GIT_CONFIG_")}
        env.update(GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never", GIT_CONFIG_COUNT="0")
        if token:
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.extraHeader", GIT_CONFIG_VALUE_0=f"Authorization: Basic {basic}")
            self._secrets.append(basic)
        self.env = env

    def scrub(self, text: str) -> str:
        """``text`` without the token (also base64-encoded) and without URL userinfo."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return scrub_credentials(text)

    def run(self, *args: str, cwd: Path | None = None) -> str:
        """stdout of ``git args`` (in ``cwd``).

        Raises:
            SyncError: git failed or timed out; names the source, the git command and git's last
                line of stderr, scrubbed (:meth:`scrub`).
        """
        try:
            proc = subprocess.run(
                ["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise SyncError(self.scrub(f"[sources.{self.source}]: git {args[0]} took over {GIT_TIMEOUT} s")) from None
        except OSError as exc:
            raise SyncError(f"[sources.{self.source}]: cannot run git: {exc}") from None
        if proc.returncode != 0:
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith(("hint:", "warning:"))]
            raise SyncError(
                self.scrub(f"[sources.{self.source}]: git {args[0]} failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
            )
        return proc.stdout


def _slug(version: str) -> str:
    """A folder name for ``version``, unique per name (``release/5.x`` -> ``release_5.x-1a2b3c4d``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", version) + "-" + hashlib.sha1(version.encode()).hexdigest()[:8]


@dataclass
class SourceReport:
    """What ``esrag sync`` did to one source (``--json``: :meth:`to_dict`): ``versions``
    ``{version: VersionState as a dict, plus "summary" (the ingest's counts) when indexed}``,
    ``removed`` (versions deleted, with their chunk counts), a source-wide ``error`` and
    ``ref_warnings``: one line per ``refs`` pattern that matches no branch or tag (most often a
    typo, but ``v6.*`` before v6 exists, or after its tags were deleted, is not one: a warning,
    not a failure)."""

    name: str
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    error: str = ""
    ref_warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.error) or any(v["outcome"] in ("error", "refused") for v in self.versions.values())

    def errors(self) -> list[str]:
        """Every one-line error of the report: the source's, then its versions'."""
        return [e for e in (self.error, *(row.get("error", "") for row in self.versions.values())) if e]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.name,
            "versions": self.versions,
            "removed": self.removed,
            "error": self.error,
            "ref_warnings": self.ref_warnings,
        }


def check_sources(settings: Settings, names: list[str]) -> list[str]:
    """The sources to sync: ``names`` (all of ``[sources]`` when empty), in order.

    Raises:
        ConfigError: no ``[sources.NAME]`` is configured; a name is not one of them (lists
            them); a local ``git`` path is not a folder. (A name that is both a source and a
            ``[corpora.NAME]`` is refused when the settings load.)
    """
    if not settings.sources:
        raise ConfigError("no [sources.NAME] in the settings: add one with git and refs (docs/hub.md)")
    for name in names:
        if name not in settings.sources:
            raise ConfigError(f"esrag sync {name}: no [sources.{name}] (sources: {', '.join(sorted(settings.sources))})")
    chosen = names or sorted(settings.sources)
    for name in chosen:
        url = settings.sources[name].git
        if not is_remote(url) and not Path(url).expanduser().is_dir():
            raise ConfigError(f"[sources.{name}] git: {url!r} is neither a clone URL nor a local folder")
    return chosen


def _mirror(git: Git, url: str, mirror: Path) -> None:
    """Create or update the bare partial mirror ``mirror`` of ``url`` (refs pruned, forced)."""
    if not (mirror / "HEAD").is_file():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(mirror, ignore_errors=True)
        git.run("clone", "--quiet", "--mirror", "--filter=blob:none", "--", url, str(mirror))
        return
    git.run("-C", str(mirror), "remote", "set-url", "origin", url)
    git.run("-C", str(mirror), "fetch", "--quiet", "--prune", "--force", "origin")


def _refs(git: Git, mirror: Path) -> dict[str, str]:
    """``{short name: commit}`` of the mirror's branches and tags (annotated tags peeled; a tag
    wins over a branch of the same name, as in ``git rev-parse``)."""
    listing = git.run("-C", str(mirror), "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)", "refs/heads", "refs/tags")
    heads, tags = {}, {}
    for line in listing.splitlines():
        ref, obj, *peeled = line.split()
        if ref.startswith("refs/tags/"):
            tags[ref.removeprefix("refs/tags/")] = peeled[0] if peeled else obj
        else:
            heads[ref.removeprefix("refs/heads/")] = obj
    return heads | tags


#: files a docs tree holds that no reader of esrag opens (images, video, audio, fonts, PDFs,
#: archives): left out of the sparse checkout, so a partial mirror never downloads their blobs
#: (a docs folder's screenshots and recordings are often most of its bytes). SVG is text that
#: pages may include, so it stays.
NOT_READ = (
    "png",
    "jpg",
    "jpeg",
    "gif",
    "webp",
    "avif",
    "ico",
    "bmp",
    "tif",
    "tiff",
    "psd",
    "mp4",
    "webm",
    "mov",
    "avi",
    "mkv",
    "mp3",
    "wav",
    "ogg",
    "flac",
    "woff",
    "woff2",
    "ttf",
    "otf",
    "eot",
    "pdf",
    "zip",
    "gz",
    "tgz",
    "bz2",
    "xz",
    "7z",
    "jar",
)


def sparse_patterns(path: str) -> list[str]:
    """The non-cone sparse-checkout patterns of a source's work tree (git's gitignore-style
    rules, last match wins): ``path`` (everything when ``""``), less the :data:`NOT_READ` files."""
    return [f"/{path}/" if path else "/*"] + [f"!*.{suffix}" for suffix in NOT_READ]


def _checkout(git: Git, mirror: Path, tree: Path, commit: str, path: str) -> None:
    """Move the sparse detached work tree ``tree`` (made on first use) to ``commit``, only ``path``
    checked out, less the files no reader opens (:func:`sparse_patterns`); git rewrites only
    the files that differ."""
    if not (tree / ".git").exists():
        shutil.rmtree(tree, ignore_errors=True)
        git.run("-C", str(mirror), "worktree", "prune")
        git.run("-C", str(mirror), "worktree", "add", "--quiet", "--no-checkout", "--detach", str(tree), commit)
        git.run("-C", str(tree), "sparse-checkout", "set", "--no-cone", *sparse_patterns(path))
    git.run("-C", str(tree), "checkout", "--quiet", "--force", "--detach", commit)


def _removal_guard(settings: Settings, store: Store, name: str, versions: list[str], allow_delete: bool) -> DeletionGuard:
    """The deletion guard of removing ``versions`` of corpus ``name``: chunks and files (sources)
    of those versions against the whole corpus; ``refused`` when over
    ``[ingest] max_delete_fraction`` (:meth:`DeletionGuard.over_limit`) without ``allow_delete``."""
    row = store.stats().get("corpora", {}).get(name, {})
    held = row.get("versions", {})
    guard = DeletionGuard(max_fraction=settings.ingest.max_delete_fraction, allow_delete=allow_delete)
    guard.chunks_stored = int(row.get("chunks", 0))
    guard.files_stored = sum(int(v.get("sources", 0)) for v in held.values())  # (a file per version it is in)
    guard.would_delete = sum(int(held.get(v, {}).get("chunks", 0)) for v in versions)
    guard.files_gone = sum(int(held.get(v, {}).get("sources", 0)) for v in versions)
    guard.files = guard.files_gone
    guard.checked = not allow_delete and guard.chunks_stored > 0
    guard.refused = guard.checked and guard.would_delete > 0 and guard.over_limit()
    return guard


def sync_source(
    settings: Settings, store: Store, name: str, state: SyncState, allow_delete: bool = False, gate: SwapGate | None = None
) -> SourceReport:
    """Sync one source (module docstring): mirror, select refs, ingest changed versions (and any
    the store no longer holds, e.g. after ``esrag remove``), remove versions no ref selects. Errors of one version are recorded in its state and the report (the
    version keeps what it had); a fetch error fails the whole source, changing nothing.
    ``state`` is updated (the caller saves it).

    A version's changes are held back while its ingest runs and written at once when it
    succeeded (:class:`esrag.stores.staged.StagedStore`: one transaction on SQLite), holding
    ``gate`` (the serving process's :class:`~esrag.stores.staged.SwapGate`) alone meanwhile, as
    for a removed version: a search sees the old version or the new one, never part of it. An
    ingest that failed or was refused writes nothing."""
    from esrag import app

    source = settings.sources[name]
    report = SourceReport(name)
    git = Git(name, os.environ.get(token_variable(name)) or None)
    url = source.git if is_remote(source.git) else str(Path(source.git).expanduser().resolve())
    base = data_dir(settings) / "sources"
    mirror = base / f"{name}.git"
    known = state.sources.setdefault(name, {})
    try:
        _mirror(git, url, mirror)
        available = _refs(git, mirror)
    except SyncError as exc:
        report.error = str(exc)
        return report
    chosen, missing = select_refs(source.refs, source.last, available)
    digest = settings_digest(source)
    for pattern in unmatched_patterns(source.refs, available):
        report.ref_warnings.append(git.scrub(f"[sources.{name}] refs: pattern {pattern!r} matches no branch or tag in {source.git}"))
    stored = store.stats().get("corpora", {}).get(name, {}).get("versions", {})
    now = time.time()
    for ref in missing:
        row = known.get(ref) or VersionState(ref)
        row.checked_at, row.outcome = now, "error"
        row.error = git.scrub(f"[sources.{name}] refs: no branch or tag {ref!r} in {source.git}; version left as it was")
        known[ref] = row
        report.versions[ref] = asdict(row)
    for version, commit in chosen.items():
        row = known.get(version) or VersionState(version)
        row.checked_at, row.error = time.time(), ""
        entry: dict[str, Any] = {}
        tree = base / name / _slug(version)
        root = tree / source.path if source.path else tree

        def version_site(root: Path = root, tree: Path = tree, version: str = version) -> Site:
            return app.make_site(settings, root, name, doc_version=version, include_root=tree)

        try:
            fresh = row.commit == commit and row.settings == digest
            if fresh and row.outcome in ("indexed", "unchanged") and version in stored and (tree / ".git").exists():
                row.outcome, row.synced_at = "unchanged", row.checked_at
                if not (row.title or row.description):  # synced before titles were kept, or its site says none: read again (cheap)
                    site = version_site()
                    row.title, row.description = site.title, site.description
            else:
                if row.commit and not source.allow_force_push and not _descends(git, mirror, row.commit, commit):
                    raise SyncError(
                        f"[sources.{name}] ref {version!r} moved from {row.commit[:12]} to {commit[:12]}, which does not descend "
                        f"from it (force-push or moved tag); set [sources.{name}] allow_force_push = true to index it"
                    )
                _checkout(git, mirror, tree, commit, source.path)
                if not root.is_dir():
                    raise SyncError(f"[sources.{name}] path {source.path!r}: no such folder in {version!r} ({commit[:12]})")
                site = version_site()
                staged = StagedStore(store)
                summary = app.ingest_tree(settings, staged, root, corpus=name, site=site, allow_delete=allow_delete).summary
                entry["summary"] = {
                    k: v
                    for k, v in summary.to_dict().items()
                    if k.startswith(("chunks_", "embeddings_")) or k in ("files", "files_changed", "seconds")
                }
                if summary.deletion_guard.refused:
                    row.outcome = "refused"
                    first = summary.failures[0] if summary.failures else None
                    row.error = git.scrub(f"[sources.{name}] {version}: " + (f"{first.path}: {first.error}" if first else "ingest refused"))
                else:  # the version's changes become visible at once (esrag.stores.staged), or not at all
                    refused = staged.apply(gate).failed
                    if refused:
                        cid, why = next(iter(refused.items()))
                        raise SyncError(f"[sources.{name}] {version}: {len(refused)} chunks not written (first: {cid}: {why})")
                    row.commit, row.outcome, row.settings = commit, "indexed", digest
                    row.title, row.description = site.title, site.description
                    row.synced_at = row.indexed_at = time.time()
                    if summary.failures:  # the other files are indexed, as `esrag ingest` does; the
                        # version stays "error" (retried, incrementally, on every sync) until the file is fixed
                        first = summary.failures[0]
                        row.outcome = "error"
                        row.error = git.scrub(
                            f"[sources.{name}] {version}: {len(summary.failures)} files not indexed (first: {first.path}: {first.error})"
                        )
        except EsragError as exc:
            row.outcome, row.error = "error", git.scrub(str(exc))
        known[version] = row
        report.versions[version] = asdict(row) | entry
    gone = [v for v, row in known.items() if v not in chosen and v not in missing]
    held = store.stats().get("corpora", {}).get(name, {}).get("versions", {})
    if gone:
        guard = _removal_guard(settings, store, name, [v for v in gone if v in held], allow_delete)
        if guard.refused:
            report.error = (
                f"[sources.{name}]: refused to remove versions {', '.join(gone)}: {guard.would_delete} of the "
                f"{guard.chunks_stored} chunks ({guard.fraction:.0%}), {guard.files_gone} of {guard.files_stored} files; "
                f"limit [ingest] max_delete_fraction {guard.max_fraction:.0%} (esrag sync --allow-delete removes them)"
            )
            return report
        for version in gone:
            with gate.writing() if gate is not None else nullcontext():
                report.removed[version] = app.remove_corpus(store, name, version) if version in held else 0
            shutil.rmtree(base / name / _slug(version), ignore_errors=True)
            del known[version]
        try:
            git.run("-C", str(mirror), "worktree", "prune")
        except SyncError:
            pass  # stale work-tree records only: the next checkout prunes again
    return report


def _descends(git: Git, mirror: Path, old: str, new: str) -> bool:
    """``new`` is ``old`` or a descendant of it (False also when ``old`` is no longer in the mirror)."""
    try:
        git.run("-C", str(mirror), "merge-base", "--is-ancestor", old, new)
    except SyncError:
        return False
    return True


def sync(
    settings: Settings, store: Store, names: list[str] | None = None, allow_delete: bool = False, gate: SwapGate | None = None
) -> list[SourceReport]:
    """``esrag sync [NAME…]``: :func:`sync_source` for each of ``names`` (all sources when
    empty; ``gate`` as there), the state saved after each. The index is created for the
    configured embedder when missing.

    Raises:
        ConfigError: as :func:`check_sources`; an unreadable state file; another ``esrag sync``
            of the same store holds its lock (``sync-state-*.lock``).
    """
    import fcntl

    from esrag import app

    chosen = check_sources(settings, list(names or []))
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ConfigError(f"another esrag sync is running on this store ({path.with_suffix('.lock')}); wait for it") from None
        state = SyncState(path)
        if store.meta() is None:
            app.setup_index(settings, store)
        reports = []
        for name in chosen:
            try:
                reports.append(sync_source(settings, store, name, state, allow_delete, gate))
            finally:
                state.save()
        return reports


def age(seconds: float) -> str:
    """``seconds`` ago in words: ``just now``, ``3 min ago``, ``5 h ago``, ``2 days ago``."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def sync_status(settings: Settings, now: float | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``esrag status``'s ``sync``: ``{source: {version: VersionState as a dict + "age_seconds"
    (since ``synced_at``; None = never in sync) + "age" (:func:`age`, or "never")}}`` for
    every source the state records; ``{}`` without a state file."""
    path = state_path(settings)
    if not path.is_file():
        return {}
    now = time.time() if now is None else now
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, versions in SyncState(path).sources.items():
        for version, row in sorted(versions.items(), key=lambda kv: version_key(kv[0])):
            seconds = round(now - row.synced_at, 1) if row.synced_at else None
            out.setdefault(name, {})[version] = asdict(row) | {
                "age_seconds": seconds,
                "age": "never" if seconds is None else "synced " + age(seconds),
            }
    return out
