"""Oversize blocks split at their seams: unit cases, and the four shared corpora chunked with
esrag's default settings (no chunk over the cap, table pieces keep their header row, fence
pieces are valid fences, spans stay on the page)."""

from __future__ import annotations

import re

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.chunking.split import split_block, split_oversize
from esrag.config import Settings
from esrag.formats.markdown_blocks import parse_blocks
from esrag.model import BlockKind, Document
from esrag.sources import discover, load_document
from esrag.tokens import count_tokens
from paths import DATA

CORPORA = ["laravel-docs", "pydantic-docs", "async-book", "requests-docs"]
CAP = Settings().chunking.max_block_tokens
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")


def _lines(text: str) -> list[tuple[str, tuple[int, int]]]:
    return [(t, (i, i)) for i, t in enumerate(text.split("\n"), start=1)]


def test_default_cap_fits_a_512_token_budget():
    assert 0 < CAP < 512


def test_table_pieces_repeat_the_header_and_map_to_their_rows():
    rows = [f"| method{i} | does thing number {i} with several words |" for i in range(60)]
    text = "\n".join(["| Method | Description |", "| --- | --- |", *rows])
    pieces = split_block(BlockKind.TABLE, _lines(text), 100)
    assert len(pieces) > 3
    assert [ln for p in pieces for ln in p[2:]] == _lines(text)[2:]  # every row once, in order
    for p in pieces:
        assert [t for t, _ in p[:2]] == ["| Method | Description |", "| --- | --- |"]
        assert count_tokens("\n".join(t for t, _ in p)) <= 100
    assert pieces[1][0][1] == pieces[1][2][1]  # the repeated header maps to the piece's first row


def test_fence_pieces_reopen_with_the_info_string():
    body = [f"let value_{i} = compute({i}); // step {i}" for i in range(80)]
    text = "\n".join(["```rust,ignore", *body, "```"])
    pieces = split_block(BlockKind.CODE, _lines(text), 120)
    assert len(pieces) > 3
    for p in pieces:
        assert p[0][0] == "```rust,ignore" and p[-1][0] == "```"
        assert count_tokens("\n".join(t for t, _ in p)) <= 120
    assert [ln for p in pieces for ln in p[1:-1]] == _lines(text)[1:-1]
    assert pieces[0][0][1] == (1, 1) and pieces[-1][-1][1] == (82, 82)  # real fence lines keep theirs


def test_list_splits_at_items_and_paragraph_at_sentence_ends():
    items = [f"- item {i}: " + "word " * 30 + "\n  continued line of the item." for i in range(20)]
    text = "\n".join(items)
    pieces = split_block(BlockKind.LIST, _lines(text), 150)
    assert all(p[0][0].startswith("- item") for p in pieces) and len(pieces) > 2
    para = "\n".join(f"Sentence number {i} has some words in it" + ("." if i % 3 == 2 else "") for i in range(60))
    pieces = split_block(BlockKind.PARAGRAPH, _lines(para), 80)
    assert all(p[-1][0].endswith(".") for p in pieces[:-1])  # cut after lines that end a sentence


def test_a_single_long_line_is_cut_at_sentences_only_when_alone_over_the_cap():
    line = " ".join(f"This is sentence {i} of one long line." for i in range(200))
    pieces = split_block(BlockKind.PARAGRAPH, [(line, (5, 5))], 100)
    assert len(pieces) > 5 and " ".join(t for p in pieces for t, _ in p) == line
    assert all(count_tokens(p[0][0]) <= 100 and p[0][1] == (5, 5) for p in pieces)


def test_an_oversize_html_block_is_split_at_lines():
    text = "<div>\n" + "\n".join(f"<a href='#m{i}'>method number {i}</a>" for i in range(200)) + "\n</div>\n"
    chunks = HeaderChunker(max_block_tokens=200).chunk(Document("h.md", text))
    assert len(chunks) > 3 and all(c.tokens <= 200 for c in chunks)
    assert "\n".join(c.text for c in chunks).count("<a href") == 200


