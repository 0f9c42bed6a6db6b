"""Text analysis for BM25, the same on both stores: analyzers ``english`` and ``standard``.

``english`` (the default): lowercased Unicode word tokens, Porter stemming, and English stop
words (``esrag/data/stopwords_en.txt``) removed. ``standard``: lowercased word tokens only.

How each store runs it:
  * SQLite FTS5: tokenizer ``porter unicode61`` (``unicode61`` for standard); stop words are
    dropped from the query (FTS5 has no stop filter, so they stay indexed but are never searched).
  * Elasticsearch: a custom analyzer ``esrag_text`` on every text field — ``standard`` tokenizer,
    ``lowercase``, a ``stop`` filter with the same list and ``porter_stem`` — where the cluster has
    the analysis-common token filters (every full distribution); a cluster without them (the
    Maven test node) gets the core ``standard`` analyzer with the same stop list, i.e. no
    stemming, and ``esrag doctor`` says so.
Both stemmers are Martin Porter's original algorithm (FTS5's ``porter``, Lucene's
``PorterStemFilter``), so a term stems alike on both stores.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

from esrag.errors import ConfigError

ANALYZERS = ("english", "standard")
_WORD = re.compile(r"\w+", re.UNICODE)


def check_analyzer(name: str) -> str:
    """``name`` if it is a known analyzer.

    Raises:
        ConfigError: unknown analyzer (lists the valid ones).
    """
    if name not in ANALYZERS:
        raise ConfigError(f"unknown analyzer {name!r}; valid: {', '.join(ANALYZERS)}")
    return name


@functools.cache
def english_stopwords() -> frozenset[str]:
    """The English stop list (lowercase words)."""
    text = (resources.files("esrag") / "data" / "stopwords_en.txt").read_text(encoding="utf-8")
    return frozenset(w.strip() for w in text.splitlines() if w.strip() and not w.startswith("#"))


def query_terms(query: str, analyzer: str) -> list[str]:
    """The distinct lowercase word terms of ``query`` that BM25 searches, in order.

    With ``english``, stop words are dropped — unless the query holds nothing else, in which
    case its words are kept (so "what is this" still searches something).
    """
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    if analyzer == "english":
        stop = english_stopwords()
        content = [w for w in words if w not in stop]
        return content or words
    return words


def sqlite_tokenizer(analyzer: str) -> str:
    """The FTS5 ``tokenize`` option for ``analyzer``."""
    return "porter unicode61" if check_analyzer(analyzer) == "english" else "unicode61"


def es_analysis(analyzer: str, stemming: bool) -> dict[str, Any]:
    """The ``settings.analysis`` body defining analyzer ``esrag_text`` for ``analyzer``.

    Args:
        stemming: whether the cluster has the ``porter_stem`` and ``stop`` token filters
            (analysis-common); without them the core ``standard`` analyzer carries the stop list.
    """
    if check_analyzer(analyzer) == "standard":
        return {"analyzer": {"esrag_text": {"type": "standard"}}}
    stop = sorted(english_stopwords())
    if not stemming:
        return {"analyzer": {"esrag_text": {"type": "standard", "stopwords": stop}}}
    return {
        "filter": {"esrag_stop": {"type": "stop", "stopwords": stop}},
        "analyzer": {"esrag_text": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase", "esrag_stop", "porter_stem"]}},
    }
