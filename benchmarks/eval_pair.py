"""Paired contrasts between two ``esrag eval`` runs (e.g. two embedders, which one run cannot
hold: the harness has one embedder per run).

    python benchmarks/eval_pair.py RUN_A/questions.jsonl ARM/RETRIEVER RUN_B/questions.jsonl ARM/RETRIEVER \
        [--metric rec@512t|mrr|recall@1|...] [--resamples 10000]

Reads the per-question records both runs wrote (``questions.jsonl``, or gzipped ``.jsonl.gz``), pairs them by question id, and prints A − B in
points with the same statistics as the harness's contrasts (:func:`esrag.eval.stats.compare`:
BCa cluster-bootstrap 95% CI, sign-flip permutation p), clusters as the records name them
(Qasper: papers; docs: questions).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from esrag.eval.stats import compare, paired_differences


def read_records(path: Path) -> list[str]:
    """The lines of a run's ``questions.jsonl`` (or ``questions.jsonl.gz``, as kept in benchmarks/results/)."""
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    return path.read_text(encoding="utf-8").splitlines()


def _values(path: Path, side: str, metric: str) -> tuple[dict[str, float], dict[str, str]]:
    arm, _, retriever = side.partition("/")
    values, clusters = {}, {}
    for line in read_records(path):
        r = json.loads(line)
        if r["arm"] == arm and r["retriever"] == retriever:
            values[r["question_id"]] = r[metric] / 100.0
            clusters[r["question_id"]] = r["cluster"]
    if not values:
        raise SystemExit(f"{path}: no records of {side}")
    return values, clusters


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a_file", type=Path)
    p.add_argument("a")
    p.add_argument("b_file", type=Path)
    p.add_argument("b")
    p.add_argument("--metric", default="rec@512t")
    p.add_argument("--resamples", type=int, default=10_000)
    args = p.parse_args()
    a, clusters = _values(args.a_file, args.a, args.metric)
    b, _ = _values(args.b_file, args.b, args.metric)
    c = compare(paired_differences(a, b, clusters), None, args.resamples, 0)
    out = {
        "a": f"{args.a_file.parent.name}:{args.a}",
        "b": f"{args.b_file.parent.name}:{args.b}",
        "metric": args.metric,
        "a_mean": round(100 * sum(a.values()) / len(a), 2),
        "b_mean": round(100 * sum(b.values()) / len(b), 2),
        "estimate": round(c.estimate, 2),
        "ci95": [round(c.ci95[0], 2), round(c.ci95[1], 2)],
        "p_perm": round(c.p_perm, 4),
        "n_questions": c.n_obs,
        "n_clusters": c.n_clusters,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
