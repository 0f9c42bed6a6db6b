"""The Elasticsearch store (``elastic``): chunks in a versioned index behind an alias.

Layout on the cluster, for the alias ``A`` (``ESRAG_INDEX``, default ``esrag``):

* component templates ``A-mappings`` (the fields of DESIGN.md "Index fields"; ``vector`` is a
  ``dense_vector`` with cosine similarity and pinned ``int8_hnsw`` options) and ``A-settings``;
* the composable index template ``A`` for the indices ``A-0*`` (``A-000001``, ``A-000002``…);
* the ingest pipeline ``A-chunks`` (stamps ``indexed_at``), when the cluster has ingest
  processors; otherwise esrag stamps ``indexed_at`` itself and says so once;
* the alias ``A`` on the live index. A rebuild (e.g. a new embedder) fills the next versioned
  index and swaps the alias in one atomic ``_aliases`` call when the ingest into it completes.

The JSON assets live in ``mappings/`` and ``ingest_pipelines/`` (shipped in the wheel as
``esrag/assets/...``) and can be applied by hand from Kibana Dev Tools.

Requests are built by pure functions (``*_body``/``*_request`` below, unit-tested as exact
JSON) and executed by :class:`ElasticStore`, the only object that talks to the cluster. This is
the only module of esrag that imports ``elasticsearch`` (the 8.x client, which talks to 8.x and
9.x servers).

Why ``vector_bin``: the mapping leaves ``vector`` out of ``_source`` (Kibana Discover stays
readable on 8.x, where ``_source`` would otherwise carry every float). On 8.x a partial
``_update`` rebuilds the document from ``_source`` and silently drops the vector, and 8.x cannot
return an indexed vector any other way (``docvalue_fields`` refuses ``dense_vector``, no
synthetic vectors before 9.x). So each document also carries ``vector_bin``: the float32 vector,
little-endian, base64, as a *stored* binary field (not in ``_source``, not searchable, invisible
to Discover). :meth:`ElasticStore.update_meta` reads it back with ``stored_fields`` and
re-indexes the whole document (guarded by ``if_seq_no``/``if_primary_term``), identically on
8.15 and 9.2.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import orjson
from elasticsearch import (
    ApiError,
    AuthenticationException,
    AuthorizationException,
    ConnectionError as ESConnectionError,
    ConnectionTimeout,
    Elasticsearch,
    NotFoundError,
    TransportError,
)
from elasticsearch.helpers import scan
from elasticsearch.serializer import (
    CompatibilityModeJsonSerializer,
    CompatibilityModeNdjsonSerializer,
    JsonSerializer,
    NdjsonSerializer,
)

from esrag.analysis import es_analysis
from esrag.errors import ConfigError, EmbedderMismatch, NotIndexedError, RerankError, StoreError
from esrag.model import Chunk, Enrichment
from esrag.search.fusion import Fused, rrf
from esrag.stores.base import BranchLists, BranchQuery, Filters, IndexMeta, StoredEntry, StoreHits, WriteReport, check_compatible

#: kNN limit of Elasticsearch: ``num_candidates`` (and so ``k``) at most 10,000.
MAX_NUM_CANDIDATES = 10_000
#: Fields replaced by :meth:`ElasticStore.update_meta` (what ``esrag.ingest.meta_hash`` covers).
META_FIELDS = (
    "start_line", "end_line", "position", "n_chunks", "doc_title", "parent_id", "language", "authority",
    "effective_date", "superseded_by", "metadata", "meta_hash", "indexed_at", "url", "anchor",
)
_LABELS = ("language", "authority", "effective_date", "superseded_by")
_LIST_FIELDS = ("keywords", "questions", "entities", "related_keys")
_RETRYABLE = (429, 503)
_INDEX_NAME_BAD = re.compile(r'[\\/*?"<>| ,#:A-Z]')


class ClusterWarning(UserWarning):
    """The cluster lacks something esrag can do without (e.g. ingest processors)."""


# -- assets ---------------------------------------------------------------------------------
def asset_text(kind: str, name: str) -> str:
    """The text of a shipped JSON asset, ``kind`` being ``mappings`` or ``ingest_pipelines``.

    Looks in the installed wheel (``esrag/assets/<kind>/<name>``) first, then in the source
    tree's root (editable installs).

    Raises:
        StoreError: the asset is in neither place (a broken installation).
    """
    packaged = resources.files("esrag") / "assets" / kind / name
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    in_repo = Path(__file__).resolve().parents[2] / kind / name
    if in_repo.is_file():
        return in_repo.read_text(encoding="utf-8")
    raise StoreError(f"esrag's Elasticsearch asset {kind}/{name} is missing (looked in {packaged} and {in_repo}); reinstall esrag")


def load_asset(kind: str, name: str) -> dict[str, Any]:
    """A shipped JSON asset as a fresh dict (see :func:`asset_text`)."""
    return json.loads(asset_text(kind, name))


@dataclass(frozen=True, slots=True)
class IndexNames:
    """Names of everything esrag keeps on the cluster for one alias.

    Raises:
        ConfigError: ``alias`` is not a valid Elasticsearch index name.
    """

    alias: str

    def __post_init__(self) -> None:
        a = self.alias
        if not a or a in (".", "..") or a[0] in "-_+" or _INDEX_NAME_BAD.search(a) or len(a.encode()) > 200:
            raise ConfigError(
                f"ESRAG_INDEX={a!r} is not a usable Elasticsearch alias name: use lowercase letters, digits, '-', '_' or '.', "
                "not starting with '-', '_' or '+', at most 200 bytes"
            )

    @property
    def pattern(self) -> str:
        """Index pattern of the versioned indices: ``A-0*``."""
        return f"{self.alias}-0*"

    def index(self, n: int) -> str:
        """The n-th versioned index: ``A-000001`` for n=1."""
        return f"{self.alias}-{n:06d}"

    def number(self, index: str) -> int | None:
        """n for ``A-00000n``, None for any other name."""
        m = re.fullmatch(re.escape(self.alias) + r"-(\d{6})", index)
        return int(m.group(1)) if m else None

    @property
    def mappings(self) -> str:
        return f"{self.alias}-mappings"

    @property
    def settings(self) -> str:
        return f"{self.alias}-settings"

    @property
    def template(self) -> str:
        return self.alias

    @property
    def pipeline(self) -> str:
        return f"{self.alias}-chunks"

    @property
    def priority(self) -> int:
        """Template priority: longer (more specific) aliases win where patterns overlap."""
        return 500 + min(len(self.alias), 255)


# -- request bodies (pure) ------------------------------------------------------------------
def mappings_component_body(meta: IndexMeta, rebuild_of: str | None = None, stemming: bool = True,
                            language_fields: dict[str, str] | None = None) -> dict[str, Any]:
    """Body of ``PUT _component_template/A-mappings`` for ``meta``: dims and ``_meta`` filled, and
    ``settings.analysis`` defining the text analyzer ``esrag_text`` for ``meta.analyzer`` (see
    :func:`esrag.analysis.es_analysis`; ``stemming`` is False on clusters without the
    analysis-common token filters). The analysis lives in this component because Elasticsearch
    validates each component template on its own, and the text fields name the analyzer."""
    body = load_asset("mappings", "esrag-mappings.json")
    body["template"]["settings"] = {"analysis": es_analysis(meta.analyzer, stemming)}
    mappings = body["template"]["mappings"]
    mappings["properties"]["vector"]["dims"] = meta.dims
    mappings["_meta"] = {"managed_by": "esrag", **meta.to_dict()}
    if language_fields is not None:  # per-language subfields text.<code> (esrag.language)
        add_language_subfields(mappings, language_fields)
    if rebuild_of:
        mappings["_meta"]["rebuild_of"] = rebuild_of
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
        out.append({"bool": {"should": [
            {"range": {"effective_date": {"lte": f"{filters.effective_on[:10]}||/d"}}},
            {"bool": {"must_not": [{"exists": {"field": "effective_date"}}]}},
        ], "minimum_should_match": 1}})
    if filters.exclude_superseded:
        out.append({"bool": {"must_not": [{"exists": {"field": "superseded_by"}}]}})
    if filters.doc_version is not None:
        out.append(version_clause(filters.doc_version))
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
    clause: dict[str, Any] = {
        "multi_match": {"query": query, "fields": weighted_fields(fields), "type": "best_fields", "tie_breaker": 0.3}
    }
    boolean: dict[str, Any] = {"must": [clause]}
    clauses = filter_clauses(filters)
    if clauses:
        boolean["filter"] = clauses
    return {"bool": boolean}


def bm25_body(query: str, k: int, filters: Filters, fields: dict[str, float], source: bool = False) -> dict[str, Any]:
    """``_search`` body of the BM25 leg: ids and scores of the top ``k`` (with their ``_source``
    when ``source``)."""
    return {"size": k, "_source": source, "track_total_hits": False, "query": bm25_query(query, fields, filters)}


def knn_clause(vector: Sequence[float], k: int, filters: Filters, num_candidates: int) -> dict[str, Any]:
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


def knn_body(vector: Sequence[float], k: int, filters: Filters, num_candidates: int, source: bool = False) -> dict[str, Any]:
    """``_search`` body of the kNN leg (top-level ``knn``; hits' ``_source`` when ``source``)."""
    clause = knn_clause(vector, k, filters, num_candidates)
    return {"size": clause["k"], "_source": source, "track_total_hits": False, "knn": clause}


def rrf_body(
    query: str,
    vector: Sequence[float],
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
    query: str, vector: Sequence[float], window: int, filters: Filters, fields: dict[str, float], num_candidates: int,
    source: bool = False,
) -> list[dict[str, Any]]:
    """``_msearch`` searches (header, body pairs) running both legs in one round trip (each hit
    with its ``_source`` when ``source``)."""
    return [{}, bm25_body(query, window, filters, fields, source), {}, knn_body(vector, window, filters, num_candidates, source)]


def branches_msearch_body(branches: Sequence[BranchQuery], fields: dict[str, float],
                          fields_for: Callable[[str, dict[str, float]], dict[str, float]] | None = None) -> list[dict[str, Any]]:
    """``_msearch`` searches (header, body pairs) for every leg of every fan-out branch in one
    round trip: per branch a BM25 search (when it has query text and fields) then a kNN search
    (when it has a vector), each of ``window`` hits with the branch's filters inside.
    ``fields_for(query, fields)`` adapts the BM25 fields to each query (its language subfield)."""
    out: list[dict[str, Any]] = []
    for b in branches:
        if b.query.strip() and weighted_fields(fields):
            out += [{}, bm25_body(b.query, b.window, b.filters, fields_for(b.query, fields) if fields_for else fields)]
        if b.vector is not None:
            out += [{}, knn_body(b.vector, b.window, b.filters, b.num_candidates)]
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


def classify_reranker_error(inference_id: str, status: int, body: Any) -> str:
    """A clear message for a refused ``text_similarity_reranker`` / ``_inference`` request."""
    reason = error_reason(body)
    way_out = "use --rerank http:URL or cross-encoder:MODEL instead"
    if "unknown retriever [text_similarity_reranker]" in reason or "no handler found" in reason:
        return (f"this Elasticsearch has no text_similarity_reranker retriever / inference API ({reason}); it needs the "
                f"inference plugin of a full distribution (8.14+, Enterprise or trial licence): {way_out}")
    if status == 403 or "license" in reason.lower():
        return f"the cluster's licence does not allow semantic reranking ({reason}; Enterprise or trial needed): {way_out}"
    if status == 404 or "resource_not_found" in reason:
        return (f"the cluster has no inference endpoint {inference_id!r} ({reason}); create one for the rerank task "
                f"(PUT _inference/rerank/{inference_id}) or {way_out}")
    return f"the cluster refused the rerank request ({status} {reason})"


def retriever_probe_body(name: str) -> dict[str, Any]:
    """A no-hit ``_search`` that only parses when the ``rrf`` or ``linear`` retriever exists and is licensed."""
    none = {"standard": {"query": {"match_none": {}}}}
    if name == "rrf":
        return {"size": 0, "retriever": {"rrf": {"retrievers": [none, copy.deepcopy(none)]}}}
    if name == "linear":
        return {"size": 0, "retriever": {"linear": {"retrievers": [{"retriever": none, "weight": 1.0}, {"retriever": copy.deepcopy(none), "weight": 1.0}]}}}
    raise ValueError(f"unknown retriever {name!r}; valid: rrf, linear")


def error_reason(body: Any) -> str:
    """The most specific reason in an Elasticsearch error body (``type: reason``), or its text."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            root = (err.get("root_cause") or [err])[0]
            reason = root.get("reason") or err.get("reason") or ""
            caused = err.get("caused_by") or {}
            if caused.get("reason") and caused.get("reason") not in reason and root is err:
                reason = f"{reason}: {caused['reason']}"
            return _clip(f"{root.get('type') or err.get('type', 'error')}: {reason}".strip())
        return _clip(str(err))
    return _clip(str(body))


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"



def classify_retriever_probe(name: str, status: int, body: Any) -> tuple[bool, str]:
    """Classify the answer to :func:`retriever_probe_body`: ``(available, why)``.

    200 means available. "unknown retriever [rrf]" (a build without the rank module, like the
    integ-test node) and a licence refusal (403 ``security_exception`` "current license is
    non-compliant for [...]", a Basic licence) mean unavailable, with the reason.
    """
    if 200 <= status < 300:
        return True, f"{name} retriever available"
    reason = error_reason(body)
    if f"unknown retriever [{name}]" in reason or "named_object_not_found" in reason:
        return False, f"this Elasticsearch has no {name} retriever ({reason}; it needs 8.16+ with the rank modules, e.g. the default distribution)"
    if status == 403 or "license" in reason.lower():
        return False, f"the cluster's licence does not allow the {name} retriever ({reason}; it needs an Enterprise or trial licence)"
    return False, f"the {name} retriever was refused ({status} {reason})"


def encode_vector(vector: np.ndarray) -> str:
    """float32 little-endian bytes of ``vector``, base64 (the ``vector_bin`` stored field)."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(data: str) -> np.ndarray:
    """Inverse of :func:`encode_vector`: array [dims] float32."""
    return np.frombuffer(base64.b64decode(data), dtype="<f4").astype(np.float32)


def chunk_document(chunk: Chunk, vector: np.ndarray, meta_hash: str, indexed_at: str | None) -> dict[str, Any]:
    """The indexed document of ``chunk``: separate fields, labels pulled out of ``metadata``,
    the vector twice (``vector`` for kNN, ``vector_bin`` stored for metadata updates). Empty
    enrichment fields and None values are left out, so Discover shows only what is there."""
    e = chunk.enrichment or Enrichment()
    md = dict(chunk.metadata)
    labels = {name: md.pop(name, None) for name in _LABELS}
    doc: dict[str, Any] = {
        "text": chunk.text, "section_path": chunk.section_path, "doc_title": chunk.doc_title,
        "corpus": chunk.corpus, "source_path": chunk.source_path, "position": chunk.position,
        "n_chunks": chunk.n_chunks, "start_line": chunk.start_line, "end_line": chunk.end_line,
        "tokens": chunk.tokens, "content_hash": chunk.content_hash, "meta_hash": meta_hash,
        "parent_id": chunk.parent_id, "context": chunk.context, **labels,
        "anchor": chunk.anchor, "url": chunk.url, "doc_version": chunk.doc_version,
        "title": e.title, "summary": e.summary, "keywords": list(e.keywords), "questions": list(e.questions),
        "entities": list(e.entities), "key": e.key, "related_keys": list(e.related_keys),
        "enrich_model": e.model, "prompt_sha256": e.prompt_sha256, "metadata": md,
        "indexed_at": indexed_at,
    }
    doc = {k: v for k, v in doc.items() if v is not None and (k in ("text", "metadata") or v not in ("", []))}
    doc["vector"] = [float(x) for x in np.asarray(vector, dtype=np.float32)]
    doc["vector_bin"] = encode_vector(vector)
    return doc


def chunk_from_source(doc_id: str, src: dict[str, Any]) -> Chunk:
    """Rebuild a :class:`Chunk` from a stored ``_source`` (see :func:`chunk_document`)."""
    metadata = dict(src.get("metadata") or {})
    for name in _LABELS:
        if src.get(name) is not None:
            metadata[name] = src[name]
    enrichment = None
    if src.get("enrich_model") or src.get("title") or src.get("summary") or src.get("key") or src.get("entities"):
        enrichment = Enrichment(
            title=src.get("title", ""), summary=src.get("summary", ""), keywords=_as_list(src.get("keywords")),
            questions=_as_list(src.get("questions")), entities=_as_list(src.get("entities")), key=src.get("key", ""),
            related_keys=_as_list(src.get("related_keys")), model=src.get("enrich_model", ""),
            prompt_sha256=src.get("prompt_sha256", ""),
        )
    return Chunk(
        id=doc_id, text=src.get("text", ""), corpus=src.get("corpus", ""), source_path=src.get("source_path", ""),
        section_path=src.get("section_path", ""), start_line=src.get("start_line", 1), end_line=src.get("end_line", 1),
        position=src.get("position", 1), n_chunks=src.get("n_chunks", 1), tokens=src.get("tokens", 0),
        content_hash=src.get("content_hash", ""), doc_title=src.get("doc_title", ""), parent_id=src.get("parent_id"),
        context=src.get("context", ""), enrichment=enrichment, metadata=metadata, anchor=src.get("anchor", ""),
        url=src.get("url", ""), doc_version=src.get("doc_version", ""),
    )


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- bulk -----------------------------------------------------------------------------------
@dataclass(slots=True)
class BulkItem:
    """Outcome of one bulk action: ``ok``; ``result`` (``created``/``updated``/``deleted``/
    ``not_found``) or ``error`` (``type: reason``)."""

    id: str
    ok: bool
    result: str = ""
    error: str = ""
    status: int = 0


@dataclass(slots=True)
class Action:
    """One bulk action: ``op`` (index or delete), target index, document id, optional source
    and concurrency guard."""

    op: str
    index: str
    id: str
    source: dict[str, Any] | None = None
    if_seq_no: int | None = None
    if_primary_term: int | None = None

    def lines(self) -> list[dict[str, Any]]:
        header: dict[str, Any] = {"_index": self.index, "_id": self.id}
        if self.if_seq_no is not None:
            header["if_seq_no"] = self.if_seq_no
            header["if_primary_term"] = self.if_primary_term
        return [{self.op: header}] + ([self.source] if self.source is not None else [])


class RetryableBulkError(Exception):
    """A whole bulk request was refused with 429/503 (the cluster is busy)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


def batched(items: Sequence[Action], size: int) -> Iterator[list[Action]]:
    """Consecutive slices of at most ``size`` actions."""
    for start in range(0, len(items), max(1, size)):
        yield list(items[start : start + size])


def bulk_stream(
    send: Callable[[list[dict[str, Any]]], dict[str, Any]],
    actions: Sequence[Action],
    batch_size: int = 500,
    max_retries: int = 5,
    initial_backoff: float = 0.5,
    max_backoff: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[BulkItem]:
    """Send ``actions`` in batches; yield one :class:`BulkItem` per action.

    ``send(operations)`` posts one ``_bulk`` and returns its response, or raises
    :class:`RetryableBulkError` for a whole-request 429/503. Items (or whole requests) refused
    with 429/503 are retried with exponential backoff (``initial_backoff`` seconds, doubling, at
    most ``max_backoff``) up to ``max_retries`` times; any other per-item error is yielded and
    never stops the batches after it.
    """
    for batch in batched(actions, batch_size):
        pending = batch
        for attempt in range(max_retries + 1):
            delay = min(max_backoff, initial_backoff * 2**attempt)
            last = attempt == max_retries
            try:
                response = send([line for a in pending for line in a.lines()])
            except RetryableBulkError as exc:
                if last:
                    yield from (BulkItem(a.id, False, error=f"gave up after {max_retries} retries: {exc}", status=exc.status) for a in pending)
                    break
                sleep(delay)
                continue
            retry: list[Action] = []
            for action, item in zip(pending, response.get("items", [])):
                outcome = _bulk_item(action, item)
                if not outcome.ok and outcome.status in _RETRYABLE and not last:
                    retry.append(action)
                else:
                    yield outcome
            if not retry:
                break
            pending = retry
            sleep(delay)


def _bulk_item(action: Action, item: dict[str, Any]) -> BulkItem:
    res = next(iter(item.values()))
    status = int(res.get("status", 0))
    if action.op == "delete" and status == 404:
        return BulkItem(action.id, True, "not_found", status=status)
    if "error" in res or status >= 300:
        return BulkItem(action.id, False, error=error_reason({"error": res.get("error", {})}), status=status)
    return BulkItem(action.id, True, res.get("result", ""), status=status)


# -- capabilities ---------------------------------------------------------------------------
@dataclass(slots=True)
class Capabilities:
    """What a cluster can do, found once per connection.

    Attributes:
        version: server version (nodes info API), e.g. ``"9.2.8"``.
        licence: licence type and status (``"trial"``, ``"active"``), or ``"unknown"``.
        rrf, linear: whether the native retriever is usable, with the reason.
        ingest_processors: processor types the ingest nodes offer (``set``…).
        analyzers: language analyzer name -> available.
    """

    version: str
    licence: dict[str, str]
    rrf: tuple[bool, str]
    linear: tuple[bool, str]
    ingest_processors: list[str] = field(default_factory=list)
    analyzers: dict[str, bool] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version, "licence": self.licence,
            "rrf": {"available": self.rrf[0], "detail": self.rrf[1]},
            "linear": {"available": self.linear[0], "detail": self.linear[1]},
            "ingest_processors": self.ingest_processors, "analyzers": self.analyzers,
        }


# -- the store ------------------------------------------------------------------------------
class _Orjson:
    """orjson in place of the standard library's json inside the client's serializers (the
    client's own ``default`` still handles dates, decimals, numpy and pandas values). On the
    Laravel index a hybrid ``_msearch`` (two legs of 50 hits with ``_source``, ~118 KB) spent
    ~0.4 ms less in the client per query (wall minus ``took``: 2.2 -> 1.8 ms); bulk bodies of
    float vectors encode faster too."""

    def json_dumps(self, data: Any) -> bytes:
        return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)  # type: ignore[attr-defined]

    def json_loads(self, data: bytes) -> Any:
        return orjson.loads(data)


_ORJSON_SERIALIZERS = tuple(
    type(f"Orjson{kind.__name__}", (_Orjson, kind), {"__doc__": f"{kind.__name__} on orjson."})
    for kind in (JsonSerializer, NdjsonSerializer, CompatibilityModeJsonSerializer, CompatibilityModeNdjsonSerializer)
)


def fast_serializers() -> dict[str, Any]:
    """The client's serializers by mimetype (JSON, NDJSON and their ``compatible-with``
    variants, which the 8.x client sends and 9.x servers answer with) backed by orjson."""
    return {kind.mimetype: kind() for kind in _ORJSON_SERIALIZERS}


def redact_url(url: str) -> str:
    """``url`` without user:password (safe to print)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


class ElasticStore:
    """The Elasticsearch store (``elastic``). Talks to the cluster only when first used.

    Args:
        url: ``http(s)://host:port`` of the cluster (credentials in the URL are accepted and
            never printed).
        index: the alias (``ESRAG_INDEX``); versioned indices are ``<index>-000001``…
        api_key: an encoded API key (``ESRAG_ES_API_KEY``); wins over user/password.
        user, password: basic auth (``ESRAG_ES_USER``/``ESRAG_ES_PASSWORD``).
        ca_certs: CA bundle (PEM) to verify the cluster's TLS certificate (``ESRAG_ES_CA_CERTS``).
        request_timeout: seconds per request.
        batch_size: documents per ``_bulk`` request.
        max_retries, initial_backoff, max_backoff: bulk retries on 429/503 (seconds, doubling).

    Raises:
        ConfigError: bad URL, alias name or incomplete credentials.
    """

    name = "elastic"

    def __init__(
        self,
        url: str,
        index: str = "esrag",
        *,
        api_key: str | None = None,
        user: str | None = None,
        password: str | None = None,
        ca_certs: str | Path | None = None,
        request_timeout: float = 30.0,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 0.5,
        max_backoff: float = 30.0,
        text_languages: Sequence[str] = (),
        language_candidates: Sequence[str] = (),
    ) -> None:
        parts = urlsplit(url or "")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"ESRAG_ES_URL={redact_url(url or '')!r} is not an http(s)://host:port URL")
        if (user is None) != (password is None) and not api_key:
            raise ConfigError("set both ESRAG_ES_USER and ESRAG_ES_PASSWORD (or ESRAG_ES_API_KEY instead)")
        self.names = IndexNames(index)
        self.alias = index
        self.url = redact_url(url)
        self._secrets = [s for s in (api_key, password, parts.password) if s]
        self.auth = "api_key" if api_key else "basic" if (user or parts.username) else "none"
        self.batch_size, self.max_retries = batch_size, max_retries
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        options: dict[str, Any] = {
            "request_timeout": request_timeout, "max_retries": 2, "retry_on_timeout": True,
            "retry_on_status": (502, 503, 504), "serializers": fast_serializers(),
        }
        if api_key:
            options["api_key"] = api_key
        elif user is not None:
            options["basic_auth"] = (user, password)
        if ca_certs:
            if not Path(ca_certs).is_file():
                raise ConfigError(f"ESRAG_ES_CA_CERTS={str(ca_certs)!r} is not a file; point it at the cluster's CA certificate (PEM)")
            options["ca_certs"] = str(ca_certs)
        try:
            self._es = Elasticsearch(url, **options)
        except ValueError as exc:
            raise ConfigError(f"cannot use ESRAG_ES_URL={self.url!r}: {self._redact(str(exc))}") from None
        self._checked = False
        self._capabilities: Capabilities | None = None
        self._retrievers: dict[str, tuple[bool, str]] = {}
        self._info: dict[str, Any] | None = None
        self._rebuild = False
        self._rebuild_index: str | None = None
        #: this thread's last hybrid timings (see :attr:`last_took_ms`); results carry their own
        self._last = threading.local()
        self._stemming: bool | None = None
        #: languages that get a subfield text.<code> in a new index (``[language] fields``), and
        #: the detector's candidates for a query's language (``[language] candidates``)
        self.text_languages, self.language_candidates = list(text_languages), list(language_candidates)
        self._analyzers: dict[str, bool] = {}

    @classmethod
    def from_settings(cls, settings) -> ElasticStore:
        """The store for ``settings`` (``es_url``, ``index``, ``es_api_key``, ``es_user``,
        ``es_password``, ``es_ca_certs``).

        Raises:
            ConfigError: ``ESRAG_ES_URL`` is not set, or the settings are unusable.
        """
        if not settings.es_url:
            raise ConfigError("the elastic store needs ESRAG_ES_URL (e.g. http://127.0.0.1:9200); unset ESRAG_STORE to use the embedded store")

        def secret(value) -> str | None:
            return value.get_secret_value() if value is not None else None

        return cls(
            settings.es_url, settings.index, api_key=secret(settings.es_api_key), user=settings.es_user,
            password=secret(settings.es_password), ca_certs=settings.es_ca_certs,
            text_languages=settings.language.fields, language_candidates=settings.language.candidates,
        )

    @property
    def last_took_ms(self) -> int | None:
        """The cluster's own ``took`` (ms) of this thread's last hybrid request. A convenience for
        one-thread callers and benchmarks; concurrent callers read ``StoreHits.took_ms`` of their
        own result (nothing in esrag reads this)."""
        return getattr(self._last, "took_ms", None)

    @property
    def last_round_trip_ms(self) -> float | None:
        """The HTTP exchange of this thread's last hybrid request (ms: request sent to response
        read, the cluster's ``took`` plus its REST layer and the network); see :attr:`last_took_ms`."""
        return getattr(self._last, "round_trip_ms", None)

    def __repr__(self) -> str:
        return f"ElasticStore(url={self.url!r}, index={self.alias!r}, auth={self.auth!r})"

    __str__ = __repr__

    # -- errors ---------------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _fail(self, exc: Exception, what: str) -> StoreError:
        """One clear :class:`StoreError` for a client exception: the URL, the cause, the way out."""
        where = f"Elasticsearch at {self.url}"
        if isinstance(exc, (ESConnectionError, ConnectionTimeout)) or (isinstance(exc, TransportError) and not isinstance(exc, ApiError)):
            text = str(exc)
            if "CERTIFICATE_VERIFY_FAILED" in text or "SSL" in text or "TLS" in text:
                hint = "set ESRAG_ES_CA_CERTS to the cluster's CA certificate (PEM), or check the URL's scheme"
                cause = "TLS verification failed"
            else:
                hint = ("start it (scripts/es-node start, or docker-compose -f docker/compose.yml up -d), fix ESRAG_ES_URL, "
                        "or unset ESRAG_ES_URL to use the embedded store")
                cause = _short_cause(text)
            return StoreError(self._redact(f"cannot reach {where} ({cause}) while trying to {what}; {hint}"))
        if isinstance(exc, AuthenticationException):
            return StoreError(self._redact(
                f"{where} refused the credentials (401) while trying to {what}; check ESRAG_ES_API_KEY or ESRAG_ES_USER/ESRAG_ES_PASSWORD"))
        if isinstance(exc, AuthorizationException):
            return StoreError(self._redact(
                f"{where} denied permission (403: {error_reason(exc.body)}) to {what}; grant the user's role access to "
                f"{self.alias}* indices, templates and pipelines"))
        if isinstance(exc, ApiError):
            return StoreError(self._redact(f"{where} could not {what}: {exc.meta.status} {error_reason(exc.body)}"))
        return StoreError(self._redact(f"{where}: {what} failed: {type(exc).__name__}: {exc}"))

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, what) from None

    def _ready(self) -> None:
        """Check once that the cluster answers (``cluster.health``; never ``ping``/``info``)."""
        if not self._checked:
            self._call("check cluster health", self._es.cluster.health)
            self._checked = True

    # -- cluster facts --------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``GET _cluster/health`` (status, nodes, cluster name)."""
        resp = self._call("check cluster health", self._es.cluster.health)
        self._checked = True
        return dict(resp.body)

    def server_version(self) -> str:
        """The version of the nodes (nodes info API; the lowest when they differ)."""
        resp = self._call("read the nodes' version", self._es.nodes.info, filter_path="nodes.*.version")
        versions = sorted({n["version"] for n in resp.body.get("nodes", {}).values()}, key=_version_key)
        return versions[0] if versions else "unknown"

    def licence(self) -> dict[str, str]:
        """``{"type": ..., "status": ...}`` of the cluster's licence (``unknown`` when unreadable)."""
        try:
            body = self._es.license.get().body.get("license", {})
            return {"type": body.get("type", "unknown"), "status": body.get("status", "unknown")}
        except ApiError as exc:
            return {"type": "unknown", "status": f"unreadable ({error_reason(exc.body)})"}
        except TransportError as exc:
            raise self._fail(exc, "read the licence") from None

    def retriever_support(self, name: str) -> tuple[bool, str]:
        """Whether the native ``rrf``/``linear`` retriever works here (licence and feature),
        probed once per connection with a no-hit search; ``(available, reason)``."""
        if name not in self._retrievers:
            try:
                self._es.search(index=self.alias, body=retriever_probe_body(name), ignore_unavailable=True, allow_no_indices=True)
                self._retrievers[name] = classify_retriever_probe(name, 200, {})
            except ApiError as exc:
                self._retrievers[name] = classify_retriever_probe(name, exc.meta.status, exc.body)
            except TransportError as exc:
                raise self._fail(exc, f"probe the {name} retriever") from None
        return self._retrievers[name]

    def ingest_processors(self) -> list[str]:
        """Processor types offered by the ingest nodes (``GET _nodes/ingest``)."""
        resp = self._call("list ingest processors", self._es.nodes.info, metric="ingest", filter_path="nodes.*.ingest.processors")
        types: set[str] = set()
        for node in resp.body.get("nodes", {}).values():
            types.update(p["type"] for p in node.get("ingest", {}).get("processors", []))
        return sorted(types)

    def stemming_available(self) -> bool:
        """Whether the cluster has the ``porter_stem`` token filter (analysis-common), which the
        ``english`` analyzer needs; without it esrag analyzes with ``standard`` + stop words."""
        if self._stemming is None:
            try:
                self._es.indices.analyze(tokenizer="standard", filter=["porter_stem"], text="running")
                self._stemming = True
            except ApiError as exc:
                if exc.meta.status != 400:
                    raise self._fail(exc, "check the porter_stem token filter") from None
                self._stemming = False
                _warn(f"Elasticsearch at {self.url} has no porter_stem token filter ({error_reason(exc.body)}); text is "
                      "analyzed without stemming (standard analyzer + English stop words). A full distribution has it.")
            except TransportError as exc:
                raise self._fail(exc, "check the porter_stem token filter") from None
        return self._stemming

    def analyzer_available(self, analyzer: str) -> bool:
        """Whether the built-in ``analyzer`` (e.g. ``english``) exists on the cluster."""
        try:
            self._es.indices.analyze(analyzer=analyzer, text="running")
            return True
        except ApiError:
            return False
        except TransportError as exc:
            raise self._fail(exc, f"check the {analyzer} analyzer") from None

    def language_fields(self) -> dict[str, str]:
        """``{code: analyzer}`` of the ``text.<code>`` subfields a new index gets: the configured
        ``text_languages`` whose built-in analyzer this cluster has (probed with ``_analyze``
        once per connection). Missing analyzers are warned about; those languages are searched
        on ``text`` with ``esrag_text`` (the integ-test node has no language analyzers).

        Raises:
            ConfigError: a language without a built-in Elasticsearch analyzer.
        """
        from esrag.language import ES_ANALYZERS, es_language_fields

        try:
            wanted = {ES_ANALYZERS[c] for c in self.text_languages if c in ES_ANALYZERS}
            fields = es_language_fields(self.text_languages, {a: self._analyzer_cached(a) for a in wanted})
        except ValueError as exc:
            raise ConfigError(f"[language] fields: {exc}") from None
        missing = [c for c in self.text_languages if c not in fields]
        if missing:
            _warn(f"Elasticsearch at {self.url} has no language analyzer for {', '.join(missing)} "
                  f"({', '.join(ES_ANALYZERS[c] for c in missing)}); those languages are searched on text with esrag_text. "
                  "A full distribution has them.")
        return fields

    def _analyzer_cached(self, analyzer: str) -> bool:
        if analyzer not in self._analyzers:
            self._analyzers[analyzer] = self.analyzer_available(analyzer)
        return self._analyzers[analyzer]

    def query_fields(self, query: str, fields: dict[str, float]) -> dict[str, float]:
        """The BM25 fields for ``query``: ``fields`` plus ``text.<lang>`` when the index has a
        subfield for the query's detected language (``_meta.text_languages``)."""
        state = self._state()
        subfields = (state or {}).get("raw", {}).get("text_languages") or {}
        if not subfields or not query.strip():
            return fields
        from esrag.language import detect_query, with_language_field

        return with_language_field(fields, detect_query(query, self.language_candidates), subfields)

    def capabilities(self, analyzers: Sequence[str] = ("english", "german", "french")) -> Capabilities:
        """Everything :mod:`esrag.doctor` reports, found once per connection."""
        if self._capabilities is None:
            self._ready()
            self._capabilities = Capabilities(
                version=self.server_version(), licence=self.licence(), rrf=self.retriever_support("rrf"),
                linear=self.retriever_support("linear"), ingest_processors=self.ingest_processors(),
                analyzers={a: self.analyzer_available(a) for a in analyzers},
            )
        return self._capabilities

    def assets(self) -> dict[str, Any]:
        """State of esrag's objects for this alias: templates, pipeline, alias target, pending rebuild."""
        self._ready()
        n = self.names

        def exists(what: str, fn: Callable[..., Any], **kw: Any) -> bool:
            try:
                fn(**kw)
                return True
            except NotFoundError:
                return False
            except (ApiError, TransportError) as exc:
                raise self._fail(exc, f"read {what}") from None

        return {
            "index_template": exists("the index template", self._es.indices.get_index_template, name=n.template),
            "component_templates": {
                c: exists("a component template", self._es.cluster.get_component_template, name=c) for c in (n.settings, n.mappings)
            },
            "pipeline": exists("the ingest pipeline", self._es.ingest.get_pipeline, id=n.pipeline),
            "alias": self.alias,
            "index": self._alias_index(),
            "pending_rebuild": self._pending_rebuild(),
        }

    # -- lifecycle ------------------------------------------------------------------------
    def _alias_index(self) -> str | None:
        """The concrete index behind the alias (its write index), or None."""
        try:
            resp = self._es.indices.get_alias(name=self.alias)
        except NotFoundError:
            return None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"read the alias {self.alias}") from None
        indices = resp.body
        for index, data in indices.items():
            if data.get("aliases", {}).get(self.alias, {}).get("is_write_index"):
                return index
        return sorted(indices)[-1] if indices else None

    def _index_meta(self, index: str) -> dict[str, Any] | None:
        try:
            resp = self._es.indices.get_mapping(index=index)
        except NotFoundError:
            return None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"read the mapping of {index}") from None
        for data in resp.body.values():
            return data.get("mappings", {}).get("_meta")
        return None

    def _read_index(self) -> str | None:
        """Where reads and writes go: the rebuild index during a rebuild, else the alias."""
        self._ready()
        if self._rebuild:
            return self._rebuild_index
        return self.alias if self._alias_index() is not None else None

    def _state(self) -> dict[str, Any] | None:
        """Cached facts of the target index: name, meta, whether a default pipeline stamps it."""
        if self._info is None:
            target = self._read_index()
            if target is None:
                return None
            raw = self._index_meta(target)
            if raw is None or "embedder" not in raw:
                raise StoreError(
                    f"the index behind {target!r} on Elasticsearch at {self.url} was not made by esrag (no esrag _meta); "
                    "choose another ESRAG_INDEX"
                )
            settings = self._call("read index settings", self._es.indices.get_settings, index=target, name="index.default_pipeline")
            pipeline = any(v.get("settings", {}).get("index", {}).get("default_pipeline") for v in settings.body.values())
            self._info = {"index": target, "meta": IndexMeta.from_dict(raw), "pipeline": pipeline, "raw": raw}
        return self._info

    def meta(self) -> IndexMeta | None:
        """See :class:`esrag.stores.base.Store`. During a rebuild: the new index's meta."""
        state = self._state()
        return state["meta"] if state else None

    def ensure(self, meta: IndexMeta) -> None:
        """See :class:`esrag.stores.base.Store`. Installs templates, pipeline, the first
        versioned index and the alias when the alias is missing (``esrag ingest`` on an empty
        cluster). During a rebuild (:meth:`begin_rebuild`) it creates the next versioned index
        instead, without the alias.

        Raises:
            EmbedderMismatch: the index holds another model/dims/embed fields; the message
                names both and the way out (``esrag ingest --rebuild``).
            StoreError: the cluster is unreachable or rejects the templates (nothing is left behind).
        """
        state = self._state()
        if state is not None:
            self._check(state["meta"], meta, state["index"])
            self._add_link_fields(state["index"])
            return
        self._info = None
        if self._rebuild:
            current = self._alias_index()
            self._rebuild_index = self._install(meta, with_alias=current is None, rebuild_of=current)
            if current is None:  # nothing to rebuild: a plain first index
                self._rebuild, self._rebuild_index = False, None
        else:
            self._install(meta, with_alias=True)

    def _add_link_fields(self, index: str) -> None:
        """Map ``doc_version``, ``anchor`` and ``url`` in an index made before they existed
        (adding fields to a mapping is allowed; the definitions are the shipped ones)."""
        props = load_asset("mappings", "esrag-mappings.json")["template"]["mappings"]["properties"]
        wanted = {k: props[k] for k in ("doc_version", "anchor", "url")}
        self._call("add the link fields to the mapping", self._es.indices.put_mapping, index=index, properties=wanted)

    def _check(self, current: IndexMeta, wanted: IndexMeta, index: str) -> None:
        try:
            check_compatible(current, wanted, f"{self.url} ({index})")
        except EmbedderMismatch as exc:
            if self._rebuild:
                raise EmbedderMismatch(
                    f"{exc} A rebuild into {index} is pending for that embedder: finish it with the same embedder "
                    f"(`esrag ingest --rebuild` with ESRAG_EMBEDDER={current.embedder}) or delete the index {index}."
                ) from None
            raise EmbedderMismatch(
                f"{exc} On Elasticsearch, `esrag ingest --rebuild PATH` builds a new versioned index with the configured "
                f"embedder and swaps the alias {self.alias} to it when complete."
            ) from None

    def setup(self, settings) -> dict[str, Any]:
        """``esrag setup``: install templates, pipeline, first index and alias for the configured
        embedder (loads it to learn its dims); refreshes the templates of an existing index.

        Returns:
            a report: url, alias, index, embedder, dims, pipeline state.

        Raises:
            EmbedderMismatch: the existing index was built with another embedder.
            StoreError: unreachable cluster or rejected templates.
        """
        from esrag import __version__
        from esrag.embedding import make_embedder

        emb = make_embedder(settings.embedder, settings)
        wanted = IndexMeta(emb.spec, emb.dims, list(settings.index_text.embed_fields), dict(settings.index_text.bm25_fields),
                           __version__, analyzer=settings.index_text.analyzer)
        return self.install(wanted)

    def install(self, meta: IndexMeta) -> dict[str, Any]:
        """:meth:`setup` for a known ``meta``; returns the same report."""
        state = self._state()
        if state is None:
            self.ensure(meta)
            state = self._state()
            status = "created"
        else:
            self._check(state["meta"], meta, state["index"])
            self._put_assets(state["meta"], [], rebuild_of=state["raw"].get("rebuild_of"))
            status = "exists (templates refreshed)"
        assets = self.assets()
        return {
            "store": self.name, "url": self.url, "alias": self.alias, "index": assets["index"],
            "status": status, "embedder": meta.embedder, "dims": meta.dims,
            "index_template": self.names.template, "component_templates": [self.names.settings, self.names.mappings],
            "pipeline": self.names.pipeline if assets["pipeline"] else "not installed (no ingest processors; esrag sets indexed_at)",
        }

    def _put_assets(self, meta: IndexMeta, undo: list[Callable[[], Any]], rebuild_of: str | None = None) -> bool:
        """PUT mappings component, pipeline, settings component and index template, recording
        how to undo each. Returns whether the pipeline is installed."""
        n, es = self.names, self._es
        self._put(undo, "the mappings component template", es.cluster.get_component_template, es.cluster.put_component_template,
                  es.cluster.delete_component_template, "component_templates", n.mappings,
                  mappings_component_body(meta, rebuild_of, self.stemming_available(), self.language_fields()))
        pipeline = self._put_pipeline(undo)
        self._put(undo, "the settings component template", es.cluster.get_component_template, es.cluster.put_component_template,
                  es.cluster.delete_component_template, "component_templates", n.settings, settings_component_body(n.pipeline if pipeline else None))
        self._put(undo, "the index template", es.indices.get_index_template, es.indices.put_index_template,
                  es.indices.delete_index_template, "index_templates", n.template, index_template_body(n))
        return pipeline

    def _put(self, undo, what, get, put, delete, key, name, body) -> None:
        previous = _previous(get, key, name)
        try:
            put(name=name, body=body)
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"install {what} {name}") from None
        if previous is None:
            undo.append(lambda: delete(name=name))
        else:
            undo.append(lambda: put(name=name, body=previous))

    def _put_pipeline(self, undo: list[Callable[[], Any]]) -> bool:
        name, es = self.names.pipeline, self._es
        try:
            previous = es.ingest.get_pipeline(id=name).body.get(name)
        except NotFoundError:
            previous = None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, "read the ingest pipeline") from None
        try:
            es.ingest.put_pipeline(id=name, body=pipeline_body())
        except ApiError as exc:
            reason = error_reason(exc.body)
            if exc.meta.status == 400 and ("processor" in reason.lower()):
                _warn(f"Elasticsearch at {self.url} has no ingest processors ({reason}); the ingest pipeline {name} was not "
                      "installed and esrag sets indexed_at itself. A full Elasticsearch distribution has them.")
                return False
            raise self._fail(exc, f"install the ingest pipeline {name}") from None
        except TransportError as exc:
            raise self._fail(exc, f"install the ingest pipeline {name}") from None
        undo.append((lambda: es.ingest.delete_pipeline(id=name)) if previous is None else (lambda: es.ingest.put_pipeline(id=name, body=previous)))
        return True

    def _install(self, meta: IndexMeta, with_alias: bool, rebuild_of: str | None = None) -> str:
        """Templates, pipeline and the next versioned index (+ alias); all or nothing."""
        if not meta.created_at:
            meta.created_at = _now()
        undo: list[Callable[[], Any]] = []
        index = self.names.index(self._next_number())
        try:
            self._put_assets(meta, undo, rebuild_of)
            aliases = {self.alias: {"is_write_index": True}} if with_alias else None
            try:
                self._es.indices.create(index=index, aliases=aliases)
            except ApiError as exc:
                if error_reason(exc.body).startswith("resource_already_exists_exception") and with_alias and self._alias_index():
                    return self._alias_index() or index  # another ingest created it first
                raise self._fail(exc, f"create the index {index} with the alias {self.alias}") from None
            except TransportError as exc:
                raise self._fail(exc, f"create the index {index}") from None
            undo.append(lambda: self._es.indices.delete(index=index))
            got = self._index_meta(index) or {}
            if got.get("embedder") != meta.embedder or got.get("dims") != meta.dims:
                raise StoreError(
                    f"Elasticsearch at {self.url} created {index} without esrag's mapping: another index template with a "
                    f"higher priority than {self.names.priority} matches {self.names.pattern}; remove it or choose another ESRAG_INDEX"
                )
        except BaseException as exc:
            for step in reversed(undo):
                try:
                    step()
                except Exception:  # best effort: the original error is the one to report
                    pass
            if isinstance(exc, StoreError) and not isinstance(exc, NotIndexedError):
                raise StoreError(
                    f"{exc}. Nothing was left behind (templates, pipeline and index rolled back): fix the cause and run "
                    "the command again"
                ) from None
            raise
        self._info = None
        return index

    def _next_number(self) -> int:
        try:
            names = self._es.indices.get(index=self.names.pattern, expand_wildcards="all", allow_no_indices=True).body
        except NotFoundError:
            names = {}
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, "list the versioned indices") from None
        numbers = [n for n in (self.names.number(i) for i in names) if n is not None]
        return max(numbers, default=0) + 1

    # -- rebuild (new embedder) -------------------------------------------------------------
    def _pending_rebuild(self) -> str | None:
        """A versioned index being filled by an unfinished rebuild (not behind the alias)."""
        try:
            mappings = self._es.indices.get_mapping(index=self.names.pattern, allow_no_indices=True).body
        except NotFoundError:
            return None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, "look for a pending rebuild") from None
        live = self._alias_index()
        pending = [i for i, d in mappings.items() if i != live and self.names.number(i) and d.get("mappings", {}).get("_meta", {}).get("rebuild_of")]
        return max(pending, key=lambda i: self.names.number(i) or 0) if pending else None

    def begin_rebuild(self, meta: IndexMeta | None = None) -> str | None:
        """Route this store's reads and writes to a new versioned index, leaving the alias (and
        every searcher) on the current one until :meth:`finish_rebuild`.

        An unfinished rebuild (from an earlier run) is resumed. With ``meta`` the index is
        created now; without it, on the next :meth:`ensure` (the Ingester's first write), so
        ``meta()`` and ``manifest()`` see the new, empty index and everything is re-embedded.

        Returns:
            the rebuild index's name, or None when it is created later.
        """
        self._ready()
        self._rebuild, self._info = True, None
        self._rebuild_index = self._pending_rebuild()
        if meta is not None:
            self.ensure(meta)
        return self._rebuild_index

    def finish_rebuild(self, force: bool = False, delete_old: bool = True) -> dict[str, Any]:
        """Swap the alias to the rebuilt index in one atomic ``_aliases`` call, then delete the
        old index. Refuses (returns ``swapped: False`` with ``missing_corpora``) while the new
        index lacks corpora the live one has — ingest them with ``--rebuild`` too — unless
        ``force``.

        Returns:
            ``{"swapped": bool, "index": new, "previous": old, ...}``.
        """
        if not self._rebuild or not self._rebuild_index:
            self._rebuild, self._rebuild_index = False, None
            return {"swapped": False, "reason": "no rebuild in progress", "index": self._alias_index()}
        new, old = self._rebuild_index, self._alias_index()
        self._call("refresh the rebuilt index", self._es.indices.refresh, index=new)
        missing = sorted(set(self._corpora(old)) - set(self._corpora(new))) if old else []
        if missing and not force:
            return {"swapped": False, "index": new, "previous": old, "missing_corpora": missing}
        actions: list[dict[str, Any]] = []
        if old:
            actions.append({"remove": {"index": old, "alias": self.alias}})
        actions.append({"add": {"index": new, "alias": self.alias, "is_write_index": True}})
        self._call(f"swap the alias {self.alias} to {new}", self._es.indices.update_aliases, actions=actions)
        if old and delete_old:
            self._call(f"delete the previous index {old}", self._es.indices.delete, index=old)
        self._rebuild, self._rebuild_index, self._info = False, None, None
        return {"swapped": True, "index": new, "previous": old, "deleted_previous": bool(old and delete_old)}

    @property
    def rebuilding(self) -> bool:
        """True between :meth:`begin_rebuild` and a successful :meth:`finish_rebuild`."""
        return self._rebuild

    def _corpora(self, index: str) -> list[str]:
        resp = self._call(f"list the corpora of {index}", self._es.search, index=index,
                          body={"size": 0, "aggs": {"c": {"terms": {"field": "corpus", "size": 10_000}}}})
        return [b["key"] for b in resp.body["aggregations"]["c"]["buckets"]]

    def drop(self) -> dict[str, Any]:
        """Delete everything esrag made for this alias: versioned indices, alias, templates,
        pipeline (``esrag drop``, tests' teardown). Missing pieces are skipped. Returns
        ``{"store", "url", "alias", "chunks", "indices", "templates", "pipelines"}``: chunks in
        the deleted indices, and the names deleted.

        Raises:
            StoreError: the cluster is unreachable or refuses a deletion."""
        es, n = self._es, self.names
        try:
            indices = sorted(es.indices.get(index=n.pattern, expand_wildcards="all", allow_no_indices=True).body)
            chunks = es.count(index=n.pattern, allow_no_indices=True).body["count"] if indices else 0
            for index in indices:
                _quiet(es.indices.delete, index=index)
            templates = [t for t, fn in ((n.template, es.indices.delete_index_template),
                                         (n.settings, es.cluster.delete_component_template),
                                         (n.mappings, es.cluster.delete_component_template)) if _quiet(fn, name=t)]
            pipelines = [n.pipeline] if _quiet(es.ingest.delete_pipeline, id=n.pipeline) else []
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"drop the index {self.alias}") from None
        self._info, self._rebuild, self._rebuild_index = None, False, None
        return {"store": self.name, "url": self.url, "alias": self.alias, "chunks": chunks, "indices": indices,
                "templates": templates, "pipelines": pipelines}

    def remove_corpus(self, corpus: str, doc_version: str | None = None) -> int:
        """Delete every chunk of ``corpus`` (of ``doc_version`` only when given): the ids come
        from a scroll (:meth:`manifest`), the deletes go by ``_bulk`` — every cluster has both,
        unlike ``_delete_by_query`` (absent from the 8.x integ-test build). Refreshes, so
        searches no longer see them. Returns the number deleted."""
        ids = [i for entries in self.manifest(corpus, doc_version).values() for i in entries]
        deleted = self.delete(ids)
        self.refresh()
        return deleted

    def close(self) -> None:
        """See :class:`esrag.stores.base.Store`."""
        self._es.close()

    # -- writes ---------------------------------------------------------------------------
    def _bulk(self, actions: Sequence[Action]) -> Iterator[BulkItem]:
        client = self._es.options(max_retries=0, retry_on_status=())

        def send(operations: list[dict[str, Any]]) -> dict[str, Any]:
            try:
                return client.bulk(operations=operations).body
            except ApiError as exc:
                if exc.meta.status in _RETRYABLE:
                    raise RetryableBulkError(exc.meta.status, error_reason(exc.body)) from None
                raise self._fail(exc, "write a bulk batch") from None
            except TransportError as exc:
                raise self._fail(exc, "write a bulk batch") from None

        return bulk_stream(send, actions, self.batch_size, self.max_retries, self.initial_backoff, self.max_backoff)

    def _require(self) -> dict[str, Any]:
        state = self._state()
        if state is None:
            raise NotIndexedError(
                f"nothing is indexed in {self.alias!r} on Elasticsearch at {self.url} yet; run `esrag ingest PATH` first"
            )
        return state

    def write(self, chunks: Sequence[Chunk], vectors: np.ndarray, meta_hashes: Sequence[str]) -> WriteReport:
        """See :class:`esrag.stores.base.Store`. Bulk ``index`` by id in batches of
        ``batch_size``; a document the cluster rejects is reported in ``failed`` (id -> reason)
        and never stops the others.

        Raises:
            ValueError: lengths differ. EmbedderMismatch: vectors of another dimension.
            StoreError: the cluster is unreachable.
        """
        state = self._require()
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(chunks) != len(vectors) or len(chunks) != len(meta_hashes):
            raise ValueError(f"{len(chunks)} chunks, {len(vectors)} vectors, {len(meta_hashes)} meta hashes")
        if len(vectors) and vectors.shape[1] != state["meta"].dims:
            raise EmbedderMismatch(f"vectors have {vectors.shape[1]} dims; the index {state['index']} at {self.url} holds {state['meta'].dims}")
        stamp = None if state["pipeline"] else _now()
        actions = [Action("index", state["index"], c.id, chunk_document(c, v, h, stamp)) for c, v, h in zip(chunks, vectors, meta_hashes)]
        return _report(self._bulk(actions))

    def update_meta(self, chunks: Sequence[Chunk], meta_hashes: Sequence[str]) -> WriteReport:
        """See :class:`esrag.stores.base.Store`. Re-indexes each whole document with its
        metadata replaced and its vector restored from the stored ``vector_bin`` (a partial
        ``_update`` would drop the vector on 8.x; see the module docstring), guarded by
        ``if_seq_no``/``if_primary_term`` so a concurrent write is reported, never lost."""
        state = self._require()
        report = WriteReport()
        stamp = None if state["pipeline"] else _now()
        actions: list[Action] = []
        for start in range(0, len(chunks), 1000):
            part = list(zip(chunks[start : start + 1000], meta_hashes[start : start + 1000]))
            resp = self._call("read chunks to update", self._es.mget, index=state["index"], ids=[c.id for c, _ in part],
                              stored_fields=["vector_bin"], source=True)
            for (chunk, mhash), doc in zip(part, resp.body["docs"]):
                binary = (doc.get("fields") or {}).get("vector_bin")
                if not doc.get("found"):
                    report.failed[chunk.id] = "not in the index"
                elif not binary:
                    report.failed[chunk.id] = "no stored vector copy (vector_bin); re-ingest the file"
                else:
                    vector = decode_vector(binary[0])
                    fresh = chunk_document(chunk, vector, mhash, stamp)
                    merged = {k: v for k, v in doc["_source"].items() if k not in META_FIELDS}
                    merged.update({k: v for k, v in fresh.items() if k in META_FIELDS})
                    merged["vector"], merged["vector_bin"] = fresh["vector"], fresh["vector_bin"]
                    actions.append(Action("index", doc["_index"], chunk.id, merged, doc["_seq_no"], doc["_primary_term"]))
        bulk = _report(self._bulk(actions))
        report.written = bulk.written
        report.failed.update(bulk.failed)
        return report

    def delete(self, ids: Sequence[str]) -> int:
        """See :class:`esrag.stores.base.Store`. Bulk ``delete`` by id (no ``_delete_by_query``)."""
        if not ids:
            return 0
        state = self._state()
        if state is None:
            return 0
        deleted = 0
        failed: dict[str, str] = {}
        for item in self._bulk([Action("delete", state["index"], i) for i in dict.fromkeys(ids)]):
            if item.ok:
                deleted += item.result == "deleted"
            else:
                failed[item.id] = item.error
        if failed:
            raise StoreError(f"Elasticsearch at {self.url} did not delete {len(failed)} chunk(s), e.g. {next(iter(failed.items()))}; run the ingest again")
        return deleted

    def _target(self) -> str | None:
        """The index reads go to (cached with the index state), or None before the first ingest."""
        state = self._state()
        return state["index"] if state else None

    def refresh(self) -> None:
        """See :class:`esrag.stores.base.Store`: ``POST <index>/_refresh``."""
        target = self._target()
        if target is not None:
            self._call("refresh the index", self._es.indices.refresh, index=target)

    # -- reads ----------------------------------------------------------------------------
    def manifest(self, corpus: str, doc_version: str | None = None) -> dict[str, dict[str, StoredEntry]]:
        """See :class:`esrag.stores.base.Store`. Scrolls over every chunk of ``corpus``."""
        out: dict[str, dict[str, StoredEntry]] = {}
        target = self._target()
        if target is None:
            return out
        clauses = [{"term": {"corpus": corpus}}] + ([version_clause(doc_version)] if doc_version is not None else [])
        query = {"query": {"bool": {"filter": clauses}}, "_source": ["source_path", "content_hash", "meta_hash"]}
        try:
            for hit in scan(self._es, query=query, index=target, size=2000, scroll="2m"):
                src = hit["_source"]
                out.setdefault(src["source_path"], {})[hit["_id"]] = StoredEntry(src.get("content_hash", ""), src.get("meta_hash", ""))
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"read the manifest of corpus {corpus!r}") from None
        return out

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        target = self._target() if ids else None
        if target is None:
            return []
        found: dict[str, Chunk] = {}
        missing = list(ids)
        for start in range(0, len(missing), 1000):
            part = list(dict.fromkeys(missing[start : start + 1000]))
            resp = self._call("read chunks", self._es.mget, index=target, ids=part)
            for doc in resp.body["docs"]:
                if doc.get("found"):
                    found[doc["_id"]] = chunk_from_source(doc["_id"], doc["_source"])
        return [found[i] for i in ids if i in found]

    def neighbours(self, corpus: str, source_path: str, positions: Sequence[int], doc_version: str = "") -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        target = self._target() if positions else None
        if target is None:
            return []
        body = {
            "size": len(positions), "sort": [{"position": "asc"}],
            "query": {"bool": {"filter": [
                {"term": {"corpus": corpus}}, {"term": {"source_path": source_path}}, {"terms": {"position": list(positions)}},
                version_clause(doc_version),
            ]}},
        }
        resp = self._call("read neighbouring chunks", self._es.search, index=target, body=body)
        return [chunk_from_source(h["_id"], h["_source"]) for h in resp.body["hits"]["hits"]]

    def source_chunks(self, source_path: str, corpus: str | None = None, doc_version: str | None = None) -> list[Chunk]:
        """See :class:`esrag.stores.base.Store` (one search, at most 10,000 chunks)."""
        target = self._target()
        if target is None:
            return []
        clauses: list[dict[str, Any]] = [{"term": {"source_path": source_path}}]
        clauses += [{"term": {"corpus": corpus}}] if corpus is not None else []
        clauses += [version_clause(doc_version)] if doc_version is not None else []
        body = {"size": 10_000, "sort": [{"corpus": "asc"}, {"position": "asc"}], "query": {"bool": {"filter": clauses}}}
        resp = self._call("read the chunks of a page", self._es.search, index=target, body=body)
        chunks = [chunk_from_source(h["_id"], h["_source"]) for h in resp.body["hits"]["hits"]]
        return sorted(chunks, key=lambda c: (c.corpus, c.doc_version, c.position))

    def bm25(self, query: str, k: int, filters: Filters, fields: dict[str, float]) -> list[tuple[str, float]]:
        """See :class:`esrag.stores.base.Store`: ``multi_match`` over the weighted fields."""
        state = self._require()
        if k <= 0 or not query.strip() or not weighted_fields(fields):
            return []
        fields = self.query_fields(query, fields)
        resp = self._call("run the BM25 search", self._es.search, index=state["index"], body=bm25_body(query, k, filters, fields))
        return [(h["_id"], float(h["_score"])) for h in resp.body["hits"]["hits"]]

    def knn(self, vector: np.ndarray, k: int, filters: Filters, num_candidates: int = 100) -> list[tuple[str, float]]:
        """See :class:`esrag.stores.base.Store`. Scores are cosines (Elasticsearch's cosine
        ``_score`` is ``(1 + cos) / 2``)."""
        state = self._require()
        if k <= 0:
            return []
        resp = self._call("run the kNN search", self._es.search, index=state["index"], body=knn_body(vector, k, filters, num_candidates))
        return _cosines(resp.body["hits"]["hits"])[:k]

    def hybrid(
        self,
        query: str,
        vector: np.ndarray | None,
        k: int = 10,
        filters: Filters | None = None,
        fields: dict[str, float] | None = None,
        rank_window_size: int = 50,
        num_candidates: int = 100,
        rrf_k: int = 60,
        weights: dict[str, float] | None = None,
    ) -> StoreHits:
        """BM25 + kNN fused by RRF in one round trip: the native ``rrf`` retriever where the
        cluster has it (licence and feature, probed once per connection) and all leg weights are
        1, else both legs in one ``_msearch`` fused by :func:`esrag.search.fusion.rrf`.

        Returns:
            a :class:`~esrag.stores.base.StoreHits`, unpacking as ``(fused, how)``: fused hits
            best first and a description of the path taken. Client-side hits carry each leg's
            rank and raw score (cosine for ``dense``); native hits carry only the fused score
            (Elasticsearch does not return per-leg ranks without ``explain``). It also carries
            the request's ``took_ms``/``round_trip_ms`` and the ``_source`` of the hits both legs
            returned (at most both windows), so that the caller reads the top hits' chunks without
            an ``mget`` round trip (``StoreHits.chunks``; measured on the Laravel index, 100
            queries: hybrid + mget p50 15-18 ms, legs with ``_source`` 10 ms).
        """
        filters = filters or Filters()
        fields = fields or {"text": 1.0}
        state = self._require()
        self._last.took_ms = self._last.round_trip_ms = None  # a one-leg search below leaves them unknown
        window = max(int(rank_window_size), int(k))
        lexical = bool(query.strip()) and bool(weighted_fields(fields))
        if lexical and vector is not None:
            fields = self.query_fields(query, fields)
        if vector is None or not lexical:  # one leg only: nothing to fuse natively
            legs = {"bm25": self.bm25(query, window, filters, fields)} if vector is None else {"dense": self.knn(vector, window, filters, num_candidates)}
            return StoreHits(rrf(legs, k=rrf_k, weights=weights, rank_window_size=window), "rrf (client-side, one leg)")
        unweighted = all(float(w) == 1.0 for w in (weights or {}).values())
        if unweighted:
            available, why = self.retriever_support("rrf")
            if available:
                body = rrf_body(query, vector, k, filters, fields, window, num_candidates, rrf_k, source=True)
                try:
                    resp = self._es.search(index=state["index"], body=body)
                    hits = resp.body["hits"]["hits"]
                    return self._hits([Fused(h["_id"], float(h["_score"])) for h in hits],
                                      "rrf (native Elasticsearch retriever)", resp, hits)
                except ApiError as exc:
                    if exc.meta.status >= 500:
                        raise self._fail(exc, "run the hybrid search") from None
                    self._retrievers["rrf"] = (False, f"the rrf request was refused ({error_reason(exc.body)})")
                    why = self._retrievers["rrf"][1]
                except TransportError as exc:
                    raise self._fail(exc, "run the hybrid search") from None
            how = f"rrf (client-side over one _msearch; native rrf unavailable: {why})"
        else:
            how = f"rrf (client-side over one _msearch: per-leg weights {dict(weights or {})} need client-side fusion)"
        resp = self._call("run the hybrid search", self._es.msearch, index=state["index"],
                          searches=msearch_body(query, vector, window, filters, fields, num_candidates, source=True))
        legs: dict[str, list[tuple[str, float]]] = {}
        every: list[dict[str, Any]] = []
        for name, answer in zip(("bm25", "dense"), resp.body["responses"]):
            if "error" in answer:
                raise StoreError(f"Elasticsearch at {self.url} failed the {name} leg: {error_reason(answer)}")
            hits = answer["hits"]["hits"]
            every += hits
            legs[name] = [(h["_id"], float(h["_score"])) for h in hits] if name == "bm25" else _cosines(hits)
        return self._hits(rrf(legs, k=rrf_k, weights=weights, rank_window_size=window), how, resp, every)

    def _times(self, resp: Any) -> tuple[int | None, float | None]:
        """A search response's ``took`` and HTTP round trip (ms), also kept as this thread's
        :attr:`last_took_ms` / :attr:`last_round_trip_ms`."""
        took = resp.body.get("took")
        duration = getattr(getattr(resp, "meta", None), "duration", None)
        round_trip = round(duration * 1000, 3) if isinstance(duration, (int, float)) else None
        self._last.took_ms, self._last.round_trip_ms = took, round_trip
        return took, round_trip

    def _hits(self, fused: list[Fused], how: str, resp: Any, hits: Sequence[dict[str, Any]]) -> StoreHits:
        """The caller's :class:`StoreHits`: ``fused``, ``how``, the response's times and the
        ``_source`` of ``hits`` (decoded on demand by :func:`chunk_from_source`)."""
        took, round_trip = self._times(resp)
        sources = {h["_id"]: h["_source"] for h in hits if "_source" in h}
        return StoreHits(fused, how, took, round_trip, sources, chunk_from_source)

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """See :class:`esrag.stores.base.Store`: the stored ``vector_bin`` copies (one ``mget``)."""
        target = self._target() if ids else None
        if target is None:
            return {}
        resp = self._call("read chunk vectors", self._es.mget, index=target, ids=list(dict.fromkeys(ids)),
                          stored_fields=["vector_bin"], source=False)
        out: dict[str, np.ndarray] = {}
        for doc in resp.body["docs"]:
            binary = (doc.get("fields") or {}).get("vector_bin")
            if doc.get("found") and binary:
                out[doc["_id"]] = decode_vector(binary[0])
        return out

    def hybrid_many(
        self, branches: Sequence[BranchQuery], fields: dict[str, float], rrf_k: int = 60,
        weights: dict[str, float] | None = None,
    ) -> BranchLists:
        """Every leg of every branch in ONE ``_msearch`` (:func:`branches_msearch_body`), each
        branch's legs fused client-side by :func:`esrag.search.fusion.rrf` over its window (the
        ranking the native ``rrf`` retriever gives on the same legs). Returns one fused list per
        branch, best first; hits carry per-leg ranks and raw scores (cosine for ``dense``).

        Raises:
            StoreError: unreachable cluster, or a failed leg (named).
        """
        state = self._require()
        searches = branches_msearch_body(branches, fields, self.query_fields)
        if not searches:
            return BranchLists([] for _ in branches)
        resp = self._call("run the fan-out searches", self._es.msearch, index=state["index"], searches=searches)
        out = BranchLists()
        out.took_ms, out.round_trip_ms = self._times(resp)
        answers = iter(resp.body["responses"])
        for b in branches:
            legs: dict[str, list[tuple[str, float]]] = {}
            names = (["bm25"] if b.query.strip() and weighted_fields(fields) else []) + (["dense"] if b.vector is not None else [])
            for name in names:
                answer = next(answers)
                if "error" in answer:
                    raise StoreError(f"Elasticsearch at {self.url} failed the {name} leg of a fan-out branch: {error_reason(answer)}")
                hits = answer["hits"]["hits"]
                legs[name] = [(h["_id"], float(h["_score"])) for h in hits] if name == "bm25" else _cosines(hits)
            out.append(rrf(legs, k=rrf_k, weights=weights, rank_window_size=b.window))
        return out

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
            raise RerankError(f"elastic:{inference_id} reranker: {classify_reranker_error(inference_id, exc.meta.status, exc.body)}") from None
        except TransportError as exc:
            raise self._fail(exc, "call the inference API") from None
        scores = [0.0] * len(texts)
        for item in resp.body.get("rerank", []):
            scores[int(item["index"])] = float(item["relevance_score"])
        return scores

    def stats(self) -> dict[str, Any]:
        """See :class:`esrag.stores.base.Store`; adds url, alias, concrete index, embedder."""
        base: dict[str, Any] = {"store": self.name, "url": self.url, "alias": self.alias}
        state = self._state()
        if state is None:
            return {**base, "index": None, "chunks": 0, "sources": 0, "corpora": {}}
        body = {
            "size": 0, "track_total_hits": True,
            "aggs": {"corpora": {"terms": {"field": "corpus", "size": 10_000},
                                 "aggs": {"sources": {"cardinality": {"field": "source_path", "precision_threshold": 40_000}}}}},
        }
        resp = self._call("count chunks", self._es.search, index=state["index"], body=body)
        corpora = {
            b["key"]: {"chunks": b["doc_count"], "sources": b["sources"]["value"]}
            for b in sorted(resp.body["aggregations"]["corpora"]["buckets"], key=lambda b: b["key"])
        }
        meta = state["meta"]
        concrete = self._alias_index() if not self._rebuild else state["index"]
        return {
            **base, "index": concrete, "chunks": resp.body["hits"]["total"]["value"],
            "sources": sum(v["sources"] for v in corpora.values()), "corpora": corpora,
            "embedder": meta.embedder, "dims": meta.dims, "pipeline": state["pipeline"], "rebuilding": self._rebuild,
        }


