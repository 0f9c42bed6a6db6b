"""Vector index options by version (``[elasticsearch] index_options`` / ``rescore_oversample`` /
``vector_copy``): the exact mapping JSON per version, each option accepted or refused clearly by
the real 8.15.5 and 9.2.8 nodes, and metadata-only updates staying lossless with synthetic
vectors (9.2) and with the ``vector_bin`` copy (8.15)."""

from __future__ import annotations

import uuid
import warnings

import numpy as np
import pytest

from esrag.config import Settings
from esrag.errors import ConfigError
from esrag.stores.base import Filters, IndexMeta
from esrag.stores.elastic import ClusterWarning, ElasticStore
from esrag.stores.elastic.bodies import mappings_component_body
from esrag.stores.elastic.capabilities import Learned
from esrag.stores.elastic.vector_options import INDEX_OPTIONS, VectorPlan, check_dims, plan_vectors
from store_suite import FIELDS, make_chunk

DIMS = 64  # bbq_hnsw needs >= 64


def meta(dims: int = DIMS) -> IndexMeta:
    return IndexMeta(embedder="test:unit-vectors", dims=dims, embed_fields=["text"], bm25_fields=FIELDS)


def unit(*hot: int, dims: int = DIMS) -> np.ndarray:
    v = np.zeros(dims, dtype=np.float32)
    for h in hot:
        v[h] = 1.0
    return v / np.linalg.norm(v)


# -- the plan: exact JSON per version ------------------------------------------------------------
def test_auto_plan_per_version_exact():
    assert plan_vectors("8.15.5").to_meta() == {
        "index_options": {"type": "int8_hnsw", "m": 16, "ef_construction": 100},
        "vector_copy": "stored",
        "requested": "auto",
        "es_version": "8.15.5",
    }
    want_92 = {"type": "bbq_hnsw", "m": 16, "ef_construction": 100, "rescore_vector": {"oversample": 3.0}}
    assert plan_vectors("9.2.8", 384).to_meta() == {
        "index_options": want_92,
        "vector_copy": "synthetic",
        "requested": "auto",
        "es_version": "9.2.8",
    }
    assert plan_vectors("9.1.0", 384).index_options == want_92
    # 8.16-9.0 have BBQ but no rescore_vector in the mapping: int8_hnsw; 9.0 has no synthetic vectors
    for version in ("8.16.0", "8.19.9", "9.0.3"):
        assert plan_vectors(version, 384).index_options == {"type": "int8_hnsw", "m": 16, "ef_construction": 100}
    assert plan_vectors("9.0.3").vector_copy == "stored"
    # under 64 dims auto never takes bbq_hnsw
    assert plan_vectors("9.2.8", 8).index_options == {
        "type": "int8_hnsw",
        "m": 16,
        "ef_construction": 100,
        "rescore_vector": {"oversample": 0.0},
    }
    assert plan_vectors("9.2.8", vector_copy="stored").vector_copy == "stored"


def test_explicit_options_per_version_exact():
    assert plan_vectors("9.2.8", 384, "bbq_hnsw").index_options == {
        "type": "bbq_hnsw",
        "m": 16,
        "ef_construction": 100,
        "rescore_vector": {"oversample": 3.0},
    }
    assert plan_vectors("9.2.8", 384, "bbq_hnsw", 0).index_options["rescore_vector"] == {"oversample": 0.0}
    assert plan_vectors("9.1.0", 384, "int8_hnsw", 2.5).index_options["rescore_vector"] == {"oversample": 2.5}
    assert plan_vectors("9.2.8", 384, "hnsw").index_options == {"type": "hnsw", "m": 16, "ef_construction": 100}
    assert plan_vectors("8.16.0", 384, "bbq_hnsw").index_options == {"type": "bbq_hnsw", "m": 16, "ef_construction": 100}
    assert plan_vectors("8.15.5", 384, "int4_hnsw").kind == "int4_hnsw"


