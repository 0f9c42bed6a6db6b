"""Baseline chunkers of seed 000, §3: F512c, F256t, P, FL and one-record-one-chunk.

Spans are checked independently of the chunkers' own helpers where possible: a chunk's text must
sit in the normalised document at a character offset on its ``start_line`` and end on its
``end_line``; token windows are checked against tiktoken's own token bytes."""

from __future__ import annotations

import pathlib
import statistics
import tomllib
from importlib import import_module

import pytest

from esrag.chunking.base import Chunker
from esrag.chunking.baselines import (
    F256T_OVERLAP,
    FixedCharChunker,
    ParagraphPacker,
    RecordChunker,
    TokenWindowChunker,
    length_matched,
)
from esrag.chunking.header import HeaderChunker
from esrag.formats.markdown_blocks import normalize, parse_blocks
from esrag.model import BlockKind, Chunk, Document
from esrag.tokens import count_tokens, encode, encoding

ROOT = pathlib.Path(__file__).resolve().parents[1]
from paths import LARAVEL

LARAVEL_FILES = sorted(LARAVEL.glob("*.md"))

UNICODE = "Ünïcödé naïve café — 汉字测试，日本語のテキスト 🎉🚀 𝔘𝔫𝔦 ǅ ß\n"


def doc(text: str, path: str = "d.md") -> Document:
    return Document(path=path, text=text, corpus="t")


def line_starts(text: str) -> list[int]:
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    return starts


def locate(text: str, chunks: list[Chunk]) -> list[tuple[int, int]]:
    """Character span of each chunk in ``text``, checked against its start and end lines."""
    starts = line_starts(text)
    out = []
    for c in chunks:
        lo, hi = starts[c.start_line - 1], starts[c.start_line]
        p = text.find(c.text, lo)
        assert lo <= p < hi, f"chunk {c.position} text does not start on line {c.start_line}"
        end = p + len(c.text)
        assert text.count("\n", 0, end - 1) + 1 == c.end_line, f"chunk {c.position} end line"
        out.append((p, end))
    return out


def assert_covers_non_blank(text: str, spans: list[tuple[int, int]], max_depth: int) -> None:
    """Every non-whitespace character lies in some span; no character lies in more than
    ``max_depth`` spans (spans are in document order)."""
    spans = sorted(spans)
    reached = 0
    for s, e in spans:
        assert not text[reached:s].strip(), f"characters {reached}..{s} in no chunk"
        reached = max(reached, e)
    assert not text[reached:].strip(), f"characters from {reached} in no chunk"
    for k in range(len(spans) - max_depth):
        assert spans[k + max_depth][0] >= spans[k][1], f"spans {k}..{k + max_depth} overlap"


