"""esrag's objects on the cluster: the shipped JSON assets (``mappings/``, ``ingest_pipelines/``)
and the names of everything kept for one alias (:class:`IndexNames`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError, StoreError

_INDEX_NAME_BAD = re.compile(r'[\\/*?"<>| ,#:A-Z]')


def asset_text(kind: str, name: str) -> str:
    """The text of a shipped JSON asset, ``kind`` being ``mappings`` or ``ingest_pipelines``.

    Looks in the installed wheel (``esrag/assets/<kind>/<name>``) first, then in the source
    tree's root (editable installs).

    Raises:
        StoreError: the asset is in neither place (a broken installation).
    """
    packaged = resources.files("esrag") / "assets" / kind / name
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    in_repo = Path(__file__).resolve().parents[3] / kind / name
    if in_repo.is_file():
        return in_repo.read_text(encoding="utf-8")
    raise StoreError(f"esrag's Elasticsearch asset {kind}/{name} is missing (looked in {packaged} and {in_repo}); reinstall esrag")


def load_asset(kind: str, name: str) -> dict[str, Any]:
    """A shipped JSON asset as a fresh dict (see :func:`asset_text`)."""
    return json.loads(asset_text(kind, name))


@dataclass(frozen=True, slots=True)
class IndexNames:
    """Names of everything esrag keeps on the cluster for one alias.

    Raises:
        ConfigError: ``alias`` is not a valid Elasticsearch index name.
    """

    alias: str

    def __post_init__(self) -> None:
        a = self.alias
        if not a or a in (".", "..") or a[0] in "-_+" or _INDEX_NAME_BAD.search(a) or len(a.encode()) > 200:
            raise ConfigError(
                f"ESRAG_INDEX={a!r} is not a usable Elasticsearch alias name: use lowercase letters, digits, '-', '_' or '.', "
                "not starting with '-', '_' or '+', at most 200 bytes"
            )

    @property
    def pattern(self) -> str:
        """Index pattern of the versioned indices: ``A-0*``."""
        return f"{self.alias}-0*"

    def index(self, n: int) -> str:
        """The n-th versioned index: ``A-000001`` for n=1."""
        return f"{self.alias}-{n:06d}"

    def number(self, index: str) -> int | None:
        """n for ``A-00000n``, None for any other name."""
        m = re.fullmatch(re.escape(self.alias) + r"-(\d{6})", index)
        return int(m.group(1)) if m else None

    @property
    def mappings(self) -> str:
        return f"{self.alias}-mappings"

    @property
    def settings(self) -> str:
        return f"{self.alias}-settings"

    @property
    def template(self) -> str:
        return self.alias

    @property
    def pipeline(self) -> str:
        return f"{self.alias}-chunks"

    @property
    def priority(self) -> int:
        """Template priority: longer (more specific) aliases win where patterns overlap."""
        return 500 + min(len(self.alias), 255)
