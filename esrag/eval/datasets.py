"""Evaluation datasets, loaded into one in-memory form: documents as Markdown, questions, gold.

Four formats (``KIND:PATH`` on the command line); any file whose name ends in ``.gz`` is read
as gzip:

* ``qasper`` — the official Qasper JSON (Dasigi et al., 2021; seed 000 §4.2, App. J "Qasper").
  Each paper becomes one Markdown document (:func:`qasper_markdown`). A question keeps only
  text evidence: strings starting with ``FLOAT SELECTED`` (figures, tables) and section-path
  strings (containing ``:::``) are dropped, and annotators who marked the question
  unanswerable are ignored. The union of the remaining evidence over annotators is the
  primary gold (``evidence``); each annotator's own list is kept too (``annotator_evidence``).
  Questions left without text evidence are dropped. Retrieval is per paper: each paper is its
  own pool and its own bootstrap cluster.
* ``beir`` — a BEIR folder: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl``
  (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``; a
  header line is allowed). Gold is chunk-free: the documents with score > 0 (their grade feeds
  nDCG); their body text is also the evidence for the budgeted metrics. One pool (the corpus).
* ``squad`` — SQuAD v1.1 JSON (XQuAD). Each paragraph is a document; a question's gold is its
  paragraph (as document and as evidence). One pool.
* ``spans`` — a Markdown tree plus questions JSONL with gold spans: one JSON object per line,
  ``{"id", "question", "gold": [{"file", "start", "end"}], "cluster"?}``. ``file`` is relative
  to the tree root; ``start``/``end`` are **character** offsets (Python ``str`` indices, not
  bytes) into the file's UTF-8-decoded text as on disk (no newline translation; a leading
  byte-order mark is not counted). An optional ``"text"`` in a span must equal that slice,
  which catches byte offsets. ``PATH`` is the questions file, or a folder holding
  ``questions.jsonl[.gz]``; the tree is ``docs/`` beside it when that exists, else its folder.
  Gold documents are the span files. One pool; clusters are questions unless given.
* ``docs`` — documentation questions over whole sites, gold by page and section heading
  (:mod:`esrag.eval.docs`, loaded by :func:`esrag.eval.docs.load_docs`): one pool per corpus.

Raises :class:`~esrag.errors.ConfigError` with the file and the way out on malformed input.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError, SourceError
from esrag.sources import read_text

KINDS = ("qasper", "beir", "squad", "spans", "docs")
POOL_ALL = "all"
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")


@dataclass(slots=True)
class EvalDocument:
    """One document to chunk and index.

    Attributes:
        id: the dataset's own id (Qasper paper id, BEIR ``_id``, ``"Title#3"``, file path).
        path: the ``Document.path`` chunkers see (unique POSIX path ending in ``.md``).
        text: the document as Markdown.
        title: the document title when the dataset gives one (else chunkers derive it).
    """

    id: str
    path: str
    text: str
    title: str | None = None


@dataclass(slots=True)
class Question:
    """One question with its gold.

    Attributes:
        id: question id (unique within the dataset).
        text: the question as asked.
        pool: id of the candidate pool searched for it (a Qasper paper id, or ``"all"``).
        cluster: bootstrap cluster (paper id on Qasper, else the question id).
        evidence: gold evidence texts, matched on word 5-grams (Qasper: union over annotators).
        annotator_evidence: each annotator's own evidence list (Qasper only, else ``[]``).
        gold_docs: chunk-free gold, document id -> relevance grade (> 0); empty on Qasper.
        gold_sections: gold sections (:class:`esrag.eval.docs.GoldSection`; ``docs`` only):
            ranking metrics are then over sections (:func:`esrag.eval.docs.section_metrics`).
    """

    id: str
    text: str
    pool: str
    cluster: str
    evidence: list[str] = field(default_factory=list)
    annotator_evidence: list[list[str]] = field(default_factory=list)
    gold_docs: dict[str, float] = field(default_factory=dict)
    gold_sections: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class EvalDataset:
    """Documents, questions and pools of one dataset.

    Attributes:
        kind: ``qasper``, ``beir``, ``squad`` or ``spans``; ``name``: a short label.
        documents: every document, in load order.
        questions: every kept question, in load order.
        pools: pool id -> ids of the documents searched for that pool's questions.
        per_document: True when each document is its own pool (Qasper), False when pooled.
        chunk_pool: ``chunk_pool(chunker, pool) -> chunks`` when the pool's chunks are made as
            ``esrag ingest`` makes them from a tree (``docs``); None: each document is chunked.
    """

    kind: str
    name: str
    documents: list[EvalDocument]
    questions: list[Question]
    pools: dict[str, list[str]]
    per_document: bool = False
    chunk_pool: Callable[[Any, str], list[Any]] | None = None

    def documents_of(self, pool: str) -> list[EvalDocument]:
        """The documents of ``pool``, in load order."""
        wanted = set(self.pools[pool])
        return [d for d in self.documents if d.id in wanted]

    def questions_of(self, pool: str) -> list[Question]:
        """The questions searched in ``pool``, in load order."""
        return [q for q in self.questions if q.pool == pool]

    def doc_id_by_path(self) -> dict[str, str]:
        """``Document.path`` -> document id (maps retrieved chunks back to gold documents)."""
        return {d.path: d.id for d in self.documents}


# -- dispatch ------------------------------------------------------------------------------


def parse_dataset_arg(value: str) -> tuple[str, str]:
    """``"qasper:PATH"`` -> ``("qasper", "PATH")``.

    Raises:
        ConfigError: no ``KIND:`` prefix or an unknown kind (lists the valid ones).
    """
    kind, sep, path = value.partition(":")
    if not sep or kind not in KINDS or not path:
        raise ConfigError(f"--dataset wants KIND:PATH with KIND one of {', '.join(KINDS)}; got {value!r}")
    return kind, path


def load_dataset(kind: str, path: str | Path, limit: int | None = None, split: str = "test") -> EvalDataset:
    """Load a dataset of ``kind`` from ``path``.

    Args:
        kind: one of :data:`KINDS`.
        path: file or folder (see the module docstring); ``.gz`` files are read as gzip.
        limit: keep only the first N pools on per-document datasets (Qasper papers), or the
            first N questions on pooled ones (the corpus stays whole). None keeps everything.
        split: the BEIR qrels split (``qrels/<split>.tsv``).

    Raises:
        ConfigError: unknown kind, missing file, or malformed content (names the file).
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"dataset path {path} does not exist; give KIND:PATH to an existing file or folder")
    loaders: dict[str, Callable[[Path, int | None], EvalDataset]] = {
        "qasper": load_qasper,
        "beir": lambda p, n: load_beir(p, n, split),
        "squad": load_squad,
        "spans": load_spans,
    }
    if kind == "docs":
        raise ConfigError("docs datasets are loaded by esrag.eval.docs.load_docs (they need the corpora root)")
    if kind not in loaders:
        raise ConfigError(f"unknown dataset kind {kind!r}; valid: {', '.join(KINDS)}")
    return loaders[kind](path, limit)


