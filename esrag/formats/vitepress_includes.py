"""VitePress's include forms, resolved as VitePress 2.0 does before and while it renders a page
(vuejs/vitepress ``src/node/markdown/plugins/include.ts``, ``snippet.ts`` and
``src/node/markdown/regions.ts``):

* ``<!--@include: path-->`` anywhere in the text (also inline and inside code fences; the
  escaped ``<!--@@include: …-->`` is not one): the file's text replaces the comment. ``@/x``
  (or ``@x``) is ``srcDir/x``, other paths are relative to the including file. Suffixes:
  ``{3,}``, ``{,10}``, ``{2,10}`` (1-based inclusive line ranges, checked against the file's
  length) and ``#name`` (the lines between ``#region name`` / ``#endregion`` markers of any
  comment style, every such region; else, for Markdown, the section under the header whose
  anchor is ``name``), both together as ``#name{2,5}``. A ``.md`` file's front matter is dropped
  first, unless a range is given without a region. Included text is itself resolved; a file
  already on the include chain is a cycle.
* ``<<< path#region{lines lang attrs} [title]`` on a line that starts a block: the file (or its
  regions, region markers removed and dedented) as fenced code whose info string is VitePress's
  own (``lang`` or the file's extension, then ``{lines}``, attrs and ``[title]``, the title
  defaulting to the file name). ``@/`` is ``srcDir``; other paths are relative to the page
  (also inside included text, as VitePress resolves them from the page being rendered).

VitePress stops the build on a missing file, region or an out-of-range line range; esrag leaves
the directive out and reports it (:meth:`esrag.formats.include_base.Resolved.fail`). Every
output line maps to the source line of the directive it came from.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from esrag.formats.include_base import IncludeContext, IncludeError, Resolved, checked_target, expand_lines, read_included
from esrag.formats.markdown_blocks import header_title, split_header_attrs
from esrag.sites.vitepress import page_anchors

_INCLUDE = re.compile(r"<!--\s*@include:\s*(.*?)\s*-->")
_RANGE = re.compile(r"\{(\d*),(\d*)\}$")
_INCLUDE_REGION = re.compile(r"#([^\s{]+)$")
_SEPARATOR = re.compile(r"[\\/]")
_SNIPPET = re.compile(r"^([ \t]*)<<<(.*)$")
_TITLE = re.compile(r"\s*\[(.+)\]$")
_SNIPPET_REGION = re.compile(r"#([\w.-]+)$")
_EXTENSION = re.compile(r"\.([a-zA-Z0-9]+)$")
_LINES = re.compile(r"^\d+(?:[,-]\d+)*$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_BLOCK_START = re.compile(r"^[ \t]*(?:$|:::|#{1,6}(?:[ \t]|$)|<<<)")
MAX_DEPTH = 10

# regions.ts ``markers``: (start, end) per comment style
_MARKERS = (
    (
        re.compile(r"^\s*(?://\s*#?|(?:--|::|@?[rR][eE][mM])\s*#)region\b\s*(.*?)\s*$"),
        re.compile(r"^\s*(?://\s*#?|(?:--|::|@?[rR][eE][mM])\s*#)endregion\b\s*(.*?)\s*$"),
    ),
    (
        re.compile(r"^\s*#\s*(?:#\s*|pragma\s+)?[rR]egion\b\s*(.*?)\s*$"),
        re.compile(r"^\s*#\s*(?:#\s*|pragma\s+)?[eE]nd ?[rR]egion\b\s*(.*?)\s*$"),
    ),
    (re.compile(r"^\s*<!--\s*#?region\b\s*(.*?)\s*-->"), re.compile(r"^\s*<!--\s*#?endregion\b\s*(.*?)\s*-->")),
    (re.compile(r"^\s*/\*\s*#region\b\s*(.*?)\s*\*/"), re.compile(r"^\s*/\*\s*#endregion\b\s*(.*?)\s*\*/")),
    (re.compile(r"^\s*\(\*\s*#region\b\s*(.*?)\s*\*\)"), re.compile(r"^\s*\(\*\s*#endregion\b\s*(.*?)\s*\*\)")),
    (
        re.compile(r"^\s*\"/{2,}\s*#region\b\s*(.*?)\":\s*\"\",?\s*$"),
        re.compile(r"^\s*\"/{2,}\s*#endregion\b\s*(.*?)\":\s*\"\",?\s*$"),
    ),
)


def _unquote(name: str) -> str:
    m = re.match(r'^"(.*)"$', name)
    return m.group(1) if m else name


def find_regions(lines: list[str], name: str) -> list[tuple[int, int, int]]:
    """regions.ts ``findRegions``: ``(start, end, marker style)`` of every region ``name``, in
    document order; ``lines[start:end]`` is its content (marker lines excluded)."""
    regions: list[tuple[int, int, int]] = []
    open_: list[tuple[str, int, int]] = []
    for i, line in enumerate(lines):
        if not re.search("region", line, re.I):
            continue
        started = next(((k, m.group(1)) for k, (s, _) in enumerate(_MARKERS) if (m := s.match(line))), None)
        if started is not None:
            open_.append((_unquote(started[1]), i + 1, started[0]))
            continue
        if not open_:
            continue
        for k, (_, end) in enumerate(_MARKERS):
            m = end.match(line)
            if m is None:
                continue
            end_name = _unquote(m.group(1))
            idx = next((j for j in range(len(open_) - 1, -1, -1) if (open_[j][0] == end_name if end_name else open_[j][2] == k)), -1)
            if idx == -1:
                continue
            closed = open_[idx]
            del open_[idx:]
            if closed[0] == name and not any(r[0] == name for r in open_):
                regions.append((closed[1], i, closed[2]))
            break
    return regions


def strip_region_markers(lines: list[str], styles: set[int]) -> list[str]:
    """regions.ts ``stripRegionMarkers``: lines that are region markers of ``styles`` removed."""
    return [
        ln
        for ln in lines
        if not re.search("region", ln, re.I) or not any(_MARKERS[k][0].match(ln) or _MARKERS[k][1].match(ln) for k in styles)
    ]


def dedent(lines: list[str]) -> list[str]:
    """regions.ts ``dedent``: the common indentation (spaces/tabs, per character) removed;
    whitespace-only lines do not count."""
    widths = [len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip(" \t")]
    least = min(widths, default=0)
    return [ln[least:] for ln in lines] if least else lines


def _src_path(raw: str, src_dir: Path) -> Path:
    """``@/x`` / ``@x`` -> ``srcDir/x``."""
    return src_dir / raw[2 if _SEPARATOR.match(raw[1:2]) else 1 :]


def _strip_front_matter(text: str) -> str:
    """gray-matter's ``content``: the text after a leading ``---`` … ``---`` block."""
    lines = text.split("\n")
    if not lines or not lines[0].startswith("---") or lines[0].startswith("----"):
        return text
    for i in range(1, len(lines)):
        if lines[i].startswith("---"):
            return "\n".join(lines[i + 1 :])
    return text


