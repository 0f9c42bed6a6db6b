"""The Elasticsearch store against real nodes (9.2.8 and 8.15.5; see tests/conftest.py), plus
exact-JSON tests of the request bodies it builds.

Where a test needs an answer the test nodes cannot give (a licence refusal, a 429, a 401, TLS),
a small local HTTP server speaks Elasticsearch's wire format: it answers those requests itself
with Elasticsearch's real error JSON and forwards everything else to a real node. No mock
objects: the real client talks real HTTP.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from datetime import UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from esrag.chunking.header import HeaderChunker
from esrag.config import SearchSettings, Settings
from esrag.embedding import SentenceTransformerEmbedder
from esrag.errors import ConfigError, EmbedderMismatch, NotIndexedError, StoreError
from esrag.ingest import Ingester
from esrag.model import Enrichment
from esrag.search.fusion import rrf
from esrag.search.legs import hybrid
from esrag.search.searcher import Searcher
from esrag.stores.base import Filters, IndexMeta
from esrag.stores.elastic import (
    Action,
    ClusterWarning,
    ElasticStore,
    IndexNames,
    asset_text,
    bm25_body,
    bulk_stream,
    chunk_document,
    chunk_from_source,
    classify_retriever_probe,
    decode_vector,
    encode_vector,
    fast_serializers,
    filter_clauses,
    index_template_body,
    knn_body,
    mappings_component_body,
    msearch_body,
    redact_url,
    rrf_body,
    settings_component_body,
)
from esrag.stores.elastic.cluster import ClusterOptions
from fault_helpers import HashEmbedder as FaultHashEmbedder
from paths import LARAVEL
from store_suite import DIMS, FIELDS, StoreContract, make_chunk, meta, unit

FILES = ["scheduling.md", "queues.md", "cache.md", "routing.md", "blade.md"]
EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}

# Elasticsearch's answer to an rrf retriever under a Basic licence (LicenseUtils.newComplianceException:
# 403 security_exception with the expired feature in the metadata).
LICENCE_ERROR = {
    "error": {
        "root_cause": [
            {
                "type": "security_exception",
                "reason": "current license is non-compliant for [Reciprocal Rank Fusion (RRF)]",
                "license.expired.feature": "Reciprocal Rank Fusion (RRF)",
            }
        ],
        "type": "security_exception",
        "reason": "current license is non-compliant for [Reciprocal Rank Fusion (RRF)]",
        "license.expired.feature": "Reciprocal Rank Fusion (RRF)",
    },
    "status": 403,
}
# What the 9.2.8 and 8.15.5 test nodes answer (captured from them).
UNKNOWN_RRF = {
    "error": {
        "root_cause": [{"type": "parsing_exception", "reason": "unknown retriever [rrf]", "line": 1, "col": 30}],
        "type": "parsing_exception",
        "reason": "unknown retriever [rrf]",
        "line": 1,
        "col": 30,
        "caused_by": {"type": "named_object_not_found_exception", "reason": "[1:30] unknown field [rrf]"},
    },
    "status": 400,
}
REJECTED = {
    "error": {
        "root_cause": [{"type": "es_rejected_execution_exception", "reason": "rejected execution of coordinating operation"}],
        "type": "es_rejected_execution_exception",
        "reason": "rejected execution of coordinating operation",
    },
    "status": 429,
}
UNAUTHORIZED = {
    "error": {
        "root_cause": [
            {
                "type": "security_exception",
                "reason": "unable to authenticate user [esrag] for REST request [/_cluster/health]",
                "header": {"WWW-Authenticate": ['Basic realm="security" charset="UTF-8"', "ApiKey"]},
            }
        ],
        "type": "security_exception",
        "reason": "unable to authenticate user [esrag] for REST request [/_cluster/health]",
        "header": {"WWW-Authenticate": ['Basic realm="security" charset="UTF-8"', "ApiKey"]},
    },
    "status": 401,
}


# -- a stand-in Elasticsearch (real HTTP) ------------------------------------------------------
Rule = Callable[[str, str, bytes], "tuple[int, dict] | None"]


class StandIn:
    """A local HTTP(S) server: ``rule(method, path, body)`` may answer a request with
    ``(status, json)``; otherwise it is forwarded to ``upstream`` (a real node). Every request is
    recorded in ``requests`` as ``(method, path, body)``."""

    def __init__(self, upstream: str | None = None, rule: Rule | None = None, tls: tuple[Path, Path] | None = None) -> None:
        self.upstream = upstream.removeprefix("http://") if upstream else None
        self.rule = rule or (lambda m, p, b: None)
        self.requests: list[tuple[str, str, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.command, self.path, body))
                answer = outer.rule(self.command, self.path, body)
                if answer is None and outer.upstream:
                    conn = http.client.HTTPConnection(outer.upstream, timeout=60)
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    status, data = resp.status, resp.read()
                    ctype = resp.getheader("Content-Type", "application/json")
                    conn.close()
                else:
                    status, payload = answer if answer is not None else (502, {"error": "no upstream"})
                    data, ctype = json.dumps(payload).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- fixtures ------------------------------------------------------------------------------------
def fresh_alias() -> str:
    return f"esrag-t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_store(es_url):
    """Stores on fresh aliases of the node under test; everything they made is dropped afterwards."""
    made: list[ElasticStore] = []

    def make(url: str | None = None, index: str | None = None, **kw) -> ElasticStore:
        s = ElasticStore(url or es_url, index or fresh_alias(), **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        cleaner = ElasticStore(es_url, s.alias)
        cleaner.drop()
        cleaner.close()
        s.close()


def ensure_quietly(store: ElasticStore, m: IndexMeta) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        store.ensure(m)


@pytest.fixture
def store(make_store):
    s = make_store()
    ensure_quietly(s, meta())
    return s


@pytest.mark.integration
class TestElasticStore(StoreContract):
    """The whole shared store contract, against each real node."""


# -- request bodies: exact JSON ------------------------------------------------------------
F = Filters(corpora=["laravel"], path_prefix="docs/", languages=["en"], exclude_ids=["x1"])
FILTER_JSON = [
    {"terms": {"corpus": ["laravel"]}},
    {"prefix": {"source_path": "docs/"}},
    {"terms": {"language": ["en"]}},
    {"bool": {"must_not": [{"ids": {"values": ["x1"]}}]}},
]
MULTI_MATCH = {
    "multi_match": {
        "query": 'schedule "every" -minute',
        "fields": ["text^1", "section_path^2.5"],
        "type": "best_fields",
        "tie_breaker": 0.3,
    }
}


def test_fast_serializers_write_what_the_stdlib_client_writes():
    from datetime import datetime
    from decimal import Decimal

    from elasticsearch.serializer import DEFAULT_SERIALIZERS

    body = {
        "vector": np.asarray([0.25, -1.5], dtype=np.float32),
        "n": np.int64(3),
        "price": Decimal("1.5"),
        "at": datetime(2026, 11, 29, 21, 0, tzinfo=UTC),
        "text": "Grüße \u2192 schedule",
    }
    fast = fast_serializers()
    for mimetype in ("application/json", "application/vnd.elasticsearch+json"):
        mine, theirs = fast[mimetype], DEFAULT_SERIALIZERS[mimetype]
        assert json.loads(mine.dumps(body)) == json.loads(theirs.dumps(body))
        assert mine.loads(theirs.dumps(body)) == theirs.loads(theirs.dumps(body))
    lines = [{"index": "a"}, body]
    for mimetype in ("application/x-ndjson", "application/vnd.elasticsearch+x-ndjson"):
        mine, theirs = fast[mimetype], DEFAULT_SERIALIZERS[mimetype]
        assert [json.loads(x) for x in mine.dumps(lines).splitlines()] == [json.loads(x) for x in theirs.dumps(lines).splitlines()]
    with pytest.raises(Exception, match="Unable to serialize"):
        fast["application/json"].dumps({"x": object()})
    store = ElasticStore("http://127.0.0.1:1", "esrag-unit")
    assert {m: type(s) for m, s in store._es.transport.serializers.serializers.items() if m in fast} == {
        m: type(s) for m, s in fast.items()
    }


def test_filter_clauses_exact():
    assert filter_clauses(F) == FILTER_JSON
    assert filter_clauses(Filters()) == []


def test_native_rrf_body_matches_documented_syntax():
    # The retriever syntax of 8.16+ and 9.x: retriever.rrf {retrievers: [standard, knn], rank_window_size,
    # rank_constant}; knn retriever {field, query_vector, k, num_candidates, filter}
    # (https://www.elastic.co/guide/en/elasticsearch/reference/8.x/retriever.html#rrf-retriever,
    #  https://www.elastic.co/docs/reference/elasticsearch/rest-apis/retrievers/rrf-retriever).
    body = rrf_body(
        'schedule "every" -minute',
        [0.5, -0.25],
        k=10,
        filters=F,
        fields={"text": 1.0, "section_path": 2.5, "title": 0},
        rank_window_size=50,
        num_candidates=100,
        rrf_k=60,
    )
    assert body == {
        "size": 10,
        "_source": False,
        "track_total_hits": False,
        "retriever": {
            "rrf": {
                "retrievers": [
                    {"standard": {"query": {"bool": {"must": [MULTI_MATCH], "filter": FILTER_JSON}}}},
                    {"knn": {"field": "vector", "query_vector": [0.5, -0.25], "k": 50, "num_candidates": 100, "filter": FILTER_JSON}},
                ],
                "rank_window_size": 50,
                "rank_constant": 60,
            }
        },
    }


def test_rrf_body_window_at_least_size_and_candidates_at_least_k():
    body = rrf_body("q", [1.0], k=30, filters=Filters(), fields={"text": 1.0}, rank_window_size=5, num_candidates=10, rrf_k=20)
    rrf_part = body["retriever"]["rrf"]
    assert rrf_part["rank_window_size"] == 30 and rrf_part["rank_constant"] == 20
    assert rrf_part["retrievers"][1]["knn"]["k"] == 30 and rrf_part["retrievers"][1]["knn"]["num_candidates"] == 30
    assert "filter" not in rrf_part["retrievers"][1]["knn"]
    huge = rrf_body("q", [1.0], k=10, filters=Filters(), fields={"text": 1.0}, rank_window_size=20_000, num_candidates=50_000, rrf_k=60)
    assert huge["retriever"]["rrf"]["retrievers"][1]["knn"]["num_candidates"] == 10_000
    assert huge["retriever"]["rrf"]["retrievers"][1]["knn"]["k"] == 10_000


def test_bm25_and_knn_bodies_exact():
    assert bm25_body('schedule "every" -minute', 7, F, {"text": 1.0, "section_path": 2.5}) == {
        "size": 7,
        "_source": False,
        "track_total_hits": False,
        "query": {"bool": {"must": [MULTI_MATCH], "filter": FILTER_JSON}},
    }
    assert knn_body(np.array([1, 0], dtype=np.float32), 5, Filters(corpora=["c"]), 3) == {
        "size": 5,
        "_source": False,
        "track_total_hits": False,
        "knn": {"field": "vector", "query_vector": [1.0, 0.0], "k": 5, "num_candidates": 5, "filter": [{"terms": {"corpus": ["c"]}}]},
    }
    assert msearch_body("q", [1.0], 20, Filters(), {"text": 1.0}, 100) == [
        {},
        bm25_body("q", 20, Filters(), {"text": 1.0}),
        {},
        knn_body([1.0], 20, Filters(), 100),
    ]


def test_templates_from_shipped_assets():
    names = IndexNames("docs-prod")
    m = mappings_component_body(
        IndexMeta("st:e5", 768, ["text"], {"text": 1.0}, "0.1.0", "2026-01-01T00:00:00+00:00"), rebuild_of="docs-prod-000001"
    )
    mappings = m["template"]["mappings"]
    assert mappings["_source"] == {"excludes": ["vector", "vector_bin"]}
    assert mappings["properties"]["vector"] == {
        "type": "dense_vector",
        "dims": 768,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "int8_hnsw", "m": 16, "ef_construction": 100},
    }
    assert mappings["_meta"] == {
        "managed_by": "esrag",
        "embedder": "st:e5",
        "dims": 768,
        "embed_fields": ["text"],
        "bm25_fields": {"text": 1.0},
        "esrag_version": "0.1.0",
        "created_at": "2026-01-01T00:00:00+00:00",
        "analyzer": "english",
        "rebuild_of": "docs-prod-000001",
    }
    props = mappings["properties"]
    # the analyzer the text fields name is defined in the same component (validated on its own)
    assert m["template"]["settings"]["analysis"]["analyzer"]["esrag_text"]["filter"] == ["lowercase", "esrag_stop", "porter_stem"]
    assert all(props[f]["analyzer"] == "esrag_text" for f in ("text", "section_path", "title", "summary", "context"))
    no_stem = mappings_component_body(IndexMeta("st:e5", 768, ["text"]), stemming=False)["template"]["settings"]["analysis"]
    assert no_stem["analyzer"]["esrag_text"]["type"] == "standard" and "what" in no_stem["analyzer"]["esrag_text"]["stopwords"]
    assert props["section_path"]["type"] == "text" and props["section_path"]["fields"]["keyword"]["type"] == "keyword"
    for slot in ("title", "summary", "keywords", "questions", "entities", "key", "related_keys", "context"):
        assert slot in props
    for meta_field in (
        "corpus",
        "source_path",
        "doc_title",
        "position",
        "start_line",
        "end_line",
        "tokens",
        "content_hash",
        "parent_id",
        "language",
        "authority",
        "effective_date",
        "superseded_by",
        "enrich_model",
        "prompt_sha256",
        "indexed_at",
    ):
        assert meta_field in props
    assert settings_component_body("docs-prod-chunks")["template"]["settings"]["index"]["default_pipeline"] == "docs-prod-chunks"
    assert "default_pipeline" not in settings_component_body(None)["template"]["settings"]["index"]
    t = index_template_body(names)
    assert (t["index_patterns"], t["composed_of"], t["priority"]) == (["docs-prod-0*"], ["docs-prod-settings", "docs-prod-mappings"], 509)
    # the shipped files are the bodies for the default alias "esrag", usable from Kibana Dev Tools as they are
    shipped = json.loads(asset_text("mappings", "esrag-template.json"))
    assert index_template_body(IndexNames("esrag"))["index_patterns"] == shipped["index_patterns"]
    assert index_template_body(IndexNames("esrag"))["priority"] == shipped["priority"]
    assert json.loads(asset_text("ingest_pipelines", "esrag-chunks.json"))["processors"][0]["set"]["field"] == "indexed_at"


def test_index_names_and_validation():
    n = IndexNames("esrag")
    assert (n.index(1), n.pattern, n.number("esrag-000042"), n.number("esrag-t-000001")) == ("esrag-000001", "esrag-0*", 42, None)
    for bad in ("", "Upper", "a b", "-x", "a*b", "a/b"):
        with pytest.raises(ConfigError, match="ESRAG_INDEX"):
            IndexNames(bad)


def test_document_round_trip_and_vector_copy():
    c = make_chunk(0, "text here", metadata={"language": "en", "team": "core", "effective_date": "2024-01-01"})
    c.enrichment = Enrichment(title="T", keywords=["k1"], model="m")
    v = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    doc = chunk_document(c, v, "mh", "2026-01-01T00:00:00+00:00")
    assert doc["language"] == "en" and doc["metadata"] == {"team": "core"} and doc["meta_hash"] == "mh"
    assert "summary" not in doc and "parent_id" not in doc  # empty slots stay out of Discover
    assert np.array_equal(decode_vector(doc["vector_bin"]), v) and decode_vector(encode_vector(v)).dtype == np.float32
    back = chunk_from_source(c.id, {k: v for k, v in doc.items() if k not in ("vector", "vector_bin")})
    assert back.metadata == {"team": "core", "language": "en", "effective_date": "2024-01-01"}
    assert back.enrichment.title == "T" and back.enrichment.keywords == ["k1"] and back.text == "text here"


def test_classify_retriever_probe_on_real_error_bodies():
    assert classify_retriever_probe("rrf", 200, {}) == (True, "rrf retriever available")
    ok, why = classify_retriever_probe("rrf", 400, UNKNOWN_RRF)
    assert not ok and "unknown retriever [rrf]" in why and "8.16+" in why
    ok, why = classify_retriever_probe("rrf", 403, LICENCE_ERROR)
    assert not ok and "licence" in why and "non-compliant for [Reciprocal Rank Fusion (RRF)]" in why


def test_redact_url():
    assert redact_url("https://elastic:s3cret@es.example:9243/") == "https://es.example:9243/"
    assert redact_url("http://127.0.0.1:9200") == "http://127.0.0.1:9200"


def test_bulk_stream_retries_then_reports():
    """The adapter over ``streaming_bulk``, against a stand-in that refuses the first request
    whole (429) and then accepts: every action is reported once, in order, after one backoff."""
    calls: list[int] = []

    def rule(method, path, body):
        lines = [json.loads(x) for x in body.splitlines() if x.strip()]
        calls.append(len(lines))
        if len(calls) == 1:
            return 429, REJECTED
        return 200, {
            "took": 1,
            "errors": False,
            "items": [{"index": {"_id": line["index"]["_id"], "status": 201, "result": "created"}} for line in lines if "index" in line],
        }

    actions = [Action("index", "i", str(n), {"a": n}) for n in range(5)]
    with StandIn(rule=rule) as standin:
        client = Elasticsearch(standin.url).options(max_retries=0, retry_on_status=())
        started = time.perf_counter()
        items = list(bulk_stream(client, actions, batch_size=2, max_retries=3, initial_backoff=0.1))
        slept = time.perf_counter() - started
        client.close()
    assert [i.id for i in items] == ["0", "1", "2", "3", "4"] and all(i.ok for i in items)
    assert slept >= 0.1 and calls == [4, 4, 4, 2]


def test_bad_settings_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="ESRAG_ES_URL"):
        ElasticStore("localhost:9200")
    with pytest.raises(ConfigError, match="ESRAG_ES_USER and ESRAG_ES_PASSWORD"):
        ElasticStore("http://127.0.0.1:9200", user="elastic")
    with pytest.raises(ConfigError, match="ESRAG_ES_CA_CERTS"):
        ElasticStore("https://127.0.0.1:9200", ca_certs=tmp_path / "missing.pem")
    with pytest.raises(ConfigError, match="ESRAG_ES_URL"):
        ElasticStore.from_settings(Settings(es_url=None))


# -- live: setup, templates, pipelines, errors ---------------------------------------------
@pytest.mark.integration
def test_setup_creates_templates_and_alias_and_warns_without_processors(make_store):
    s = make_store()
    with pytest.warns(ClusterWarning, match=r"no ingest processors .*No processor type exists with name \[set\].*sets indexed_at itself"):
        report = s.install(meta())
    n = s.names
    assert report["status"] == "created" and report["index"] == n.index(1) and report["alias"] == s.alias
    assert report["pipeline"].startswith("not installed")
    state = s.assets()
    assert state["index_template"] and all(state["component_templates"].values())
    assert state["index"] == n.index(1) and state["pipeline"] is False and state["pending_rebuild"] is None
    es = s._es
    template = es.indices.get_index_template(name=n.template).body["index_templates"][0]["index_template"]
    assert template["index_patterns"] == [n.pattern] and template["composed_of"] == [n.settings, n.mappings]
    mapping = es.indices.get_mapping(index=n.index(1)).body[n.index(1)]["mappings"]
    assert mapping["properties"]["vector"]["dims"] == DIMS
    assert mapping["properties"]["vector"]["index_options"]["type"] == "int8_hnsw"
    assert mapping["properties"]["vector"]["index_options"]["m"] == 16
    assert mapping["_source"]["excludes"] == ["vector", "vector_bin"]
    assert mapping["_meta"]["embedder"] == "test:unit-vectors"
    # a second setup is idempotent and keeps the index
    with pytest.warns(ClusterWarning):
        again = s.install(meta())
    assert again["status"].startswith("exists") and again["index"] == n.index(1)


@pytest.mark.integration
def test_without_pipeline_esrag_stamps_indexed_at_and_source_stays_readable(store):
    TestElasticStore().write(store, [make_chunk(0, "hello world")], [unit(0)])
    raw = store._es.get(index=store.alias, id="docs-a.md-0").body["_source"]
    assert raw["indexed_at"].endswith("+00:00")
    assert "vector" not in raw and "vector_bin" not in raw  # Kibana Discover shows no vector noise
    assert raw["section_path"] == "Intro" and raw["corpus"] == "docs"


@pytest.mark.integration
def test_search_before_ingest_says_what_to_do(make_store):
    s = make_store()
    assert s.meta() is None and s.stats()["chunks"] == 0 and s.manifest("docs") == {} and s.get(["x"]) == []
    with pytest.raises(NotIndexedError, match="esrag ingest"):
        s.bm25("x", 3, Filters(), FIELDS)


def test_unreachable_url_is_one_clear_error():
    port = closed_port()
    s = ElasticStore(f"http://127.0.0.1:{port}", "esrag", api_key="SECRET-KEY-123")
    with pytest.raises(StoreError) as info:
        s.meta()
    msg = str(info.value)
    assert f"cannot reach Elasticsearch at http://127.0.0.1:{port}" in msg and "connection refused" in msg
    assert "ESRAG_ES_URL" in msg and "SECRET" not in msg


@pytest.mark.integration
def test_rejected_mapping_leaves_nothing_behind(make_store):
    s = make_store()
    too_big = IndexMeta(embedder="st:huge", dims=5000, embed_fields=["text"])
    with pytest.raises(StoreError, match=rf"Elasticsearch at {s.url} could not install the mappings component template.*dims|dimensions"):
        ensure_quietly(s, too_big)
    state = s.assets()
    assert not state["index_template"] and not any(state["component_templates"].values()) and state["index"] is None


@pytest.mark.integration
def test_failure_after_templates_rolls_them_back(make_store):
    s = make_store()
    s._es.indices.create(index=s.alias)  # an index already holds the alias's name: the alias cannot be created
    with pytest.raises(StoreError, match=rf"could not create the index {s.names.index(1)} with the alias {s.alias}"):
        ensure_quietly(s, meta())
    state = s.assets()
    assert not state["index_template"] and not any(state["component_templates"].values())
    assert not s._es.indices.exists(index=s.names.index(1))
    s._es.indices.delete(index=s.alias)


@pytest.mark.integration
def test_failed_rebuild_of_assets_restores_the_previous_templates(make_store):
    s = make_store()
    ensure_quietly(s, meta())
    s._es.indices.delete(index=s.names.index(1))  # the index (and the alias with it) are gone, the templates stay
    s._es.indices.create(index=s.alias)  # and something blocks the alias
    again = make_store(index=s.alias)
    with pytest.raises(StoreError, match="Nothing was left behind"):
        ensure_quietly(again, IndexMeta("st:other-model", 16, ["text"]))
    component = s._es.cluster.get_component_template(name=s.names.mappings).body["component_templates"][0]["component_template"]
    mappings = component["template"]["mappings"]
    assert mappings["_meta"]["embedder"] == "test:unit-vectors" and mappings["properties"]["vector"]["dims"] == DIMS
    s._es.indices.delete(index=s.alias)


@pytest.mark.integration
def test_secrets_never_printed(es_url, tmp_path):
    s = ElasticStore("http://elastic:PASSWORD-XYZ@127.0.0.1:9", "esrag", api_key="APIKEY-XYZ")
    for text in (repr(s), str(s)):
        assert "XYZ" not in text and "api_key" in text
    with pytest.raises(StoreError) as info:
        s.health()
    assert "XYZ" not in str(info.value)
    settings = Settings(es_url="http://127.0.0.1:9", es_user="esrag", es_password="PASSWORD-XYZ")
    assert "XYZ" not in repr(ElasticStore.from_settings(settings))
    with StandIn(es_url, rule=lambda m, p, b: (401, UNAUTHORIZED)) as standin:
        s2 = ElasticStore(standin.url, "esrag", user="esrag", password="PASSWORD-XYZ")
        with pytest.raises(StoreError, match="refused the credentials.*ESRAG_ES_API_KEY or ESRAG_ES_USER/ESRAG_ES_PASSWORD") as info:
            s2.meta()
        assert "XYZ" not in str(info.value)
        # the credentials did travel, as basic auth
        assert standin.requests


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1 made with the openssl CLI."""
    d = tmp_path_factory.mktemp("tls")
    run = lambda *a: subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=esrag test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    run(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    )
    return d


