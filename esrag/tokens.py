"""cl100k_base token counting (the unit of every budget in esrag).

tiktoken normally downloads ``cl100k_base.tiktoken`` at first use. esrag ships the file inside
the package (``esrag/data/cl100k_base.tiktoken``, regenerated from the npm package ``tiktoken``
by ``scripts/make-cl100k.py`` and checked against the SHA-256 tiktoken itself checks), so token
counts work offline. The encoding is built with tiktoken's own loader and cl100k's regex.
"""

from __future__ import annotations

import functools
from importlib import resources

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
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded from the file shipped with esrag (no network)."""
    path = resources.files("esrag") / "data" / "cl100k_base.tiktoken"
    ranks = load_tiktoken_bpe(str(path), expected_hash=_CL100K_SHA256)
    return tiktoken.Encoding(
        name="cl100k_base", pat_str=_CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=_SPECIAL
    )


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token strings count as plain text)."""
    return len(encoding().encode_ordinary(text))


def count_tokens_batch(texts: list[str]) -> list[int]:
    """cl100k_base token counts of many texts, one after another in this thread.

    (tiktoken's ``encode_ordinary_batch`` starts a thread pool per call: for one document's
    chunks that cost more than the encoding itself — 40% of ``esrag chunk``'s time on the
    Laravel docs, ``benchmarks/bench_chunk.py``.)
    """
    encode = encoding().encode_ordinary
    return [len(encode(t)) for t in texts]


def encode(text: str) -> list[int]:
    """cl100k_base token ids of ``text``."""
    return encoding().encode_ordinary(text)


def decode(ids: list[int]) -> str:
    """Text of cl100k_base token ids."""
    return encoding().decode(ids)
