"""One fitting rule (issue 38): :func:`esrag.search.budget.fit_text` on real Markdown of the shared
corpora — a fence, a table or a list is never split, the cut falls between blocks, the text is
within the budget and the read-on pointer names the first line not kept."""

from __future__ import annotations

import orjson
import pytest

from esrag.formats.markdown_blocks import normalize, parse_blocks
from esrag.model import BlockKind
from esrag.search.budget import block_ends, fit_text
from esrag.tokens import count_tokens
from paths import DATA, LARAVEL

PAGES = [
    LARAVEL / "scheduling.md",  # a large table, indented code, lists
    DATA / "corpora" / "fastapi-docs" / "docs" / "en" / "docs" / "tutorial" / "metadata.md",  # a table, fences, lists
    DATA / "corpora" / "fastapi-docs" / "docs" / "en" / "docs" / "tutorial" / "first-steps.md",  # fences, lists
    DATA / "corpora" / "rust-book" / "src" / "ch06-01-defining-an-enum.md",  # fences with blank lines inside, lists
    DATA / "corpora" / "fastapi-docs" / "docs" / "en" / "docs" / "tutorial" / "cors.md",  # a list with a blank line between items
]
WHOLE = (BlockKind.CODE, BlockKind.TABLE, BlockKind.LIST)


def page(path) -> str:
    return normalize(path.read_text(encoding="utf-8"))


def split(block_start: int, block_end: int, next_line: int) -> bool:
    """Whether keeping lines 1..next_line (1-based) splits the block of lines block_start..block_end."""
    return block_start <= next_line < block_end


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_fence_table_or_list_is_split_and_the_pointer_is_right(path):
    text = page(path)
    lines = text.split("\n")
    blocks = parse_blocks(text)
    assert any(b.kind in WHOLE and b.end_line - b.start_line >= 2 for b in blocks)  # the rule is tested on what it protects
    total = count_tokens(text)
    cuts = 0
    for budget in range(20, 3000, 40):  # the blank-line rule the pipeline had split Laravel's indented examples here
        fit = fit_text(text, budget)
        if budget >= total:
            assert not fit.cut and fit.text == text and fit.next_line is None
            continue
        cuts += 1
        assert fit.cut and fit.tokens == count_tokens(fit.text) <= budget
        assert text.startswith(fit.text)
        if not fit.text:  # not even the first block fits
            assert fit.next_line == 0 and count_tokens(text[: block_ends(text)[0]]) > budget
            continue
        # the read-on pointer: the kept text is exactly the lines before next_line; the rest begins there
        assert fit.next_line is not None and "\n".join(lines[: fit.next_line]) == fit.text
        rest = "\n".join(lines[fit.next_line :])
        assert rest.strip() and text == fit.text + "\n" + rest
        first_rest = next(line for line in lines[fit.next_line :] if line.strip())
        assert not first_rest[:1].isspace()  # the rest starts at the margin: nothing indented is cut off its block
        # cut only between blocks: no block (of any kind) straddles the cut
        assert not [b for b in blocks if split(b.start_line, b.end_line, fit.next_line)]
        # the largest fit: the next block end does not fit
        later = [e for e in block_ends(text) if e > len(fit.text)]
        assert not later or count_tokens(text[: later[0]]) > budget
    assert cuts >= 10


def test_a_fence_with_blank_lines_and_a_table_stay_whole():
    """On the Rust book's enum page (fences holding blank lines) and FastAPI's metadata page
    (a table): every budget that ends inside one of those blocks keeps the text before it."""
    for path, kind in ((PAGES[3], BlockKind.CODE), (PAGES[1], BlockKind.TABLE)):
        text = page(path)
        lines = text.split("\n")
        block = next(b for b in parse_blocks(text) if b.kind is kind and (kind is BlockKind.TABLE or "" in b.text.split("\n")))
        assert block.end_line - block.start_line >= 2
        before = "\n".join(lines[: block.start_line - 1]).rstrip("\n")
        inside = "\n".join(lines[: (block.start_line + block.end_line) // 2])  # half the block
        fit = fit_text(text, count_tokens(inside))
        assert fit.text == before and fit.next_line is not None and fit.next_line < block.start_line
        assert lines[fit.next_line :][block.start_line - 1 - fit.next_line :][0] == lines[block.start_line - 1]
        whole = "\n".join(lines[: block.end_line])
        assert fit_text(text, count_tokens(whole)).text == whole  # the whole block when it fits


def test_a_list_with_a_blank_line_between_items_is_one_block():
    """FastAPI's CORS page: a list of arguments whose fifth item holds an indented note, then a blank
    line, then two more items. The rule page windows had (a blank line, then a line at the margin)
    cut between those items; a list is one block."""
    text = page(PAGES[4])
    lines = text.split("\n")
    items = next(b for b in parse_blocks(text) if b.kind is BlockKind.LIST and "" in b.text.split("\n"))
    assert items.text.startswith("* `allow_origins`") and items.text.endswith("Defaults to `600`.")
    gap = items.text.split("\n").index("", 2)  # the blank line before `* expose_headers`
    inside = "\n".join(lines[: items.start_line + gap])
    fit = fit_text(text, count_tokens(inside) + 5)
    assert fit.next_line == items.start_line - 1 or fit.next_line is not None and fit.next_line < items.start_line
    assert "allow_origins" not in fit.text and fit_text(text, count_tokens("\n".join(lines[: items.end_line]))).text.endswith("`600`.")


def test_an_indented_block_stays_with_the_paragraph_before_it():
    """Laravel's indented PHP examples (CommonMark indented code after a paragraph ending in ':'):
    a cut never separates a paragraph from the example that follows it."""
    text = page(LARAVEL / "scheduling.md")
    ends = block_ends(text)
    lines = text.split("\n")
    for e in ends[:-1]:
        k = text[:e].count("\n") + 1
        nxt = next(line for line in lines[k:] if line.strip())
        assert not nxt.startswith("    ")


def test_a_count_of_the_text_as_json_bounds_it_escaped():
    text = page(PAGES[2])
    json_count = lambda t: count_tokens(orjson.dumps(t).decode())  # noqa: E731
    fit = fit_text(text, 400, json_count)
    assert fit.cut and json_count(fit.text) == fit.tokens <= 400 < json_count(text)
    assert count_tokens(fit.text) >= fit_text(text, 400).tokens * 0.7  # escapes cost some tokens, not most


def test_a_window_cuts_a_block_larger_than_it_at_whole_lines_and_min_tokens_drops_a_stub():
    text = page(LARAVEL / "scheduling.md")
    table = next(b for b in parse_blocks(text) if b.kind is BlockKind.TABLE and count_tokens(b.text) > 300)
    # a response drops what does not fit whole; a page window must show something: whole rows
    assert fit_text(table.text, 150).text == ""
    window = fit_text(table.text, 150, window=True, alone=True)
    assert window.text and window.tokens <= 150 and window.cut
    assert window.text.split("\n") == table.text.split("\n")[: window.next_line]  # whole rows, the rest from next_line
    one_line = "word " * 400
    assert fit_text(one_line, 100, window=True).text == ""  # not alone: nothing rather than a cut line
    cut = fit_text(one_line, 100, window=True, alone=True)
    assert 0 < cut.tokens <= 100 and one_line.startswith(cut.text)
    small = fit_text("Short.\n\n" + "long " * 300, 20)
    assert small.text == "Short." and fit_text("Short.\n\n" + "long " * 300, 20, min_tokens=10).text == ""
