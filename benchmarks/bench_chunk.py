"""Chunking throughput: esrag's header-led chunker against LangChain's MarkdownHeaderTextSplitter,
in the same process and run, on the Laravel docs repeated ``--copies`` times (10: ~29 MB).

Both are timed in process over the same texts after a warm-up file (so start-up — imports,
parser construction — is left out, as "start-up subtracted" asks), alternating ``--rounds``
times; the best round of each counts. esrag's chunker does everything `esrag chunk` does
per file: CommonMark block parse (markdown-it-py), header stack and section paths, grouping and
merge, the oversize-block split at ``max_block_tokens``, cl100k token counts, ids and hashes.
Also prints, in the same rounds, three parts on their own: markdown-it's block parse of each
file (what the chunker did before issue 17), esrag's block scanner
(:func:`esrag.chunking.scan.top_level_blocks`, markdown-it only for the blocks it leaves), and
one cl100k encoding of each file (tiktoken), and one count of each file by the counter the
chunker uses (:func:`esrag.tokens.fast_count`: quicktok, else bpe-openai; the least the exact
token counts cost). The 1-minute load average of each round is printed beside it.

    .venv/bin/python benchmarks/bench_chunk.py [--copies 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import time

from _data import default_chunker, shared_data

from esrag.chunking.blocks import _block_parser, _region_parser, normalize
from esrag.chunking.scan import top_level_blocks
from esrag.embedding import cpu_features
from esrag.model import Document
from esrag.tokens import _valid_count, encoding, fast_backend


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
    md, region_md = _block_parser(), _region_parser()
    encode = encoding().encode_ordinary
    fast = _valid_count()  # the chunker's counter (every Laravel file encodes to UTF-8)
    chunker.chunk(Document(*files[0]))
    splitter.split_text(files[0][1])
    best = {"esrag": float("inf"), "langchain": float("inf"), "parse": float("inf"), "scan": float("inf"),
            "encode": float("inf"), "fast": float("inf")}
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
        t0 = time.perf_counter()
        for _, text in files:
            top_level_blocks(md, normalize(text), {}, region_md)
        best["scan"] = min(best["scan"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _, text in files:
            encode(normalize(text))
        best["encode"] = min(best["encode"], time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _, text in files:
            fast(normalize(text))
        best["fast"] = min(best["fast"], time.perf_counter() - t0)
    rate = {k: mb / v for k, v in best.items()}
    lc = rate["langchain"]
    print(f"{mb:.1f} MB ({len(files)} files), best of {args.rounds} rounds: esrag chunker {rate['esrag']:.2f} MB/s "
          f"({n} chunks), LangChain MarkdownHeaderTextSplitter {lc:.2f} MB/s ({m} sections): ratio "
          f"{rate['esrag'] / lc:.2f}x (target >= 0.5x)")
    print(f"parts alone: markdown-it block parse {rate['parse']:.2f} MB/s ({rate['parse'] / lc:.2f}x), esrag block scanner "
          f"{rate['scan']:.2f} MB/s ({rate['scan'] / lc:.2f}x), one cl100k encoding per file {rate['encode']:.2f} MB/s "
          f"({rate['encode'] / lc:.2f}x), one count per file by the chunker's counter ({fast_backend()}) "
          f"{rate['fast']:.2f} MB/s ({rate['fast'] / lc:.2f}x)")
    print(f"load average (1 min) per round: {', '.join(f'{x:.1f}' for x in load)}; CPU: {' '.join(cpu_features())}")


if __name__ == "__main__":
    main()
