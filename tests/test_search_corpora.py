"""Issue 7's done-when check, on both real stores (the embedded SQLite store and each
Elasticsearch test node): the Laravel docs (a slice of the shared corpus) + 30 support-ticket
records (tests/data/laravel_tickets.jsonl) answer a mixed query with passages from both corpora;
budgets and expansions hold their token limits exactly (the evaluation's rule); the HTTP reranker
reorders hits; ``ask`` abstains on a question the sources cannot answer and cites sections
otherwise (LLM stand-in over real HTTP). Elasticsearch runs every branch in ONE ``_msearch`` and
refuses ``elastic:`` reranking clearly on a cluster without it."""

from __future__ import annotations

import json
import warnings

import pytest

from esrag.answer import Answerer
from esrag.app import make_chunker
from esrag.chunking.header import HeaderChunker
from esrag.chunking.records import LabelledChunker, RecordsChunker
from esrag.config import Settings
from esrag.errors import RerankError
from esrag.indexed_text import embed_text
from esrag.ingest import meta_hash
from esrag.llm.cache import CachedLLM, LLMCache
from esrag.llm.clients import OpenAILLM
from esrag.model import Document
from esrag.search.pipeline import Pipeline
from esrag.search.searcher import Searcher
from esrag.stores.base import Filters, IndexMeta
from esrag.stores.elastic import ClusterWarning, ElasticStore, text_similarity_reranker_body
from esrag.stores.sqlite import SQLiteStore
from esrag.tokens import count_tokens
from llm_standin import StandIn as LLMStandIn
from paths import LARAVEL, PROJECT
from rerank_standin import RerankStandIn

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

DOCS = ["queues.md", "scheduling.md", "deployment.md", "configuration.md"]
TICKETS = PROJECT / "tests" / "data" / "laravel_tickets.jsonl"
EMBED_FIELDS = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}
MIXED = "queue workers keep running old code after a deploy, how do I restart them?"
CORPORA = {
    "laravel": {
        "k": 5,
        "authority": "official documentation",
        "authority_rank": 2,
        "intent": "how Laravel features work: configuration, commands, APIs, reference documentation",
    },
    "tickets": {
        "k": 3,
        "authority": "support ticket",
        "authority_rank": 1,
        "expand": "none",
        "filters": ["effective_date <= today", "not superseded"],
        "mmr_lambda": 0.7,
        "mmr_pool": 30,
        "per_source_cap": 2,
        "cap_by": "product_area",
        "intent": "reported problems, error messages, symptoms after deploy and the fix that worked",
        "records": {"metadata": ["product_area", "status"]},
    },
}


def settings(**search) -> Settings:
    return Settings(db=None, es_url=None, corpora=CORPORA, search={"corpora": ["laravel", "tickets"], **search})


@pytest.fixture(scope="session")
def minilm():
    from esrag.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def two_corpora(minilm):
    """Chunks and vectors of both corpora, computed once for every store."""
    chunker = make_chunker(Settings(db=None, es_url=None))
    assert isinstance(chunker, HeaderChunker)
    chunks = [
        c
        for name in DOCS
        for c in LabelledChunker(chunker, {"authority": "official documentation"}).chunk(
            Document(path=name, text=(LARAVEL / name).read_text(), corpus="laravel")
        )
    ]
    tickets = RecordsChunker(Settings(corpora=CORPORA).corpora["tickets"].records).chunk(
        Document(path="laravel_tickets.jsonl", text=TICKETS.read_text(), corpus="tickets")
    )
    chunks += tickets
    vectors = minilm.embed_documents([embed_text(c, EMBED_FIELDS) for c in chunks])
    return chunks, vectors


def load(store, minilm, two_corpora) -> None:
    chunks, vectors = two_corpora
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)
        store.ensure(IndexMeta(minilm.spec, minilm.dims, EMBED_FIELDS, BM25))
    report = store.write(chunks, vectors, [meta_hash(c) for c in chunks])
    assert not report.failed
    store.refresh()


