"""Header-led chunking (seed 000, App. N.1): block parsing, grouping rules 1-3, the small-chunk
merge pass, stable ids — on small inputs that break naive splitters, and on every file of the
Laravel docs (read where they lie, /work/shared/data/corpora/laravel-docs)."""

from __future__ import annotations

import pathlib

import pytest

from esrag.chunking.base import Chunker, Piece
from esrag.chunking.header import HeaderChunker, document_title
from esrag.formats.markdown_blocks import _ANCHOR_ONLY, drop_anchor_blocks, header_title, normalize, parse_blocks
from esrag.model import BlockKind, Chunk, Document
from esrag.tokens import count_tokens
from paths import LARAVEL

LARAVEL_FILES = sorted(LARAVEL.glob("*.md"))

NO_MERGE = {"tau_min": 0}  # isolates grouping rules 1-3 from the merge pass


def chunks_of(text: str, path: str = "doc.md", corpus: str = "t", **kw) -> list[Chunk]:
    return HeaderChunker(**kw).chunk(Document(path=path, text=text, corpus=corpus))


def headers(text: str) -> list[str]:
    return [b.section_path[-1] for b in parse_blocks(normalize(text)) if b.kind is BlockKind.HEADER]


def words(n: int, seed: str = "w") -> str:
    """A one-line paragraph of exactly ``n`` characters."""
    base = (f"{seed}ord " * (n // 4 + 2))[:n]
    return base[:-1] + "." if n > 1 else "."


def paths(chunks: list[Chunk]) -> list[str]:
    return [c.section_path for c in chunks]


# --- block parsing: what is (not) a header --------------------------------------------------


def test_hash_lines_in_backtick_and_tilde_fences_are_not_headers():
    text = "# Guide\n\nIntro.\n\n```php\n# not a header\n## nor this\n```\n\n~~~bash\n# shell comment\n~~~\n\nAfter.\n"
    assert headers(text) == ["Guide"]
    codes = [b for b in parse_blocks(text) if b.kind is BlockKind.CODE]
    assert [(b.start_line, b.end_line) for b in codes] == [(5, 8), (10, 12)]
    chunks = chunks_of(text, **NO_MERGE)
    assert paths(chunks) == ["Guide"]
    assert "# shell comment" in chunks[0].text and chunks[0].end_line == 14


def test_longer_fence_contains_shorter_and_other_character():
    text = "````md\n```\n# inner\n```\n````\n# After\n\nx\n\n~~~\n```\n# still code\n~~~\n"
    blocks = parse_blocks(text)
    assert headers(text) == ["After"]
    assert [(b.kind, b.start_line, b.end_line) for b in blocks] == [
        (BlockKind.CODE, 1, 5),
        (BlockKind.HEADER, 6, 6),
        (BlockKind.PARAGRAPH, 8, 8),
        (BlockKind.CODE, 10, 13),
    ]


def test_unclosed_fence_runs_to_end_of_document():
    text = "# A\n\ntext\n\n```\n# B\n\n## C\nmore\n"
    blocks = parse_blocks(text)
    assert headers(text) == ["A"]
    assert blocks[-1].kind is BlockKind.CODE and (blocks[-1].start_line, blocks[-1].end_line) == (5, 9)
    chunks = chunks_of(text, **NO_MERGE)
    assert paths(chunks) == ["A"] and chunks[0].text.endswith("## C\nmore")


def test_setext_headers_level_1_and_2():
    text = "Title\n=====\n\n" + words(120) + "\n\nSub\n---\n\n" + words(120) + "\n"
    blocks = parse_blocks(text)
    assert [b.kind for b in blocks] == [BlockKind.HEADER, BlockKind.PARAGRAPH, BlockKind.HEADER, BlockKind.PARAGRAPH]
    assert [b.level for b in blocks if b.kind is BlockKind.HEADER] == [1, 2]
    chunks = chunks_of(text)
    assert paths(chunks) == ["Title", "Title > Sub"]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (6, 9)]
    assert not any(b.kind is BlockKind.THEMATIC_BREAK for b in blocks)


def test_table_right_under_heading():
    text = "## Options\n| name | default |\n|------|---------|\n| a    | 1       |\n| b    | 2       |\n\nAfter.\n"
    blocks = parse_blocks(text)
    assert [(b.kind, b.start_line, b.end_line) for b in blocks[:2]] == [
        (BlockKind.HEADER, 1, 1),
        (BlockKind.TABLE, 2, 5),
    ]
    assert blocks[0].section_path == ("Options",)
    assert chunks_of(text)[0].section_path == "Options"


def test_yaml_front_matter_is_one_block_and_gives_the_title():
    text = "---\ntitle: Front Title\n# comment: yes\nlist:\n---\n\nIntro " + words(150) + "\n\n## Part\n\n" + words(150) + "\n"
    blocks = parse_blocks(text)
    assert blocks[0].kind is BlockKind.FRONT_MATTER and (blocks[0].start_line, blocks[0].end_line) == (1, 5)
    assert headers(text) == ["Part"]  # neither "# comment" nor a setext "list:\n---"
    doc = Document(path="d.md", text=text)
    chunks = HeaderChunker().chunk(doc)
    assert doc.title == "Front Title"
    assert paths(chunks) == ["", "Part"]
    assert chunks[0].text.startswith("---\ntitle: Front Title")


def test_dashes_without_closing_line_are_not_front_matter():
    text = "---\n\n# Real\n\ntext\n"
    kinds = [b.kind for b in parse_blocks(text)]
    assert BlockKind.FRONT_MATTER not in kinds and headers(text) == ["Real"]


def test_crlf_line_endings():
    text = "# A\r\n\r\n" + words(120) + "\r\n\r\n# B\r\n\r\n" + words(120, "v") + "\r\n"
    chunks = chunks_of(text)
    assert paths(chunks) == ["A", "B"]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 7)]
    assert all("\r" not in c.text for c in chunks)