def resolve_vitepress(lines: list[str], src: list[int], ctx: IncludeContext, out: Resolved) -> tuple[list[str], list[int]]:
    """``lines`` (with their source lines ``src``) with VitePress's includes, then its code
    snippets, resolved (see the module docstring)."""
    new, new_src = expand_lines(lines, src, "@include:", lambda line, n: _expand(line, ctx.file, (ctx.file,), ctx, out, n, 0).split("\n"))
    return _snippets(new, new_src, ctx, out)


def _expand(text: str, file: Path, stack: tuple[Path, ...], ctx: IncludeContext, out: Resolved, n: int, depth: int) -> str:
    """``processIncludes``: every include directive of ``text`` (read from ``file``) replaced."""

    def one(m: re.Match[str]) -> str:
        if not m.group(1):
            return m.group(0)
        try:
            content, target = _included(m.group(1), file, stack, ctx)
        except IncludeError as exc:
            out.fail(n, m.group(0), str(exc))
            return ""
        out.directives += 1
        out.dependencies.add(target)
        if depth + 1 < MAX_DEPTH and "@include:" in content:
            content = _expand(content, target, (*stack, target), ctx, out, n, depth + 1)
        return content

    return _INCLUDE.sub(one, text)


def _included(arg: str, file: Path, stack: tuple[Path, ...], ctx: IncludeContext) -> tuple[str, Path]:
    """The text one ``<!--@include: arg-->`` stands for, and the file it comes from."""
    assert ctx.vitepress_src is not None
    rng = _RANGE.search(arg)
    if rng:
        arg = arg[: rng.start()]
    region = _INCLUDE_REGION.search(arg)
    if region:
        arg = arg[: region.start()]
    path = _src_path(arg, ctx.vitepress_src) if arg.startswith("@") else file.parent / arg
    target = checked_target(path, ctx, stack, arg)
    content = read_included(target, arg)
    if target.suffix == ".md" and (region or not rng):
        content = _strip_front_matter(content)
    lines = content.split("\n")
    if region:
        lines = _region_lines(lines, content, region.group(1), target, arg)
    if rng:
        start = int(rng.group(1)) if rng.group(1) else 1
        end = int(rng.group(2)) if rng.group(2) else len(lines)
        if start < 1 or end < start or end > len(lines):
            raise IncludeError(f"range {rng.group(0)} is out of bounds in {arg} ({len(lines)} lines)")
        lines = lines[start - 1 : end]
    return "\n".join(lines), target


def _region_lines(lines: list[str], content: str, name: str, target: Path, shown: str) -> list[str]:
    regions = find_regions(lines, name)
    if regions:
        return [ln for start, end, _ in regions for ln in lines[start:end]]
    section = _heading_section(content, name) if target.suffix == ".md" else None
    if section is None:
        raise IncludeError(f"region or heading {name!r} not found in {shown}")
    return lines[section[0] : section[1]]


