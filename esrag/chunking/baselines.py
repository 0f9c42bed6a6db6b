"""Baseline chunkers of seed 000, §3 (Table 1): the fixed-size windows F512c and F256t, the two
alignment controls P (header-blind paragraph packer) and FL (length-matched token windows), and
the one-record-one-chunk chunker of seed 001 for short records (tickets, messages).

Every chunker here works on the normalised document text (:func:`esrag.formats.markdown_blocks.normalize`:
no byte-order mark, ``\\n`` line endings), cuts it into exact character spans of that text, and
turns the spans into chunks through :func:`esrag.chunking.base.finalize`, so ids, positions,
cl100k token counts and content hashes are computed exactly as for the header-led chunker.

Conventions shared by all of them:

* A chunk's ``text`` is ``text[start:end]`` of the normalised document for its character span;
  ``start_line``/``end_line`` are the 1-based lines of its first and last character (a newline
  character belongs to the line it ends).
* Spans holding only whitespace are dropped (they carry nothing to retrieve).
* ``section_path`` is the section path (App. N.1 header stack) of the header-led block that
  contains the chunk's first line, or of the last block before it when that line is blank. The
  baselines' *boundaries* ignore headers; the path is only a label (and feeds the stable id).
* ``doc.title`` is set as :class:`~esrag.chunking.header.HeaderChunker` sets it, when unset.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from esrag.chunking.base import Piece, finalize
from esrag.chunking.header import TAU_MAX, document_title
from esrag.formats.markdown_blocks import _block_parser, normalize, parse_blocks
from esrag.model import Block, Chunk, Document
from esrag.tokens import encode, encoding

F256T_OVERLAP = 64
"""Overlap of F256t windows in cl100k tokens. Seed 000 calls F256t "256-token overlapping
windows" without giving the overlap; esrag uses a quarter of the window (64 tokens)."""


class _Text:
    """A normalised document with line lookups and per-line section paths."""

    def __init__(self, doc: Document) -> None:
        self.text = normalize(doc.text)
        self.blocks = parse_blocks(self.text)
        if doc.title is None:
            doc.title = document_title(self.blocks, doc.path)
        self._newlines = [i for i, ch in enumerate(self.text) if ch == "\n"]
        self._paths = _line_paths(self.blocks, self.text.count("\n") + 1)

    def line_of(self, offset: int) -> int:
        """1-based line of the character at ``offset`` (a newline belongs to the line it ends)."""
        return bisect.bisect_left(self._newlines, offset) + 1

    def piece(self, start: int, end: int) -> Piece | None:
        """The piece for the character span ``[start, end)``, or None if it is only whitespace."""
        span = self.text[start:end]
        if not span.strip():
            return None
        first = self.line_of(start)
        return Piece(span, self._paths[first - 1], first, self.line_of(end - 1))

    def pieces(self, spans: Sequence[tuple[int, int]]) -> list[Piece]:
        return [p for p in (self.piece(s, e) for s, e in spans) if p is not None]


def _line_paths(blocks: list[Block], n_lines: int) -> list[tuple[str, ...]]:
    """Section path of every line (0-based list): that of the block holding it or preceding it."""
    paths: list[tuple[str, ...]] = [()] * n_lines
    current: tuple[str, ...] = ()
    line = 0
    for block in blocks:
        for i in range(line, block.start_line - 1):
            paths[i] = current
        for i in range(block.start_line - 1, block.end_line):
            paths[i] = block.section_path
        current, line = block.section_path, block.end_line
    for i in range(line, n_lines):
        paths[i] = current
    return paths


class FixedCharChunker:
    """F512c (seed 000, §3): consecutive windows of ``size`` characters, no overlap.

    Args:
        size: window length in characters (Python ``str`` code points, not bytes); default 512.

    Raises:
        ValueError: if ``size`` < 1.

    Windows are ``[0, size)``, ``[size, 2*size)``… of the normalised text; the last one may be
    shorter, and whitespace-only windows are dropped.
    """

    name = "f512c"

    def __init__(self, size: int = 512) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1 character, got {size}")
        self.size = size

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans ``[start, end)`` of all windows of the (normalised) ``text``."""
        return [(i, min(i + self.size, len(text))) for i in range(0, len(text), self.size)]

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc`` in document order (empty for an empty or blank document)."""
        t = _Text(doc)
        return finalize(doc, t.pieces(self.spans(t.text)))


@dataclass(frozen=True, slots=True)
class TokenWindow:
    """One token window: cl100k token indices ``[token_start, token_end)`` and the character
    span ``[char_start, char_end)`` of the text they decode to.

    A character whose UTF-8 bytes are split across tokens belongs to the token holding its first
    byte, so windows without overlap partition the text exactly.
    """

    token_start: int
    token_end: int
    char_start: int
    char_end: int


