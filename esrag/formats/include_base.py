"""What the include preprocessors of :mod:`esrag.formats.includes` share: the error, the
result with its line map, where a file's includes may read from, and the checked read of an
included file (inside the allowed tree, no cycle, a readable file)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from esrag.formats.base import UNRESOLVED
from esrag.formats.shortcodes import Finder


class IncludeError(Exception):
    """An include that cannot be resolved; the message names the target and why."""


@dataclass
class Resolved:
    """Text after include resolution.

    Attributes:
        lines: the resolved lines (what the page shows), without newlines.
        line_map: ``line_map[i]`` is the 1-based source line of ``lines[i]``.
        problems: one-line messages ``"line N: …"`` for includes left unresolved (each holds
            :data:`UNRESOLVED`).
        dependencies: absolute paths of the files that were included (any depth).
        directives: how many include directives were found and resolved.
        unresolved: how many include directives (or lines that look like one) were not resolved.
    """

    lines: list[str]
    line_map: list[int]
    problems: list[str] = field(default_factory=list)
    dependencies: set[Path] = field(default_factory=set)
    directives: int = 0
    unresolved: int = 0

    def fail(self, n: int, directive: str, why: str) -> None:
        """Record an include on source line ``n`` that failed (it is left out of the text)."""
        self.unresolved += 1
        self.problems.append(f"line {n}: {directive}: {why} ({UNRESOLVED}; left out of the indexed text)")


@dataclass(frozen=True)
class IncludeContext:
    """Where includes of one file may read from.

    Attributes:
        file: absolute path of the including file.
        allowed: absolute directory every include must stay inside (the ingested tree, and
            for mdBook also the book's root).
        mdbook: resolve mdBook ``{{#include}}`` directives (a ``book.toml`` governs the file).
        snippet_bases: base directories of pymdownx.snippets (empty: snippets are off).
        autorefs: the ``mkdocs.yml`` enables mkdocs-autorefs (its ``autorefs`` plugin, or
            ``mkdocstrings``, which turns it on): ``[text][identifier]`` with no definition is a
            cross-reference link, read as its text.
        icons: the ``mkdocs.yml`` enables ``pymdownx.emoji``: icon shortcodes of MkDocs
            Material's icon sets (``:material-api:``, ``:simple-github:``, ``:octicons-…:``,
            ``:fontawesome-…:``) render as icons, not text.
        hugo: the content-page finder of the Hugo project the file belongs to (its include
            shortcodes are expanded, :mod:`esrag.formats.shortcodes`), or None.
        mdx_include_base: the ``base_path`` of mdx_include when ``mkdocs.yml`` enables it
            (``{!path!}``), else None.
        include_variants: ``mkdocs.yml`` enables FastAPI's ``markdown_include_variants``
            (``{* path hl[…] ln[…] title["…"] *}``).
        mkdocs: the ``mkdocs.yml`` that governs the file, or None.
        vitepress_src: the ``srcDir`` of the VitePress project the file belongs to (its
            ``<!--@include: …-->`` and ``<<< path`` snippets are resolved,
            :mod:`esrag.formats.vitepress_includes`; ``@/`` names this folder), or None.
    """

    file: Path
    allowed: Path
    mdbook: bool = False
    snippet_bases: tuple[Path, ...] = ()
    autorefs: bool = False
    icons: bool = False
    hugo: Finder | None = None
    mdx_include_base: Path | None = None
    include_variants: bool = False
    mkdocs: Path | None = None
    vitepress_src: Path | None = None


def checked_target(path: Path, ctx: IncludeContext, stack: tuple[Path, ...], shown: str) -> Path:
    """``path`` resolved and checked: inside ``ctx.allowed``, a file, not already being included.

    Raises:
        IncludeError: outside the allowed tree, an include cycle, or no such file (named as ``shown``).
    """
    target = path.resolve()
    if not target.is_relative_to(ctx.allowed):
        raise IncludeError(f"{shown} is outside the ingested tree ({ctx.allowed}); not read")
    if target in stack:
        chain = " -> ".join(p.name for p in (*stack, target))
        raise IncludeError(f"include cycle ({chain})")
    if not target.is_file():
        raise IncludeError(f"no such file {shown}")
    return target


def read_included(target: Path, shown: str) -> str:
    """The text of an included file (UTF-8, BOM dropped) with ``\n`` line endings.

    Raises:
        IncludeError: the file cannot be read or decoded; the message names ``shown``.
    """
    try:
        text = target.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise IncludeError(f"cannot read {shown}: {exc}") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def expand_lines(lines: list[str], src: list[int], marker: str, expand: Callable[[str, int], list[str]]) -> tuple[list[str], list[int]]:
    """``lines`` (with their source lines ``src``) where each line holding ``marker`` is replaced
    by ``expand(line, n)``'s lines, every one of them mapped to that line's source line ``n``;
    the other lines keep theirs. The line-level step of the include syntaxes that may stand
    anywhere on a line (mdx_include ``{!…!}``, VitePress ``<!--@include:…-->``)."""
    new: list[str] = []
    new_src: list[int] = []
    for line, n in zip(lines, src):
        parts = expand(line, n) if marker in line else [line]
        new.extend(parts)
        new_src.extend([n] * len(parts))
    return new, new_src
