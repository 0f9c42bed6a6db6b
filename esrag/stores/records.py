"""The one Chunk <-> stored record mapping, shared by every store.

A *record* is the flat dict of one chunk's stored fields (DESIGN.md "Index fields"): the
chunk's own fields, the enrichment's fields side by side (``title``, ``summary``, ``keywords``…,
``enrich_model``, ``prompt_sha256``), the labels of seed 001 pulled out of ``metadata`` into
fields of their own (:data:`LABELS`), the rest of ``metadata`` as a dict, and the store's
``meta_hash`` and ``indexed_at``. List fields (:data:`LIST_FIELDS`) are lists of strings.

Each store encodes a record its own way: Elasticsearch indexes it as the document (empty fields
left out, plus the vector), SQLite writes it as a row (lists joined by newlines, metadata as
JSON). Both read back through :func:`chunk_from_record`, which accepts missing keys and None.
"""

from __future__ import annotations

from typing import Any

from esrag.model import Chunk, Enrichment

#: metadata keys stored as fields of their own (seed 001: language, authority, dates, supersession;
#: ``translation``: the locale of a page translated from its site's default locale,
#: :class:`esrag.sites.layout.Placement`).
LABELS = ("language", "authority", "effective_date", "superseded_by", "translation")
#: record fields holding lists of strings.
LIST_FIELDS = ("keywords", "questions", "entities", "related_keys", "alt_urls")


def chunk_record(chunk: Chunk, meta_hash: str, indexed_at: str | None) -> dict[str, Any]:
    """The record of ``chunk`` (see the module docstring): every field present, None or empty
    where the chunk has nothing; labels (:data:`LABELS`) moved out of ``metadata``."""
    e = chunk.enrichment or Enrichment()
    md = dict(chunk.metadata)
    labels = {name: md.pop(name, None) for name in LABELS}
    return {
        "text": chunk.text,
        "section_path": chunk.section_path,
        "doc_title": chunk.doc_title,
        "corpus": chunk.corpus,
        "source_path": chunk.source_path,
        "position": chunk.position,
        "n_chunks": chunk.n_chunks,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "tokens": chunk.tokens,
        "content_hash": chunk.content_hash,
        "meta_hash": meta_hash,
        "parent_id": chunk.parent_id,
        "context": chunk.context,
        **labels,
        "anchor": chunk.anchor,
        "url": chunk.url,
        "doc_version": chunk.doc_version,
        "alt_urls": list(chunk.alt_urls),
        "title": e.title,
        "summary": e.summary,
        "keywords": list(e.keywords),
        "questions": list(e.questions),
        "entities": list(e.entities),
        "key": e.key,
        "related_keys": list(e.related_keys),
        "enrich_model": e.model,
        "prompt_sha256": e.prompt_sha256,
        "metadata": md,
        "indexed_at": indexed_at,
    }


def chunk_from_record(chunk_id: str, rec: dict[str, Any]) -> Chunk:
    """The :class:`Chunk` of a stored record (inverse of :func:`chunk_record`). Missing keys
    and None take the chunk's defaults; labels go back into ``metadata``; an enrichment exists
    when the record has an enrich model, title, summary, key or entities."""
    metadata = dict(rec.get("metadata") or {})
    for name in LABELS:
        if rec.get(name) is not None:
            metadata[name] = rec[name]
    enrichment = None
    if rec.get("enrich_model") or rec.get("title") or rec.get("summary") or rec.get("key") or rec.get("entities"):
        enrichment = Enrichment(
            title=_text(rec, "title"),
            summary=_text(rec, "summary"),
            keywords=as_list(rec.get("keywords")),
            questions=as_list(rec.get("questions")),
            entities=as_list(rec.get("entities")),
            key=_text(rec, "key"),
            related_keys=as_list(rec.get("related_keys")),
            model=_text(rec, "enrich_model"),
            prompt_sha256=_text(rec, "prompt_sha256"),
        )
    return Chunk(
        id=chunk_id,
        text=_text(rec, "text"),
        corpus=_text(rec, "corpus"),
        source_path=_text(rec, "source_path"),
        section_path=_text(rec, "section_path"),
        start_line=rec.get("start_line", 1),
        end_line=rec.get("end_line", 1),
        position=rec.get("position", 1),
        n_chunks=rec.get("n_chunks", 1),
        tokens=rec.get("tokens", 0),
        content_hash=_text(rec, "content_hash"),
        doc_title=_text(rec, "doc_title"),
        parent_id=rec.get("parent_id"),
        context=_text(rec, "context"),
        enrichment=enrichment,
        metadata=metadata,
        anchor=_text(rec, "anchor"),
        url=_text(rec, "url"),
        doc_version=_text(rec, "doc_version"),
        alt_urls=as_list(rec.get("alt_urls")),
    )


def as_list(value: Any) -> list[str]:
    """A list field's value as a list (None -> ``[]``, a single string -> ``[it]``)."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _text(rec: dict[str, Any], name: str) -> str:
    value = rec.get(name)
    return "" if value is None else value