class TokenWindowChunker:
    """F256t (seed 000, §3): windows of ``size`` cl100k tokens, each starting ``size - overlap``
    tokens after the previous one; also FL (see :func:`length_matched`).

    Args:
        size: window length in cl100k_base tokens (default 256).
        overlap: tokens shared by consecutive windows (default 64, :data:`F256T_OVERLAP`; the
            seed gives no number). 0 gives non-overlapping windows.
        name: registry name (default ``"f256t"``).

    Raises:
        ValueError: unless ``size >= 1`` and ``0 <= overlap < size``.

    Windows are cut in token space and mapped back to exact character spans of the normalised
    text; the last window may be shorter, and the windowing stops once a window reaches the end.
    A chunk's ``tokens`` is the cl100k count of its text (re-encoding a cut-out span can differ
    from the window length by a token or two at its edges).
    """

    def __init__(self, size: int = 256, overlap: int = F256T_OVERLAP, name: str = "f256t") -> None:
        if size < 1 or not 0 <= overlap < size:
            raise ValueError(f"need size >= 1 and 0 <= overlap < size (cl100k tokens), got size={size}, overlap={overlap}")
        self.size = size
        self.overlap = overlap
        self.name = name

    def windows(self, text: str) -> list[TokenWindow]:
        """Token windows of the (normalised) ``text`` with their exact character spans."""
        ids = encode(text)
        char_at = _char_offsets(ids)
        if char_at[-1] != len(text):
            raise ValueError("text does not round-trip through cl100k_base (lone surrogates?)")
        step = self.size - self.overlap
        out: list[TokenWindow] = []
        for start in range(0, len(ids), step):
            end = min(start + self.size, len(ids))
            out.append(TokenWindow(start, end, char_at[start], char_at[end]))
            if end == len(ids):
                break
        return out

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc`` in document order (empty for an empty or blank document)."""
        t = _Text(doc)
        return finalize(doc, t.pieces([(w.char_start, w.char_end) for w in self.windows(t.text)]))


def _char_offsets(ids: list[int]) -> list[int]:
    """``out[k]``: characters whose first UTF-8 byte lies in tokens ``ids[:k]`` (len(ids)+1 items)."""
    out = [0]
    for token in encoding().decode_tokens_bytes(ids):
        out.append(out[-1] + sum(1 for b in token if not 0x80 <= b < 0xC0))
    return out


def length_matched(chunks: Sequence[Chunk], name: str = "fl") -> TokenWindowChunker:
    """FL (seed 000, §3): token windows as long as the median header-led chunk, no overlap.

    Args:
        chunks: the header-led chunks of the corpus (their ``tokens``, cl100k, are used).
        name: registry name of the returned chunker (default ``"fl"``).

    Returns:
        A :class:`TokenWindowChunker` with ``size`` = the median token count (rounded half to
        even, at least 1) and ``overlap`` = 0.

    Raises:
        ValueError: if ``chunks`` is empty.
    """
    if not chunks:
        raise ValueError("length_matched needs the header-led chunks of a corpus, got none")
    size = max(1, round(statistics.median(c.tokens for c in chunks)))
    return TokenWindowChunker(size=size, overlap=0, name=name)


class ParagraphPacker:
    """P (seed 000, §3): whole paragraphs packed greedily up to ``tau_max`` characters,
    ignoring headers.

    A paragraph is a maximal run of non-blank lines; a fenced code block (at any depth, CommonMark
    rules, an unclosed fence running to the end) is never broken at its blank lines. A header
    line is ordinary text and never starts a chunk. Paragraphs are added to the current chunk
    while its text (the source lines from its first paragraph to the new one, blank lines
    included) stays within ``tau_max``; a single longer paragraph is a chunk of its own, whole.

    Args:
        tau_max: maximum chunk length in characters (default 1,500, as for header-led chunks).

    Raises:
        ValueError: if ``tau_max`` < 1.
    """

    name = "p"

    def __init__(self, tau_max: int = TAU_MAX) -> None:
        if tau_max < 1:
            raise ValueError(f"tau_max must be at least 1 character, got {tau_max}")
        self.tau_max = tau_max

    def paragraphs(self, text: str) -> list[tuple[int, int]]:
        """0-based inclusive line spans ``(first, last)`` of the paragraphs of (normalised) ``text``."""
        lines = text.split("\n")
        fence_end = _fence_ends(text)
        out: list[tuple[int, int]] = []
        i = 0
        while i < len(lines):
            if not lines[i].strip():
                i += 1
                continue
            j = i
            while j < len(lines) and (lines[j].strip() or j in fence_end):
                j = max(j, fence_end.get(j, j)) + 1
            last = j - 1
            while not lines[last].strip():  # an unclosed fence may end in blank lines
                last -= 1
            out.append((i, last))
            i = j
        return out

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc`` in document order (empty for an empty or blank document)."""
        t = _Text(doc)
        starts = [0]
        for line in t.text.split("\n"):
            starts.append(starts[-1] + len(line) + 1)
        spans: list[tuple[int, int]] = []
        for first, last in self.paragraphs(t.text):
            start, end = starts[first], starts[last + 1] - 1
            if spans and end - spans[-1][0] <= self.tau_max:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        return finalize(doc, t.pieces(spans))


def _fence_ends(text: str) -> dict[int, int]:
    """For every line inside a fenced code block (0-based), the block's last line."""
    out: dict[int, int] = {}
    for tok in _block_parser().parse(text):
        if tok.type == "fence" and tok.map is not None:
            for line in range(tok.map[0], tok.map[1]):
                out[line] = tok.map[1] - 1
    return out


class RecordChunker:
    """One document, one chunk: the strategy of seed 001 for short, self-contained records such
    as tickets ("splitting is not just unnecessary but actively harmful"; a ticket is sent whole).

    The chunk is the whole normalised text without leading and trailing blank lines, so its
    text is exactly lines ``start_line..end_line`` of the source. Its length is not limited
    (neither characters nor tokens). A blank document gives no chunk.
    """

    name = "record"

    def chunk(self, doc: Document) -> list[Chunk]:
        """A list with the single chunk of ``doc`` (empty for an empty or blank document)."""
        t = _Text(doc)
        lines = t.text.split("\n")
        filled = [i for i, line in enumerate(lines) if line.strip()]
        if not filled:
            return []
        start = sum(len(line) + 1 for line in lines[: filled[0]])
        end = start + len("\n".join(lines[filled[0] : filled[-1] + 1]))
        piece = t.piece(start, end)
        return finalize(doc, [piece] if piece else [])
