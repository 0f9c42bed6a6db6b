"""LangChain retriever over an esrag index (``pip install 'esrag[langchain]'``).

::

    from esrag.integrations.langchain import EsragRetriever

    retriever = EsragRetriever(k=5, corpora=["laravel"])      # settings from esrag.toml / ESRAG_*
    docs = retriever.invoke("how do I schedule a task?")      # or await retriever.ainvoke(...)
    docs[0].metadata["url"], docs[0].metadata["section_path"], docs[0].id

Modelled on LangChain's own retriever contract (``langchain_core.retrievers.BaseRetriever``:
``_get_relevant_documents(query, *, run_manager, **kwargs)``, options passed to ``invoke``
override the constructor's) and checked by ``langchain-tests``' ``RetrieversIntegrationTests``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from esrag.config import Settings
from esrag.integrations.base import EsragSearch, RetrievalOptions, hit_metadata
from esrag.model import Hit

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, Field, PrivateAttr
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"esrag.integrations.langchain needs langchain-core ({exc}); run: pip install 'esrag[langchain]'") from exc

__all__ = ["EsragRetriever", "to_document"]


def to_document(hit: Hit) -> Document:
    """A hit as a LangChain document: ``page_content`` = the chunk's source text, ``id`` = the
    chunk id (stable across re-ingests), ``metadata`` = :func:`esrag.integrations.base.hit_metadata`
    (``source_path``, ``section_path``, ``url``, ``anchor``, ``start_line``, ``end_line``,
    ``corpus``, ``doc_version``, ``score``…)."""
    return Document(page_content=hit.chunk.text, metadata=hit_metadata(hit), id=hit.chunk.id)


class EsragRetriever(BaseRetriever):
    """Hybrid (BM25 + kNN, RRF) search of an esrag index as a LangChain retriever.

    Fields (each also accepted by ``invoke`` / ``ainvoke`` as a keyword, for that call only):
        k: documents to return (>= 1; None: ``search.k``, 10 by default).
        corpora: only these corpora. doc_version: only this documentation version.
        path_prefix: only sources whose path starts with it. budget: pack up to this many
        cl100k tokens instead of k hits. mode: ``hybrid``, ``bm25`` or ``dense``.
        languages: only chunks in these languages.

    Other fields: ``settings`` (default: ``esrag.toml`` and ``ESRAG_*`` — Elasticsearch when
    ``ESRAG_ES_URL`` is set, else the embedded store), ``embedder`` (embed queries with another
    spec than the index's own). The store is opened and the query model loaded once, on the
    first call, then shared by every call of this object (thread-safe); ``ainvoke`` runs the
    search in a worker thread, so the event loop never waits on it. :meth:`close` closes the store.

    Raises (from ``invoke``): ConfigError (bad option, unknown corpus), StoreError,
    NotIndexedError — all :class:`esrag.errors.EsragError`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: Settings | None = None
    k: int | None = Field(default=None, ge=1)
    corpora: list[str] = Field(default_factory=list)
    doc_version: str | None = None
    path_prefix: str | None = None
    budget: int | None = Field(default=None, ge=1)
    mode: str | None = None
    languages: list[str] = Field(default_factory=list)
    embedder: str | None = None

    _search: EsragSearch = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._options()  # validate mode and the rest now, not at the first call
        self._search = EsragSearch(self.settings, self.embedder)

    def _options(self, **overrides: Any) -> RetrievalOptions:
        base = RetrievalOptions(
            self.k, list(self.corpora), self.doc_version, self.path_prefix, self.budget, self.mode, list(self.languages)
        )
        return base.merged(**overrides) if overrides else base

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any) -> list[Document]:
        hits = self._search.search(self._options(**kwargs).request(query))
        return [to_document(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        request = self._options(**kwargs).request(query)
        hits = await asyncio.to_thread(self._search.search, request)
        return [to_document(h) for h in hits]

    def warm_up(self) -> None:
        """Open the store and load the query model now instead of on the first call."""
        self._search.warm()

    def close(self) -> None:
        """Close the store connection (a later call opens it again)."""
        self._search.close()