@pytest.mark.integration
def test_tls_with_ca_file(es_url, tls_files):
    with StandIn(es_url, tls=(tls_files / "server.pem", tls_files / "server.key")) as standin:
        trusted = ElasticStore(standin.url, "esrag", ca_certs=tls_files / "ca.pem", api_key="APIKEY-XYZ")
        assert trusted.health()["status"] in ("green", "yellow")
        untrusted = ElasticStore(standin.url, "esrag")
        with pytest.raises(StoreError, match="TLS verification failed.*ESRAG_ES_CA_CERTS"):
            untrusted.health()


# -- live: bulk ------------------------------------------------------------------------------
@pytest.mark.integration
def test_bulk_reports_bad_documents_by_id_and_later_batches_land(make_store):
    s = make_store(batch_size=2)
    ensure_quietly(s, meta())
    chunks = [make_chunk(i, f"good chunk {i}") for i in range(7)]
    chunks[1].metadata = {"effective_date": "not a date"}  # a field of the wrong type, in the first batch
    chunks[4].start_line = "line four"  # and another in the third batch
    report = s.write(chunks, np.stack([unit(i % DIMS) for i in range(7)]), ["m"] * 7)
    s.refresh()
    assert set(report.failed) == {"docs-a.md-1", "docs-a.md-4"} and report.written == 5
    assert "effective_date" in report.failed["docs-a.md-1"] and "start_line" in report.failed["docs-a.md-4"]
    assert [c.id for c in s.get([c.id for c in chunks])] == [f"docs-a.md-{i}" for i in (0, 2, 3, 5, 6)]


