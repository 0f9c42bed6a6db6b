"""cl100k_base token counting (the unit of every budget in esrag).

tiktoken normally downloads ``cl100k_base.tiktoken`` at first use. esrag ships the file inside
the package (``esrag/data/cl100k_base.tiktoken``, regenerated from the npm package ``tiktoken``
by ``scripts/make-cl100k.py`` and checked against the SHA-256 tiktoken itself checks), so token
counts work offline. The encoding is built with tiktoken's own loader and cl100k's regex.

Many counts of related texts (a document's blocks, groups and chunks) come from one count of
each piece of the text between the places where cl100k's pre-tokenizer always cuts (``_CUT``):
:class:`LineTokens` (line ranges) and :class:`TokenCounter` (any text, line by line), both exact.

:func:`count_tokens` is tiktoken's count (the reference). The chunker's many counts go through
:func:`fast_count` instead, which counts cl100k tokens without building the token list and gives
the same counts (``tests/test_tokens.py`` checks every file, piece and chunk of the four corpora
and random strings of the characters where the pre-tokenizer is delicate, for each backend):

* ``quicktok`` (PyPI ``quicktok-v1``, MIT, C++): ~2.5x ``bpe-openai`` here, ~2.7x on whole
  files; with it ``esrag chunk`` runs at ~0.6x the LangChain header splitter's rate, with
  ``bpe-openai`` at ~0.5x (``benchmarks/bench_chunk.py``, issue 17);
* else GitHub's ``bpe-openai`` Rust crate (``github/rust-gems``, MIT; the PyPI wheel
  ``bpe-openai``): ~2x tiktoken's encoding (its own pre-tokenizer regex is cl100k's rewritten
  without look-ahead);
* else tiktoken. Text neither fast backend can take (lone surrogates) is counted by tiktoken,
  which replaces them.
"""

from __future__ import annotations

import bisect
import functools
import importlib.machinery
import importlib.util
import itertools
import os
import re
import string
import sys
from collections.abc import Callable, Iterable
from importlib import resources
from types import ModuleType

import tiktoken
from tiktoken.load import load_tiktoken_bpe

_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@functools.cache
def _ranks() -> dict[bytes, int]:
    path = resources.files("esrag") / "data" / "cl100k_base.tiktoken"
    return load_tiktoken_bpe(str(path), expected_hash=_CL100K_SHA256)


@functools.cache
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded from the file shipped with esrag (no network)."""
    return tiktoken.Encoding(name="cl100k_base", pat_str=_CL100K_PATTERN, mergeable_ranks=_ranks(), special_tokens=_SPECIAL)


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token strings count as plain text)."""
    return len(encoding().encode_ordinary(text))


@functools.cache
def _bpe_count() -> Callable[[str], int] | None:
    """``bpe-openai``'s cl100k count, or None when it is not installed.

    Its compiled module (``bpe_openai._bindings``, the Rust crate with its vocabularies built in)
    is loaded on its own: the package's ``__init__`` reads three vocabularies from gzip in Python
    for its tiktoken-like wrapper (~0.9 s at start-up, which ``esrag chunk`` does not need). The
    module is registered under its own name, so a later ``import bpe_openai`` uses it."""
    module = sys.modules.get("bpe_openai._bindings") or _load_bpe_bindings()
    if module is None:
        try:
            module = importlib.import_module("bpe_openai._bindings")
        except ImportError:  # not installed (a platform without its wheel): tiktoken counts
            return None
    return module.tokenizer_for_encoding("cl100k_base").count


def _load_bpe_bindings() -> ModuleType | None:
    """``bpe_openai._bindings`` loaded from its file without running ``bpe_openai/__init__``;
    None when it cannot be found or loaded that way."""
    try:
        package = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):
        return None
    for folder in (package.submodule_search_locations or []) if package is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_bindings" + suffix)
            if not os.path.isfile(path):
                continue
            spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
            if spec is None or spec.loader is None:
                return None
            module = importlib.util.module_from_spec(spec)
            sys.modules["bpe_openai._bindings"] = module
            try:
                spec.loader.exec_module(module)
            except ImportError:
                del sys.modules["bpe_openai._bindings"]
                return None
            return module
    return None


def _tiktoken_count(text: str) -> int:
    return len(encoding().encode_ordinary(text))


@functools.cache
def _quicktok_count() -> Callable[[str], int] | None:
    """``quicktok``'s cl100k count (its bundled vocabulary, ~0.3 s to load once), or None when
    it is not installed."""
    try:
        import quicktok
    except ImportError:  # not installed (no wheel for the platform): bpe-openai or tiktoken counts
        return None
    return quicktok.get_encoding("cl100k_base").count


