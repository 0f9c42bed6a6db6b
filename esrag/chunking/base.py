"""What every chunker shares: the ``Chunker`` protocol and the step that turns raw pieces
(text, section path, line span) into ``Chunk`` objects with stable ids, positions, cl100k token
counts and content hashes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from esrag.model import SECTION_SEPARATOR, Chunk, Document, content_hash
from esrag.model import chunk_id as make_chunk_id
from esrag.tokens import TokenCounter


@runtime_checkable
class Chunker(Protocol):
    """Cuts one document into chunks. Implementations register under ``esrag.chunkers``."""

    name: str

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc`` in document order (empty for an empty document)."""
        ...


@dataclass(slots=True)
class Piece:
    """A chunk before ids and counts: text, section path (titles), 1-based inclusive lines, and
    its cl100k tokens when the chunker already knows them (-1: :func:`finalize` counts)."""

    text: str
    section_path: tuple[str, ...]
    start_line: int
    end_line: int
    tokens: int = -1


def finalize(
    doc: Document,
    pieces: list[Piece],
    count: Callable[[str], int] | None = None,
    line_map: list[int] | None = None,
    end_map: list[int] | None = None,
) -> list[Chunk]:
    """Turn pieces into chunks: stable ids, position i of n, cl100k token counts, hashes.

    A piece's cl100k count is its ``tokens`` when set, else ``count(text)`` (default: a fresh
    :class:`esrag.tokens.TokenCounter`). With ``line_map`` (1-based line of the text a chunker
    read -> first 1-based source line, :class:`esrag.formats.Parsed`) and ``end_map`` (-> last
    source line; default ``line_map``) the pieces' line spans are mapped to source lines (a
    chunk never ends before it starts); without, they are source lines already.

    The id's ordinal counts earlier pieces of the same document with the same section path, so
    ids survive edits in other sections and siblings with equal titles get distinct ids. The
    content hash covers the chunk text, its section path and the document title (everything the
    default indexed text derives from). ``doc.doc_version`` (when set) enters the id and is
    copied onto every chunk.
    """
    seen: dict[str, int] = {}
    count = count or TokenCounter()
    chunks: list[Chunk] = []
    doc_title = doc.title or ""
    corpus, source, version, metadata, n = doc.corpus, doc.path, doc.doc_version, doc.metadata, len(pieces)
    joined: dict[tuple[str, ...], str] = {}  # section path -> its string (pieces of a section share the tuple)
    end_map = end_map if end_map is not None else line_map
    last = len(line_map) if line_map else 0
    for i, piece in enumerate(pieces, start=1):
        start_line, end_line = piece.start_line, piece.end_line
        if line_map and end_map:
            start_line = line_map[min(start_line, last) - 1]
            end_line = max(start_line, end_map[min(end_line, len(end_map)) - 1])
        path = joined.get(piece.section_path)
        if path is None:
            path = joined[piece.section_path] = SECTION_SEPARATOR.join(piece.section_path)
        ordinal = seen.get(path, 0)
        seen[path] = ordinal + 1
        text = piece.text
        chunks.append(
            Chunk(
                id=make_chunk_id(corpus, source, path, ordinal, version),
                text=text,
                corpus=corpus,
                source_path=source,
                section_path=path,
                start_line=start_line,
                end_line=end_line,
                position=i,
                n_chunks=n,
                tokens=piece.tokens if piece.tokens >= 0 else count(text),
                content_hash=content_hash(text, path, doc_title),
                doc_title=doc_title,
                doc_version=version,
                metadata=dict(metadata),
            )
        )
    return chunks