def open_text(path: Path) -> io.TextIOBase:
    """A UTF-8 text stream of ``path``; gzip-decompressed when the name ends in ``.gz``."""
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _read_json(path: Path) -> Any:
    try:
        with open_text(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read JSON from {path}: {exc}") from exc


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        with open_text(path) as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ConfigError(f"{path}:{n}: not a JSON object ({exc})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


read_jsonl = _read_jsonl


def _find(folder: Path, name: str) -> Path:
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise ConfigError(f"{folder} has no {name} (or {name}.gz)")


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


_SAFE = re.compile(r"[^\w.-]+")


def _paths_for(ids: list[str]) -> list[str]:
    """Unique ``.md`` paths derived from document ids (safe characters only)."""
    out: list[str] = []
    seen: set[str] = set()
    for i, doc_id in enumerate(ids):
        base = _SAFE.sub("_", doc_id).strip("._")[:80] or f"doc{i}"
        path = f"{base}.md"
        if path in seen:
            path = f"{base}-{i}.md"
        seen.add(path)
        out.append(path)
    return out


# -- Qasper --------------------------------------------------------------------------------

_BLOCK_START = re.compile(r"^(?:#{1,6}(?:\s|$)|[-+*](?:\s|$)|\d{1,9}[.)](?:\s|$)|>|`{3,}|~{3,}|<|([-*_])(?:\s*\1){2,}\s*$|=+\s*$)")


def markdown_paragraph(text: str) -> str:
    """One Qasper paragraph as one Markdown paragraph: line breaks become spaces, and a leading
    character that would open another block (``#``, ``-``, ``1.``, ``>``, fences, ``<``,
    thematic breaks) is backslash-escaped, so the text stays a paragraph. Words are unchanged."""
    line = " ".join(text.split())
    m = _BLOCK_START.match(line)
    if not m:
        return line
    ordered = re.match(r"^(\d{1,9})([.)])", line)
    if ordered:
        return f"{ordered.group(1)}\\{line[len(ordered.group(1)) :]}"
    return "\\" + line


def qasper_markdown(paper: dict[str, Any]) -> str:
    """A Qasper paper as Markdown.

    The title is the level-1 header; the abstract follows under ``## Abstract``; each section
    ``"Parent ::: Child"`` opens the headers of its path that differ from the previous
    section's (``## Parent``, ``### Child``; levels beyond 6 stay at 6); paragraphs are
    paragraphs (:func:`markdown_paragraph`), separated by blank lines. Empty paragraphs are
    dropped; a section without a name continues the current one.
    """
    parts = [f"# {' '.join(paper.get('title', '').split()) or 'Untitled'}"]
    abstract = " ".join((paper.get("abstract") or "").split())
    if abstract:
        parts += ["## Abstract", markdown_paragraph(abstract)]
    open_path: list[str] = []
    for section in paper.get("full_text") or []:
        name = section.get("section_name") or ""
        path = [" ".join(p.split()) for p in name.split(":::") if p.strip()]
        if path:
            same = 0
            while same < min(len(path), len(open_path)) and path[same] == open_path[same]:
                same += 1
            if same == len(path):  # the same section again: reopen its own header
                same -= 1
            for depth in range(same, len(path)):
                parts.append(f"{'#' * min(depth + 2, 6)} {path[depth]}")
            open_path = path
        parts += [markdown_paragraph(p) for p in section.get("paragraphs") or [] if p and p.strip()]
    return "\n\n".join(parts) + "\n"


def _text_evidence(evidence: list[str]) -> list[str]:
    """Evidence that is running text: not a figure/table (``FLOAT SELECTED``), not a section
    path (contains ``:::``), not blank."""
    return [e for e in evidence if e.strip() and not e.startswith("FLOAT SELECTED") and ":::" not in e]


def qasper_question(q: dict[str, Any], paper_id: str) -> Question | None:
    """A :class:`Question` with text evidence only, or None when none remains."""
    per_annotator: list[list[str]] = []
    for answer in q.get("answers") or []:
        a = answer.get("answer") or {}
        if a.get("unanswerable"):
            continue
        ev = _dedupe(_text_evidence(a.get("evidence") or []))
        if ev:
            per_annotator.append(ev)
    union = _dedupe([e for ev in per_annotator for e in ev])
    if not union:
        return None
    return Question(q["question_id"], q["question"], paper_id, paper_id, union, per_annotator)


def load_qasper(path: Path, limit: int | None = None) -> EvalDataset:
    """Load official Qasper JSON (``{paper_id: paper}``); see the module docstring."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not Qasper JSON (expected an object of papers keyed by id)")
    ids = list(data)[: limit if limit is not None else None]
    docs: list[EvalDocument] = []
    questions: list[Question] = []
    for paper_id, doc_path in zip(ids, _paths_for(ids)):
        paper = data[paper_id]
        docs.append(EvalDocument(paper_id, doc_path, qasper_markdown(paper), " ".join(paper.get("title", "").split()) or None))
        questions += [q for q in (qasper_question(x, paper_id) for x in paper.get("qas") or []) if q]
    pools = {d.id: [d.id] for d in docs}
    return EvalDataset("qasper", _stem(path), docs, questions, pools, per_document=True)


# -- BEIR ----------------------------------------------------------------------------------


def beir_markdown(title: str, text: str) -> str:
    """A BEIR document as Markdown: ``# title`` (when there is one), a blank line, the text."""
    title = " ".join((title or "").split())
    return f"# {title}\n\n{text.strip()}\n" if title else f"{text.strip()}\n"


def _read_qrels(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    with open_text(path) as f:
        for n, row in enumerate(csv.reader(f, delimiter="\t"), 1):
            if not row or (n == 1 and not _is_number(row[-1])):
                continue
            if len(row) < 3:
                raise ConfigError(f"{path}:{n}: want query-id, corpus-id, score separated by tabs")
            qid, did, score = row[0], row[1], float(row[-1])
            if score > 0:
                out.setdefault(qid, {})[did] = score
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def load_beir(path: Path, limit: int | None = None, split: str = "test") -> EvalDataset:
    """Load a BEIR folder (corpus, queries, ``qrels/<split>.tsv``); pooled over the corpus."""
    if not path.is_dir():
        raise ConfigError(f"beir:PATH wants a folder with corpus.jsonl, queries.jsonl and qrels/; {path} is a file")
    rows = list(_read_jsonl(_find(path, "corpus.jsonl")))
    ids = [str(r["_id"]) for r in rows]
    docs = [
        EvalDocument(i, p, beir_markdown(r.get("title", ""), r.get("text", "")), r.get("title") or None)
        for i, p, r in zip(ids, _paths_for(ids), rows)
    ]
    body = {str(r["_id"]): r.get("text", "") for r in rows}
    queries = {str(r["_id"]): r["text"] for r in _read_jsonl(_find(path, "queries.jsonl"))}
    qrels = _read_qrels(_find(path / "qrels", f"{split}.tsv"))
    questions = []
    for qid, gold in qrels.items():
        gold = {d: g for d, g in gold.items() if d in body}
        if qid in queries and gold:
            questions.append(Question(qid, queries[qid], POOL_ALL, qid, [body[d] for d in gold if body[d].strip()], [], gold))
    questions = questions[: limit if limit is not None else None]
    return EvalDataset("beir", path.name, docs, questions, {POOL_ALL: ids})


# -- SQuAD ---------------------------------------------------------------------------------


def load_squad(path: Path, limit: int | None = None) -> EvalDataset:
    """Load SQuAD v1.1 JSON; each paragraph is a document (id ``"Title#n"``), pooled."""
    data = _read_json(path)
    if not isinstance(data, dict) or "data" not in data:
        raise ConfigError(f"{path} is not SQuAD JSON (no top-level 'data')")
    docs: list[EvalDocument] = []
    questions: list[Question] = []
    for article in data["data"]:
        title = article.get("title", "")
        for n, para in enumerate(article.get("paragraphs") or []):
            doc_id = f"{title}#{n}"
            docs.append(EvalDocument(doc_id, "", para["context"].strip() + "\n", title.replace("_", " ") or None))
            for qa in para.get("qas") or []:
                questions.append(Question(str(qa["id"]), qa["question"], POOL_ALL, str(qa["id"]), [para["context"]], [], {doc_id: 1.0}))
    for doc, doc_path in zip(docs, _paths_for([d.id for d in docs])):
        doc.path = doc_path
    questions = questions[: limit if limit is not None else None]
    return EvalDataset("squad", _stem(path), docs, questions, {POOL_ALL: [d.id for d in docs]})


# -- spans ---------------------------------------------------------------------------------


def _spans_layout(path: Path) -> tuple[Path, Path]:
    if path.is_dir():
        qfile = next((c for c in (path / "questions.jsonl", path / "questions.jsonl.gz") if c.is_file()), None)
        if qfile is None:
            raise ConfigError(f"{path} has no questions.jsonl; spans:PATH wants the questions file or its folder")
        folder = path
    else:
        qfile, folder = path, path.parent
    return qfile, (folder / "docs" if (folder / "docs").is_dir() else folder)


def _markdown_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(MARKDOWN_SUFFIXES))


def load_spans(path: Path, limit: int | None = None) -> EvalDataset:
    """Load a Markdown tree with a questions JSONL of gold character spans; pooled."""
    qfile, root = _spans_layout(path)
    docs: list[EvalDocument] = []
    for f in _markdown_files(root):
        rel = f.relative_to(root).as_posix()
        try:
            text = read_text(f, rel, 50_000_000)
        except SourceError as exc:
            raise ConfigError(f"cannot read {f}: {exc.reason}") from exc
        docs.append(EvalDocument(rel, rel, text))
    texts = {d.id: d.text for d in docs}
    questions: list[Question] = []
    for n, row in enumerate(_read_jsonl(qfile), 1):
        evidence, gold = [], {}
        for span in row.get("gold") or []:
            evidence.append(_span_text(texts, span, f"{qfile}:{n}"))
            gold[span["file"]] = 1.0
        qid = str(row.get("id", n))
        questions.append(Question(qid, row["question"], POOL_ALL, str(row.get("cluster", qid)), evidence, [], gold))
    questions = questions[: limit if limit is not None else None]
    return EvalDataset("spans", _stem(qfile), docs, questions, {POOL_ALL: [d.id for d in docs]})


def _span_text(texts: dict[str, str], span: dict[str, Any], where: str) -> str:
    file, start, end = span.get("file"), span.get("start"), span.get("end")
    if file not in texts:
        raise ConfigError(f"{where}: gold file {file!r} is not a Markdown file of the tree")
    text = texts[file]
    if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
        raise ConfigError(
            f"{where}: span [{start}, {end}) is outside {file} ({len(text)} characters); "
            "offsets must count characters of the decoded text, not bytes"
        )
    got = text[start:end]
    if "text" in span and span["text"] != got:
        raise ConfigError(
            f"{where}: span [{start}, {end}) of {file} reads {got[:40]!r}, not {span['text'][:40]!r}; "
            "offsets must count characters of the decoded text, not bytes"
        )
    return got


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


stem = _stem
