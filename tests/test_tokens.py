"""Token counts read off one encoding per document are the counts of the texts themselves
(issue 17: "careful: BPE counts of concatenated text are not always the sum of parts"). The
cut rule (``esrag.tokens._CUT``), the line-break swap (``_stem``), :class:`TokenCounter` and
:class:`LineTokens` are each checked against :func:`count_tokens` on random strings made of
the characters where cl100k's pre-tokenizer is delicate, and on the real corpora."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

import esrag.tokens as tokens_module
from esrag.app import make_chunker
from esrag.config import Settings
from esrag.formats.markdown_blocks import normalize
from esrag.model import Document
from esrag.tokens import _CUT, LineTokens, TokenCounter, _bpe_count, _quicktok_count, _stem, _valid_count, count_tokens, fast_count
from paths import DATA

ATOMS = [
    "a",
    "Z",
    "9",
    "12",
    "333",
    " ",
    "  ",
    "\t",
    "\n",
    "\n\n",
    ".",
    ":",
    ")",
    "`",
    "'s",
    "'",
    '"',
    "}",
    "{",
    "-",
    "_",
    "é",
    "中",
    "…",
    "’",
    "\u00a0",
    "\x0b",
    "\x0c",
    "\r",
    "\r\n",
    "\u2028",
    "\x1c",
    "\x85",
    "\u3000",
    "٣",
    "²",
    "!",
    "?",
    "...",
    " .",
    "word",
    " word",
    "x\n",
    " \n",
    ".\n",
    "\x01",
    "#",
    "|",
    "<a>",
]


def _random_texts(seed: int, n: int, size: int = 14) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ATOMS) for _ in range(rng.randint(1, size))) for _ in range(n)]


def test_count_of_a_text_is_the_sum_over_its_cuts():
    for text in _random_texts(1, 30000):
        assert sum(count_tokens(p) for p in _CUT.split(text)) == count_tokens(text), repr(text)


def test_line_breaks_swap_in_the_last_pretoken():
    checked = 0
    for text in _random_texts(2, 30000, 10):
        stem = _stem(text)
        if stem is None:
            continue
        checked += 1
        for t in ("\n", "\n\n"):
            for s in ("", "\n", "\n\n"):
                assert count_tokens(text + s) == count_tokens(text + t) - count_tokens(stem + t) + count_tokens(stem + s), (
                    text,
                    stem,
                    t,
                    s,
                )
    assert checked > 5000


def test_token_counter_is_count_tokens():
    counter = TokenCounter()
    texts = _random_texts(3, 5000, 30)
    for text in texts + texts:  # the second time from the memory
        assert counter(text) == count_tokens(text), repr(text)


def test_line_tokens_on_random_lines():
    rng = random.Random(4)
    for _ in range(200):
        lines = ["".join(rng.choice(ATOMS) for _ in range(rng.randint(0, 6))).replace("\n", "") for _ in range(30)]
        lt = LineTokens(lines)
        for _ in range(20):
            a = rng.randrange(len(lines))
            b = rng.randint(a, len(lines))
            suffix = rng.choice(["", "\n\n"])
            assert lt.span(a, b, suffix) == count_tokens("\n".join(lines[a:b]) + suffix), (lines[a:b], suffix)
            assert lt.chars(a, b) == len("\n".join(lines[a:b]))
            assert lt.size(a, b) == len("\n".join(lines[a:b]).encode())


def test_line_tokens_with_marks_count_any_span_exactly():
    """Counted in pieces between a few marks, the other cut lines' offsets counted when asked."""
    rng = random.Random(9)
    for _ in range(200):
        lines = ["".join(rng.choice(ATOMS) for _ in range(rng.randint(0, 6))).replace("\n", "") for _ in range(30)]
        lt = LineTokens(lines, marks=rng.sample(range(-2, 33), rng.randint(0, 8)))
        for _ in range(20):
            a = rng.randrange(len(lines))
            b = rng.randint(a, len(lines))
            suffix = rng.choice(["", "\n\n"])
            assert lt.span(a, b, suffix) == count_tokens("\n".join(lines[a:b]) + suffix), (lines[a:b], suffix)


