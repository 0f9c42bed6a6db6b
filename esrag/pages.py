"""Whole pages from the index: a source's chunks in position order, reassembled.

Minimal version (the links issue, 14, owns this module and its contract):
``get_page(store, path, corpus=None, doc_version=None) -> Page | None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from esrag.errors import ConfigError
from esrag.model import Chunk


@dataclass
class Page:
    """One indexed page: its chunks (``sections``) in position order and the whole text."""

    source_path: str
    corpus: str
    doc_version: str | None
    title: str
    url: str | None
    sections: list[Chunk] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The page reassembled: its chunks' texts in position order, joined by a blank line."""
        return "\n\n".join(c.text for c in self.sections)

    def to_dict(self) -> dict[str, Any]:
        """``{"source_path", "corpus", "doc_version", "title", "url", "sections": [{"section_path",
        "anchor", "url", "start_line", "end_line", "text"}], "text"}``."""
        return {
            "source_path": self.source_path, "corpus": self.corpus, "doc_version": self.doc_version,
            "title": self.title, "url": self.url,
            "sections": [{"section_path": c.section_path, "anchor": getattr(c, "anchor", "") or None,
                          "url": getattr(c, "url", "") or None, "start_line": c.start_line, "end_line": c.end_line,
                          "text": c.text} for c in self.sections],
            "text": self.text,
        }


def get_page(store: Any, path: str, corpus: str | None = None, doc_version: str | None = None) -> Page | None:
    """The page ``path`` (a ``source_path`` as search hits give it) of ``corpus`` (None: the
    first corpus holding it), read with ``store.neighbours`` (position 1 gives the page's chunk
    count, then every position in one call).

    Raises:
        ConfigError: ``path`` is empty or no corpus holds it (one-line message).
    """
    if not path or not path.strip():
        raise ConfigError("the page path is empty; give a source_path as search hits show it")
    names = [corpus] if corpus else sorted(store.stats().get("corpora", {}))
    for name in names:
        first = store.neighbours(name, path, [1])
        if not first:
            continue
        n = max(first[0].n_chunks, 1)
        chunks = store.neighbours(name, path, list(range(1, n + 1)))
        if doc_version:
            chunks = [c for c in chunks if (getattr(c, "doc_version", "") or None) == doc_version]
            if not chunks:
                continue
        head = chunks[0]
        return Page(path, name, getattr(head, "doc_version", "") or None, head.doc_title or path,
                    getattr(head, "url", "") or None, chunks)
    where = f"corpus {corpus!r}" if corpus else "any corpus"
    raise ConfigError(f"no page {path!r} in {where}; use a source_path from search hits")