@pytest.mark.parametrize(
    "version, kwargs, message",
    [
        (
            "8.15.5",
            {"index_options": "bbq_hnsw"},
            r"^\[elasticsearch\] index_options=bbq_hnsw: Elasticsearch 8\.15\.5 cannot index it \(8\.16\+\); use auto, hnsw, int8_hnsw, int4_hnsw$",
        ),
        ("8.11.0", {"index_options": "int8_hnsw"}, r"index_options=int8_hnsw: Elasticsearch 8\.11\.0 cannot index it \(8\.12\+\)"),
        (
            "8.15.5",
            {"rescore_oversample": 3.0},
            r"^\[elasticsearch\] rescore_oversample=3: Elasticsearch 8\.15\.5 has no index_options\.rescore_vector \(9\.1\+\); set it to 0$",
        ),
        ("9.2.8", {"index_options": "hnsw", "rescore_oversample": 2.0}, r"rescore_oversample=2 needs a quantized index_options"),
        ("9.2.8", {"index_options": "bbq_hnsw", "dims": 32}, r"index_options=bbq_hnsw needs vectors of >= 64 dims \(the embedder has 32\)"),
        ("9.2.8", {"index_options": "int4_hnsw", "dims": 33}, r"int4_hnsw needs an even number of dims"),
        ("9.2.8", {"index_options": "flat"}, r"index_options='flat' is not one of auto, hnsw, int8_hnsw, int4_hnsw, bbq_hnsw"),
    ],
)
def test_what_the_version_cannot_do_is_one_line_naming_setting_and_version(version, kwargs, message):
    with pytest.raises(ConfigError, match=message) as err:
        plan_vectors(version, **kwargs)
    assert "\n" not in str(err.value)


def test_auto_never_gives_bbq_under_64_dims():
    plan = check_dims(
        VectorPlan(
            {"type": "bbq_hnsw", "m": 16, "ef_construction": 100, "rescore_vector": {"oversample": 3.0}}, "synthetic", "auto", "9.2.8"
        ),
        8,
    )
    assert plan.index_options == {"type": "int8_hnsw", "m": 16, "ef_construction": 100, "rescore_vector": {"oversample": 0.0}}
    assert check_dims(plan_vectors("9.2.8"), 8).kind == "int8_hnsw"


def test_mappings_component_carries_the_plan_exactly():
    learned = Learned(
        "9.2.8", (False, "no rrf"), False, "2026-12-01T00:00:00+00:00", plan_vectors("9.2.8", None, "bbq_hnsw", 2.0).to_meta()
    )
    body = mappings_component_body(IndexMeta("st:e5", 384, ["text"]), capabilities=learned.to_meta())
    mappings = body["template"]["mappings"]
    assert mappings["properties"]["vector"] == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "bbq_hnsw", "m": 16, "ef_construction": 100, "rescore_vector": {"oversample": 2.0}},
    }
    assert body["template"]["settings"]["index"] == {"mapping": {"exclude_source_vectors": True}}
    assert mappings["_meta"]["vectors"]["vector_copy"] == "synthetic"
    assert "vectors" not in mappings["_meta"]["capabilities"]
    assert mappings["_source"] == {"excludes": ["vector", "vector_bin"]}
    old = Learned("8.15.5", (False, "no rrf"), False, "x", plan_vectors("8.15.5").to_meta())
    body = mappings_component_body(IndexMeta("st:e5", 384, ["text"]), capabilities=old.to_meta())
    assert body["template"]["mappings"]["properties"]["vector"]["index_options"] == {"type": "int8_hnsw", "m": 16, "ef_construction": 100}
    assert "index" not in body["template"]["settings"]
    assert body["template"]["mappings"]["_meta"]["vectors"]["vector_copy"] == "stored"


def test_settings_from_env_and_bad_oversample(monkeypatch):
    monkeypatch.setenv("ESRAG_ELASTICSEARCH__INDEX_OPTIONS", "bbq_hnsw")
    monkeypatch.setenv("ESRAG_ELASTICSEARCH__RESCORE_OVERSAMPLE", "2.5")
    s = Settings(db=None, es_url="http://127.0.0.1:9200")
    assert (s.elasticsearch.index_options, s.elasticsearch.rescore_oversample, s.elasticsearch.vector_copy) == ("bbq_hnsw", 2.5, "auto")
    store = ElasticStore.from_settings(s)
    assert (store.index_options, store.rescore_oversample) == ("bbq_hnsw", 2.5)
    monkeypatch.setenv("ESRAG_ELASTICSEARCH__RESCORE_OVERSAMPLE", "11")
    with pytest.raises(ValueError, match=r"rescore_oversample=11: use 0 \(off\) or 1\.0-10\.0"):
        Settings(db=None, es_url="http://127.0.0.1:9200")