@pytest.mark.integration
def test_bulk_retries_429_with_backoff(make_store, es_url):
    seen = {"bulk": 0}

    def rule(method, path, body):
        if "/_bulk" not in path:
            return None
        seen["bulk"] += 1
        if seen["bulk"] == 1:  # the whole request refused
            return 429, REJECTED
        if seen["bulk"] == 2:  # every item refused (the cluster answers 200 with per-item 429s)
            lines = [json.loads(x) for x in body.splitlines() if x.strip()]
            ids = [line["index"]["_id"] for line in lines if "index" in line]
            item = {"status": 429, "error": REJECTED["error"]["root_cause"][0]}
            return 200, {"took": 1, "errors": True, "items": [{"index": {"_id": i, **item}} for i in ids]}
        return None

    alias = fresh_alias()
    ensure_quietly(make_store(index=alias), meta())
    with StandIn(es_url, rule=rule) as standin:
        s = make_store(url=standin.url, index=alias, initial_backoff=0.01, max_backoff=0.05)
        report = s.write([make_chunk(i, f"t{i}") for i in range(3)], np.stack([unit(i) for i in range(3)]), ["m"] * 3)
        assert report.written == 3 and not report.failed and seen["bulk"] == 3
        s.refresh()
        assert s.stats()["chunks"] == 3
    # a cluster that stays busy: the items are reported, not lost silently
    with StandIn(es_url, rule=lambda m, p, b: (429, REJECTED) if "/_bulk" in p else None) as busy:
        s = make_store(url=busy.url, index=alias, initial_backoff=0.001, max_backoff=0.002, max_retries=2)
        report = s.write([make_chunk(9, "t9")], np.stack([unit(1)]), ["m"])
        assert report.written == 0 and "gave up after 2 retries" in report.failed["docs-a.md-9"]


