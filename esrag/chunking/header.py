"""Header-led chunking, exactly as seed 000, App. N.1 ("Grouping" and the small-chunk merge pass).

Blocks come from :func:`esrag.formats.markdown_blocks.parse_blocks`. A chunk's text is its blocks as in
the source (the source lines from its first block to its last, blank lines between blocks
included); lengths are in characters.

Grouping (App. N.1):
  1. A header closes the current chunk if that chunk already has body. (An ``anchor`` block right
     before a header does the same: it travels with the header it precedes. Any other anchor
     rides along like raw HTML.)
  2. A body block closes the current chunk if that chunk already has body and adding the block
     would exceed tau_max. A chunk holding only headers is never closed for size.
  3. The block is appended. If it is a code block, table, front matter or blockquote and the
     chunk has reached tau_max, the chunk is closed.
Merge pass: scanning in order, while the previous output chunk is shorter than tau_min and the
joined length is at most 2 * tau_max, the next chunk is appended to it (joined by one blank
line); a final chunk shorter than tau_min joins its predecessor under the same cap. A joined
chunk takes the section path of its longest part. This pass is the only way a chunk spans
sections.
"""

from __future__ import annotations

import re

from esrag.chunking.base import Piece, finalize
from esrag.chunking.split import split_oversize
from esrag.formats import RST_SUFFIXES, parse
from esrag.model import SECTION_SEPARATOR, Block, BlockKind, Chunk, Document, Heading
from esrag.tokens import LineTokens, count_tokens

TAU_MAX = 1500
TAU_MIN = 100
MAX_BLOCK_TOKENS = 0  # the seed's rule (a block is never split); esrag's settings default is 480
_NOT_BODY = frozenset({BlockKind.HEADER, BlockKind.HTML, BlockKind.ANCHOR})  # Block.is_body is False
_CLOSING_KINDS = (BlockKind.CODE, BlockKind.TABLE, BlockKind.FRONT_MATTER, BlockKind.BLOCKQUOTE)
_FRONT_MATTER_TITLE = re.compile(r"^title:\s*['\"]?(.+?)['\"]?\s*$", re.MULTILINE)


