"""Markdown block parsing with line spans and section paths (seed 000, App. N.1, "Block parsing").

Where a block starts and ends is CommonMark's question, answered by markdown-it-py (tables and
YAML front matter enabled, inline parsing off for speed) — through
:func:`esrag.formats.markdown_scan.top_level_blocks`, a line scanner that reads the common blocks
(ATX headers, fences, indented code, paragraphs, simple lists and block quotes, HTML blocks)
itself and hands markdown-it the rest, with the same result (``tests/test_chunk_scan.py``). The result is mapped onto the seed's
eight block types — front matter, fenced code, header, table, list, blockquote, thematic break,
paragraph — plus two kinds the seed's own parser does not handle and the Laravel docs are full of:

* ``html``: raw HTML blocks (``<div …>``, ``<style>``); kept in the text, never body;
* ``anchor``: paragraphs made only of empty anchors (``<a name="x"></a>``) or HTML comments; kept
  in the text, travel with the header they precede, never enter a section path.

Indented code is CommonMark code (``code``), so a ``#`` line inside it is never a header. Lines
that CommonMark turns into no block (link reference definitions) become paragraphs, so every
non-blank line lands in exactly one block.
"""

from __future__ import annotations

import functools
import re

from markdown_it import MarkdownIt
from markdown_it.common.utils import normalizeReference
from mdit_py_plugins.front_matter import front_matter_plugin

from esrag.formats.markdown_scan import top_level_blocks
from esrag.model import Block, BlockKind

_ANCHOR_ONLY = re.compile(
    r"^(?:\s*(?:<a\s+(?:name|id)\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+)\s*>\s*</a>|<a\s+(?:name|id)\s*=[^>]*/>|<!--.*?-->))+\s*$",
    re.IGNORECASE | re.DOTALL,
)