def test_lone_cr_line_endings():
    chunks = chunks_of("# A\r\rtext\r# B\rmore\r", **NO_MERGE)
    assert paths(chunks) == ["A", "B"] and [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (4, 5)]


def test_byte_order_mark_keeps_first_header_and_line_numbers():
    text = "\ufeff# A\r\n\r\n" + words(120) + "\r\n\r\n# B\r\n\r\n" + words(120, "v") + "\r\n"
    chunks = chunks_of(text)
    assert paths(chunks) == ["A", "B"]  # "\ufeff# A" is not an ATX header unless the BOM goes
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 7)]
    assert chunks[0].text.startswith("# A") and "\ufeff" not in chunks[0].text


def test_headers_with_closing_hashes():
    assert headers("## Install ##\n\n# Title #####\n\n## C# #\n\n### Trailing#\n") == [
        "Install",
        "Title",
        "C#",
        "Trailing#",
    ]


def test_header_titles_show_link_and_code_text_never_urls():
    text = (
        "# [Eloquent](https://laravel.com/docs/eloquent) and `Model::find()`\n\n"
        + words(120)
        + '\n\n## <a name="anchor"></a>**Bold** _title_ ![logo](img.png)\n\n'
        + words(120)
        + "\n"
    )
    chunks = chunks_of(text)
    assert paths(chunks) == ["Eloquent and Model::find()", "Eloquent and Model::find() > Bold title logo"]
    assert not any("http" in p or "name=" in p or "img.png" in p for p in paths(chunks))
    assert header_title("[x](http://a.b 'title')") == "x"


def test_header_titles_with_code_spans_read_as_markdown_it_reads_them():
    """The code-span fast path gives what markdown-it's inline parse gives, on random titles of
    backticks, spaces, underscores, stars and letters (odd backticks, double runs, syntax in and
    outside the spans)."""
    import random

    from esrag.formats import markdown_blocks as blocks

    rng = random.Random(3)
    atoms = ["`", "`", " ", "a", "b_c", "*", "``", " `x` ", "_", "\\", "<", "d"]
    seen_fast = 0
    for _ in range(3000):
        source = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 9))).strip() or "t"
        fast = blocks._code_spans_only(source)
        seen_fast += fast is not None
        parsed = blocks._inline_parser().parseInline(source, {})[0].children or []
        want = " ".join("".join(t.content if t.type in ("text", "code_inline") else "" for t in parsed).split())
        assert header_title(source) == want, source
    assert seen_fast > 150  # the fast path was taken often enough to be tested


def test_header_with_reference_link_shows_the_link_text():
    # GitHub renders "# See [the guide][g]" as "See the guide" when [g] is defined (even below).
    text = "# See [the guide][g] and [Docs]\n\n" + words(120) + "\n\n[g]: https://example.com/guide\n[docs]: /docs\n"
    assert headers(text) == ["See the guide and Docs"]
    assert headers("# Not [a link][nowhere]\n") == ["Not [a link][nowhere]"]  # undefined: literal


