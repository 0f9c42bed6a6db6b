"""Where should a search response end? Tokens per ``search_docs`` response against evidence
recall within it, for relevance cut-off rules (issue 38: "relevance, not the budget, ends a
response").

Every corpus of the documentation question set (``eval/docs_questions.jsonl``: 87 questions over
9 shared sites) is ingested once into one embedded store (``--db``, kept between runs: a second
run re-ingests nothing). Each question is then searched exactly as ``esrag mcp``'s
``search_docs(query, corpus)`` does at the default ``token_budget`` (2,000): the same service
call, the same candidates, the same Markdown rendering (:func:`esrag.serve.responses.search_markdown`).
Each rule keeps a prefix of the ranked hits; the response is rendered from that prefix. Per rule:

* **tokens**: cl100k tokens of the response text (mean and median);
* **rec**: evidence recall within the response (the question's evidence sentences matched on word
  5-grams against the response text, as rec@Bt: :func:`esrag.eval.metrics.found`);
* **sec**: the share of questions whose gold section (page + heading tail) is among the hits shown.

The baseline is today's response (every hit that fits the budget), measured in the same run.

    .venv/bin/python benchmarks/eval_cutoff.py [--db /tmp/esrag-cutoff/esrag.db] [--out benchmarks/results/cutoff.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _data import shared_data
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE.parent / "eval" / "docs_questions.jsonl"

Rule = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def ingest(db: Path, corpora: list[str], console: Console) -> None:
    """Ingest each corpus folder of the shared data into ``db`` (incremental: unchanged files cost nothing)."""
    env = {**os.environ, "ESRAG_DB": str(db)}
    for i, corpus in enumerate(corpora, 1):
        console.print(f"[{i}/{len(corpora)}] ingest {corpus}")
        subprocess.run(
            [str(Path(sys.executable).with_name("esrag")), "ingest", str(shared_data() / "corpora" / corpus), "--corpus", corpus],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )


def ratio_rule(r: float) -> Rule:
    """Hits whose fused score is at least ``r`` times the first hit's."""
    return lambda hits: [h for h in hits if hits and h["score"] >= r * hits[0]["score"]]


