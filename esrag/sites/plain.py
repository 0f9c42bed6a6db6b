"""Trees published by no generator esrag reads: ``github`` (the files as GitHub renders them) and
``plain`` (a base URL + the path without its extension). Neither has a configuration file, so
neither is detected; both are chosen with ``--site`` (``plain`` is the fallback).

* ``github``: ``blob/<ref>/a/b.md`` (the ref of the checkout, ``HEAD`` without one); anchors
  github-slugger 2.0, duplicates ``-1`` (GitHub's own rule);
* ``plain``: ``a/b.md`` -> ``a/b``; anchors as GitHub.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from esrag.sites.generator import Generator
from esrag.sites.slugs import github_page_anchors

if TYPE_CHECKING:
    from esrag.sites import Site


def plain_path(rel: str, front: dict[str, Any] | None = None, site: Site | None = None) -> str:
    """The path without its extension (``a/b.md`` -> ``a/b``)."""
    return posixpath.splitext(rel)[0]


def github_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """``blob/<ref>/<rel>`` (the file as GitHub shows it)."""
    return f"blob/{site.ref}/{rel}"


GITHUB = Generator(
    name="github",
    detect=None,
    anchors=github_page_anchors,
    page_path=github_path,
    summary="`blob/<ref>/a/b.md`; anchors github-slugger (GitHub's own), duplicates `-1`",
    source="github-slugger 2.0 (the rule GitHub renders with)",
    priority=900,
)

PLAIN = Generator(
    name="plain",
    detect=None,
    anchors=github_page_anchors,
    page_path=plain_path,
    summary="base URL + `a/b` (the path without its extension); anchors as GitHub",
    source="esrag's own fallback",
    priority=1000,
)
