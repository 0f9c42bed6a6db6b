"""How many HTTP requests esrag sends to Elasticsearch, counted on the wire against the real
nodes (9.2.8 and 8.15.5) through a forwarding stand-in (tests/test_store_elastic.py ``StandIn``).

What the cluster can do is learned once, at setup/ingest, and kept in the index's mapping
``_meta.capabilities`` with the Elasticsearch version it was learned from; so a hybrid search
of a fresh process sends at most 3 requests (here: one ``GET <alias>/_mapping``, the corpus
list's ``_search`` that finds each corpus's default version, and the ``_msearch``; without the
``_search`` when ``--all-versions`` or ``--doc-version`` is given), and a long-running process 1 per search. Before this (main at fba26e7) a fresh
CLI hybrid search sent 6: ``_cluster/health``, ``_alias``, ``_mapping``, ``_settings``, a failing
native-``rrf`` probe and the ``_msearch``; an ingest of a small tree sent 21, a re-ingest of
the unchanged tree 8.
"""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from click.testing import CliRunner

from esrag.cli import main
from esrag.config import Settings
from esrag.search.legs import hybrid
from esrag.search.pipeline import Pipeline
from esrag.stores.base import Filters
from esrag.stores.elastic import ClusterWarning, ElasticStore
from paths import LARAVEL
from store_suite import FIELDS, meta, unit
from test_store_elastic import UNKNOWN_RRF, StandIn, _hybrid_corpus, ensure_quietly, fresh_alias, make_store  # noqa: F401 (fixture)

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration


def _paths(standin: StandIn, start: int = 0) -> list[str]:
    return [f"{m} {p.split('?')[0]}" for m, p, _ in standin.requests[start:]]


@pytest.fixture
def alias(es_url):
    name = fresh_alias()
    yield name
    cleaner = ElasticStore(es_url, name)
    cleaner.drop()
    cleaner.close()


def test_ingest_and_hybrid_search_request_counts(es_url, alias, tmp_path, monkeypatch):
    tree = tmp_path / "docs"
    tree.mkdir()
    for name in ("scheduling.md", "cache.md"):
        shutil.copy(LARAVEL / name, tree / name)
    with StandIn(es_url) as standin:
        env = {
            "ESRAG_ES_URL": standin.url,
            "ESRAG_INDEX": alias,
            "ESRAG_DB": None,
            "ESRAG_EMBEDDING_CACHE": str(tmp_path / "embedding_cache.db"),
        }
        runner = CliRunner()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClusterWarning)
            first = runner.invoke(main, ["ingest", str(tree), "--corpus", "laravel", "--json"], env=env)
        assert first.exit_code == 0, first.output
        ingest = _paths(standin)
        assert len(ingest) <= 19, ingest  # main: 21
        assert ingest.count("PUT /_bulk") == 1  # the same bulk traffic
        learned = ElasticStore(es_url, alias).meta()  # the index says what the cluster can do, and from which version
        raw = ElasticStore(es_url, alias)._state()["raw"]["capabilities"]
        assert learned is not None and raw["rrf"]["available"] is False and "unknown retriever [rrf]" in raw["rrf"]["detail"]
        assert raw["es_version"][0] in "89" and raw["default_pipeline"] is False

        mark = len(standin.requests)
        again = runner.invoke(main, ["ingest", str(tree), "--corpus", "laravel", "--json"], env=env)
        assert again.exit_code == 0, again.output
        assert len(_paths(standin, mark)) <= 5, _paths(standin, mark)  # main: 8

        mark = len(standin.requests)
        found = runner.invoke(main, ["search", "how do I schedule a task to run every minute", "-k", "3", "--json"], env=env)
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)[0]["source_path"] == "scheduling.md"
        search = _paths(standin, mark)
        assert len(search) <= 3, search  # main: 6
        # the _search is the corpus list (store.stats()) a search without --doc-version reads to
        # search each corpus in its default version (issue 38); a server reads it at most every 5 s
        assert search == [f"GET /{alias}/_mapping", f"POST /{alias}/_search", f"POST /{alias}/_msearch"]
        mark = len(standin.requests)
        pinned = runner.invoke(main, ["search", "schedule a task", "-k", "3", "--all-versions", "--json"], env=env)
        assert pinned.exit_code == 0, pinned.output
        assert _paths(standin, mark) == [f"GET /{alias}/_mapping", f"POST /{alias}/_msearch"]

        # a long-running process: the same store answers every search with ONE request
        for key, value in env.items():
            if value is None:
                monkeypatch.delenv(key, raising=False)
            else:
                monkeypatch.setenv(key, value)
        store = ElasticStore(standin.url, alias)
        pipeline = Pipeline.from_settings(Settings(), store)
        pipeline.searcher.embed_query("warm up")
        mark = len(standin.requests)
        first_hits = pipeline.search("how do I schedule a task to run every minute", k=3)
        assert len(_paths(standin, mark)) == 1 and first_hits.hits[0].chunk.source_path == "scheduling.md"
        mark = len(standin.requests)
        second = pipeline.search("which cache drivers are supported", k=3)
        assert _paths(standin, mark) == [f"POST /{alias}/_msearch"] and second.hits[0].chunk.source_path == "cache.md"
        assert "native rrf unavailable" in second.fusion
        store.close()


