"""``esrag remove`` and ``esrag drop``: delete a corpus, or the whole index, after confirmation.

Thin skins over :func:`esrag.app.remove_corpus` and :func:`esrag.app.drop_index`. Both need
``--yes`` when not run on a terminal (scripts, CI); on a terminal they ask first.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console

from esrag.app import drop_index, open_store, remove_corpus
from esrag.cli_common import handle_errors, json_option, print_json
from esrag.config import Settings, load_settings

out = Console(highlight=False, soft_wrap=True)


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
