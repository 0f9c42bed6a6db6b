"""GitBook's ``{% … %}`` blocks turned into the text a reader sees, line for line.

GitBook's Git Sync writes its blocks as Liquid-like tags around Markdown (GitBook docs, "Blocks"
and "Markdown" pages of ``GitbookIO/public-docs``, ``documentation/create-content/blocks/*.md``).
Each tag is rewritten in place, so the text keeps its line count and every line its source line:

* containers show their body, the tags nothing: ``hint``, ``tabs``, ``stepper``/``step``,
  ``columns``/``column``, ``updates``, ``prompt``, ``if``, ``content-ref`` (its body is the link,
  whose text is what a reader sees), and every ``end…`` tag;
* a tag whose title a reader sees shows it: ``{% tab title="…" %}``, ``{% code title="…" %}``
  (the fence inside stays code), ``{% update date="…" %}``;
* an embed shows its URL (``{% embed url="…" %}``; a caption body stays), a file its ``src``;
* API blocks are named: ``{% openapi src path method %}``, ``{% swagger … %}``,
  ``{% openapi-operation spec path method %}`` -> ``API operation: GET /path``;
  ``{% openapi-schemas schemas="A,B" %}`` -> ``API schemas: A,B``;
* ``{% include "…" %}`` (reusable content) shows nothing: the included block is not resolved.

Tags inside fenced code blocks are what the page shows (GitBook's own docs show examples that
way) and are left alone.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"\{%\s*(end)?([\w-]+)((?:[^%]|%(?!\}))*)%\}")
_ATTR = re.compile(r"""([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S+))""")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_TITLED = {"tab": "title", "code": "title", "update": "date"}
_API = ("openapi", "swagger", "openapi-operation")


def _attrs(raw: str) -> dict[str, str]:
    """``key="value"`` pairs of a tag's arguments."""
    return {m.group(1): next(g for g in m.groups()[1:] if g is not None) for m in _ATTR.finditer(raw)}


def _shown(match: re.Match[str]) -> str:
    """What a reader sees in place of one tag ('' for most)."""
    end, name, raw = match.group(1), match.group(2), match.group(3)
    if end:
        return ""
    attrs = _attrs(raw)
    if name in _TITLED:
        return attrs.get(_TITLED[name], "")
    if name == "embed":
        return attrs.get("url", "")
    if name == "file":
        return attrs.get("src", "").rsplit("/", 1)[-1]
    if name in _API:
        method, path = attrs.get("method", "").upper(), attrs.get("path", "")
        return f"API operation: {method} {path}".rstrip() if path else "API operation"
    if name == "openapi-schemas":
        return f"API schemas: {attrs.get('schemas', '')}".rstrip()
    return ""


def _line(line: str) -> str:
    """One line with its tags rewritten; a line holding only tags becomes blank or the shown text."""
    out = _TAG.sub(_shown, line)
    return out if out.strip() else ""


def rewrite(text: str) -> str:
    """``text`` (``\\n`` line endings) with GitBook's block tags outside code fences replaced by
    what a reader sees (see the module docstring); same number of lines."""
    lines = text.split("\n")
    fence = ""
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)) :].strip():
                fence = ""
            continue
        if m:
            fence = m.group(1)
            continue
        if "{%" in line:
            lines[i] = _line(line)
    return "\n".join(lines)
