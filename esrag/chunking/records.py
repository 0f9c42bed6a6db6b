"""A record source: JSONL or CSV files of short, self-contained records (support tickets,
messages), one record -> one chunk, never expanded (seed 001: "one ticket to one chunk, no
expansion of any kind"; "any chunk boundary drawn at 512 tokens falls in the middle of the fourth
ticket").

``esrag ingest tickets.jsonl --corpus tickets --records`` reads the file with
:class:`RecordsChunker`. Field names come from :class:`~esrag.config.RecordFields`
(``[corpora.NAME.records]`` in esrag.toml): ``id``, ``text``, ``title``, ``date``,
``authority``, ``superseded_by``, ``language`` and extra ``metadata`` fields.

Each record becomes one chunk of the file:

* ``text``: the title (when present), a blank line, then the record's text — the record whole;
  ``tokens`` is its cl100k count.
* ``section_path``: the record's id (what an answer cites, e.g. ``T-1042``); ``doc_title``: its
  title.
* ``start_line``/``end_line``: the record's line span in the file (one line per JSONL record; a
  CSV row may span several lines when a quoted field holds newlines).
* ``metadata``: ``record_id``; ``effective_date`` (from the date field, ISO ``YYYY-MM-DD...``),
  ``authority``, ``superseded_by`` and ``language`` when present (the store keeps them as
  filterable fields); the extra fields as they are.

Chunk ids derive from corpus, file path and record id, so they survive edits to other records;
records missing from a re-ingested file are deleted like vanished chunks. Blank JSONL lines are
skipped. A record without an id is identified by its line number (``line-N``). A bad record (a
line that is not a JSON object, a CSV row whose field count differs from the header's, a record
without text) is skipped and reported as an ingest warning with its line (and row) number; the
rest of the file is indexed. Of records sharing an id the last one wins; the duplicates are
reported.
"""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from esrag.chunking.base import Chunker, Piece, finalize
from esrag.config import RecordFields
from esrag.errors import SourceError
from esrag.model import Chunk, Document

if TYPE_CHECKING:
    from esrag.config import ChunkingSettings

FORMATS = ("jsonl", "csv")


def record_format(path: str) -> str:
    """``jsonl`` for ``.jsonl``/``.ndjson``/``.json`` files, ``csv`` for ``.csv``/``.tsv``.

    Raises:
        SourceError: another extension.
    """
    lower = path.lower()
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lower.endswith((".csv", ".tsv")):
        return "csv"
    raise SourceError(path, "not a record file: use .jsonl/.ndjson (one JSON object per line) or .csv/.tsv")


def read_records(doc: Document) -> list[tuple[dict[str, Any], int, int]]:
    """``(record, start_line, end_line)`` for every readable record of ``doc`` (1-based,
    inclusive). A bad record — a JSONL line that is not a JSON object, a CSV row with more or
    fewer fields than the header, a row the csv module cannot parse — is skipped and reported
    in ``doc.problems`` as ``"line N: …"`` (CSV: ``"row R (line N): …"``); the rest are read.

    Raises:
        SourceError: the file has content but not one readable record (names the first problem).
    """
    text = doc.text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    problems: list[str] = []
    out = _jsonl_records(text, problems) if record_format(doc.path) == "jsonl" else _csv_records(doc.path, text, problems)
    if problems and not out:
        raise SourceError(doc.path, f"no readable record ({len(problems)} bad, e.g. {problems[0]})")
    doc.problems.extend(problems)
    return out


def _jsonl_records(text: str, problems: list[str]) -> list[tuple[dict[str, Any], int, int]]:
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {n}: not JSON ({exc.msg} at column {exc.colno}); JSONL needs one JSON object per line; record skipped")
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {n}: a JSON {type(obj).__name__}, not an object; record skipped")
            continue
        out.append((obj, n, n))
    return out


def _csv_records(path: str, text: str, problems: list[str]) -> list[tuple[dict[str, Any], int, int]]:
    delimiter = "\t" if path.lower().endswith(".tsv") else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    out: list[tuple[dict[str, Any], int, int]] = []
    last, row_no = 1, 0
    rows = iter(reader)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            break
        except csv.Error as exc:
            row_no += 1
            problems.append(f"row {row_no} (line {reader.line_num}): {exc}; record skipped")
            last = reader.line_num
            continue
        row_no += 1
        start, last = last + 1, reader.line_num
        if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        width = len(reader.fieldnames or [])
        extra = row.pop(None, None)
        got = width + len(extra) if extra else width - sum(1 for v in row.values() if v is None)
        if got != width:
            where = f"line {start}" if start == last else f"lines {start}-{last}"
            problems.append(f"row {row_no} ({where}): {got} fields, the header has {width}; record skipped")
            continue
        out.append((dict(row), start, last))
    return out