# -- live: fusion --------------------------------------------------------------------------------
def _hybrid_corpus(store) -> None:
    chunks = [
        make_chunk(0, "The scheduler runs a task every minute with cron."),
        make_chunk(1, "Queues defer slow tasks to workers."),
        make_chunk(2, "Blade templates render views.", corpus="other", path="b.md"),
        make_chunk(3, "Schedule frequency options: everyMinute, hourly, daily."),
        make_chunk(4, "Cache drivers store values."),
    ]
    TestElasticStore().write(store, chunks, [unit(0), unit(1), unit(0, 2), unit(3), unit(4)])


@pytest.mark.integration
def test_rrf_detection_falls_back_on_unknown_retriever_live(store):
    available, why = store.retriever_support("rrf")
    assert not available and "unknown retriever [rrf]" in why
    assert store.retriever_support("linear")[0] is False
    _hybrid_corpus(store)
    fused, how = hybrid(
        store,
        "schedule task every minute",
        unit(0),
        k=3,
        filters=Filters(),
        fields=FIELDS,
        rank_window_size=10,
        num_candidates=20,
        rrf_k=60,
        weights={"bm25": 1.0, "dense": 1.0},
    )
    assert how.startswith("rrf (client-side over one _msearch; native rrf unavailable") and "unknown retriever [rrf]" in how
    assert fused[0].id == "docs-a.md-0"


