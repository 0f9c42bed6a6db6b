"""AsciiDoc read by esrag's own block scanner into blocks that read as Markdown.

Why a scanner of our own (evidence, December 2026): on PyPI, ``asciidoc`` (10.2.1) is the legacy
AsciiDoc.py converter (DocBook/HTML output, no structure API, no line numbers); ``asciidoc3`` is
its fork; ``asciidoctrine`` is a 0.2 alpha (Lark grammar, unproven on real sites); the maintained
reference is Asciidoctor (Ruby) and Asciidoctor.js (npm ``@asciidoctor/core``), which would put
Node at ingest time. The block grammar is line-oriented and small, so this module scans it from
the language rules (docs.asciidoctor.org "AsciiDoc Language"; asciidoctor ``lib/asciidoctor/
parser.rb``, ``reader.rb`` (preprocessor: includes, conditionals), ``section.rb``
(``Section.generate_id``), ``rx.rb``), and the conformance test checks its section ids against
Asciidoctor.js.

What it reads (:func:`parse_asciidoc`):

* preprocessor (:class:`_Pre`): ``include::target[]`` (``tag=``/``tags=``/``lines=``/
  ``leveloffset=``; Antora resource ids ``partial$…``, ``example$…``, ``module:partial$…``)
  confined to the ingested tree (:func:`esrag.formats.include_base.checked_target`);
  ``ifdef``/``ifndef``/``ifeval``/``endif``; attribute entries ``:name: value`` / ``:name!:``
  tracked in document order so conditions and ``{name}`` references see them;
* sections ``=``..``======`` and ``#``..``######`` -> HEADER blocks (level = marker count), with
  ``Block.anchor`` the id Asciidoctor gives (explicit ``[[id]]``/``[#id]``/``[id=…]``, else
  :func:`section_id` with the page's ``idprefix``/``idseparator``; none under ``:sectids!:``;
  the document title ``= T`` has none);
* delimited blocks: ``----`` listing and ```` ``` ```` -> fenced CODE with the ``[source,lang]``
  language; ``....`` literal -> CODE; ``====`` example, ``****`` sidebar, ``--`` open -> their
  content scanned (an admonition style ``[NOTE]`` -> a ``NOTE:`` line); ``____`` quote ->
  BLOCKQUOTE; ``|===`` -> a pipe TABLE; ``++++`` passthrough -> HTML; ``////`` and ``//`` comments
  dropped;
* paragraphs (``NOTE:`` admonition paragraphs kept as read), literal (indented) paragraphs ->
  CODE, lists (``*``, ``-``, ``.``, ``1.``, ``term::``) -> LIST, block titles ``.Title`` -> a
  ``**Title**`` line, ``'''`` -> THEMATIC_BREAK; ``image::``/``toc::`` macros as their alt text;
* inline: ``xref:p.adoc#x[text]`` and ``<<id,text>>`` -> text, ``link:``/URL macros -> text,
  ``kbd:``/``btn:``/``menu:``/``pass:``/``footnote:``/``image:`` -> their text, attribute
  references substituted (missing ones left, Asciidoctor's ``attribute-missing: skip``).

Lines of :attr:`Parsed.lines` are the rendered text; ``line_map`` takes each to its source line
(included lines: the include directive's line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from esrag.formats.base import UNRESOLVED, Parsed
from esrag.formats.include_base import IncludeContext, IncludeError, checked_target, read_included
from esrag.model import Block, BlockKind

#: Asciidoctor's intrinsic attributes (``Document::INTRINSIC_ATTRIBUTES`` and the character
#: replacement attributes of the AsciiDoc language reference).
INTRINSIC = {
    "empty": "", "blank": "", "sp": " ", "nbsp": "\u00a0", "zwsp": "\u200b", "wj": "\u2060",
    "apos": "'", "quot": '"', "lsquo": "\u2018", "rsquo": "\u2019", "ldquo": "\u201c", "rdquo": "\u201d",
    "deg": "\u00b0", "plus": "+", "brvbar": "\u00a6", "vbar": "|", "amp": "&", "lt": "<", "gt": ">",
    "startsb": "[", "endsb": "]", "caret": "^", "asterisk": "*", "tilde": "~", "backslash": "\\",
    "backtick": "`", "two-colons": "::", "two-semicolons": ";;", "cpp": "C++", "pp": "++",
    "sectids": "", "asciidoctor": "", "backend-html5": "", "basebackend-html": "", "outfilesuffix": ".html",
}  # fmt: skip

_ATTR_ENTRY = re.compile(r"^:(!?\w[\w-]*!?):(?:[ \t]+(.*))?$")
_ATTR_REF = re.compile(r"(\\)?\{(\w[\w-]*)\}")
_INCLUDE = re.compile(r"^(\\)?include::([^\[\s][^\[]*)\[(.*)\]$")
_COND = re.compile(r"^(\\)?(ifdef|ifndef|ifeval|endif)::([^\[]*)\[(.*)\]$")
_TAG = re.compile(r"\b(tag|end)::([\w.-]+|\*)\[\]")
_SECTION = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?$")
_DELIM = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|\|={3,}|```.*)$")
_BLOCK_ATTRS = re.compile(r"^\[(?:|[\w.#%{,\"'].*)\]$")
_ANCHOR_LINE = re.compile(r"^\[\[([A-Za-z_:][\w:.-]*)(?:,\s*(.*))?\]\]$")
_TITLE = re.compile(r"^\.(\.?[^ \t.].*)$")
_LIST = re.compile(r"^\s*(?:[*-]+|\.+|\d+\.|[a-zA-Z]\.|<\d+>)[ \t]+\S|^(?!//).*?[^:](?:::|;;|:::|::::)(?:[ \t]+.*)?$")
_ADMONITION = re.compile(r"^(NOTE|TIP|IMPORTANT|CAUTION|WARNING):[ \t]+")
_BLOCK_MACRO = re.compile(r"^(image|video|audio|toc)::([^\[]*)\[(.*)\]$")
_INVALID_ID_CHARS = re.compile(r"<[^>]+>|&(?:[a-z][a-z]+\d{0,2}|#\d\d\d{0,4}|#x[\da-f][\da-f][\da-f]{0,3});|[^ \w\-.]+?")
_ADMON_STYLES = ("NOTE", "TIP", "IMPORTANT", "CAUTION", "WARNING")


def parse_asciidoc(
    text: str, path: str, file: Path | None = None, root: Path | None = None, attributes: dict[str, str] | None = None
) -> Parsed:
    """``text`` (``\\n`` line endings) as blocks.

    Args:
        text: the page's source.
        path: its path (for messages).
        file, root: the file and the ingested tree; includes are resolved only when both are set.
        attributes: attributes set before the page (an Antora component's ``asciidoc.attributes``,
            a trailing ``@`` — soft set — already removed); the page's own entries override them.
    """
    attrs = dict(INTRINSIC) | dict(attributes or {})
    pre = _Pre(dict(attrs), root.resolve() if root else None)  # the scanner re-reads the entries in order
    lines, src = pre.run(text.split("\n"), file.resolve() if file and root else None, None)
    scanner = _Scanner(lines, src, attrs)
    scanner.scan(0, len(lines))
    return Parsed(scanner.out, scanner.blocks, scanner.out_map, problems=pre.problems, dependencies=pre.dependencies)


def section_id(title: str, attrs: dict[str, str], taken: set[str]) -> str:
    """Asciidoctor's ``Section.generate_id`` for a (converted) ``title``: ``idprefix`` (default
    ``_``) + the lowercased title without invalid characters (tags, entities, anything but word
    characters, space, ``-`` and ``.``), runs of space/``_``/``.``/``-`` (space/``.``/``-`` when the
    separator is ``-`` or ``.``) squeezed into ``idseparator`` (default ``_``; empty: spaces
    deleted), no trailing separator; a taken id gets ``<sep>2``, ``<sep>3``… Adds the id to ``taken``."""
    pre = attrs.get("idprefix", "_")
    sep = attrs.get("idseparator", "_")
    sep = sep[:1]
    gen = pre + _INVALID_ID_CHARS.sub("", title.lower())
    if not sep:
        gen = gen.replace(" ", "")
    else:
        chars = " .-" if sep in "-." else f" {sep}.-"
        gen = re.sub("[" + re.escape(chars) + "]+", sep, gen)
        gen = gen[:-1] if gen.endswith(sep) else gen
        gen = gen[1:] if not pre and gen.startswith(sep) else gen
    if gen in taken:
        n = 2
        while f"{gen}{sep}{n}" in taken:
            n += 1
        gen = f"{gen}{sep}{n}"
    taken.add(gen)
    return gen


def substitute(text: str, attrs: dict[str, str]) -> str:
    """Attribute references ``{name}`` replaced by their values; an unknown one and an escaped
    ``\\{name}`` are left as written (the escape removed)."""

    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)[1:]
        return attrs.get(m.group(2).lower(), m.group(0))

    return _ATTR_REF.sub(one, text) if "{" in text else text


_INLINE = [
    (re.compile(r"xref:([^\[\s]+)\[\]"), lambda m: m.group(1).split("#")[-1].removesuffix(".adoc").rsplit("/")[-1].rsplit("$")[-1]),
    (
        re.compile(r"(?:xref|link|mailto|kbd|btn|footnote|pass|indexterm2?):[^\[\s]*\[([^\]]*)\]"),
        lambda m: m.group(1).strip('"').removesuffix("^"),
    ),
    (
        re.compile(r"menu:([^\[\s]+)\[([^\]]*)\]"),
        lambda m: " > ".join([m.group(1), *[p.strip() for p in m.group(2).split(">") if p.strip()]]),
    ),
    (re.compile(r"image:[^\[\s:][^\[\s]*\[([^\],]*)[^\]]*\]"), lambda m: m.group(1)),
    (
        re.compile(r"((?:https?|ftp|irc)://[^\s\[<]+)\[([^\]]*)\]"),
        lambda m: m.group(2).split(",")[0].strip('"').removesuffix("^") or m.group(1),
    ),
    (re.compile(r"<<([^,>]+)(?:,\s*([^>]+))?>>"), lambda m: m.group(2) or m.group(1).split("#")[-1].removesuffix(".adoc")),
    (re.compile(r"\[\[\[?[\w:.-]+(?:,[^\]]*)?\]\]\]?"), lambda m: ""),
    (re.compile(r"\[(?:[#.%][\w.#%-]*|\w[\w-]*)\]#([^#]+)#"), lambda m: m.group(1)),
    (re.compile(r"`\+(.+?)\+`"), lambda m: f"`{m.group(1)}`"),
]


def inline(text: str, attrs: dict[str, str]) -> str:
    """One line of prose as a reader sees it: attribute references substituted, cross references,
    links and UI macros as their text (see the module docstring)."""
    text = substitute(text, attrs)
    for rx, repl in _INLINE:
        if ":" in text or "<<" in text or "[" in text or "`" in text:
            text = rx.sub(repl, text)
    return text


def _plain_title(title: str) -> str:
    """A section title's text for its id: inline markup (``*``, ``_``, `````, ``#``, ``+``)
    removed, as the converted title's tags are."""
    return re.sub(r"(?<![\w\\])[*_`#+]{1,2}|[*_`#+]{1,2}(?!\w)", "", title)