def pipeline(store, minilm, **search) -> Pipeline:
    s = settings(**search)
    return Pipeline(s, store, Searcher(store, lambda: minilm, s.search, BM25))


class CorporaChecks:
    """The checks every store runs; subclasses provide a class-scoped, loaded ``store``."""

    def test_mixed_query_answers_from_both_corpora(self, store, minilm):
        p = pipeline(store, minilm)
        r = p.search(MIXED)
        # each corpus keeps its own k retrieved passages (adjacent ones of one section come as one hit)
        corpora = [h.chunk.corpus for h in r.hits for _ in (h.expanded_from or [h.chunk.id])]
        assert corpora.count("laravel") == 5 and corpora.count("tickets") == 3
        assert r.diagnostics["corpora_without_passages"] == [] and r.diagnostics["passages_per_corpus"] == {"laravel": 5, "tickets": 3}
        tickets = [h.chunk for h in r.hits if h.chunk.corpus == "tickets"]
        assert "T-1001" in [c.section_path for c in tickets]  # the ticket about exactly this problem
        assert any("queue:restart" in h.chunk.text for h in r.hits if h.chunk.corpus == "laravel")
        assert all(c.metadata["authority"] == "support ticket" for c in tickets)
        assert (
            max(sum(1 for c in tickets if c.metadata.get("product_area") == a) for a in {c.metadata.get("product_area") for c in tickets})
            <= 2
        )
        assert "2 corpora fused by rank" in r.fusion
        # superseded and not-yet-effective tickets never appear, in any leg
        twice = p.search("jobs processed twice on the redis queue: worker timeout and retry_after")
        ids = [h.chunk.section_path for h in twice.hits if h.chunk.corpus == "tickets"]
        assert "T-1019" in ids and "T-1003" not in ids
        future = p.search("planned deploy checklist not in force yet", k=10)
        assert "T-1030" not in [h.chunk.section_path for h in future.hits]
        # the shared top-k of seed 001 lets one corpus crowd out the other; the fan-out cannot
        shared = p.search(MIXED, k=8, corpora=[], filters=Filters())
        assert len(shared.hits) == 8 and "passages_per_corpus" not in shared.diagnostics

    def test_router_skews_k_but_never_to_zero(self, store, minilm):
        p = pipeline(store, minilm, router=True)
        r = p.search("error after deploy: 419 page expired when submitting the login form, what fixed it?")
        ks = r.diagnostics["router"]
        assert ks["tickets"] >= 1 and ks["laravel"] >= 1 and sum(ks.values()) in (7, 8, 9)
        assert r.diagnostics["corpora_without_passages"] == []

    @pytest.mark.parametrize("expand", [None, "neighbours:1", "parent", "auto-merge:2"])
    def test_budgets_and_expansions_hold_their_limits(self, store, minilm, expand):
        p = pipeline(store, minilm)
        whole = p.search(MIXED, expand=expand)
        for h in whole.hits:
            c = h.chunk
            assert c.tokens == count_tokens(c.text) and c.start_line <= c.end_line
            assert c.section_path or c.corpus == "laravel"
            if h.expanded_from is not None:
                assert c.corpus == "laravel" and h.expanded_from and c.tokens <= 1024
            if c.corpus == "tickets":
                assert h.expanded_from is None and "chunks" not in c.metadata
        if expand in ("neighbours:1", "parent"):
            assert any(h.expanded_from for h in whole.hits), expand
        if expand == "auto-merge:2":  # sibling hits under one section come back as that section
            merged = [h for h in p.search("job batching", corpora=["laravel"], expand=expand).hits if h.expanded_from]
            assert merged and all(len(h.expanded_from) >= 2 and h.chunk.tokens <= 1024 for h in merged)
            by_id = {c.id: c for c in store.get([i for h in merged for i in h.expanded_from])}
            for h in merged:
                assert all(by_id[i].section_path.startswith(h.chunk.section_path) for i in h.expanded_from)
        for budget in (64, 500, 1500, 100_000):
            packed = p.search(MIXED, expand=expand, budget=budget)
            tokens = [h.chunk.tokens for h in packed.hits]
            assert sum(tokens) <= budget and packed.diagnostics["budget"] == {"tokens": budget, "used": sum(tokens)}
            for h in packed.hits:  # whole hits, or one shortened where a block ends: never cut mid-line
                assert h.chunk.tokens == count_tokens(h.chunk.text)
                if h.chunk.metadata.get("truncated"):
                    assert not h.chunk.text.endswith("\n") and h.chunk.tokens >= p.settings.search.min_hit_tokens
        # a single-branch budget search fills the budget from as many hits as it needs
        single = p.search(MIXED, corpora=["laravel"], budget=3000, expand=expand)
        assert 1500 < sum(h.chunk.tokens for h in single.hits) <= 3000 and {h.chunk.corpus for h in single.hits} == {"laravel"}

    def test_http_reranker_reorders_before_expansion(self, store, minilm):
        p = pipeline(store, minilm, merge_sections=False, min_hit_tokens=0)  # the reranked leaves as they are
        plain = p.search(MIXED, corpora=["laravel"], k=10)
        with RerankStandIn() as server:
            reranked = p.search(MIXED, corpora=["laravel"], k=10, rerank=f"http:{server.url}", rerank_top_n=10)
            assert [h.chunk.id for h in reranked.hits] != [h.chunk.id for h in plain.hits]
            assert sorted(h.chunk.id for h in reranked.hits) == sorted(h.chunk.id for h in plain.hits)
            assert [h.legs["rerank"].rank for h in reranked.hits] == list(range(1, 11))
            scores = [h.legs["rerank"].score for h in reranked.hits]
            assert scores == sorted(scores, reverse=True)
            _, body = server.requests[-1]
            assert body["documents"] == [h.chunk.text for h in plain.hits]  # the fused top 10, as leaves
            expanded = p.search(MIXED, corpora=["laravel"], k=10, rerank=f"http:{server.url}", rerank_top_n=10, expand="parent")
            _, body = server.requests[-1]
            assert body["documents"] == [h.chunk.text for h in plain.hits]  # reranked before expansion
            assert any(h.expanded_from for h in expanded.hits)

    def test_reformulations_are_fused_with_the_original(self, store, minilm, tmp_path):
        with LLMStandIn() as llm_server:
            s = settings()
            s.llm, s.llm_url, s.llm_cache = "openai:standin", f"{llm_server.url}/v1", tmp_path / "llm.db"
            p = Pipeline(s, store, Searcher(store, lambda: minilm, s.search, BM25))
            r = p.search("restart queue workers", reformulate=3)
            assert len(r.reformulations) == 3 and r.diagnostics["reformulations"] == r.reformulations
            assert {h.chunk.corpus for h in r.hits} == {"laravel", "tickets"}
            assert any(set(h.legs) >= {"q0", "q1"} for h in r.hits)
            again = p.search("restart queue workers", reformulate=3)
            assert [h.chunk.id for h in again.hits] == [h.chunk.id for h in r.hits]
            assert len(llm_server.calls("/v1")) == 1  # the reformulations came from the LLM cache

    def test_ask_cites_sections_and_abstains(self, store, minilm, tmp_path):
        p = pipeline(store, minilm)
        with LLMStandIn() as llm_server:
            llm = CachedLLM(OpenAILLM("standin", f"{llm_server.url}/v1"), LLMCache(tmp_path / "llm.db"))
            answerer = Answerer(llm, {"official documentation": 2, "support ticket": 1})
            question = "How do I restart queue workers after deploying new code?"
            got = answerer.answer(question, p.search(question, budget=3000).hits)
            assert not got.abstained and got.citations
            assert all(c["section_path"] for c in got.citations) and {c["corpus"] for c in got.citations} <= {"laravel", "tickets"}
            labels = {s.corpus: s.authority for s in got.sources}
            assert labels == {"laravel": "official documentation", "tickets": "support ticket"}
            unanswerable = "What is the airspeed velocity of an unladen swallow?"
            no = answerer.answer(unanswerable, p.search(unanswerable, budget=3000).hits)
            assert no.abstained and no.citations == [] and no.sources


