"""rec@512t on the Qasper slice with the Elasticsearch store, per vector index option.

``esrag eval`` indexes each pool (one Qasper paper) into a fresh embedded store; here the same
harness (:func:`esrag.eval.harness.run_eval`, same chunking, cached vectors, pipeline and
metrics) indexes each pool into a fresh Elasticsearch alias instead (``bench-qasper-*``, dropped
after the pool), once per ``index_options`` value, so the dense and hybrid numbers differ only by
how Elasticsearch indexes the vectors. Arm ``default``; retrievers dense and hybrid.

Note: the integ-test node has no ``porter_stem``, so its BM25 leg analyzes without stemming and
hybrid numbers are not the embedded store's (docs/evaluation.md); compare options with each other.

    flock /tmp/esrag-bench.lock .venv/bin/python benchmarks/eval_es_options.py \\
        [--url http://127.0.0.1:9200] [--options hnsw,int8_hnsw,bbq_hnsw+0,bbq_hnsw+3] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from esrag import __version__
from esrag.eval import harness
from esrag.eval.datasets import parse_dataset_arg
from esrag.ingest import meta_hash
from esrag.stores.base import IndexMeta
from esrag.stores.elastic import ClusterWarning, ElasticStore

HERE = Path(__file__).resolve().parent
console = Console(stderr=True)


class _PoolStore(ElasticStore):
    """One pool's alias; closing it drops everything it made. ``path`` exists only because the
    harness removes its SQLite files after each pool (``missing_ok``)."""

    path = Path("/nonexistent/esrag-eval-es")

    def close(self) -> None:
        self.drop()
        super().close()


def open_es(url: str, option: str):
    kind, _, over = option.partition("+")

    def _open(run, path, arm, chunks, vectors, embedder) -> Any:
        store = _PoolStore(
            url,
            f"bench-qasper-{uuid.uuid4().hex[:10]}",
            index_options=kind,
            rescore_oversample=float(over) if over else None,
            request_timeout=120,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClusterWarning)
            store.ensure(
                IndexMeta(embedder.spec, embedder.dims, list(arm.embed_fields), dict(arm.bm25_fields), __version__, analyzer=arm.analyzer)
            )
            if chunks:
                store.write(chunks, vectors, [meta_hash(c) for c in chunks])
            store.refresh()
        return store

    return _open


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:9200")
    ap.add_argument("--options", default="hnsw,int8_hnsw,bbq_hnsw+0,bbq_hnsw+3")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    cfg = harness.load_config(HERE.parent / "eval" / "qasper.toml")
    cfg = harness.apply_overrides(cfg, parse_dataset_arg(f"qasper:{cfg.path}"), ["default"], ["dense", "hybrid"], [512], None, args.limit)
    results: dict[str, Any] = {"url": args.url, "arm": "default", "budget": 512, "options": {}}
    for option in args.options.split(","):
        harness._open_store = open_es(args.url, option)  # type: ignore[assignment]  # the benchmark's one seam: ES pools
        t0, load0 = time.perf_counter(), os.getloadavg()[0]
        run = harness.run_eval(cfg)
        row: dict[str, Any] = {"seconds": round(time.perf_counter() - t0, 1), "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)]}
        for retriever in ("dense", "hybrid"):
            recs = [r.rec[512] for r in run.results if r.retriever == retriever]
            row[retriever] = {"rec@512t": round(100 * float(np.mean(recs)), 2), "questions": len(recs)}
        results["options"][option] = row
        console.print(f"{option}: {row}")
    t = Table(title="Qasper slice, arm default, Elasticsearch store (rec@512t, points; CPU avx512_bf16)")
    for col in ("index_options", "dense", "hybrid", "questions", "seconds", "load"):
        t.add_column(col)
    for option, row in results["options"].items():
        t.add_row(
            option,
            f"{row['dense']['rec@512t']:.1f}",
            f"{row['hybrid']['rec@512t']:.1f}",
            str(row["dense"]["questions"]),
            str(row["seconds"]),
            str(row["loadavg"]),
        )
    console.print(t)
    out = HERE / "results" / "qasper_es_options.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