@dataclass
class _Pre:
    """The preprocessor: includes, conditionals, attribute entries (asciidoctor ``reader.rb``)."""

    attrs: dict[str, str]
    root: Path | None
    problems: list[str] = field(default_factory=list)
    dependencies: set[Path] = field(default_factory=set)

    def run(self, lines: list[str], file: Path | None, at: int | None, stack: tuple[Path, ...] = ()) -> tuple[list[str], list[int]]:
        """``lines`` of ``file`` preprocessed; each output line's source line (``at`` for an included file)."""
        out: list[str] = []
        src: list[int] = []
        skipping: list[bool] = []
        fence = ""
        for i, line in enumerate(lines, 1):
            n = at or i
            cond = _COND.match(line) if not fence and line[:2] in ("if", "en", "\\i", "\\e") else None
            if cond and not cond.group(1):
                self._condition(cond, skipping, out, src, n)
                continue
            if any(skipping):
                continue
            if _DELIM.match(line) and line[:1] in "-.`+/":
                fence = "" if fence == line else (fence or line)
            entry = _ATTR_ENTRY.match(line) if not fence else None
            if entry:
                self._entry(entry)
            inc = _INCLUDE.match(line) if line.startswith(("include::", "\\include::")) else None
            if inc and not inc.group(1):
                got, got_src = self._include(inc, file, n, stack)
                out += got
                src += got_src
                continue
            out.append(line[1:] if inc or (cond and cond.group(1)) else line)
            src.append(n)
        return out, src

    def _entry(self, m: re.Match[str]) -> None:
        name, value = m.group(1), (m.group(2) or "").strip()
        if name.startswith("!") or name.endswith("!"):
            self.attrs.pop(name.strip("!").lower(), None)
        else:
            self.attrs[name.lower()] = substitute(value.removesuffix(" +"), self.attrs)

    def _condition(self, m: re.Match[str], skipping: list[bool], out: list[str], src: list[int], n: int) -> None:
        kind, target, content = m.group(2), m.group(3), m.group(4)
        if kind == "endif":
            if skipping:
                skipping.pop()
            return
        if kind == "ifeval":
            ok = _eval(substitute(content, self.attrs))
        else:
            names = [t.strip().lower() for t in re.split(r"[,+]", target)]
            have = [x in self.attrs for x in names]
            ok = (all(have) if "+" in target else any(have)) if kind == "ifdef" else not (all(have) if "+" in target else any(have))
        if content and kind != "ifeval":  # single-line form: the content, no endif
            if ok and not any(skipping):
                out.append(content)
                src.append(n)
            return
        skipping.append(not ok)

    def _include(self, m: re.Match[str], file: Path | None, n: int, stack: tuple[Path, ...]) -> tuple[list[str], list[int]]:
        target = substitute(m.group(2).strip(), self.attrs)
        shown = f"include::{target}[]"
        if file is None or self.root is None:
            self.problems.append(f"line {n}: {shown}: no source file to resolve it from ({UNRESOLVED}; left out of the indexed text)")
            return [], []
        if "://" in target:
            self.problems.append(f"line {n}: {shown}: a URL include is not read ({UNRESOLVED}; left out of the indexed text)")
            return [], []
        try:
            path = checked_target(_resource(target, file), IncludeContext(file=file, allowed=self.root), stack, target)
            text = read_included(path, target)
        except IncludeError as exc:
            self.problems.append(f"line {n}: {shown}: {exc} ({UNRESOLVED}; left out of the indexed text)")
            return [], []
        self.dependencies.add(path)
        opts = _options(m.group(3))
        lines = _select(text.split("\n"), opts)
        if "leveloffset" in opts:
            lines = _level_offset(lines, opts["leveloffset"])
        return self.run(lines, path, n, (*stack, file))


