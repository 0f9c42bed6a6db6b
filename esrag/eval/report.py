"""Outputs of an evaluation run, written to one folder:

* ``questions.jsonl`` — one object per question × arm × retriever (metrics in points, 0–100;
  the chunks inside the primary budget);
* ``summary.json`` — dataset, config, the default arm's settings, arms with chunk statistics,
  summary rows (:func:`esrag.eval.harness.summary_rows`) and contrasts;
* ``summary.md`` — the same as Markdown tables (the CLI prints it);
* ``plot.png`` — rec at the primary budget, arms × retrievers, with 95% CIs and the oracle;
* ``run.json`` — wall times and embedding counts (the only file that differs between two runs
  of the same config).

Same config, same data and cache: byte-identical ``questions.jsonl``, ``summary.json``,
``summary.md`` and ``plot.png``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from esrag import __version__
from esrag.eval.harness import EvalRun, Observer, contrast_rows, default_settings_snapshot, summary_rows


def summary(run: EvalRun) -> dict[str, Any]:
    """The content of ``summary.json``."""
    cfg, ds = run.config, run.dataset
    return {
        "esrag_version": __version__,
        "dataset": {
            "kind": ds.kind,
            "name": ds.name,
            "path": str(cfg.path),
            "documents": len(ds.documents),
            "documents_searched": run.n_documents,
            "questions": len(ds.questions),
            "pools": len(run.pools),
            "per_document_pools": ds.per_document,
        },
        "config": {
            "arms": cfg.arms,
            "retrievers": cfg.retrievers,
            "budgets": cfg.budgets,
            "limit": cfg.limit,
            "seed": cfg.seed,
            "resamples": cfg.resamples,
            "reranker": _callable_name(cfg.reranker),
            "rerank_depth": cfg.rerank_depth,
            "contrasts": [c.__dict__ for c in cfg.contrasts],
        },
        "embedder": run.embedder_spec,
        "default_settings": default_settings_snapshot(run.settings),
        "arms": [
            {
                "name": a.name,
                "description": a.description,
                "embed_fields": list(a.embed_fields),
                "bm25_fields": dict(a.bm25_fields),
                "rrf_k": a.search.rrf_k,
                "rank_window_size": a.search.rank_window_size,
                "section_context": a.section_context,
                "section_context_depth": a.section_context_depth,
                **run.chunk_stats.get(a.name, {}),
            }
            for a in run.arms
        ],
        "rows": summary_rows(run),
        "contrasts": contrast_rows(run),
    }


def _callable_name(obj: Any) -> str | None:
    if obj is None or isinstance(obj, str):
        return obj
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"


def json_rows(summary_data: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``--json`` output: the summary rows."""
    return summary_data["rows"]


