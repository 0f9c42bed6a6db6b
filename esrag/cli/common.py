"""Pieces every ``esrag`` command shares: ``--json``, one-line library errors, one-line warnings,
the stdout/stderr consoles and the progress rate column.

Kept apart from the command group (:data:`esrag.cli.main`) so the command modules of
:mod:`esrag.cli` can use them without importing it.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import click
from rich.console import Console
from rich.progress import Task, TextColumn
from rich.text import Text

from esrag.errors import EsragError
from esrag.urls import scrub_credentials

#: the folder of the esrag package (this file is esrag/cli/common.py): warnings raised (or
#: attributed) here are esrag's own
_PACKAGE = str(Path(__file__).resolve().parents[1])

err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True)


class RateColumn(TextColumn):
    def __init__(self) -> None:
        super().__init__("")

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.1f}/s" if speed else "   -/s", style="cyan")


def files_named(paths: list[str], most: int = 3) -> str:
    """A list of files in one table cell: ``"2: a.md, b.md"``, ``"12: a.md, b.md, c.md (+9)"``,
    ``"0"`` for none (the ingest summary's and the sync table's changed files)."""
    shown = ", ".join(paths[:most]) + (f" (+{len(paths) - most})" if len(paths) > most else "")
    return f"{len(paths)}: {shown}" if paths else "0"


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout (non-JSON values via ``str``)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def json_option(f: Callable) -> Callable:
    """``--json``: machine-readable output on stdout."""
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")(f)


def handle_errors(f: Callable) -> Callable:
    """Turn library errors into one-line ``ClickException`` messages."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except EsragError as exc:
            raise click.ClickException(scrub_credentials(str(exc))) from exc
        except ValueError as exc:  # pydantic ValidationError is a ValueError
            raise click.ClickException(scrub_credentials(f"invalid setting: {exc}")) from exc

    return wrapper


def is_esrag_warning(category: type[Warning], filename: str) -> bool:
    """True for a warning of an esrag class (e.g. ``ClusterWarning``) or raised from (or
    attributed by ``stacklevel`` to) a file of the esrag package."""
    return category.__module__.split(".")[0] == "esrag" or str(Path(filename).resolve()).startswith(_PACKAGE)


def one_line_warning(message: Warning | str) -> str:
    """``warning: <message>`` on one line (inner line breaks become spaces); no file path, no
    source line — what a user of the CLI reads."""
    return "warning: " + scrub_credentials(" ".join(str(message).split()))


_HOOK: Callable[..., None] | None = None
"""The hook :func:`install_warning_hook` installed last (so a second call sees it in place)."""


def install_warning_hook() -> None:
    """Route esrag's own warnings (:func:`is_esrag_warning`) to :func:`one_line_warning` on
    stderr for this process; every other warning keeps Python's format (file:line: category).
    Called by the CLI entry point only: library users keep Python's warnings untouched.
    Installing twice is harmless."""
    global _HOOK
    current = warnings.showwarning
    if _HOOK is not None and current is _HOOK:
        return

    def show(
        message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None, line: str | None = None
    ) -> None:
        if not is_esrag_warning(category, filename):
            current(message, category, filename, lineno, file, line)
            return
        stream = file if file is not None else sys.stderr
        try:
            stream.write(one_line_warning(message) + "\n")
        except (OSError, ValueError):  # a closed stderr: nowhere to warn
            pass

    _HOOK = show
    warnings.showwarning = show