def _eval(expr: str) -> bool:
    """``ifeval::[a op b]`` (quoted strings or numbers; ``==``, ``!=``, ``<``, ``<=``, ``>``,
    ``>=``); an expression it cannot read is true (the block is kept)."""
    m = re.match(r"^\s*(.+?)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$", expr)
    if not m:
        return True
    a, op, b = (x.strip().strip("\"'") for x in m.group(1, 2, 3))
    try:
        x: float | str = float(a)
        y: float | str = float(b)
    except ValueError:
        x, y = a, b
    return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]  # type: ignore[operator]


def _resource(target: str, file: Path) -> Path:
    """Where an include target lies: an Antora resource id (``[module:]family$path``, family
    ``partial``/``example``/``page``/``attachment``/``image``) in the page's component, else a path
    relative to the including file."""
    m = re.match(r"^(?:([\w.-]+):)?(partial|example|page|attachment|image)\$(.+)$", target)
    if not m:
        return file.parent / target
    parts = file.parts
    if "modules" not in parts:
        return file.parent / target
    k = len(parts) - 1 - parts[::-1].index("modules")
    modules = Path(*parts[: k + 1])
    module = m.group(1) or (parts[k + 1] if k + 1 < len(parts) else "ROOT")
    return modules / module / (m.group(2) + "s") / m.group(3)


