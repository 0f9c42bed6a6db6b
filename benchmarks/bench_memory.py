"""Peak memory of `esrag ingest` on a large tree (target: <= 1.5 GB for 100k chunks).

Builds a synthetic tree of N copies of the Laravel docs, each copy's headers suffixed with its
copy number so that every chunk (and every embedded text) is distinct, then runs the real
``esrag ingest`` command in a child process on the embedded store and reports the child's peak
resident set size (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) and its throughput. A baseline in
the same run: the peak RSS of a child that only loads the embedder and embeds one text, i.e.
the fixed cost of torch + the model, so the growth attributable to the ingest is visible.

    .venv/bin/python benchmarks/bench_memory.py [--copies 19]   # 19 copies ~ 102k chunks (tau_max 800)

This takes as long as embedding that many chunks (~20 minutes for 100k on 2 cores with bf16).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import shared_data

HERE = Path(__file__).resolve().parent
LARAVEL = shared_data() / "corpora" / "laravel-docs"
ESRAG = str(Path(sys.executable).with_name("esrag"))
HEADER = re.compile(r"^(#{1,6} .*?)\s*$", re.MULTILINE)


def build_tree(root: Path, copies: int) -> None:
    files = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(LARAVEL.glob("*.md"))]
    for i in range(copies):
        folder = root / f"copy{i:03d}"
        folder.mkdir(parents=True)
        for name, text in files:
            (folder / name).write_text(HEADER.sub(lambda m, i=i: f"{m.group(1)} (copy {i})", text), encoding="utf-8")


def child_peak_mb(cmd: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak_kb <= before:
        raise RuntimeError("peak RSS of this child is masked by an earlier, larger child; run it first")
    return peak_kb / 1024, seconds, proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=19)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        build_tree(tree, args.copies)
        env = {**os.environ, "ESRAG_DB": str(Path(tmp) / "esrag.db")}
        probe = [sys.executable, "-c", "from esrag.embedding import SentenceTransformerEmbedder as E; E().embed_documents(['x'])"]
        base_mb, _, _ = child_peak_mb(probe, env)
        peak_mb, seconds, proc = child_peak_mb([ESRAG, "ingest", str(tree), "--json"], env)
        if proc.returncode != 0:
            sys.exit(proc.stderr[-2000:])
        summary = json.loads(proc.stdout)
    chunks = summary["chunks_new"]
    print(f"baseline (torch + model, one text): peak RSS {base_mb:,.0f} MB")
    print(
        f"esrag ingest of {chunks:,} chunks ({args.copies} copies of {LARAVEL.name}): peak RSS {peak_mb:,.0f} MB "
        f"({peak_mb / base_mb:.2f}x the baseline, +{peak_mb - base_mb:,.0f} MB), {seconds:,.0f} s, {chunks / seconds:.1f} chunks/s"
    )
    print(f"target: peak <= 1,536 MB: {'met' if peak_mb <= 1536 else 'NOT met'}")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "memory.json").write_text(
        json.dumps({"chunks": chunks, "copies": args.copies, "peak_mb": peak_mb, "baseline_mb": base_mb, "seconds": seconds}, indent=2)
    )


if __name__ == "__main__":
    main()