@pytest.mark.integration
def test_client_side_hybrid_equals_rrf_of_the_two_legs(store):
    _hybrid_corpus(store)
    q, v, window = "schedule task every minute", unit(0), 10
    answer = hybrid(store, q, v, k=3, filters=Filters(), fields=FIELDS, rank_window_size=window, num_candidates=20, rrf_k=60)
    fused, _ = answer
    legs = {"bm25": store.bm25(q, window, Filters(), FIELDS), "dense": store.knn(v, window, Filters(), 20)}
    expected = rrf(legs, k=60, rank_window_size=window)
    assert [(f.id, round(f.score, 9)) for f in fused] == [(f.id, round(f.score, 9)) for f in expected]
    top = fused[0]
    assert set(top.legs) == {"bm25", "dense"} and top.legs["bm25"].rank == 1 and top.legs["dense"].rank == 1
    assert top.legs["dense"].score == pytest.approx(1.0, abs=0.02)  # cosine, not Elasticsearch's (1 + cos) / 2
    # the cluster's took sits inside the HTTP exchange that carried it; a one-leg search leaves both unknown
    assert isinstance(answer.took_ms, int) and answer.round_trip_ms >= answer.took_ms > -1
    one = hybrid(store, "", v, k=3, filters=Filters(), fields=FIELDS, rank_window_size=window, num_candidates=20, rrf_k=60)
    assert one.took_ms is None and one.round_trip_ms is None


