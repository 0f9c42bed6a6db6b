"""The documentation question set: questions over whole documentation sites, gold by section.

``docs:PATH`` — ``PATH`` is a JSONL file (``eval/docs_questions.jsonl``), one question a line::

    {"id": "requests-01", "corpus": "requests-docs", "question": "my request hangs forever",
     "page": "docs/user/quickstart.rst", "section": ["Timeouts"],
     "evidence": ["Failure to do so can cause your program to hang indefinitely"],
     "alternates": ["..."]}

``corpus`` is a folder under the corpora root (``[dataset] root`` in the eval config; by default
the first of ``<PATH's folder>/corpora`` and ``shared/data/corpora`` beside any ancestor of the
file). ``page`` (and each of ``alternates``) is a source path relative to that folder;
``section`` is the tail of the gold section's heading path (the shortest tail unique in the
page); ``evidence`` holds verbatim sentences of the section, matched on word 5-grams exactly as
Qasper's evidence (:mod:`esrag.eval.metrics`), which gives rec@Bt.

Each corpus is one pool, and is chunked the way ``esrag ingest`` chunks the tree (the same file
discovery with ``ingest.include``/``exclude``, the generator's front matter and drafts through
:class:`esrag.sites.Site`, include directives resolved inside the corpus, the arm's chunker):
:func:`chunk_corpus`. Gold never names URLs, anchors or chunk ids, so it survives changes to
them. A ranked chunk is *in* the gold section (:func:`in_section`) when its source path is the
page or an alternate and the ``section`` headings occur, in order, in its section path — so a
chunk of a subsection counts. Headings are compared as words (NFKC, case-folded runs of letters
and digits) after dropping a trailing attribute list (``{#id}``, ``{ #id }``) and HTML tags.

Ranking metrics are over *sections*, not chunks (:func:`section_ranking`): hits are grouped by
(source path, section path) keeping each section's first rank, as a result page that shows one
line per section would, so a finer chunking is not penalised for splitting a section.

Raises :class:`~esrag.errors.ConfigError` naming the file and line on malformed input.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esrag.chunking.base import Chunker
from esrag.config import Settings, load_settings
from esrag.errors import ConfigError, EsragError
from esrag.eval.datasets import EvalDataset, EvalDocument, Question, read_jsonl, stem
from esrag.eval.metrics import words
from esrag.model import SECTION_SEPARATOR, Chunk, Document
from esrag.sites import resolve_site
from esrag.sources import discover, load_document

RANK_CUTOFFS = (1, 5, 10)
"""k of the section-level recall@k reported for documentation questions."""

_ATTRS = re.compile(r"\s*\{[^{}]*\}\s*$")
_TAGS = re.compile(r"<[^>]*>")


@dataclass(frozen=True, slots=True)
class GoldSection:
    """Where a question is answered: ``pages`` (source paths relative to the corpus root, the
    page first, then its alternates) and ``headings`` (tail of the section's heading path)."""

    pages: tuple[str, ...]
    headings: tuple[str, ...]


def heading_words(title: str) -> tuple[str, ...]:
    """A heading as words: trailing ``{#id}`` attribute list, HTML tags and backticks dropped
    (`` `.await`ing `` reads ``awaiting`` with or without its code marks), then
    :func:`esrag.eval.metrics.words` (so case and punctuation do not matter)."""
    return tuple(words(_TAGS.sub(" ", _ATTRS.sub("", title)).replace("`", "")))


def in_section(chunk: Chunk, gold: GoldSection) -> bool:
    """Whether ``chunk`` lies in the gold section: its source path is one of ``gold.pages`` and
    ``gold.headings`` occur in its section path in order (a chunk of a subsection counts)."""
    if chunk.source_path not in gold.pages:
        return False
    path = [heading_words(h) for h in chunk.section_path.split(SECTION_SEPARATOR)]
    want = [heading_words(h) for h in gold.headings]
    at = 0
    for level in path:
        if at < len(want) and level == want[at]:
            at += 1
    return at == len(want)


def section_ranking(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The first chunk of each distinct (source path, section path), in rank order."""
    seen: set[tuple[str, str]] = set()
    out = []
    for c in chunks:
        key = (c.source_path, c.section_path)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def section_metrics(chunks: Sequence[Chunk], golds: Sequence[GoldSection]) -> dict[str, float]:
    """``recall@1``/``@5``/``@10`` (1.0 when a gold section is among the first k distinct
    sections, else 0.0) and ``mrr`` (1 / rank of the first gold section, 0 when none is ranked)
    of one ranking, in [0, 1]."""
    sections = section_ranking(chunks)
    first = next((r for r, c in enumerate(sections, 1) if any(in_section(c, g) for g in golds)), None)
    out = {f"recall@{k}": 1.0 if first is not None and first <= k else 0.0 for k in RANK_CUTOFFS}
    out["mrr"] = 1.0 / first if first else 0.0
    return out


def default_root(questions: Path) -> Path | None:
    """The corpora root when the config names none: ``corpora/`` beside the questions file, else
    ``$ESRAG_SHARED_DIR/data/corpora`` (the shared data folder, as the tests and benchmarks find
    it), else ``shared/data/corpora`` beside the nearest ancestor that has it (the project's layout)."""
    start = questions.resolve().parent
    if (start / "corpora").is_dir():
        return start / "corpora"
    shared = os.environ.get("ESRAG_SHARED_DIR")
    if shared and (Path(shared) / "data" / "corpora").is_dir():
        return Path(shared) / "data" / "corpora"
    for folder in (start, *start.parents):
        if (folder / "shared" / "data" / "corpora").is_dir():
            return folder / "shared" / "data" / "corpora"
    return None


def read_questions(path: Path) -> list[dict[str, Any]]:
    """The question lines of ``path``, checked for the keys they need.

    Raises:
        ConfigError: unreadable file, bad JSON, a missing or mistyped key, a duplicate id
            (names the file and line).
    """
    rows: list[dict[str, Any]] = []
    ids: set[str] = set()
    for n, row in enumerate(read_jsonl(path), 1):
        where = f"{path}:{n}"
        for key, kind in (("id", str), ("corpus", str), ("question", str), ("page", str), ("section", list), ("evidence", list)):
            if not isinstance(row.get(key), kind) or not row[key]:
                raise ConfigError(f"{where}: {key!r} must be a non-empty {kind.__name__}")
        if not all(isinstance(x, str) and x.strip() for x in [*row["section"], *row["evidence"], *row.get("alternates", [])]):
            raise ConfigError(f"{where}: 'section', 'evidence' and 'alternates' hold non-empty strings")
        if row["id"] in ids:
            raise ConfigError(f"{where}: duplicate question id {row['id']!r}")
        ids.add(row["id"])
        row["_line"] = n
        rows.append(row)
    return rows


def chunk_corpus(folder: Path, corpus: str, chunker: Chunker, settings: Settings, problems: list[str] | None = None) -> list[Chunk]:
    """Every chunk of the tree ``folder`` as ``esrag ingest`` makes it: files found by
    :func:`esrag.sources.discover` with ``settings.ingest`` patterns, each read, given its
    front matter by the tree's :class:`~esrag.sites.Site` (a draft or unlisted page is left out,
    as ingest leaves it out), chunked with include directives resolved inside the tree, then
    given anchors and URLs. A file that fails is skipped and described in ``problems``
    (``"path: reason"``), as ingest reports it without stopping."""
    site = resolve_site(folder)
    out: list[Chunk] = []
    for src in discover(folder, settings.ingest.include, settings.ingest.exclude):
        try:
            doc: Document = load_document(src, corpus, settings.ingest.max_file_bytes)
            if site.prepare(doc):
                continue
            if src.root is not None:
                doc.source, doc.root = str(src.path), str(src.root)
            chunks = chunker.chunk(doc)
            site.apply(doc, chunks)
        except EsragError as exc:
            if problems is not None:
                problems.append(f"{src.rel}: {exc}")
            continue
        out.extend(chunks)
    return out


def load_docs(path: Path, limit: int | None = None, root: Path | None = None, settings: Settings | None = None) -> EvalDataset:
    """Load the documentation question set at ``path`` (see the module docstring) as an
    :class:`~esrag.eval.datasets.EvalDataset` of kind ``docs``: one pool per corpus, every
    question its own bootstrap cluster, ``chunk_pool(chunker, corpus)`` chunking a corpus like
    ingest (:func:`chunk_corpus`). ``limit`` keeps the first N questions (every corpus they
    use stays whole).

    Raises:
        ConfigError: no corpora root, a corpus folder or gold page that does not exist, an
            evidence sentence not in its page, or a malformed line (names the file and line).
    """
    root = root or default_root(path)
    if root is None or not root.is_dir():
        raise ConfigError(
            f'{path}: no corpora folder found; set [dataset] root = "PATH" in the eval config '
            "(the folder holding the corpora the questions name)"
        )
    settings = settings or load_settings()
    rows = read_questions(path)[: limit if limit is not None else None]
    corpora = list(dict.fromkeys(r["corpus"] for r in rows))
    documents: list[EvalDocument] = []
    pools: dict[str, list[str]] = {}
    texts: dict[tuple[str, str], str] = {}
    for corpus in corpora:
        folder = root / corpus
        if not folder.is_dir():
            raise ConfigError(f"{path}: corpus folder {folder} does not exist")
        pools[corpus] = []
        for src in discover(folder, settings.ingest.include, settings.ingest.exclude):
            text = src.path.read_text(encoding="utf-8", errors="replace")
            texts[(corpus, src.rel)] = text
            documents.append(EvalDocument(f"{corpus}/{src.rel}", src.rel, text))
            pools[corpus].append(f"{corpus}/{src.rel}")
    questions = [_question(r, path, texts) for r in rows]

    def chunk_pool(chunker: Chunker, corpus: str) -> list[Chunk]:
        return chunk_corpus(root / corpus, corpus, chunker, settings)

    return EvalDataset("docs", stem(path), documents, questions, pools, chunk_pool=chunk_pool)


def _question(row: dict[str, Any], path: Path, texts: dict[tuple[str, str], str]) -> Question:
    where = f"{path}:{row['_line']}"
    pages = (row["page"], *row.get("alternates", []))
    for page in pages:
        text = texts.get((row["corpus"], page))
        if text is None:
            raise ConfigError(f"{where}: gold page {page!r} is not an ingested file of corpus {row['corpus']!r}")
        body = " " + " ".join(words(text)) + " "
        for ev in row["evidence"]:
            if " " + " ".join(words(ev)) + " " not in body:
                raise ConfigError(f"{where}: evidence {ev[:40]!r}… is not in {row['corpus']}/{page}")
    gold = GoldSection(tuple(pages), tuple(row["section"]))
    return Question(row["id"], row["question"], row["corpus"], row["id"], list(row["evidence"]), [], {}, gold_sections=[gold])
