"""Peer chunkers: what teams use instead of esrag, run as extra arms (same retrievers, budget).

* ``lc-header``: LangChain's ``MarkdownHeaderTextSplitter`` (headers ``#``, ``##``, ``###`` as in
  LangChain's documentation; header lines stripped from the content, LangChain's default)
  followed by ``RecursiveCharacterTextSplitter`` with a 1,500-character cap (the header-led
  chunker's tau_max) and no overlap.
* ``lc-recursive-512t``: ``RecursiveCharacterTextSplitter`` at 512 cl100k_base tokens (length
  function: esrag's offline cl100k count), no overlap.

Both need the PyPI package ``langchain-text-splitters``. LangChain returns rewritten text
(lines stripped, rejoined with ``"  \\n"``, non-printable characters removed), so each piece is
mapped back onto the source (:func:`locate`): its words are found, in order, in the normalised
document, and the chunk's ``text`` is that exact source span, with line numbers and section
path like every esrag chunk. Evidence is therefore matched, and the budget counted, on source
text exactly as for the other arms.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from esrag.chunking.base import finalize
from esrag.chunking.baselines import _Text
from esrag.chunking.header import TAU_MAX
from esrag.errors import ConfigError
from esrag.model import Chunk, Document
from esrag.tokens import count_tokens

_WORD = re.compile(r"[^\W_]+")
_SEP = "\x1f"
_ANCHOR = 8
LC_HEADERS = (("#", "Header 1"), ("##", "Header 2"), ("###", "Header 3"))


def _langchain():
    try:
        import langchain_text_splitters
    except ImportError as exc:
        raise ConfigError(
            "the LangChain peer arms need the package langchain-text-splitters; "
            "install it with `pip install langchain-text-splitters` (or esrag[test])"
        ) from exc
    return langchain_text_splitters


class _WordIndex:
    """The words of a text with their character spans, searchable as word sequences."""

    def __init__(self, text: str) -> None:
        matches = list(_WORD.finditer(text))
        self.keys = [m.group().casefold() for m in matches]
        self.spans = [m.span() for m in matches]
        self.joined = _SEP + _SEP.join(self.keys) + _SEP
        self.offsets: list[int] = []
        pos = 1
        for k in self.keys:
            self.offsets.append(pos)
            pos += len(k) + 1

    def find(self, seq: Sequence[str], start_word: int) -> int | None:
        """Index of the first word where ``seq`` occurs at or after ``start_word``, or None."""
        if not seq or start_word >= len(self.keys):
            return None
        at = self.joined.find(_SEP + _SEP.join(seq) + _SEP, self.offsets[start_word] - 1)
        return None if at < 0 else bisect.bisect_left(self.offsets, at + 1)


def locate(pieces: Sequence[str], source: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of ``source`` holding each piece's words, in order.

    Pieces are expected in document order (overlap allowed). A piece is found as its full
    word sequence, else by its first and last 8 words; the span is widened to the surrounding
    non-whitespace characters (opening brackets, closing punctuation). Pieces without words are
    skipped.

    Raises:
        ValueError: a piece's words cannot be found in ``source``.
    """
    index = _WordIndex(source)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for piece in pieces:
        seq = [m.group().casefold() for m in _WORD.finditer(piece)]
        if not seq:
            continue
        found = _match(index, seq, cursor) or _match(index, seq, 0)
        if found is None:
            raise ValueError(f"cannot map a peer chunk back to the source text: {piece[:80]!r}")
        first, last = found
        start, end = index.spans[first][0], index.spans[last][1]
        while start > 0 and not source[start - 1].isspace():
            start -= 1
        while end < len(source) and not source[end].isspace():
            end += 1
        spans.append((start, end))
        cursor = first
    return spans


def _match(index: _WordIndex, seq: list[str], cursor: int) -> tuple[int, int] | None:
    at = index.find(seq, cursor)
    if at is not None:
        return at, at + len(seq) - 1
    head, tail = seq[:_ANCHOR], seq[-_ANCHOR:]
    at = index.find(head, cursor)
    if at is None:
        return None
    end = index.find(tail, at)
    return (at, end + len(tail) - 1) if end is not None else None


class LangChainHeaderChunker:
    """``lc-header``: LangChain's Markdown header splitter with a character cap (module doc).

    Args:
        cap: ``chunk_size`` of the recursive splitter, in characters (default 1,500).
        overlap: ``chunk_overlap`` in characters (default 0).
    """

    name = "lc-header"

    def __init__(self, cap: int = TAU_MAX, overlap: int = 0) -> None:
        lc = _langchain()
        self._header = lc.MarkdownHeaderTextSplitter(headers_to_split_on=list(LC_HEADERS))
        self._cap = lc.RecursiveCharacterTextSplitter(chunk_size=cap, chunk_overlap=overlap)

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc``; each ``text`` is the source span of one LangChain piece."""
        t = _Text(doc)
        pieces = self._cap.split_documents(self._header.split_text(t.text))
        return finalize(doc, t.pieces(locate([p.page_content for p in pieces], t.text)))


class LangChainRecursiveChunker:
    """``lc-recursive-512t``: LangChain's recursive character splitter measured in cl100k tokens.

    Args:
        size: ``chunk_size`` in cl100k_base tokens (default 512).
        overlap: ``chunk_overlap`` in cl100k_base tokens (default 0).
    """

    name = "lc-recursive-512t"

    def __init__(self, size: int = 512, overlap: int = 0) -> None:
        lc = _langchain()
        self._splitter = lc.RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap, length_function=count_tokens)

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc``; each ``text`` is the source span of one LangChain piece."""
        t = _Text(doc)
        return finalize(doc, t.pieces(locate(self._splitter.split_text(t.text), t.text)))