@pytest.mark.integration
def test_hybrid_filters_inside_both_legs_and_weights_go_client_side(store):
    _hybrid_corpus(store)
    fused, how = hybrid(
        store,
        "templates views",
        unit(0, 2),
        k=5,
        filters=Filters(corpora=["other"]),
        fields=FIELDS,
        rank_window_size=10,
        num_candidates=20,
        rrf_k=60,
        weights={"bm25": 2.0, "dense": 1.0},
    )
    assert [f.id for f in fused] == ["other-b.md-2"]
    assert "per-leg weights" in how


@pytest.mark.integration
def test_rrf_detection_on_a_licence_refusal_then_client_path(store, es_url):
    _hybrid_corpus(store)

    def rule(method, path, body):
        return (403, LICENCE_ERROR) if "/_search" in path and b'"rrf"' in body else None

    with StandIn(es_url, rule=rule) as standin:
        s = ElasticStore(standin.url, store.alias)
        available, why = s.retriever_support("rrf")
        assert not available and "licence" in why and "Reciprocal Rank Fusion (RRF)" in why
        fused, how = hybrid(
            s,
            "schedule task every minute",
            unit(0),
            k=3,
            filters=Filters(),
            fields=FIELDS,
            rank_window_size=10,
            num_candidates=20,
            rrf_k=60,
        )
        assert "client-side" in how and "licence" in how and fused[0].id == "docs-a.md-0" and fused[0].legs
        probes = [r for r in standin.requests if b'"rrf"' in r[2]]
        assert len(probes) == 1  # detected once per connection
        hybrid(s, "queues", unit(1), k=3, filters=Filters(), fields=FIELDS, rank_window_size=10, num_candidates=20, rrf_k=60)
        assert len([r for r in standin.requests if b'"rrf"' in r[2]]) == 1
        s.close()


@pytest.mark.integration
def test_native_rrf_sends_one_request_when_available(store, es_url):
    _hybrid_corpus(store)
    canned = {
        "took": 2,
        "timed_out": False,
        "hits": {
            "total": {"value": 2, "relation": "eq"},
            "max_score": 0.03,
            "hits": [{"_index": "i", "_id": "docs-a.md-0", "_score": 0.0328}, {"_index": "i", "_id": "docs-a.md-3", "_score": 0.0161}],
        },
    }

    def rule(method, path, body):  # a cluster with an Enterprise licence: the rrf retriever parses
        return (200, canned) if "/_search" in path and b'"rrf"' in body else None

    with StandIn(es_url, rule=rule) as standin:
        s = ElasticStore(standin.url, store.alias)
        s.retriever_support("rrf")  # the cluster gained the retriever since the index learned it had none
        fused, how = hybrid(
            s,
            "schedule task",
            unit(0),
            k=2,
            filters=Filters(corpora=["docs"]),
            fields=FIELDS,
            rank_window_size=10,
            num_candidates=20,
            rrf_k=30,
        )
        assert how == "rrf (native Elasticsearch retriever)"
        assert [(f.id, f.score) for f in fused] == [("docs-a.md-0", 0.0328), ("docs-a.md-3", 0.0161)]
        searches = [json.loads(b) for m, p, b in standin.requests if "/_search" in p or "/_msearch" in p]
        assert len(searches) == 2 and searches[0]["size"] == 0  # the probe, then ONE hybrid request
        assert searches[1] == rrf_body("schedule task", unit(0), 2, Filters(corpora=["docs"]), FIELDS, 10, 20, 30, source=True)
        assert searches[1]["_source"] is True  # the fused top k come back with their source
        s.close()


@pytest.mark.integration
def test_hybrid_hits_are_read_from_the_legs_without_an_mget(store, es_url):
    """The client-side path asks both legs for ``_source``; the chunks of the fused top k are
    read from the result the search returned (``StoreHits.chunks``, what the Searcher does), with
    no ``_mget`` round trip, and are exactly what an ``mget`` returns. Nothing is kept on the
    store: a ``get`` afterwards goes to the cluster, and two results never see each other's."""
    _hybrid_corpus(store)
    with StandIn(es_url) as standin:
        s = ElasticStore(standin.url, store.alias)
        answer = hybrid(
            s,
            "schedule task every minute",
            unit(0),
            k=3,
            filters=Filters(),
            fields=FIELDS,
            rank_window_size=10,
            num_candidates=20,
            rrf_k=60,
        )
        fused, how = answer
        assert "client-side" in how
        ids = [f.id for f in fused]
        got = answer.chunks(ids)
        assert not [p for m, p, b in standin.requests if "_mget" in p]
        assert list(got) == ids and [got[i] for i in ids] == store.get(ids)  # the same chunks as an mget reads
        again = s.get(ids)  # the store kept nothing: a read goes to the cluster
        assert again == [got[i] for i in ids] and len([p for m, p, b in standin.requests if "_mget" in p]) == 1
        other = hybrid(
            s, "templates views", unit(2), k=3, filters=Filters(), fields=FIELDS, rank_window_size=10, num_candidates=20, rrf_k=60
        )
        assert answer.chunks(ids) == got  # a later search leaves an earlier result as it was
        assert other.fused[0].id != fused[0].id and other.chunks([other.fused[0].id])
        assert isinstance(answer.took_ms, int) and answer.round_trip_ms >= answer.took_ms
        s.close()


