"""Language detection speed (esrag.language.detect) on real chunks: the Laravel docs' header-led
chunks, per chunk (ms) and per MB of chunk text, best of ``--rounds``; the 1-minute load average is
printed beside it (the machine may be shared). Detection runs once per chunk at ingest, so this is
the cost it adds to a first ingest.

    .venv/bin/python benchmarks/bench_language.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import time

from _data import default_chunker, shared_data

from esrag.language import detect
from esrag.model import Document


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    docs = shared_data() / "corpora" / "laravel-docs"
    chunker = default_chunker()
    texts = [c.text for p in sorted(docs.glob("*.md")) for c in chunker.chunk(Document(p.name, p.read_text(encoding="utf-8")))]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    detect(texts[0])  # warm-up: model load
    best = float("inf")
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        found = [detect(t) for t in texts]
        best = min(best, time.perf_counter() - t0)
    english = sum(f == "en" for f in found) / max(sum(bool(f) for f in found), 1)
    print(
        f"{len(texts)} chunks, {mb:.2f} MB: {1000 * best / len(texts):.3f} ms a chunk, {mb / best:.2f} MB/s, "
        f"{english:.1%} of decided chunks English; load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