def dense_rule(delta: float) -> Rule:
    """Hits whose kNN cosine similarity is within ``delta`` of the best hit's (no kNN leg: kept only if first)."""

    def keep(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        sims = [(h.get("legs") or {}).get("dense", {}).get("score") for h in hits]
        top = max((s for s in sims if s is not None), default=None)
        return [h for i, (h, s) in enumerate(zip(hits, sims)) if i == 0 or (top is not None and s is not None and s >= top - delta)]

    return keep


def both_legs_rule(extra: int) -> Rule:
    """The first hit, then hits found by both legs, and at most ``extra`` hits found by one leg."""

    def keep(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out, single = [], 0
        for i, h in enumerate(hits):
            n = len(h.get("legs") or {})
            if i == 0 or n >= 2:
                out.append(h)
            elif single < extra:
                single += 1
                out.append(h)
        return out

    return keep


def floor_then_ratio(floor: int, r: float) -> Rule:
    """Hits up to ``floor`` response tokens regardless, then only hits with fused score >= ``r`` x the first's."""

    def keep(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out, used = [], 0
        for h in hits:
            if used >= floor and h["score"] < r * hits[0]["score"]:
                break
            out.append(h)
            used += h.get("tokens") or 0
        return out

    return keep


def gap_rule(g: float) -> Rule:
    """Hits up to the first drop in fused score of more than ``g`` (relative) from the hit before."""

    def keep(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = hits[:1]
        for a, b in zip(hits, hits[1:]):
            if b["score"] < (1 - g) * a["score"]:
                break
            out.append(b)
        return out

    return keep


def top_n(n: int) -> Rule:
    return lambda hits: hits[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, default=Path("/tmp/esrag-cutoff/esrag.db"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cutoff.json")
    args = ap.parse_args()
    console = Console()
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpora = sorted({q["corpus"] for q in questions})
    args.db.parent.mkdir(parents=True, exist_ok=True)
    ingest(args.db, corpora, console)

    os.environ["ESRAG_DB"] = str(args.db)
    from esrag.config import load_settings
    from esrag.eval.metrics import Gold, Selection, found, grams, words
    from esrag.serve.responses import DEFAULT_SEARCH_BUDGET, candidate_budget, search_markdown
    from esrag.service import SearchRequest, hit_json, open_service
    from esrag.tokens import count_tokens

    rules: dict[str, Rule] = {"today (budget fills)": lambda hits: hits}
    for n in (1, 2, 3, 4):
        rules[f"top {n}"] = top_n(n)
    for r in (0.6, 0.7, 0.8, 0.85, 0.9):
        rules[f"fused >= {r} x top"] = ratio_rule(r)
    for d in (0.02, 0.05, 0.1):
        rules[f"knn within {d} of top"] = dense_rule(d)
    for e in (0, 1):
        rules[f"both legs + {e} single"] = both_legs_rule(e)
    for g in (0.05, 0.1, 0.2):
        rules[f"stop at a fused drop > {g}"] = gap_rule(g)
    for floor, r in ((500, 0.9), (800, 0.9), (1000, 0.9), (1000, 0.95)):
        rules[f">= {floor} t, then fused >= {r} x top"] = floor_then_ratio(floor, r)

    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in rules}
    budget = DEFAULT_SEARCH_BUDGET
    with open_service(load_settings()) as service:
        for i, q in enumerate(questions, 1):
            if i % 10 == 0:
                console.print(f"question {i}/{len(questions)}")
            result = service.search(
                SearchRequest(q["question"], corpora=[q["corpus"]], budget=candidate_budget(budget)), check_corpora=True
            )
            hits = [hit_json(h) for h in result.hits]
            gold = Gold.from_texts(q.get("evidence") or [])
            pages = {q["page"], *q.get("alternates", [])}
            tail = [" ".join(words(s)) for s in q.get("section", [])]
            for name, rule in rules.items():
                text, kept = search_markdown(rule(hits), budget, q["question"])
                ws = words(text)
                sel = Selection([ws], set(grams(ws)), count_tokens(text))
                f = found(gold, sel)
                in_section = any(h["source_path"] in pages and all(t in " ".join(words(h["section_path"])) for t in tail) for h in kept)
                rows[name].append(
                    {
                        "id": q["id"],
                        "corpus": q["corpus"],
                        "tokens": sel.tokens,
                        "rec": sum(f) / len(f) if f else 0.0,
                        "sec": in_section,
                        "hits": len(kept),
                    }
                )

    base = statistics.mean(r["tokens"] for r in rows["today (budget fills)"])
    table = Table(title=f"search_docs responses at token_budget {budget}: {len(questions)} questions, {len(corpora)} corpora")
    for col in ("rule", "tokens mean", "median", "vs today", "hits", "rec", "gold section shown"):
        table.add_column(col, justify="left" if col == "rule" else "right")
    summary = {}
    for name, rs in rows.items():
        t = statistics.mean(r["tokens"] for r in rs)
        s = {
            "tokens_mean": t,
            "tokens_median": statistics.median(r["tokens"] for r in rs),
            "ratio": t / base,
            "hits_mean": statistics.mean(r["hits"] for r in rs),
            "rec": statistics.mean(r["rec"] for r in rs),
            "sec": statistics.mean(1.0 if r["sec"] else 0.0 for r in rs),
        }
        summary[name] = s
        table.add_row(
            name,
            f"{t:.0f}",
            f"{s['tokens_median']:.0f}",
            f"{s['ratio']:.2f}",
            f"{s['hits_mean']:.1f}",
            f"{s['rec']:.3f}",
            f"{s['sec']:.3f}",
        )
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    console.print(f"written {args.out}")


if __name__ == "__main__":
    main()
