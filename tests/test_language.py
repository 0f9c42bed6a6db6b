"""Language of chunks and queries (esrag.language): detection on real text, labels at ingest,
the --lang filter, and Elasticsearch's per-language subfields — both request bodies as exact
JSON (a full distribution's, and the fallback) and the live fallback on the test nodes."""

from __future__ import annotations

import json
import warnings

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.language import (
    LanguageChunker,
    detect,
    detect_query,
    es_language_fields,
    language_filter,
    prose,
    with_language_field,
)
from esrag.model import Document
from esrag.stores.base import BranchQuery, Filters, IndexMeta
from esrag.stores.elastic import bm25_body, branches_msearch_body, mappings_component_body
from paths import LARAVEL, XQUAD


def _xquad(lang: str) -> tuple[list[str], list[str]]:
    data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
    paras = [p["context"] for a in data for p in a["paragraphs"]]
    questions = [q["question"] for a in data for p in a["paragraphs"] for q in p["qas"]]
    return paras, questions


@pytest.mark.parametrize("lang", ["en", "de", "es"])
def test_xquad_paragraphs_and_questions_are_detected(lang):
    paras, questions = _xquad(lang)
    assert sum(detect(p) == lang for p in paras) / len(paras) >= 0.99
    assert sum(detect_query(q) == lang for q in questions[:300]) / 300 >= 0.97


def test_laravel_chunks_are_english():
    # detection speed (~0.4 ms a chunk) is measured by benchmarks/bench_language.py, not timed here
    chunker = HeaderChunker()
    chunks = [
        c
        for name in ("scheduling.md", "queues.md", "eloquent.md")
        for c in chunker.chunk(Document(path=name, text=(LARAVEL / name).read_text(encoding="utf-8")))
    ]
    found = [detect(c.text) for c in chunks]
    decided = [f for f in found if f]
    assert decided.count("en") / len(decided) >= 0.99


def test_code_and_markup_are_not_prose():
    assert prose("See `Route::get` at https://x.io <b>now</b>\n```php\n$x = new Foo();\n```\n# Title") == "See at now Title"
    assert detect("```php\necho 'Guten Tag, wie geht es Ihnen heute?';\n```") == ""
    assert detect("Hallo") == "" and detect_query("") == ""


def test_language_chunker_labels_chunks_and_short_ones_take_the_document_language():
    text = (
        "# Warteschlangen\n\nWarteschlangen erlauben es, zeitaufwendige Aufgaben wie das Versenden von E-Mails "
        "in den Hintergrund zu verlagern, damit die Anwendung schneller antwortet.\n\n## Beispiel\n\n"
        "```php\ndispatch(new SendMail);\n```\n"
    )
    chunks = LanguageChunker(HeaderChunker(tau_min=1)).chunk(Document(path="q.md", text=text))
    assert len(chunks) >= 2 and {c.metadata["language"] for c in chunks} == {"de"}
    own = LanguageChunker(HeaderChunker()).inner.chunk(Document(path="q.md", text=text))
    own[0].metadata["language"] = "fr"
    assert own[0].metadata["language"] == "fr"  # a record's own language is kept (see label_chunks)


def test_language_filter_resolves_auto():
    assert language_filter(["DE", "de", "auto"], "¿Cuántos puntos dejaron escapar en defensa los Panthers?") == ["de", "es"]
    assert language_filter(["pt-BR", "zh-Hans", "pt"], "x") == ["pt", "zh"]  # site locales are stored by primary subtag
    assert language_filter(["auto"], "ok") == []


def test_es_language_fields_and_query_fields():
    assert es_language_fields(["de", "es"], {"german": True, "spanish": False}) == {"de": "german"}
    with pytest.raises(ValueError, match="no Elasticsearch language analyzer for 'xx'"):
        es_language_fields(["xx"], {})
    fields = {"text": 1.0, "section_path": 2.0}
    assert with_language_field(fields, "de", {"de": "german"}) == {"text": 1.0, "section_path": 2.0, "text.de": 1.0}
    assert with_language_field(fields, "en", {"de": "german"}) == fields
    assert with_language_field({"section_path": 1.0}, "de", {"de": "german"}) == {"section_path": 1.0}


META = IndexMeta("openai:multilingual-e5-small-q4", 384, ["text"], {"text": 1.0})


