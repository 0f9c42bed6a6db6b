"""Chunking throughput: esrag's header-led chunker against LangChain's MarkdownHeaderTextSplitter,
in the same process and run, on the Laravel docs repeated ``--copies`` times (10: ~29 MB).

Both are timed in process over the same texts after a warm-up file (so start-up — imports,
parser construction — is left out, as "start-up subtracted" asks). The comparison is
interleaved finely, so that a change of machine load falls on both alike (the splitter alone
moves by ±20% between back-to-back runs here): each of ``--rounds`` rounds walks the files in
slices of ``--slice`` files, and times esrag's chunker and the splitter on each slice in turn
(which goes first alternates slice by slice). A round's ratio is esrag's rate over the
splitter's over the whole round; the run reports the median ratio over the rounds with its
range, and each side's rate in its best round. esrag's chunker does everything `esrag chunk`
does per file: CommonMark block parse (markdown-it-py and esrag's block scanner), header stack
and section paths, grouping and merge, the oversize-block split at ``max_block_tokens``, cl100k
token counts, ids and hashes.

With ``--parts`` it also times, once per round, the parts on their own: markdown-it's block
parse of each file (what the chunker did before issue 17), esrag's block scanner
(:func:`esrag.formats.markdown_scan.top_level_blocks`, markdown-it only for the blocks it leaves), one
cl100k encoding of each file (tiktoken), and one count of each file by the counter the chunker
uses (:func:`esrag.tokens.fast_count`: quicktok, else bpe-openai; the least the exact token
counts cost). The 1-minute load average of each round is printed beside it. Every round's
numbers go to ``benchmarks/results/chunk.json`` (``--out``).

    .venv/bin/python benchmarks/bench_chunk.py [--copies 10] [--rounds 7] [--slice 20] [--parts]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from _data import default_chunker, shared_data

from esrag.embedding import cpu_features
from esrag.formats.markdown_blocks import _block_parser, _region_parser, normalize
from esrag.formats.markdown_scan import top_level_blocks
from esrag.model import Document
from esrag.tokens import _valid_count, encoding, fast_backend


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--slice", type=int, default=20, help="files timed by one side before the other takes them")
    ap.add_argument("--parts", action="store_true", help="also time the parts on their own")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "chunk.json")
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
    slices = [files[i : i + args.slice] for i in range(0, len(files), args.slice)]

    def esrag(part) -> int:
        return sum(len(chunker.chunk(Document(name, text))) for name, text in part)

    def langchain(part) -> int:
        return sum(len(splitter.split_text(text)) for _, text in part)

    ratios, load, rounds = [], [], []
    best = {
        "esrag": float("inf"),
        "langchain": float("inf"),
        "parse": float("inf"),
        "scan": float("inf"),
        "encode": float("inf"),
        "fast": float("inf"),
    }
    n = m = 0
    print(
        f"{mb:.1f} MB ({len(files)} files), {args.rounds} rounds of {len(slices)} slices; per round: "
        "esrag MB/s, LangChain MB/s, ratio, load"
    )
    for r in range(args.rounds):
        load.append(os.getloadavg()[0])
        spent = {"esrag": 0.0, "langchain": 0.0}
        n = m = 0
        for k, part in enumerate(slices):
            for side in ("esrag", "langchain") if (k + r) % 2 == 0 else ("langchain", "esrag"):
                t0 = time.perf_counter()
                got = esrag(part) if side == "esrag" else langchain(part)
                spent[side] += time.perf_counter() - t0
                if side == "esrag":
                    n += got
                else:
                    m += got
        for side, t in spent.items():
            best[side] = min(best[side], t)
        ratios.append(spent["langchain"] / spent["esrag"])
        rounds.append(
            {"esrag_mb_s": mb / spent["esrag"], "langchain_mb_s": mb / spent["langchain"], "ratio": ratios[-1], "load_1min": load[-1]}
        )
        print(
            f"  round {r + 1}: {mb / spent['esrag']:.2f}  {mb / spent['langchain']:.2f}  {ratios[-1]:.3f}x  load {load[-1]:.1f}", flush=True
        )
        if args.parts:
            for key, step in (
                ("parse", lambda t: md.parse(normalize(t))),
                ("scan", lambda t: top_level_blocks(md, normalize(t), {}, region_md)),
                ("encode", lambda t: encode(normalize(t))),
                ("fast", lambda t: fast(normalize(t))),
            ):
                t0 = time.perf_counter()
                for _, text in files:
                    step(text)
                best[key] = min(best[key], time.perf_counter() - t0)
    rate = {k: mb / v for k, v in best.items()}
    lc = rate["langchain"]
    print(
        f"esrag chunker {rate['esrag']:.2f} MB/s ({n} chunks), LangChain MarkdownHeaderTextSplitter {lc:.2f} MB/s "
        f"({m} sections), each in its best round; ratio per round: median {statistics.median(ratios):.3f}x, "
        f"min {min(ratios):.3f}x, max {max(ratios):.3f}x (target >= 0.5x)"
    )
    if args.parts:
        print(
            f"parts alone (best round): markdown-it block parse {rate['parse']:.2f} MB/s ({rate['parse'] / lc:.2f}x), "
            f"esrag block scanner {rate['scan']:.2f} MB/s ({rate['scan'] / lc:.2f}x), one cl100k encoding per file "
            f"{rate['encode']:.2f} MB/s ({rate['encode'] / lc:.2f}x), one count per file by the chunker's counter "
            f"({fast_backend()}) {rate['fast']:.2f} MB/s ({rate['fast'] / lc:.2f}x)"
        )
    print(f"load average (1 min) per round: {', '.join(f'{x:.1f}' for x in load)}; CPU: {' '.join(cpu_features())}")
    result = {
        "mb": mb,
        "files": len(files),
        "chunks": n,
        "sections": m,
        "slice": args.slice,
        "counter": fast_backend(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_features": cpu_features(),
        "rounds": rounds,
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "best_mb_s": {k: v for k, v in rate.items() if k in ("esrag", "langchain") or args.parts},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