def _valid_count() -> Callable[[str], int]:
    """The fastest exact count of text that encodes to UTF-8 (no lone surrogates)."""
    return _quicktok_count() or _bpe_count() or _tiktoken_count


def fast_backend() -> str:
    """Which counter :func:`fast_count` uses: ``"quicktok"``, ``"bpe-openai"`` or ``"tiktoken"``."""
    return "quicktok" if _quicktok_count() else "bpe-openai" if _bpe_count() else "tiktoken"


def fast_count(text: str) -> int:
    """:func:`count_tokens` of ``text``, by ``quicktok`` or ``bpe-openai`` when installed (see
    the module docstring; text with lone surrogates, which they cannot take, by tiktoken, which
    replaces them)."""
    try:
        return _valid_count()(text)
    except (UnicodeEncodeError, TypeError):  # quicktok's binding refuses lone surrogates with TypeError
        return _tiktoken_count(text)


def count_tokens_batch(texts: list[str]) -> list[int]:
    """cl100k_base token counts of many texts, one after another in this thread.

    (tiktoken's ``encode_ordinary_batch`` starts a thread pool per call: for one document's
    chunks that cost more than the encoding itself — 40% of ``esrag chunk``'s time on the
    Laravel docs, ``benchmarks/bench_chunk.py``.)
    """
    encode = encoding().encode_ordinary
    return [len(encode(t)) for t in texts]


#: Where cl100k's pre-tokenizer always cuts, so that count(text) is the sum of the counts of the
#: pieces: right after a ``\n`` that is followed by spaces or tabs and then a non-space
#: character. (Proof, from ``_CL100K_PATTERN``: the pattern has no look-behind, so matching from
#: a cut depends only on the text after it; the only alternatives that can hold a ``\n`` are
#: ``?[^\s\p{L}\p{N}]++[\r\n]*+``, which stops after the run of line breaks, and
#: ``\s*[\r\n]`` / ``\s++$``, which stop after the last line break of the whitespace run —
#: here that ``\n``, since only spaces and tabs follow it before a non-space character; and
#: ``\s+(?!\S)`` is only tried where ``\s*[\r\n]`` failed, i.e. with no line break ahead in
#: the run. Python's ``\S`` is narrower than the pattern's, as ``str.isspace`` covers every
#: Unicode White_Space character.) ``tests/test_tokens.py`` checks it on the corpora and on
#: random strings.
_CUT = re.compile(r"(?<=\n)(?=[ \t]*\S)")
_ALNUM = frozenset(string.ascii_letters + string.digits)


class TokenCounter:
    """Exact cl100k_base token counts of many texts that share lines (one document's blocks,
    groups and chunks), each distinct line encoded once.

    A text is cut where the pre-tokenizer always cuts (after a line break followed by optional
    spaces or tabs and a non-space character, see ``_CUT``); its count is the sum of the counts
    of its pieces, each remembered. A piece ending in an ASCII letter or digit counts one token
    less than the same piece with a ``\n`` after it (the letter or digit run ends the previous
    pre-token, and ``\n`` is one token), so a chunk's last line reuses that line's count.
    ``counter(text) == count_tokens(text)`` for every text. Keep one counter per document (its
    memory grows with the distinct lines it has seen); not shared between threads.
    """

    def __init__(self) -> None:
        self._memo: dict[str, int] = {}
        self._count = fast_count

    def __call__(self, text: str) -> int:
        """Number of cl100k_base tokens in ``text``."""
        memo = self._memo
        total = 0
        for piece in _CUT.split(text) if "\n" in text else (text,):
            n = memo.get(piece)
            if n is None:
                if piece[-1:] in _ALNUM and (m := memo.get(piece + "\n")) is not None:
                    n = m - 1
                elif piece[-1:] == "\n" and piece[-2:-1] in _ALNUM and (m := memo.get(piece[:-1])) is not None:
                    n = m + 1
                else:
                    n = self._count(piece)
                memo[piece] = n
            total += n
        return total


def encode(text: str) -> list[int]:
    """cl100k_base token ids of ``text``."""
    return encoding().encode_ordinary(text)


def decode(ids: list[int]) -> str:
    """Text of cl100k_base token ids."""
    return encoding().decode(ids)


_CUT_LINE = re.compile(r"[ \t]*\S")


