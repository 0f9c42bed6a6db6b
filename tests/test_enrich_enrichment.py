"""Enrichment E, E−K, CR and PF (seed 000 App. N.2) through the real ``ollama`` client against
the local stand-in server: exact prompt rendering, validation and coercion, retries with seeds
1–3, the rolling key dictionary and its LRU eviction at 40 keys, the persistent cache and the
cost ledger."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.enrich.enrichment import (
    EMPTY_DICTIONARY,
    Enricher,
    KeyDictionary,
    contextualize_chunks,
    enrich_chunks,
    normalize_key,
    per_field_chunks,
    render_enrich_prompt,
    validate_enrichment,
)
from esrag.errors import ConfigError
from esrag.llm.cache import CachedLLM, LLMCache
from esrag.llm.clients import LLMOptions, OllamaLLM, OpenAILLM
from esrag.llm.json_reply import parse_json_object
from esrag.llm.prompts import Prompt, load_prompt
from esrag.model import Chunk, Document, Enrichment, content_hash
from esrag.tokens import count_tokens
from llm_standin import RECORDED, Reply, StandIn, laravel_dir


@pytest.fixture
def standin():
    with StandIn() as s:
        yield s


def cached(s: StandIn, cache=None, model="qwen2.5:7b", **kw) -> CachedLLM:
    return CachedLLM(OllamaLLM(model, s.url, **{"timeout": 5, "retries": 0, **kw}), cache)


def chunk(i: int, text: str, section: str = "Guide", n: int = 3) -> Chunk:
    return Chunk(id=f"c{i}", text=text, section_path=section, position=i, n_chunks=n, content_hash=content_hash(text))


def reply(**fields) -> str:
    base = {
        "title": "T",
        "summary": "S",
        "keywords": ["a", "b", "c", "d", "e"],
        "questions": ["q1?", "q2?"],
        "entities": [],
        "key": "",
        "related_keys": [],
    }
    return json.dumps({**base, **fields})


def laravel_chunks(name: str = "scheduling.md") -> tuple[Document, list[Chunk]]:
    doc = Document(name, (laravel_dir() / name).read_text(), corpus="laravel")
    return doc, HeaderChunker().chunk(doc)


# -- prompt rendering, exactly ---------------------------------------------------------------------
def test_prompt_lines_for_first_second_and_failed_chunks(standin):
    chunks = [
        chunk(1, "First CHUNK-1 text."),
        chunk(2, "Second CHUNK-2 {braces} ${chunk_text} $HOME", "Guide > Install"),
        chunk(3, "Third CHUNK-3.", ""),
    ]
    standin.route("CHUNK-1", {None: reply(summary="First summary.", key="First Key ")})
    standin.route("CHUNK-2", {None: "not json at all"})
    standin.route("CHUNK-3", {None: reply(key="first key")})
    enrich_chunks(chunks, cached(standin))
    prompts = [r.prompt for r in standin.requests]
    assert len(prompts) == 1 + 4 + 1  # chunk 2 is retried with seeds 1-3
    p1, p2, p3 = prompts[0], prompts[1], prompts[5]
    assert (
        "Section path: Guide\nChunk position: 1 of 3\nSummary of the previous chunk: (first chunk)\n\n"
        "Chunk text:\n<<<\nFirst CHUNK-1 text.\n>>>\n\n"
        "Keys already assigned in this document (specific subtopics of earlier chunks):\n"
        "(none yet — this is the first chunk)\n\nAnswer with one JSON object"
    ) in p1
    assert (
        "Section path: Guide > Install\nChunk position: 2 of 3\nSummary of the previous chunk: First summary.\n\n"
        "Chunk text:\n<<<\nSecond CHUNK-2 {braces} ${chunk_text} $HOME\n>>>\n\n"
        "Keys already assigned in this document (specific subtopics of earlier chunks):\n"
        "- first key (seen 1x)\n\nAnswer with one JSON object"
    ) in p2
    assert ("Section path: (no section)\nChunk position: 3 of 3\nSummary of the previous chunk: (unavailable)\n") in p3
    assert "- first key (seen 1x)\n\nAnswer" in p3  # the failed chunk added no key
    assert p1.startswith(load_prompt("enrich_v1").text.split("${")[0])


def test_e_minus_k_shows_not_provided_and_still_filters_related_keys(standin):
    chunks = [chunk(1, "A CHUNK-1"), chunk(2, "B CHUNK-2"), chunk(3, "C CHUNK-3")]
    standin.route("CHUNK-1", {None: reply(key="alpha")})
    standin.route("CHUNK-2", {None: reply(key="beta", related_keys=["alpha", "gamma"])})
    standin.route("CHUNK-3", {None: reply(key="alpha", related_keys=["beta"])})
    out = enrich_chunks(chunks, cached(standin), show_keys=False)
    assert all("(specific subtopics of earlier chunks):\n(not provided)\n" in r.prompt for r in standin.requests)
    assert [e.key for e in out] == ["alpha", "beta", "alpha"]
    assert out[1].related_keys == ["alpha"] and out[2].related_keys == ["beta"]


def test_related_keys_are_filtered_against_the_dictionary_before_the_call(standin):
    chunks = [chunk(1, "A CHUNK-1"), chunk(2, "B CHUNK-2")]
    standin.route("CHUNK-1", {None: reply(key="first key")})
    standin.route("CHUNK-2", {None: reply(key="New Key", related_keys=["new key", "FIRST KEY ", "unknown", 7])})
    out = enrich_chunks(chunks, cached(standin))
    assert out[1].key == "new key" and out[1].related_keys == ["first key"]


def test_prompt_render_rejects_missing_or_unknown_values():
    p = Prompt("t", "a ${x} b ${y}")
    assert p.render(x="{1}", y="$z") == "a {1} b $z"
    with pytest.raises(ConfigError, match="missing values \\['y'\\]"):
        p.render(x=1)
    with pytest.raises(ConfigError, match="unknown prompt 'nope'; shipped: .*enrich_v1"):
        load_prompt("nope")


def test_render_enrich_prompt_placeholders():
    p = load_prompt("enrich_v1")
    assert p.placeholders == {"section_path", "position", "total", "previous_summary", "chunk_text", "key_dictionary"}
    text = render_enrich_prompt(p, chunk(4, "x"), 4, 9, "prev", "(not provided)")
    assert "Chunk position: 4 of 9" in text and "Summary of the previous chunk: prev" in text


# -- the rolling key dictionary ----------------------------------------------------------------------
def test_key_dictionary_counts_positions_and_renders():
    k = KeyDictionary()
    assert k.render() == EMPTY_DICTIONARY
    k.update("a", 1)
    k.update("", 2)
    k.update("b", 3)
    k.update("a", 4)
    assert k.render() == "- a (seen 2x)\n- b (seen 1x)"  # insertion order while no eviction
    assert (k.entries["a"].first, k.entries["a"].last, k.entries["a"].count) == (1, 4, 2)


def test_lru_eviction_beyond_40_keys_reorders_by_recency():
    k = KeyDictionary(40)
    for i in range(1, 41):
        k.update(f"k{i}", i)
    assert len(k) == 40 and k.keys()[0] == "k1" and not k.evicted
    k.update("k41", 41)
    assert k.evicted == ["k1"] and k.keys() == [f"k{i}" for i in range(41, 1, -1)]
    k.update("k10", 42)  # reuse: no eviction, order kept
    assert k.keys() == [f"k{i}" for i in range(41, 1, -1)] and k.entries["k10"].count == 2
    k.update("k42", 43)
    assert k.evicted == ["k1", "k2"]
    assert k.keys()[:3] == ["k42", "k10", "k41"] and k.keys()[-1] == "k3" and len(k) == 40


def test_eviction_through_enrichment_of_45_chunks(standin):
    chunks = [chunk(i, f"text of CHUNK-{i:02d}", f"Doc > S{i}", n=45) for i in range(1, 46)]
    enricher = Enricher(cached(standin), "e")
    doc = Document("d.md", "\n".join(c.text for c in chunks))
    enricher.enrich(doc, chunks)
    p42 = next(r.prompt for r in standin.requests if "CHUNK-42" in r.prompt)
    lines = [ln for ln in p42.splitlines() if ln.startswith("- s")]
    assert len(lines) == 40 and lines[0] == "- s41 (seen 1x)" and lines[-1] == "- s2 (seen 1x)"
    assert enricher.keys.evicted == 5 and enricher.keys.keyed == 45 and enricher.keys.reused == 0


# -- parsing and validation ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, ok",
    [
        ('{"a": 1}', True),
        ('  ```json\n{"a": 1}\n```  ', True),
        ('Sure! Here it is: {"a": 1} Hope it helps.', True),
        ('[{"a": 1}]', True),
        ('[{"a": 1}, {"b": 2}]', False),
        ('"a"', False),
        ("", False),
        ('{"a": ', False),
        ("null", False),
    ],
)
def test_parse_json_object(text, ok):
    assert (parse_json_object(text) == {"a": 1}) is ok


def test_validation_coerces_what_is_safe_and_notes_the_rest():
    obj = {
        "title": ["  A   title  ", "second"],
        "summary": 42,
        "keywords": "php, artisan; cron\nqueue, php",
        "questions": "How do I schedule? Why cron?",
        "entities": [{"name": "Laravel", "type": "TECH"}, "Redis", None, 3],
        "key": "  Task   SCHEDULING " + "x" * 100,
        "related_keys": "known key",
    }
    e, notes = validate_enrichment(obj, {"known key"})
    assert e.title == "A title" and e.summary == "42"
    assert e.keywords == ["php", "artisan", "cron", "queue"]
    assert e.questions == ["How do I schedule?", "Why cron?"]
    assert e.entities == ["Laravel", "Redis", "3"]
    assert e.key == normalize_key("task scheduling " + "x" * 100) and len(e.key) == 80 and e.key.startswith("task scheduling x")
    assert e.related_keys == ["known key"]
    assert any("keywords: 4 items (fewer than 5)" in n for n in notes)
    assert any("title: list coerced" in n for n in notes)


def test_validation_cuts_counts_and_drops_wrong_types():
    obj = {
        "title": {"x": 1},
        "summary": None,
        "keywords": [f"k{i}" for i in range(12)] + ["K1"],
        "questions": ["a?", "b?", "c?", "d?"],
        "entities": "x",
        "key": 5,
        "related_keys": {"a": 1},
    }
    e, notes = validate_enrichment(obj, set())
    assert e.title == "" and e.summary == "" and e.keywords == [f"k{i}" for i in range(8)]
    assert e.questions == ["a?", "b?", "c?"] and e.key == "5" and e.related_keys == []
    assert "title: dict dropped (expected a string)" in notes and "related_keys: dict dropped (expected a list)" in notes


def test_list_items_never_contain_newlines():
    e, _ = validate_enrichment({"keywords": ["multi\nline  keyword", "b"], "questions": ["what\nnow?"]}, ())
    assert e.keywords == ["multi line keyword", "b"] and e.questions == ["what now?"]


# -- retries with seeds 1–3, failures that never stop the document -----------------------------------
def test_parse_failures_are_retried_with_seeds_1_to_3(standin):
    chunks = [chunk(1, "A CHUNK-1"), chunk(2, "B CHUNK-2")]
    standin.route("CHUNK-1", {0: "{not json", 1: '```json\n{"title": \n```', 2: reply(title="Third time", key="k")})
    c = cached(standin)
    out = enrich_chunks(chunks, c)
    assert [r.seed for r in standin.requests if "CHUNK-1" in r.prompt] == [0, 1, 2]
    assert out[0].title == "Third time"
    t = c.ledger.totals()
    assert (t.llm_calls, t.llm_retries, t.llm_failures) == (4, 2, 0)


def test_unusable_replies_after_every_seed_leave_empty_fields_and_count(standin):
    chunks = [chunk(1, "A CHUNK-1"), chunk(2, "B CHUNK-2"), chunk(3, "C CHUNK-3")]
    standin.route("CHUNK-2", {0: "", 1: "null", 2: '{"unrelated": 1}', 3: '{"title": null, "key": null}'})
    c = cached(standin)
    out = enrich_chunks(chunks, c)
    assert [r.seed for r in standin.requests if "CHUNK-2" in r.prompt] == [0, 1, 2, 3]
    assert out[1].title == "" and out[1].key == "" and out[1].model == "ollama:qwen2.5:7b"
    assert out[2].title and "Summary of the previous chunk: (unavailable)" in standin.requests[-1].prompt
    t = c.ledger.totals()
    assert t.llm_failures == 1 and t.llm_retries == 3 and t.by_task["enrich"]["failures"] == 1


def test_transport_failure_is_counted_not_retried_by_seed_and_not_cached(standin, tmp_path):
    chunks = [chunk(1, "A CHUNK-1"), chunk(2, "B CHUNK-2")]
    standin.route("CHUNK-1", {None: [Reply(status=500), Reply(reply(title="Recovered", key="k"))]})
    cache = LLMCache(tmp_path / "c.db")
    c = cached(standin, cache)
    out = enrich_chunks(chunks, c)
    assert out[0].title == "" and out[1].title
    assert [r.seed for r in standin.requests if "CHUNK-1" in r.prompt] == [0]
    assert c.ledger.totals().llm_failures == 1 and c.ledger.totals().llm_errors == 1
    standin.reset()
    standin.route("CHUNK-1", {None: reply(title="Recovered", key="k")})
    again = enrich_chunks(chunks, cached(standin, cache))
    assert again[0].title == "Recovered"
    assert len(standin.requests) == 2  # chunk 1 now answers; chunk 2's prompt changed (previous summary)


def test_timeouts_mid_document_do_not_stop_it(standin):
    chunks = [chunk(i, f"text CHUNK-{i}", n=3) for i in (1, 2, 3)]
    standin.route("CHUNK-2", {None: Reply(reply(key="late"), delay=2.0)})
    c = CachedLLM(OllamaLLM("qwen2.5:7b", standin.url, timeout=0.5, retries=0))
    out = enrich_chunks(chunks, c)
    assert out[0].key and out[1].key == "" and out[2].key
    assert c.ledger.totals().llm_failures == 1


# -- cache and ledger ---------------------------------------------------------------------------------
def test_second_run_makes_zero_calls_and_prompt_or_model_changes_recompute(standin, tmp_path):
    doc, chunks = laravel_chunks()
    cache = LLMCache(tmp_path / "llm_cache.db")
    first = enrich_chunks(chunks, cached(standin, cache))
    n = len(standin.requests)
    assert n == len(chunks)
    c2 = cached(standin, cache)
    second = enrich_chunks(chunks, c2)
    assert len(standin.requests) == n and second == first
    assert c2.ledger.totals().llm_cache_hits == len(chunks) and c2.ledger.totals().llm_calls == 0
    edited = Prompt("enrich_v1x", load_prompt("enrich_v1").text + "\nBe brief.\n")
    third = enrich_chunks(chunks, cached(standin, cache), prompt=edited)
    assert len(standin.requests) == 2 * n and third[0].prompt_sha256 == edited.sha256 != first[0].prompt_sha256
    enrich_chunks(chunks, cached(standin, cache, model="llama3.1:8b"))
    assert len(standin.requests) == 3 * n


def test_an_edited_chunk_recomputes_itself_and_the_prompts_it_changed(standin, tmp_path):
    doc, chunks = laravel_chunks()
    cache = LLMCache(tmp_path / "c.db")
    enrich_chunks(chunks, cached(standin, cache))
    standin.reset()
    edited = [c if i != 5 else replace(c, text="Edited first line.\n\n" + c.text) for i, c in enumerate(chunks)]
    enrich_chunks(edited, cached(standin, cache))
    # chunk 6 itself, and chunk 7 whose prompt holds chunk 6's (changed) summary; chunk 8 sees an
    # unchanged summary of chunk 7 and an unchanged dictionary, so it is a cache hit.
    assert [r.prompt.split("Chunk position: ")[1].split(" of")[0] for r in standin.requests] == ["6", "7"]


def test_ledger_counts_server_tokens_and_seconds(standin):
    doc, chunks = laravel_chunks()
    c = cached(standin)
    enrich_chunks(chunks[:5], c)
    t = c.ledger.totals()
    assert t.llm_calls == 5
    assert t.tokens_in == sum(count_tokens(r.prompt) for r in standin.requests)
    assert t.tokens_out > 5 * 50 and t.llm_seconds > 0
    assert t.by_task["enrich"]["tokens_in_per_call"] == round(t.tokens_in / 5, 1)


# -- CR and PF ------------------------------------------------------------------------------------------
def test_contextual_retrieval_puts_the_document_first_plain_text_120_tokens(standin):
    doc, chunks = laravel_chunks()
    c = cached(standin)
    contexts = contextualize_chunks(doc.text, chunks[:3], c, options=LLMOptions(max_tokens=120, json=False))
    assert all(ctx.startswith("This chunk is from Task Scheduling") for ctx in contexts)
    for r, ch in zip(standin.requests, chunks):
        assert r.prompt.startswith("<document>\n" + doc.text + "\n</document>\n")
        assert f"<chunk>\n{ch.text}\n</chunk>" in r.prompt
        assert r.body["options"]["num_predict"] == 120 and not r.body.get("format")
    e_tokens = count_tokens(render_enrich_prompt(load_prompt("enrich_v1"), chunks[1], 2, len(chunks), "x", EMPTY_DICTIONARY))
    assert c.ledger.totals().tokens_in / 3 > 5 * e_tokens  # the whole document with every chunk


def test_cr_empty_replies_are_retried_then_counted(standin):
    doc, chunks = laravel_chunks()
    standin.queue("", "  ", "\n", "")
    c = cached(standin)
    assert contextualize_chunks(doc.text, chunks[:1], c) == [""]
    assert [r.seed for r in standin.requests] == [0, 1, 2, 3] and c.ledger.totals().llm_failures == 1


def test_per_field_calls_one_per_field_with_the_same_context(standin):
    doc, chunks = laravel_chunks()
    standin.route('"keywords": ["5 to 8', {None: "garbage"})
    c = cached(standin)
    out = per_field_chunks(chunks[:2], c)
    assert len(standin.requests) == 2 * (3 + 4)  # keywords fails on every seed
    first = [r.prompt for r in standin.requests[:7]]
    assert all("Chunk position: 1 of " in p and "(first chunk)" in p for p in first)
    assert out[0].title and out[0].summary and out[0].questions and out[0].keywords == [] and out[0].key == ""
    assert f"Summary of the previous chunk: {out[0].summary}" in standin.requests[7].prompt
    t = c.ledger.totals()
    assert t.llm_failures == 2 and t.by_task["field:keywords"]["failures"] == 2


# -- the Enricher applied to documents ----------------------------------------------------------------
@pytest.mark.parametrize("mode", ["e", "e-k", "cr", "pf"])
def test_enricher_sets_fields_model_prompt_hash_and_extends_content_hash(standin, mode):
    doc, chunks = laravel_chunks()
    before = [(c.content_hash, c.text) for c in chunks[:4]]
    enricher = Enricher(cached(standin), mode)
    enricher.enrich(doc, chunks[:4])
    for c, (h, text) in zip(chunks[:4], before):
        assert c.enrichment.model == "ollama:qwen2.5:7b" and len(c.enrichment.prompt_sha256) == 64
        assert c.content_hash != h and c.text == text  # generated text never goes into `text`
    if mode == "cr":
        assert all(c.context for c in chunks[:4]) and not chunks[0].enrichment.title
    else:
        assert all(c.enrichment.title and c.enrichment.keywords for c in chunks[:4]) and not chunks[0].context
    assert (chunks[0].enrichment.key != "") == (mode in ("e", "e-k"))


def test_enricher_runs_documents_concurrently_one_worker_each(standin):
    items = [laravel_chunks(n) for n in ("scheduling.md", "cache.md", "queues.md", "routing.md")]
    items = [(d, cs[:3]) for d, cs in items]
    inner = standin.responder
    standin.responder = lambda req: (time.sleep(0.05), inner(req))[1]
    enricher = Enricher(cached(standin, concurrency=4), "e")
    assert enricher.enrich_many(items) == [None] * 4
    assert standin.max_in_flight > 1 and len(standin.requests) == 12
    for _doc, cs in items:  # within a document, the calls ran one after another, in order
        mine = [r for r in standin.requests if any(f"<<<\n{c.text}\n>>>" in r.prompt for c in cs)]
        assert [r.prompt.split("Chunk position: ")[1].split(" of")[0] for r in mine] == ["1", "2", "3"]


def test_unknown_mode_lists_the_valid_ones(standin):
    with pytest.raises(ConfigError, match="valid: e, e-k, cr, pf"):
        Enricher(cached(standin), "x")


# -- replayed replies of the smoke-test model -------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.skipif(not RECORDED, reason="no recorded replies")
def test_recorded_smollm2_replies_survive_validation(standin):
    chunks = [chunk(i, f"text CHUNK-R{i}", n=len(RECORDED)) for i in range(1, len(RECORDED) + 1)]
    for i, text in enumerate(RECORDED.values(), start=1):
        standin.route(f"CHUNK-R{i}\n", {None: text})
    c = CachedLLM(OpenAILLM("smollm2", standin.url + "/v1", timeout=5, retries=0))
    out = enrich_chunks(chunks, c)
    for e in out:
        assert isinstance(e, Enrichment) and isinstance(e.keywords, list) and all(isinstance(k, str) for k in e.keywords)
        assert len(e.keywords) <= 8 and len(e.questions) <= 3 and e.key == e.key.lower().strip()
    t = c.ledger.totals()
    assert t.llm_failures == sum(parse_json_object(v) is None for v in RECORDED.values())
