"""Top-level Markdown blocks: a line scanner for the common blocks, markdown-it-py for the rest.

:func:`top_level_blocks` gives, for a document, what markdown-it-py's block parser (CommonMark
preset, tables, front matter) gives at nesting level 0 — block type, 0-based ``[start, end)``
line map, and for headings and paragraphs their inline source — but without running
markdown-it over most of the text (issue 17: the block parse alone ran at a third of
LangChain's header splitter). :func:`markdown_it_blocks` is the reference: the whole document
through markdown-it; the tests compare the two on every file of the real corpora and on
adversarial CommonMark cases.

The fast path (CommonMark 0.31.2, and markdown-it-py's rules where they decide) handles only
lines it can classify from their first characters, at column 0 of the top level:

* blank lines (only spaces and tabs: markdown-it's ``isEmpty``);
* ATX headings ``#`` .. ``######`` at column 0 (spec 4.2; the closing-sequence rule of
  markdown-it's ``heading``);
* fenced code opened at column 0 (spec 4.5; markdown-it's ``fence``: closing fence with at most
  3 spaces of indent, at least as long, nothing but spaces after; unclosed runs to the end);
* indented code (spec 4.4; markdown-it's ``code``: lines with >= 4 columns, tabs expanded,
  blank lines inside kept, ends before the first line with less indent);
* HTML blocks opened at column 0, with markdown-it's own start/end conditions
  (``HTML_SEQUENCES``, spec 4.6: types 1-5 end at their closing sequence, 6-7 at a blank line);
* tables (GFM 4.10) at column 0 whose body rows all start with ``|`` at column 0 and that end
  at a blank line (markdown-it's ``table``: delimiter row, column count, terminators);
* paragraphs (spec 4.8) that start at column 0 with a character no other block can start
  with, whose further lines are at column 0 or indented >= 4 columns (lazy continuation),
  ending at a blank line, an ATX heading, a fence, or an HTML block of types 1-6 (the
  paragraph terminators of markdown-it that these lines can be).

Anything else — a line indented 1-3 columns, a block quote ``>``, a list or thematic break
marker (``-``, ``+``, ``*``, ``_``, ``1.``), a link reference definition ``[``, a possible
setext underline (``=``/``-``) or table delimiter row after a paragraph line, a table
the fast path does not take, a backtick fence with a backtick in its info string, a document starting with ``-`` (front matter), a NUL or CR
character — sends a *region* to markdown-it: from the start of the block being scanned to the
next line that follows a blank line and starts at column 0 with none of ``> - + *`` or a digit.
No CommonMark block open at the top level continues past such a line (lists need indent or a
marker, block quotes a ``>``, paragraphs and tables end at the blank line) except fenced code
and HTML blocks of types 1-5: if the region's last block is one of those and runs to the
region's end, the rest of the document goes to markdown-it. One environment (``references``)
is shared by every region, so link reference definitions anywhere count.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import mdTrim
from markdown_it.rules_block.html_block import HTML_SEQUENCES
from markdown_it.rules_block.table import MAX_AUTOCOMPLETED_CELLS, escapedSplit

#: (markdown-it token type, start, end, payload): heading payload (level, inline source),
#: paragraph payload its inline source, else None. Lines are 0-based, end exclusive.
RawBlock = tuple[str, int, int, Any]

_KEPT = frozenset(
    {
        "front_matter",
        "fence",
        "code_block",
        "heading_open",
        "table_open",
        "bullet_list_open",
        "ordered_list_open",
        "blockquote_open",
        "hr",
        "paragraph_open",
        "html_block",
    }
)

# Characters that may start a fast-path paragraph at column 0: anything no other block starts with.
_UNSAFE_START = frozenset(" \t>-+*_[<`~#=0123456789")
# A superset of markdown-it's table delimiter rows (table rule: /^[-:|][-:|\s]*$/ after indent).
_MAYBE_DELIM = re.compile(r"[ \t]*[|:-][|:\- \t]*\Z")
_DELIM_START = frozenset(" \t|:-")  # the first characters such a row can have
# A line after a blank line where no top-level block but fences / HTML 1-5 can still be open.
_BOUNDARY_BAD = frozenset(" \t>-+*0123456789")
_ORDERED = re.compile(r"\d{1,9}[.)]")
# A line of indented code that is not blank: >= 4 columns of spaces and tabs (tabs to the next
# multiple of 4, markdown-it's sCount), then a character that is neither.
_CODE_LINE = re.compile(r"(?: {4}| {0,3}\t)[ \t]*[^ \t]")
# markdown-it's HTML block openers in one pattern, in their order: the name of the group that
# matched is the index of the first that matches (each starts with ^; the case-insensitive ones
# keep their flag in a scoped group).
_HTML_OPEN = re.compile(
    "|".join(
        f"(?P<h{k}>{f'(?i:{seq[0].pattern})' if seq[0].flags & re.IGNORECASE else seq[0].pattern})" for k, seq in enumerate(HTML_SEQUENCES)
    )
)
# A cell of a table's delimiter row, trimmed (markdown-it ``table``'s headerLineRe).
_DELIM_CELL = re.compile(r"^:?-+:?$")


def markdown_it_blocks(md: MarkdownIt, text: str, env: dict, offset: int = 0) -> list[RawBlock]:
    """The level-0 blocks of ``text`` as markdown-it-py parses it (the reference behaviour);
    line numbers shifted by ``offset`` (also those of the link reference definitions it adds to
    ``env["references"]`` and ``env["duplicate_refs"]``)."""
    known = set(env.get("references", ())) if offset else set()
    duplicates = len(env.get("duplicate_refs", ()))
    tokens = md.parse(text, env)
    if offset:
        added = [ref for label, ref in env.get("references", {}).items() if label not in known]
        for ref in added + env.get("duplicate_refs", [])[duplicates:]:
            if ref.get("map"):
                ref["map"] = [ref["map"][0] + offset, ref["map"][1] + offset]
    out: list[RawBlock] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.nesting == -1 or tok.map is None or tok.type not in _KEPT:
            continue
        payload: Any = None
        if tok.type == "heading_open":
            payload = (int(tok.tag[1]), tokens[i + 1].content)
        elif tok.type == "paragraph_open":
            payload = tokens[i + 1].content
        out.append((tok.type, tok.map[0] + offset, tok.map[1] + offset, payload))
    return out


def top_level_blocks(
    md: MarkdownIt, text: str, env: dict, region_md: MarkdownIt | None = None, lines: list[str] | None = None
) -> list[RawBlock]:
    """Exactly :func:`markdown_it_blocks` of ``text`` (see the module docstring for how).

    Args:
        md: the block parser (CommonMark, tables, front matter; inline rules off).
        text: the whole document, ``\\n`` line ends.
        env: markdown-it environment; gets the document's ``references``.
        region_md: ``md`` without its front matter rule, for regions that do not start the
            document (the rule fires at a text's line 0, which a region's first line is);
            required when ``md`` has that rule.
        lines: ``text.split("\\n")`` when the caller has it (not split again).
    """
    if not text or text[0] == "-" or "\r" in text or "\x00" in text:
        return markdown_it_blocks(md, text, env)
    if region_md is None:
        if "front_matter" in md.block.ruler.get_active_rules():
            raise ValueError("top_level_blocks: md has a front matter rule; pass region_md without it")
        region_md = md
    return _Scanner(md, region_md, text, env, lines).run()


def _indent(line: str) -> int:
    """Columns of leading spaces and tabs (tabs to the next multiple of 4): markdown-it's sCount."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _blank(line: str) -> bool:
    return not line.strip(" \t")