# -- live: rebuild with a new embedder -------------------------------------------------------
class HashEmbedder(FaultHashEmbedder):
    """fault_helpers' deterministic bag-of-hashed-words embedder, named ``test:<name>-<dims>``."""

    def __init__(self, dims: int, name: str = "hash") -> None:
        super().__init__(dims, f"test:{name}-{dims}")


def _tree(tmp_path, names):
    root = tmp_path / "docs"
    root.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(LARAVEL / name, root / name)
    return root


@pytest.mark.integration
def test_rebuild_fills_a_new_index_and_swaps_the_alias_when_complete(make_store, tmp_path):
    tree = _tree(tmp_path, ["scheduling.md", "cache.md"])
    (tmp_path / "q").mkdir()
    other = _tree(tmp_path / "q", ["queues.md"])
    old_emb, new_emb = HashEmbedder(16, "old"), HashEmbedder(32, "new")
    s = make_store()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        Ingester(s, old_emb.spec, lambda: old_emb, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])
        Ingester(s, old_emb.spec, lambda: old_emb, HeaderChunker(), EMBED, BM25).run(other, "queues", ["*.md"], [])
        before = s.stats()
        with pytest.raises(EmbedderMismatch, match="esrag ingest --rebuild"):
            s.ensure(IndexMeta(new_emb.spec, 32, EMBED))

        s.begin_rebuild()
        summary = Ingester(s, new_emb.spec, lambda: new_emb, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])
    assert summary.chunks_new == before["corpora"]["laravel"]["chunks"] and summary.embeddings_computed > 0
    reader = ElasticStore(s.url, s.alias)  # a searcher elsewhere still sees the live index
    assert reader.meta().embedder == old_emb.spec and reader.stats()["chunks"] == before["chunks"]
    assert s.meta().embedder == new_emb.spec
    first = s.finish_rebuild()
    assert first == {"swapped": False, "index": s.names.index(2), "previous": s.names.index(1), "missing_corpora": ["queues"]}

    again = make_store(index=s.alias)  # a second run resumes the pending rebuild
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        assert again.begin_rebuild() == s.names.index(2)
        Ingester(again, new_emb.spec, lambda: new_emb, HeaderChunker(), EMBED, BM25).run(other, "queues", ["*.md"], [])
    done = again.finish_rebuild()
    assert done == {"swapped": True, "index": s.names.index(2), "previous": s.names.index(1), "deleted_previous": True}
    fresh = ElasticStore(s.url, s.alias)
    assert fresh.meta().embedder == new_emb.spec and fresh.meta().dims == 32

    def counts(corpora: dict) -> dict:  # chunks and sources per corpus and version; indexed_at is the rebuild's own
        return {
            name: {**c, "versions": {v: {k: n for k, n in d.items() if k != "indexed_at"} for v, d in c["versions"].items()}}
            for name, c in corpora.items()
        }

    assert counts(fresh.stats()["corpora"]) == counts(before["corpora"])
    assert not fresh._es.indices.exists(index=s.names.index(1))
    hits = fresh.knn(new_emb.embed_query("schedule every minute cron"), 3, Filters(), 50)
    assert hits and fresh.get([hits[0][0]])[0].corpus in ("laravel", "queues")
    for x in (reader, fresh):
        x.close()


# -- live: end to end on the Laravel docs ----------------------------------------------------
class MemoEmbedder:
    """The real default embedder, memoised across the two nodes; counts texts it is asked for."""

    def __init__(self, inner, memo: dict[str, np.ndarray]) -> None:
        self.inner, self.spec, self.dims, self.memo, self.texts = inner, inner.spec, inner.dims, memo, 0

    def embed_documents(self, texts, progress=None):
        self.texts += len(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            self.memo.update(zip(missing, self.inner.embed_documents(missing)))
        return np.stack([self.memo[t] for t in texts])

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.fixture(scope="session")
def minilm():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def vector_memo():
    return {}


@pytest.mark.integration
def test_laravel_end_to_end(make_store, minilm, vector_memo, tmp_path):
    tree = _tree(tmp_path, FILES)
    s = make_store()
    emb = MemoEmbedder(minilm, vector_memo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        first = Ingester(s, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])
    assert first.chunks_new > 50 and not first.failures and s.stats()["sources"] == 5
    versions = {
        h["_id"]: h["_version"]
        for h in s._es.search(index=s.alias, body={"size": 1000, "version": True, "_source": False}).body["hits"]["hits"]
    }
    assert set(versions.values()) == {1}

    emb2 = MemoEmbedder(minilm, vector_memo)
    second = Ingester(s, emb2.spec, lambda: emb2, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])
    assert (second.chunks_new, second.chunks_changed, second.chunks_deleted, second.chunks_moved) == (0, 0, 0, 0)
    assert second.embeddings_computed == 0 and emb2.texts == 0
    after = {
        h["_id"]: h["_version"]
        for h in s._es.search(index=s.alias, body={"size": 1000, "version": True, "_source": False}).body["hits"]["hits"]
    }
    assert after == versions  # nothing was written

    searcher = Searcher(s, lambda: emb, SearchSettings(), BM25)
    result = searcher.search("how do I schedule a task to run every minute", k=5)
    top = result.hits[0]
    assert top.chunk.source_path == "scheduling.md" and top.chunk.section_path
    assert result.fusion.startswith("rrf (client-side") and set(top.legs) <= {"bm25", "dense"} and top.legs


@pytest.mark.integration
def test_moved_chunks_keep_their_vectors_through_a_reingest(make_store, tmp_path):
    tree = _tree(tmp_path, ["scheduling.md"])
    emb = HashEmbedder(16)
    s = make_store()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        Ingester(s, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])
    path = tree / "scheduling.md"
    path.write_text("\n\n\n" + path.read_text())  # every chunk moves down three lines, no text changes
    calls = emb.calls
    summary = Ingester(s, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25).run(tree, "laravel", ["*.md"], [])
    assert summary.chunks_moved == summary.chunks_unchanged > 0 and emb.calls == calls and not summary.failures
    total = s.stats()["chunks"]
    # every chunk is still found by kNN (vectors survived the metadata update on 8.x and 9.x)
    found = {i for i, _ in s.knn(emb.embed_query("schedule"), total, Filters(), 1000)}
    assert len(found) == total
    [c] = s.get([next(iter(found))])
    assert c.start_line > 3