def _heading_section(content: str, anchor: str) -> tuple[int, int | None] | None:
    """``findHeadingSection``: the 0-based line span below the header whose anchor is ``anchor``,
    up to the next header of the same or a higher level (None: no such header)."""
    tokens = MarkdownIt("commonmark").parse(content)
    heads = [(int(t.tag[1:]), t.map, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open" and t.map]
    split = [split_header_attrs(src) for _, _, src in heads]
    anchors = page_anchors([header_title(s) for s, _ in split], [e for _, e in split])
    idx = next((i for i, a in enumerate(anchors) if a == anchor), None)
    if idx is None:
        return None
    level, span, _ = heads[idx]
    assert span is not None
    end = next((m[0] for lv, m, _ in heads[idx + 1 :] if lv <= level and m), None)
    return span[1], end


# -- code snippets ----------------------------------------------------------------------------
def parse_snippet_path(raw: str) -> dict[str, str]:
    """snippet.ts ``parseSnippetPath``: ``path[#region][{[lines] [lang] [attrs…]}][ [title]]``
    -> ``filepath``, ``extension``, ``region``, ``lines``, ``lang``, ``attrs``, ``title``."""
    rest, title = raw.strip(), ""
    m = _TITLE.search(rest)
    if m:
        title, rest = m.group(1), rest[: m.start()].rstrip()
    lines = lang = attrs = ""
    brace = rest.rfind("{")
    if rest.endswith("}") and brace > 0:
        lines, lang, attrs = _snippet_meta(rest[brace + 1 : -1].strip())
        rest = rest[:brace].rstrip()
    region = ""
    m = _SNIPPET_REGION.search(rest)
    if m:
        region, rest = m.group(1), rest[: m.start()]
    filepath = rest.strip()
    filename = _SEPARATOR.split(filepath)[-1]
    ext = _EXTENSION.search(filename)
    return {
        "filepath": filepath,
        "extension": ext.group(1) if ext else "",
        "region": region,
        "lines": lines,
        "lang": lang,
        "attrs": attrs,
        "title": title or filename,
    }


def _snippet_meta(meta: str) -> tuple[str, str, str]:
    """snippet.ts ``parseSnippetMeta``: ``(lines, lang, attrs)``."""
    if not meta:
        return "", "", ""
    if re.fullmatch(r"[\d\s,-]+", meta) and _LINES.match(re.sub(r"\s+", "", meta)):
        return re.sub(r"\s+", "", meta), "", ""
    lines = ""
    first = meta.split()[0]
    if _LINES.match(first):
        lines, meta = first, meta[len(first) :].lstrip()
    lang, _, attrs = meta.partition(" ") if meta else ("", "", "")
    return lines, lang.strip(), attrs.strip()


def _snippets(lines: list[str], src: list[int], ctx: IncludeContext, out: Resolved) -> tuple[list[str], list[int]]:
    """Each ``<<<`` line that starts a block outside code fences -> fenced code."""
    new: list[str] = []
    new_src: list[int] = []
    fence = ""
    prev = ""
    for line, n in zip(lines, src):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
                fence = ""
        elif m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = m.group(1)
        snip = None if fence or m else _SNIPPET.match(line)
        if snip is None or not _BLOCK_START.match(prev) and new:
            new.append(line)
            new_src.append(n)
            prev = "" if m and not fence else line  # a closed fence ends its block
            continue
        prev = line
        try:
            block = _snippet_block(snip.group(2), ctx, out)
        except IncludeError as exc:
            out.fail(n, line.strip(), str(exc))
            continue
        new.extend(snip.group(1) + b if b else b for b in block)
        new_src.extend([n] * len(block))
    return new, new_src


def _snippet_block(raw: str, ctx: IncludeContext, out: Resolved) -> list[str]:
    """The fenced code a ``<<< raw`` line renders."""
    assert ctx.vitepress_src is not None
    p = parse_snippet_path(raw)
    path = p["filepath"]
    if not path:
        raise IncludeError("no file name")
    target_path = _src_path(path, ctx.vitepress_src) if path.startswith("@") else ctx.file.parent / path
    target = checked_target(target_path, ctx, (ctx.file,), path)
    code = read_included(target, path).split("\n")
    if p["region"]:
        regions = find_regions(code, p["region"])
        if not regions:
            raise IncludeError(f"region {p['region']!r} not found in {path}")
        code = strip_region_markers([ln for s, e, _ in regions for ln in code[s:e]], {k for _, _, k in regions})
        code = dedent(code)
    if code and code[-1] == "":
        code.pop()
    out.directives += 1
    out.dependencies.add(target)
    info = (
        (p["lang"] or p["extension"])
        + (f" {{{p['lines']}}}" if p["lines"] else "")
        + (f" {p['attrs']}" if p["attrs"] else "")
        + (f" [{p['title']}]" if p["title"] else "")
    ).strip()
    longest = max((len(r) for ln in code for r in re.findall(r"`+", ln)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [ticks + info, *code, ticks]
