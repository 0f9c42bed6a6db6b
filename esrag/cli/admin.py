"""The index and the installation: ``esrag setup``, ``esrag status``, ``esrag doctor``,
``esrag plugins``, and ``esrag remove`` / ``esrag drop``, which delete a corpus or the whole index
after confirmation.

``remove`` and ``drop`` are thin skins over :func:`esrag.app.remove_corpus` and
:func:`esrag.app.drop_index`. Both need ``--yes`` when not run on a terminal (scripts, CI); on a
terminal they ask first.
"""

from __future__ import annotations

import sys

import click
from rich.markup import escape
from rich.table import Table

from esrag import app, plugins
from esrag.app import drop_index, open_store, remove_corpus
from esrag.cli.common import err, files_named, handle_errors, json_option, out, print_json
from esrag.config import Settings, load_settings


@click.command()
@json_option
@handle_errors
def setup(as_json: bool) -> None:
    """Create the index (embedded store file, or Elasticsearch templates and pipelines)."""
    settings = load_settings()
    with open_store(settings) as store:
        report = app.setup_index(settings, store)
    if as_json:
        print_json(report)
    else:
        for key, value in report.items():
            out.print(f"{key}: {value}")


@click.command()
@json_option
@handle_errors
def status(as_json: bool) -> None:
    """Show what is indexed: store, embedder, and per corpus its sources, chunks and documentation
    versions (the default version first: the one `esrag page` reads when none is given), and for
    git sources what `esrag sync` last did to each version and how long ago."""
    settings = load_settings()
    with open_store(settings, read_only=True) as store:
        stats = app.corpora_status(settings, store)
        missing = store.meta() is None
    from esrag.gitsync import sync_status

    synced = sync_status(settings)
    if synced:
        stats["sync"] = synced
    if missing:
        err.print(f"[yellow]note[/yellow]: {escape(app.nothing_indexed(settings))}", soft_wrap=True)
    if as_json:
        print_json(stats)
        return
    for key, value in stats.items():
        if key not in ("corpora", "sync"):  # (sync: its own table below)
            out.print(f"{key}: {value}")
    table = Table("corpus", "sources", "chunks", "versions (default first)")
    for name, row in stats.get("corpora", {}).items():
        default = row.get("default_version")
        versions = sorted(row.get("versions", {}), key=lambda v: (v != default, v))
        shown = ", ".join(v or "(unversioned)" for v in versions) if versions != [""] else ""
        table.add_row(escape(name), str(row["sources"]), str(row["chunks"]), escape(shown))
    out.print(table)
    if stats.get("sync"):
        _print_sync(stats["sync"])


def _print_sync(synced: dict) -> None:
    """The ``[sources]`` table of ``esrag status``: per source and version its commit, the last
    outcome and how stale it is."""
    table = Table("source", "version", "commit", "outcome", "synced", title="git sources (esrag sync)")
    for name, versions in synced.items():
        for version, row in versions.items():
            outcome = row["outcome"] + (f": {row['error']}" if row.get("error") else "")
            table.add_row(escape(name), escape(version), row["commit"][:12] or "-", escape(outcome), row["age"])
    out.print(table)


@click.command()
@click.argument("names", nargs=-1)
@click.option(
    "--allow-delete",
    is_flag=True,
    help="Let this sync remove versions (or re-ingest refs) that hold more than [ingest] max_delete_fraction of a corpus.",
)
@json_option
@handle_errors
def sync(names: tuple[str, ...], allow_delete: bool, as_json: bool) -> None:
    """Fetch the git sources of [sources.NAME] (all, or the NAMEs given) and index each selected
    branch or tag as a version of corpus NAME, incrementally; versions whose ref is gone are removed."""
    from esrag.gitsync import sync as run_sync

    settings = load_settings()
    with open_store(settings) as store:
        reports = run_sync(settings, store, list(names), allow_delete)
    if as_json:
        print_json({"sources": [r.to_dict() for r in reports]})
    else:
        table = Table("source", "version", "commit", "outcome", "chunks new/changed/unchanged/deleted", "files changed", title="esrag sync")
        for r in reports:
            for version, row in r.versions.items():
                s = row.get("summary") or {}
                counts = "/".join(str(s.get(k, 0)) for k in ("chunks_new", "chunks_changed", "chunks_unchanged", "chunks_deleted"))
                changed = escape(files_named(s.get("files_changed", []))) if s else ""
                table.add_row(escape(r.name), escape(version), row["commit"][:12] or "-", row["outcome"], counts if s else "", changed)
            for version, chunks in r.removed.items():
                table.add_row(escape(r.name), escape(version), "-", "removed", f"{chunks} chunks deleted", "")
        err.print(table)
    for r in reports:
        for line in r.ref_warnings:
            err.print(f"[yellow]warning[/yellow]: {escape(line)}", soft_wrap=True)
        for line in r.errors():
            err.print(f"[red]error[/red]: {escape(line)}", soft_wrap=True)
    if any(r.failed for r in reports):
        sys.exit(1)


