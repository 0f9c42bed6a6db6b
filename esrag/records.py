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
skipped. A record without an id is identified by its line number (``line-N``).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from esrag.chunking.base import Piece, finalize
from esrag.config import RecordFields
from esrag.errors import SourceError
from esrag.model import Chunk, Document

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
    """``(record, start_line, end_line)`` for every record of ``doc`` (1-based, inclusive).

    Raises:
        SourceError: a JSONL line that is not a JSON object (names the line).
    """
    text = doc.text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if record_format(doc.path) == "jsonl":
        out = []
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceError(doc.path, f"line {n} is not JSON ({exc.msg}); JSONL needs one JSON object per line") from None
            if not isinstance(obj, dict):
                raise SourceError(doc.path, f"line {n} is a JSON {type(obj).__name__}, not an object")
            out.append((obj, n, n))
        return out
    delimiter = "\t" if doc.path.lower().endswith(".tsv") else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    out, last = [], 1
    for row in reader:
        start, last = last + 1, reader.line_num
        if any((v or "").strip() for v in row.values() if isinstance(v, str)):
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
    def from_settings(cls, chunking: Any = None) -> RecordsChunker:
        return cls()

    def chunk(self, doc: Document) -> list[Chunk]:
        """The file's records as chunks, in file order.

        Raises:
            SourceError: unreadable records, or no record has the text field (names the fields seen).
        """
        f = self.fields
        records = read_records(doc)
        pieces: list[Piece] = []
        metas: list[dict[str, Any]] = []
        titles: list[str] = []
        for record, start, end in records:
            body = _value(record, f.text)
            if body is None:
                continue
            rid = str(_value(record, f.id) or f"line-{start}")
            title = str(_value(record, f.title) or "")
            text = f"{title}\n\n{body}" if title else str(body)
            meta: dict[str, Any] = {"record_id": rid}
            for key, name in (("effective_date", f.date), ("authority", f.authority), ("superseded_by", f.superseded_by),
                              ("language", f.language)):
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
            raise SourceError(doc.path, f"no record has the text field {f.text!r}; fields seen: {', '.join(seen)} "
                                        f"(set [corpora.NAME.records] text = \"...\" in esrag.toml)")
        doc.title = doc.title or ""
        chunks = finalize(doc, pieces)
        for chunk, meta, title in zip(chunks, metas, titles):
            chunk.metadata = {**chunk.metadata, **meta}
            chunk.doc_title = title
        return chunks


class LabelledChunker:
    """Wraps a chunker and gives every chunk the corpus's labels (``authority``) unless the
    chunk has its own — how ``[corpora.NAME] authority`` reaches the index at ingest."""

    def __init__(self, inner: Any, labels: dict[str, Any]) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "chunker")
        self.labels = {k: v for k, v in labels.items() if v is not None}

    def chunk(self, doc: Document) -> list[Chunk]:
        chunks = self.inner.chunk(doc)
        for c in chunks:
            c.metadata = {**self.labels, **c.metadata}
        return chunks
