"""The pieces every part of the evaluation grid shares (:mod:`esrag.eval.arms`, the LLM arms of
:mod:`esrag.eval.llm_arms`, the harness): the :class:`Arm` record, the seed's search protocol,
the enricher slot and where the evaluation keeps its embedding cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from esrag.chunking.base import Chunker
from esrag.config import SearchSettings, Settings
from esrag.model import Chunk, Document, Hit

#: The seed's retrieval protocol for named arms: RRF (k = 60, untuned, equal weights) over the
#: whole ranked pool (a window of 10,000 chunks covers every pool of the datasets here).
SEED_SEARCH = SearchSettings(
    k=10, mode="hybrid", rrf_k=60, rank_window_size=10_000, num_candidates=10_000, weights={"bm25": 1.0, "dense": 1.0}
)

TEXT_ONLY = ("text",)
SECTION_AND_TEXT = ("section_path", "text")

Rerank = Callable[[str, Sequence[str]], Sequence[float]]
ChunkerFactory = Callable[[Sequence[Document]], Chunker]


class Enricher(Protocol):
    """Fills LLM fields of a document's chunks (``Chunk.enrichment``, ``Chunk.context``) at
    indexing time; never changes ``Chunk.text``. The LLM arms E and CR are enrichers."""

    name: str

    def enrich(self, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks of ``doc`` with their generated fields set."""
        ...


@dataclass(frozen=True)
class Arm:
    """One arm: how chunks are cut, what is generated for them, and what is indexed.

    Attributes:
        name: the arm's label in tables and contrasts.
        chunker: builds the chunker from all documents of the dataset.
        embed_fields: fields joined into the embedded passage (see :mod:`esrag.indexed_text`).
        bm25_fields: field -> BM25 weight.
        search: search settings of its retrievers (RRF k, windows, leg weights).
        enricher: optional LLM step between chunking and indexing.
        description: one line for reports.
        expand: optional retrieval-time step ``expand(hits, pool_chunks) -> hits`` applied to
            every ranking before the budget cut (arms E+KX, E+AX of :mod:`esrag.eval.llm_arms`).
        analyzer: BM25 text analysis of the arm's index (:mod:`esrag.analysis`). Named arms use
            ``standard`` (plain BM25, the seed's protocol); ``default`` uses the configured one.
        section_context, section_context_depth: section-context vectors
            (:mod:`esrag.section_context`): weight α (0 = off, the seed's protocol) and the
            section-path levels of a group; ``default`` uses the configured ones.
    """

    name: str
    chunker: ChunkerFactory
    embed_fields: tuple[str, ...] = TEXT_ONLY
    bm25_fields: Mapping[str, float] = field(default_factory=lambda: {"text": 1.0})
    search: SearchSettings = field(default_factory=lambda: SEED_SEARCH)
    enricher: Enricher | None = None
    description: str = ""
    expand: Callable[[list[Hit], list[Chunk]], list[Hit]] | None = None
    analyzer: str = "standard"
    section_context: float = 0.0
    section_context_depth: int = 2

    def build_chunker(self, documents: Sequence[Document]) -> Chunker:
        """The arm's chunker for this dataset (wrapped with the enricher when there is one)."""
        chunker = self.chunker(documents)
        return EnrichedChunker(chunker, self.enricher) if self.enricher else chunker


class EnrichedChunker:
    """A chunker followed by an enricher, itself a :class:`~esrag.chunking.base.Chunker`."""

    def __init__(self, chunker: Chunker, enricher: Enricher) -> None:
        self.inner, self.enricher = chunker, enricher
        self.name = f"{chunker.name}+{enricher.name}"

    def chunk(self, doc: Document) -> list[Chunk]:
        return self.enricher.enrich(doc, self.inner.chunk(doc))


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/esrag/embeddings.sqlite`` (``~/.cache`` when unset): the evaluation's
    embedding cache (passages and queries), shared by every run."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "esrag" / "embeddings.sqlite"


def pipeline_settings(settings: Settings, search: SearchSettings) -> Settings:
    """``settings`` with ``search`` as its ``[search]`` and every optional stage of the
    :class:`~esrag.search.pipeline.Pipeline` off (budget, expansion, rerank, reformulation,
    fan-out, ``[corpora.NAME]`` tables): what an evaluation retriever asks for is passed per call,
    never picked up from the user's esrag.toml or ``ESRAG_SEARCH_*``."""
    off = search.model_copy(update={"budget": None, "expand": None, "rerank": None, "reformulate": 0, "corpora": [], "router": False})
    return settings.model_copy(update={"search": off, "corpora": {}})