class HeaderChunker:
    """Header-led chunker (seed 000, App. N.1).

    Args:
        tau_max: soft maximum chunk length in characters (default 1,500); a single block longer
            than this is not split for length in characters.
        tau_min: chunks shorter than this many characters are merged (default 100).
        max_block_tokens: hard cap of a chunk in cl100k tokens (0 = none, the seed's rule and
            this class's default; ``[chunking] max_block_tokens`` defaults to 480): a block over
            it is split at its seams (:mod:`esrag.chunking.split`), and neither grouping nor
            the merge pass joins blocks beyond it.
        rst_suffixes: file suffixes read as reStructuredText (:mod:`esrag.formats`).

    The document is read by its format first (:func:`esrag.formats.parse`: Markdown, MDX,
    reStructuredText, include directives resolved when ``doc.root`` is set); chunk texts are the
    resolved text, and line spans are those of the source file.
    """

    name = "header"

    def __init__(
        self,
        tau_max: int = TAU_MAX,
        tau_min: int = TAU_MIN,
        max_block_tokens: int = MAX_BLOCK_TOKENS,
        rst_suffixes: tuple[str, ...] = RST_SUFFIXES,
    ) -> None:
        if tau_min < 0 or tau_max <= 0 or tau_min > tau_max:
            raise ValueError(f"need 0 <= tau_min <= tau_max and tau_max > 0, got tau_min={tau_min}, tau_max={tau_max}")
        if max_block_tokens < 0:
            raise ValueError(f"max_block_tokens must be >= 0 (0 = no cap), got {max_block_tokens}")
        self.tau_max = tau_max
        self.tau_min = tau_min
        self.max_block_tokens = max_block_tokens
        self.rst_suffixes = tuple(rst_suffixes)

    @classmethod
    def from_settings(cls, chunking) -> HeaderChunker:
        """A chunker with ``tau_max``/``tau_min``/``max_block_tokens``/``rst_suffixes`` from
        ``ChunkingSettings``."""
        return cls(
            tau_max=chunking.tau_max,
            tau_min=chunking.tau_min,
            max_block_tokens=chunking.max_block_tokens,
            rst_suffixes=tuple(chunking.rst_suffixes),
        )

    def chunk(self, doc: Document) -> list[Chunk]:
        """Chunks of ``doc`` in document order; sets ``doc.title`` if it is unset,
        ``doc.headers`` (every header block with its source line, for :mod:`esrag.sites`) and
        adds the format's problems (unresolved includes, reStructuredText errors) to
        ``doc.problems``."""
        parsed = parse(doc, self.rst_suffixes)
        doc.problems.extend(p for p in parsed.problems if p not in doc.problems)
        if doc.title is None:
            doc.title = document_title(parsed.blocks, doc.path)
        doc.headers = headings(parsed.blocks, parsed.line_map)
        tokens = LineTokens(parsed.lines, marks=_marks(parsed.blocks))  # the document counted once, block by block
        edits: list[tuple[int, int, int, int]] = []
        lines, line_map, end_map, blocks = split_oversize(
            parsed.lines, parsed.line_map, parsed.blocks, self.max_block_tokens, parsed.end_map, tokens.text, tokens, edits
        )
        if lines is not parsed.lines:  # oversize blocks were split: the same lines but for the split blocks
            tokens = tokens.spliced(lines, edits, _marks(blocks))
        pieces = self.merge_small(self.group(blocks, lines, tokens), tokens)
        return finalize(doc, pieces, tokens.text, line_map, end_map)  # spans mapped to the source file's lines

    def group(self, blocks: list[Block], lines: list[str], tokens: LineTokens | None = None) -> list[Piece]:
        """Grouping rules 1–3: pieces whose body blocks all come from one section, each with its
        cl100k tokens (``tokens``: counts of ``lines``, built when not given).

        A closing HTML tag block (``</div>``) met right after a chunk was closed rides with that
        chunk rather than opening a chunk of its own.
        """
        tokens = tokens if tokens is not None and tokens.lines is lines else LineTokens(lines)
        offsets, over_cap, tau_max = tokens.offsets, self._over_cap, self.tau_max  # chars(a, b): offsets[b] - offsets[a] - 1
        header = BlockKind.HEADER
        groups: list[tuple[int, int, int]] = []  # (first block, last block, block of its section path)
        start = -1  # first block of the current group (-1: no current group)
        body = head = -1  # its first body block, its first header (-1: none yet)

        def close(last: int) -> None:
            nonlocal start
            groups.append((start, last, body if body >= 0 else head if head >= 0 else start))
            start = -1

        leads = _anchors_before_headers(blocks)
        for i, block in enumerate(blocks):
            kind = block.kind
            is_body = kind not in _NOT_BODY
            if kind is header or i in leads:
                if body >= 0 and start >= 0:
                    close(i - 1)
            elif is_body:
                if (
                    start >= 0
                    and body >= 0
                    and (
                        offsets[block.end_line] - offsets[blocks[start].start_line - 1] - 1 > tau_max
                        or over_cap(blocks[start], block, tokens)
                    )
                ):
                    close(i - 1)
            elif start < 0 and groups and block.text.lstrip().startswith("</") and not over_cap(blocks[groups[-1][0]], block, tokens):
                first, _, path = groups[-1]
                groups[-1] = (first, i, path)  # rides with the chunk just closed
                continue
            elif start >= 0 and over_cap(blocks[start], block, tokens):  # raw HTML past the cap
                close(i - 1)
            if start < 0:
                start, body, head = i, -1, -1
            if is_body:
                if body < 0:
                    body = i
                if kind in _CLOSING_KINDS and offsets[block.end_line] - offsets[blocks[start].start_line - 1] - 1 >= tau_max:
                    close(i)
            elif kind is header and head < 0:
                head = i
        if start >= 0:
            close(len(blocks) - 1)
        return [_piece(blocks[first], blocks[last], blocks[path].section_path, tokens) for first, last, path in groups]

    def merge_small(self, pieces: list[Piece], tokens: LineTokens | None = None) -> list[Piece]:
        """The small-chunk merge pass (joined by one blank line, capped at 2 * tau_max).

        ``tokens`` (counts of the lines the pieces index, as from :meth:`group`) counts joined
        pieces by their line spans; without it their texts are counted."""
        cap = 2 * self.tau_max
        out: list[list[Piece]] = []
        for piece in pieces:
            if (
                out
                and _joined_len(out[-1]) < self.tau_min
                and _joined_len(out[-1]) + 2 + len(piece.text) <= cap
                and self._fits(out[-1] + [piece], tokens)
            ):
                out[-1].append(piece)
            else:
                out.append([piece])
        if (
            len(out) >= 2
            and _joined_len(out[-1]) < self.tau_min
            and _joined_len(out[-2]) + 2 + _joined_len(out[-1]) <= cap
            and self._fits(out[-2] + out[-1], tokens)
        ):
            out[-2].extend(out.pop())
        return [_join(parts, tokens) for parts in out]

    def _over_cap(self, first: Block, last: Block, tokens: LineTokens) -> bool:
        """True when the text from ``first`` to ``last`` exceeds ``max_block_tokens``."""
        if not self.max_block_tokens:
            return False
        a, b = first.start_line - 1, last.end_line
        return tokens.size(a, b) > self.max_block_tokens and tokens.span(a, b) > self.max_block_tokens

    def _fits(self, parts: list[Piece], tokens: LineTokens | None) -> bool:
        """True when the joined parts stay within ``max_block_tokens`` (always without a cap)."""
        if not self.max_block_tokens:
            return True
        if tokens is None:
            text = "\n\n".join(p.text for p in parts)
            return len(text.encode()) <= self.max_block_tokens or count_tokens(text) <= self.max_block_tokens
        size = sum(tokens.size(p.start_line - 1, p.end_line) for p in parts) + 2 * (len(parts) - 1)
        return size <= self.max_block_tokens or _joined_tokens(parts, tokens) <= self.max_block_tokens