class LineTokens:
    """Exact cl100k_base counts of line ranges of one text, from one count of each of its pieces.

    ``lines`` is the text split at ``\n``. Where the pre-tokenizer always cuts (the start of a
    line that has a non-space character after optional spaces and tabs, see ``_CUT``) a token
    starts, so the text's count is the sum of the counts of its *pieces* from one such *cut
    line* to the next, each counted on its own (:func:`fast_count`), and the tokens from one cut
    line to another are the sum of the pieces between them. A range's count is then the tokens
    from its first line to its last cut line plus the count of the rest (usually its last line
    without the line break after it — one token less than with it when it ends in an ASCII
    letter or digit — else counted, remembered). Ranges that do not start at a cut line, and
    any other text (:meth:`text`), go through a :class:`TokenCounter`. When ranges of lines are
    replaced (the oversize split), :meth:`spliced` gives the new text's counts from these and a
    count of each replaced range. Every count equals :func:`count_tokens` of the same text
    (``tests/test_tokens.py``).
    """

    def __init__(self, lines: list[str], marks: Iterable[int] | None = None) -> None:
        """Count ``lines``.

        Args:
            lines: the text split at ``\n``.
            marks: the 0-based lines whose token offsets will be asked for (the chunker: each
                block's first and last line); the text is then counted in pieces from one of
                these that is a cut line to the next (fewer, longer pieces: each count costs a
                call), and any other cut line's offset is counted when first asked for, from
                the mark before it. None: every cut line.
        """
        self._lines(lines)
        if self._bytes is None:
            return
        cut = self._cut
        if marks is None:
            self._marks = [k for k, c in enumerate(cut) if c]
        else:
            n = len(lines)
            self._marks = sorted({0, *(k for k in marks if 0 <= k < n and cut[k])})
        self._count_pieces()

    def _lines(self, lines: list[str], cut: list[bool] | None = None) -> None:
        """Set the text, the character and byte offsets of ``lines`` and which are cut lines
        (``cut`` when the caller knows them); ``_bytes`` None when the lines hold a line break or
        a lone surrogate (then everything is counted text by text)."""
        self.lines = lines
        self.text = TokenCounter()
        n = len(lines)
        #: character offset of each line's start in the text, and len(text) + 1 at the end
        self.offsets = self._chars = chars = list(itertools.accumulate([len(x) + 1 for x in lines], initial=0))
        text = "\n".join(lines)
        try:
            if text.count("\n") != n - 1:
                raise ValueError("a line holds a line break")  # then the lines are no lines: text by text
            sizes = chars if text.isascii() else list(itertools.accumulate([len(x.encode()) + 1 for x in lines], initial=0))
        except (UnicodeEncodeError, ValueError):  # lone surrogates: tiktoken would replace them; count text by text
            self._cut: list[bool] = [False] * n
            self._bytes: list[int] | None = None
            return
        self._bytes = sizes
        if cut is None:
            # a cut line: [ \t]*\S at its start (_CUT_LINE); a printable ASCII first character is one
            match = _CUT_LINE.match
            cut = [ln != "" and ("!" <= ln[0] <= "~" or match(ln) is not None) for ln in lines]
            cut[0] = True  # the text's start
        self._cut = cut
        self._text = text
        self._count = _valid_count()  # the lines encode to UTF-8 (checked above)
        self._ends: dict[tuple[int, str], int] = {}  # (b, suffix) -> tokens before the last cut line c < b + the rest

    def spliced(self, lines: list[str], edits: list[tuple[int, int, int, int]], marks: Iterable[int]) -> LineTokens:
        """The counts of ``lines``: these lines with ranges of lines replaced, from this text's
        counts and a count of each replaced range only.

        Args:
            lines: the new text's lines.
            edits: ``(a, b, na, nb)`` in order: lines ``a:b`` of this text became lines
                ``na:nb`` of ``lines`` (0-based, end exclusive); every other line is the same
                line, shifted. As :func:`esrag.chunking.split.split_oversize` reports them.
            marks: as for the constructor, for ``lines``.

        Tokens before a cut line outside the edits are this text's plus what the edits before
        it added (the cut rule: the pre-tokenizer cuts there in both texts); each edited range,
        from its first line to the next cut line after it, is counted in pieces between the
        marks in it. Falls back to counting ``lines`` afresh when this text is not
        :attr:`plain` or an edit does not start at a cut line in both texts.
        """
        n = len(lines)
        old_cut = self._cut
        if self._bytes is None or not _consistent(edits, len(old_cut), n) or not all(old_cut[a] for a, _, _, _ in edits):
            return LineTokens(lines, marks)
        match = _CUT_LINE.match
        cut: list[bool] = []
        pos = 0  # the next old line whose cut flag is not yet copied
        for a, b, na, nb in edits:
            cut.extend(old_cut[pos:a])
            cut.extend(ln != "" and ("!" <= ln[0] <= "~" or match(ln) is not None) for ln in lines[na:nb])
            pos = b
        cut.extend(old_cut[pos:])
        if len(cut) != n or not all(cut[na] for _, _, na, _ in edits):
            return LineTokens(lines, marks)
        out = LineTokens.__new__(LineTokens)
        out._lines(lines, cut)
        if out._bytes is None:
            return LineTokens(lines, marks)
        wanted = sorted({k for k in marks if 0 <= k < n and cut[k]})
        old_marks, old_before, old_n = self._marks, self._before, len(old_cut)
        before: dict[int, int] = {}
        new_marks: list[int] = []
        text, chars, count = out._text, out._chars, out._count
        delta = 0  # tokens the edits so far added
        pos = 0  # the next old line not yet mapped
        for a, b, na, nb in edits:
            shift = na - a
            for m in old_marks[bisect.bisect_left(old_marks, pos) : bisect.bisect_left(old_marks, a)]:
                before[m + shift] = old_before[m] + delta
                new_marks.append(m + shift)
            end = b  # the next cut line after the edit (the piece of the edit ends there), or the end
            while end < old_n and not old_cut[end]:
                end += 1
            old_tokens = (self._at(end) if end < old_n else self._total) - self._at(a)
            new_end = end + nb - b
            base = self._at(a) + delta
            inner = [na, *(k for k in wanted[bisect.bisect_right(wanted, na) : bisect.bisect_left(wanted, nb)])]
            counts = [count(text[chars[k] : chars[nk]]) for k, nk in zip(inner, inner[1:])]
            counts.append(count(text[chars[inner[-1]] : chars[new_end]] if new_end < n else text[chars[inner[-1]] :]))
            for k, t in zip(inner, itertools.accumulate(counts, initial=base)):
                before[k] = t
            new_marks.extend(inner)
            delta += sum(counts) - old_tokens
            pos = end
        shift = n - old_n
        for m in old_marks[bisect.bisect_left(old_marks, pos) :]:
            before[m + shift] = old_before[m] + delta
            new_marks.append(m + shift)
        out._total = before[n] = self._total + delta
        out._before, out._marks = before, new_marks
        out._pieces, out._counts = [], []
        return out

    def pieces(self) -> dict[str, int]:
        """The text's pieces between marks (each with its line breaks), with their counts; empty
        for counts made by :meth:`spliced` (which counts only the edited ranges)."""
        return dict(zip(self._pieces, self._counts))

    def _count_pieces(self) -> None:
        """``_before`` (line k -> tokens before it: set at the marks and the end, further cut
        lines added when :meth:`_at` counts them) and ``_total`` from the counts of the pieces
        between marks (a piece's count is its count on its own: the cut rule), each counted by
        :func:`fast_count`. (Every step is a C-level map: this runs once per document.)"""
        text, chars, marks = self._text, self._chars, self._marks
        starts = list(map(chars.__getitem__, marks))
        ends = starts[1:]
        ends.append(len(text))  # the text's last piece has no line break after it
        pieces = list(map(text.__getitem__, map(slice, starts, ends)))
        counts = list(map(self._count, pieces))
        before = dict(zip(marks, itertools.accumulate(counts, initial=0)))
        self._total = before[len(self.lines)] = sum(counts)
        self._before = before
        self._pieces, self._counts = pieces, counts

    def _at(self, k: int) -> int:
        """Tokens before cut line ``k`` (or ``len(lines)``): the count of the text from the mark
        before it to it, added to that mark's, the first time (the cut rule makes it exact)."""
        v = self._before.get(k)
        if v is None:
            marks = self._marks
            m = marks[bisect.bisect_right(marks, k) - 1]
            v = self._before[m] + self._count(self._text[self._chars[m] : self._chars[k]])
            self._before[k] = v
        return v

    @property
    def plain(self) -> bool:
        """True when ``lines`` are real lines (none holds a line break) and the text encodes to
        UTF-8: then counts come by pieces and :meth:`string` slices the text."""
        return self._bytes is not None

    def string(self, a: int, b: int) -> str:
        """``"\n".join(lines[a:b])`` (a slice of the text when the lines hold no line break)."""
        if self._bytes is None or a >= b:
            return "\n".join(self.lines[a:b])
        return self._text[self._chars[a] : self._chars[b] - 1]

    def chars(self, a: int, b: int) -> int:
        """Characters of ``"\n".join(lines[a:b])`` (0 for an empty range)."""
        return max(self._chars[b] - self._chars[a] - 1, 0)

    def size(self, a: int, b: int) -> int:
        """UTF-8 bytes of ``"\n".join(lines[a:b])``."""
        if self._bytes is None:
            return len("\n".join(self.lines[a:b]).encode("utf-8", "surrogatepass"))
        return max(self._bytes[b] - self._bytes[a] - 1, 0)

    def span(self, a: int, b: int, suffix: str = "") -> int:
        """cl100k tokens of ``"\n".join(lines[a:b]) + suffix`` (0-based, ``b`` exclusive)."""
        cut = self._cut
        if a >= b or not cut[a]:
            return self.text("\n".join(self.lines[a:b]) + suffix)
        end = self._ends.get((b, suffix))
        if end is None:  # the same end is asked for by the grouping, its pieces and the merge
            c = b - 1
            while not cut[c]:
                c -= 1
            end = self._ends[b, suffix] = self._at(c) + self._tail(c, b, suffix)
        return end - self._at(a)

    def joined(self, spans: list[tuple[int, int]]) -> int:
        """cl100k tokens of the texts of line ranges ``(a, b)`` (in order, 0-based, ``b``
        exclusive) joined by blank lines (``"\n\n"``): a cut of the pre-tokenizer falls after
        each ``\n\n`` since each next range starts at a cut line."""
        if any(not self._cut[a] or a == 0 for a, _ in spans[1:]):
            return self.text("\n\n".join("\n".join(self.lines[a:b]) for a, b in spans))
        return sum(self.span(a, b, "\n\n") for a, b in spans[:-1]) + self.span(*spans[-1])

    def _tail(self, c: int, b: int, suffix: str) -> int:
        """Tokens of ``"\n".join(lines[c:b]) + suffix`` for a cut line c with no cut line after it
        before b."""
        lines, cut = self.lines, self._cut
        n = c + 1  # the next cut line: the piece of the whole text at c ends there
        while n < len(lines) and not cut[n]:
            n += 1
        if n == len(lines):  # the text's last piece has no line break after it
            if b == n and not suffix:
                return self._total - self._at(c)
        elif b == c + 1 and self._chars[n] - self._chars[b] == n - b:  # lines b..n-1 are empty
            # the piece is lines[c] and n - c line breaks: swap those for the suffix in its last
            # pre-token (see _stem)
            stem = _stem(lines[c])
            if stem is not None:
                before = self._before
                piece = (before.get(n) or self._at(n)) - (before.get(c) or self._at(c))
                return piece - _short_count(stem + "\n" * (n - c)) + _short_count(stem + suffix)
        return self.text("\n".join(lines[c:b]) + suffix)