def test_sibling_sections_with_the_same_title():
    text = "## Setup\n\n" + words(150, "alpha") + "\n\n## Setup\n\n" + words(150, "beta") + "\n"
    chunks = chunks_of(text)
    assert paths(chunks) == ["Setup", "Setup"]
    assert chunks[0].id != chunks[1].id
    assert "alpha" in chunks[0].text and "beta" in chunks[1].text


def test_text_before_first_header_is_kept_with_empty_section_path():
    text = "Preface " + words(150) + "\n\n# A\n\n" + words(150) + "\n"
    chunks = chunks_of(text)
    assert paths(chunks) == ["", "A"]
    assert chunks[0].text.startswith("Preface") and (chunks[0].start_line, chunks[0].end_line) == (1, 1)


def test_paragraph_longer_than_tau_max_stays_whole():
    long_para = "\n".join(words(90, f"l{i}") for i in range(25))  # one paragraph, 2,274 characters
    assert len(long_para) > 1500
    text = "# Long\n\n" + words(200) + "\n\n" + long_para + "\n\n" + words(200, "z") + "\n"
    chunks = chunks_of(text)
    holding = [c for c in chunks if "l0ord" in c.text or "l24ord" in c.text]
    assert len(holding) == 1 and long_para in holding[0].text
    assert holding[0].text == long_para and (holding[0].start_line, holding[0].end_line) == (5, 29)
    assert paths(chunks) == ["Long", "Long", "Long"]


def test_empty_and_blank_documents_give_no_chunks():
    assert chunks_of("") == []
    assert chunks_of("\n\n   \n\t\n") == []
    assert chunks_of("\ufeff\r\n") == []


def test_document_without_headers():
    paras = [words(600, f"p{i}") for i in range(4)]
    chunks = chunks_of("\n\n".join(paras) + "\n")
    assert paths(chunks) == ["", ""]  # 600 + 2 + 600 fits in 1,500; a third paragraph does not
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (5, 7)]
    assert chunks[0].text == paras[0] + "\n\n" + paras[1]


def test_anchors_travel_with_their_header_and_stay_out_of_section_paths():
    text = (
        '<a name="install"></a>\n## Install\n\n' + words(150) + "\n\n"
        '<a name="config"></a>\n<a name="configuration"></a>\n## Config\n\n' + words(150) + "\n"
    )
    blocks = parse_blocks(text)
    assert [b.kind for b in blocks].count(BlockKind.ANCHOR) == 2
    chunks = chunks_of(text)
    assert paths(chunks) == ["Install", "Config"]
    # issue 38: the anchors leave the text (a reader never sees them); each chunk starts at its header
    assert [(c.start_line, c.end_line) for c in chunks] == [(2, 4), (8, 10)]
    assert chunks[1].text.startswith("## Config") and "<a name" not in chunks[0].text + chunks[1].text
    assert [
        (b.anchor, b.alt_anchors) for b in drop_anchor_blocks(text.split("\n"), list(range(1, text.count("\n") + 2)), blocks)[2] if b.level
    ] == [
        ("install", ()),
        ("configuration", ("config",)),
    ]


def test_anchor_without_a_following_header_does_not_split_the_section():
    text = "# A\n\n" + words(120, "x") + '\n\n<a name="mid"></a>\n\n' + words(120, "y") + "\n"
    chunks = chunks_of(text, **NO_MERGE)
    assert len(chunks) == 1 and chunks[0].section_path == "A"


def test_raw_html_blocks_are_kept_and_hide_hash_lines():
    text = '# Real\n\n<div class="note">\n# Not a header\n</div>\n\n<pre>\n# a\n\n# still inside pre\n</pre>\n\n' + words(120) + "\n"
    assert headers(text) == ["Real"]
    blocks = parse_blocks(text)
    assert [(b.kind, b.start_line, b.end_line) for b in blocks if b.kind is BlockKind.HTML] == [
        (BlockKind.HTML, 3, 5),
        (BlockKind.HTML, 7, 11),
    ]
    chunks = chunks_of(text)
    assert len(chunks) == 1 and "# still inside pre" in chunks[0].text and chunks[0].section_path == "Real"


def test_indented_code_with_hash_comments():
    text = "# Real\n\n    # comment\n    ## another\n    echo 1;\n\nparagraph\n    # lazy continuation\n"
    assert headers(text) == ["Real"]
    kinds = [(b.kind, b.start_line, b.end_line) for b in parse_blocks(text)]
    assert (BlockKind.CODE, 3, 5) in kinds and (BlockKind.PARAGRAPH, 7, 8) in kinds


