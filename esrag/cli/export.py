"""``esrag export``: write what the index holds in other formats — ``llms-txt`` writes a corpus's
``llms.txt`` and ``llms-full.txt`` (:mod:`esrag.llms_txt`, the renderer ``esrag serve`` serves)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from esrag import app
from esrag.app import open_store
from esrag.cli.common import err, handle_errors, json_option, print_json
from esrag.config import load_settings
from esrag.errors import ConfigError


@click.group()
def export() -> None:
    """Write what the index holds in other formats (llms.txt)."""


@export.command(name="llms-txt")
@click.option("--corpus", required=True, help="The corpus to describe (as ingested with --corpus; see `esrag status`).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder to write llms.txt and llms-full.txt into (made when missing).",
)
@click.option("--doc-version", help="This documentation version (default: the corpus's default version).")
@json_option
@handle_errors
def llms_txt(corpus: str, out_dir: Path, doc_version: str | None, as_json: bool) -> None:
    """Write llms.txt (the llmstxt.org format: title, summary, a link list per section of the
    site) and llms-full.txt (every page as Markdown under its title and URL) of one corpus."""
    from esrag.llms_txt import llms_full_txt
    from esrag.llms_txt import llms_txt as render

    settings = load_settings()
    with open_store(settings, read_only=True) as store:
        app.require_index(settings, store)
        site = app.llms_site(settings, store, corpus, doc_version)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        index, full = out_dir / "llms.txt", out_dir / "llms-full.txt"
        index.write_text(render(site), encoding="utf-8")
        full.write_text(llms_full_txt(site), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--out {str(out_dir)!r}: cannot write there ({exc.strerror or exc})") from None
    summary = {
        "corpus": site.corpus,
        "doc_version": site.doc_version or None,
        "pages": len(site.pages),
        "sections": len(site.sections),
        "llms_txt": str(index),
        "llms_full_txt": str(full),
    }
    if as_json:
        print_json(summary)
        return
    err.print(
        f"wrote [green]{escape(str(index))}[/green] and [green]{escape(str(full))}[/green]: "
        f"{len(site.pages)} pages in {len(site.sections)} sections of [magenta]{escape(corpus)}[/magenta]"
    )