def _plain(line: str) -> bool:
    """True when a column-0 line starting with one of ``-+*_=`` or a digit starts no block of its
    own and ends no paragraph: no list item (marker + space, tab or end; ``\\d{1,9}[.)]``), no
    thematic break or setext underline (only marker characters and spaces)."""
    c = line[0]
    if c.isdigit():
        return _ORDERED.match(line) is None
    if c not in "-+*_=":
        return False
    return line[1:2] not in ("", " ", "\t") and bool(line.strip(c + " \t"))


def _heading_level(line: str) -> int:
    """Level of an ATX heading line at column 0, else 0 (markdown-it ``heading``)."""
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 6 or (len(line) > level and line[level] not in " \t"):
        return 0
    return level


def _heading_content(line: str, level: int) -> str:
    """The heading's inline source: markdown-it ``heading`` (closing ``#`` run cut when a space
    or tab precedes it, then CommonMark trim)."""
    body = line[level:].rstrip(" \t")
    cut = body.rstrip("#")
    if cut and cut[-1] in " \t":
        body = cut
    return mdTrim(body)


def _fence_open(line: str) -> str:
    """The fence string of a line opening fenced code at column 0 ('' if it does not)."""
    ch = line[0]
    run = len(line) - len(line.lstrip(ch))
    if run < 3 or (ch == "`" and "`" in line[run:]):
        return ""
    return line[:run]


def _fence_closes(line: str, fence: str) -> bool:
    """True when ``line`` closes ``fence`` (markdown-it ``fence``, top level)."""
    s = line.lstrip(" \t")
    if not s or s[0] != fence[0] or _indent(line) >= 4:
        return False
    run = len(s) - len(s.lstrip(fence[0]))
    return run >= len(fence) and not s[run:].strip(" \t")


