"""Haystack 2 (and 3) retriever component over an esrag index (``pip install 'esrag[haystack]'``).

::

    from haystack import Pipeline
    from esrag.integrations.haystack import EsragRetriever

    retriever = EsragRetriever(settings={"db": "index/esrag.db"}, top_k=5)
    retriever.run(query="how do I schedule a task?",
                  filters={"field": "meta.corpus", "operator": "==", "value": "laravel"})["documents"]

Modelled on Haystack's own Elasticsearch retrievers (elasticsearch-haystack's
``ElasticsearchBM25Retriever``): keyword-only ``__init__`` whose arguments ``to_dict`` writes
with ``default_to_dict``, ``filters`` / ``top_k`` at init and per run, a ``filter_policy``
(``replace``: run filters replace the init ones; ``merge``: combined with AND), ``run`` and
``run_async`` with ``@component.output_types(documents=list[Document])``.

Filters use Haystack's filter syntax (https://docs.haystack.deepset.ai/docs/metadata-filtering):
comparisons ``{"field": F, "operator": OP, "value": V}`` on ``corpus``, ``doc_version`` or
``language`` (``meta.`` prefix optional) with ``==`` or ``in``, combined with ``AND``. esrag's
search filters are a conjunction of those fields, so ``OR``, ``NOT``, other operators and other
fields raise :class:`UnsupportedFilter` naming what to change (a path prefix is the
``path_prefix`` argument: Haystack has no prefix operator).
"""

from __future__ import annotations

import asyncio
from typing import Any

from esrag.config import load_settings
from esrag.errors import ConfigError
from esrag.integrations.base import EsragSearch, RetrievalOptions, hit_metadata
from esrag.model import Hit

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.document_stores.types import FilterPolicy
    from haystack.errors import FilterError
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"esrag.integrations.haystack needs haystack-ai ({exc}); run: pip install 'esrag[haystack]'") from exc

__all__ = ["EsragRetriever", "UnsupportedFilter", "to_document", "filters_to_options"]

#: Haystack filter field (without ``meta.``) -> :class:`RetrievalOptions` field
FILTER_FIELDS = {"corpus": "corpora", "doc_version": "doc_version", "language": "languages"}

#: settings that hold secrets: never written by ``to_dict`` (keep them in ``ESRAG_*`` variables)
SECRET_SETTINGS = ("es_api_key", "es_password", "llm_api_key", "embedder_api_key")


class UnsupportedFilter(ConfigError, FilterError):
    """A Haystack filter esrag's search cannot apply (an operator, field or value); the message
    names it and what is supported. Both an :class:`esrag.errors.EsragError` and Haystack's
    ``FilterError``."""


def _comparisons(node: Any, where: str) -> list[dict[str, Any]]:
    """The comparisons of a filter tree made of ``AND`` nodes only."""
    if not isinstance(node, dict):
        raise UnsupportedFilter(f"filters{where}: expected a dict, got {type(node).__name__}")
    if "conditions" in node:
        op = node.get("operator")
        if op != "AND":
            raise UnsupportedFilter(
                f"filters{where}: logical operator {op!r} is not supported; esrag combines "
                "corpus, doc_version and language filters with AND only"
            )
        conditions = node["conditions"]
        if not isinstance(conditions, list):
            raise UnsupportedFilter(f"filters{where}.conditions: expected a list")
        return [c for i, sub in enumerate(conditions) for c in _comparisons(sub, f"{where}.conditions[{i}]")]
    if not {"field", "operator", "value"} <= set(node):
        raise UnsupportedFilter(f"filters{where}: a comparison needs 'field', 'operator' and 'value' ({node!r})")
    return [dict(node, where=where)]


def filters_to_options(filters: dict[str, Any] | None) -> dict[str, Any]:
    """Haystack ``filters`` as :class:`RetrievalOptions` fields: ``corpus`` -> ``corpora``,
    ``doc_version`` -> ``doc_version`` (``None`` value = the unversioned chunks),
    ``language`` -> ``languages``; operators ``==`` (one value) and ``in`` (a list; one value
    for ``doc_version``); ``AND`` of those, each field at most once. ``{}`` / None: no filter.

    Raises:
        UnsupportedFilter: another operator, field or shape (names it and the way out).
    """
    if not filters:
        return {}
    out: dict[str, Any] = {}
    for cond in _comparisons(filters, ""):
        where, field, op, value = cond["where"], str(cond["field"]), cond["operator"], cond["value"]
        name = field.removeprefix("meta.")
        if name not in FILTER_FIELDS:
            raise UnsupportedFilter(
                f"filters{where}: field {field!r} is not supported; filter on corpus, doc_version or "
                "language (for a source path prefix use the path_prefix argument)"
            )
        if op == "==":
            values = [value]
        elif op == "in" and isinstance(value, list) and value:
            values = value
        else:
            raise UnsupportedFilter(
                f"filters{where}: operator {op!r} with value {value!r} on {field!r} is not supported; "
                "use '==' with one value or 'in' with a non-empty list"
            )
        key = FILTER_FIELDS[name]
        if key in out:
            raise UnsupportedFilter(f"filters{where}: {field!r} is filtered twice; give its values once with 'in'")
        if key == "doc_version":
            if len(values) != 1:
                raise UnsupportedFilter(f"filters{where}: doc_version takes one version ('==' or 'in' with one value)")
            out[key] = "" if values[0] is None else str(values[0])
        else:
            out[key] = [str(v) for v in values]
    return out