class TestSQLiteCorpora(CorporaChecks):
    @pytest.fixture(scope="class")
    @classmethod
    def store(cls, tmp_path_factory, minilm, two_corpora):
        s = SQLiteStore(tmp_path_factory.mktemp("corpora") / "esrag.db")
        load(s, minilm, two_corpora)
        yield s
        s.close()


class TestElasticCorpora(CorporaChecks):
    @pytest.fixture(scope="class")
    @classmethod
    def store(cls, es_url, minilm, two_corpora):
        from test_store_elastic import fresh_alias

        s = ElasticStore(es_url, fresh_alias())
        load(s, minilm, two_corpora)
        yield s
        s.drop()
        s.close()

    def test_fan_out_and_reformulations_run_in_one_msearch(self, store, minilm, tmp_path):
        from test_store_elastic import StandIn

        with StandIn(store.url) as proxy, LLMStandIn() as llm_server:
            s = settings()
            s.llm, s.llm_url, s.llm_cache = "openai:standin", f"{llm_server.url}/v1", tmp_path / "llm.db"
            es = ElasticStore(proxy.url, store.alias)
            p = Pipeline(s, es, Searcher(es, lambda: minilm, s.search, BM25))
            es.meta()  # index state is read once per connection
            proxy.requests.clear()
            r = p.search(MIXED, reformulate=2)
            searches = [(m, path) for m, path, _ in proxy.requests if path.split("?")[0].endswith(("_search", "_msearch"))]
            assert [path.split("?")[0].rsplit("/", 1)[-1] for _, path in searches] == ["_msearch"]
            body = [
                json.loads(line) for line in next(b for _, path, b in proxy.requests if "_msearch" in path).splitlines() if line.strip()
            ]
            assert len(body) == 2 * 2 * 3 * 2  # 2 corpora x 3 queries x 2 legs, header + body each
            assert {h.chunk.corpus for h in r.hits} == {"laravel", "tickets"}
            es.close()

    def test_elastic_reranker_detected_missing_then_canned_success(self, store, minilm):
        from test_store_elastic import StandIn

        p = pipeline(store, minilm)
        with pytest.raises(
            RerankError, match=r"no text_similarity_reranker retriever .*unknown retriever \[text_similarity_reranker\].*http:URL"
        ):
            p.search(MIXED, corpora=["laravel"], rerank="elastic:my-rerank", k=5)
        with pytest.raises(RerankError, match="no text_similarity_reranker"):  # refused at once from now on
            p.search(MIXED, corpora=["laravel"], rerank="elastic:my-rerank", k=5)
        plain = p.search(MIXED, corpora=["laravel"], k=5, sections=False)  # chunks as ranked: the reranker's order shows
        ids = [h.chunk.id for h in plain.hits]

        def rule(method, path, body):  # a cluster with the inference plugin: scores in reverse order
            if "/_search" in path and b"text_similarity_reranker" in body:
                hits = [{"_index": "i", "_id": i, "_score": float(n)} for n, i in enumerate(ids, 1)]
                return 200, {"took": 3, "timed_out": False, "hits": {"total": {"value": 5, "relation": "eq"}, "hits": hits[::-1]}}
            return None

        with StandIn(store.url, rule=rule) as proxy:
            es = ElasticStore(proxy.url, store.alias)
            q = Pipeline(settings(), es, Searcher(es, lambda: minilm, settings().search, BM25))
            r = q.search(MIXED, corpora=["laravel"], rerank="elastic:my-rerank", k=5, rerank_top_n=5, sections=False)
            assert [h.chunk.id for h in r.hits] == ids[::-1]
            sent = [json.loads(b) for m, path, b in proxy.requests if b"text_similarity_reranker" in b]
            assert sent == [text_similarity_reranker_body(MIXED, ids, "my-rerank")]
            es.close()