def _fmt(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _ci(lo: float | None, hi: float | None) -> str:
    return "" if lo is None else f"[{lo:.1f}, {hi:.1f}]"


def markdown(summary_data: dict[str, Any]) -> str:
    """``summary.md``: the primary-budget grid with oracle ceilings, all budgets, contrasts."""
    s = summary_data
    ds, cfg = s["dataset"], s["config"]
    primary = cfg["budgets"][0]
    rows = s["rows"]
    clusters = "papers" if ds["per_document_pools"] else "questions"
    lines = [
        f"# esrag eval: {ds['kind']} `{ds['name']}`",
        "",
        f"{ds['questions']} questions over {ds['documents_searched']} documents "
        f"({'one pool per document' if ds['per_document_pools'] else 'one pooled corpus'}); embedder `{s['embedder']}`. "
        f"Budgets in cl100k_base tokens of source text; values in points (0–100) with BCa 95% cluster-bootstrap "
        f"CIs ({cfg['resamples']:,} resamples, seed {cfg['seed']}; clusters = {clusters}).",
        "",
        f"## rec@{primary}t",
        "",
        "| arm | chunks | median tokens | " + " | ".join(cfg["retrievers"]) + " | oracle |",
        "|---|---:|---:|" + "---|" * len(cfg["retrievers"]) + "---:|",
    ]
    arms = {a["name"]: a for a in s["arms"]}
    for arm in cfg["arms"]:
        cells = []
        for r in cfg["retrievers"]:
            row = next(x for x in rows if x["arm"] == arm and x["retriever"] == r and x["budget"] == primary)
            mark = " ★" if row["default"] else ""
            cells.append(f"{_fmt(row['rec'])} {_ci(row['ci_low'], row['ci_high'])}{mark}")
        oracle = next(x["oracle"] for x in rows if x["arm"] == arm and x["budget"] == primary)
        a = arms[arm]
        lines.append(
            f"| {arm} | {a.get('chunks', 0):,} | {_fmt(a.get('median_tokens'), 0)} | " + " | ".join(cells) + f" | {_fmt(oracle)} |"
        )
    d = s["default_settings"]
    lines += [
        "",
        f"★ what `esrag ingest` + `esrag search` do out of the box: arm `default` (chunker `{d['chunking']['chunker']}`, "
        f"embed {d['index_text']['embed_fields']}, bm25 {d['index_text']['bm25_fields']}, "
        f"section context {d['index_text'].get('section_context', 0):g} at depth {d['index_text'].get('section_context_depth', 2)}), retriever `{d['search']['mode']}` "
        f"(RRF k {d['search']['rrf_k']}, window {d['search']['rank_window_size']}, weights {d['search']['weights']}). "
        "Oracle: greedy best reachable rec for the arm's chunk set.",
        "",
        "## All budgets",
        "",
        "| arm | retriever | budget | rec | rec 95% CI | prec | prec 95% CI | oracle |",
        "|---|---|---:|---:|---|---:|---|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['arm']} | {row['retriever']} | {row['budget']} | {_fmt(row['rec'])} | {_ci(row['ci_low'], row['ci_high'])} | "
            f"{_fmt(row['prec'])} | {_ci(row['prec_ci_low'], row['prec_ci_high'])} | {_fmt(row['oracle'])} |"
        )
    ranking_keys = [k for k in ("recall@1", "recall@5", "recall@10", "recall@50", "mrr", "ndcg@10") if rows and k in rows[0]]
    if ranking_keys:
        gold = "gold sections" if s.get("dataset", {}).get("kind") == "docs" else "gold documents"
        lines += [
            "",
            f"## Ranking metrics ({gold})",
            "",
            "| arm | retriever | " + " | ".join(ranking_keys) + " |",
            "|---|---|" + "---:|" * len(ranking_keys),
        ]
        for row in (r for r in rows if r["budget"] == primary):
            lines.append(f"| {row['arm']} | {row['retriever']} | " + " | ".join(_fmt(row[k]) for k in ranking_keys) + " |")
    if s["contrasts"]:
        lines += [
            "",
            "## Paired contrasts (A − B, points)",
            "",
            "| contrast | metric | family | A − B | 95% CI | 90% CI | margin | p TOST | p sign-flip | p Holm | verdict |",
            "|---|---|---|---:|---|---|---:|---:|---:|---:|---|",
        ]
        for c in s["contrasts"]:
            lines.append(
                f"| {c['a']} − {c['b']} | {c['metric']} | {c['family']} | {c['estimate']:+.1f} | {_ci(c['ci_low'], c['ci_high'])} | "
                f"{_ci(c['ci90_low'], c['ci90_high'])} | {'±' + _fmt(c['margin']) if c['margin'] else ''} | "
                f"{_fmt(c['p_tost'], 4) if c['p_tost'] is not None else ''} | {c['p_perm']:.4f} | {_fmt(c['p_holm'], 4)} | {c['verdict']} |"
            )
        lines += [
            "",
            "Verdicts (seed 000 §4.5): TOST rows equiv. if Holm-adjusted p TOST < 0.05, else diff. if the 95% CI "
            "excludes 0, else incon.; other rows diff. if the 95% CI excludes 0 and the Holm-adjusted sign-flip p < 0.05, "
            "else n.d. Holm adjusts within each family.",
        ]
    return "\n".join(lines) + "\n"


def plot(summary_data: dict[str, Any], path: Path) -> None:
    """``plot.png``: grouped bars of rec at the primary budget (arms × retrievers) with 95% CI
    whiskers and each arm's oracle ceiling as a dash."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = summary_data["config"]
    primary, arms, rets = cfg["budgets"][0], cfg["arms"], cfg["retrievers"]
    rows = {(r["arm"], r["retriever"]): r for r in summary_data["rows"] if r["budget"] == primary}
    width = 0.8 / len(rets)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(arms) + 2), 4.5), dpi=110)
    for i, ret in enumerate(rets):
        xs = [a + (i - (len(rets) - 1) / 2) * width for a in range(len(arms))]
        vals = [rows[(arm, ret)]["rec"] for arm in arms]
        err = [
            [v - rows[(arm, ret)]["ci_low"] for arm, v in zip(arms, vals)],
            [rows[(arm, ret)]["ci_high"] - v for arm, v in zip(arms, vals)],
        ]
        ax.bar(xs, vals, width, yerr=err, capsize=2, label=ret)
    for a, arm in enumerate(arms):
        oracle = rows[(arm, rets[0])]["oracle"]
        if oracle is not None:
            ax.hlines(
                oracle, a - 0.45, a + 0.45, colors="black", linestyles="dashed", linewidth=1, label="oracle" if a == 0 else "_nolegend_"
            )  # matplotlib leaves "_"-labels out of the legend
    ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right")
    ax.set_ylabel(f"rec@{primary}t (points)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{summary_data['dataset']['kind']} {summary_data['dataset']['name']}: evidence recall within {primary} tokens")
    ax.legend(fontsize=8, ncols=len(rets) + 1, loc="upper center")
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


def write_outputs(run: EvalRun, out: Path) -> dict[str, Any]:
    """Write every output file into ``out`` (created); returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    data = summary(run)
    with open(out / "questions.jsonl", "w", encoding="utf-8") as f:
        for r in run.results:
            f.write(json.dumps(r.to_dict(), ensure_ascii=False) + "\n")
    (out / "summary.json").write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(markdown(data), encoding="utf-8")
    plot(data, out / "plot.png")
    (out / "run.json").write_text(
        json.dumps(
            {
                "seconds": {k: round(v, 3) for k, v in run.seconds.items()},
                "embeddings_computed": run.embeddings_computed,
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    return data


class RichObserver(Observer):
    """Progress bars on a rich console (counts, rates, elapsed time), one per phase."""

    def __init__(self, progress) -> None:
        self.progress = progress
        self.tasks: dict[str, Any] = {}

    def phase(self, name: str, total: int) -> None:
        self.tasks[name] = self.progress.add_task(name, total=total)

    def advance(self, name: str, n: int = 1) -> None:
        self.progress.advance(self.tasks[name], n)

    def note(self, text: str) -> None:
        self.progress.console.print(text)
