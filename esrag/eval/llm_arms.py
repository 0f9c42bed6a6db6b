"""The LLM arms of ``esrag eval`` (seed 000 §3, §4.6): E, E-K, CR, PF, the merge arms M, RM, SM,
M-TP, and the retrieval-time add-ons E+KX and E+AX.

Each is an :class:`esrag.eval.base.Arm` over the seed's header-led chunks. Its chunker factory
receives every document of the dataset, enriches them all up front (one worker per document,
``llm_concurrency`` documents at once, through the persistent LLM cache, so the arms that build
on E — M, RM, SM, E+KX, E+AX — reuse E's outputs without new calls), applies the arm's merging,
and then hands each document its chunks. The LLM is the configured one (``ESRAG_LLM``,
``ESRAG_LLM_URL``…, see :func:`esrag.enrich.make_enricher`).

=========  ======================================================================================
``E``      one call per chunk with the rolling key dictionary; title, summary, keywords, questions
           before the text (embedded and BM25)
``E-K``    E with the dictionary replaced by "(not provided)"
``CR``     contextual retrieval: whole document + chunk -> context, before the text
``PF``     one call per indexed field (title, summary, keywords, questions)
``M``      E, then key-based merging (next-fit bins ≤ 3,000 characters, orphan context lines)
``RM``     E, then as many random adjacent merges per document as M made (seeded per document)
``SM``     E, then as many most-similar adjacent merges per document as M made (the run's
           embedder over E's embedded passages, mean over members)
``M-TP``   E-K, then one consolidation call per document (keys -> canonical keys), then M
``E+KX``   E; after each hit, the document's chunks linked by key or related keys
``E+AX``   E; after each hit, as many of its neighbours as KX would insert
=========  ======================================================================================

Expansion arms carry an ``expand(hits, pool_chunks) -> hits`` step that the harness applies to
every ranking before the budget cut; inserted chunks come back as hits with score 0 and
``expanded_from`` naming the hit they follow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from esrag.chunking.header import HeaderChunker
from esrag.embedding import CachedEmbedder, EmbeddingCache, make_embedder
from esrag.enrich.enrichment import ARM_INDEX_TEXT, Enricher, make_enricher
from esrag.enrich.key_links import expand_adjacent, expand_related, group_by_document
from esrag.enrich.merge import apply_key_mapping, consolidate_keys, merge_by_keys, merge_count, random_merges, similarity_merges
from esrag.errors import ConfigError
from esrag.eval.base import SEED_SEARCH, Arm, default_cache_path
from esrag.indexed_text import embed_text
from esrag.model import Chunk, Document, Hit

if TYPE_CHECKING:
    from esrag.config import Settings

#: LLM arm names, in the order of the seed's tables.
LLM_ARM_NAMES = ("E", "E-K", "CR", "PF", "M", "RM", "SM", "M-TP", "E+KX", "E+AX")

_DESCRIPTIONS = {
    "E": "one LLM call per chunk with the rolling key dictionary (fields before the text)",
    "E-K": "E without the key dictionary",
    "CR": "contextual retrieval: whole document + chunk -> context before the text",
    "PF": "one LLM call per indexed field",
    "M": "E + key-based merging (3,000-character bins)",
    "RM": "E + count-matched random adjacent merges",
    "SM": "E + count-matched most-similar adjacent merges",
    "M-TP": "E-K + TopicGPT-style key consolidation call + key-based merging",
    "E+KX": "E + related-key expansion at retrieval time",
    "E+AX": "E + count-matched adjacent expansion at retrieval time",
}

DocKey = tuple[str, str]


class PrecomputedChunker:
    """A :class:`~esrag.chunking.base.Chunker` that returns chunks computed for the whole dataset
    up front (keyed by document path and text). ``llm`` holds the ledger totals of the build."""

    def __init__(self, name: str, by_doc: dict[DocKey, list[Chunk]], llm: dict[str, Any] | None = None) -> None:
        self.name = name
        self._by_doc = by_doc
        self.llm = llm or {}

    def chunk(self, doc: Document) -> list[Chunk]:
        """The precomputed chunks of ``doc``.

        Raises:
            ConfigError: ``doc`` was not among the documents the arm was built for.
        """
        found = self._by_doc.get((doc.path, doc.text))
        if found is None:
            raise ConfigError(f"document {doc.path!r} was not part of the dataset this arm was built for")
        return list(found)


def enrich_documents(documents: Sequence[Document], settings: Settings, mode: str) -> tuple[dict[DocKey, list[Chunk]], Enricher]:
    """Header-led chunks of every document, enriched with ``mode`` (concurrently, through the
    cache). Returns ``{(path, text): chunks}`` and the enricher (its ledger has the costs).

    Raises:
        Exception: whatever an enrichment raised that is not an LLM failure (LLM failures are
            counted, never raised).
    """
    enricher = make_enricher(settings, mode)
    chunker = HeaderChunker()
    items = [(doc, chunker.chunk(doc)) for doc in documents]
    for exc in enricher.enrich_many(items):
        if exc is not None:
            raise exc
    return {(doc.path, doc.text): chunks for doc, chunks in items}, enricher


def _vectors_for(settings: Settings, chunks: list[Chunk]):
    """Embeddings [len(chunks), dims] of the chunks' E passages with the configured embedder,
    through the evaluation's embedding cache."""
    cache = EmbeddingCache(default_cache_path())
    try:
        model = CachedEmbedder(make_embedder(settings.embedder, settings), cache)
        return model.embed_documents([embed_text(c, ARM_INDEX_TEXT["e"][0]) for c in chunks])
    finally:
        cache.close()


