"""The bulk-load profile (``[elasticsearch] bulk_load``) measured: the store side of a first
ingest of the Laravel docs — ``ensure`` (creates the index), ``write`` in the Ingester's windows
of 1,024 chunks, ``refresh`` (which ends the profile: restores refresh_interval and replicas,
refreshes, waits for green) — with the profile on and off, on the 3-node cluster (3 shards,
1 replica) and on one node (1 shard, the template's replicas: 0), alternating on/off.

The chunks and vectors are those of a real ingest of the Laravel docs with the default embedder
(all-MiniLM-L6-v2, 384 dims) into the embedded store, its vectors served by the embedding cache
(``--cache``; a cold cache is filled once, which takes minutes). Run it under the bench lock:

    flock /tmp/esrag-bench.lock .venv/bin/python benchmarks/bench_bulk_load.py \\
        --cluster http://127.0.0.1:9400,http://127.0.0.1:9401,http://127.0.0.1:9402 --single http://127.0.0.1:9200

Prints one line per run and a summary with the load average (os.getloadavg) beside every
timing; writes benchmarks/results/bench_bulk_load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
import warnings
from pathlib import Path

from esrag.app import ingest_tree
from esrag.config import Settings
from esrag.stores.elastic import ClusterWarning, ElasticStore
from esrag.stores.elastic.cluster import ClusterOptions
from esrag.stores.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[1]
LARAVEL = Path(os.environ.get("ESRAG_SHARED_DIR", "/work/shared")) / "data" / "corpora" / "laravel-docs"
WINDOW = 1024


def load(work: Path, cache: Path) -> tuple:
    """Chunks, vectors, meta hashes and meta of the Laravel docs as a real ingest makes them."""
    settings = Settings(db=work / "esrag.db", embedding_cache=cache, es_url=None)
    store = SQLiteStore(work / "esrag.db")
    t0 = time.perf_counter()
    summary = ingest_tree(settings, store, LARAVEL, corpus="laravel").summary
    print(
        f"prepared: {summary.chunks_new} new chunks, {summary.embeddings_computed} embeddings computed "
        f"(the rest from the cache), {time.perf_counter() - t0:.1f} s, load {os.getloadavg()[0]:.2f}"
    )
    manifest = store.manifest("laravel")
    entries = {i: e for per_file in manifest.values() for i, e in per_file.items()}
    ids = sorted(entries)
    chunks = store.get(ids)
    vecs = store.vectors(ids)
    meta = store.meta()
    store.close()
    import numpy as np

    return chunks, np.stack([vecs[c.id] for c in chunks]), [entries[c.id].meta_hash for c in chunks], meta


def run(url: str, opts: ClusterOptions, chunks, vectors, hashes, meta) -> dict:
    s = ElasticStore(url, f"esrag-bench-bl-{uuid.uuid4().hex[:8]}", cluster=opts)
    load_before = os.getloadavg()[0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClusterWarning)
            t0 = time.perf_counter()
            s.ensure(meta)
            for start in range(0, len(chunks), WINDOW):
                report = s.write(chunks[start : start + WINDOW], vectors[start : start + WINDOW], hashes[start : start + WINDOW])
                assert not report.failed, list(report.failed.items())[:3]
            t1 = time.perf_counter()
            s.refresh()
            t2 = time.perf_counter()
        index = s._state()["concrete"]
        health = s._es.cluster.health(index=index).body["status"]
        count = s._es.count(index=s.alias).body["count"]
        assert count == len(chunks), (count, len(chunks))
    finally:
        s.drop()
        s.close()
    return {
        "write_s": round(t1 - t0, 3),
        "end_s": round(t2 - t1, 3),
        "total_s": round(t2 - t0, 3),
        "health": health,
        "chunks": count,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", default="http://127.0.0.1:9400,http://127.0.0.1:9401,http://127.0.0.1:9402")
    ap.add_argument("--single", default="http://127.0.0.1:9200")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/esrag-bench-bulk-load"))
    ap.add_argument("--cache", type=Path, default=None, help="embedding cache (default: WORK/embedding_cache.db)")
    ap.add_argument(
        "--copies", type=int, default=1, help="index the chunks this many times (copy k: ids and paths prefixed copy-k/), for a larger load"
    )
    ap.add_argument("--out", type=Path, default=None, help="default benchmarks/results/bench_bulk_load[-xN].json")
    args = ap.parse_args()
    suffix = f"-x{args.copies}" if args.copies > 1 else ""
    args.out = args.out or ROOT / "benchmarks" / "results" / f"bench_bulk_load{suffix}.json"
    args.work.mkdir(parents=True, exist_ok=True)
    (args.work / "esrag.db").unlink(missing_ok=True)
    chunks, vectors, hashes, meta = load(args.work, args.cache or args.work / "embedding_cache.db")
    if args.copies > 1:
        import dataclasses

        import numpy as np

        chunks = [
            dataclasses.replace(c, id=f"copy-{k}/{c.id}", source_path=f"copy-{k}/{c.source_path}")
            for k in range(args.copies)
            for c in chunks
        ]
        vectors, hashes = np.concatenate([vectors] * args.copies), hashes * args.copies
    setups = {
        "cluster-3-nodes (3 shards, 1 replica)": (args.cluster, {"shards": 3, "replicas": 1}),
        "single-node (1 shard, template replicas)": (args.single, {"shards": 1, "replicas": None}),
    }
    results: dict[str, dict[str, list[dict]]] = {}
    for name, (url, base) in setups.items():
        results[name] = {"on": [], "off": []}
        run(url, ClusterOptions(**base, bulk_load=False), chunks, vectors, hashes, meta)  # warm-up (JIT, caches)
        for rep in range(args.repeats):
            for profile in ("on", "off") if rep % 2 == 0 else ("off", "on"):
                got = run(url, ClusterOptions(**base, bulk_load=profile == "on"), chunks, vectors, hashes, meta)
                results[name][profile].append(got)
                print(
                    f"{name:42s} profile {profile:3s}: write {got['write_s']:6.2f} s + end {got['end_s']:5.2f} s = "
                    f"{got['total_s']:6.2f} s ({len(chunks)} chunks, {got['health']}), load {got['load_before']:.2f}->{got['load_after']:.2f}"
                )
    summary = {}
    for name, arms in results.items():
        med = {p: statistics.median(r["total_s"] for r in runs) for p, runs in arms.items()}
        summary[name] = {
            "median_total_s": med,
            "gain": round(1 - med["on"] / med["off"], 3),
            "chunks_per_s": {p: round(len(chunks) / v, 1) for p, v in med.items()},
        }
        print(
            f"{name}: median on {med['on']:.2f} s vs off {med['off']:.2f} s -> {summary[name]['gain']:+.1%} "
            f"({summary[name]['chunks_per_s']['on']:.0f} vs {summary[name]['chunks_per_s']['off']:.0f} chunks/s)"
        )
    out = {
        "chunks": len(chunks),
        "copies": args.copies,
        "dims": int(vectors.shape[1]),
        "window": WINDOW,
        "repeats": args.repeats,
        "cpu": "2 cores, avx512_bf16",
        "loadavg_end": os.getloadavg(),
        "summary": summary,
        "runs": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