@click.command()
@json_option
@handle_errors
def doctor(as_json: bool) -> None:
    """Check the store: connectivity, version, licence, capabilities, templates and embedder, each problem with its way out."""

    from esrag.store_checks import run_checks, worst

    checks = run_checks(load_settings())
    if as_json:
        print_json([c.to_dict() for c in checks])
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


@click.command(name="plugins")
@json_option
def plugins_cmd(as_json: bool) -> None:
    """List installed chunkers, embedders, stores and other plugins."""
    found = plugins.installed()
    if as_json:
        print_json([{"group": p.group, "name": p.name, "target": p.target, "distribution": p.distribution} for p in found])
        return
    table = Table("group", "name", "target", "package")
    for p in found:
        table.add_row(p.group, p.name, p.target, p.distribution)
    out.print(table)


def confirm(yes: bool, question: str, command: str) -> None:
    """Go on when ``yes`` (``--yes``); on a terminal ask ``question`` (no = abort, exit 1);
    otherwise stop with a one-line error naming ``--yes``.

    Raises:
        click.ClickException: not a terminal and no ``--yes``. click.Abort: the user said no.
    """
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.ClickException(f"{command} deletes data and stdin is not a terminal to confirm on; pass --yes")
    click.confirm(question, abort=True, err=True)


def _where(settings: Settings) -> str:
    """The index as the user configured it: the Elasticsearch alias, else the SQLite file."""
    if settings.store_name == "elastic":
        return f"the Elasticsearch index {settings.index!r}"
    return f"the embedded store {settings.db_path}"


@click.command()
@click.option("--corpus", required=True, help="The corpus to remove (as ingested with --corpus; see `esrag status`).")
@click.option("--doc-version", help="Only this documentation version of the corpus (as ingested with --doc-version).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (required when stdin is not a terminal).")
@json_option
@handle_errors
def remove(corpus: str, doc_version: str | None, yes: bool, as_json: bool) -> None:
    """Remove one corpus (or one --doc-version of it) from the index; the others stay searchable."""
    settings = load_settings()
    with open_store(settings) as store:
        what = f"corpus {corpus!r}" + (f" version {doc_version!r}" if doc_version is not None else "")
        confirm(yes, f"Remove {what} from {_where(settings)}?", "esrag remove")
        removed = remove_corpus(store, corpus, doc_version)
    if as_json:
        print_json({"corpus": corpus, "doc_version": doc_version, "chunks": removed})
    else:
        out.print(f"removed {what}: {removed} chunks")


@click.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (required when stdin is not a terminal).")
@json_option
@handle_errors
def drop(yes: bool, as_json: bool) -> None:
    """Delete the whole index: the SQLite store's tables, or the Elasticsearch alias, its versioned
    indices, templates and ingest pipeline. `esrag setup` or `esrag ingest` start afresh."""
    settings = load_settings()
    with open_store(settings) as store:
        confirm(yes, f"Drop the whole index {_where(settings)}?", "esrag drop")
        report = drop_index(store)
    if as_json:
        print_json(report)
    else:
        out.print(f"dropped {_where_report(report)}: {report['chunks']} chunks")


def _where_report(report: dict) -> str:
    if "alias" in report:
        return f"{report['alias']!r} ({len(report['indices'])} indices, {len(report['templates'])} templates, {len(report['pipelines'])} pipelines)"
    return f"{report.get('path')} ({report.get('corpora', 0)} corpora)"