# -- live, on both nodes -------------------------------------------------------------------------
@pytest.fixture
def make_store(es_url):
    made: list[ElasticStore] = []

    def make(**kw) -> ElasticStore:
        s = ElasticStore(es_url, f"esrag-t-{uuid.uuid4().hex[:12]}", **kw)
        made.append(s)
        return s

    yield make
    for s in made:
        cleaner = ElasticStore(es_url, s.alias)
        cleaner.drop()
        cleaner.close()
        s.close()


def _install(store: ElasticStore, m: IndexMeta | None = None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        store.install(m or meta())


def _version(store: ElasticStore) -> tuple[int, int]:
    major, minor = store.server_version().split(".")[:2]
    return int(major), int(minor)


@pytest.mark.integration
@pytest.mark.parametrize("option", INDEX_OPTIONS)
def test_each_option_is_accepted_or_refused_clearly(make_store, option):
    store = make_store(index_options=option)
    version = store.server_version()
    if option == "bbq_hnsw" and _version(store) < (8, 16):
        with pytest.raises(ConfigError, match=rf"^\[elasticsearch\] index_options=bbq_hnsw: Elasticsearch {version} cannot index it"):
            _install(store)
        assert store.assets()["index"] is None and not any(store.assets()["component_templates"].values())
        return
    _install(store)
    mapping = store._es.indices.get_mapping(index=store.names.index(1)).body[store.names.index(1)]["mappings"]
    got = mapping["properties"]["vector"]["index_options"]
    assert got["type"] == option and got["m"] == 16 and got["ef_construction"] == 100
    assert mapping["_meta"]["vectors"]["index_options"]["type"] == option
    if _version(store) >= (9, 1) and option != "hnsw":
        assert float(got["rescore_vector"]["oversample"]) == (3.0 if option == "bbq_hnsw" else 0.0)
    else:
        assert "rescore_vector" not in got
    # the index answers kNN with the option
    store.write([make_chunk(i, f"chunk {i}") for i in range(3)], np.stack([unit(i) for i in range(3)]), ["m"] * 3)
    store.refresh()
    assert store.knn(unit(1), 1, Filters(), 10)[0][0] == "docs-a.md-1"


@pytest.mark.integration
def test_oversampling_accepted_on_9_and_refused_on_8(make_store):
    store = make_store(index_options="int8_hnsw", rescore_oversample=2.0)
    if _version(store) < (9, 1):
        with pytest.raises(
            ConfigError, match=rf"rescore_oversample=2: Elasticsearch {store.server_version()} has no index_options.rescore_vector"
        ):
            _install(store)
        return
    _install(store)
    got = store._es.indices.get_mapping(index=store.names.index(1)).body[store.names.index(1)]["mappings"]["properties"]["vector"]
    assert got["index_options"]["rescore_vector"] == {"oversample": 2.0}


@pytest.mark.integration
@pytest.mark.parametrize("vector_copy", ["auto", "stored"])
def test_metadata_update_is_lossless_and_the_vector_is_kept_once_where_it_can(make_store, vector_copy):
    store = make_store(vector_copy=vector_copy)
    _install(store)
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(4, DIMS)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [make_chunk(i, f"alpha {i}") for i in range(4)]
    store.write(chunks, vecs, ["m"] * 4)
    synthetic = vector_copy == "auto" and _version(store) >= (9, 2)
    stored = store._es.mget(index=store.alias, ids=[chunks[0].id], stored_fields=["vector_bin"], source=False).body["docs"][0]
    assert ("vector_bin" in (stored.get("fields") or {})) is (not synthetic)
    raw = store._es.get(index=store.alias, id=chunks[0].id).body["_source"]
    assert "vector" not in raw and "vector_bin" not in raw  # Discover stays readable either way
    moved = make_chunk(2, "alpha 2")
    moved.start_line, moved.end_line, moved.position = 300, 320, 9
    report = store.update_meta([moved], ["m2"])  # realtime: no refresh between write and update
    assert report.written == 1 and not report.failed
    store.refresh()
    [got] = store.get([moved.id])
    assert (got.start_line, got.position) == (300, 9)
    assert store.knn(vecs[2], 1, Filters(), 10)[0][0] == moved.id
    back = store.vectors([moved.id, chunks[0].id, "nope"])
    assert set(back) == {moved.id, chunks[0].id}
    assert np.array_equal(back[moved.id], vecs[2]) and back[moved.id].dtype == np.float32  # bit-exact
    assert store.manifest("docs")["a.md"][moved.id].meta_hash == "m2"
    assert store._state()["raw"]["vectors"]["vector_copy"] == ("synthetic" if synthetic else "stored")
