"""Hugo shortcodes turned into the text a reader sees, with a map back to source lines.

Hugo's page parser (``parser/pageparser``) finds shortcodes anywhere in the content, before
Markdown (also inside code fences): ``{{< name args >}}`` (its inner content is passed to the
template as is) and ``{{% name args %}}`` (its inner content is Markdown, rendered with the
page). Without the site's templates, what a shortcode renders is unknown, so:

* a paired shortcode (``{{< x >}}…{{< /x >}}``, nested ones too) shows its inner content and
  not its delimiters. The inner content of a ``{{< >}}`` shortcode that stands on its own lines
  is raw text, not Markdown, so it is kept as a fenced code block (a TOML comment ``# x`` in a
  ``{{< code-toggle >}}`` is no header); a ``{{% %}}`` one is Markdown;
* a shortcode without inner content (``{{< new-in 0.1 >}}``, ``{{< img … />}}``) shows nothing;
* an include-style shortcode — ``{{% include "path" %}}`` / ``{{< include … >}}`` (the hugoDocs
  shortcode, which renders another content page through ``GetPage``), or any shortcode whose
  first argument names a Markdown file of the content tree — shows that page's content
  (front matter dropped, its own shortcodes resolved, up to 10 levels). A path is looked up
  as ``GetPage`` does: relative to the including page's folder, then from the content root,
  with or without its extension, a bundle folder by its ``index.md`` / ``_index.md``. An
  ``include`` whose file is missing shows nothing and is reported;
* a shortcode comment ``{{</* x */>}}`` shows as ``{{< x >}}`` (how Hugo's docs show examples).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

MAX_DEPTH = 10
_TAG = re.compile(r"\{\{(<|%)(.*?)(>|%)\}\}", re.DOTALL)
_COMMENT = re.compile(r"^\s*/\*(.*)\*/\s*$", re.DOTALL)
_NAME = re.compile(r"^\s*(/)?\s*([\w./-]+)(.*?)(/)?\s*$", re.DOTALL)
_ARG = re.compile(r'"((?:\\.|[^"\\])*)"|`([^`]*)`|([\w.-]+)=("(?:\\.|[^"\\])*"|`[^`]*`|\S+)|(\S+)')
INCLUDE_NAMES = ("include",)
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown")

#: finds the file of a content path (GetPage semantics) for the including file, or None.
Finder = Callable[[str, Path], Path | None]


@dataclass(slots=True)
class _Tag:
    start: int
    end: int
    kind: str  # "<" or "%"
    name: str
    closing: bool
    self_closing: bool
    args: list[str]
    comment: str | None = None  # text shown for {{</* … */>}}


@dataclass
class Expanded:
    """Shortcode-free text: ``lines``, ``line_map`` (1-based source line of each line),
    ``problems`` (``"line N: …"``) and the ``dependencies`` (included files)."""

    lines: list[str]
    line_map: list[int]
    problems: list[str] = field(default_factory=list)
    dependencies: set[Path] = field(default_factory=set)


def _args(raw: str) -> list[str]:
    out = []
    for m in _ARG.finditer(raw):
        if m.group(1) is not None:
            out.append(m.group(1).replace('\\"', '"'))
        elif m.group(2) is not None:
            out.append(m.group(2))
        elif m.group(5) is not None:
            out.append(m.group(5))
        else:
            out.append(f"{m.group(3)}={m.group(4).strip(chr(34) + '`')}")
    return out


def _tags(text: str) -> list[_Tag]:
    tags = []
    for m in _TAG.finditer(text):
        if (m.group(1) == "<") != (m.group(3) == ">"):
            continue
        inner = m.group(2)
        c = _COMMENT.match(inner)
        if c is not None:
            tags.append(_Tag(m.start(), m.end(), m.group(1), "", False, False, [], "{{" + m.group(1) + c.group(1) + m.group(3) + "}}"))
            continue
        n = _NAME.match(inner)
        if n is None:
            continue
        tags.append(_Tag(m.start(), m.end(), m.group(1), n.group(2), bool(n.group(1)), bool(n.group(4)), _args(n.group(3))))
    return tags


def _close_of(tags: list[_Tag], i: int) -> int | None:
    """Index of the closing tag of ``tags[i]`` (same name, nesting counted), or None."""
    depth = 0
    name = tags[i].name
    for j in range(i + 1, len(tags)):
        t = tags[j]
        if t.comment is not None or t.name != name:
            continue
        if t.closing:
            if depth == 0:
                return j
            depth -= 1
        elif not t.self_closing and _close_exists(tags, j):
            depth += 1
    return None


def _close_exists(tags: list[_Tag], i: int) -> bool:
    return any(t.closing and t.name == tags[i].name for t in tags[i + 1 :])


def _alone(text: str, start: int, end: int) -> bool:
    """True when ``text[start:end]`` is the only thing on its line(s) but whitespace."""
    before = text[text.rfind("\n", 0, start) + 1 : start]
    nl = text.find("\n", end)
    after = text[end : nl if nl >= 0 else len(text)]
    return not before.strip() and not after.strip()


class _Out:
    def __init__(self, first_line: int) -> None:
        self.lines = [""]
        self.map = [first_line]

    def add(self, text: str, line: int, fixed: bool = False) -> None:
        """Append ``text`` whose first character is on source ``line`` (``fixed``: every line
        of it maps to ``line``, as included text does)."""
        parts = text.split("\n")
        self.lines[-1] += parts[0]
        for k, part in enumerate(parts[1:], start=1):
            self.lines.append(part)
            self.map.append(line if fixed else line + k)


def _strip_front_matter(text: str) -> str:
    """``text`` without a leading ``---`` / ``+++`` front matter block (its lines removed)."""
    lines = text.split("\n")
    if lines and lines[0].strip() in ("---", "+++"):
        fence = lines[0].strip()
        for i in range(1, len(lines)):
            if lines[i].strip() == fence:
                return "\n".join(lines[i + 1 :])
    return text


def expand(text: str, file: Path | None, finder: Finder | None, depth: int = 0, stack: tuple[Path, ...] = ()) -> Expanded:
    """``text`` (a content file's text, ``\\n`` line endings) with its shortcodes replaced (see
    the module docstring). ``file`` is the including file and ``finder`` looks up content
    paths for includes (None: includes show nothing and are reported)."""
    tags = _tags(text) if "{{" in text else []
    if depth == 0 and tags:  # shortcodes in front matter are not processed
        body = len(text) - len(_strip_front_matter(text))
        tags = [t for t in tags if t.start >= body]
    out = _Out(1)
    result = Expanded([], [])
    _emit(text, tags, 0, len(tags), 0, len(text), out, result, file, finder, depth, stack, fixed_line=None)
    result.lines, result.line_map = out.lines, out.map
    return result


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _emit(
    text: str,
    tags: list[_Tag],
    lo: int,
    hi: int,
    start: int,
    stop: int,
    out: _Out,
    result: Expanded,
    file: Path | None,
    finder: Finder | None,
    depth: int,
    stack: tuple[Path, ...],
    fixed_line: int | None,
) -> None:
    """Write ``text[start:stop]`` (holding ``tags[lo:hi]``) to ``out`` with shortcodes expanded."""
    pos, i = start, lo

    def copy(a: int, b: int) -> None:
        if b > a:
            line = fixed_line if fixed_line is not None else _line_of(text, a)
            out.add(text[a:b], line, fixed_line is not None)

    while i < hi:
        t = tags[i]
        copy(pos, t.start)
        tag_line = fixed_line if fixed_line is not None else _line_of(text, t.start)
        if t.comment is not None:
            out.add(t.comment, tag_line, True)
            pos, i = t.end, i + 1
            continue
        if t.closing:  # a stray closing tag shows nothing
            _keep_newlines(out, text, t, tag_line, fixed_line)
            pos, i = t.end, i + 1
            continue
        close = None if t.self_closing else _close_of(tags, i)
        if close is None or close >= hi:
            _keep_newlines(out, text, t, tag_line, fixed_line)
            _include(t, tag_line, out, result, file, finder, depth, stack)
            pos, i = t.end, i + 1
            continue
        end_tag = tags[close]
        fence = t.kind == "<" and _alone(text, t.start, t.end) and _alone(text, end_tag.start, end_tag.end)
        inner = text[t.end : end_tag.start]
        if fence and inner.strip():
            ticks = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", inner)), default=0))
            out.add(ticks, tag_line, True)
            _keep_newlines(out, text, t, tag_line, fixed_line)
            _emit(text, tags, i + 1, close, t.end, end_tag.start, out, result, file, finder, depth, stack, fixed_line)
            end_line = fixed_line if fixed_line is not None else _line_of(text, end_tag.start)
            if out.lines[-1].strip():
                out.add("\n", end_line, True)
            out.add(ticks, end_line, True)
        else:
            _keep_newlines(out, text, t, tag_line, fixed_line)
            _emit(text, tags, i + 1, close, t.end, end_tag.start, out, result, file, finder, depth, stack, fixed_line)
        end_line = fixed_line if fixed_line is not None else _line_of(text, end_tag.start)
        _keep_newlines(out, text, end_tag, end_line, fixed_line)
        pos, i = end_tag.end, close + 1
    copy(pos, stop)


def _keep_newlines(out: _Out, text: str, t: _Tag, line: int, fixed_line: int | None) -> None:
    """A tag spanning several lines leaves its line breaks, so later lines keep their numbers."""
    n = text.count("\n", t.start, t.end)
    if n:
        out.add("\n" * n, line, fixed_line is not None)


def _include(
    t: _Tag, line: int, out: _Out, result: Expanded, file: Path | None, finder: Finder | None, depth: int, stack: tuple[Path, ...]
) -> None:
    """Write the page an include-style shortcode ``t`` names (nothing for other shortcodes)."""
    positional = [a for a in t.args if "=" not in a or a.startswith(("/", "."))]
    named = dict(a.split("=", 1) for a in t.args if "=" in a and not a.startswith(("/", ".")))
    path = positional[0] if positional else named.get("file", named.get("path", ""))
    is_include = t.name.lower() in INCLUDE_NAMES
    if not is_include and not path.lower().endswith(MARKDOWN_SUFFIXES):
        return
    target = finder(path, file) if finder is not None and file is not None and path else None
    if target is None:
        if is_include:
            what = f"{{{{{t.kind} {t.name} {path!r} {'>' if t.kind == '<' else '%'}}}}}"
            result.problems.append(
                f"line {line}: {what}: " + (f"no page {path} in the content tree; left out" if path else "no path given; left out")
            )
        return
    if target in stack or (file is not None and target == file):
        result.problems.append(f"line {line}: include cycle ({' -> '.join(p.name for p in (*stack, target))}); left out")
        return
    if depth + 1 >= MAX_DEPTH:
        result.problems.append(f"line {line}: includes nested deeper than {MAX_DEPTH}; {path} left out")
        return
    try:
        body = _strip_front_matter(target.read_text(encoding="utf-8-sig").replace("\r\n", "\n"))
    except (OSError, UnicodeDecodeError) as exc:
        result.problems.append(f"line {line}: cannot read {path}: {exc}; left out")
        return
    result.dependencies.add(target)
    sub = expand(body.strip("\n"), target, finder, depth + 1, (*stack, *((file,) if file else ()), target))
    result.problems.extend(f"line {line}: in {target.name}: {p}" for p in sub.problems)
    result.dependencies |= sub.dependencies
    out.add("\n".join(sub.lines), line, True)


def content_finder(roots: list[tuple[Path, str]]) -> Finder:
    """A :data:`Finder` over a Hugo content tree made of ``(source folder, target path)`` mounts:
    ``GetPage``'s lookup — relative to the including file's folder, then from the content root;
    the path with its extension, or with a content suffix added, or a bundle's ``index`` /
    ``_index``."""

    def candidates(logical: str) -> list[Path]:
        out = []
        for source, target in roots:
            rel = logical
            if target:
                if not (logical + "/").startswith(target + "/"):
                    continue
                rel = logical[len(target) :].lstrip("/")
            base = source / rel
            out += [base] + [base.with_name(base.name + s) for s in MARKDOWN_SUFFIXES]
            out += [base / f"{n}{s}" for n in ("index", "_index") for s in MARKDOWN_SUFFIXES]
        return out

    def logical_of(file: Path) -> str | None:
        for source, target in roots:
            try:
                rel = file.resolve().relative_to(source).as_posix()
            except ValueError:
                continue
            return posixpath.join(target, rel) if target else rel
        return None

    def find(path: str, including: Path) -> Path | None:
        path = path.strip()
        looks: list[str] = []
        if not path.startswith("/"):
            here = logical_of(including)
            if here is not None:
                looks.append(posixpath.normpath(posixpath.join(posixpath.dirname(here), path)))
        looks.append(posixpath.normpath(path.lstrip("/")))
        for logical in looks:
            for c in candidates(logical.lstrip("./")):
                if c.is_file():
                    return c.resolve()
        return None

    return find
