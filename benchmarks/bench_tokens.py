"""What esrag embeds per chunk, in the model's own wordpieces, against the model's window.

For the default chunker and indexed text (section path + text) on a tree (default: the Laravel
docs), prints the distribution of wordpieces per embedded text (special tokens included, before
truncation), the share of texts and of wordpieces beyond the window (all-MiniLM-L6-v2: 256 —
cut off by the tokenizer, never seen by the model), and the padding that batching adds when
batches are sorted by characters (what esrag did) or by wordpieces, at ``--batch-size``.

    .venv/bin/python benchmarks/bench_tokens.py [--docs DIR] [--batch-size 16]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _data import default_chunker, shared_data
from tokenizers import Tokenizer

from esrag.embedding import resolve_model_path
from esrag.embedding.openvino_backend import max_seq_length
from esrag.indexed_text import embed_text
from esrag.model import Document


def padding_share(lengths: list[int], order: list[int], batch: int, window: int) -> float:
    """Padded positions / real positions when ``order`` is cut into batches of ``batch``."""
    real = padded = 0
    for s in range(0, len(order), batch):
        cut = [min(lengths[i], window) for i in order[s : s + batch]]
        real += sum(cut)
        padded += max(cut) * len(cut) - sum(cut)
    return padded / real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=shared_data() / "corpora" / "laravel-docs")
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    model = Path(resolve_model_path("all-MiniLM-L6-v2"))
    window = max_seq_length(model)
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.no_truncation()
    chunker = default_chunker()
    texts = [
        embed_text(c, ["section_path", "text"])
        for p in sorted(args.docs.rglob("*.md"))
        for c in chunker.chunk(Document(p.name, p.read_text(encoding="utf-8")))
    ]
    n = [len(e.ids) for e in tok.encode_batch(texts)]
    a = np.asarray(n)
    over = a > window
    print(
        f"{args.docs.name}: {len(a)} embedded texts; wordpieces per text: "
        f"p50 {np.percentile(a, 50):.0f}, p90 {np.percentile(a, 90):.0f}, p99 {np.percentile(a, 99):.0f}, max {a.max()}"
    )
    print(
        f"over the {window}-wordpiece window: {over.sum()} texts ({100 * over.mean():.1f} %); "
        f"wordpieces past the window: {int((a[over] - window).sum())} of {int(a.sum())} ({100 * (a[over] - window).sum() / a.sum():.1f} %)"
    )
    by_chars = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    by_pieces = sorted(range(len(texts)), key=lambda i: n[i])
    print(
        f"padding at batch {args.batch_size}: sorted by characters {100 * padding_share(n, by_chars, args.batch_size, window):.1f} %, "
        f"by wordpieces {100 * padding_share(n, by_pieces, args.batch_size, window):.1f} %, "
        f"unsorted {100 * padding_share(n, list(range(len(n))), args.batch_size, window):.1f} % of the real positions"
    )


if __name__ == "__main__":
    main()