def assert_uniform(chunks: list[Chunk]) -> None:
    assert [c.position for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(c.n_chunks == len(chunks) for c in chunks)
    assert [c.tokens for c in chunks] == [count_tokens(c.text) for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)


def sections_text(n: int = 6, para: int = 400) -> str:
    parts = []
    for i in range(n):
        body = " ".join(f"s{i}w{j}" for j in range(para // 6))
        parts.append(f"## Section {i}\n\n{body}\n\nSecond paragraph of {i}: " + UNICODE)
    return "# Title\n\n" + "\n".join(parts)


# --- F512c ------------------------------------------------------------------------------------


def test_f512c_consecutive_windows_of_512_characters():
    text = sections_text()
    chunks = FixedCharChunker().chunk(doc(text))
    assert FixedCharChunker.name == "f512c"
    spans = locate(text, chunks)
    assert spans == [(i * 512, min((i + 1) * 512, len(text))) for i in range(len(chunks))]
    assert all(len(c.text) == 512 for c in chunks[:-1]) and 0 < len(chunks[-1].text) <= 512
    assert "".join(c.text for c in chunks) == text
    assert_uniform(chunks)


def test_f512c_counts_characters_not_bytes():
    text = "é" * 700 + "\n" + "汉" * 400
    chunks = FixedCharChunker().chunk(doc(text))
    assert [len(c.text) for c in chunks] == [512, 512, 77]
    assert len(chunks[0].text.encode()) == 1024


def test_f512c_section_path_is_that_of_the_first_line():
    text = "# A\n\n" + "a" * 600 + "\n\n## B\n\n" + "b" * 600 + "\n"
    chunks = FixedCharChunker().chunk(doc(text))
    spans = locate(text, chunks)
    expected = []
    for s, _ in spans:
        first_line = text.count("\n", 0, s) + 1
        expected.append("A > B" if first_line >= 7 else "A")
    assert [c.section_path for c in chunks] == expected == ["A", "A", "A > B"]


def test_f512c_normalizes_crlf_and_bom_and_drops_blank_windows():
    text = "\ufeffa\r\n" + "\r\n" * 1100 + "b\r\n"
    chunks = FixedCharChunker().chunk(doc(text))
    norm = normalize(text)
    assert [c.text for c in chunks] == [norm[:512], norm[1024:]]
    # "a" ends line 1 at index 1; the newline at index k ends line k; "b" is line 1,102
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 511), (1024, 1102)]
    assert FixedCharChunker().chunk(doc("")) == [] and FixedCharChunker().chunk(doc("\n \n")) == []


def test_f512c_custom_size_and_bad_size():
    assert [c.text for c in FixedCharChunker(size=3).chunk(doc("abcdefg"))] == ["abc", "def", "g"]
    with pytest.raises(ValueError, match="size must be at least 1"):
        FixedCharChunker(size=0)


# --- F256t / FL: token windows ----------------------------------------------------------------


def token_bytes_offsets(ids: list[int]) -> list[int]:
    out = [0]
    for b in encoding().decode_tokens_bytes(ids):
        out.append(out[-1] + len(b))
    return out


def check_windows_against_bytes(text: str, chunker: TokenWindowChunker) -> None:
    """Each window's characters are exactly the bytes of its tokens, a character split between
    tokens going to the token holding its first byte."""
    raw = text.encode("utf-8")
    ids = encode(text)
    offs = token_bytes_offsets(ids)

    def ceil_boundary(b: int) -> int:
        while b < len(raw) and 0x80 <= raw[b] < 0xC0:
            b += 1
        return b

    for w in chunker.windows(text):
        want = raw[ceil_boundary(offs[w.token_start]) : ceil_boundary(offs[w.token_end])]
        assert text[w.char_start : w.char_end].encode("utf-8") == want


def test_f256t_window_sizes_and_overlap_in_tokens():
    text = sections_text(n=12)
    tw = TokenWindowChunker()
    assert (tw.name, tw.size, tw.overlap) == ("f256t", 256, F256T_OVERLAP) and F256T_OVERLAP == 64
    ids = encode(text)
    windows = tw.windows(text)
    assert len(ids) > 3 * 256
    assert [w.token_start for w in windows] == list(range(0, len(ids), 192))[: len(windows)]
    assert all(w.token_end - w.token_start == 256 for w in windows[:-1])
    assert windows[-1].token_end == len(ids) and windows[-2].token_end < len(ids)
    for a, b in zip(windows, windows[1:]):
        assert a.token_end - b.token_start == 64
        assert b.char_start < a.char_end  # the overlap is real text, shared by both
    check_windows_against_bytes(text, tw)


def test_f256t_chunks_are_the_windows_text_with_exact_lines():
    text = sections_text(n=12)
    tw = TokenWindowChunker()
    chunks = tw.chunk(doc(text))
    windows = tw.windows(text)
    assert [c.text for c in chunks] == [text[w.char_start : w.char_end] for w in windows]
    assert locate(text, chunks) == [(w.char_start, w.char_end) for w in windows]
    assert_covers_non_blank(text, locate(text, chunks), max_depth=2)
    assert all(c.tokens <= 256 + 2 for c in chunks)
    assert_uniform(chunks)


def test_token_windows_ascii_text_decodes_token_by_token():
    text = "The quick brown fox jumps over the lazy dog.\n" * 40
    tw = TokenWindowChunker(size=50, overlap=10)
    ids = encode(text)
    for w in tw.windows(text):
        assert text[w.char_start : w.char_end] == encoding().decode(ids[w.token_start : w.token_end])


def test_token_windows_split_utf8_characters_cleanly():
    text = (UNICODE * 6).strip()
    ids = encode(text)
    tb = encoding().decode_tokens_bytes(ids)
    assert any(0x80 <= b[0] < 0xC0 for b in tb)  # some token starts inside a character
    no_overlap = TokenWindowChunker(size=5, overlap=0, name="fl")
    chunks = no_overlap.chunk(doc(text))
    assert "".join(c.text for c in chunks) == text  # windows partition the text exactly
    assert all("\ufffd" not in c.text for c in chunks)
    check_windows_against_bytes(text, no_overlap)
    overlapping = TokenWindowChunker(size=7, overlap=3)
    check_windows_against_bytes(text, overlapping)
    spans = locate(text, overlapping.chunk(doc(text)))
    assert_covers_non_blank(text, spans, max_depth=2)


def test_token_windows_normalize_and_handle_empty_text():
    tw = TokenWindowChunker(size=4, overlap=1)
    assert tw.chunk(doc("")) == [] and tw.windows("") == []
    chunks = tw.chunk(doc("\ufeffline one\r\nline two\r\n"))
    assert all("\r" not in c.text and "\ufeff" not in c.text for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 2


@pytest.mark.parametrize("kw", [{"size": 0}, {"size": 10, "overlap": 10}, {"size": 10, "overlap": -1}])
def test_token_windows_bad_settings(kw):
    with pytest.raises(ValueError, match="0 <= overlap < size"):
        TokenWindowChunker(**kw)


def test_length_matched_uses_median_header_led_length_without_overlap():
    chunks = HeaderChunker().chunk(doc(sections_text(n=9)))
    fl = length_matched(chunks)
    assert (fl.name, fl.overlap) == ("fl", 0)
    assert fl.size == round(statistics.median(c.tokens for c in chunks))
    even = chunks[:4]
    assert length_matched(even).size == round(statistics.median(c.tokens for c in even))
    with pytest.raises(ValueError, match="header-led chunks"):
        length_matched([])


# --- P: paragraph packer ----------------------------------------------------------------------


def test_paragraph_packer_ignores_headers():
    text = "# A\n\nfirst para\n\n# B\n\nsecond para\n"
    chunks = ParagraphPacker().chunk(doc(text))
    assert len(chunks) == 1 and chunks[0].text == text.rstrip("\n")
    assert ParagraphPacker.name == "p"


def test_paragraph_packer_packs_greedily_and_keeps_paragraphs_whole():
    paras = [f"p{i} " + "x" * (100 + 37 * i) for i in range(11)]  # 103..473 characters
    text = "\n\n".join(paras) + "\n"
    packer = ParagraphPacker(tau_max=500)
    chunks = packer.chunk(doc(text))
    spans = locate(text, chunks)
    for c in chunks:  # within tau_max and made of whole paragraphs
        assert len(c.text) <= 500
        assert all(part in paras for part in c.text.split("\n\n"))
    for c, nxt in zip(chunks, chunks[1:]):  # greedy: the next paragraph would not have fit
        assert len(c.text) + 2 + len(nxt.text.split("\n\n")[0]) > 500
    assert_covers_non_blank(text, spans, max_depth=1)
    assert_uniform(chunks)


def test_paragraph_packer_keeps_fences_with_blank_lines_intact():
    fence = "```php\n# comment\n\n$a = 1;\n\n\n$b = 2;\n```"
    nested = "- item\n\n  ~~~\n  one\n\n  two\n  ~~~"
    text = "intro\n\n" + fence + "\n\n" + nested + "\n\nafter\n"
    packer = ParagraphPacker(tau_max=10)
    texts = [c.text for c in packer.chunk(doc(text))]
    assert texts == ["intro", fence, "- item", "  ~~~\n  one\n\n  two\n  ~~~", "after"]


def test_paragraph_packer_long_paragraph_alone_and_unclosed_fence():
    long = "y" * 2000
    chunks = ParagraphPacker().chunk(doc("short\n\n" + long + "\n\nshort again\n"))
    assert [c.text for c in chunks] == ["short", long, "short again"]
    unclosed = "text\n\n```\ncode\n\nmore code\n\n\n"
    chunks = ParagraphPacker(tau_max=5).chunk(doc(unclosed))
    assert [c.text for c in chunks] == ["text", "```\ncode\n\nmore code"]
    assert (chunks[1].start_line, chunks[1].end_line) == (3, 6)
    with pytest.raises(ValueError, match="tau_max"):
        ParagraphPacker(tau_max=0)


# --- record -----------------------------------------------------------------------------------


def test_record_chunker_one_document_one_chunk():
    text = "\n\n  Ticket #42: printer on fire\r\n\r\n## Steps\r\n1. smell smoke\r\n\r\n\r\n"
    chunks = RecordChunker().chunk(doc(text))
    assert len(chunks) == 1 and RecordChunker.name == "record"
    assert chunks[0].text == "  Ticket #42: printer on fire\n\n## Steps\n1. smell smoke"
    assert (chunks[0].start_line, chunks[0].end_line) == (3, 6)
    assert RecordChunker().chunk(doc(" \n\n")) == [] and RecordChunker().chunk(doc("")) == []
    big = RecordChunker().chunk(doc(sections_text(n=30)))
    assert len(big) == 1 and big[0].text == sections_text(n=30).rstrip("\n")


# --- registration -----------------------------------------------------------------------------


def test_entry_points_name_the_baselines():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    table = project["entry-points"]["esrag.chunkers"]
    assert {"header", "f512c", "f256t", "p", "record"} <= set(table)
    for name, target in table.items():
        module, attr = target.split(":")
        chunker = getattr(import_module(module), attr)()
        assert chunker.name == name and isinstance(chunker, Chunker)


# --- every file of the Laravel docs -----------------------------------------------------------


@pytest.fixture(scope="module")
def fl_chunker() -> TokenWindowChunker:
    header = HeaderChunker()
    chunks = [c for p in LARAVEL_FILES for c in header.chunk(doc(p.read_text("utf-8"), p.name))]
    return length_matched(chunks)


@pytest.mark.parametrize("path", LARAVEL_FILES, ids=[p.name for p in LARAVEL_FILES])
def test_laravel_file_baselines(path: pathlib.Path, fl_chunker: TokenWindowChunker):
    raw = path.read_text("utf-8")
    text = normalize(raw)

    f512 = FixedCharChunker().chunk(doc(raw, path.name))
    spans = locate(text, f512)
    assert all(len(c.text) <= 512 for c in f512)
    assert all(s % 512 == 0 for s, _ in spans)
    assert_covers_non_blank(text, spans, max_depth=1)
    assert_uniform(f512)

    for tw in (TokenWindowChunker(), fl_chunker):
        chunks = tw.chunk(doc(raw, path.name))
        windows = tw.windows(text)
        assert all(w.token_end - w.token_start <= tw.size for w in windows)
        assert all(c.tokens <= tw.size + 4 for c in chunks)
        assert_covers_non_blank(text, locate(text, chunks), max_depth=1 if tw.overlap == 0 else 2)
        assert_uniform(chunks)

    packer = ParagraphPacker()
    p_chunks = packer.chunk(doc(raw, path.name))
    assert_covers_non_blank(text, locate(text, p_chunks), max_depth=1)
    for block in parse_blocks(text):  # never cut inside a fence or a block without blank lines
        fence = block.kind is BlockKind.CODE and block.text.lstrip(" ")[:3] in ("```", "~~~")
        if fence or all(line.strip() for line in block.text.split("\n")):
            holders = [c for c in p_chunks if c.start_line <= block.start_line and block.end_line <= c.end_line]
            assert len(holders) == 1, f"{block.kind} at line {block.start_line} split"
    assert all(len(c.text) <= 1500 or "\n\n" not in c.text or _single_paragraph(packer, c) for c in p_chunks)
    assert_uniform(p_chunks)

    record = RecordChunker().chunk(doc(raw, path.name))
    assert len(record) == 1 and record[0].text == text.strip("\n")


def _single_paragraph(packer: ParagraphPacker, chunk: Chunk) -> bool:
    return len(packer.paragraphs(chunk.text)) == 1