def test_line_tokens_with_lone_surrogates_or_line_breaks_in_lines_count_text_by_text():
    lines = ["a\ud800b", "c"]
    assert LineTokens(lines).span(0, 2) == count_tokens("a\ud800b\nc")
    lines = ["a.\n", "  b", "c\nd", "e"]
    lt = LineTokens(lines)
    for a in range(4):
        for b in range(a, 5):
            assert lt.span(a, b) == count_tokens("\n".join(lines[a:b])), (a, b)


@pytest.mark.parametrize("corpus", ["laravel-docs", "pydantic-docs", "async-book", "requests-docs"])
def test_line_tokens_on_the_corpora(corpus):
    rng = random.Random(5)
    files = sorted(p for p in (DATA / "corpora" / corpus).rglob("*") if p.suffix in (".md", ".rst"))
    assert files
    for path in files:
        lines = normalize(path.read_text(encoding="utf-8")).split("\n")
        lt = LineTokens(lines, marks=range(0, len(lines), 7) if len(lines) % 2 else None)
        spans = [(a, min(len(lines), a + rng.randint(0, 30))) for a in rng.sample(range(len(lines)), min(40, len(lines)))]
        for a, b in spans:
            assert lt.span(a, b) == count_tokens("\n".join(lines[a:b])), (path, a, b)
            assert lt.span(a, b, "\n\n") == count_tokens("\n".join(lines[a:b]) + "\n\n"), (path, a, b)
        ordered = sorted((a, b) for a, b in spans if a < b)
        disjoint = [s for i, s in enumerate(ordered) if i == 0 or s[0] >= ordered[i - 1][1]]
        assert lt.joined(disjoint) == count_tokens("\n\n".join("\n".join(lines[a:b]) for a, b in disjoint)), path


@pytest.mark.parametrize("corpus", ["laravel-docs", "pydantic-docs", "async-book", "requests-docs"])
def test_every_chunk_has_its_exact_token_count(corpus):
    chunker = make_chunker(Settings(db=None, es_url=None))
    root = DATA / "corpora" / corpus
    n = 0
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".md", ".rst")):
        doc = Document(str(path.relative_to(root)), path.read_text(encoding="utf-8"), source=str(path), root=str(root))
        for c in chunker.chunk(doc):
            assert c.tokens == count_tokens(c.text), (path, c.position)
            n += 1
    assert n > 100


def test_line_tokens_spliced_from_an_earlier_version_of_the_text():
    """After the oversize split (new empty lines, repeated table header rows and fences) the
    counts come from the earlier version's and a count of each replaced range: every span,
    with and without marks, equals tiktoken's count, on random edits of a real file."""
    rng = random.Random(6)
    path = DATA / "corpora" / "laravel-docs" / "validation.md"
    lines = normalize(path.read_text(encoding="utf-8")).split("\n")
    starts = [k for k, ln in enumerate(lines) if ln.strip() and not ln[0].isspace()]
    inserts = [["", "| a | b |", "|---|---|"], ["```", "", "    code"], ["x"], ["", ""], ["- item", "", "  more."]]
    for trial in range(12):
        earlier = LineTokens(lines, marks=rng.sample(range(len(lines)), 60) if trial % 2 else None)
        later: list[str] = []
        edits = []
        pos = 0
        for a in sorted(rng.sample(starts, rng.randint(1, 5))):
            if a < pos:
                continue
            b = min(len(lines), a + rng.randint(1, 30))
            later.extend(lines[pos:a])
            na = len(later)
            later.extend(lines[a:b][: rng.randint(0, b - a)] + rng.choice(inserts))
            if len(later) == na or not later[na].strip():
                later.insert(na, lines[a])
            edits.append((a, b, na, len(later)))
            pos = b
        later.extend(lines[pos:])
        lt = earlier.spliced(later, edits, marks=rng.sample(range(len(later)), 40))
        assert lt.pieces() == {}  # spliced, not counted afresh (which keeps its pieces)
        assert lt._total == count_tokens("\n".join(later))
        for _ in range(200):
            a = rng.randrange(len(later))
            b = rng.randint(a, min(len(later), a + 40))
            suffix = rng.choice(["", "\n\n"])
            assert lt.span(a, b, suffix) == count_tokens("\n".join(later[a:b]) + suffix), (trial, a, b)


