"""Whole pages: a source file reassembled from its indexed chunks, in order, with its title,
URL and sections (anchors, URLs, line spans) — what ``esrag page``, the HTTP API and the MCP
"fetch the whole page" tool return, so an agent can read the full context of a hit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from esrag.errors import PageNotFound
from esrag.model import Chunk
from esrag.stores.base import Store

__all__ = ["Page", "PageNotFound", "Section", "get_page", "reassemble"]


@dataclass(slots=True)
class Section:
    """One chunk of a page: its section path, anchor, URL, line span and source text."""

    section_path: str
    anchor: str
    url: str
    start_line: int
    end_line: int
    text: str


@dataclass(slots=True)
class Page:
    """A page as indexed. ``url`` is the page URL without anchor ('' when none is known);
    ``text`` is the source reassembled from the chunks (blank lines between chunks restored
    from their line spans)."""

    source_path: str
    corpus: str
    doc_version: str
    title: str
    url: str
    sections: list[Section] = field(default_factory=list)
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (a contract of ``esrag page --json``, the HTTP API and MCP)."""
        return {
            "source_path": self.source_path, "corpus": self.corpus, "doc_version": self.doc_version or None,
            "title": self.title, "url": self.url or None,
            "sections": [{"section_path": s.section_path, "anchor": s.anchor or None, "url": s.url or None,
                          "start_line": s.start_line, "end_line": s.end_line, "text": s.text} for s in self.sections],
            "text": self.text,
        }


def reassemble(chunks: list[Chunk]) -> str:
    """The source text of consecutive chunks of one file (sorted by position): chunk texts
    joined by as many newlines as their line spans call for."""
    parts: list[str] = []
    prev_end = None
    for c in chunks:
        if prev_end is not None:
            gap = max(c.start_line - prev_end - 1, 0)
            parts.append("\n" * (gap + 1))
        parts.append(c.text)
        prev_end = c.end_line
    return "".join(parts)


def get_page(store: Store, path: str, corpus: str | None = None, doc_version: str | None = None) -> Page | None:
    """The page ``path`` (its ``source_path``) reassembled from the store's chunks.

    Args:
        store: any store with ``source_chunks`` (SQLite, Elasticsearch).
        path: the page's source path as indexed (``"scheduling.md"``, ``"docs/concepts/models.md"``);
            a leading ``./`` or ``/`` is ignored.
        corpus, doc_version: pick one corpus / version when several hold the path (default:
            the first corpus in name order, and the unversioned chunks if there are any,
            else the first version in name order).

    Returns:
        The :class:`Page`; never None today (an unknown path raises), the Optional return keeps
        room for stores that cannot tell.

    Raises:
        PageNotFound: no chunk has that path (the message names the path, corpus and version).
    """
    clean = path.strip().removeprefix("./").lstrip("/")
    chunks = store.source_chunks(clean, corpus, doc_version)
    if not chunks:
        where = "".join(f" {k} {v!r}" for k, v in (("in corpus", corpus), ("version", doc_version)) if v is not None)
        raise PageNotFound(f"no indexed page {clean!r}{where}; `esrag status` lists the corpora, and a hit's "
                           "source_path is the PATH to ask for")
    pick = min((c.corpus, c.doc_version) for c in chunks)  # '' (unversioned) sorts first
    chunks = sorted((c for c in chunks if (c.corpus, c.doc_version) == pick), key=lambda c: c.position)
    page_url = chunks[0].url.split("#", 1)[0] if chunks[0].url else ""
    sections = [Section(c.section_path, c.anchor, c.url, c.start_line, c.end_line, c.text) for c in chunks]
    return Page(clean, pick[0], pick[1], chunks[0].doc_title, page_url, sections, reassemble(chunks))