@pytest.mark.integration
def test_cli_ingest_rebuild_and_search(es_url, tmp_path):
    from click.testing import CliRunner

    from esrag.cli import main

    tree = _tree(tmp_path, ["scheduling.md", "cache.md"])
    alias = fresh_alias()
    env = {"ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias, "ESRAG_DB": None, "ESRAG_EMBEDDING_CACHE": str(tmp_path / "embedding_cache.db")}
    runner = CliRunner()
    try:
        with pytest.warns(ClusterWarning, match="no ingest processors"):  # the one warning, not a crash
            first = runner.invoke(main, ["ingest", str(tree), "--corpus", "laravel", "--json"], env=env)
        assert first.exit_code == 0, first.output
        chunks = json.loads(first.stdout)["chunks_new"]
        assert chunks > 20

        mismatch = runner.invoke(main, ["ingest", str(tree), "--corpus", "laravel", "--embedder", "st:other-model"], env=env)
        assert mismatch.exit_code == 1 and "st:other-model" in mismatch.stderr and "esrag ingest --rebuild" in mismatch.stderr

        with pytest.warns(ClusterWarning):  # the rebuild's new index gets no pipeline either
            rebuilt = runner.invoke(main, ["ingest", str(tree), "--corpus", "laravel", "--rebuild", "--json"], env=env)
        assert rebuilt.exit_code == 0, rebuilt.output
        report = json.loads(rebuilt.stdout)
        # the rebuild rewrites every chunk; the same embedder's passage vectors come from the cache
        assert report["chunks_new"] == chunks and report["embeddings_computed"] == 0 and report["embeddings_cached"] > 0
        assert report["rebuild"] == {"swapped": True, "index": f"{alias}-000002", "previous": f"{alias}-000001", "deleted_previous": True}

        found = runner.invoke(main, ["search", "how do I schedule a task to run every minute", "-k", "3", "--json"], env=env)
        assert found.exit_code == 0, found.output
        hits = json.loads(found.stdout)
        assert hits[0]["source_path"] == "scheduling.md" and hits[0]["section_path"].startswith("Task Scheduling")
        assert set(hits[0]["legs"]) == {"bm25", "dense"}

        embedded = runner.invoke(main, ["ingest", str(tree), "--rebuild"], env={"ESRAG_ES_URL": None, "ESRAG_DB": str(tmp_path / "x.db")})
        assert embedded.exit_code == 1 and "--rebuild needs the Elasticsearch store" in embedded.stderr
    finally:
        cleaner = ElasticStore(es_url, alias)
        cleaner.drop()
        cleaner.close()


@pytest.mark.integration
def test_cli_setup_installs_everything_for_the_configured_embedder(es_url):
    from click.testing import CliRunner

    from esrag.cli import main

    alias = fresh_alias()
    env = {"ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias}
    try:
        with pytest.warns(ClusterWarning, match="no ingest processors"):
            done = CliRunner().invoke(main, ["setup", "--json"], env=env)
        assert done.exit_code == 0, done.output
        report = json.loads(done.stdout)
        assert (report["status"], report["index"], report["embedder"], report["dims"]) == (
            "created",
            f"{alias}-000001",
            "st:all-MiniLM-L6-v2",
            384,
        )
        state = ElasticStore(es_url, alias).assets()
        assert state["index_template"] and all(state["component_templates"].values()) and state["index"] == f"{alias}-000001"
    finally:
        cleaner = ElasticStore(es_url, alias)
        cleaner.drop()
        cleaner.close()


@pytest.mark.integration
def test_mget_of_a_shard_not_yet_active_waits_then_names_the_error(make_store):
    """_mget answers 200 with a per-document no_shard_available_action_exception while a shard
    is unassigned (as after a node restart): reads that wait for the cluster wait for it; the
    document is never reported as missing."""
    s = make_store(cluster=ClusterOptions(retry_seconds=3))
    red = f"{fresh_alias()}-red"
    nowhere = {"index.routing.allocation.require._name": "no-such-node"}
    s._es.indices.create(index=red, settings={"number_of_replicas": 0, **nowhere}, wait_for_active_shards="0")
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreError) as err:
            s._mget_waiting("read chunks", 0, s._es.mget, index=red, ids=["a"])
        assert time.monotonic() - t0 < 2
        assert str(err.value).startswith(f"Elasticsearch at {s.url} could not read chunks: chunk a: no_shard_available_action_exception")
        assert "retried" not in str(err.value)

        t0 = time.monotonic()
        with pytest.raises(
            StoreError, match=r"chunk a: no_shard_available_action_exception: .*\(retried for 3 s, \[elasticsearch\] retry_seconds\)$"
        ):
            s._mget_waiting("read chunks with their vectors", 3, s._es.mget, index=red, ids=["a"])
        assert 3 <= time.monotonic() - t0 < 15

        # the shard becomes assignable 1.5 s into the wait: the read answers, the document not found
        def allow() -> None:
            time.sleep(1.5)
            s._es.indices.put_settings(index=red, settings={"index.routing.allocation.require._name": None})

        helper = threading.Thread(target=allow)
        helper.start()
        t0 = time.monotonic()
        docs = s._mget_waiting("read chunks with their vectors", 60, s._es.mget, index=red, ids=["a"])
        helper.join()
        assert time.monotonic() - t0 >= 1.5
        assert [(d["_id"], d["found"]) for d in docs] == [("a", False)]

        # an error that waiting does not cure is raised at once
        t0 = time.monotonic()
        with pytest.raises(StoreError, match="chunk a: index_not_found_exception"):
            s._mget_waiting("read chunks with their vectors", 60, s._es.mget, index=f"{red}-gone", ids=["a"])
        assert time.monotonic() - t0 < 5
    finally:
        s._es.indices.delete(index=red, ignore_unavailable=True)
