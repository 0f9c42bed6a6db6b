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
* Hugo shortcodes (:mod:`esrag.formats.shortcodes`), for files of a Hugo project: the inner
  content of paired shortcodes, ``{{% include "page" %}}`` pages of the content tree, nothing for
  the others.
* pymdownx.snippets (``pymdownx/snippets.py``, pymdown-extensions 10): a line
  ``--8<-- "path"`` (also ``'path'``, any number of dashes), ``"path:start:end"`` line ranges,
  ``"path:section"`` sections between ``--8<-- [start:section]`` / ``[end:section]`` markers
  (marker lines themselves never reach the page, as in upstream's ``parse_snippets``),
  the block form (paths one per line between two ``--8<--`` lines), ``;--8<--`` escapes and
  ``;path`` comments. Paths are relative to the configured ``base_path`` of ``mkdocs.yml``
  (default: the MkDocs project root), then to the including file. The snippet line's
  indentation prefixes every included line.

* mdx_include (``mdx_include.py``, mdx-include 1.4) and FastAPI's markdown-include-variants
  (``markdown_include_variants/_main.py``): ``{!path!}`` and ``{* path ln[…] hl[…] title["…"] *}``
  when ``mkdocs.yml`` lists them under ``markdown_extensions`` (see :func:`_mdx_include` and
  :func:`_variants`).

Every output line maps to the 1-based source line it came from; included lines map to the
directive's line. An include that cannot be resolved (missing file, outside the allowed tree,
a cycle, a URL) is left out of the text — an agent must not be handed a raw directive for the
code it stands for — and reported as a problem naming the line (mdx_include's own
``truncate_on_failure`` and pymdownx.snippets without ``check_paths`` drop it too; mdBook would
show it raw). A line that looks like a directive of a form whose extension is not enabled stays
as text (it is what the page shows) and is reported as well.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from esrag.formats.base import UNRESOLVED
from esrag.formats.include_base import IncludeContext, IncludeError, Resolved, checked_target, expand_lines, read_included
from esrag.formats.mkdocs_config import find_mkdocs, read_mkdocs
from esrag.formats.shortcodes import Finder, content_finder, expand
from esrag.formats.vitepress_includes import resolve_vitepress
from esrag.sites.hugo import project_of, read_hugo
from esrag.sites.vitepress import find_project, read_vitepress

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


def context_for(file: Path, root: Path) -> IncludeContext:
    """The include context of ``file`` inside the ingested tree ``root``: mdBook when a
    ``book.toml`` stands in an ancestor directory (reads are then limited to the tighter of
    ``root`` and the book root); from the nearest ``mkdocs.yml`` (:mod:`esrag.formats.mkdocs_config`)
    the Markdown extensions it enables: ``pymdownx.snippets`` (its ``base_path`` entries, default
    the MkDocs project root), ``mdx_include`` (its ``base_path``, default ``.``, i.e. the project
    root where ``mkdocs build`` runs) and ``markdown_include_variants``."""
    file, root = file.resolve(), root.resolve()
    allowed = root
    book = _find_upwards(file.parent, "book.toml")
    if book is not None and book.parent.is_relative_to(root):
        allowed = book.parent
    vitepress_src = _vitepress_src(file.parent) if book is None else None
    if vitepress_src is not None:  # a VitePress project's <!--@include--> and <<< snippets
        return IncludeContext(file, allowed, vitepress_src=vitepress_src)
    found = find_mkdocs(file.parent)
    if found is None:  # a Hugo project's include shortcodes, outside an mdBook
        return IncludeContext(file, allowed, mdbook=book is not None, hugo=_hugo_finder(file.parent, allowed) if book is None else None)
    cfg = read_mkdocs(found)
    ext = cfg.extensions
    bases: tuple[Path, ...] = ()
    if "pymdownx.snippets" in ext:
        bases = tuple((cfg.root / n).resolve() for n in (_str_list(ext["pymdownx.snippets"].get("base_path")) or ["."]))
    mdx: Path | None = None
    if "mdx_include" in ext:
        mdx = (cfg.root / (_str_list(ext["mdx_include"].get("base_path")) or ["."])[0]).resolve()
    return IncludeContext(
        file,
        allowed,
        mdbook=book is not None,
        snippet_bases=bases,
        autorefs=bool({"autorefs", "mkdocstrings"} & set(cfg.plugins)),
        icons="pymdownx.emoji" in ext,
        mdx_include_base=mdx,
        include_variants="markdown_include_variants" in ext,
        mkdocs=cfg.path,
    )


