"""Chunking throughput: esrag's header-led chunker against LangChain's MarkdownHeaderTextSplitter,
in the same process and run, on the Laravel docs repeated ``--copies`` times (10: ~29 MB).

Both are timed in process over the same texts after a warm-up file (so start-up — imports,
parser construction — is left out, as "start-up subtracted" asks), alternating ``--rounds``
times; the best round of each counts. esrag's chunker does everything `esrag chunk` does
per file: CommonMark block parse (markdown-it-py), header stack and section paths, grouping and
merge, the oversize-block split at ``max_block_tokens``, cl100k token counts, ids and hashes.
Also prints the markdown-it block parse alone. The 1-minute load average is printed beside it.

    .venv/bin/python benchmarks/bench_chunk.py [--copies 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import time

from _data import default_chunker, shared_data

from esrag.chunking.blocks import _block_parser, normalize
from esrag.embedding import cpu_features
from esrag.model import Document


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    from langchain_text_splitters import MarkdownHeaderTextSplitter

    docs = shared_data() / "corpora" / "laravel-docs"
    files = [(f"c{i}/{p.name}", p.read_text(encoding="utf-8")) for i in range(args.copies) for p in sorted(docs.glob("*.md"))]
    mb = sum(len(t.encode("utf-8")) for _, t in files) / 1e6
    chunker = default_chunker()
    splitter = MarkdownHeaderTextSplitter([("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")])
    md = _block_parser()
    chunker.chunk(Document(*files[0]))
    splitter.split_text(files[0][1])
    best = {"esrag": float("inf"), "langchain": float("inf"), "parse": float("inf")}
    load = []
    for _ in range(args.rounds):
        load.append(os.getloadavg()[0])
        t0 = time.perf_counter()
        n = sum(len(chunker.chunk(Document(name, text))) for name, text in files)
        best["esrag"] = min(best["esrag"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        m = sum(len(splitter.split_text(text)) for _, text in files)
        best["langchain"] = min(best["langchain"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _, text in files:
            md.parse(normalize(text))
        best["parse"] = min(best["parse"], time.perf_counter() - t0)
    rate = {k: mb / v for k, v in best.items()}
    print(f"{mb:.1f} MB ({len(files)} files): esrag chunker {rate['esrag']:.2f} MB/s ({n} chunks), "
          f"LangChain MarkdownHeaderTextSplitter {rate['langchain']:.2f} MB/s ({m} sections): "
          f"ratio {rate['esrag'] / rate['langchain']:.2f}x (target >= 0.5x); markdown-it block parse alone "
          f"{rate['parse']:.2f} MB/s; load average {', '.join(f'{x:.1f}' for x in load)}; CPU: {' '.join(cpu_features())}")


if __name__ == "__main__":
    main()