def _merge_filters(init: dict[str, Any] | None, run: dict[str, Any] | None, policy: FilterPolicy) -> dict[str, Any] | None:
    """Haystack's filter policy: ``replace`` (run filters win when given), ``merge`` (both, AND)."""
    if policy == FilterPolicy.REPLACE or not init or not run:
        return run or init
    return {"operator": "AND", "conditions": [init, run]}


def to_document(hit: Hit) -> Document:
    """A hit as a Haystack document: ``id`` = the chunk id, ``content`` = the chunk's source
    text, ``score`` = the fused score, ``meta`` = :func:`esrag.integrations.base.hit_metadata`."""
    return Document(id=hit.chunk.id, content=hit.chunk.text, meta=hit_metadata(hit), score=hit.score)


@component
class EsragRetriever:
    """Hybrid (BM25 + kNN, RRF) search of an esrag index as a Haystack retriever component (2.x and 3.x).

    Args:
        settings: settings overrides as in ``esrag.toml`` (``{"db": ...}``, ``{"es_url": ...,
            "index": ...}``; None: ``esrag.toml`` and ``ESRAG_*`` alone), given to
            :func:`esrag.config.load_settings`. Written by :meth:`to_dict`, so secrets
            (:data:`SECRET_SETTINGS`) are refused here: keep them in ``ESRAG_*`` variables.
        filters: Haystack filters applied to every run (:func:`filters_to_options`).
        top_k: documents per run (None: ``search.k``, 10 by default).
        path_prefix, budget, mode, embedder: as :class:`~esrag.integrations.base.RetrievalOptions`
            and ``esrag search --path / --budget / --mode / --embedder``.
        filter_policy: how run filters combine with ``filters`` (``replace`` or ``merge``).

    One store connection and one query-model load per component, on the first run (or
    :meth:`warm_up`), shared by every run, thread-safe; ``run_async`` runs the search in a
    worker thread.

    Raises:
        ConfigError: a secret in ``settings``, a bad option; UnsupportedFilter: a bad filter.
    """

    def __init__(
        self,
        *,
        settings: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        path_prefix: str | None = None,
        budget: int | None = None,
        mode: str | None = None,
        embedder: str | None = None,
        filter_policy: FilterPolicy | str = FilterPolicy.REPLACE,
    ) -> None:
        secrets = sorted(set(settings or {}) & set(SECRET_SETTINGS))
        if secrets:
            raise ConfigError(
                f"settings[{secrets[0]!r}]: a secret would be written into the pipeline's YAML; set it as "
                f"ESRAG_{secrets[0].upper()} instead"
            )
        self.settings = dict(settings or {})
        self.filters = filters or {}
        self.top_k = top_k
        self.path_prefix, self.budget, self.mode, self.embedder = path_prefix, budget, mode, embedder
        self.filter_policy = filter_policy if isinstance(filter_policy, FilterPolicy) else FilterPolicy.from_str(filter_policy)
        self._options = RetrievalOptions(top_k, path_prefix=path_prefix, budget=budget, mode=mode).merged(
            **filters_to_options(self.filters)
        )
        self._search = EsragSearch(load_settings(**self.settings), embedder)

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serialises it (``default_to_dict``: type + init parameters)."""
        return default_to_dict(
            self,
            settings=self.settings,
            filters=self.filters,
            top_k=self.top_k,
            path_prefix=self.path_prefix,
            budget=self.budget,
            mode=self.mode,
            embedder=self.embedder,
            filter_policy=self.filter_policy.value,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EsragRetriever:
        """The component :meth:`to_dict` wrote (``default_from_dict``)."""
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Open the store and load the query model (Haystack calls this before a pipeline runs)."""
        self._search.warm()

    def _request_options(self, filters: dict[str, Any] | None, top_k: int | None) -> RetrievalOptions:
        if filters is None:
            return self._options.merged(k=top_k)
        merged = _merge_filters(self.filters, filters, self.filter_policy)
        base = RetrievalOptions(self.top_k, path_prefix=self.path_prefix, budget=self.budget, mode=self.mode)
        return base.merged(k=top_k, **filters_to_options(merged))

    @component.output_types(documents=list[Document])
    def run(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, list[Document]]:
        """``{"documents": [...]}``: the hits for ``query``, best first (:func:`to_document`).

        Args:
            query: the question or keywords. filters: Haystack filters for this run (combined
            with the init ones by ``filter_policy``). top_k: documents for this run.

        Raises:
            UnsupportedFilter; ConfigError (empty query, unknown corpus), StoreError.
        """
        request = self._request_options(filters, top_k).request(query)
        return {"documents": [to_document(h) for h in self._search.search(request)]}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None) -> dict[str, list[Document]]:
        """:meth:`run` without blocking the event loop (the search runs in a worker thread)."""
        request = self._request_options(filters, top_k).request(query)
        hits = await asyncio.to_thread(self._search.search, request)
        return {"documents": [to_document(h) for h in hits]}

    def close(self) -> None:
        """Close the store connection (a later run opens it again)."""
        self._search.close()
