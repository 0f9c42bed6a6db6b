"""MDX read as Markdown: what a reader sees without the code around it.

MDX (mdxjs.com, MDX 2/3) adds to Markdown ESM blocks (``import``/``export`` at the start of a
line, up to the next blank line), JSX elements (``<Tabs>``, ``<TabItem value="x">``,
``</Tabs>``, ``<Note />``, fragments ``<>``/``</>``) and expressions (``{/* comment */}``).
:func:`blank_code_lines` replaces ESM lines, lines made only of JSX tags (capitalised
components or fragments, possibly spread over several lines) and lines made only of
``{…}`` expressions with empty lines, outside fenced code. Line numbers stay as they are, and
text between tags (``<Tab>Python</Tab>`` keeps ``Python``… as a line with text) stays.
:func:`expand_partials` first inlines imported Markdown/MDX partials where they are used.

A site may declare components whose attributes the reader sees (Mintlify's ``<Step title>``,
``<ParamField body type required>``): :class:`Shown`; :func:`shown_text` is the one rule that
turns such a tag into its visible line, used by :func:`blank_code_lines` for the tags it blanks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ESM = re.compile(r"^(import|export)\b")
_TAG = r"<(?:/?[A-Z][\w.:-]*(?:\s+[^<>]*?)?\s*/?|/?)>"
_JSX_ONLY = re.compile(rf"^\s*(?:{_TAG}\s*)+$")
_JSX_OPEN = re.compile(r"^\s*</?[A-Z][\w.:-]*(?:\s[^<>]*)?$")  # a component tag whose props continue
_EXPR_ONLY = re.compile(r"^\s*\{.*\}\s*$")


@dataclass(frozen=True, slots=True)
class Shown:
    """What a reader sees of one component's attributes (the site's own components, declared by
    its generator module).

    Attributes:
        label: attributes shown as a bold line, the first one present wins (a step's ``title``,
            a frame's ``caption``).
        field: attributes naming an API field, the first one present wins; shown as
            ``name`` (its ``type`` attribute, ``required`` when that attribute is present).
    """

    label: tuple[str, ...] = ()
    field: tuple[str, ...] = ()


#: component name -> what its attributes show (see :class:`Shown`)
Components = Mapping[str, Shown]

_ATTR = re.compile(r"""([A-Za-z_][\w-]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|\{\s*(?:"([^"]*)"|'([^']*)'|`([^`$]*)`|([^{}]*?))\s*\}))?""")
_OPENING = re.compile(r"<([A-Z][\w.:-]*)((?:[^<>\"'{}]|\"[^\"]*\"|'[^']*'|\{[^{}]*\})*)/?>")


def _attributes(source: str) -> dict[str, str]:
    """The attributes of one JSX tag's attribute text: string values (quoted, or a string or
    plain template literal in braces), ``'true'`` for a bare attribute, the expression's text for
    any other ``{…}``."""
    out: dict[str, str] = {}
    for m in _ATTR.finditer(source):
        values = [v for v in m.groups()[1:] if v is not None]
        out[m.group(1)] = values[0].strip() if values else "true"
    return out


def shown_text(tags: str, components: Components) -> str:
    """The text a reader sees of the opening tags in ``tags`` (one or more JSX tags, possibly
    spread over lines) of the declared ``components``: ``**Title**`` for a label, ```name``
    (type, required)`` for a field; several shown parts joined by a space; '' when none shows."""
    parts = []
    for m in _OPENING.finditer(tags):
        spec = components.get(m.group(1))
        if spec is None:
            continue
        attrs = _attributes(m.group(2))
        label = next((attrs[a] for a in spec.label if attrs.get(a, "true") != "true"), "")
        name = next((attrs[a] for a in spec.field if attrs.get(a, "true") != "true"), "")
        if name:
            detail = [d for d in (attrs.get("type", ""), "required" if attrs.get("required") == "true" else "") if d]
            parts.append(f"`{name}`" + (f" ({', '.join(detail)})" if detail else ""))
        elif label:
            parts.append(f"**{label}**")
    return " ".join(parts)


def blank_code_lines(text: str, components: Components | None = None) -> str:
    """``text`` (normalised MDX) with ESM, JSX-only and expression-only lines made empty; a
    blanked tag of one of the site's ``components`` leaves its :func:`shown_text` on its first line.

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
            esm_end = _esm_end(lines, i)
            while i <= esm_end:
                lines[i] = ""
                i += 1
            continue
        if line.lstrip().startswith("{") and not _EXPR_ONLY.match(line):  # {/* … */} over several lines
            end_line = _expression_end(lines, i, line.index("{"))
            if end_line is not None:
                for k in range(i, end_line + 1):
                    lines[k] = ""
                i = end_line + 1
                continue
        if _JSX_ONLY.match(line) or _EXPR_ONLY.match(line):
            lines[i] = shown_text(line, components) if components and not _EXPR_ONLY.match(line) else ""
        elif _JSX_OPEN.match(line):  # <Component\n  prop="x"\n  code={`…`}\n/> : through the closing '>'
            end = _tag_end(lines, i, line.index("<") + 1)
            if end is not None and not lines[end.line][end.column + 1 :].strip():
                shown = shown_text("\n".join(lines[i : end.line + 1]), components) if components else ""
                _blank_tag(lines, i, end)
                if shown and not lines[i]:  # the line may open the fence of a template literal it passes
                    lines[i] = shown
                i = end.line
        i += 1
    return "\n".join(lines)


#: a named component tag (``'<>'`` in prose is text), attribute values quoted or in braces
_INLINE_TAG = re.compile(r"""</?[A-Z][\w.:-]*(?:[^<>"'{}]|"[^"]*"|'[^']*'|\{[^{}]*\})*/?>""")
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def drop_component_tags(text: str, mdx: bool = False) -> str:
    """``text`` (normalised Markdown or MDX) without the component tags left in its prose, which
    no renderer shows as text (an MDX component renders what it renders; an unknown element in
    HTML shows only its content): a line made only of tags becomes empty, a tag inside a line
    is removed (``<Tooltip tip="x">word</Tooltip>`` -> ``word``), a self-closing one leaves its
    ``text`` attribute when it has one (VitePress ``<Badge text="beta" />`` -> ``beta``) —
    except in a heading, whose id the generators make from its text without the components
    (VitePress: ``## MPA Mode <Badge text="experimental" />`` is ``#mpa-mode``), so there a tag
    leaves nothing.
    Capitalised component names only (``<div>`` is HTML, kept); fenced code, code spans and —
    in Markdown, not ``mdx`` (MDX has no indented code) — indented code are left alone; lines
    stay where they are.
    """
    if "<" not in text:
        return text
    lines = text.split("\n")
    fence: str | None = None
    for i in range(_front_matter_end(lines), len(lines)):
        line = lines[i]
        was = fence
        fence = _fence_state(line, fence)
        if was is not None or fence is not None or "<" not in line or (not mdx and line.startswith(("    ", "\t"))):
            continue
        if _JSX_ONLY.match(line):
            lines[i] = ""
            continue
        spans = [m.span() for m in _CODE_SPAN.finditer(line)]
        heading = _ATX_LINE.match(line) is not None
        out, k = [], 0
        for m in _INLINE_TAG.finditer(line):
            if any(a <= m.start() < b for a, b in spans):  # `<Tabs>` in a code span is code
                continue
            out.append(line[k : m.start()] + ("" if heading else _tag_text(m)))
            k = m.end()
        if k:
            lines[i] = ("".join(out) + line[k:]).rstrip()
    return "\n".join(lines)


_ATX_LINE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def _tag_text(m: re.Match[str]) -> str:
    tag = m.group(0)
    if tag.endswith("/>"):
        opening = _OPENING.match(tag)
        return _attributes(opening.group(2)).get("text", "") if opening else ""
    return ""


def _scan_js(text: str, k: int, stack: list[str], stop: bool = False) -> int | None:
    r"""Scan one line of JavaScript from column ``k``, updating ``stack`` (open brackets ``{([``,
    ``"`` / ``'`` strings, ``\``` template literals with ``${…}``, ``/*`` comments); with
    ``stop``, return the column where ``stack`` becomes empty after a closing bracket (and scan
    no further), else None. A ``//`` comment
    ends the line; a quote string never outlives its line (JavaScript strings do not span lines,
    and text such as JSX ``<p>Don't</p>`` must not open one for the rest of the block)."""
    while k < len(text):
        ch = text[k]
        top = stack[-1] if stack else ""
        if top == "/*":
            if text.startswith("*/", k):
                stack.pop()
                k += 1
        elif top in ("`", '"', "'"):
            if ch == "\\":
                k += 1
            elif ch == top:
                stack.pop()
            elif top == "`" and text.startswith("${", k):
                stack.append("{")
                k += 1
        elif text.startswith("/*", k):
            stack.append("/*")
            k += 1
        elif text.startswith("//", k):
            break
        elif ch in "\"'`({[":
            stack.append(ch)
        elif ch in ")}]" and top in "({[" and top:
            stack.pop()
            if stop and not stack:
                return k
        k += 1
    while stack and stack[-1] in ('"', "'"):
        stack.pop()
    return None


def _esm_end(lines: list[str], start: int) -> int:
    """The last line of the MDX ESM block (``import``/``export``) opening at ``lines[start]``:
    the line before the first blank line at which the code so far is complete (MDX's
    ``micromark-extension-mdxjs-esm``: a blank line ends the block only when what precedes it
    parses, so an ``export`` whose function or template literal holds blank lines goes on).
    Unbalanced code within :data:`MAX_TAG_LINES` lines: up to the first blank line, as before."""
    stack: list[str] = []
    for n in range(start, min(len(lines), start + MAX_TAG_LINES)):
        if not lines[n].strip() and not stack:
            return n - 1
        _scan_js(lines[n], 0, stack)
        if not stack and (n + 1 == len(lines) or not lines[n + 1].strip()):
            return n
    n = start
    while n + 1 < len(lines) and lines[n + 1].strip():
        n += 1
    return n


def _expression_end(lines: list[str], start: int, column: int) -> int | None:
    """The line on which the MDX flow expression opening with ``{`` at ``lines[start][column]``
    (``{/* a commented-out section */}``) closes, when nothing but space follows its ``}``;
    None when it does not close within :data:`MAX_TAG_LINES` lines (then it is text)."""
    stack: list[str] = []
    for n in range(start, min(len(lines), start + MAX_TAG_LINES)):
        end = _scan_js(lines[n], column if n == start else 0, stack, stop=True)
        if end is not None:
            return n if not lines[n][end + 1 :].strip() else None
    return None


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


def expand_partials(
    text: str, file: Path, allowed: Path, depth: int = 0, stack: tuple[Path, ...] = (), absolute_root: Path | None = None
) -> Partials:
    """Inline MDX partials as a reader sees them (Docusaurus "Importing Markdown"): a Markdown
    or MDX file imported as a component (``import Part from './_part.mdx';``, relative to the
    importing file) and used alone on a line (``<Part />``, ``<Part name="x" />``) shows its
    content there (front matter dropped, its own partials inlined, up to 10 levels); an absolute
    import (``/snippets/a.mdx``) starts at ``absolute_root`` (the site's docs root; default
    ``allowed``, :func:`import_target`). Imports
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
        target = import_target(imports[use.group(2)], file, absolute_root or allowed)
        _inline(imports[use.group(2)], target, use.group(1), n, (file, allowed, absolute_root), depth, stack, out)
    return out


def import_target(spec: str, file: Path, root: Path) -> Path:
    """The file an MDX import ``spec`` of ``file`` names: relative to ``file``'s folder, or, for
    an absolute ``/snippets/a.mdx`` (Mintlify "Reusable snippets": absolute imports start at the
    docs root), relative to ``root`` (the docs root, else the ingested tree). Resolved, not checked to exist."""
    return (root / spec.lstrip("/")).resolve() if spec.startswith("/") else (file.parent / spec).resolve()


_ANY_IMPORT = re.compile(r"""^import\s+[^'"]*?\s+from\s+(['"])([^'"]+\.mdx?)\1""")


def imported_files(text: str, file: Path, root: Path) -> set[Path]:
    """The Markdown/MDX files ``text`` (the MDX of ``file``) imports, default or named imports,
    outside fenced code, resolved by :func:`import_target`."""
    found = set()
    fence: str | None = None
    for line in text.split("\n"):
        fence = _fence_state(line, fence)
        m = _ANY_IMPORT.match(line) if fence is None else None
        if m:
            found.add(import_target(m.group(2), file, root))
    return found


def _inline(
    spec: str, target: Path, indent: str, n: int, where: tuple[Path, Path, Path | None], depth: int, stack: tuple[Path, ...], out: Partials
) -> None:
    """Inline the partial ``spec`` (resolved: ``target``) used on line ``n``; ``where``: the importing
    file, the allowed tree and the root of absolute imports."""
    file, allowed, absolute_root = where
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
    sub = expand_partials(body, target, allowed, depth + 1, (*stack, file), absolute_root)
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