def _options(raw: str) -> dict[str, str]:
    """An include's attribute list: ``name=value`` pairs (values unquoted)."""
    out = {}
    for m in re.finditer(r'(\w+)=("[^"]*"|[^,]*)', raw):
        out[m.group(1)] = m.group(2).strip('"')
    return out


def _select(lines: list[str], opts: dict[str, str]) -> list[str]:
    """The lines ``lines=`` (``1..3;5;7..-1``) or ``tag=``/``tags=`` (``a;b``, ``!c``, ``*``,
    ``**``) select; tag directive lines are dropped when tags select. No option: every line."""
    if "lines" in opts:
        keep: list[str] = []
        for part in re.split(r"[;,]", opts["lines"]):
            lo, _, hi = part.strip().partition("..")
            if not lo.strip().lstrip("-").isdigit():
                continue
            a = int(lo)
            b = a if not _ else (len(lines) if hi.strip() in ("", "-1") else int(hi))
            keep += lines[a - 1 : b]
        return keep
    spec = opts.get("tags", opts.get("tag"))
    if spec is None:
        return lines
    wanted = [t for t in spec.split(";") if t and not t.startswith("!")]
    negated = {t[1:] for t in spec.split(";") if t.startswith("!")}
    every = "**" in wanted or "*" in wanted
    out, active = [], []
    for line in lines:
        m = _TAG.search(line)
        if m:
            name = m.group(2)
            if m.group(1) == "tag":
                active.append(name)
            elif name in active:
                active.remove(name)
            continue
        inside = any(t in wanted for t in active) or (every and (spec.strip() == "**" or active)) or (not wanted and bool(negated))
        if inside and not any(t in negated for t in active):
            out.append(line)
    return out


