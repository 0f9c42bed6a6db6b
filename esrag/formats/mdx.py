"""MDX read as Markdown: what a reader sees without the code around it.

MDX (mdxjs.com, MDX 2/3) adds to Markdown ESM blocks (``import``/``export`` at the start of a
line, up to the next blank line), JSX elements (``<Tabs>``, ``<TabItem value="x">``,
``</Tabs>``, ``<Note />``, fragments ``<>``/``</>``) and expressions (``{/* comment */}``).
:func:`blank_code_lines` replaces ESM lines, lines made only of JSX tags (capitalised
components or fragments, possibly spread over several lines) and lines made only of
``{…}`` expressions with empty lines, outside fenced code. Line numbers stay as they are, and
text between tags (``<Tab>Python</Tab>`` keeps ``Python``… as a line with text) stays.
"""

from __future__ import annotations

import re

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
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
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
        elif _JSX_OPEN.match(line):  # <Component\n  prop="x"\n/> : blank through the closing '>'
            j = i
            while j < len(lines) and ">" not in lines[j]:
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith(">") and "<" not in lines[j][: lines[j].find(">")].lstrip("/"):
                for k in range(i, j + 1):
                    lines[k] = ""
                i = j
        i += 1
    return "\n".join(lines)


def _front_matter_end(lines: list[str]) -> int:
    if lines and lines[0].strip() == "---":
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                return j + 1
    return 0