def test_a_refused_native_rrf_falls_back_and_is_learned(make_store, es_url):  # noqa: F811 (the imported fixture)
    """An index that learned the rrf retriever works on a cluster that then refuses it: the
    search falls back to client-side fusion over one ``_msearch`` and records the refusal in
    ``_meta``; the next fresh process does not try the native path again."""
    store = make_store()
    ensure_quietly(store, meta())
    _hybrid_corpus(store)
    store.relearn((True, "rrf retriever available"))  # as if learned on a cluster with an Enterprise licence

    def rule(method, path, body):
        return (400, UNKNOWN_RRF) if "/_search" in path and b'"rrf"' in body else None

    with StandIn(es_url, rule=rule) as standin:
        s = ElasticStore(standin.url, store.alias)
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
        assert "client-side over one _msearch; native rrf unavailable" in how and fused[0].id == "docs-a.md-0"
        first = _paths(standin)
        assert first == [
            f"GET /{store.alias}/_mapping",
            f"POST /{store.alias}/_search",
            f"PUT /{store.alias}/_mapping",
            f"POST /{store.alias}/_msearch",
        ]
        mark = len(standin.requests)
        hybrid(s, "queues", unit(1), k=3, filters=Filters(), fields=FIELDS, rank_window_size=10, num_candidates=20, rrf_k=60)
        assert _paths(standin, mark) == [f"POST /{store.alias}/_msearch"]
        s.close()
        fresh = ElasticStore(standin.url, store.alias)
        mark = len(standin.requests)
        fused, how = hybrid(
            fresh, "queues", unit(1), k=3, filters=Filters(), fields=FIELDS, rank_window_size=10, num_candidates=20, rrf_k=60
        )
        assert _paths(standin, mark) == [f"GET /{store.alias}/_mapping", f"POST /{store.alias}/_msearch"]
        assert "unknown retriever [rrf]" in how
        fresh.close()


def test_one_store_answers_concurrent_searches_each_with_its_own_result(make_store, es_url):  # noqa: F811 (the imported fixture)
    """The HTTP server shares one store between threads: every result carries its own hits,
    records and timings, exactly what the same search alone returns."""
    from concurrent.futures import ThreadPoolExecutor

    store = make_store()
    ensure_quietly(store, meta())
    _hybrid_corpus(store)
    asks = [
        ("schedule task every minute", unit(0)),
        ("queues workers", unit(1)),
        ("templates views", unit(0, 2)),
        ("cache drivers", unit(4)),
    ] * 4

    def run(ask):
        answer = hybrid(store, ask[0], ask[1], k=3, filters=Filters(), fields=FIELDS, rank_window_size=10, num_candidates=20, rrf_k=60)
        ids = [f.id for f in answer.fused]
        return ids, answer.chunks(ids), answer.took_ms

    alone = [run(a) for a in asks[:4]]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(run, asks))
    for i, (ids, chunks, took) in enumerate(together):
        assert ids == alone[i % 4][0] and chunks == alone[i % 4][1] and isinstance(took, int)
    assert len({tuple(t[0]) for t in together}) == 4
