"""How much of a tuned arm's gain is selection: choose the best arm on half the clusters, measure
its gain over a baseline on the other half (two-fold cross-fitting, repeated over random halves).

    python benchmarks/eval_crossfit.py BASE/questions.jsonl ARM/RETRIEVER RUN/questions.jsonl [RUN2/questions.jsonl ...] \
        [--retriever hybrid] [--metric rec@512t] [--repeats 200]

Every (arm, retriever) of the candidate runs is a candidate (records as ``esrag eval`` writes them,
plain or gzipped; several runs, e.g. several embedders, may be pooled). Clusters (Qasper: papers;
docs: questions) are split at random into halves A and B; the candidate with the best mean on A is
scored on B against the baseline, and the other way round. The in-sample gain of the overall best
candidate is optimistic by the choice itself (the winner's curse); the cross-fitted gain is an
honest estimate of what the *procedure* "tune on this set, ship the winner" gains on new data.
Prints the in-sample best, the held-out gains (mean, median, 5th and 95th percentiles, in points)
and how often each candidate was picked, as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from eval_pair import read_records


def load(path: Path, retriever: str, metric: str) -> dict[str, dict[str, tuple[str, float]]]:
    """``{"run:arm/retriever": {question_id: (cluster, value)}}`` of one run's records."""
    out: dict[str, dict[str, tuple[str, float]]] = {}
    for line in read_records(path):
        r = json.loads(line)
        if r["retriever"] == retriever:
            out.setdefault(f"{path.parent.name}:{r['arm']}/{r['retriever']}", {})[r["question_id"]] = (r["cluster"], float(r[metric]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base_file", type=Path)
    p.add_argument("base")
    p.add_argument("runs", type=Path, nargs="+")
    p.add_argument("--retriever", default="hybrid")
    p.add_argument("--metric", default="rec@512t")
    p.add_argument("--repeats", type=int, default=200)
    args = p.parse_args()
    arm, _, retriever = args.base.partition("/")
    base = load(args.base_file, retriever, args.metric)[f"{args.base_file.parent.name}:{arm}/{retriever}"]
    candidates: dict[str, dict[str, tuple[str, float]]] = {}
    for run in args.runs:
        candidates.update(load(run, args.retriever, args.metric))
    candidates = {k: v for k, v in candidates.items() if set(v) >= set(base)}
    if not candidates:
        raise SystemExit("no candidate run holds every question of the baseline")
    clusters = sorted({c for c, _ in base.values()})

    def gain(name: str, questions: list[str]) -> float:
        return statistics.mean(candidates[name][q][1] - base[q][1] for q in questions)

    every = list(base)
    best = max(candidates, key=lambda n: gain(n, every))
    held_out: list[float] = []
    picks: dict[str, int] = {}
    for seed in range(args.repeats):
        order = clusters[:]
        random.Random(seed).shuffle(order)
        half = set(order[: len(order) // 2])
        a = [q for q in every if base[q][0] in half]
        b = [q for q in every if base[q][0] not in half]
        for tune, test in ((a, b), (b, a)):
            chosen = max(candidates, key=lambda n: gain(n, tune))
            picks[chosen] = picks.get(chosen, 0) + 1
            held_out.append(gain(chosen, test))
    held_out.sort()
    n = len(held_out)
    print(
        json.dumps(
            {
                "metric": args.metric,
                "baseline": f"{args.base_file.parent.name}:{args.base}",
                "candidates": len(candidates),
                "in_sample_best": best,
                "in_sample_gain": round(gain(best, every), 2),
                "held_out_gain": {
                    "mean": round(statistics.mean(held_out), 2),
                    "median": round(held_out[n // 2], 2),
                    "p05": round(held_out[int(0.05 * n)], 2),
                    "p95": round(held_out[int(0.95 * n)], 2),
                    "folds": n,
                },
                "picked": dict(sorted(picks.items(), key=lambda kv: -kv[1])[:8]),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