def _level_offset(lines: list[str], offset: str) -> list[str]:
    """Section titles of included lines shifted by ``leveloffset`` (``+1``, ``-1``, ``2``)."""
    try:
        k = int(offset)
    except ValueError:
        return lines
    out = []
    for line in lines:
        m = re.match(r"^(={1,6})([ \t].*)$", line)
        out.append("=" * max(1, min(6, len(m.group(1)) + k)) + m.group(2) if m else line)
    return out


@dataclass
class _Pending:
    """Block metadata lines seen before a block: attributes ``[…]``, an anchor, a title."""

    style: str = ""
    lang: str = ""
    id: str = ""
    title: str = ""
    subs: str = ""
    header: bool = False


class _Scanner:
    """The block scan (asciidoctor ``parser.rb`` ``next_block``) over preprocessed lines."""

    def __init__(self, lines: list[str], src: list[int], attrs: dict[str, str]) -> None:
        self.lines, self.src, self.attrs = lines, src, attrs
        self.out: list[str] = []
        self.out_map: list[int] = []
        self.blocks: list[Block] = []
        self.stack: list[tuple[int, str]] = []
        self.taken: set[str] = set()
        self.pending = _Pending()

    def emit(self, kind: BlockKind, rendered: list[str], first: int, last: int, level: int = 0, anchor: str = "") -> None:
        """Add one block: ``rendered`` lines standing for source lines ``first..last`` (0-based indices)."""
        if self.pending.title and kind is not BlockKind.HEADER:
            rendered = [f"**{inline(self.pending.title, self.attrs)}**", *rendered]
        self.pending = _Pending()
        if not rendered:
            return
        if self.out:
            self.out.append("")
            self.out_map.append(self.out_map[-1])
        start = len(self.out) + 1
        for j, text in enumerate(rendered):
            self.out.append(text)
            self.out_map.append(self.src[min(first + j, last)] if first < len(self.src) else self.src[-1])
        path = tuple(t for _, t in self.stack)
        self.blocks.append(Block(kind, "\n".join(rendered), start, len(self.out), path, level, anchor))

    def scan(self, i: int, end: int) -> None:
        """Blocks of lines ``i..end-1``."""
        while i < end:
            i = self.step(i, end)

    def step(self, i: int, end: int) -> int:  # noqa: C901 - one dispatch on the line's form, as parser.rb's next_block
        """Read the block (or metadata line) starting at line ``i``; the index after it."""
        line = self.lines[i]
        stripped = line.strip()
        if not stripped:
            return i + 1
        if line.startswith("//") and not line.startswith("///"):
            return i + 1
        entry = _ATTR_ENTRY.match(line)
        if entry:
            self._entry(entry)
            return i + 1
        anchor = _ANCHOR_LINE.match(line)
        if anchor:
            self.pending.id = anchor.group(1)
            return i + 1
        if _BLOCK_ATTRS.match(line) and not _DELIM.match(line):
            self._attributes(line[1:-1])
            return i + 1
        title = _TITLE.match(line)
        if title and not _DELIM.match(line) and not _LIST.match(line):
            self.pending.title = title.group(1)
            return i + 1
        delim = _DELIM.match(line)
        if delim:
            return self._delimited(i, end)
        section = _SECTION.match(line)
        if section:
            self._section(i, section)
            return self._doc_header(i + 1, end) if len(self.blocks) == 1 and len(section.group(1)) == 1 else i + 1
        if stripped in ("'''", "---", "***", "<<<", "- - -", "* * *"):
            self.emit(BlockKind.THEMATIC_BREAK, ["---"] if stripped != "<<<" else [], i, i)
            return i + 1
        macro = _BLOCK_MACRO.match(line)
        if macro:
            alt = macro.group(3).split(",")[0].strip('"') if macro.group(1) == "image" else ""
            self.emit(BlockKind.PARAGRAPH, [inline(alt, self.attrs)] if alt else [], i, i)
            return i + 1
        if _LIST.match(line) and not _ADMONITION.match(line):
            return self._list(i, end)
        if line[:1] in (" ", "\t") and self.pending.style not in _ADMON_STYLES:
            j = self._until_blank(i, end)
            body = [x for x in self.lines[i:j]]
            indent = min(len(x) - len(x.lstrip()) for x in body if x.strip())
            self.emit(BlockKind.CODE, ["```", *(x[indent:] for x in body), "```"], i - 1, j)
            return j
        return self._paragraph(i, end)

    def _attributes(self, raw: str) -> None:
        """A block attribute line ``[style,positional…,name=value]`` (``#id``, ``.role``, ``%opt``)."""
        parts = [p.strip() for p in re.split(r",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", raw)]
        first = parts[0] if parts else ""
        m = re.match(r"^([\w-]*)((?:[#.%][\w:.-]+)*)$", first)
        if m:
            self.pending.style = m.group(1) or self.pending.style
            ids = re.findall(r"#([\w:.-]+)", m.group(2))
            self.pending.id = ids[0] if ids else self.pending.id
            self.pending.header |= "%header" in m.group(2)
        for p in parts[1:]:
            name, eq, value = p.partition("=")
            if eq:
                value = value.strip().strip('"')
                if name.strip() == "id":
                    self.pending.id = value
                elif name.strip() == "subs":
                    self.pending.subs = value
                elif name.strip() == "options" and "header" in value:
                    self.pending.header = True
            elif self.pending.style in ("source", "") and not self.pending.lang and p:
                self.pending.lang = p
        if self.pending.style == "source" and len(parts) == 1:
            self.pending.lang = self.pending.lang or self.attrs.get("source-language", "")

    def _section(self, i: int, m: re.Match[str]) -> None:
        """A section title; its level shifted by the ``leveloffset`` attribute (``1``, ``+1``, ``-1``)."""
        level = max(1, min(6, len(m.group(1)) + _offset(self.attrs.get("leveloffset", ""))))
        raw = m.group(2)
        inline_id = re.search(r"\s*\[\[([\w:.-]+)(?:,[^\]]*)?\]\]$", raw)
        explicit = self.pending.id or (inline_id.group(1) if inline_id else "")
        raw = raw[: inline_id.start()] if inline_id else raw
        title = inline(raw, self.attrs)
        if len(m.group(1)) == 1 and not self.blocks:
            anchor = explicit  # the document title: no generated id
        elif explicit:
            anchor = explicit
            self.taken.add(explicit)
        else:  # sectids is on unless a :sectids!: entry unset it
            anchor = section_id(_plain_title(substitute(raw, self.attrs)), self.attrs, self.taken) if "sectids" in self.attrs else ""
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, title))
        self.pending.title = ""
        self.emit(BlockKind.HEADER, ["#" * level + " " + title], i, i, level, anchor)

    def _doc_header(self, i: int, end: int) -> int:
        """The document header's lines after ``= Title``, up to a blank line: attribute entries
        are read; author and revision lines (the first two other lines) are not content."""
        others = 0
        while i < end and self.lines[i].strip():
            entry = _ATTR_ENTRY.match(self.lines[i])
            if entry:
                self._entry(entry)
            elif not self.lines[i].startswith("//"):
                others += 1
                if others > 2:
                    break
            i += 1
        return i

    def _entry(self, m: re.Match[str]) -> None:
        """An attribute entry: set (value with references substituted) or unset (``:name!:``)."""
        name = m.group(1)
        if name.startswith("!") or name.endswith("!"):
            self.attrs.pop(name.strip("!").lower(), None)
        else:
            self.attrs[name.lower()] = substitute((m.group(2) or "").strip(), self.attrs)

    def _until_blank(self, i: int, end: int) -> int:
        j = i
        while j < end and self.lines[j].strip():
            j += 1
        return j

    def _paragraph(self, i: int, end: int) -> int:
        j = i + 1
        while j < end:
            ln = self.lines[j]
            if not ln.strip() or _DELIM.match(ln) or (_BLOCK_ATTRS.match(ln) and ln != "[]") or _ANCHOR_LINE.match(ln):
                break
            j += 1
        body = [inline(x, self.attrs) for x in self.lines[i:j] if not x.startswith("//") or x.startswith("///")]
        style = self.pending.style
        if style in _ADMON_STYLES:
            body[0] = f"{style}: {body[0]}"
        if style in ("source", "listing", "literal"):
            self.emit(BlockKind.CODE, [f"```{self.pending.lang}", *self.lines[i:j], "```"], i - 1, j)
        elif style in ("quote", "verse"):
            self.emit(BlockKind.BLOCKQUOTE, ["> " + x for x in body], i, j - 1)
        else:
            self.emit(BlockKind.PARAGRAPH, body, i, j - 1)
        return j

    def _list(self, i: int, end: int) -> int:
        """A list: items and their continuation lines, up to a blank line followed by a line that
        is not a list item (or a ``+`` list continuation, whose attached block follows on its own)."""
        j = i
        while j < end:
            ln = self.lines[j]
            if ln.strip() == "+":
                break
            if not ln.strip():
                k = j
                while k < end and not self.lines[k].strip():
                    k += 1
                if k < end and _LIST.match(self.lines[k]) and not _DELIM.match(self.lines[k]):
                    j = k
                    continue
                break
            if j > i and (_DELIM.match(ln) or _BLOCK_ATTRS.match(ln) or _ANCHOR_LINE.match(ln)):
                break
            j += 1
        body = [inline(x, self.attrs) for x in self.lines[i:j] if x.strip() and not x.startswith("//")]
        self.emit(BlockKind.LIST, body, i, j - 1)
        return j + 1 if j < end and self.lines[j].strip() == "+" else j

    def _delimited(self, i: int, end: int) -> int:
        """A delimited block from line ``i``; the index after its closing delimiter (or ``end``)."""
        opening = self.lines[i]
        fence = opening[:3] if opening.startswith("```") else opening
        j = i + 1
        while j < end and (self.lines[j].rstrip() != fence):
            j += 1
        inner = self.lines[i + 1 : j]
        after = min(j + 1, end)
        ch = opening[:1]
        style = self.pending.style
        if opening.startswith("```"):
            lang = opening[3:].strip() or self.pending.lang
            self.emit(BlockKind.CODE, [f"```{lang}", *inner, "```"], i, j)
        elif ch == "/":
            self.pending = _Pending()
        elif ch in "-." and opening != "--" or style in ("source", "listing", "literal"):
            lang = self.pending.lang if style in ("source", "") or ch != "." else ""
            code = [substitute(x, self.attrs) for x in inner] if "attributes" in self.pending.subs else inner
            self.emit(BlockKind.CODE, [f"```{lang}", *code, "```"], i, j)
        elif ch == "|":
            self.emit(BlockKind.TABLE, _table(inner, self.attrs, self.pending.header), i, j)
        elif ch == "+":
            self.emit(BlockKind.HTML, inner, i + 1, j - 1)
        elif ch == "_" or style in ("quote", "verse"):
            self.emit(BlockKind.BLOCKQUOTE, ["> " + inline(x, self.attrs) for x in inner if not x.startswith("//")], i + 1, j - 1)
        else:  # example, sidebar, open, an admonition block: the content is blocks
            label = style if style in _ADMON_STYLES else ""
            title = self.pending.title
            self.pending = _Pending()
            if label or title:
                self.emit(
                    BlockKind.PARAGRAPH,
                    [
                        f"{label + ':' if label else ''}{' ' if label and title else ''}{f'**{inline(title, self.attrs)}**' if title else ''}"
                    ],
                    i,
                    i,
                )
            self.scan(i + 1, j)
        return after


