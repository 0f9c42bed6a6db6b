"""What text of a chunk is embedded and which fields BM25 reads (``IndexTextSettings``).

Seed 000's arms S (text only), S+T (section-path prefix), E (enrichment fields before the text)
and CR (context before the text) are configurations of :func:`embed_text`, not code paths.
"""

from __future__ import annotations

from esrag.model import Chunk

#: Fields :func:`embed_text` understands, in the order a config may list them.
EMBED_FIELDS = ("doc_title", "section_path", "title", "summary", "keywords", "questions", "context", "text")


def field_value(chunk: Chunk, name: str) -> str:
    """The text of one indexable field of ``chunk`` ('' when absent).

    Raises:
        KeyError: unknown field name (lists the valid ones).
    """
    e = chunk.enrichment
    if name == "text":
        return chunk.text
    if name == "section_path":
        return chunk.section_path
    if name == "doc_title":
        return chunk.doc_title
    if name == "context":
        return chunk.context
    if name in ("title", "summary"):
        return getattr(e, name) if e else ""
    if name in ("keywords", "questions", "entities"):
        return ", ".join(getattr(e, name)) if name == "keywords" and e else "\n".join(getattr(e, name)) if e else ""
    raise KeyError(f"unknown indexed field {name!r}; valid: {', '.join(EMBED_FIELDS)}")


def embed_text(chunk: Chunk, fields: list[str]) -> str:
    """The passage embedded for ``chunk``: the non-empty ``fields`` joined by a blank line,
    in the order given (e.g. ``["section_path", "text"]`` is arm S+T)."""
    parts = [field_value(chunk, f) for f in fields]
    return "\n\n".join(p for p in parts if p)