def _hugo_finder(start: Path, allowed: Path) -> Finder | None:
    """The content-page finder of the Hugo project above ``start`` (its content mounts, reads
    limited to ``allowed``), or None outside a Hugo project."""
    project = project_of(start)
    if project is None:
        return None
    find = _content_finder(project)
    if find is None:
        return None
    return lambda path, including: (lambda t: t if t is not None and t.is_relative_to(allowed) else None)(find(path, including))


@functools.lru_cache(maxsize=16)
def _content_finder(project: Path) -> Finder | None:
    try:
        layout = read_hugo(project)
    except Exception:  # an invalid configuration is reported by the site layer; no includes here
        return None
    return content_finder([(m.source, m.target) for m in layout.mounts]) if layout is not None else None


def _vitepress_src(start: Path) -> Path | None:
    """The ``srcDir`` of the VitePress project at or above ``start`` (the nearest folder holding
    ``.vitepress/config.*``), or None outside one (or when its configuration cannot be read:
    the site layer reports that)."""
    project = find_project(start)
    return _vitepress_src_of(project) if project is not None else None


@functools.lru_cache(maxsize=16)
def _vitepress_src_of(project: Path) -> Path | None:
    try:
        layout = read_vitepress(project)
    except Exception:  # an invalid configuration is reported by the site layer; no includes here
        return None
    return layout.src_dir if layout is not None else None


def _find_upwards(start: Path, name: str) -> Path | None:
    for d in (start, *start.parents):
        if (d / name).is_file():
            return d / name
    return None


def _str_list(value: object) -> list[str]:
    """A string-or-list option (``base_path``) as a list of non-empty strings."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float) and str(v).strip()]
    return []


def resolve(text: str, ctx: IncludeContext | None) -> Resolved:
    """Resolve the include directives of ``text`` (already normalised to ``\\n`` endings).

    Python-Markdown runs preprocessors by priority: ``markdown_include_variants`` (110), then
    ``mdx_include`` (101), then ``pymdownx.snippets`` (32); mdBook's ``links`` preprocessor is
    the only one of a book. Afterwards every line that still looks like an include directive of
    a form no enabled extension handles is reported (:func:`unresolved_lookalikes`) and kept as
    the text it is on the page.

    Args:
        text: the including file's text.
        ctx: where includes may read from; None resolves nothing (each line maps to itself).

    Returns:
        A :class:`Resolved` with one source line per output line.
    """
    lines = text.split("\n")
    out = Resolved(lines=[], line_map=[])
    if ctx is not None and ctx.hugo is not None:
        expanded = expand(text, ctx.file, ctx.hugo)
        out.lines, out.line_map, out.problems = expanded.lines, expanded.line_map, expanded.problems
        out.dependencies, out.directives = expanded.dependencies, len(expanded.dependencies)
        return out
    src = list(range(1, len(lines) + 1))
    if ctx is not None and ctx.vitepress_src is not None:
        lines, src = resolve_vitepress(lines, src, ctx, out)
    if ctx is not None and ctx.include_variants:
        lines, src = _variants(lines, src, ctx, out)
    if ctx is not None and ctx.mdx_include_base is not None:
        lines, src = _mdx_include(lines, src, ctx, ctx.file, (ctx.file,), out, 0)
    if ctx is not None and ctx.snippet_bases:
        lines, src = _snippets(lines, src, ctx, ctx.file, (ctx.file,), out)
    for line, n in zip(lines, src):
        if ctx is not None and ctx.mdbook and "{{" in line:
            new = _mdbook_line(line, ctx.file.parent, ctx, (ctx.file,), 0, out, n)
            out.lines.extend(new)
            out.line_map.extend([n] * len(new))
        else:
            out.lines.append(line)
            out.line_map.append(n)
    for _n, problem in unresolved_lookalikes(out.lines, out.line_map, ctx):
        out.unresolved += 1
        out.problems.append(problem)
    return out


# --- what looks like an include -----------------------------------------------------------

# Each form esrag resolves, as a whole line with a path-like argument (no spaces), so that a
# template's ``{!! $x !!}`` (Blade) or prose is not taken for one. (form, extension, pattern)
_LOOKALIKES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("mdBook", "book.toml", re.compile(r"(?<!\\)\{\{\s*#(?:include|rustdoc_include|playground|playpen)\s+[^\s}]+[^}]*\}\}")),
    ("pymdownx.snippets", "pymdownx.snippets", re.compile(r"""^[ \t]*-+8<-+[ \t]+(?:"[^"\s]+"|'[^'\s]+')[ \t]*$""")),
    ("mdx_include", "mdx_include", re.compile(r"^\s*\{![+-]?>?\s*[^\s!\]|\[]+(?:\s*\[ln:[\d.,e-]+\])?\s*!\}\s*$")),
    ("markdown_include_variants", "markdown_include_variants", re.compile(r"^\{\*\s*[^\s*]+\.[A-Za-z0-9]+(?:\s+\w+\[[^\]]*\])*\s*\*\}$")),
)


