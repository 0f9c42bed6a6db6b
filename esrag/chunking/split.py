"""Oversize blocks split at their own seams (issue 15; the seed's "a block is never split",
App. N.1, meets real pages: a 7,348-token bullet list, a 2,643-token table).

A block whose cl100k tokens exceed its budget (the cap ``max_block_tokens`` less the headers
that travel with it into its chunk) is cut into consecutive pieces, each within the budget:

* list: at its top-level items (an item too large on its own: at its lines);
* table: at rows; every piece repeats the header row and the separator row;
* fenced code: at lines; every piece re-opens the fence with its info string and closes it;
* paragraph, block quote, raw HTML and the rest: at lines ending a sentence, else at any line end.

Nothing is cut inside a line, unless a single line is itself over the budget: such a line is
cut at sentence ends, then at spaces (a table row never: it stays whole, over the budget).
Front matter is never split. Each piece is its own block of the same kind, section path and
level; its lines keep their source lines, and a repeated header row or re-opened fence maps to
the piece's first own line (a closing fence added to a piece to its last), so every piece's
span is the source lines it shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from esrag.model import Block, BlockKind
from esrag.tokens import _CUT_LINE, LineTokens, count_tokens

_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])(?:\s|$)")
_FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"[.!?:;][)\"'\]*_`]*$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=\S)")

Line = tuple[str, tuple[int, int]]  # (text, (first, last) source line)


def split_oversize(
    lines: list[str],
    line_map: list[int],
    blocks: list[Block],
    cap: int,
    end_map: list[int] | None = None,
    count: Callable[[str], int] = count_tokens,
    tokens: LineTokens | None = None,
    edits: list[tuple[int, int, int, int]] | None = None,
) -> tuple[list[str], list[int], list[int], list[Block]]:
    """Lines, line map and blocks with every oversize block replaced by its pieces.

    Args:
        lines: the document's (resolved) lines; ``blocks`` index them 1-based.
        line_map: first source line of each line.
        blocks: blocks in document order.
        cap: maximum cl100k tokens of a chunk's text (0 or less: nothing is split).
        end_map: last source line of each line (default: ``line_map``).
        count: cl100k token counter (default :func:`esrag.tokens.count_tokens`; the chunker
            passes its document's :class:`esrag.tokens.LineTokens` ``.text``).
        tokens: counts of ``lines`` by line span (:class:`esrag.tokens.LineTokens`), used for
            blocks whose text is their lines joined.
        edits: when given, ``(a, b, na, nb)`` is appended for each split block, in order: its
            lines ``a:b`` became the output lines ``na:nb`` (0-based, end exclusive; every other
            line is copied, shifted), as :meth:`esrag.tokens.LineTokens.spliced` takes them.

    Returns:
        New ``(lines, line_map, end_map, blocks)``; unchanged when nothing is over budget.
        Pieces of one block are separated by one blank line.
    """
    end_map = end_map if end_map is not None else line_map
    if cap <= 0:
        return lines, line_map, end_map, blocks
    tokens = tokens if tokens is not None and tokens.lines is lines else None
    budgets = _budgets(blocks, cap, count, tokens)
    todo = {
        i
        for i, budget in enumerate(budgets)
        if budget >= 0
        and (blk := blocks[i]).kind is not BlockKind.FRONT_MATTER
        and (blk.is_body or blk.kind is BlockKind.HTML)
        and _block_tokens(blk, lines, count, tokens) > budget
    }
    if not todo:
        return lines, line_map, end_map, blocks
    spans = list(zip(line_map, end_map))
    out_lines: list[str] = []
    out_spans: list[tuple[int, int]] = []
    out_blocks: list[Block] = []
    pos = 0  # the next line of ``lines`` not yet copied to ``out_lines``
    shift = 0  # output line - input line of the lines copied as they are (after the last split block)
    # a block's text is its lines joined (parse_blocks, parse_rst); without a line holding a line
    # break (LineTokens checked) its length says so, and a block not split keeps its text
    plain = tokens if tokens is not None and tokens.plain else None
    for i, block in enumerate(blocks):
        if i not in todo:  # its lines are copied as they are (below, in one slice)
            a, b = block.start_line - 1, block.end_line
            same = plain is not None and len(block.text) == plain.chars(a, b)
            if same and not shift:
                out_blocks.append(block)
            else:
                out_blocks.append(
                    Block(
                        block.kind,
                        block.text if same else "\n".join(lines[a:b]),
                        a + 1 + shift,
                        b + shift,
                        block.section_path,
                        block.level,
                        block.anchor,
                    )
                )
            continue
        out_lines.extend(lines[pos : block.start_line - 1])
        out_spans.extend(spans[pos : block.start_line - 1])
        own = [(lines[j], spans[j]) for j in range(block.start_line - 1, block.end_line)]
        for k, piece in enumerate(split_block(block.kind, own, budgets[i], cap, count)):
            if k:
                out_lines.append("")
                out_spans.append(out_spans[-1])
            start = len(out_lines) + 1
            out_lines.extend(t for t, _ in piece)
            out_spans.extend(s for _, s in piece)
            out_blocks.append(
                Block(block.kind, "\n".join(t for t, _ in piece), start, len(out_lines), block.section_path, block.level, block.anchor)
            )
        if edits is not None:
            edits.append((block.start_line - 1, block.end_line, block.start_line - 1 + shift, len(out_lines)))
        pos = block.end_line
        shift = len(out_lines) - pos
    out_lines.extend(lines[pos:])
    out_spans.extend(spans[pos:])
    return out_lines, [a for a, _ in out_spans], [b for _, b in out_spans], out_blocks


def _block_tokens(block: Block, lines: list[str], count: Callable[[str], int], tokens: LineTokens | None) -> int:
    """cl100k tokens of a block's text: by its line span when it is its lines joined."""
    a, b = block.start_line - 1, block.end_line
    if tokens is not None and tokens.lines is lines and tokens.chars(a, b) == len(block.text) and tokens.string(a, b) == block.text:
        return tokens.span(a, b)
    return count(block.text)


def _budgets(blocks: list[Block], cap: int, count: Callable[[str], int] = count_tokens, tokens: LineTokens | None = None) -> list[int]:
    """Per block: the cap less the tokens of the non-body blocks (headers, anchors) right
    before it, which join its first piece's chunk; at least a quarter of the cap. -1 for a
    block whose UTF-8 bytes are within that budget (a token is at least one byte, so it is not
    over budget; its lead is then not counted). (``tokens``: counts of the lines the blocks
    index, used when each block's text is its lines joined.)"""
    out: list[int] = []
    lead: list[Block] = []
    lead_size = 0  # UTF-8 bytes of the lead joined by blank lines: at least its tokens
    for block in blocks:
        text = block.text
        size = len(text) if text.isascii() else len(text.encode())
        if block.kind not in _NOT_BODY:
            if not lead:
                budget = cap
            elif size <= max(cap - lead_size - 2, cap // 4):
                budget = cap  # within even the smallest budget the lead allows
            else:
                budget = max(cap - (_lead_tokens(lead, count, tokens) + 2), cap // 4)
            out.append(budget if size > budget else -1)
            lead, lead_size = [], 0
        else:
            out.append(cap if size > cap else -1)
            lead_size += size + (2 if lead else 0)
            lead.append(block)
    return out


def _lead_tokens(lead: list[Block], count: Callable[[str], int], tokens: LineTokens | None) -> int:
    if tokens is not None and all(
        tokens.chars(b.start_line - 1, b.end_line) == len(b.text) and tokens.string(b.start_line - 1, b.end_line) == b.text for b in lead
    ):
        return tokens.joined([(b.start_line - 1, b.end_line) for b in lead])
    return count("\n\n".join(b.text for b in lead))


def split_block(
    kind: BlockKind, lines: list[Line], first_budget: int, budget: int | None = None, count: Callable[[str], int] = count_tokens
) -> list[list[Line]]:
    """Pieces of one block's lines (see the module docstring); the first piece fits
    ``first_budget`` tokens, the others ``budget`` (default: the same), as ``count`` counts
    (default :func:`esrag.tokens.count_tokens`)."""
    budget = budget or first_budget
    if kind is BlockKind.TABLE and len(lines) > 2:
        return _pack([[ln] for ln in lines[2:]], first_budget, budget, count, prefix=lines[:2], cut_lines=False)
    if kind is BlockKind.CODE:
        m = _FENCE_OPEN.match(lines[0][0])
        if m:
            fence = m.group(2)
            closed = len(lines) > 1 and lines[-1][0].strip().startswith(fence[0] * len(fence)) and not lines[-1][0].strip().strip(fence[0])
            body = lines[1:-1] if closed else lines[1:]
            close = (m.group(1) + fence, (lines[-1] if closed else lines[0])[1])
            return _pack([[ln] for ln in body], first_budget, budget, count, prefix=[lines[0]], suffix=[close])
        return _pack([[ln] for ln in lines], first_budget, budget, count)
    fenced = any(_FENCE_OPEN.match(t) for t, _ in lines)
    slack = _FENCE_SLACK if fenced else 0  # room to close and re-open a fence cut by a piece
    units = _items(lines) if kind is BlockKind.LIST else _sentences(lines)
    pieces = _pack(units, first_budget - slack, budget - slack, count)
    return _mend_fences(pieces) if fenced else pieces


_FENCE_SLACK = 24
_NOT_BODY = frozenset({BlockKind.HEADER, BlockKind.HTML, BlockKind.ANCHOR})  # Block.is_body is False


def _mend_fences(pieces: list[list[Line]]) -> list[list[Line]]:
    """Pieces in which a fenced code block cut by a piece boundary is closed at the end of the
    piece and re-opened (same indent and info string) at the start of the next one."""
    out: list[list[Line]] = []
    opening: Line | None = None  # the open fence's first line
    for piece in pieces:
        cur = ([(opening[0], piece[0][1])] if opening else []) + list(piece)
        for text, _ in piece:
            m = _FENCE_OPEN.match(text)
            if not m:
                continue
            if opening is None:
                opening = (text, (0, 0))
            else:
                om = _FENCE_OPEN.match(opening[0])
                assert om is not None  # opening[0] is a line that matched _FENCE_OPEN
                if m.group(2)[0] == om.group(2)[0] and len(m.group(2)) >= len(om.group(2)) and not text.strip().strip(m.group(2)[0]):
                    opening = None
        if opening is not None:
            om = _FENCE_OPEN.match(opening[0])
            assert om is not None  # as above
            cur.append((om.group(1) + om.group(2), piece[-1][1]))
        out.append(cur)
    return out


def _items(lines: list[Line]) -> list[list[Line]]:
    """Top-level list items: a new item starts at a marker with the first line's indent."""
    m = _ITEM.match(lines[0][0])
    indent = len(m.group(1)) if m else 0
    items: list[list[Line]] = []
    fence: str | None = None
    for ln in lines:
        f = _FENCE_OPEN.match(ln[0])
        if f and (fence is None or f.group(2).startswith(fence)):
            fence = None if fence else f.group(2)[:3]
        im = _ITEM.match(ln[0])
        if fence is None and im and len(im.group(1)) == indent or not items:
            items.append([ln])
        else:
            items[-1].append(ln)
    return items


def _sentences(lines: list[Line]) -> list[list[Line]]:
    """Runs of lines that end at a sentence end (a line ending ``.``, ``!``, ``?``, ``:``…)."""
    units: list[list[Line]] = [[]]
    for ln in lines:
        units[-1].append(ln)
        if _SENTENCE_END.search(ln[0].rstrip()):
            units.append([])
    return [u for u in units if u]


def _pack(
    units: Sequence[list[Line]],
    first_budget: int,
    budget: int,
    count: Callable[[str], int],
    prefix: Sequence[Line] = (),
    suffix: Sequence[Line] = (),
    cut_lines: bool = True,
) -> list[list[Line]]:
    r"""Greedy packing of units (lists of lines) into pieces ``prefix + units + suffix`` of at
    most the budget; a unit too large alone is packed by its lines, a line too large alone is
    cut inside (sentence ends, then spaces) unless ``cut_lines`` is False.

    A candidate piece is counted as the count of the piece so far (``head``: its lines and a
    line break) plus the count of what is added, when the first added line starts with
    ``[ \t]*\S`` (cl100k's pre-tokenizer always cuts there, :data:`esrag.tokens._CUT`: the
    sum is the count of the whole); else as a whole."""
    pieces: list[list[Line]] = []
    cur: list[Line] = []
    cut_start = _CUT_LINE.match

    def joined(ls: Sequence[Line]) -> str:
        return "\n".join(t for t, _ in ls)

    head = count(joined(prefix) + "\n") if prefix else -1  # tokens of the piece so far + "\n" (-1: empty)

    def fits(extra: list[Line]) -> bool:
        limit = first_budget if not pieces else budget
        tail = [*extra, *suffix]
        if head >= 0 and tail and cut_start(tail[0][0]):
            return head + count(joined(tail)) <= limit
        return count(joined([*prefix, *cur, *tail])) <= limit

    def add(ls: list[Line]) -> None:
        nonlocal head
        if head >= 0 and cut_start(ls[0][0]):
            head += count(joined(ls) + "\n")
        else:
            head = count(joined([*prefix, *cur, *ls]) + "\n")
        cur.extend(ls)

    def close() -> None:
        nonlocal cur, head
        if cur:
            pieces.append(cur)
            cur = []
            head = count(joined(prefix) + "\n") if prefix else -1

    for unit in units:
        if fits(unit):
            add(unit)
            continue
        close()
        if fits(unit):
            add(unit)
            continue
        for ln in unit:  # the unit alone is too large: by lines
            if fits([ln]):
                add([ln])
                continue
            close()
            if fits([ln]) or not cut_lines:
                add([ln])
                if not fits([]):
                    close()
                continue
            for part in _cut_line(ln[0], first_budget if not pieces else budget, count):
                if not fits([(part, ln[1])]):
                    close()
                add([(part, ln[1])])
    close()
    last = len(pieces) - 1
    return [
        [
            *(prefix if k == 0 else [(t, body[0][1]) for t, _ in prefix]),
            *body,
            *(suffix if k == last else [(t, body[-1][1]) for t, _ in suffix]),
        ]
        for k, body in enumerate(pieces)
    ]


def _cut_line(text: str, budget: int, count: Callable[[str], int] = count_tokens) -> list[str]:
    """One over-long line as consecutive parts within ``budget`` tokens: at sentence ends, then
    at spaces (a single word longer than the budget stays whole)."""
    words: list[str] = []
    for sentence in _SENTENCE_SPLIT.split(text):
        if count(sentence) <= budget:
            words.append(sentence)
        else:
            words.extend(sentence.split(" "))
    parts: list[str] = []
    cur = ""
    for w in words:
        cand = f"{cur} {w}" if cur else w
        if cur and count(cand) > budget:
            parts.append(cur)
            cur = w
        else:
            cur = cand
    if cur:
        parts.append(cur)
    return parts
