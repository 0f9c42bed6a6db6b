"""Reranking inside Elasticsearch (:class:`~esrag.stores.base.NativeRerank`): the
``text_similarity_reranker`` retriever over stored chunks and the inference API's ``rerank``
task over given texts, with what a cluster cannot do detected on the first call and refused
at once afterwards. A part of :class:`~esrag.stores.elastic.store.ElasticStore`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elasticsearch import ApiError, TransportError

from esrag.errors import NotIndexedError, RerankError
from esrag.stores.elastic.bodies import text_similarity_reranker_body
from esrag.stores.elastic.connection import classify_reranker_error
from esrag.stores.elastic.lifecycle import Lifecycle


class Reranking(Lifecycle):
    """The index's state required for a read, and the two ways Elasticsearch reranks."""

    def _require(self) -> dict[str, Any]:
        """The index's state (:meth:`_state`).

        Raises:
            NotIndexedError: nothing is indexed behind the alias yet.
        """
        state = self._state()
        if state is None:
            raise NotIndexedError(f"nothing is indexed in {self.alias!r} on Elasticsearch at {self.url} yet; run `esrag ingest PATH` first")
        return state

    def rerank_ids(self, query: str, ids: Sequence[str], inference_id: str, field: str = "text") -> dict[str, float]:
        """Scores of the chunks ``ids`` for ``query`` from the ``text_similarity_reranker``
        retriever with the inference endpoint ``inference_id`` (:func:`text_similarity_reranker_body`).
        A cluster that cannot do it is detected on the first call and refused at once afterwards.

        Raises:
            RerankError: no such retriever or inference endpoint, licence refusal (the message says which).
        """
        state = self._require()
        if not ids:
            return {}
        known = self._retrievers.get("text_similarity_reranker")
        if known is not None and not known[0]:
            raise RerankError(f"elastic:{inference_id} reranker: {known[1]}")
        body = text_similarity_reranker_body(query, ids, inference_id, field)
        try:
            resp = self._es.search(index=state["index"], body=body)
        except ApiError as exc:
            why = classify_reranker_error(inference_id, exc.meta.status, exc.body)
            if "no text_similarity_reranker" in why or "licence" in why:
                self._retrievers["text_similarity_reranker"] = (False, why)
            raise RerankError(f"elastic:{inference_id} reranker: {why}") from None
        except TransportError as exc:
            raise self._fail(exc, "rerank with the text_similarity_reranker retriever") from None
        self._retrievers["text_similarity_reranker"] = (True, "text_similarity_reranker retriever available")
        return {h["_id"]: float(h["_score"]) for h in resp.body["hits"]["hits"]}

    def inference_rerank(self, inference_id: str, query: str, texts: Sequence[str]) -> list[float]:
        """``POST _inference/rerank/<inference_id>`` with ``query`` and ``input`` = ``texts``;
        one relevance score per text, in input order.

        Raises:
            RerankError: the cluster has no inference API or no such endpoint (the message says which).
        """
        if not texts:
            return []
        try:
            resp = self._es.inference.inference(inference_id=inference_id, task_type="rerank", query=query, input=list(texts))
        except ApiError as exc:
            raise RerankError(
                f"elastic:{inference_id} reranker: {classify_reranker_error(inference_id, exc.meta.status, exc.body)}"
            ) from None
        except TransportError as exc:
            raise self._fail(exc, "call the inference API") from None
        scores = [0.0] * len(texts)
        for item in resp.body.get("rerank", []):
            scores[int(item["index"])] = float(item["relevance_score"])
        return scores