def test_link_reference_definitions_are_kept():
    text = "[top]: https://example.com/top\n\n# A\n\nSee [docs][d].\n\n[d]: https://example.com/docs\n[e]: <https://e.org> 'E'\n"
    blocks = parse_blocks(text)
    covered = {n for b in blocks for n in range(b.start_line, b.end_line + 1)}
    assert {1, 3, 5, 7, 8} <= covered
    joined = "\n".join(c.text for c in chunks_of(text, **NO_MERGE))
    assert "[top]: https://example.com/top" in joined and "[e]: <https://e.org> 'E'" in joined


# --- grouping rules 1-3 -----------------------------------------------------------------------


def test_rule1_consecutive_headers_stay_together_and_open_the_next_chunk():
    text = "# A\n## B\n### C\n\nbody\n\n## D\n\nmore\n"
    chunks = chunks_of(text, **NO_MERGE)
    assert [(c.section_path, c.start_line, c.end_line) for c in chunks] == [("A > B > C", 1, 5), ("A > D", 7, 9)]


def test_rule2_headers_only_chunk_is_never_closed_for_size():
    long_title = "# " + "T" * 1600
    text = long_title + "\n## Sub\n\n" + words(1600) + "\n"
    chunks = chunks_of(text, **NO_MERGE)
    assert len(chunks) == 1 and chunks[0].start_line == 1 and chunks[0].end_line == 4


def test_rule2_body_block_closes_a_chunk_that_has_body():
    text = "# A\n\n" + words(1000, "x") + "\n\n" + words(1000, "y") + "\n"
    chunks = chunks_of(text, **NO_MERGE)
    assert [(c.section_path, c.start_line, c.end_line) for c in chunks] == [("A", 1, 3), ("A", 5, 5)]
    exact = "# A\n\n" + words(1492, "x") + "\n\nq\n"  # 1,500 characters with "q": fits, not exceeded
    assert len(chunks_of(exact, **NO_MERGE)) == 1
    assert len(chunks_of(exact.replace("\nq\n", "\nqq\n"), **NO_MERGE)) == 2


@pytest.mark.parametrize(
    "block",
    [
        "```\n" + "\n".join(words(30, f"c{i}") for i in range(4)) + "\n```",
        "| a | b |\n|---|---|\n" + "\n".join(f"| {words(12, f'r{i}')} | x |" for i in range(6)),
        "\n".join("> " + words(30, f"q{i}") for i in range(4)),
    ],
    ids=["code", "table", "blockquote"],
)
def test_rule3_code_table_quote_at_tau_max_close_the_chunk(block):
    # The only block that can follow a closed-at-tau_max chunk without rule 2 closing it anyway is
    # a non-body block (raw HTML): rule 3 sends it to the next chunk.
    text = "# A\n\n" + block + "\n\n<div>note</div>\n\nafter\n"
    chunks = chunks_of(text, tau_max=100, **NO_MERGE)
    assert len(chunks) == 2
    assert chunks[0].text == "# A\n\n" + block
    assert chunks[1].text.startswith("<div>note</div>")


def test_rule3_does_not_close_after_a_paragraph_or_a_short_code_block():
    para = words(130)
    chunks = chunks_of("# A\n\n" + para + "\n\n<div>note</div>\n\nafter\n", tau_max=100, **NO_MERGE)
    assert chunks[0].text == "# A\n\n" + para + "\n\n<div>note</div>"
    short = chunks_of("# A\n\n```\nx\n```\n\n<div>note</div>\n\nafter\n", tau_max=100, **NO_MERGE)
    assert len(short) == 1


def test_closing_html_tag_rides_with_the_chunk_it_closes():
    block = "```\n" + words(120) + "\n```"
    text = '<div class="box">\n\n# A\n\n' + block + "\n\n</div>\n\nafter\n"
    chunks = chunks_of(text, tau_max=100, **NO_MERGE)
    assert chunks[0].text.endswith(block + "\n\n</div>")
    assert chunks[1].text == "after"


# --- the merge pass -------------------------------------------------------------------------


def test_merge_joins_small_chunks_with_one_blank_line():
    chunks = chunks_of("# A\nx\n# B\ny\n")
    assert len(chunks) == 1
    assert chunks[0].text == "# A\nx\n\n# B\ny"  # a blank line inserted where the source had none
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 4)