def test_split_oversize_keeps_spans_and_small_blocks():
    text = "# Title\n\nshort\n\n" + "\n".join(f"- item {i} " + "x " * 40 for i in range(40)) + "\n\nafter\n"
    lines = text.split("\n")
    blocks = parse_blocks(text)
    out_lines, starts, ends, out_blocks = split_oversize(lines, list(range(1, len(lines) + 1)), blocks, 200)
    kinds = [b.kind for b in out_blocks]
    assert kinds[0] is BlockKind.HEADER and kinds.count(BlockKind.LIST) > 3 and out_blocks[-1].text == "after"
    for b in out_blocks:
        assert "\n".join(out_lines[b.start_line - 1 : b.end_line]) == b.text
    lists = [b for b in out_blocks if b.kind is BlockKind.LIST]
    assert starts[lists[0].start_line - 1] == 5 and ends[lists[-1].end_line - 1] == 44
    assert split_oversize(lines, list(range(1, len(lines) + 1)), blocks, 0)[3] == blocks


def _corpus_chunks(name: str):
    settings = Settings()
    chunker = HeaderChunker.from_settings(settings.chunking)
    for src in discover(DATA / "corpora" / name, settings.ingest.include, settings.ingest.exclude):
        doc = load_document(src, name, 5_000_000)
        doc.source, doc.root = str(src.path), str(src.root)
        n_lines = doc.text.count("\n") + 1
        yield src.rel, n_lines, chunker.chunk(doc)


def _single_unit(text: str) -> bool:
    """True for a piece that holds one unsplittable unit: one line besides fence/header lines."""
    lines = [ln for ln in text.split("\n") if ln.strip() and not _FENCE.match(ln) and not re.match(r"^\|?\s*:?-{3,}", ln)]
    return len(lines) <= 2 and max(count_tokens(ln) for ln in lines) > CAP // 3


@pytest.mark.parametrize("name", CORPORA)
def test_real_corpora_respect_the_cap_tables_and_fences(name):
    n_chunks = n_tables = n_fences = 0
    for rel, n_lines, chunks in _corpus_chunks(name):
        for c in chunks:
            n_chunks += 1
            assert 1 <= c.start_line <= c.end_line <= n_lines, (rel, c.start_line, c.end_line)
            assert c.tokens <= CAP or _single_unit(c.text), (rel, c.start_line, c.tokens)
            lines = c.text.split("\n")
            for b in parse_blocks(c.text):  # as CommonMark reads the chunk on its own
                m = _FENCE.match(b.text.split("\n")[0])
                if b.kind is BlockKind.CODE and m and not b.text.startswith("    "):
                    n_fences += 1
                    last = b.text.split("\n")[-1].strip()
                    closed = b.end_line > b.start_line and last.startswith(m.group(1)) and not last.strip(m.group(1)[0])
                    assert closed or c.end_line == n_lines, (rel, c.start_line, "unclosed fence")
                    assert b.start_line > 1 or not c.text.startswith("```") or m.group(2) == _FENCE.match(lines[0]).group(2)
                rows = b.text.split("\n")
                if (
                    b.kind is BlockKind.PARAGRAPH
                    and len(rows) >= 2
                    and all(r.lstrip().startswith("|") for r in rows)
                    and not re.match(r"^\|?\s*:?-{3,}", rows[1].strip())
                ):  # (a malformed separator is the source's)
                    raise AssertionError((rel, c.start_line, "table rows without their header row"))
                if b.kind is BlockKind.TABLE:
                    n_tables += 1
                    head = b.text.split("\n")
                    assert len(head) >= 2 and re.match(r"^\|?\s*:?-{3,}", head[1].strip()), (rel, c.start_line)
            if c.text.lstrip().startswith("|") and "\n|" in c.text and lines[0].count("|") >= 2:
                assert re.match(r"^\|?\s*:?-{3,}", lines[1]) or not lines[1].startswith("|"), (rel, c.start_line)
    assert n_chunks > 100 and n_fences > 10
    if name == "laravel-docs":
        assert n_tables > 20


def test_laravel_contracts_table_is_split_with_its_header():
    chunks = [c for rel, _, cs in _corpus_chunks("laravel-docs") if rel == "contracts.md" for c in cs]
    pieces = [c for c in chunks if "| Contract | References Facade |" in c.text]
    assert len(pieces) >= 5 and all(c.tokens <= CAP for c in pieces)
    assert all(c.text.split("\n")[0] == "| Contract | References Facade |" for c in pieces if c.text.startswith("|"))
    assert [c.start_line for c in pieces] == sorted(c.start_line for c in pieces)
    assert len({c.id for c in pieces}) == len(pieces)
