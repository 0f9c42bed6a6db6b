"""LlamaIndex retriever over an esrag index (``pip install 'esrag[llamaindex]'``).

::

    from llama_index.core.query_engine import RetrieverQueryEngine
    from esrag.integrations.llamaindex import EsragRetriever

    retriever = EsragRetriever(k=5, corpora=["laravel"])        # settings from esrag.toml / ESRAG_*
    nodes = retriever.retrieve("how do I schedule a task?")      # or await retriever.aretrieve(...)
    engine = RetrieverQueryEngine.from_args(retriever, llm=my_llm)

Follows LlamaIndex's retriever contract (``llama_index.core.base.base_retriever.BaseRetriever``:
``_retrieve(QueryBundle) -> list[NodeWithScore]``, ``_aretrieve`` for async) as its own
vector-store retrievers fill it: ``TextNode(id_, text, metadata)`` with a ``SOURCE`` relation to
the page the chunk came from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from esrag.config import Settings
from esrag.integrations.base import EsragSearch, RetrievalOptions, hit_metadata
from esrag.model import Hit

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"esrag.integrations.llamaindex needs llama-index-core ({exc}); run: pip install 'esrag[llamaindex]'") from exc

__all__ = ["EsragRetriever", "to_node"]

#: metadata the LLM prompt leaves out (positions and scores; the prompt keeps the corpus, the
#: page, the section path and the URL, which let an answer cite its source)
LLM_EXCLUDED = ["start_line", "end_line", "tokens", "score", "anchor", "truncated", "chunk_ids", "expanded_from"]


def to_node(hit: Hit) -> NodeWithScore:
    """A hit as a LlamaIndex node: ``TextNode(id_=chunk id, text=chunk source text,
    metadata=hit_metadata(hit))`` scored with the fused score; its ``SOURCE`` relation names the
    page (``corpus:source_path``), so ``node.ref_doc_id`` groups the chunks of one page."""
    c = hit.chunk
    node = TextNode(
        id_=c.id,
        text=c.text,
        metadata=hit_metadata(hit),
        excluded_llm_metadata_keys=list(LLM_EXCLUDED),
        excluded_embed_metadata_keys=list(LLM_EXCLUDED),
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"{c.corpus}:{c.source_path}")},
    )
    return NodeWithScore(node=node, score=hit.score)


class EsragRetriever(BaseRetriever):
    """Hybrid (BM25 + kNN, RRF) search of an esrag index as a LlamaIndex retriever.

    Args:
        settings: the settings (None: ``esrag.toml`` and ``ESRAG_*`` — Elasticsearch when
            ``ESRAG_ES_URL`` is set, else the embedded store).
        k: nodes to return (>= 1; None: ``search.k``, 10 by default). corpora: only these
            corpora. doc_version: only this version. path_prefix: only sources under it.
            budget: pack up to this many cl100k tokens instead of k hits. mode: ``hybrid``,
            ``bm25`` or ``dense``. languages: only these languages.
        embedder: embed queries with this spec instead of the index's own.
        callback_manager, verbose: as every LlamaIndex retriever.

    The store is opened and the query model loaded once, on the first retrieval, then shared by
    every call of this object (thread-safe); ``aretrieve`` runs the search in a worker thread.

    Raises:
        ConfigError: a bad option (at construction), an unknown corpus (at retrieval).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        k: int | None = None,
        corpora: Sequence[str] = (),
        doc_version: str | None = None,
        path_prefix: str | None = None,
        budget: int | None = None,
        mode: str | None = None,
        languages: Sequence[str] = (),
        embedder: str | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.options = RetrievalOptions(k, list(corpora), doc_version, path_prefix, budget, mode, list(languages))
        self._search = EsragSearch(settings, embedder)
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._search.search(self.options.request(query_bundle.query_str))
        return [to_node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await asyncio.to_thread(self._search.search, self.options.request(query_bundle.query_str))
        return [to_node(h) for h in hits]

    def warm_up(self) -> None:
        """Open the store and load the query model now instead of on the first retrieval."""
        self._search.warm()

    def close(self) -> None:
        """Close the store connection (a later retrieval opens it again)."""
        self._search.close()