def _previous(get: Callable[..., Any], key: str, name: str) -> dict[str, Any] | None:
    """The current body of a component/index template (to restore on rollback), or None."""
    try:
        body = get(name=name).body
    except NotFoundError:
        return None
    for item in body.get(key, []):
        if item.get("name") == name:
            found = dict(item.get("component_template") or item.get("index_template") or {})
            for read_only in ("created_date", "created_date_millis", "modified_date", "modified_date_millis"):
                found.pop(read_only, None)
            return found
    return None


def _warn(message: str) -> None:
    """A :class:`ClusterWarning` attributed to the first caller outside this module."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    warnings.warn(ClusterWarning(message), stacklevel=level)


def _quiet(fn: Callable[..., Any], **kwargs: Any) -> bool:
    """``fn(**kwargs)``; False when it answered 404 (nothing to delete), else True."""
    try:
        fn(**kwargs)
    except NotFoundError:
        return False
    return True


def _cosines(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return [(h["_id"], 2.0 * float(h["_score"]) - 1.0) for h in hits]


def _report(items: Iterable[BulkItem]) -> WriteReport:
    report = WriteReport()
    for item in items:
        if item.ok:
            report.written += 1
        else:
            report.failed[item.id] = item.error
    return report


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def _short_cause(text: str) -> str:
    for needle in ("Connection refused", "timed out", "Name or service not known", "No route to host",
                   "Temporary failure in name resolution", "Connection reset", "Remote end closed connection"):
        if needle in text:
            return needle.lower()
    return text[:200]
