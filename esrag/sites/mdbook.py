"""mdBook (0.4/0.5): ``book.toml`` read as mdBook reads it, the chapters ``SUMMARY.md`` links to,
and its page and anchor rules.

* ``[book] src`` (default ``src``), ``title``, ``description``, ``[output.html] site-url``; a path-only ``site-url`` with a
  GitHub ``git-repository-url`` gives the GitHub Pages URL (``https://OWNER.github.io`` +
  ``site-url``) (``src/config.rs``);
* mdBook builds the chapters ``SUMMARY.md`` links to, nothing else (``src/book/book.rs``
  ``load_book``); ``SUMMARY.md`` itself is the table of contents;
* ``a/b.md`` -> ``a/b.html``, ``README.md`` -> ``index.html`` (the ``index`` preprocessor);
* anchors: ``utils::normalize_id`` with ``-1``, ``-2`` for repeats; an ``<a id>`` kept above a
  renamed header is an old anchor, the header keeps its own id.
"""

from __future__ import annotations

import posixpath
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.slugs import counter_page_anchors, mdbook_slug

if TYPE_CHECKING:
    from esrag.sites import Site


class SummaryChapters:
    """mdBook builds the chapters ``SUMMARY.md`` links to, nothing else (``book::load_book``;
    SUMMARY.md itself is the table of contents). Called with a path relative to ``src``: the
    reason the page is not built, or ''. The links are read with markdown-it-py; a book without
    a readable SUMMARY.md leaves every page in."""

    def __init__(self, summary: Path) -> None:
        self.summary = summary
        self._chapters: set[str] | None = None

    def chapters(self) -> set[str]:
        """The chapter paths (relative to ``src``, POSIX, no ``./``) SUMMARY.md links to."""
        if self._chapters is None:
            from urllib.parse import unquote

            from markdown_it import MarkdownIt

            try:
                text = self.summary.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            found = set()
            for token in MarkdownIt("commonmark").parse(text):
                for child in token.children or ():
                    href = str(child.attrs.get("href") or "") if child.type == "link_open" else ""
                    if href and "://" not in href:
                        found.add(unquote(href.split("#", 1)[0]).removeprefix("./"))
            self._chapters = found
        return self._chapters

    def __call__(self, rel: str) -> str:
        if rel == "SUMMARY.md":
            return "SUMMARY.md is mdBook's table of contents, not a page"
        chapters = self.chapters()
        if chapters and rel.lower().endswith((".md", ".markdown")) and rel not in chapters:
            return "not a chapter of SUMMARY.md"
        return ""


def detect(folder: Path) -> Detected | None:
    """The book whose ``book.toml`` lies in ``folder`` (an unreadable file: mdBook's defaults,
    and a note)."""
    path = folder / "book.toml"
    if not path.is_file():
        return None
    notes = []
    try:
        cfg = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        cfg, notes = {}, [f"{path}: not valid TOML ({exc}); mdBook's defaults used"]
    output = _table(cfg, "output")
    html, book = _table(output, "html"), _table(cfg, "book")  # a key of another type: mdBook's default
    site_url = str(html.get("site-url") or "")
    base = site_url if site_url.startswith(("http://", "https://")) else ""
    repo = re.match(r"https?://github\.com/([^/]+)/", str(html.get("git-repository-url") or "") + "/")
    if not base and site_url.startswith("/") and repo:
        base = f"https://{repo.group(1).lower()}.github.io{site_url}"
    src = folder / str(book.get("src") or "src")
    return Detected(
        "mdbook",
        src,
        base,
        config=path,
        skip=SummaryChapters(src / "SUMMARY.md"),
        notes=notes,
        title=config_text(book.get("title")),
        description=config_text(book.get("description")),
    )


def _table(cfg: dict[str, Any], key: str) -> dict[str, Any]:
    value = cfg.get(key)
    return value if isinstance(value, dict) else {}


def page_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """mdBook: ``.md`` -> ``.html``; ``README.md`` -> ``index.html`` (the index preprocessor)."""
    folder, name = posixpath.split(rel)
    stem = posixpath.splitext(name)[0]
    return f"{folder + '/' if folder else ''}{'index' if stem.lower() == 'readme' else stem}.html"


GENERATOR = Generator(
    name="mdbook",
    detect=detect,
    anchors=counter_page_anchors(mdbook_slug),
    page_path=page_path,
    config_files=("book.toml",),
    summary="chapters of `SUMMARY.md`; `a/b.md` -> `a/b.html`, `README.md` -> `index.html`; anchors `normalize_id`, duplicates `-1`",
    source="mdBook src/config.rs, src/book/book.rs, src/utils/mod.rs (normalize_id, id_from_content)",
    priority=20,
    html_anchor_is_alt=True,
)