#: ``{#id .class key=val}`` / ``{: #id }`` at the end of a header (Python-Markdown attr_list,
#: Pandoc, kramdown, Hugo, Docusaurus ``{#id}``): group 1 is the attribute list.
_HEADER_ATTRS = re.compile(r"(?:^|[ \t]+)\{:?[ \t]*([^{}\n]*?)[ \t]*\}[ \t]*$")
_ATTR_ITEM = re.compile(r"""#[^\s#.{}="']+|\.[^\s#.{}="']+|[A-Za-z_][\w.:-]*=(?:"[^"]*"|'[^']*'|[^\s"'{}]+)""")
#: a MyST role ``{name}`content``` (group 1: the content); a content ``text <target>``
_MYST_ROLE = re.compile(r"\{[\w:+.-]+\}`([^`]*)`")
_ROLE_TARGET = re.compile(r"^(.*\S)\s*<[^<>]+>$")
#: a MyST target line ``(label)=`` (myst-spec ``mystTarget``; group 1 is the label)
_MYST_TARGET = re.compile(r"^\(([^()\s][^()]*)\)=[ \t]*$")
_ANCHOR_NAME = re.compile(r"""<a\s+(?:[^>]*?\s)?(?:name|id)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)

_TOKEN_KIND = {
    "front_matter": BlockKind.FRONT_MATTER,
    "fence": BlockKind.CODE,
    "code_block": BlockKind.CODE,
    "heading_open": BlockKind.HEADER,
    "table_open": BlockKind.TABLE,
    "bullet_list_open": BlockKind.LIST,
    "ordered_list_open": BlockKind.LIST,
    "blockquote_open": BlockKind.BLOCKQUOTE,
    "hr": BlockKind.THEMATIC_BREAK,
    "paragraph_open": BlockKind.PARAGRAPH,
    "html_block": BlockKind.HTML,
}


@functools.cache
def _block_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    md.core.ruler.disable(["inline", "text_join"])
    return md


@functools.cache
def _region_parser() -> MarkdownIt:
    """:func:`_block_parser` without front matter (for parts of a document after its start)."""
    md = MarkdownIt("commonmark").enable("table")
    md.core.ruler.disable(["inline", "text_join"])
    return md


@functools.cache
def _inline_parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


def normalize(text: str) -> str:
    """Strip a leading byte-order mark and turn ``\\r\\n`` and lone ``\\r`` into ``\\n``."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


_UNDEFINED_REF = re.compile(r"(?<![\\!\]])\[((?:[^\[\]\\`]|\\.|`[^`]*`)+)\]\[([^\[\]\s][^\[\]]*)\]")


_ICON = re.compile(r":(?:material|simple|octicons|fontawesome)-[+\-\w]+:")
#: Characters with which CommonMark inline syntax starts in markdown-it's commonmark preset
#: (escapes, code spans, emphasis, links, images, autolinks and raw HTML, entities, line
#: breaks): a title without any is its own plain text (``header_title``'s fast path).
_INLINE_SYNTAX = re.compile(r"[\\`*_\[\]!<>&\n]")


def header_title(inline_source: str, env: dict | None = None, autorefs: bool = False, icons: bool = False) -> str:
    """Plain text of a header's inline Markdown: link text without its URL, code span content,
    image alt text; raw HTML (anchors) dropped; whitespace collapsed.

    ``env`` is the markdown-it environment of the whole document (its ``"references"`` resolve
    reference links such as ``[text][label]`` to their text, as GitHub renders them). With
    ``autorefs`` (an MkDocs site with mkdocs-autorefs / mkdocstrings) a full reference link
    whose label the document does not define (``[`Field()`][pydantic.Field]``) also reads as
    its text: autorefs renders it as a cross-reference link, whose text Python-Markdown's toc
    then slugifies; without it (CommonMark, GitHub) the brackets stay literal. With ``icons``
    (MkDocs with ``pymdownx.emoji``) the shortcodes of Material's icon sets (``:material-api:``,
    ``:simple-slack:``, ``:octicons-…:``, ``:fontawesome-…:``) leave the title: they render as
    an SVG with no text, so toc's slug skips them (``## :simple-slack: Slack`` -> ``#slack``).
    A title with none of the characters that start inline syntax in markdown-it's commonmark
    preset (``_INLINE_SYNTAX``) is its own text and skips the inline parser.
    """
    refs = (env or {}).get("references") or {}
    if autorefs and "[" in inline_source:
        inline_source = _UNDEFINED_REF.sub(lambda m: m.group(0) if normalizeReference(m.group(2)) in refs else m.group(1), inline_source)
    if icons:
        inline_source = _ICON.sub("", inline_source)
    if not _INLINE_SYNTAX.search(inline_source):
        return " ".join(inline_source.split())
    if "`" in inline_source and (plain := _code_spans_only(inline_source)) is not None:
        return " ".join(plain.split())
    tokens = _inline_parser().parseInline(inline_source, dict(env or {}))  # a copy: parsing may add to it
    parts: list[str] = []
    for tok in tokens[0].children or [] if tokens else []:
        if tok.type in ("text", "code_inline"):
            parts.append(tok.content)
        elif tok.type == "image":
            parts.append("".join(c.content for c in tok.children or []))
        elif tok.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def _code_spans_only(source: str) -> str | None:
    """The plain text of inline Markdown whose only inline syntax is code spans of single
    backticks (``Via the `Gate` Facade``), as markdown-it's ``backticks`` rule reads them: each
    backtick pairs with the next, the content between is literal, with one space stripped from
    each side when both sides have one and it is not all spaces. None for anything else (an odd
    number of backticks, a longer backtick run, inline syntax outside the spans)."""
    parts = source.split("`")
    if len(parts) % 2 == 0 or "``" in source or any(_INLINE_SYNTAX.search(p) for p in parts[::2]):
        return None
    for k in range(1, len(parts), 2):
        code = parts[k]
        if code[:1] == " " and code[-1:] == " " and code.strip(" "):
            parts[k] = code[1:-1]
    return "".join(parts)


def split_header_attrs(inline_source: str) -> tuple[str, str]:
    """``("Title", "id")`` for a header's inline source ending in an attribute list such as
    ``{#id}``, ``{ #id .class key=val }`` or ``{: #id }``; ``(source, "")`` when it has none (a
    brace group that is not a valid attribute list, e.g. ``{a, b}``, stays in the title).
    The id is the list's last ``#id`` ('' when it only sets classes or keys)."""
    m = _HEADER_ATTRS.search(inline_source)
    if not m:
        return inline_source, ""
    body = m.group(1)
    rest = _ATTR_ITEM.sub("", body)
    if rest.strip() or not body.strip():
        return inline_source, ""
    ids = [item[1:] for item in _ATTR_ITEM.findall(body) if item.startswith("#")]
    return inline_source[: m.start()].rstrip(), ids[-1] if ids else ""


def anchor_names(html: str) -> list[str]:
    """The ``name``/``id`` values of the ``<a …>`` elements in ``html``, in order."""
    return [next(g for g in m.groups() if g is not None) for m in _ANCHOR_NAME.finditer(html)]


_MYST_FENCE_OPEN = re.compile(r"^ {0,3}(:{3,})\{[^}\s]+\}")
_CODE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def myst_directive_spans(lines: list[str]) -> list[tuple[int, int]]:
    """The 0-based half-open line spans of MyST colon-fence directives (``:::{note}`` …
    ``:::``; myst-parser's ``colon_fence`` extension, mdit-py-plugins ``colon_fence``: a closing
    line holds only colons, at least as many as the opening). Only the outermost spans; an
    unclosed fence runs to the end of the document, as a code fence does. A ``:::{x}`` line
    inside a backtick or tilde code fence is code (a page showing MyST syntax), not a directive."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(lines)
    code: str | None = None  # the open code fence's marker
    while i < n:
        fence = _CODE_FENCE.match(lines[i])
        if code is not None:
            if fence and fence.group(1)[0] == code[0] and len(fence.group(1)) >= len(code) and not lines[i].strip().strip(code[0]):
                code = None
            i += 1
            continue
        if fence:
            code = fence.group(1)
            i += 1
            continue
        m = _MYST_FENCE_OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        width, j = len(m.group(1)), i + 1
        while j < n and not (lines[j].strip().startswith(":" * width) and not lines[j].strip().strip(":")):
            j += 1
        out.append((i, min(j + 1, n)))
        i = j + 1
    return out


def parse_blocks(
    text: str, autorefs: bool = False, icons: bool = False, lines: list[str] | None = None, myst: bool = False, targets: bool = False
) -> list[Block]:
    """Parse normalised Markdown into blocks in document order, each with its section path.

    Args:
        text: document text, already passed through :func:`normalize`.
        autorefs: headers read undefined ``[text][identifier]`` links as their text, as
            mkdocs-autorefs renders them (:func:`header_title`).
        icons: headers drop MkDocs Material icon shortcodes (:func:`header_title`).
        lines: ``text.split("\\n")`` when the caller has it (not split again).
        myst: the page is MyST Markdown (Sphinx with myst-parser / myst-nb): a header inside a
            directive (:func:`myst_directive_spans`) opens no section, as docutils allows no
            section inside a directive's body; it is a paragraph.
        targets: a MyST target line ``(label)=`` is an anchor block: the header right after it
            takes ``label`` as its explicit id (mystmd ``mystTargetsTransform``; Jupyter Book 2).

    Returns:
        Blocks with 1-based inclusive line spans. A header block's section path ends with its
        own title; the header stack follows App. N.1 (a header of level l pops every entry of
        level >= l, then is pushed). Headers whose title is empty keep their place in the stack
        but add nothing to paths. A header's ``anchor`` is its explicit id: an attribute list
        at its end (``{#id}``, removed from the title), else an ``<a name|id>`` inside it, else
        the last ``<a name|id>`` of the anchor blocks standing right before it; its
        ``alt_anchors`` are the other ``<a name|id>`` names of those (in order, without the
        anchor) and ``html_anchor`` says whether the anchor is one of them.
    """
    lines = text.split("\n") if lines is None else lines
    env: dict = {}
    # the blocks are markdown-it-py's (esrag.formats.markdown_scan.top_level_blocks: a line scanner for the
    # common blocks, markdown-it for the rest, the same result); header titles are read once every
    # block is known, so a reference defined below a header resolves in it
    raw = top_level_blocks(_block_parser(), text, env, _region_parser(), lines)
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()  # the titles of the stack (kept in step with it)
    covered_until = 0  # 0-based line index: lines before this are covered
    paragraph, header, anchor_kind = BlockKind.PARAGRAPH, BlockKind.HEADER, BlockKind.ANCHOR
    kinds = _TOKEN_KIND
    leads: list[str] = []  # the <a name|id> names of the run of anchor blocks that ends ``blocks``
    directives = myst_directive_spans(lines) if myst else []
    for ttype, start, end, payload in raw:
        kind = kinds[ttype]
        if kind is header and directives and any(a < start < b for a, b in directives):
            kind, payload = paragraph, None
        if covered_until < start and (start - covered_until > 1 or _filled(lines[covered_until])):  # (rare)
            gap = _gap_paragraphs(lines, covered_until, start, stack)
            if gap:
                blocks.extend(gap)
                leads = []
        if end > covered_until:
            covered_until = end
        n = end - start
        while n and (not (last := lines[start + n - 1]) or last.isspace()):  # trailing blank lines
            n -= 1
        block_text = "\n".join(lines[start : start + n]) if n != 1 else lines[start]
        level, anchor, from_html = 0, "", False
        alts: tuple[str, ...] = ()
        if kind is paragraph:
            content = payload or block_text
            if (content[:1] == "<" or content[:1].isspace()) and _ANCHOR_ONLY.match(content):
                kind = anchor_kind
                leads.extend(anchor_names(block_text))
                blocks.append(Block(kind, block_text, start + 1, start + n, path, 0, ""))
                continue
            if targets and content[:1] == "(" and (target := _MYST_TARGET.match(block_text)):
                kind = anchor_kind
                leads.append(target.group(1))
                blocks.append(Block(kind, block_text, start + 1, start + n, path, 0, ""))
                continue
        elif kind is header:
            level, content = payload
            source, attr_id = split_header_attrs(content)
            inline = anchor_names(source) if "<" in source else []
            title = header_title(_myst_roles(source) if myst and "}`" in source else source, env, autorefs, icons)
            anchor = attr_id or (inline[0] if inline else "") or (leads[-1] if leads else "")
            from_html = not attr_id and bool(anchor)
            if leads or len(inline) > 1 or (attr_id and inline):
                alts = tuple(dict.fromkeys(a for a in (*leads, *inline) if a and a != anchor))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path = tuple(t for _, t in stack if t)
        leads = []
        blocks.append(Block(kind, block_text, start + 1, start + n, path, level, anchor, alts, from_html))
    blocks.extend(_gap_paragraphs(lines, covered_until, len(lines), stack))
    return blocks


def _myst_roles(source: str) -> str:
    """A MyST header's inline source with each role as its text, as myst-parser and mystmd
    render it: ``{term}`Binder``` -> ``Binder``, ``{ref}`Text <label>``` -> ``Text``."""

    def text(m: re.Match[str]) -> str:
        labelled = _ROLE_TARGET.match(m.group(1))
        return labelled.group(1) if labelled else m.group(1)

    return _MYST_ROLE.sub(text, source)


def _filled(line: str) -> bool:
    """``bool(line.strip())`` without copying the line: it has a non-whitespace character."""
    return bool(line) and not line.isspace()


def _gap_paragraphs(lines: list[str], start: int, end: int, stack: list[tuple[int, str]]) -> list[Block]:
    """Paragraph blocks for non-blank lines no markdown-it block covers (e.g. link definitions)."""
    out: list[Block] = []
    i = start
    while i < end:
        if not _filled(lines[i]):
            i += 1
            continue
        j = i
        while j < end and _filled(lines[j]):
            j += 1
        path = tuple(t for _, t in stack if t)
        out.append(Block(BlockKind.PARAGRAPH, "\n".join(lines[i:j]), i + 1, j, path))
        i = j
    return out


#: an empty HTML anchor (``<a name="x"></a>``, ``<a id='x'/>``) with the spaces before it
_EMPTY_ANCHOR = re.compile(r"""[ \t]*<a\s+(?:name|id)\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)\s*(?:/>|>\s*</a>)""", re.IGNORECASE)


def drop_anchor_blocks(lines: list[str], line_map: list[int], blocks: list[Block]) -> tuple[list[str], list[int], list[Block]]:
    """The text without what a reader of the page never sees of its HTML anchors: anchor blocks
    (``<a name="x"></a>`` / ``<a id="x"></a>`` lines, HTML comments, MyST ``(label)=`` targets),
    each with one blank line after it when it stood between blank lines or at the start, and
    empty anchors inside one-line headers (``### Title <a name="x"></a>``); the other blocks'
    spans renumbered. The anchors stay where :func:`parse_blocks` put them (the header's
    ``anchor``/``alt_anchors``), so section URLs do not change.

    Args:
        lines: the text's lines (``Parsed.lines``); line_map: their source lines.
        blocks: :func:`parse_blocks` of ``lines``.

    Returns:
        ``(lines, line_map, blocks)``; the same objects when there is nothing to drop.
    """
    edited: dict[int, str] = {}  # 0-based line -> its text without anchors (one-line headers)
    gone: set[int] = set()  # 0-based line indices dropped
    for b in blocks:
        if b.kind is BlockKind.HEADER and b.start_line == b.end_line and "<a" in b.text and _EMPTY_ANCHOR.search(b.text):
            edited[b.start_line - 1] = _EMPTY_ANCHOR.sub("", b.text).rstrip()
        if b.kind is not BlockKind.ANCHOR:
            continue
        a, e = b.start_line - 1, b.end_line
        gone.update(range(a, e))
        if e < len(lines) and not _filled(lines[e]) and (a == 0 or (a - 1) in gone or not _filled(lines[a - 1])):
            gone.add(e)
    if not gone and not edited:
        return lines, line_map, blocks
    upto: list[int] = []  # upto[i]: how many kept lines lie in lines[0..i]
    kept = 0
    for i in range(len(lines)):
        kept += i not in gone
        upto.append(kept)
    out_blocks = []
    for b in blocks:
        if b.kind is not BlockKind.ANCHOR:
            text = edited.get(b.start_line - 1, b.text) if b.kind is BlockKind.HEADER else b.text
            out_blocks.append(
                Block(
                    b.kind,
                    text,
                    upto[b.start_line - 1],
                    upto[b.end_line - 1],
                    b.section_path,
                    b.level,
                    b.anchor,
                    b.alt_anchors,
                    b.html_anchor,
                )
            )
    keep = [i for i in range(len(lines)) if i not in gone]
    return [edited.get(i, lines[i]) for i in keep], [line_map[i] for i in keep], out_blocks