def _marks(blocks: list[Block]) -> list[int]:
    """The lines whose token offsets the grouping asks for (:class:`LineTokens` ``marks``): each
    block's first and last line, 0-based (every span it counts runs from blocks' starts to
    their ends)."""
    return [k for b in blocks for k in (b.start_line - 1, b.end_line - 1)]


def _anchors_before_headers(blocks: list[Block]) -> set[int]:
    """Indices of anchor blocks followed (through further anchors) by a header. Only these act
    like a header under rule 1; an anchor elsewhere rides along like raw HTML."""
    out: set[int] = set()
    run: list[int] = []
    for i, block in enumerate(blocks):
        if block.kind is BlockKind.ANCHOR:
            run.append(i)
            continue
        if block.kind is BlockKind.HEADER:
            out.update(run)
        run = []
    return out


def _piece(first: Block, last: Block, section_path: tuple[str, ...], tokens: LineTokens) -> Piece:
    a, b = first.start_line - 1, last.end_line
    return Piece(tokens.string(a, b), section_path, first.start_line, last.end_line, tokens.span(a, b))


def _joined_tokens(parts: list[Piece], tokens: LineTokens) -> int:
    """cl100k tokens of the parts' texts joined by blank lines, from their line spans."""
    return tokens.joined([(p.start_line - 1, p.end_line) for p in parts])


def _joined_len(parts: list[Piece]) -> int:
    return sum(len(p.text) for p in parts) + 2 * (len(parts) - 1)


def _join(parts: list[Piece], tokens: LineTokens | None) -> Piece:
    if len(parts) == 1:
        return parts[0]
    longest = max(parts, key=lambda p: len(p.text))
    text = "\n\n".join(p.text for p in parts)
    n_tokens = _joined_tokens(parts, tokens) if tokens is not None else -1
    return Piece(text, longest.section_path, parts[0].start_line, parts[-1].end_line, n_tokens)


def headings(blocks: list[Block], line_map: list[int] | None = None) -> list[Heading]:
    """The header blocks of a document as :class:`Heading` records, in order; ``line_map``
    (resolved line -> 1-based source line, :class:`esrag.formats.Parsed`) gives each its line in
    the source file, as chunks' line spans are."""
    out = []
    for b in blocks:
        if b.kind is BlockKind.HEADER:
            title = b.section_path[-1] if b.section_path else ""
            line = line_map[min(b.start_line, len(line_map)) - 1] if line_map else b.start_line
            out.append(Heading(b.level, title, b.anchor, line, SECTION_SEPARATOR.join(b.section_path), b.alt_anchors, b.html_anchor))
    return out


def document_title(blocks: list[Block], path: str) -> str:
    """The first level-1 header's title, else front matter ``title:``, else the file stem."""
    for block in blocks:
        if block.kind is BlockKind.HEADER and block.level == 1 and block.section_path:
            return block.section_path[-1]
    for block in blocks:
        if block.kind is BlockKind.FRONT_MATTER:
            m = _FRONT_MATTER_TITLE.search(block.text)
            if m:
                return m.group(1)
    stem = path.rsplit("/", 1)[-1]
    return stem.rsplit(".", 1)[0] if "." in stem else stem