def _merge_step(name: str, settings: Settings, enricher: Enricher) -> Callable[[Document, list[Chunk]], list[Chunk]]:
    """The per-document transformation of a merge arm (identity for E, E-K, CR, PF, E+KX, E+AX)."""
    if name == "M":
        return lambda doc, chunks: merge_by_keys(chunks)
    if name == "RM":
        return lambda doc, chunks: random_merges(chunks, merge_count(chunks, merge_by_keys(chunks)), seed=f"0:{doc.path}")
    if name == "SM":

        def sm(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
            n = merge_count(chunks, merge_by_keys(chunks))
            return similarity_merges(chunks, _vectors_for(settings, chunks), n) if n else chunks

        return sm
    if name == "M-TP":

        def tp(doc: Document, chunks: list[Chunk]) -> list[Chunk]:
            mapping = consolidate_keys([c.enrichment.key for c in chunks if c.enrichment], enricher.llm)
            return merge_by_keys(apply_key_mapping(chunks, mapping))

        return tp
    return lambda doc, chunks: chunks


def _mode(name: str) -> str:
    return {"E-K": "e-k", "M-TP": "e-k", "CR": "cr", "PF": "pf"}.get(name, "e")


def _factory(name: str, settings: Settings) -> Callable[[Sequence[Document]], PrecomputedChunker]:
    def build(documents: Sequence[Document]) -> PrecomputedChunker:
        by_doc, enricher = enrich_documents(documents, settings, _mode(name))
        step = _merge_step(name, settings, enricher)
        docs = {(d.path, d.text): d for d in documents}
        out = {key: step(docs[key], chunks) for key, chunks in by_doc.items()}
        return PrecomputedChunker(f"header+{name}", out, enricher.llm.ledger.totals().to_dict())

    return build


def _expander(name: str) -> Callable[[list[Hit], list[Chunk]], list[Hit]] | None:
    if name not in ("E+KX", "E+AX"):
        return None
    expand = expand_related if name == "E+KX" else expand_adjacent

    def run(hits: list[Hit], pool_chunks: list[Chunk]) -> list[Hit]:
        docs = group_by_document(pool_chunks)
        by_id = {h.chunk.id: h for h in hits}
        full = {c.id: c for c in pool_chunks}
        ranked = [full.get(h.chunk.id, h.chunk) for h in hits]
        out: list[Hit] = []
        last: Hit | None = None
        for c in expand(ranked, docs):
            if c.id in by_id:
                last = by_id[c.id]
                out.append(last)
            else:
                out.append(Hit(c, 0.0, {}, expanded_from=[last.chunk.id] if last else []))
        return out

    return run


def make_llm_arm(name: str, settings: Settings) -> Arm:
    """The LLM arm ``name`` (one of :data:`LLM_ARM_NAMES`) as an :class:`esrag.eval.base.Arm`.

    Raises:
        ConfigError: unknown name (lists the valid ones).
    """
    if name not in LLM_ARM_NAMES:
        raise ConfigError(f"unknown LLM arm {name!r}; valid: {', '.join(LLM_ARM_NAMES)}")
    embed, bm25 = ARM_INDEX_TEXT[_mode(name)]
    return Arm(name, _factory(name, settings), tuple(embed), dict(bm25), SEED_SEARCH, None, _DESCRIPTIONS[name], expand=_expander(name))