def _value(record: dict[str, Any], name: str | None) -> Any:
    if not name:
        return None
    value = record.get(name)
    if isinstance(value, str):
        value = value.strip()
    return value if value not in (None, "") else None


class RecordsChunker:
    """One chunk per record of a JSONL/CSV file (see the module docstring).

    Args:
        fields: the record field names (default: ``id``, ``text``, ``title``, ``date``,
            ``authority``, ``superseded_by``, ``language``).
        authority: label for records without an authority field (the corpus's label).
    """

    name = "records"

    def __init__(self, fields: RecordFields | None = None, authority: str | None = None) -> None:
        self.fields = fields or RecordFields()
        self.authority = authority

    @classmethod
    def from_settings(cls, chunking: ChunkingSettings | None = None) -> RecordsChunker:
        return cls()

    def chunk(self, doc: Document) -> list[Chunk]:
        """The file's records as chunks, in file order.

        A record without text is skipped and reported in ``doc.problems`` (``"line N: …"``), as
        are bad records (:func:`read_records`); of records sharing an id the later one is kept
        and the duplicates are reported.

        Raises:
            SourceError: not one readable record, or no record has the text field (names the
                fields seen).
        """
        f = self.fields
        records = read_records(doc)
        pieces: list[Piece] = []
        metas: list[dict[str, Any]] = []
        titles: list[str] = []
        kept = _latest_by_id(records, f, doc.problems)
        for (record, start, end), rid in kept:
            body = _value(record, f.text)
            title = str(_value(record, f.title) or "")
            text = f"{title}\n\n{body}" if title else str(body)
            meta: dict[str, Any] = {"record_id": rid}
            for key, name in (
                ("effective_date", f.date),
                ("authority", f.authority),
                ("superseded_by", f.superseded_by),
                ("language", f.language),
            ):
                value = _value(record, name)
                if value is not None:
                    meta[key] = str(value)
            if "authority" not in meta and self.authority:
                meta["authority"] = self.authority
            for name in f.metadata:
                value = _value(record, name)
                if value is not None:
                    meta[name] = value
            pieces.append(Piece(text, (rid,), start, end))
            metas.append(meta)
            titles.append(title)
        if records and not pieces:
            seen = sorted({k for r, _, _ in records for k in r})
            raise SourceError(
                doc.path,
                f"no record has the text field {f.text!r}; fields seen: {', '.join(seen)} "
                f'(set [corpora.NAME.records] text = "..." in esrag.toml)',
            )
        doc.title = doc.title or ""
        chunks = finalize(doc, pieces)
        for chunk, meta, title in zip(chunks, metas, titles):
            chunk.metadata = {**chunk.metadata, **meta}
            chunk.doc_title = title
        return chunks


def _latest_by_id(
    records: list[tuple[dict[str, Any], int, int]], f: RecordFields, problems: list[str]
) -> list[tuple[tuple[dict[str, Any], int, int], str]]:
    """The records that have text, each with its id (the id field, else ``line-N``), in file
    order; of several with one id only the last is kept. Records without text and duplicate
    ids are reported in ``problems``."""
    with_text: list[tuple[tuple[dict[str, Any], int, int], str]] = []
    lines: dict[str, list[int]] = {}
    some_text = any(_value(r, f.text) is not None for r, _, _ in records)  # none: the whole-file error of chunk()
    for item in records:
        record, start, _ = item
        rid = str(_value(record, f.id) or f"line-{start}")
        if _value(record, f.text) is None:
            if some_text:
                problems.append(f"line {start}: record {rid!r} has no {f.text!r} field (or it is empty); record skipped")
            continue
        with_text.append((item, rid))
        lines.setdefault(rid, []).append(start)
    for rid, at in lines.items():
        if len(at) > 1:
            problems.append(
                f"line {at[-1]}: duplicate id {rid!r} (also on line{'s' if len(at) > 2 else ''} "
                f"{', '.join(map(str, at[:-1]))}); the last record is kept"
            )
    return [(item, rid) for item, rid in with_text if item[1] == lines[rid][-1]]


class LabelledChunker:
    """Wraps a chunker and gives every chunk the corpus's labels (``authority``) unless the
    chunk has its own — how ``[corpora.NAME] authority`` reaches the index at ingest."""

    def __init__(self, inner: Chunker, labels: dict[str, Any]) -> None:
        self.inner = inner
        self.name = inner.name
        self.labels = {k: v for k, v in labels.items() if v is not None}

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = self.inner.chunk(doc)
        for c in chunks:
            c.metadata = {**self.labels, **c.metadata}
        return chunks
