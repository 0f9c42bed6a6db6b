"""The ``esrag`` command: a thin skin over the library.

Each command loads settings, makes one library call and prints the result — a table for people,
or ``--json`` on stdout for scripts (progress and messages go to stderr). Library errors become
one-line messages with their way out; the exit status is non-zero on any failure.

The command group :data:`main` is made here from one module per group of commands:

* :mod:`esrag.cli.ingest` — ``ingest``, ``chunk``;
* :mod:`esrag.cli.search` — ``search``, ``ask``, ``page``;
* :mod:`esrag.cli.serve` — ``serve``, ``mcp``, ``keys add``;
* :mod:`esrag.cli.evaluation` — ``eval``, ``diagnose``;
* :mod:`esrag.cli.admin` — ``setup``, ``status``, ``doctor``, ``plugins``, ``remove``, ``drop``, ``sync``;
* :mod:`esrag.cli.export` — ``export llms-txt``;
* :mod:`esrag.cli.common` — what they share (``--json``, one-line errors and warnings, consoles).
"""

from __future__ import annotations

import click

from esrag import __version__
from esrag.cli import admin, evaluation, export, ingest, search, serve
from esrag.cli.common import install_warning_hook
from esrag.service import hit_json  # (hit_json: esrag.cli's public name before esrag.service)

__all__ = ["hit_json", "main", "run"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="esrag")
def main() -> None:
    """Index documentation into Elasticsearch (or the embedded SQLite store) and search it with
    BM25 + kNN fused by reciprocal rank fusion.

    Settings come from esrag.toml and ESRAG_* environment variables (ESRAG_DB for the embedded
    store; ESRAG_ES_URL selects Elasticsearch)."""


for _command in (
    admin.setup,
    ingest.ingest,
    search.search,
    search.ask,
    search.page,
    serve.serve,
    serve.mcp,
    serve.keys,
    admin.status,
    ingest.chunk,
    admin.plugins_cmd,
    admin.doctor,
    evaluation.eval_cmd,
    evaluation.diagnose,
    admin.remove,
    admin.drop,
    admin.sync,
    export.export,
):
    main.add_command(_command)


def run() -> None:
    """The ``esrag`` console script: esrag's own warnings print as one ``warning: ...`` line on
    stderr (:func:`esrag.cli.common.install_warning_hook`), then the command group runs. Tests
    invoking :func:`main` in process keep Python's warnings (``pytest.warns`` sees them)."""
    install_warning_hook()
    main()