def test_mapping_body_with_language_subfields_exact():
    """A full distribution (german and spanish analyzers present)."""
    body = mappings_component_body(META, stemming=True, language_fields={"es": "spanish", "de": "german"})
    assert body["template"]["mappings"]["properties"]["text"] == {
        "type": "text",
        "analyzer": "esrag_text",
        "fields": {"de": {"type": "text", "analyzer": "german"}, "es": {"type": "text", "analyzer": "spanish"}},
    }
    assert body["template"]["mappings"]["_meta"]["text_languages"] == {"de": "german", "es": "spanish"}
    assert bm25_body(
        "Wie viele Punkte gab die Verteidigung ab?",
        5,
        Filters(languages=["de"]),
        with_language_field({"text": 1.0}, "de", {"de": "german", "es": "spanish"}),
    ) == {
        "size": 5,
        "_source": False,
        "track_total_hits": False,
        "query": {
            "bool": {
                "must": [
                    {
                        "multi_match": {
                            "query": "Wie viele Punkte gab die Verteidigung ab?",
                            "fields": ["text^1", "text.de^1"],
                            "type": "best_fields",
                            "tie_breaker": 0.3,
                        }
                    }
                ],
                "filter": [{"terms": {"language": ["de"]}}],
            }
        },
    }


def test_mapping_body_fallback_without_language_analyzers_exact():
    """The integ-test node: no language analyzers, so no subfields and queries search text."""
    body = mappings_component_body(META, stemming=False, language_fields={})
    assert body["template"]["mappings"]["properties"]["text"] == {"type": "text", "analyzer": "esrag_text"}
    assert body["template"]["mappings"]["_meta"]["text_languages"] == {}
    fields = with_language_field({"text": 1.0}, "de", {})
    assert bm25_body("Wie viele Punkte?", 5, Filters(), fields)["query"] == {
        "bool": {"must": [{"multi_match": {"query": "Wie viele Punkte?", "fields": ["text^1"], "type": "best_fields", "tie_breaker": 0.3}}]}
    }
    shipped = mappings_component_body(META)  # without language settings: the shipped asset's text field
    assert "fields" not in shipped["template"]["mappings"]["properties"]["text"]
    assert "text_languages" not in shipped["template"]["mappings"]["_meta"]


def test_fan_out_msearch_adapts_fields_per_query():
    subfields = {"de": "german"}

    def fields_for(q, f):
        return with_language_field(f, detect_query(q), subfields)

    body = branches_msearch_body(
        [
            BranchQuery("Wie viele Punkte gab die Verteidigung ab?", None, 5),
            BranchQuery("How many points did the defense give up?", None, 5),
        ],
        {"text": 1.0},
        fields_for,
    )
    assert [b["query"]["bool"]["must"][0]["multi_match"]["fields"] for b in body[1::2]] == [["text^1", "text.de^1"], ["text^1"]]


@pytest.mark.integration
def test_live_fallback_on_the_test_node(es_url, tmp_path):
    """The test node has no german analyzer: the index is made without text.de (warned once),
    records that, and a German query searches text and finds its chunk."""
    import numpy as np

    from esrag.ingest import meta_hash
    from esrag.model import Chunk
    from esrag.stores.elastic import ClusterWarning, ElasticStore

    store = ElasticStore(es_url, index=f"esrag-lang-{es_url[-4:]}", text_languages=["de", "es"])
    store.drop()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store.ensure(IndexMeta("st:x", 2, ["text"], {"text": 1.0}, analyzer="standard"))
        assert any(issubclass(w.category, ClusterWarning) and "no language analyzer for de, es" in str(w.message) for w in caught)
        assert store.analyzer_available("german") is False
        mapping = store._es.indices.get_mapping(index=store.alias).body
        props = next(iter(mapping.values()))["mappings"]
        assert "fields" not in props["properties"]["text"] and props["_meta"]["text_languages"] == {}
        chunks = [
            Chunk(id="de1", text="Die Verteidigung der Panthers gab nur 308 Punkte ab.", source_path="a", metadata={"language": "de"}),
            Chunk(id="en1", text="The Broncos won the game.", source_path="b", metadata={"language": "en"}),
        ]
        store.write(chunks, np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32), [meta_hash(c) for c in chunks])
        store.refresh()
        assert store.query_fields("Wie viele Punkte gab die Verteidigung ab?", {"text": 1.0}) == {"text": 1.0}
        assert [i for i, _ in store.bm25("Punkte Verteidigung", 5, Filters(), {"text": 1.0})] == ["de1"]
        assert [i for i, _ in store.bm25("Panthers Broncos", 5, Filters(languages=["en"]), {"text": 1.0})] == ["en1"]
        assert store.get(["de1"])[0].metadata["language"] == "de"
    finally:
        store.drop()
        store.close()
