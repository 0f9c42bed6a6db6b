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

Requests are built by pure functions (:mod:`esrag.stores.elastic.bodies`, unit-tested as exact
JSON) and executed by :class:`ElasticStore`, the only object that talks to the cluster. This
package is the only part of esrag that imports ``elasticsearch`` (the 8.x client, which talks
to 8.x and 9.x servers).

Searches: the store answers legs (:meth:`ElasticStore.search_legs`: every BM25/kNN leg of one
or many searches in ONE ``_msearch``) or, where the cluster has the ``rrf`` retriever and the
legs are unweighted, the natively fused list (:meth:`ElasticStore.native_rrf`). Client-side
fusion is not here: the search package fuses the legs with its one RRF. What the cluster can
do is learned at setup/ingest into ``_meta.capabilities`` (:mod:`esrag.stores.elastic.capabilities`),
so a fresh process searches with one ``GET <alias>/_mapping`` and the search itself.

Why ``vector_bin``: the mapping leaves ``vector`` out of ``_source`` (Kibana Discover stays
readable on 8.x, where ``_source`` would otherwise carry every float). On 8.x a partial
``_update`` rebuilds the document from ``_source`` and silently drops the vector, and 8.x cannot
return an indexed vector any other way (``docvalue_fields`` refuses ``dense_vector``, no
synthetic vectors before 9.x). So on 8.x each document also carries ``vector_bin``: the float32
vector, little-endian, base64, as a *stored* binary field (not in ``_source``, not searchable,
invisible to Discover). On 9.2+ a new index uses synthetic vectors instead
(``index.mapping.exclude_source_vectors``: the vector is not stored in ``_source`` and is rebuilt,
bit-exact, from the index when asked for with ``_source_exclude_vectors=false``), so the vector
is kept once (``[elasticsearch] vector_copy``; the index's ``_meta.vectors`` says which, see
:mod:`esrag.stores.elastic.vector_options`). :meth:`ElasticStore.update_meta` reads the vector
back either way and re-indexes the whole document (guarded by ``if_seq_no``/``if_primary_term``),
identically on 8.15 and 9.2.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import numpy as np
from elasticsearch import ApiError, TransportError
from elasticsearch.helpers import scan

from esrag.errors import ConfigError, EmbedderMismatch, StoreError
from esrag.model import Chunk
from esrag.stores.base import BranchQuery, Filters, LegHits, PageRef, StoredEntry, WriteReport
from esrag.stores.elastic.assets import IndexNames
from esrag.stores.elastic.bodies import (
    bm25_body,
    branches_msearch_body,
    knn_body,
    rrf_body,
    version_clause,
    weighted_fields,
)
from esrag.stores.elastic.bulk import Action, BulkItem, bulk_stream
from esrag.stores.elastic.bulk import report as bulk_report
from esrag.stores.elastic.capabilities import Capabilities
from esrag.stores.elastic.cluster import ClusterOptions
from esrag.stores.elastic.connection import (
    BLOCK_SETTINGS,
    auth_mode,
    blocked_line,
    classify_retriever_probe,
    cloud_url,
    error_reason,
    fingerprint_hex,
    make_client,
    node_urls,
    redact_url,
    shard_failure,
    tls_mode,
    url_secrets,
)
from esrag.stores.elastic.documents import META_FIELDS, chunk_document, chunk_from_source, cosines, decode_vector, now, scored
from esrag.stores.elastic.reranking import Reranking
from esrag.stores.elastic.vector_options import VectorPlan

if TYPE_CHECKING:
    from esrag.config import Settings

#: Seconds between tries of a search that only some shards answered: in the seconds after a node
#: dies, a search whose fetch phase was on that node comes back partial although a replica holds
#: every shard (Elasticsearch retries a failed query phase on another copy, not a failed fetch);
#: tried again after these pauses (3.5 s in all) before the partial answer is an error.
PARTIAL_RETRY_PAUSES = (0.5, 1.0, 2.0)