def _html_seq(line: str) -> int:
    """Index into markdown-it's ``HTML_SEQUENCES`` of the HTML block a ``<`` line opens, or -1."""
    m = _HTML_OPEN.match(line)
    return -1 if m is None else int(m.lastgroup[1:])  # type: ignore[index]  # every alternative is a named group


class _Scanner:
    def __init__(self, md: MarkdownIt, region_md: MarkdownIt, text: str, env: dict, lines: list[str] | None = None) -> None:
        self.md, self.region_md, self.env = md, region_md, env
        self.lines = lines = text.split("\n") if lines is None else lines
        # markdown-it's lineMax: a last line of only spaces and tabs (or empty) is no line
        self.n = len(lines) - 1 if _blank(lines[-1]) else len(lines)
        self.out: list[RawBlock] = []

    def run(self) -> list[RawBlock]:
        lines, n = self.lines, self.n
        i = 0
        while i < n:
            line = lines[i]
            if not line or line[0] in " \t":
                if not line.strip(" \t"):  # blank
                    i += 1
                    continue
                if _CODE_LINE.match(line):  # indented >= 4 columns
                    i = self._code(i)
                    continue
                i = self._fallback(i, i)
                continue
            nxt = self._block(i)
            i = nxt if nxt > 0 else self._fallback(i, i)
        return self.out

    def _delim_after(self, i: int) -> bool:
        """True when line i + 1 might be a table delimiter row (the table rule looks at it first)."""
        if i + 1 >= self.n:
            return False
        line = self.lines[i + 1]
        return line[:1] in _DELIM_START and _MAYBE_DELIM.match(line) is not None

    def _block(self, i: int) -> int:
        """Scan the block starting at column 0 on line i; its end line, or 0 when unsure."""
        line = self.lines[i]
        if self._delim_after(i):
            return self._table(i)
        c = line[0]
        if c == "#":
            level = _heading_level(line)
            if level:
                self.out.append(("heading_open", i, i + 1, (level, _heading_content(line, level))))
                return i + 1
            return self._paragraph(i)
        if c in "`~":
            fence = _fence_open(line)
            return self._fence(i, fence) if fence else 0
        if c == "<":
            k = _html_seq(line)
            return self._html(i, k) if k >= 0 else self._paragraph(i)
        if c == ">":
            return self._blockquote(i)
        if c in "-+*" and line[1:2] == " " and line[2:3] not in ("", " ", "\t", c):
            return self._bullet_list(i, c)
        if c == "[":
            j = self._paragraph(i, emit=False)
            if not j or any("]:" in ln for ln in self.lines[i:j]):
                return 0  # maybe a link reference definition
            return self._paragraph(i)
        if c in _UNSAFE_START and not _plain(line):
            return 0
        return self._paragraph(i)

    def _blockquote(self, i: int) -> int:
        """A block quote whose lines all start with ``>`` at column 0, up to a blank line (spec 5.1;
        markdown-it ``blockquote``: every ``>`` line is inside, an empty line ends it) and whose last
        line has text after the ``>`` (else markdown-it's map may run over the blank lines after
        it); 0 when unsure."""
        lines, n = self.lines, self.n
        j = i
        while j < n and lines[j][:1] == ">":
            if "]:" in lines[j]:
                return 0  # maybe a link reference definition inside
            j += 1
        if j < n and not _blank(lines[j]):
            return 0  # lazy continuation or a terminator: markdown-it decides
        if _blank(lines[j - 1][1:]):
            return 0  # an empty last line: where markdown-it's map ends depends on the lines before
        self.out.append(("blockquote_open", i, j, None))
        return j

    def _bullet_list(self, i: int, marker: str) -> int:
        """A bullet list whose items all start with ``marker`` + one space + text at column 0
        (content indent 2) and whose other lines are indented >= 2 columns, ending at a blank line
        followed by a region boundary (spec 5.2-5.3; markdown-it ``list``: an item's content goes on
        while lines are indented to its content, a ``marker`` item continues the list, and a line at
        column 0 after a blank line that is no list marker ends it; the map runs to that line);
        0 when unsure."""
        lines, n = self.lines, self.n
        j = i
        while j < n:
            line = lines[j]
            if _blank(line):
                break
            if "]:" in line:
                return 0  # maybe a link reference definition inside
            c = line[0]
            if c == marker:
                if line[1:2] != " " or line[2:3] in ("", " ", "\t", marker):
                    return 0
            elif c not in " \t" or _indent(line) < 2:
                return 0
            j += 1
        b = j
        while b < n and _blank(lines[b]):
            b += 1
        if b < n and lines[b][0] in _BOUNDARY_BAD:
            return 0
        self.out.append(("bullet_list_open", i, b, None))
        return b

    def _code(self, i: int) -> int:
        lines, n = self.lines, self.n
        code_line = _CODE_LINE.match
        last = j = i + 1
        while j < n:
            line = lines[j]
            if code_line(line):
                j += 1
                last = j
            elif _blank(line):
                j += 1
            else:
                break
        self.out.append(("code_block", i, last, None))
        return last

    def _table(self, i: int) -> int:
        """A table whose header row is line i (column 0), whose delimiter row is line i + 1, and
        whose body rows all start with ``|`` at column 0, up to a blank line or the end (GFM 4.10;
        markdown-it ``table``: the delimiter row's cells give the column count, which the header
        row must match; a row starting with ``|`` is no terminator, code or empty line, so it is a
        row); 0 when unsure (rows without a leading ``|`` go to markdown-it)."""
        lines, n = self.lines, self.n
        delim = lines[i + 1]
        if _indent(delim) >= 4:
            return 0
        d = delim.lstrip(" \t")
        if len(d) < 2 or d[0] not in "|-:" or d[1] not in "|-: \t" or (d[0] == "-" and d[1] in " \t") or d.strip("|-: \t"):
            return 0
        cells = d.split("|")
        aligns = 0
        for k, cell in enumerate(cells):
            t = mdTrim(cell)
            if not t:
                if k == 0 or k == len(cells) - 1:
                    continue
                return 0
            if not _DELIM_CELL.match(t):
                return 0
            aligns += 1
        head = mdTrim(lines[i])
        if "|" not in head:
            return 0
        columns = escapedSplit(head)
        if columns and columns[0] == "":
            columns.pop(0)
        if columns and columns[-1] == "":
            columns.pop()
        if not columns or len(columns) != aligns:
            return 0
        j = i + 2
        while j < n and lines[j][:1] == "|":
            j += 1
        if j < n and not _blank(lines[j]) or aligns * (j - i - 2) > MAX_AUTOCOMPLETED_CELLS:
            return 0
        self.out.append(("table_open", i, j, None))
        return j

    def _fence(self, i: int, fence: str) -> int:
        lines, n = self.lines, self.n
        j = i + 1
        while j < n:
            if _fence_closes(lines[j], fence):
                self.out.append(("fence", i, j + 1, None))
                return j + 1
            j += 1
        self.out.append(("fence", i, n, None))
        return n

    def _html(self, i: int, k: int) -> int:
        lines, n = self.lines, self.n
        end_re = HTML_SEQUENCES[k][1]
        j = i + 1
        if not end_re.search(lines[i]):
            while j < n:
                text = lines[j].lstrip(" \t")
                if end_re.search(text):
                    if text:
                        j += 1
                    break
                j += 1
        self.out.append(("html_block", i, j, None))
        return j

    def _paragraph(self, i: int, emit: bool = True) -> int:
        """A paragraph from line i (column 0, no other block starts there); its end line, or 0
        when unsure. With ``emit`` False only the end line is found."""
        lines, n = self.lines, self.n
        j = i + 1
        while j < n:
            line = lines[j]
            if not line or line[0] in " \t":
                if not line.strip(" \t"):  # blank
                    break
                if _CODE_LINE.match(line):  # indented >= 4 columns: lazy continuation, never a terminator
                    j += 1
                    continue
                return 0
            after = lines[j + 1] if j + 1 < n else ""
            if after[:1] in _DELIM_START and _MAYBE_DELIM.match(after):  # maybe a table's delimiter row
                return 0
            c = line[0]
            if c == "#":
                if _heading_level(line):
                    break
            elif c in "`~":
                if _fence_open(line):
                    break
            elif c == "<":
                k = _html_seq(line)
                if k >= 0 and HTML_SEQUENCES[k][2]:
                    break
            elif c in "-=>+*_" and not _plain(line) or (c.isdigit() and _ORDERED.match(line)):
                return 0
            j += 1
        if emit:
            self.out.append(("paragraph_open", i, j, mdTrim("\n".join(lines[i:j]))))
        return j

    def _fallback(self, a: int, i: int) -> int:
        """markdown-it over lines a .. the next region boundary after line i; the boundary."""
        lines, n = self.lines, self.n
        b = i + 1
        while b < n and not (lines[b] and lines[b][0] not in _BOUNDARY_BAD and _blank(lines[b - 1])):
            b += 1
        md = self.md if a == 0 else self.region_md  # front matter only starts line 0
        saved = {k: v.copy() if isinstance(v, dict | list) else v for k, v in self.env.items()}
        region = markdown_it_blocks(md, "\n".join(lines[a:b]) + "\n", self.env, a)
        if b < n and region and region[-1][0] in ("fence", "html_block") and region[-1][2] == b:
            self.env.clear()  # as before the region: it is read again, to the end
            self.env.update(saved)
            region = markdown_it_blocks(md, "\n".join(lines[a:]), self.env, a)
            b = n
        self.out.extend(region)
        return b
