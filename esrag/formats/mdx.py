"""MDX read as Markdown: what a reader sees without the code around it.

MDX (mdxjs.com, MDX 2/3) adds to Markdown ESM blocks (``import``/``export`` at the start of a
line, up to the next blank line), JSX elements (``<Tabs>``, ``<TabItem value="x">``,
``</Tabs>``, ``<Note />``, fragments ``<>``/``</>``) and expressions (``{/* comment */}``).
:func:`blank_code_lines` replaces ESM lines, lines made only of JSX tags (capitalised
components or fragments, possibly spread over several lines) and lines made only of
``{…}`` expressions with empty lines, outside fenced code. Line numbers stay as they are, and
text between tags (``<Tab>Python</Tab>`` keeps ``Python``… as a line with text) stays.
:func:`expand_partials` first inlines imported Markdown/MDX partials where they are used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ESM = re.compile(r"^(import|export)\b")
_TAG = r"<(?:/?[A-Z][\w.:-]*(?:\s+[^<>]*?)?\s*/?|/?)>"
_JSX_ONLY = re.compile(rf"^\s*(?:{_TAG}\s*)+$")
_JSX_OPEN = re.compile(r"^\s*</?[A-Z][\w.:-]*(?:\s[^<>]*)?$")  # a component tag whose props continue
_EXPR_ONLY = re.compile(r"^\s*\{.*\}\s*$")


def blank_code_lines(text: str) -> str:
    """``text`` (normalised MDX) with ESM, JSX-only and expression-only lines made empty.

    Front matter (a leading ``---`` block) is left alone, as is everything inside fences.
    """
    lines = text.split("\n")
    fence: str | None = None
    i = _front_matter_end(lines)
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)) :].strip():
                fence = None
            i += 1
            continue
        if m:
            fence = m.group(1)
            i += 1
            continue
        if _ESM.match(line):
            while i < len(lines) and lines[i].strip():
                lines[i] = ""
                i += 1
            continue
        if _JSX_ONLY.match(line) or _EXPR_ONLY.match(line):
            lines[i] = ""
        elif _JSX_OPEN.match(line):  # <Component\n  prop="x"\n  code={`…`}\n/> : through the closing '>'
            end = _tag_end(lines, i, line.index("<") + 1)
            if end is not None and not lines[end.line][end.column + 1 :].strip():
                _blank_tag(lines, i, end)
                i = end.line
        i += 1
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _TagEnd:
    """Where a JSX tag that opened on an earlier line ends: ``line`` and ``column`` of its ``>``
    (0-based), and ``literal``: the lines wholly inside a template literal of one of its
    attribute expressions (``code={`…`}``: what the component shows as text)."""

    line: int
    column: int
    literal: tuple[int, ...]


#: how many lines a JSX tag may span before it is taken for text (a stray ``<Word`` line)
MAX_TAG_LINES = 400


def _tag_end(lines: list[str], start: int, column: int) -> _TagEnd | None:
    """The end of the JSX tag whose name starts at ``lines[start][column]`` (MDX 3 / JSX: an
    attribute value is a quoted string or a ``{…}`` JavaScript expression, in which strings,
    nested braces and template literals with ``${…}`` hold any character, ``>`` included), or
    None when it does not close within :data:`MAX_TAG_LINES` lines or a blank line comes first
    outside an expression (then the line was text, as MDX would also refuse the tag)."""
    stack: list[str] = []  # "{" expression, "`" template literal, a quote: a string
    literal: list[int] = []
    for n in range(start, min(len(lines), start + MAX_TAG_LINES)):
        text = lines[n]
        began_in_literal = bool(stack) and stack[-1] == "`"
        k = column if n == start else 0
        while k < len(text):
            ch = text[k]
            top = stack[-1] if stack else ""
            if top in ("`", '"', "'") and ch == "\\":
                k += 2
                continue
            if top == "`":
                if ch == "`":
                    stack.pop()
                elif text.startswith("${", k):
                    stack.append("{")
                    k += 1
            elif top in ('"', "'"):
                if ch == top:
                    stack.pop()
            elif ch in ('"', "'", "`") and (top == "{" or ch != "`"):
                stack.append(ch)
            elif ch == "{":
                stack.append("{")
            elif ch == "}" and top == "{":
                stack.pop()
            elif ch == ">" and not stack:
                return _TagEnd(n, k, tuple(literal))
            k += 1
        if began_in_literal and stack and stack[-1] == "`" and n > start:
            literal.append(n)
        if not text.strip() and (not stack or stack[-1] in ('"', "'")):
            return None  # a blank line between attributes or in a string: a stray '<Word', not a tag
    return None


def _blank_tag(lines: list[str], start: int, end: _TagEnd) -> None:
    """Empty the lines ``start``..``end.line`` of a JSX tag; the lines of a template literal it
    passes to the component (``<Code code={`…`} />``) stay, fenced as code, because the reader
    sees them as code, never as Markdown (a ``# comment`` in a shell snippet is no header)."""
    keep = set(end.literal)
    for k in range(start, end.line + 1):
        if k not in keep:
            lines[k] = ""
    if keep:
        fence = "~" * max(3, 1 + max(len(r) for k in keep for r in re.findall(r"~+", lines[k]) or [""]))
        lines[min(keep) - 1] = fence
        lines[max(keep) + 1] = fence


def _front_matter_end(lines: list[str]) -> int:
    if lines and lines[0].strip() == "---":
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                return j + 1
    return 0


# -- MDX partials --------------------------------------------------------------------------------
_IMPORT = re.compile(r"""^import\s+([A-Za-z_$][\w$]*)\s+from\s+(['"])([^'"]+\.mdx?)\2\s*;?\s*$""")
_USE = re.compile(r"^(\s*)<([A-Z][\w$]*)\b[^<>]*/>\s*$")
MAX_DEPTH = 10


@dataclass
class Partials:
    """MDX text with its imported Markdown/MDX partials inlined: ``lines``, ``line_map``
    (1-based source line of each line; inlined lines map to the ``<Partial />`` line),
    ``problems`` (``"line N: …"``) and ``dependencies`` (the partial files read)."""

    lines: list[str]
    line_map: list[int]
    problems: list[str] = field(default_factory=list)
    dependencies: set[Path] = field(default_factory=set)


def expand_partials(text: str, file: Path, allowed: Path, depth: int = 0, stack: tuple[Path, ...] = ()) -> Partials:
    """Inline MDX partials as a reader sees them (Docusaurus "Importing Markdown"): a Markdown
    or MDX file imported as a component (``import Part from './_part.mdx';``, relative to the
    importing file) and used alone on a line (``<Part />``, ``<Part name="x" />``) shows its
    content there (front matter dropped, its own partials inlined, up to 10 levels). Imports
    and uses inside fenced code are left alone; a partial outside ``allowed`` or missing is
    left out and reported."""
    lines = text.split("\n")
    imports: dict[str, str] = {}
    fence: str | None = None
    start = _front_matter_end(lines)
    for line in lines[start:]:
        fence = _fence_state(line, fence)
        m = _IMPORT.match(line) if fence is None else None
        if m:
            imports[m.group(1)] = m.group(3)
    out = Partials([], [])
    fence = None
    for n, line in enumerate(lines, start=1):
        fence = _fence_state(line, fence) if n > start else fence
        use = _USE.match(line) if fence is None and imports else None
        if use is None or use.group(2) not in imports:
            out.lines.append(line)
            out.line_map.append(n)
            continue
        _inline(imports[use.group(2)], use.group(1), n, file, allowed, depth, stack, out)
    return out


def _inline(spec: str, indent: str, n: int, file: Path, allowed: Path, depth: int, stack: tuple[Path, ...], out: Partials) -> None:
    target = (file.parent / spec).resolve()
    problem = ""
    if not target.is_relative_to(allowed):
        problem = f"{spec} is outside the ingested tree; left out"
    elif not target.is_file():
        problem = f"no such file {spec}; left out"
    elif target in stack or target == file or depth + 1 >= MAX_DEPTH:
        problem = f"{spec}: include cycle or nesting deeper than {MAX_DEPTH}; left out"
    if problem:
        out.problems.append(f"line {n}: MDX partial {problem}")
        out.lines.append("")
        out.line_map.append(n)
        return
    try:
        body = target.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError) as exc:
        out.problems.append(f"line {n}: MDX partial {spec}: cannot read: {exc}; left out")
        return
    lines = body.split("\n")
    body = "\n".join(lines[_front_matter_end(lines) :]).strip("\n")
    sub = expand_partials(body, target, allowed, depth + 1, (*stack, file))
    out.dependencies.add(target)
    out.dependencies |= sub.dependencies
    out.problems.extend(f"line {n}: in {target.name}: {p}" for p in sub.problems)
    out.lines.extend(indent + s if s else s for s in sub.lines)
    out.line_map.extend([n] * len(sub.lines))


def _fence_state(line: str, fence: str | None) -> str | None:
    m = _FENCE.match(line)
    if fence is not None:
        if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)) :].strip():
            return None
        return fence
    return m.group(1) if m else None
