"""Markup left in chunk text that a reader of the rendered page never sees (issue 38): a counter
over the text of chunks, used by tests/test_leftovers.py on every shared corpus.

Counted outside code (fenced blocks and inline code spans are removed first):

* ``role``: a reStructuredText/Sphinx role still written as markup (``:class:`Flask```,
  ``:ref:`x```), any ``:name:`text``` (docutils' interpreted text with a role prefix);
* ``role_dot`` (rst): a role's target shown half-rendered, with the leading ``.`` or ``~`` Sphinx drops
  (``.UniqueConstraint`` from ``:class:`~.UniqueConstraint```);
* ``directive``: a ``.. name::`` directive line;
* ``literal_colon`` (rst): a line ending ``.:`` / ``?:`` / ``!:``, what docutils leaves of a ``::``
  literal-block marker after sentence punctuation (``instead.:``);
* ``anchor``: an HTML ``<a name=…>`` / ``<a id=…>`` anchor;
* ``shortcode``: a raw Hugo shortcode call (``{{< name >}}``, ``{{% name %}}``);
* ``component`` (not rst): an MDX/JSX component tag (``<Tip>``, ``</Steps>``, ``<Card title=…/>``).

And, in code: ``unlabelled_fence``: a fence with no language in text read from
reStructuredText (Sphinx highlights every literal block: ``highlight_language``, default
``python`` with a fallback; ``counts(text, rst=True)``).
"""

from __future__ import annotations

import re
from collections import Counter

FENCE = re.compile(r"^(`{3,}|~{3,})")
QUOTE = re.compile(r"^(?:[ \t]*>[ \t]?)+")
INLINE_CODE = re.compile(r"(?<!:)(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
PATTERNS = {
    "role": re.compile(r"(?<![\w`]):(?:[A-Za-z][\w.+-]*:)*[A-Za-z][\w.+-]*:`[^`\n]+`"),
    "role_dot": re.compile(r"(?:^|(?<=[\s(\[]))[~.][A-Z_][\w]*(?:\.\w+)*(?=[\s,.;:)\]]|$)", re.MULTILINE),
    "directive": re.compile(r"^\s*(?:>\s*)*\.\.\s+[\w][\w:.+-]*::", re.MULTILINE),
    "literal_colon": re.compile(r"[.?!]:[ \t]*$", re.MULTILINE),
    "anchor": re.compile(r"<a\s+(?:name|id)\s*=", re.IGNORECASE),
    "shortcode": re.compile(r"\{\{[<%]"),
    "component": re.compile(r"</?[A-Z][A-Za-z0-9]*(?:\.[A-Za-z0-9]+)*(?=[\s/>])[^<>]*>"),
}
KINDS = (*PATTERNS, "unlabelled_fence")


def split_code(text: str) -> tuple[str, list[str]]:
    """(prose, fence openers): ``text`` with fenced blocks dropped and inline code spans removed,
    and the opening line of every fence. A fence opens at any indentation (list items, block
    quotes) and closes, as in CommonMark, with a run of its character at least as long, indented at
    most three columns (or, in a list item, as deep as its opener); a deeper one is content."""
    prose: list[str] = []
    openers: list[str] = []
    fence, indent = "", 0
    for line in text.split("\n"):
        bare = QUOTE.sub("", line)
        m = FENCE.match(bare.lstrip())
        width = len(bare) - len(bare.lstrip())
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and width <= max(3, indent):
                if not bare.strip()[len(m.group(1)) :].strip():
                    fence = ""
            continue
        if m:
            fence, indent = m.group(1), width
            openers.append(bare.strip())
            continue
        prose.append(line)
    return INLINE_CODE.sub(" ", "\n".join(prose)), openers


def counts(text: str, rst: bool = False) -> Counter:
    """kind -> how many leftovers of that kind ``text`` holds (see the module docstring)."""
    prose, openers = split_code(text)
    out: Counter = Counter({kind: len(PATTERNS[kind].findall(prose)) for kind in kinds(rst) if kind in PATTERNS})
    if rst:
        out["unlabelled_fence"] = sum(1 for o in openers if not o.lstrip("`~").strip())
    return +out


def kinds(rst: bool) -> tuple[str, ...]:
    """The kinds counted in text read from reStructuredText (``rst``) or from Markdown/MDX/
    AsciiDoc: ``role_dot``, ``literal_colon`` and ``unlabelled_fence`` are rst's (a Markdown
    author's ``.NET`` or ``etc.:`` is what the page shows), ``component`` is MDX's (``<NAME>``
    in rst prose is literal text)."""
    return tuple(k for k in KINDS if (k in RST_ONLY) <= rst and not (rst and k == "component"))


RST_ONLY = ("role_dot", "literal_colon", "unlabelled_fence")


def examples(text: str, kind: str) -> list[str]:
    """The leftovers of ``kind`` in ``text`` (for messages)."""
    prose, openers = split_code(text)
    if kind == "unlabelled_fence":
        return [o for o in openers if not o.lstrip("`~").strip()]
    return [m.group(0) for m in PATTERNS[kind].finditer(prose)]
