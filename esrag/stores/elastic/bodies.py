"""Request bodies, built by pure functions (dicts; unit tests assert the exact JSON) and sent by
:class:`~esrag.stores.elastic.store.ElasticStore`: templates and pipeline, the filters both
legs share, the BM25 and kNN legs, ``_msearch`` of legs, the native ``rrf`` and
``text_similarity_reranker`` retrievers, and the retriever probe."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from esrag.analysis import es_analysis
from esrag.stores.base import BranchQuery, Filters, IndexMeta
from esrag.stores.elastic.assets import IndexNames, load_asset
from esrag.stores.elastic.vector_options import VectorPlan, apply_plan, check_dims

#: a query vector [dims]: a float array or a sequence of floats.
Vector = Sequence[float] | np.ndarray

#: kNN limit of Elasticsearch: ``num_candidates`` (and so ``k``) at most 10,000.
MAX_NUM_CANDIDATES = 10_000


def mappings_component_body(
    meta: IndexMeta,
    rebuild_of: str | None = None,
    stemming: bool = True,
    language_fields: dict[str, str] | None = None,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Body of ``PUT _component_template/A-mappings`` for ``meta``: dims and ``_meta`` filled, and
    ``settings.analysis`` defining the text analyzer ``esrag_text`` for ``meta.analyzer`` (see
    :func:`esrag.analysis.es_analysis`; ``stemming`` is False on clusters without the
    analysis-common token filters). The analysis lives in this component because Elasticsearch
    validates each component template on its own, and the text fields name the analyzer.

    ``capabilities`` (learned, :class:`~esrag.stores.elastic.capabilities.Learned`) becomes
    ``_meta.capabilities``; its vector plan (``vectors``) is moved to ``_meta.vectors`` and
    applied (:func:`~esrag.stores.elastic.vector_options.apply_plan`: the pinned
    ``index_options``, and synthetic vectors on 9.2+). Without it the shipped ``int8_hnsw`` and
    ``vector_bin`` copy stay.

    Raises:
        ConfigError: the plan's option cannot index vectors of ``meta.dims`` dimensions.
    """
    body = load_asset("mappings", "esrag-mappings.json")
    body["template"]["settings"] = {"analysis": es_analysis(meta.analyzer, stemming)}
    mappings = body["template"]["mappings"]
    mappings["properties"]["vector"]["dims"] = meta.dims
    mappings["_meta"] = {"managed_by": "esrag", **meta.to_dict()}
    if language_fields is not None:  # per-language subfields text.<code> (esrag.language)
        add_language_subfields(mappings, language_fields)
    if rebuild_of:
        mappings["_meta"]["rebuild_of"] = rebuild_of
    if capabilities is not None:  # what the cluster can do, learned at setup (esrag.stores.elastic.capabilities)
        capabilities = dict(capabilities)
        plan = VectorPlan.from_meta(capabilities.pop("vectors", None))
        mappings["_meta"]["capabilities"] = capabilities
        if plan is not None:
            apply_plan(mappings, body["template"]["settings"], check_dims(plan, meta.dims))
    return body


def add_language_subfields(mappings: dict[str, Any], language_fields: dict[str, str]) -> None:
    """Give ``text`` one analyzed subfield per language (``text.de`` with the built-in ``german``
    analyzer…) and record them in ``_meta.text_languages`` (``{}``: none, e.g. a cluster without
    language analyzers, where ``text`` keeps ``esrag_text`` only). Queries in a language with a
    subfield also search it (:func:`esrag.language.with_language_field`)."""
    if language_fields:
        mappings["properties"]["text"]["fields"] = {
            code: {"type": "text", "analyzer": analyzer} for code, analyzer in sorted(language_fields.items())
        }
    mappings["_meta"]["text_languages"] = dict(sorted(language_fields.items()))


def settings_component_body(pipeline: str | None) -> dict[str, Any]:
    """Body of ``PUT _component_template/A-settings``; ``pipeline`` becomes the default pipeline."""
    body = load_asset("mappings", "esrag-settings.json")
    if pipeline:
        body["template"]["settings"]["index"]["default_pipeline"] = pipeline
    return body


def index_template_body(names: IndexNames) -> dict[str, Any]:
    """Body of ``PUT _index_template/A``: versioned indices ``A-0*`` from the two components."""
    body = load_asset("mappings", "esrag-template.json")
    body["index_patterns"] = [names.pattern]
    body["composed_of"] = [names.settings, names.mappings]
    body["priority"] = names.priority
    body["_meta"]["description"] = f"Versioned esrag indices ({names.index(1)}, {names.index(2)}, ...) behind the alias {names.alias}."
    return body