def test_line_tokens_spliced_falls_back_on_edits_that_do_not_fit():
    lines = ["a", "", "b c", "d"]
    earlier = LineTokens(lines)
    for edits in ([], [(1, 2, 1, 2)], [(0, 5, 0, 1)], [(2, 3, 3, 4)]):  # none, not a cut line, out of range, shifted
        later = ["a", "", "b", "c", "d"]
        lt = earlier.spliced(later, edits, marks=[0, 2])
        assert [lt.span(a, b) for a in range(5) for b in range(a, 6)] == [
            count_tokens("\n".join(later[a:b])) for a in range(5) for b in range(a, 6)
        ]


CORPORA = ["laravel-docs", "pydantic-docs", "async-book", "requests-docs"]


BACKENDS = ["quicktok", "bpe-openai"]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """fast_count by each fast backend in turn (the other one switched off)."""
    if request.param == "bpe-openai":
        monkeypatch.setattr(tokens_module, "_quicktok_count", lambda: None)
    return request.param


def test_both_fast_counters_are_installed_and_quicktok_is_used():
    """The fast counters are really in use (a missing wheel would silently fall back)."""
    assert _quicktok_count() is not None and _bpe_count() is not None
    assert _valid_count() is _quicktok_count()
    assert fast_count("Hello, world!") == count_tokens("Hello, world!") == 4


def test_fast_count_is_tiktoken_on_random_strings(backend):
    texts = _random_texts(7, 40000, 20) + _random_texts(8, 3000, 200)
    bad = [t for t in texts if fast_count(t) != count_tokens(t)]
    assert bad == []


def test_fast_count_takes_lone_surrogates_and_special_token_strings_as_tiktoken_does(backend):
    for text in ["a\ud800b", "\udfff", "x <|endoftext|> y", "<|fim_prefix|><|endofprompt|>"]:
        assert fast_count(text) == count_tokens(text), repr(text)


@pytest.mark.parametrize("corpus", CORPORA)
def test_fast_count_is_tiktoken_on_every_file_line_and_piece_of_the_corpora(corpus, backend):
    files = sorted(p for p in (DATA / "corpora" / corpus).rglob("*") if p.suffix in (".md", ".rst", ".mdx"))
    assert files
    n = 0
    for path in files:
        text = normalize(path.read_text(encoding="utf-8"))
        assert fast_count(text) == count_tokens(text), path
        lt = LineTokens(text.split("\n"))
        for piece, k in lt.pieces().items():
            assert k == count_tokens(piece), (path, piece)
            n += 1
    assert n > 1000


@pytest.mark.parametrize("corpus", CORPORA)
def test_fast_count_is_tiktoken_on_every_chunk_text(corpus, backend):
    chunker = make_chunker(Settings(db=None, es_url=None))
    root = DATA / "corpora" / corpus
    texts = [
        c.text
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".md", ".rst"))
        for c in chunker.chunk(Document(str(path.relative_to(root)), path.read_text(encoding="utf-8"), source=str(path), root=str(root)))
    ]
    assert len(texts) > 100
    assert [fast_count(t) for t in texts] == [count_tokens(t) for t in texts]


def test_without_fast_counters_tiktoken_counts_the_same(monkeypatch):
    """The fallback (no fast wheel for the platform): the same counts, by tiktoken."""
    monkeypatch.setattr(tokens_module, "_bpe_count", lambda: None)
    monkeypatch.setattr(tokens_module, "_quicktok_count", lambda: None)
    path = DATA / "corpora" / "laravel-docs" / "queues.md"
    lines = normalize(path.read_text(encoding="utf-8")).split("\n")
    lt = LineTokens(lines)
    assert lt.span(0, len(lines)) == count_tokens("\n".join(lines))
    assert TokenCounter()("a\n  b\nc") == count_tokens("a\n  b\nc") == fast_count("a\n  b\nc")


@pytest.mark.integration
@pytest.mark.integration
def test_bpe_openai_loads_without_its_package_init_and_the_package_still_imports_after():
    """The compiled module alone (the package's __init__ reads three vocabularies at start-up);
    a later ``import bpe_openai`` uses the same module (a PyO3 module loads once per process)."""
    code = (
        "import sys; from esrag.tokens import _bpe_count, count_tokens; n = _bpe_count()('Hello, world!'); "
        "assert 'bpe_openai' not in sys.modules and 'bpe_openai._bindings' in sys.modules; "
        "import bpe_openai; assert bpe_openai.get_encoding('cl100k_base').encode('Hello, world!') == "
        "[9906, 11, 1917, 0]; print(n, count_tokens('Hello, world!'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["4", "4"]