def unresolved_lookalikes(lines: list[str], line_map: list[int], ctx: IncludeContext | None) -> list[tuple[int, str]]:
    """Lines that look like an include directive of a form whose extension is not enabled for
    this file (so nothing resolved it): ``(source line, problem)`` per line, the problem naming
    the form, the line and why it stayed (it is indexed as the text the page shows)."""
    enabled = {
        "mdBook": ctx is not None and ctx.mdbook,
        "pymdownx.snippets": ctx is not None and bool(ctx.snippet_bases),
        "mdx_include": ctx is not None and ctx.mdx_include_base is not None,
        "markdown_include_variants": ctx is not None and ctx.include_variants,
    }
    found: list[tuple[int, str]] = []
    for line, n in zip(lines, line_map):
        if "{" not in line and "8<" not in line:
            continue
        for form, extension, pattern in _LOOKALIKES:
            if enabled[form] or not pattern.search(line):
                continue
            found.append(
                (
                    n,
                    f"line {n}: {line.strip()[:120]}: looks like a {form} include, but {_why_off(form, extension, ctx)}"
                    f" ({UNRESOLVED}; indexed as text)",
                )
            )
            break
    return found


def _why_off(form: str, extension: str, ctx: IncludeContext | None) -> str:
    if ctx is None:
        return "the file was not read from an ingested tree"
    if form == "mdBook":
        return "no book.toml governs this file"
    if ctx.mkdocs is None:
        return f"no mkdocs.yml governs this file (it would enable {extension})"
    return f"{ctx.mkdocs.name} does not enable {extension}"


# --- FastAPI's markdown-include-variants ---------------------------------------------------

_VARIANT_LINE = re.compile(r"^\{\*\s*(\S+)\s*(.*)\*\}$")
_VARIANT_OPTION = re.compile(r"(\w+)\[([^\]]+)\]")


def _variants(lines: list[str], src: list[int], ctx: IncludeContext, out: Resolved) -> tuple[list[str], list[int]]:
    """markdown-include-variants (``markdown_include_variants/_main.py``,
    ``IncludeVariantsPreprocessor``): a line ``{* path ln[…] hl[…] title["…"] *}`` becomes the
    file's code in a ``python`` fence (with ``title="…"`` when given), as the page's first tab
    shows it: ``ln[3:6,8]`` keeps those 1-based inclusive line ranges with upstream's
    ``# Code above omitted 👆`` / ``# Code here omitted 👈`` / ``# Code below omitted 👇``
    lines between them; ``hl[…]`` only highlights and changes nothing here. The path is relative
    to the MkDocs project root (where ``mkdocs build`` runs). Left out, as they are collapsed
    on the page: the "Full file preview" box of an ``ln`` include and the "Other versions and
    variants" box (the same example for other Python versions); ``ln[0]``, which shows only the
    preview, shows the whole file here."""
    new: list[str] = []
    new_src: list[int] = []
    for line, n in zip(lines, src):
        m = _VARIANT_LINE.match(line)
        if m is None:
            new.append(line)
            new_src.append(n)
            continue
        try:
            block, target = _variant_block(m.group(1), m.group(2), ctx)
        except IncludeError as exc:
            out.fail(n, line.strip(), str(exc))
            continue
        out.directives += 1
        out.dependencies.add(target)
        new.extend(block)
        new_src.extend([n] * len(block))
    return new, new_src