def pipeline_body() -> dict[str, Any]:
    """Body of ``PUT _ingest/pipeline/A-chunks``."""
    return load_asset("ingest_pipelines", "esrag-chunks.json")


def filter_clauses(filters: Filters) -> list[dict[str, Any]]:
    """Filter clauses shared by both legs (the BM25 ``bool.filter`` and ``knn.filter``)."""
    out: list[dict[str, Any]] = []
    if filters.corpora:
        out.append({"terms": {"corpus": list(filters.corpora)}})
    if filters.path_prefix:
        out.append({"prefix": {"source_path": filters.path_prefix}})
    if filters.languages:
        out.append({"terms": {"language": list(filters.languages)}})
    if filters.exclude_ids:
        out.append({"bool": {"must_not": [{"ids": {"values": list(filters.exclude_ids)}}]}})
    if filters.effective_on:  # in force that day: no effective_date, or one on/before it (rounded up to the day)
        out.append(
            {
                "bool": {
                    "should": [
                        {"range": {"effective_date": {"lte": f"{filters.effective_on[:10]}||/d"}}},
                        {"bool": {"must_not": [{"exists": {"field": "effective_date"}}]}},
                    ],
                    "minimum_should_match": 1,
                }
            }
        )
    if filters.exclude_superseded:
        out.append({"bool": {"must_not": [{"exists": {"field": "superseded_by"}}]}})
    if filters.excludes_translations():
        out.append({"bool": {"must_not": [{"exists": {"field": "translation"}}]}})
    if filters.doc_version is not None:
        out.append(version_clause(filters.doc_version))
    if filters.versions:  # each named corpus in its one version; the others whole
        named = [{"bool": {"filter": [{"term": {"corpus": c}}, version_clause(v)]}} for c, v in filters.versions.items()]
        others = {"bool": {"must_not": [{"terms": {"corpus": list(filters.versions)}}]}}
        out.append({"bool": {"should": [others, *named], "minimum_should_match": 1}})
    return out


def version_clause(doc_version: str) -> dict[str, Any]:
    """``term`` on ``doc_version``; '' (unversioned) matches chunks without the field."""
    if doc_version:
        return {"term": {"doc_version": doc_version}}
    return {"bool": {"must_not": [{"exists": {"field": "doc_version"}}]}}


def weighted_fields(fields: dict[str, float]) -> list[str]:
    """``{"text": 1.0, "section_path": 2}`` -> ``["text^1", "section_path^2"]``; weights <= 0 drop a field."""
    return [f"{name}^{float(w):g}" for name, w in fields.items() if w > 0]


def bm25_query(query: str, fields: dict[str, float], filters: Filters) -> dict[str, Any]:
    """The BM25 leg's query: ``multi_match`` (never parsed as query syntax) in a filtered ``bool``."""
    clause: dict[str, Any] = {"multi_match": {"query": query, "fields": weighted_fields(fields), "type": "best_fields", "tie_breaker": 0.3}}
    boolean: dict[str, Any] = {"must": [clause]}
    clauses = filter_clauses(filters)
    if clauses:
        boolean["filter"] = clauses
    return {"bool": boolean}


def bm25_body(query: str, k: int, filters: Filters, fields: dict[str, float], source: bool = False) -> dict[str, Any]:
    """``_search`` body of the BM25 leg: ids and scores of the top ``k`` (with their ``_source``
    when ``source``)."""
    return {"size": k, "_source": source, "track_total_hits": False, "query": bm25_query(query, fields, filters)}


def knn_clause(vector: Vector, k: int, filters: Filters, num_candidates: int) -> dict[str, Any]:
    """A kNN section (top-level ``knn`` or ``knn`` retriever): ``num_candidates`` is raised to
    ``k`` and both are capped at 10,000; filters go inside (applied during the search)."""
    k = max(1, min(int(k), MAX_NUM_CANDIDATES))
    clause: dict[str, Any] = {
        "field": "vector",
        "query_vector": [float(x) for x in vector],
        "k": k,
        "num_candidates": min(max(int(num_candidates), k), MAX_NUM_CANDIDATES),
    }
    clauses = filter_clauses(filters)
    if clauses:
        clause["filter"] = clauses
    return clause


def knn_body(vector: Vector, k: int, filters: Filters, num_candidates: int, source: bool = False) -> dict[str, Any]:
    """``_search`` body of the kNN leg (top-level ``knn``; hits' ``_source`` when ``source``)."""
    clause = knn_clause(vector, k, filters, num_candidates)
    return {"size": clause["k"], "_source": source, "track_total_hits": False, "knn": clause}