def _consistent(edits: list[tuple[int, int, int, int]], old_n: int, new_n: int) -> bool:
    """True when ``edits`` (``(a, b, na, nb)``, see :meth:`LineTokens.spliced`) are in order,
    non-empty, within both texts, and the lines between them are the same lines shifted."""
    shift, pos = 0, 0
    for a, b, na, nb in edits:
        if not (pos <= a < b <= old_n and na == a + shift and na < nb <= new_n):
            return False
        shift, pos = nb - b, b
    return bool(edits) and old_n + shift == new_n


_PUNCT = frozenset(string.punctuation)


@functools.lru_cache(maxsize=4096)
def _short_count(text: str) -> int:
    """:func:`count_tokens` of a short text that recurs (a stem and line breaks)."""
    return fast_count(text)


def _stem(line: str) -> str | None:
    r"""What of a one-line text's last cl100k pre-token line breaks after it would join: '' when
    it ends in an ASCII letter or digit (the letter or digit run ends a pre-token; the breaks
    are one of their own), its trailing run of ASCII punctuation with the space before it, if
    any, when the run follows an ASCII letter, digit, space or tab or starts the line (the
    pattern's `` ?[^\s\p{L}\p{N}]++[\r\n]*+`` takes the run and the breaks after it; a
    space before the run is never taken by the match before). None when unsure.

    So ``count(line + s) == count(line + t) - count(stem + t) + count(stem + s)`` for ``s``,
    ``t`` made of line breaks, when ``stem`` is not None (tests/test_tokens.py checks it)."""
    if not line:
        return None
    if line[-1] in _ALNUM:
        return ""
    i = len(line)
    while i and line[i - 1] in _PUNCT:
        i -= 1
    if i == len(line):
        return None
    if i:
        before = line[i - 1]
        if before == " ":
            i -= 1
        elif before not in _ALNUM and before != "\t":
            return None
    return line[i:]