def _offset(value: str) -> int:
    """A ``leveloffset`` value as a number (empty or unreadable: 0)."""
    try:
        return int(value.strip() or 0)
    except ValueError:
        return 0


def _table(inner: list[str], attrs: dict[str, str], header: bool) -> list[str]:
    """A ``|===`` table as a pipe table: cells start at ``|`` (with an optional spec such as
    ``2+``, ``a``, ``.^``); the first row's cell count is the column count (``cols`` is not read);
    the first row is the header row when marked (``%header``) or followed by a blank line, else
    a blank header row."""
    first = next((k for k, x in enumerate(inner) if x.strip()), None)
    if first is None:
        return []
    cell = re.compile(r"(?:^|(?<=\s))[\w.^<>+*]*(?<!\\)\|")
    ncols = len(cell.findall(inner[first])) or 1
    implicit = first + 1 < len(inner) and not inner[first + 1].strip()
    joined = " ".join(x for x in inner if not (x.startswith("//") and not x.startswith("///")))  # comment lines dropped
    cells = [inline(c.strip(), attrs).replace("|", "\\|") for c in cell.split(joined)[1:]]
    rows = [cells[k : k + ncols] for k in range(0, len(cells), ncols)]
    rows = [r + [""] * (ncols - len(r)) for r in rows]
    head = rows[0] if (header or implicit) and rows else [""] * ncols
    body = rows[1:] if (header or implicit) else rows
    return ["| " + " | ".join(head) + " |", "|" + "---|" * ncols, *("| " + " | ".join(r) + " |" for r in body)]
