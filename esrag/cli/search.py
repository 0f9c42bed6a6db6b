"""``esrag search``, ``esrag ask`` and ``esrag page``: read the index (hits, a grounded answer,
a page reassembled from its chunks)."""

from __future__ import annotations

import json
from collections.abc import Callable

import click
from rich.markup import escape

from esrag import app
from esrag.app import open_store
from esrag.cli.common import err, handle_errors, json_option, out
from esrag.cli.common import print_json as _print_json
from esrag.config import SEARCH_MODES, load_settings
from esrag.service import SearchService, hit_json, result_json, versions_note


def retrieval_options(f: Callable) -> Callable:
    """The retrieval-stack options shared by ``search`` and ``ask`` (defaults from [search])."""
    options = [
        click.option(
            "--budget",
            type=click.IntRange(min=1),
            help="Hits in rank order up to N cl100k tokens of source text (the evaluation's rule: the last hit is cut to fit).",
        ),
        click.option(
            "--expand",
            help="Expand hits: neighbours:W (±W chunks), parent (parent section) or auto-merge:M "
            "(M hits in one section return the section).",
        ),
        click.option(
            "--rerank", help="Rerank the top candidates: cross-encoder:MODEL, http:URL (/rerank endpoint) or elastic:INFERENCE_ID."
        ),
        click.option("--rerank-top-n", type=click.IntRange(min=1), help="Fused candidates the reranker reorders (default 30)."),
        click.option("--reformulate", type=click.IntRange(min=0), help="Fuse N LLM reformulations of the query by RRF (off by default)."),
        click.option("--llm", "llm_spec", help="LLM for --reformulate and ask: ollama:MODEL or openai:MODEL (default: ESRAG_LLM)."),
        click.option("--llm-url", help="LLM server URL (default: ESRAG_LLM_URL)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1), help="Number of hits (default 10).")
@click.option("--mode", type=click.Choice(SEARCH_MODES), help="hybrid (BM25 + kNN fused by RRF; default), bm25 or dense.")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (repeatable).")
@click.option("--path", "path_prefix", help="Only sources whose path starts with this prefix.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and score and per-stage timings.")
@click.option("--embedder", help="Embed the query with this embedder instead of the index's own.")
@click.option("--embedder-url", help="Embedding server for ollama:/openai: embedders (default: ESRAG_EMBEDDER_URL).")
@click.option(
    "--lang",
    "langs",
    multiple=True,
    help=(
        "Only chunks in this language (ISO 639-1, repeatable; 'auto': the query's language). Default: [language] filter; "
        "with neither, a site's translated pages are left out (each site is searched in its default locale)."
    ),
)
@click.option(
    "--doc-version",
    help="Only chunks of this documentation version (as ingested with --doc-version; default: each corpus's default version: "
    "[corpora.NAME] default_version, else the most recently ingested).",
)
@click.option("--all-versions", is_flag=True, help="Search every indexed documentation version, not only each corpus's default one.")
@retrieval_options
@json_option
@handle_errors
def search(
    query: str,
    k: int | None,
    mode: str | None,
    corpora: tuple[str, ...],
    path_prefix: str | None,
    explain: bool,
    embedder: str | None,
    as_json: bool,
    budget: int | None = None,
    expand: str | None = None,
    rerank: str | None = None,
    rerank_top_n: int | None = None,
    reformulate: int | None = None,
    llm_spec: str | None = None,
    llm_url: str | None = None,
    embedder_url: str | None = None,
    langs: tuple[str, ...] = (),
    doc_version: str | None = None,
    all_versions: bool = False,
) -> None:
    """Search the index for QUERY; prints hits with source path, section path and line span.

    A corpus indexed in several versions is searched in its default one (--doc-version picks
    another, --all-versions searches them all); each hit names its version.

    Two or more --corpus fan out (one branch per corpus with its [corpora.NAME] k, filters and
    selection, fused by rank); --rerank reorders the top candidates before --expand grows them;
    --budget packs hits up to N cl100k tokens of source text."""
    from esrag.service import ALL_VERSIONS, SearchRequest

    if all_versions and doc_version is not None:
        raise click.UsageError("--all-versions and --doc-version exclude each other; give one")
    settings = load_settings(llm=llm_spec, llm_url=llm_url, embedder_url=embedder_url)
    with open_store(settings, read_only=True) as store:
        result = SearchService(settings, store, embedder).search(
            SearchRequest(
                query,
                k=k,
                mode=mode,
                corpora=list(corpora),
                path_prefix=path_prefix,
                languages=list(langs),
                doc_version=ALL_VERSIONS if all_versions else doc_version,
                budget=budget,
                expand=expand,
                rerank=rerank,
                rerank_top_n=rerank_top_n,
                reformulate=reformulate,
            )
        )
    for note in result.notes:
        err.print(f"[yellow]note[/yellow]: {escape(note)}")
    if result.versions and not as_json:
        err.print(f"[dim]{escape(versions_note(result.versions, '--all-versions'))}[/dim]")
    if as_json:
        _print_json(result_json(result, explain=True) if explain else [hit_json(h) for h in result.hits])
        return
    for rank, hit in enumerate(result.hits, 1):
        c = hit.chunk
        label = f"  [magenta]{escape(c.corpus)}[/magenta]" + (
            f" ({escape(str(c.metadata['authority']))})" if c.metadata.get("authority") else ""
        )
        out.print(
            f"[bold]{rank}.[/bold] [green]{escape(c.source_path)}[/green]:{c.start_line}-{c.end_line}  score {hit.score:.4f}"
            f"  {c.tokens} tokens{label}"
        )
        out.print(
            f"   [cyan]{escape(c.section_path or '(no section)')}[/cyan]"
            + (f"  [dim]expanded from {len(hit.expanded_from)} hit(s)[/dim]" if hit.expanded_from else "")
        )
        if c.url or c.doc_version:
            where = [f"[blue]{escape(c.url)}[/blue]"] if c.url else []
            out.print("   " + "  ".join(where + ([f"[dim]version {escape(c.doc_version)}[/dim]"] if c.doc_version else [])))
        if explain:
            legs = "  ".join(f"{name}: rank {leg.rank}, score {leg.score:.4f}" for name, leg in hit.legs.items())
            out.print(f"   [dim]{legs or 'no leg'}[/dim]")
        out.print("   " + escape(" ".join(c.text.split())[:240]))
    if explain:
        out.print(
            f"[dim]fusion: {escape(result.fusion)}; timings (ms): "
            + ", ".join(f"{k} {v:.1f}" for k, v in result.timings_ms.items())
            + "[/dim]"
        )
        if result.diagnostics:
            out.print(f"[dim]diagnostics: {escape(json.dumps(result.diagnostics, ensure_ascii=False))}[/dim]")
    if not result.hits:
        err.print("no hits")


@click.command()
@click.argument("question")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (repeatable; two or more fan out).")
@retrieval_options
@json_option
@handle_errors
def ask(
    question: str,
    corpora: tuple[str, ...],
    as_json: bool,
    budget: int | None = None,
    expand: str | None = None,
    rerank: str | None = None,
    rerank_top_n: int | None = None,
    reformulate: int | None = None,
    llm_spec: str | None = None,
    llm_url: str | None = None,
) -> None:
    """Answer QUESTION from the index only: retrieve, group sources with their labels, and have the
    LLM answer in the question's language citing section paths, or abstain when the sources do not
    hold the answer (the higher-authority source governs conflicts)."""
    settings = load_settings(llm=llm_spec, llm_url=llm_url)
    with open_store(settings, read_only=True) as store:
        answer = SearchService(settings, store).ask(
            question, list(corpora), budget, expand=expand, rerank=rerank, rerank_top_n=rerank_top_n, reformulate=reformulate
        )
    if as_json:
        _print_json(answer.to_dict())
        return
    out.print(escape(answer.answer))
    if answer.abstained:
        err.print("[yellow]abstained[/yellow]: the sources do not hold the answer")
    for c in answer.citations:
        out.print(
            f"  [{c['source']}] [cyan]{escape(c['section_path'] or '(no section)')}[/cyan]  "
            f"[green]{escape(c['source_path'])}[/green]:{c['start_line']}-{c['end_line']}  "
            f"({escape(c['corpus'])}, {escape(str(c['authority'] or 'unlabelled'))})"
            + (f"\n      [blue]{escape(c['url'])}[/blue]" if c.get("url") else "")
        )


@click.command()
@click.argument("path")
@click.option("--corpus", help="The corpus holding PATH (default: the first that does).")
@click.option(
    "--doc-version",
    help="The documentation version (default: the corpus's default version: "
    "[corpora.NAME] default_version, else the most recently ingested).",
)
@json_option
@handle_errors
def page(path: str, corpus: str | None, doc_version: str | None, as_json: bool) -> None:
    """Print the page PATH (a hit's source_path, with or without the docs root folder, or its
    URL) as indexed: its title, URL, version and every section with its anchor, reassembled
    from its chunks in order."""
    from esrag.errors import PageNotFound

    settings = load_settings()
    try:
        with open_store(settings, read_only=True) as store:
            app.require_index(settings, store)
            found = app.read_page(settings, store, path, corpus, doc_version)
    except PageNotFound as exc:
        raise click.ClickException(f"{exc}; `esrag status` lists the corpora and their versions") from None
    if found is None:  # a store that cannot tell (get_page raises PageNotFound for an unknown path)
        raise click.ClickException(f"no indexed page {path!r}")
    if as_json:
        _print_json({**found.to_dict(), "versions": found.versions})
        return
    others = [v or "(unversioned)" for v in found.versions if v != found.doc_version]
    out.print(
        f"[bold]{escape(found.title or found.source_path)}[/bold]  [magenta]{escape(found.corpus)}[/magenta]"
        + (f"  version {escape(found.doc_version or '(unversioned)')}" if found.doc_version or others else "")
        + (f"  [dim](also indexed: {escape(', '.join(others))})[/dim]" if others else "")
    )
    out.print(f"[blue]{escape(found.url)}[/blue]" if found.url else f"[green]{escape(found.source_path)}[/green]")
    for s in found.sections:
        link = f"  [dim]#{escape(s.anchor)}[/dim]" if s.anchor else ""
        out.print(f"\n[cyan]── {escape(s.section_path or '(no section)')}[/cyan]{link}  [dim]lines {s.start_line}-{s.end_line}[/dim]")
        out.print(escape(s.text), markup=True)
