"""Include directives resolved into the text a reader sees, with a map back to source lines.

Two preprocessors are reproduced, each from its own source:

* mdBook's ``links`` preprocessor (``src/preprocess/links.rs`` and ``take_lines.rs``, mdBook
  0.4/0.5): ``{{#include path}}``, ``{{#include path:anchor}}``, ``{{#include path:N}}``,
  ``{{#include path:start:end}}``, ``{{#include path:start:}}``, ``{{#include path::end}}``
  and ``{{#rustdoc_include …}}`` with the same range forms, ``{{#playground path}}`` (the file
  in a Rust fence) and ``{{#title …}}`` (shows nothing); ``\\{{#…}}`` is an escape. Paths are
  relative to the including file; included text is itself resolved (up to 10 levels, as
  mdBook). Lines holding ``ANCHOR:`` / ``ANCHOR_END:`` markers are dropped from anchored
  includes. ``rustdoc_include`` passes the whole file to rustdoc but shows only the selected
  lines; the rest, and the selected lines that mdBook's HTML renderer hides in Rust code
  (``# `` lines, ``hide_lines.rs``), are not what a reader sees and are left out here.
* pymdownx.snippets (``pymdownx/snippets.py``, pymdown-extensions 10): a line
  ``--8<-- "path"`` (also ``'path'``, any number of dashes), ``"path:start:end"`` line ranges,
  ``"path:section"`` sections between ``--8<-- [start:section]`` / ``[end:section]`` markers
  (marker lines themselves never reach the page, as in upstream's ``parse_snippets``),
  the block form (paths one per line between two ``--8<--`` lines), ``;--8<--`` escapes and
  ``;path`` comments. Paths are relative to the configured ``base_path`` of ``mkdocs.yml``
  (default: the MkDocs project root), then to the including file. The snippet line's
  indentation prefixes every included line.

Every output line maps to the 1-based source line it came from; included lines map to the
directive's line. An include that cannot be resolved (missing file, outside the allowed tree,
a cycle) keeps the directive as text and is reported as a problem.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 10  # mdBook's MAX_LINK_NESTED_DEPTH

_MDBOOK_LINK = re.compile(r"\\\{\{#.*?\}\}|\{\{\s*#([a-zA-Z0-9_]+)\s+([^}]+)\}\}")
_ANCHOR_START = re.compile(r"ANCHOR:\s*(?P<name>[\w_-]+)")
_ANCHOR_END = re.compile(r"ANCHOR_END:\s*(?P<name>[\w_-]+)")
_RUST_BORING = re.compile(r"^(\s*)#(.?)(.*)$")

_SNIPPET_LINE = re.compile(
    r"""^(?P<space>[ \t]*)(?P<escape>;*)(?P<all>(?P<inline>-+8<-+[ \t]+)"""
    r"""(?P<snippet>(?:"(?:\\"|[^"\n\r])+?"|'(?:\\'|[^'\n\r])+?'))(?![ \t])|(?P<block>-+8<-+)(?![ \t]))\r?$"""
)
_SNIPPET_SECTION = re.compile(
    r"^(?P<pre>.*?)(?P<escape>;*)(?P<inline>-+8<-+[ \t]+)"
    r"(?P<section>\[[ \t]*(?P<type>start|end)[ \t]*:[ \t]*(?P<name>[a-z][-_0-9a-z]*)[ \t]*\])(?P<post>.*?)$",
    re.IGNORECASE,
)
_SNIPPET_FILE = re.compile(r"(?i)(.*?)(?:(:[0-9]*)?(:[0-9]*)?|(:[a-z][-_0-9a-z]*)?)$")


class IncludeError(Exception):
    """An include that cannot be resolved; the message names the target and why."""


@dataclass
class Resolved:
    """Text after include resolution.

    Attributes:
        lines: the resolved lines (what the page shows), without newlines.
        line_map: ``line_map[i]`` is the 1-based source line of ``lines[i]``.
        problems: one-line messages ``"line N: …"`` for includes left unresolved.
        dependencies: absolute paths of the files that were included (any depth).
        directives: how many include directives were found and resolved.
    """

    lines: list[str]
    line_map: list[int]
    problems: list[str] = field(default_factory=list)
    dependencies: set[Path] = field(default_factory=set)
    directives: int = 0


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
    """

    file: Path
    allowed: Path
    mdbook: bool = False
    snippet_bases: tuple[Path, ...] = ()
    autorefs: bool = False
    icons: bool = False


def context_for(file: Path, root: Path) -> IncludeContext:
    """The include context of ``file`` inside the ingested tree ``root``: mdBook when a
    ``book.toml`` stands in an ancestor directory (reads are then limited to the tighter of
    ``root`` and the book root), snippets when an ``mkdocs.yml`` that enables
    ``pymdownx.snippets`` does (its ``base_path`` entries, default the MkDocs project root)."""
    file, root = file.resolve(), root.resolve()
    allowed = root
    book = _find_upwards(file.parent, "book.toml")
    if book is not None and _inside(book.parent, root):
        allowed = book.parent
    mkdocs = _find_upwards(file.parent, "mkdocs.yml")
    bases: tuple[Path, ...] = ()
    autorefs = icons = False
    if mkdocs is not None:
        bases = _snippet_bases(mkdocs)
        autorefs = _autorefs(mkdocs)
        icons = "pymdownx.emoji" in mkdocs.read_text(encoding="utf-8", errors="replace")
    return IncludeContext(file, allowed, mdbook=book is not None, snippet_bases=bases, autorefs=autorefs, icons=icons)


def _find_upwards(start: Path, name: str) -> Path | None:
    for d in (start, *start.parents):
        if (d / name).is_file():
            return d / name
    return None


@functools.lru_cache(maxsize=64)
def _snippet_bases(mkdocs: Path) -> tuple[Path, ...]:
    """pymdownx.snippets base paths from ``mkdocs.yml`` (relative to its directory); () when
    the extension is not enabled. Reads only the ``base_path`` key (a string or a list)."""
    text = mkdocs.read_text(encoding="utf-8", errors="replace")
    if "pymdownx.snippets" not in text:
        return ()
    block = text.split("pymdownx.snippets", 1)[1]
    m = re.search(r"base_path:\s*(\[[^\]]*\]|[^\n]+)", block[:2000])
    raw = m.group(1) if m else "."
    names = [s.strip().strip("'\"") for s in raw.strip("[]").split(",") if s.strip().strip("'\"")]
    return tuple((mkdocs.parent / n).resolve() for n in (names or ["."]))


@functools.lru_cache(maxsize=64)
def _autorefs(mkdocs: Path) -> bool:
    """True when ``mkdocs.yml`` lists the ``autorefs`` or ``mkdocstrings`` plugin (a plugin
    entry ``- autorefs`` / ``- mkdocstrings:`` under ``plugins:``)."""
    text = mkdocs.read_text(encoding="utf-8", errors="replace")
    return re.search(r"^\s*-\s*['\"]?(?:autorefs|mkdocstrings)['\"]?\s*:?\s*$", text, re.MULTILINE) is not None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def resolve(text: str, ctx: IncludeContext | None) -> Resolved:
    """Resolve the include directives of ``text`` (already normalised to ``\\n`` endings).

    Args:
        text: the including file's text.
        ctx: where includes may read from; None resolves nothing (each line maps to itself).

    Returns:
        A :class:`Resolved` with one source line per output line.
    """
    lines = text.split("\n")
    out = Resolved(lines=[], line_map=[])
    if ctx is None or not (ctx.mdbook or ctx.snippet_bases):
        out.lines, out.line_map = lines, list(range(1, len(lines) + 1))
        return out
    if ctx.snippet_bases:
        lines, src = _snippets(lines, list(range(1, len(lines) + 1)), ctx, ctx.file, (ctx.file,), out)
    else:
        src = list(range(1, len(lines) + 1))
    for line, n in zip(lines, src):
        if ctx.mdbook and "{{" in line:
            new = _mdbook_line(line, ctx.file.parent, ctx, (ctx.file,), 0, out, n)
            out.lines.extend(new)
            out.line_map.extend([n] * len(new))
        else:
            out.lines.append(line)
            out.line_map.append(n)
    return out


# --- mdBook -------------------------------------------------------------------------------


def _mdbook_line(line: str, base: Path, ctx: IncludeContext, stack: tuple[Path, ...], depth: int,
                 out: Resolved, n: int) -> list[str]:
    """``line`` with its mdBook links replaced (as mdBook's ``replace_all``), split into lines."""
    return _mdbook_text(line, base, ctx, stack, depth, out, n).split("\n")


def _mdbook_text(s: str, base: Path, ctx: IncludeContext, stack: tuple[Path, ...], depth: int,
                 out: Resolved, n: int) -> str:
    parts: list[str] = []
    prev = 0
    for m in _MDBOOK_LINK.finditer(s):
        if m.group(1) is None:  # escaped: \{{#…}} shows without the backslash
            parts.append(s[prev : m.start()])
            parts.append(m.group(0)[1:])
            prev = m.end()
            continue
        kind, rest = m.group(1), m.group(2)
        if kind == "title":  # {{#title …}} sets the page's <title> and shows nothing
            parts.append(s[prev : m.start()])
            prev = m.end()
            continue
        if kind not in ("include", "rustdoc_include", "playground", "playpen"):
            continue
        parts.append(s[prev : m.start()])
        prev = m.end()
        try:
            content, target = _mdbook_render(kind, rest.split()[0], base, ctx, stack)
        except IncludeError as exc:
            out.problems.append(f"line {n}: {m.group(0)}: {exc}")
            parts.append(m.group(0))
            continue
        out.directives += 1
        out.dependencies.add(target)
        if depth + 1 < MAX_DEPTH and "{{" in content:
            content = _mdbook_text(content, target.parent, ctx, (*stack, target), depth + 1, out, n)
        parts.append(content)
    parts.append(s[prev:])
    return "".join(parts)


def _mdbook_render(kind: str, arg: str, base: Path, ctx: IncludeContext, stack: tuple[Path, ...]) -> tuple[str, Path]:
    path, _, spec = arg.partition(":")
    target = _target(base / path, ctx, stack, path)
    text = _read(target, path)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # Rust's str::lines() drops the final empty line
    if kind in ("playground", "playpen"):  # the whole file in a runnable Rust fence
        return "```rust\n" + "\n".join(lines) + "\n```", target
    anchor, rng = _parse_range_or_anchor(spec)
    if kind == "include":
        shown = _anchored(lines, anchor) if anchor is not None else lines[rng[0] : rng[1]]
    else:  # rustdoc_include: only the selected lines are visible, and of those not the hidden ones
        selected = _anchored(lines, anchor) if anchor is not None else lines[rng[0] : rng[1]]
        shown = [ln for ln in selected if not _rust_hidden(ln)]
    return "\n".join(shown), target


def _parse_range_or_anchor(spec: str) -> tuple[str | None, tuple[int | None, int | None]]:
    """mdBook's ``parse_range_or_anchor``: (anchor, None) or (None, (start0, end)) slice bounds."""
    parts = spec.split(":", 2) if spec else []
    first = parts[0] if parts else None
    start: int | None
    if first is not None and first.isdigit():
        start = max(int(first) - 1, 0)
    elif first is None or first == "":
        start = None
    else:
        return first, (None, None)
    end_raw = parts[1] if len(parts) > 1 else None
    end = int(end_raw) if end_raw is not None and end_raw.isdigit() else None
    if start is not None and end_raw is None:
        return None, (start, start + 1)
    if start is not None:
        return None, (start, end)
    return None, (None, end if end_raw is not None and end is not None else None)


def _anchored(lines: list[str], anchor: str) -> list[str]:
    """mdBook's ``take_anchored_lines``: lines between ``ANCHOR: a`` and ``ANCHOR_END: a``,
    every marker line dropped."""
    kept: list[str] = []
    found = False
    for line in lines:
        if found:
            end = _ANCHOR_END.search(line)
            if end:
                if end.group("name") == anchor:
                    break
            elif not _ANCHOR_START.search(line):
                kept.append(line)
        else:
            start = _ANCHOR_START.search(line)
            if start and start.group("name") == anchor:
                found = True
    return kept


def _rust_hidden(line: str) -> bool:
    """True for a line mdBook's HTML renderer hides in Rust code (``# x``, ``#``), per
    ``hide_lines_rust``; ``##`` and ``#[attr]`` stay visible."""
    m = _RUST_BORING.match(line)
    return m is not None and m.group(2) in ("", " ")


# --- pymdownx.snippets --------------------------------------------------------------------


def _snippets(lines: list[str], src: list[int], ctx: IncludeContext, file: Path, stack: tuple[Path, ...],
              out: Resolved, is_section: bool = False) -> tuple[list[str], list[int]]:
    """pymdownx.snippets' ``parse_snippets`` over ``lines`` (with their source lines ``src``):
    outside a section include (``is_section``), section marker lines (``--8<-- [start:x]``,
    ``<!-- --8<-- [end:x] -->``) are removed and an escaped one (``;--8<-- [start:x]``) is
    shown without its first ``;``, as the page the reader sees has them."""
    new: list[str] = []
    new_src: list[int] = []
    block = False
    for line, n in zip(lines, src):
        m = _SNIPPET_LINE.match(line)
        inline = False
        if m:
            if m.group("escape"):
                new.append(line.replace(";", "", 1))
                new_src.append(n)
                continue
            if block and m.group("inline"):
                continue
            if m.group("inline"):
                inline = True
            else:
                block = not block
                continue
        elif not block:
            marker = None if is_section else _SNIPPET_SECTION.match(line)
            if marker is not None and marker.group("escape"):
                line = (marker.group("pre") + marker.group("escape").replace(";", "", 1) + marker.group("inline")
                        + marker.group("section") + marker.group("post"))
            elif marker is not None:
                continue  # a section marker: not on the page
            new.append(line)
            new_src.append(n)
            continue
        space = line[: len(line) - len(line.lstrip(" \t"))].expandtabs(4)  # the leading [ \t]*
        path = m.group("snippet")[1:-1].strip() if inline and m is not None else line.strip()
        if not inline and not path:
            new.append("")
            new_src.append(n)
            continue
        if path.startswith(";"):
            continue
        try:
            included, target, section = _snippet_lines(path, ctx, file, stack)
        except IncludeError as exc:
            out.problems.append(f"line {n}: --8<-- {path!r}: {exc}")
            new.append(line)
            new_src.append(n)
            continue
        out.directives += 1
        out.dependencies.add(target)
        sub, _ = _snippets(included, [n] * len(included), ctx, target, (*stack, target), out, section)
        new.extend(space + s for s in sub)
        new_src.extend([n] * len(sub))
    return new, new_src


def _snippet_lines(path: str, ctx: IncludeContext, file: Path, stack: tuple[Path, ...]) -> tuple[list[str], Path, bool]:
    """The lines a snippet path includes, the file they come from, and whether they are a
    named section (``path:name``)."""
    m = _SNIPPET_FILE.match(path)
    if m is None:  # the pattern's parts are all optional: it matches any path
        raise IncludeError(f"cannot read the snippet path {path!r}")
    name = m.group(1).strip()
    if not name:
        raise IncludeError("no file name")
    if name.lower().startswith(("http://", "https://")):
        raise IncludeError("URL snippets are not downloaded")
    candidates = [b / name for b in ctx.snippet_bases] + [file.parent / name]
    found = next((c for c in candidates if c.is_file()), None)
    target = _target(found if found is not None else candidates[0], ctx, stack, name)
    lines = _read(target, name).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start = max(0, int(m.group(2)[1:]) - 1) if m.group(2) and len(m.group(2)) > 1 else None
    end = int(m.group(3)[1:]) if m.group(3) and len(m.group(3)) > 1 else None
    if start is not None or end is not None:
        return lines[slice(start, end)], target, False
    if m.group(4):
        return _snippet_section(lines, m.group(4)[1:], name), target, True
    return lines, target, False


def _snippet_section(lines: list[str], section: str, name: str) -> list[str]:
    """pymdownx.snippets' ``extract_section``: lines between ``[start:s]`` and ``[end:s]``."""
    kept: list[str] = []
    started = found = False
    for line in lines:
        m = _SNIPPET_SECTION.match(line)
        if m and started and m.group("escape"):
            line = m.group("pre") + m.group("escape").replace(";", "", 1) + m.group("inline") + m.group("section") + m.group("post")
        elif m is not None and m.group("name") == section:
            if not started and m.group("type") == "start":
                started = found = True
                continue
            if started and m.group("type") == "start":
                continue
            break
        elif m and started:
            continue
        if started:
            kept.append(line)
    if not found:
        raise IncludeError(f"section {section!r} not found in {name}")
    return kept


# --- shared -------------------------------------------------------------------------------


def _target(path: Path, ctx: IncludeContext, stack: tuple[Path, ...], shown: str) -> Path:
    """``path`` resolved and checked: inside ``ctx.allowed``, a file, not already being included."""
    target = path.resolve()
    if not _inside(target, ctx.allowed):
        raise IncludeError(f"{shown} is outside the ingested tree ({ctx.allowed}); not read")
    if target in stack:
        chain = " -> ".join(p.name for p in (*stack, target))
        raise IncludeError(f"include cycle ({chain})")
    if not target.is_file():
        raise IncludeError(f"no such file {shown}")
    return target


def _read(target: Path, shown: str) -> str:
    try:
        text = target.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise IncludeError(f"cannot read {shown}: {exc}") from exc
    return text.replace("\r\n", "\n").replace("\r", "\n")