def rrf_body(
    query: str,
    vector: Vector,
    k: int,
    filters: Filters,
    fields: dict[str, float],
    rank_window_size: int,
    num_candidates: int,
    rrf_k: int,
    source: bool = False,
) -> dict[str, Any]:
    """One ``_search`` with the native ``rrf`` retriever over a ``standard`` (BM25) and a ``knn``
    retriever; the filters sit inside each leg. ``rank_window_size`` is raised to ``k``. With
    ``source`` the fused top ``k`` come back with their ``_source``.

    Syntax (GA in 8.16, unchanged in 9.x): ``retriever.rrf.retrievers`` (two or more child
    retrievers), ``rank_window_size`` (>= size) and ``rank_constant`` (>= 1), per
    https://www.elastic.co/guide/en/elasticsearch/reference/8.x/retriever.html#rrf-retriever and
    https://www.elastic.co/docs/reference/elasticsearch/rest-apis/retrievers/rrf-retriever .
    (9.2 added per-retriever ``weight``; esrag fuses weighted legs client-side, which works on
    every version.)
    """
    window = max(int(rank_window_size), int(k))
    return {
        "size": k,
        "_source": source,
        "track_total_hits": False,
        "retriever": {
            "rrf": {
                "retrievers": [
                    {"standard": {"query": bm25_query(query, fields, filters)}},
                    {"knn": knn_clause(vector, window, filters, num_candidates)},
                ],
                "rank_window_size": window,
                "rank_constant": rrf_k,
            }
        },
    }


def msearch_body(
    query: str,
    vector: Vector,
    window: int,
    filters: Filters,
    fields: dict[str, float],
    num_candidates: int,
    source: bool = False,
) -> list[dict[str, Any]]:
    """``_msearch`` searches (header, body pairs) running both legs in one round trip (each hit
    with its ``_source`` when ``source``)."""
    return [{}, bm25_body(query, window, filters, fields, source), {}, knn_body(vector, window, filters, num_candidates, source)]


def branches_msearch_body(
    branches: Sequence[BranchQuery],
    fields: dict[str, float],
    fields_for: Callable[[str, dict[str, float]], dict[str, float]] | None = None,
    source: bool = False,
) -> list[dict[str, Any]]:
    """``_msearch`` searches (header, body pairs) for every leg of every fan-out branch in one
    round trip: per branch a BM25 search (when it has query text and fields) then a kNN search
    (when it has a vector), each of ``window`` hits with the branch's filters inside (and their
    ``_source`` when ``source``). ``fields_for(query, fields)`` adapts the BM25 fields to each
    query (its language subfield). One branch of both legs is exactly :func:`msearch_body`."""
    out: list[dict[str, Any]] = []
    for b in branches:
        if b.query.strip() and weighted_fields(fields):
            own = fields_for(b.query, fields) if fields_for else fields
            out += [{}, bm25_body(b.query, b.window, b.filters, own, source)]
        if b.vector is not None:
            out += [{}, knn_body(b.vector, b.window, b.filters, b.num_candidates, source)]
    return out


def text_similarity_reranker_body(query: str, ids: Sequence[str], inference_id: str, field: str = "text") -> dict[str, Any]:
    """``_search`` body reordering the chunks ``ids`` with the ``text_similarity_reranker``
    retriever (a child ``standard`` retriever selecting exactly those ids; ``rank_window_size``
    = their number), per https://www.elastic.co/docs/reference/elasticsearch/rest-apis/retrievers/text-similarity-reranker-retriever
    (``retriever``, ``field``, ``inference_id``, ``inference_text``, ``rank_window_size``)."""
    n = len(ids)
    return {
        "size": n,
        "_source": False,
        "track_total_hits": False,
        "retriever": {
            "text_similarity_reranker": {
                "retriever": {"standard": {"query": {"ids": {"values": list(ids)}}}},
                "field": field,
                "inference_id": inference_id,
                "inference_text": query,
                "rank_window_size": n,
            }
        },
    }


def retriever_probe_body(name: str) -> dict[str, Any]:
    """A no-hit ``_search`` that only parses when the ``rrf`` or ``linear`` retriever exists and is licensed."""
    none: dict[str, Any] = {"standard": {"query": {"match_none": {}}}}
    if name == "rrf":
        return {"size": 0, "retriever": {"rrf": {"retrievers": [none, copy.deepcopy(none)]}}}
    if name == "linear":
        return {
            "size": 0,
            "retriever": {
                "linear": {"retrievers": [{"retriever": none, "weight": 1.0}, {"retriever": copy.deepcopy(none), "weight": 1.0}]}
            },
        }
    raise ValueError(f"unknown retriever {name!r}; valid: rrf, linear")