def test_merge_respects_the_cap_of_twice_tau_max():
    small = "# A\n" + words(25)  # 29 characters
    fits = small + "\n\n# B\n" + words(60)  # 29 + 2 + 64 = 95 <= 100: merged
    assert len(chunks_of(fits, tau_max=50, tau_min=40)) == 1
    over = small + "\n\n# B\n" + words(70)  # 29 + 2 + 74 = 105 > 100: not merged
    assert [c.section_path for c in chunks_of(over, tau_max=50, tau_min=40)] == ["A", "B"]


def test_merged_chunk_takes_section_path_of_its_longer_part():
    assert paths(chunks_of("# A\nshort\n\n# B\n" + words(60))) == ["B"]
    assert paths(chunks_of("# A\n" + words(60) + "\n\n# B\nshort")) == ["A"]


def test_merge_repeats_while_accumulated_chunk_is_below_tau_min():
    text = "# A\naa\n# B\nbb\n# C\ncc\n# D\n" + words(200) + "\n# E\n" + words(200) + "\n"
    chunks = chunks_of(text)
    # A (5) + B -> 12 < 100, + C -> 19 < 100, + D -> joined (>= 100); E stands alone.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 8), (9, 10)]
    assert chunks[0].text == "# A\naa\n\n# B\nbb\n\n# C\ncc\n\n# D\n" + words(200)
    assert chunks[0].section_path == "D"


def test_final_small_chunk_joins_its_predecessor():
    text = "# A\n" + words(200) + "\n\n# B\ntiny\n"
    chunks = chunks_of(text)
    assert len(chunks) == 1 and chunks[0].section_path == "A"
    assert chunks[0].text.endswith("\n\n# B\ntiny")
    capped = chunks_of("# A\n" + words(2990) + "\n\n# B\ntiny\n")  # 2,994 + 2 + 10 > 3,000
    assert paths(capped) == ["A", "B"]


# --- ids, hashes, counts, settings -----------------------------------------------------------


def _three_sections(middle: str) -> str:
    return "# A\n\n" + words(300, "a") + "\n\n# B\n\n" + middle + "\n\n# C\n\n" + words(300, "c") + "\n"


def test_ids_are_stable_and_only_the_edited_chunk_changes_hash():
    before = chunks_of(_three_sections(words(300, "b")))
    after = chunks_of(_three_sections(words(300, "b").replace("bord", "BORD", 1) + " Extra sentence."))
    assert paths(before) == paths(after) == ["A", "B", "C"]
    assert [c.id for c in before] == [c.id for c in after]
    changed = [b.section_path for b, a in zip(before, after) if b.content_hash != a.content_hash]
    assert changed == ["B"]
    # a chunk's id depends on corpus and source path, not on its text
    assert chunks_of(_three_sections("x"), path="other.md")[0].id != before[0].id
    assert chunks_of(_three_sections("x"), corpus="other")[0].id != before[0].id


def test_ids_survive_inserting_a_section_elsewhere():
    before = chunks_of(_three_sections(words(300, "b")))
    inserted = _three_sections(words(300, "b")).replace("# C\n", "# New\n\n" + words(300, "n") + "\n\n# C\n")
    after = chunks_of(inserted)
    assert paths(after) == ["A", "B", "New", "C"]
    assert {c.section_path: c.id for c in before}.items() <= {c.section_path: c.id for c in after}.items()


def test_custom_tau_values():
    text = "# A\n\n" + "\n\n".join(words(100, f"p{i}") for i in range(6)) + "\n"
    chunks = chunks_of(text, tau_max=300, tau_min=50)
    assert len(chunks) == 3 and all(len(c.text) <= 300 for c in chunks)
    assert len(chunks_of(text)) == 1


@pytest.mark.parametrize("kw", [{"tau_max": 0}, {"tau_min": -1}, {"tau_max": 50, "tau_min": 60}, {"tau_max": -5}])
def test_bad_tau_values_raise(kw):
    with pytest.raises(ValueError, match="tau_min.*tau_max"):
        HeaderChunker(**kw)


