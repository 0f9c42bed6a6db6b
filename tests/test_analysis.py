"""BM25 text analysis (esrag.analysis): English stop words and stemming, alike on both stores."""

from __future__ import annotations

import numpy as np
import pytest

from esrag.analysis import english_stopwords, es_analysis, query_terms, sqlite_tokenizer
from esrag.errors import ConfigError, EmbedderMismatch
from esrag.stores.base import Filters, IndexMeta
from esrag.stores.sqlite import SQLiteStore
from store_suite import make_chunk, unit

FIELDS = {"text": 1.0}


def test_query_terms_drop_question_words_but_never_everything():
    assert query_terms("What datasets do they use for training?", "english") == ["datasets", "use", "training"]
    assert query_terms("What is this?", "english") == ["what", "is", "this"]  # nothing else: keep the words
    assert query_terms("What is this?", "standard") == ["what", "is", "this"]
    assert query_terms("Cache the cache", "standard") == ["cache", "the"]
    assert {"what", "which", "how", "do", "they", "the", "is"} <= english_stopwords()
    assert "cache" not in english_stopwords() and "not" in english_stopwords()


def test_tokenizer_and_elasticsearch_bodies():
    assert sqlite_tokenizer("english") == "porter unicode61" and sqlite_tokenizer("standard") == "unicode61"
    with pytest.raises(ConfigError, match="valid: english, standard"):
        sqlite_tokenizer("french")
    full = es_analysis("english", stemming=True)
    assert full["analyzer"]["esrag_text"] == {
        "type": "custom",
        "tokenizer": "standard",
        "filter": ["lowercase", "esrag_stop", "porter_stem"],
    }
    assert full["filter"]["esrag_stop"]["stopwords"] == sorted(english_stopwords())
    core = es_analysis("english", stemming=False)
    assert core == {"analyzer": {"esrag_text": {"type": "standard", "stopwords": sorted(english_stopwords())}}}
    assert es_analysis("standard", stemming=True) == {"analyzer": {"esrag_text": {"type": "standard"}}}


def store(tmp_path, analyzer):
    s = SQLiteStore(tmp_path / f"{analyzer}.db")
    s.ensure(IndexMeta("test:unit", 8, ["text"], FIELDS, analyzer=analyzer))
    chunks = [
        make_chunk(0, "The scheduler runs scheduled tasks every minute."),
        make_chunk(1, "What is a queue? It is where jobs wait."),
        make_chunk(2, "Blade renders views."),
    ]
    s.write(chunks, np.stack([unit(0), unit(1), unit(2)]), ["m"] * 3)
    return s


def test_english_index_stems_and_ignores_stop_words(tmp_path):
    s = store(tmp_path, "english")
    assert [i for i, _ in s.bm25("schedule a task", 3, Filters(), FIELDS)] == ["docs-a.md-0"]
    # "what is it" are stop words: only "queues" is searched, and it stems to "queue"
    assert [i for i, _ in s.bm25("what is it with queues", 3, Filters(), FIELDS)] == ["docs-a.md-1"]
    assert s.stats()["tokenizer"] == "porter unicode61"


def test_standard_index_matches_words_as_written(tmp_path):
    s = store(tmp_path, "standard")
    assert s.bm25("schedule", 3, Filters(), FIELDS) == []
    hits = [i for i, _ in s.bm25("what is it with queues", 3, Filters(), FIELDS)]
    assert hits[0] == "docs-a.md-1" and s.stats()["tokenizer"] == "unicode61"


def test_analyzer_is_fixed_per_index(tmp_path):
    s = store(tmp_path, "english")
    with pytest.raises(EmbedderMismatch, match="'english' analyzer.*asks for 'standard'"):
        s.ensure(IndexMeta("test:unit", 8, ["text"], FIELDS, analyzer="standard"))
