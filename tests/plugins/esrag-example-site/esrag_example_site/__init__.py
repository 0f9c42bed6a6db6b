"""A third-party documentation generator for esrag's tests: a folder holding ``exampledoc.toml``
(``base_url = "..."``) publishes ``pages/a/b.md`` at ``<base_url>a/b.htm``, anchors lowercased
titles with spaces as ``_`` (duplicates ``_2``, ``_3``). Only the public protocol is used."""

from __future__ import annotations

import posixpath
import tomllib
from pathlib import Path

from esrag.sites.generator import Detected, Generator


def detect(folder: Path) -> Detected | None:
    config = folder / "exampledoc.toml"
    if not config.is_file():
        return None
    cfg = tomllib.loads(config.read_text(encoding="utf-8"))
    return Detected("exampledoc", folder / "pages", str(cfg.get("base_url") or ""), config=config)


def anchors(titles, explicit):
    out, seen = [], {}
    for title, given in zip(titles, explicit):
        slug = given or title.lower().replace(" ", "_")
        seen[slug] = seen.get(slug, 0) + 1
        out.append(slug if seen[slug] == 1 else f"{slug}_{seen[slug]}")
    return out


def page_path(rel, front, site):
    return posixpath.splitext(rel)[0] + ".htm"


GENERATOR = Generator(
    name="exampledoc",
    detect=detect,
    anchors=anchors,
    page_path=page_path,
    config_files=("exampledoc.toml",),
    summary="`pages/a/b.md` -> `a/b.htm`",
    source="esrag's tests",
    priority=50,
)