def _variant_block(path: str, options: str, ctx: IncludeContext) -> tuple[list[str], Path]:
    root = ctx.mkdocs.parent if ctx.mkdocs is not None else ctx.file.parent
    target = checked_target(root / path, ctx, (ctx.file,), path)
    code = read_included(target, path).splitlines()
    ln: list[tuple[int, int]] = []
    title = None
    for name, value in _VARIANT_OPTION.findall(options):
        if name == "ln":
            ln.extend(_variant_ranges(value))
        elif name == "title":
            title = value.strip()[1:-1] if len(value.strip()) > 1 and value.strip()[0] == value.strip()[-1] == '"' else None
            if title is None:
                raise IncludeError(f'title[{value}] is not a quoted string (title["…"])')
    body: list[str] = []
    if not ln or ln == [(0, 0)]:
        body = code
    else:
        for i, (start, end) in enumerate(ln):
            if i == 0 and start > 1:
                body += ["# Code above omitted 👆", ""]
            if i >= 1:
                body += ["", "# Code here omitted 👈", ""]
            body += code[start - 1 : end]
            if i == len(ln) - 1 and end < len(code):
                body += ["", "# Code below omitted 👇"]
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    info = "python" + (f' title="{title}"' if title else "")
    return [f"{fence}{info}", *body, fence, ""], target


def _variant_ranges(value: str) -> list[tuple[int, int]]:
    """upstream's ``parse_lines_index``: ``"3:6, 8"`` -> ``[(3, 6), (8, 8)]``, sorted."""
    ranges: list[tuple[int, int]] = []
    for part in value.split(","):
        a, sep, b = part.strip().partition(":")
        try:
            ranges.append((int(a), int(b)) if sep else (int(a), int(a)))
        except ValueError:
            raise IncludeError(f"ln[{value}] is not a list of line numbers and ranges (ln[3:6,8])") from None
    return sorted(ranges)


def _longest_backtick_run(lines: list[str]) -> int:
    return max((len(r) for ln in lines for r in re.findall(r"`+", ln) if ln.lstrip().startswith("`")), default=0)


# --- mdx_include ----------------------------------------------------------------------------

# mdx_include's default syntax (``IncludeExtension.compiled_re`` with its default ``syntax_*``)
_MDX = re.compile(
    r"(?P<escape>\\)?\{!(?P<recursive>[+-])?(?P<apply_indent>>?)?\s*(?P<path>[^]|[]+?)"
    r"(\s*\[ln:(?P<lines>[\d.,-]+)\])?\s*(\|\s*(?P<encoding>.+?)\s*)?!\}"
)


def _mdx_include(
    lines: list[str], src: list[int], ctx: IncludeContext, parent: Path, stack: tuple[Path, ...], out: Resolved, depth: int
) -> tuple[list[str], list[int]]:
    """mdx_include 1.4 (``mdx_include.py``, ``mdx_include_get_processed_lines``) with its default
    options: ``{!path!}`` anywhere on a line is replaced by the file's lines (``\\{!…!}`` shows
    without the backslash); ``{!> path!}`` prefixes every included line with the text before
    the directive; ``[ln:…]`` takes rcslice row ranges (1-based, inclusive: ``3``, ``3-5``,
    ``3-``, ``-5``, ``e`` for the last line; parts joined by two empty lines, mdx_include's
    ``line_slice_separator``); included files are themselves resolved (``{!+…!}`` / ``{!-…!}``
    force it on or off); relative paths start at ``base_path``. A file that cannot be read is
    left out (``truncate_on_failure``) and reported; URLs are not downloaded."""
    return expand_lines(lines, src, "{!", lambda line, n: _mdx_line(line, n, ctx, parent, stack, out, depth))