class ElasticStore(Reranking):
    """The Elasticsearch store (``elastic``). Talks to the cluster only when first used.

    Args:
        url: ``http(s)://host:port`` of the cluster, or several node URLs comma-separated (the
            client fails over between them); credentials in the URL are accepted and never printed.
        index: the alias (``ESRAG_INDEX``); versioned indices are ``<index>-000001``…
        api_key: an encoded API key (``ESRAG_ES_API_KEY``); wins over user/password.
        user, password: basic auth (``ESRAG_ES_USER``/``ESRAG_ES_PASSWORD``).
        ca_certs: CA bundle (PEM) to verify the cluster's TLS certificate (``ESRAG_ES_CA_CERTS``).
        cloud_id: an Elastic Cloud deployment instead of ``url`` (``ESRAG_ES_CLOUD_ID``; ``url``
            must then be empty).
        ssl_assert_fingerprint: SHA-256 fingerprint (hex, colons allowed) of a certificate in
            the chain the cluster presents — the CA fingerprint Elasticsearch prints at first
            start, or the HTTP certificate's (``ESRAG_ES_SSL_ASSERT_FINGERPRINT``); pins it
            instead of a CA file.
        verify_certs: verify the cluster's TLS certificate (``ESRAG_ES_VERIFY_CERTS``, default
            True; False is warned about once).
        request_timeout: seconds per request.
        batch_size: documents per ``_bulk`` request.
        max_retries, initial_backoff, max_backoff: bulk retries on 429/503 (seconds, doubling).
        cluster: shards, replicas, bulk retry time and bulk-load profile (``[elasticsearch]``).
        index_options, rescore_oversample, vector_copy: the vector plan of a new index
            (``[elasticsearch]`` settings; :func:`~esrag.stores.elastic.vector_options.plan_vectors`).
        read_only: opened by a command that only reads (search, serve…): capabilities learned
            while searching stay in memory instead of being recorded in the index's ``_meta``.

    Raises:
        ConfigError: bad URL or Cloud ID (or both given), bad fingerprint, alias name or
            incomplete credentials.
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
        cluster: ClusterOptions | None = None,
        index_options: str = "auto",
        rescore_oversample: float | None = None,
        vector_copy: str = "auto",
        read_only: bool = False,
        cloud_id: str | None = None,
        ssl_assert_fingerprint: str | None = None,
        verify_certs: bool = True,
    ) -> None:
        if cloud_id and url:
            raise ConfigError("set ESRAG_ES_URL or ESRAG_ES_CLOUD_ID, not both (the Cloud ID names the deployment's URL)")
        urls = [cloud_url(cloud_id)] if cloud_id else node_urls(url)
        parts = urlsplit(urls[0])
        if (user is None) != (password is None) and not api_key:
            raise ConfigError("set both ESRAG_ES_USER and ESRAG_ES_PASSWORD (or ESRAG_ES_API_KEY instead)")
        self.names = IndexNames(index)
        self.alias = index
        self.url = redact_url(urls[0] if cloud_id else url)
        self._secrets = [s for s in (api_key, password, *url_secrets(urls)) if s]
        self.auth = "api_key" if api_key else "basic" if (user or parts.username) else "none"
        fingerprint = fingerprint_hex(ssl_assert_fingerprint) if ssl_assert_fingerprint else None
        #: how the connection is secured and who it authenticates as (``esrag doctor``; no secret)
        self.tls, self.tls_safe = tls_mode(parts.scheme, ca_certs, fingerprint, verify_certs)
        self.authentication = auth_mode(api_key, user, parts.username)
        self.cloud = bool(cloud_id)
        self.batch_size, self.max_retries = batch_size, max_retries
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self.cluster = cluster or ClusterOptions()
        self._es = make_client(
            None if cloud_id else urls if len(urls) > 1 else urls[0],
            request_timeout,
            api_key,
            user,
            password,
            ca_certs,
            self.url,
            self._redact,
            cloud_id=cloud_id,
            fingerprint=fingerprint,
            verify_certs=verify_certs,
        )
        self._checked = False
        self._capabilities: Capabilities | None = None
        self._retrievers: dict[str, tuple[bool, str]] = {}
        self._info: dict[str, Any] | None = None
        self._rebuild = False
        self._rebuild_index: str | None = None
        self._stemming: bool | None = None
        self._writable: set[str] = set()  # indices checked for write blocks (_check_writable)
        #: languages that get a subfield text.<code> in a new index (``[language] fields``), and
        #: the detector's candidates for a query's language (``[language] candidates``)
        self.text_languages, self.language_candidates = list(text_languages), list(language_candidates)
        self._analyzers: dict[str, bool] = {}
        self.index_options, self.rescore_oversample, self.vector_copy = index_options, rescore_oversample, vector_copy
        self.read_only = read_only

    @classmethod
    def from_settings(cls, settings: Settings, read_only: bool = False) -> ElasticStore:
        """The store for ``settings`` (``es_url`` or ``es_cloud_id``, ``index``, ``es_api_key``,
        ``es_user``, ``es_password``, ``es_ca_certs``, ``es_ssl_assert_fingerprint``,
        ``es_verify_certs``).

        Raises:
            ConfigError: neither ``ESRAG_ES_URL`` nor ``ESRAG_ES_CLOUD_ID`` is set, or the settings are unusable.
        """
        if not settings.es_url and not settings.es_cloud_id:
            raise ConfigError(
                "the elastic store needs ESRAG_ES_URL (e.g. http://127.0.0.1:9200) or ESRAG_ES_CLOUD_ID; unset "
                "ESRAG_STORE to use the embedded store"
            )

        def secret(value: Any) -> str | None:
            return value.get_secret_value() if value is not None else None

        return cls(
            settings.es_url or "",
            settings.index,
            api_key=secret(settings.es_api_key),
            user=settings.es_user,
            password=secret(settings.es_password),
            ca_certs=settings.es_ca_certs,
            text_languages=settings.language.fields,
            language_candidates=settings.language.candidates,
            cluster=ClusterOptions.from_settings(settings.elasticsearch),
            index_options=settings.elasticsearch.index_options,
            rescore_oversample=settings.elasticsearch.rescore_oversample,
            vector_copy=settings.elasticsearch.vector_copy,
            read_only=read_only,
            cloud_id=settings.es_cloud_id,
            ssl_assert_fingerprint=settings.es_ssl_assert_fingerprint,
            verify_certs=settings.es_verify_certs,
        )

    def __repr__(self) -> str:
        return f"ElasticStore(url={self.url!r}, index={self.alias!r}, auth={self.auth!r})"

    __str__ = __repr__

    def _bulk(self, actions: Sequence[Action]) -> Iterator[BulkItem]:
        """``actions`` through :func:`~esrag.stores.elastic.bulk.bulk_stream` (its retries in place
        of the transport's: ``max_retries=0`` on this client)."""
        for index in dict.fromkeys(a.index for a in actions):
            self._check_writable(index)
        client = self._es.options(max_retries=0, retry_on_status=())
        return bulk_stream(
            client,
            actions,
            self.batch_size,
            self.max_retries,
            self.initial_backoff,
            self.max_backoff,
            self._fail,
            retry_seconds=self.cluster.retry_seconds,
        )

    def _check_writable(self, index: str) -> None:
        """Once per index and store: fail with one line naming the block and the settings call
        that clears it when ``index`` has a write block (``index.blocks.read_only_allow_delete``,
        as the flood-stage disk watermark sets, ``read_only`` or ``write``), before a bulk whose
        every item the cluster would refuse (429 items are retried for seconds).

        Raises:
            StoreError: the index is blocked, or the cluster cannot be asked."""
        if index in self._writable:
            return
        resp = self._call_waiting(
            "read the index blocks",
            self.cluster.retry_seconds,
            self._es.indices.get_settings,
            index=index,
            name="index.blocks.*",
            flat_settings=True,
        )
        write_blocks = [v for k, v in BLOCK_SETTINGS.items() if k in ("5", "8", "12")]
        for concrete, data in resp.body.items():
            for key, value in (data.get("settings") or {}).items():
                if key in write_blocks and str(value).lower() == "true":
                    raise StoreError(blocked_line(concrete, key))
        self._writable.add(index)

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
            raise EmbedderMismatch(
                f"vectors have {vectors.shape[1]} dims; the index {state['index']} at {self.url} holds {state['meta'].dims}"
            )
        stamp = None if state["pipeline"] else now()
        copy = _vector_copy(state) == "stored"
        actions = [
            Action("index", state["index"], c.id, chunk_document(c, v, h, stamp, copy)) for c, v, h in zip(chunks, vectors, meta_hashes)
        ]
        self.begin_bulk_load(len(actions))  # a first load into an empty index: no refresh, no replica until the end
        return bulk_report(self._bulk(actions))

    def update_meta(self, chunks: Sequence[Chunk], meta_hashes: Sequence[str]) -> WriteReport:
        """See :class:`esrag.stores.base.Store`. Re-indexes each whole document with its
        metadata replaced and its vector read back (:meth:`_read_with_vectors`: the synthetic
        vector on 9.2+, else the stored ``vector_bin``; a partial ``_update`` would drop the
        vector on 8.x, see the module docstring), guarded by ``if_seq_no``/``if_primary_term``
        so a concurrent write is reported, never lost."""
        state = self._require()
        report = WriteReport()
        stamp = None if state["pipeline"] else now()
        copy = _vector_copy(state) == "stored"
        actions: list[Action] = []
        for start in range(0, len(chunks), 1000):
            part = list(zip(chunks[start : start + 1000], meta_hashes[start : start + 1000]))
            docs = self._read_with_vectors(state, [c.id for c, _ in part], source=True)
            for (chunk, mhash), (doc, vector) in zip(part, docs):
                if not doc.get("found"):
                    report.failed[chunk.id] = "not in the index"
                elif vector is None:
                    report.failed[chunk.id] = "no stored vector copy (vector_bin); re-ingest the file"
                else:
                    fresh = chunk_document(chunk, vector, mhash, stamp, copy)
                    merged = {k: v for k, v in doc["_source"].items() if k not in META_FIELDS and k not in ("vector", "vector_bin")}
                    merged.update({k: v for k, v in fresh.items() if k in META_FIELDS or k in ("vector", "vector_bin")})
                    actions.append(Action("index", doc["_index"], chunk.id, merged, doc["_seq_no"], doc["_primary_term"]))
        bulk = bulk_report(self._bulk(actions))
        report.written = bulk.written
        report.failed.update(bulk.failed)
        return report

    def _read_with_vectors(self, state: dict[str, Any], ids: Sequence[str], source: bool) -> list[tuple[dict[str, Any], np.ndarray | None]]:
        """One realtime ``_mget`` of ``ids`` in ``state``'s index: each doc (``found``,
        ``_index``, ``_seq_no``, ``_primary_term``, ``_source`` when ``source``) with its float32
        vector [dims], or None when the index has none for it. Synthetic vectors (9.2+) come in
        ``_source`` with ``_source_exclude_vectors=false`` (a query parameter the 8.x client has
        no argument for: sent with ``perform_request``); otherwise the stored ``vector_bin``.

        Raises:
            StoreError: unreachable cluster or a failed request.
        """
        index = state["index"]
        if _vector_copy(state) == "synthetic":
            params = {"_source_exclude_vectors": "false"} if source else {"_source_exclude_vectors": "false", "_source_includes": "vector"}
            docs = self._mget_waiting(
                "read chunks with their vectors",
                self.cluster.retry_seconds,
                self._es.perform_request,
                "POST",
                f"/{quote(index, safe='')}/_mget",
                params=params,
                headers=_JSON,
                body={"ids": list(ids)},
            )
            out = []
            for doc in docs:
                vec = (doc.get("_source") or {}).get("vector") if doc.get("found") else None
                out.append((doc, np.asarray(vec, dtype=np.float32) if vec is not None else None))
            return out
        docs = self._mget_waiting(
            "read chunks with their vectors",
            self.cluster.retry_seconds,
            self._es.mget,
            index=index,
            ids=list(ids),
            stored_fields=["vector_bin"],
            source=source,
        )
        out = []
        for doc in docs:
            binary = (doc.get("fields") or {}).get("vector_bin")
            out.append((doc, decode_vector(binary[0]) if doc.get("found") and binary else None))
        return out

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
            raise StoreError(
                f"Elasticsearch at {self.url} did not delete {len(failed)} chunk(s), e.g. {next(iter(failed.items()))}; run the ingest again"
            )
        return deleted

    def _target(self) -> str | None:
        """The index reads go to (cached with the index state), or None before the first ingest."""
        state = self._state()
        return state["index"] if state else None

    def refresh(self) -> None:
        """See :class:`esrag.stores.base.Store`: ``POST <index>/_refresh`` (after ending a
        bulk-load profile, :meth:`end_bulk_load`)."""
        self.end_bulk_load()
        target = self._target()
        if target is not None:
            self._call_waiting("refresh the index", self.cluster.retry_seconds, self._es.indices.refresh, index=target)

    def manifest(self, corpus: str, doc_version: str | None = None) -> dict[str, dict[str, StoredEntry]]:
        """See :class:`esrag.stores.base.Store`. Scrolls over every chunk of ``corpus``."""
        target = self._target()
        if target is None:
            return {}
        clauses = [{"term": {"corpus": corpus}}] + ([version_clause(doc_version)] if doc_version is not None else [])
        query = {"query": {"bool": {"filter": clauses}}, "_source": ["source_path", "content_hash", "meta_hash"]}

        def read() -> dict[str, dict[str, StoredEntry]]:  # the whole scroll again after a lost node
            out: dict[str, dict[str, StoredEntry]] = {}
            for hit in scan(self._es, query=query, index=target, size=2000, scroll="2m"):
                src = hit["_source"]
                out.setdefault(src["source_path"], {})[hit["_id"]] = StoredEntry(src.get("content_hash", ""), src.get("meta_hash", ""))
            return out

        return self._call_waiting(f"read the manifest of corpus {corpus!r}", self.cluster.retry_seconds, read)

    def pages(self, corpus: str | None = None) -> list[PageRef]:
        """See :class:`esrag.stores.base.PageListing`: a ``composite`` aggregation over
        (corpus, doc_version, source_path), 1,000 pages per request, with each page's URL (the
        greatest, anchor dropped) and last ``indexed_at``."""
        target = self._target()
        if target is None:
            return []
        keys = [
            {"corpus": {"terms": {"field": "corpus"}}},
            {"doc_version": {"terms": {"field": "doc_version", "missing_bucket": True}}},
            {"source_path": {"terms": {"field": "source_path"}}},
        ]
        aggs = {"url": {"terms": {"field": "url", "size": 1, "order": {"_key": "desc"}}}, "indexed_at": {"max": {"field": "indexed_at"}}}
        query = {"bool": {"filter": [{"term": {"corpus": corpus}}]}} if corpus is not None else {"match_all": {}}
        out: list[PageRef] = []
        after: dict[str, Any] | None = None
        while True:
            composite: dict[str, Any] = {"size": 1000, "sources": keys, **({"after": after} if after else {})}
            body = {"size": 0, "query": query, "aggs": {"pages": {"composite": composite, "aggs": aggs}}}
            resp = self._call("list the pages", self._es.search, index=target, body=body)
            agg = resp.body["aggregations"]["pages"]
            for b in agg["buckets"]:
                key, urls = b["key"], b["url"]["buckets"]
                out.append(
                    PageRef(
                        key["corpus"],
                        key["doc_version"] or "",
                        key["source_path"],
                        urls[0]["key"].split("#", 1)[0] if urls else "",
                        b["indexed_at"].get("value_as_string") or "",
                    )
                )
            after = agg.get("after_key")
            if not agg["buckets"] or not after:
                return sorted(out, key=lambda r: (r.corpus, r.doc_version, r.source_path))

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        target = self._target() if ids else None
        if target is None:
            return []
        found: dict[str, Chunk] = {}
        missing = list(ids)
        for start in range(0, len(missing), 1000):
            part = list(dict.fromkeys(missing[start : start + 1000]))
            for doc in self._mget_waiting("read chunks", 0, self._es.mget, index=target, ids=part):
                if doc.get("found"):
                    found[doc["_id"]] = chunk_from_source(doc["_id"], doc["_source"])
        return [found[i] for i in ids if i in found]

    def neighbours(self, corpus: str, source_path: str, positions: Sequence[int], doc_version: str = "") -> list[Chunk]:
        """See :class:`esrag.stores.base.Store`."""
        target = self._target() if positions else None
        if target is None:
            return []
        body = {
            "size": len(positions),
            "sort": [{"position": "asc"}],
            "query": {
                "bool": {
                    "filter": [
                        {"term": {"corpus": corpus}},
                        {"term": {"source_path": source_path}},
                        {"terms": {"position": list(positions)}},
                        version_clause(doc_version),
                    ]
                }
            },
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
        return scored(resp.body["hits"]["hits"])

    def knn(self, vector: np.ndarray, k: int, filters: Filters, num_candidates: int = 100) -> list[tuple[str, float]]:
        """See :class:`esrag.stores.base.Store`. Scores are cosines (Elasticsearch's cosine
        ``_score`` is ``(1 + cos) / 2``)."""
        state = self._require()
        if k <= 0:
            return []
        resp = self._call("run the kNN search", self._es.search, index=state["index"], body=knn_body(vector, k, filters, num_candidates))
        return cosines(resp.body["hits"]["hits"])[:k]

    def search_legs(self, queries: Sequence[BranchQuery], fields: dict[str, float], source: bool = False) -> LegHits:
        """See :class:`esrag.stores.base.MultiLeg`: every leg of every query in ONE ``_msearch``
        (:func:`branches_msearch_body`): per query a BM25 leg (when it has text and fields;
        ``text.<lang>`` added for its language, :meth:`query_fields`) and a kNN leg (when it has
        a vector; scores are cosines). With ``source`` the hits come with their ``_source``
        (``LegHits.chunks`` reads them without an ``mget``).

        Raises:
            StoreError: unreachable cluster, or a failed leg (named).
        """
        state = self._require()
        searches = branches_msearch_body(queries, fields, self.query_fields, source=source)
        if not searches:
            return LegHits([{} for _ in queries], "one _msearch")
        what = "run the hybrid search" if len(queries) == 1 else "run the fan-out searches"
        for pause in (*PARTIAL_RETRY_PAUSES, None):
            resp = self._call(what, self._es.msearch, index=state["index"], searches=searches)
            incomplete = any("error" not in a and shard_failure(a) is not None for a in resp.body["responses"])
            if not incomplete or pause is None:
                break
            time.sleep(pause)  # a node just lost: its shards' copies elsewhere answer once it is noticed
        answers = iter(resp.body["responses"])
        lists: list[dict[str, list[tuple[str, float]]]] = []
        sources: dict[str, Any] = {}
        for q in queries:
            legs: dict[str, list[tuple[str, float]]] = {}
            names = (["bm25"] if q.query.strip() and weighted_fields(fields) else []) + (["dense"] if q.vector is not None else [])
            for name in names:
                answer = next(answers)
                if "error" in answer:
                    where = "" if len(queries) == 1 else " of a fan-out branch"
                    raise StoreError(f"Elasticsearch at {self.url} failed the {name} leg{where}: {error_reason(answer)}")
                if (partial := shard_failure(answer)) is not None:  # a leg from only some shards is not an answer
                    raise StoreError(
                        self._redact(f"Elasticsearch at {self.url} answered the {name} leg from only part of the index: {partial}")
                    )
                hits = answer["hits"]["hits"]
                legs[name] = scored(hits) if name == "bm25" else cosines(hits)
                sources.update((h["_id"], h["_source"]) for h in hits if "_source" in h)
            lists.append(legs)
        took, round_trip = _times(resp)
        return LegHits(lists, "one _msearch", took, round_trip, sources, chunk_from_source)

    def native_rrf_support(self) -> tuple[bool, str]:
        """See :class:`esrag.stores.base.NativeFusion`: whether the native ``rrf`` retriever works
        here, with the reason. What this connection probed wins (:meth:`retriever_support`), else
        what the index learned (``_meta.capabilities``, no request); an index made before esrag
        kept it is probed once per connection."""
        known = self._retrievers.get("rrf")
        if known is not None:
            return known
        learned = self._require()["learned"]
        if learned is not None:
            return learned.rrf
        return self.retriever_support("rrf")

    def native_rrf(self, query: BranchQuery, fields: dict[str, float], k: int, rrf_k: int) -> LegHits | None:
        """See :class:`esrag.stores.base.NativeFusion`: BM25 + kNN fused by the ``rrf`` retriever in
        one ``_search`` (:func:`rrf_body`, the fused top ``k`` with their ``_source``). None when
        the cluster refused it (4xx): the refusal is kept for this connection and, when it says
        the retriever is unknown or unlicensed, recorded in ``_meta.capabilities``; the caller
        then fuses the legs itself.

        Raises:
            StoreError: unreachable cluster or a server error (5xx).
        """
        state = self._require()
        if query.vector is None:
            raise ValueError("native rrf needs a query vector")
        fields = self.query_fields(query.query, fields)
        body = rrf_body(query.query, query.vector, k, query.filters, fields, query.window, query.num_candidates, rrf_k, source=True)
        try:
            resp = self._es.search(index=state["index"], body=body)
        except ApiError as exc:
            if exc.meta.status >= 500:
                raise self._fail(exc, "run the hybrid search") from None
            why = f"the rrf request was refused ({error_reason(exc.body)})"
            self._retrievers["rrf"] = (False, why)
            if not classify_retriever_probe("rrf", exc.meta.status, exc.body)[1].startswith("the rrf retriever was refused"):
                self.relearn((False, why))  # unknown retriever or licence: learned, not probed again
            return None
        except TransportError as exc:
            raise self._fail(exc, "run the hybrid search") from None
        hits = resp.body["hits"]["hits"]
        took, round_trip = _times(resp)
        sources = {h["_id"]: h["_source"] for h in hits if "_source" in h}
        return LegHits([], "native Elasticsearch retriever", took, round_trip, sources, chunk_from_source, fused=scored(hits))

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """See :class:`esrag.stores.base.Store`: id -> float32 vector [dims] (one ``mget``:
        synthetic vectors on 9.2+, else the stored ``vector_bin`` copies)."""
        state = self._state() if ids else None
        if state is None:
            return {}
        docs = self._read_with_vectors(state, list(dict.fromkeys(ids)), source=False)
        return {doc["_id"]: vec for doc, vec in docs if vec is not None}

    def query_fields(self, query: str, fields: dict[str, float]) -> dict[str, float]:
        """The BM25 fields for ``query``: ``fields`` plus ``text.<lang>`` when the index has a
        subfield for the query's detected language (``_meta.text_languages``)."""
        state = self._state()
        subfields = (state or {}).get("raw", {}).get("text_languages") or {}
        if not subfields or not query.strip():
            return fields
        from esrag.language import detect_query, with_language_field

        return with_language_field(fields, detect_query(query, self.language_candidates), subfields)

    def remove_corpus(self, corpus: str, doc_version: str | None = None) -> int:
        """Delete every chunk of ``corpus`` (of ``doc_version`` only when given): the ids come
        from a scroll (:meth:`manifest`), the deletes go by ``_bulk`` — every cluster has both,
        unlike ``_delete_by_query`` (absent from the 8.x integ-test build). Refreshes, so
        searches no longer see them. Returns the number deleted."""
        ids = [i for entries in self.manifest(corpus, doc_version).values() for i in entries]
        deleted = self.delete(ids)
        self.refresh()
        return deleted


_JSON = {"accept": "application/json", "content-type": "application/json"}


def _vector_copy(state: dict[str, Any]) -> str:
    """``"synthetic"`` or ``"stored"``: how the index in ``state`` keeps vectors (its
    ``_meta.vectors``; an index made before esrag recorded it has the ``vector_bin`` copy)."""
    plan = VectorPlan.from_meta((state.get("raw") or {}).get("vectors"))
    return plan.vector_copy if plan is not None else "stored"


def _times(resp: Any) -> tuple[int | None, float | None]:
    """A search response's ``took`` and HTTP round trip (ms: request sent to response read)."""
    took = resp.body.get("took")
    duration = getattr(getattr(resp, "meta", None), "duration", None)
    round_trip = round(duration * 1000, 3) if isinstance(duration, (int, float)) else None
    return took, round_trip