def test_token_counts_positions_and_protocol():
    text = _three_sections("Ünïcödé 汉字 🎉 " + words(200))
    chunks = chunks_of(text)
    assert [c.tokens for c in chunks] == [count_tokens(c.text) for c in chunks]
    assert [c.position for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(c.n_chunks == len(chunks) for c in chunks)
    assert isinstance(HeaderChunker(), Chunker) and HeaderChunker.name == "header"


def test_document_title_fallbacks():
    assert document_title(parse_blocks("## Only h2\n# First H1\n"), "x/y.md") == "First H1"
    assert document_title(parse_blocks("no headers\n"), "dir/file.name.md") == "file.name"


# --- every file of the Laravel docs ----------------------------------------------------------


def _merged_from(chunk_pieces: list[Piece], tau_min: int, final: bool) -> bool:
    """Could the merge pass have joined ``chunk_pieces`` (in order) into one chunk?"""

    def regular(parts: list[Piece]) -> bool:  # every proper prefix was still below tau_min
        acc = len(parts[0].text)
        for p in parts[1:]:
            if acc >= tau_min:
                return False
            acc += 2 + len(p.text)
        return True

    if regular(chunk_pieces):
        return True
    if not final:
        return False
    for m in range(1, len(chunk_pieces)):  # the final small chunk joining its predecessor
        head, tail = chunk_pieces[:m], chunk_pieces[m:]
        tail_len = sum(len(p.text) for p in tail) + 2 * (len(tail) - 1)
        if regular(head) and regular(tail) and tail_len < tau_min:
            return True
    return False


@pytest.fixture(scope="module")
def chunker() -> HeaderChunker:
    return HeaderChunker()


def test_laravel_corpus_is_present():
    assert len(LARAVEL_FILES) == 98


@pytest.mark.parametrize("path", LARAVEL_FILES, ids=[p.name for p in LARAVEL_FILES])
def test_laravel_file(path: pathlib.Path, chunker: HeaderChunker):
    raw = path.read_bytes().decode("utf-8")
    text = normalize(raw)
    lines = text.split("\n")
    chunks = chunker.chunk(Document(path=path.name, text=raw, corpus="laravel"))
    assert chunks

    # chunks are in order and do not overlap
    for a, b in zip(chunks, chunks[1:]):
        assert a.start_line <= a.end_line < b.start_line <= b.end_line

    # every non-blank line lands in exactly one chunk, and its text is in that chunk's text
    starts = [c.start_line for c in chunks]
    for n, line in enumerate(lines, start=1):
        if not line.strip() or _ANCHOR_ONLY.match(line):  # anchor blocks leave the text (issue 38)
            continue
        holders = [c for c in chunks if c.start_line <= n <= c.end_line]
        assert len(holders) == 1, f"line {n} in {len(holders)} chunks"
        assert line in holders[0].text, f"line {n} missing from its chunk"
    assert starts == sorted(starts)

    # grouping: within each group-level piece all body blocks share one section path
    lines, line_map, blocks = drop_anchor_blocks(lines, list(range(1, len(lines) + 1)), parse_blocks(text))  # as the chunker reads it
    pieces = chunker.group(blocks, lines)
    for piece in pieces:
        inside = [b for b in blocks if piece.start_line <= b.start_line <= piece.end_line]
        assert inside and inside[-1].end_line == piece.end_line
        body_paths = {b.section_path for b in inside if b.is_body}
        assert len(body_paths) <= 1, f"piece at line {piece.start_line} spans sections {body_paths}"
        if body_paths:
            assert piece.section_path == body_paths.pop()
        assert piece.text == "\n".join(lines[piece.start_line - 1 : piece.end_line])

    # merge pass: each chunk is one piece, or pieces the merge pass may join (below tau_min)
    by_start = {line_map[p.start_line - 1]: i for i, p in enumerate(pieces)}
    for k, chunk in enumerate(chunks):
        i = by_start[chunk.start_line]
        j = i
        while line_map[pieces[j].end_line - 1] != chunk.end_line:
            j += 1
        parts = pieces[i : j + 1]
        assert chunk.text == "\n\n".join(p.text for p in parts)
        if len(parts) == 1:
            assert chunk.section_path == " > ".join(parts[0].section_path)
            continue
        assert len(chunk.text) <= 2 * chunker.tau_max
        assert _merged_from(parts, chunker.tau_min, final=k == len(chunks) - 1)
        longest = max(parts, key=lambda p: len(p.text))
        assert chunk.section_path == " > ".join(longest.section_path)
    assert sum(1 for _ in chunks) == len(chunker.merge_small(pieces))

    # uniform fields
    assert [c.position for c in chunks] == list(range(1, len(chunks) + 1))
    assert [c.tokens for c in chunks] == [count_tokens(c.text) for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)