def _mdx_line(line: str, n: int, ctx: IncludeContext, parent: Path, stack: tuple[Path, ...], out: Resolved, depth: int) -> list[str]:
    resll: list[str] = []
    c = 0
    for m in _MDX.finditer(line):
        if m.group("escape"):
            textl = [m.group(0)[1:]]
        else:
            try:
                textl, target = _mdx_content(m, ctx, stack)
            except IncludeError as exc:
                out.fail(n, m.group(0), str(exc))
                textl = []
            else:
                out.directives += 1
                out.dependencies.add(target)
                if m.group("recursive") != "-" and depth + 1 < MAX_DEPTH:
                    textl, _ = _mdx_include(textl, [n] * len(textl), ctx, target, (*stack, target), out, depth + 1)
        s, e = m.span()
        if textl:
            if resll:
                resll[-1] = resll[-1] + line[c:s] + textl[0]
                resll.extend(textl[1:])
            elif m.group("apply_indent"):
                resll = [line[c:s] + t for t in textl]
            else:
                resll.append(line[c:s] + textl[0])
                resll.extend(textl[1:])
        else:
            resll.append(line[c:s])
        c = e
    if resll:
        resll[-1] = resll[-1] + line[c:]
    else:
        resll.append(line[c:])
    return resll


def _mdx_content(m: re.Match[str], ctx: IncludeContext, stack: tuple[Path, ...]) -> tuple[list[str], Path]:
    name = os.path.expanduser(m.group("path"))
    if "://" in name:
        raise IncludeError("URL includes are not downloaded")
    base = ctx.mdx_include_base if ctx.mdx_include_base is not None else ctx.file.parent
    target = checked_target(Path(os.path.normpath(base / name)), ctx, stack, name)
    lines = (read_included(target, name) + "\n").splitlines()
    if m.group("lines"):
        lines = _row_slice(lines, m.group("lines"))
    return lines, target


def _row_slice(lines: list[str], spec: str) -> list[str]:
    """rcslice's ``RowSlice.slice`` for row ranges (no column parts), separator ``["", ""]``."""
    if not lines:
        return lines
    e = str(len(lines))
    out: list[str] = []
    for i, part in enumerate(p for p in spec.split(",") if p):
        if "." in part:
            raise IncludeError(f"[ln:{spec}]: column slices are not supported")
        a, sep, b = part.replace("e", e).partition("-")
        try:
            start = int(a) if a else None
            end = int(b) if b else None
        except ValueError:
            raise IncludeError(f"[ln:{spec}] is not a row slice (3, 3-5, 3-, -5)") from None
        if i:
            out += ["", ""]
        if not sep:
            out += lines[start - 1 : start] if start else []
        elif start is not None and end is not None and end < start:
            out += lines[start - 1 : end - 2 if end >= 2 else None : -1]
        else:
            out += lines[(start - 1) if start else None : end]
    return out


# --- mdBook -------------------------------------------------------------------------------


def _mdbook_line(line: str, base: Path, ctx: IncludeContext, stack: tuple[Path, ...], depth: int, out: Resolved, n: int) -> list[str]:
    """``line`` with its mdBook links replaced (as mdBook's ``replace_all``), split into lines."""
    return _mdbook_text(line, base, ctx, stack, depth, out, n).split("\n")


def _mdbook_text(s: str, base: Path, ctx: IncludeContext, stack: tuple[Path, ...], depth: int, out: Resolved, n: int) -> str:
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
            out.fail(n, m.group(0), str(exc))
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
    target = checked_target(base / path, ctx, stack, path)
    text = read_included(target, path)
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


def _snippets(
    lines: list[str], src: list[int], ctx: IncludeContext, file: Path, stack: tuple[Path, ...], out: Resolved, is_section: bool = False
) -> tuple[list[str], list[int]]:
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
                line = (
                    marker.group("pre")
                    + marker.group("escape").replace(";", "", 1)
                    + marker.group("inline")
                    + marker.group("section")
                    + marker.group("post")
                )
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
            out.fail(n, f"--8<-- {path!r}", str(exc))
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
    target = checked_target(found if found is not None else candidates[0], ctx, stack, name)
    lines = read_included(target, name).split("\n")
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
