"""YAML (``---``) and TOML (``+++``) front matter of Markdown pages.

The keys esrag reads: ``title`` (the document title), ``description`` and ``tags`` (kept in the
chunk metadata), ``slug`` / ``id`` / ``permalink`` / ``url`` (the page URL, see
:meth:`esrag.sites.Site.page_path`), and ``draft`` / ``unlisted`` (a true value leaves the page out of
the index; the ingest summary lists it as skipped).
"""

from __future__ import annotations

import tomllib
from typing import Any

import yaml

from esrag.errors import SourceError

_FENCES = {"---": ("---", "..."), "+++": ("+++",)}


def split_front_matter(text: str) -> tuple[str, str, int] | None:
    """``(kind, body, end_line)`` of the front matter opening ``text`` (kind ``yaml`` or
    ``toml``; ``end_line`` 1-based, the closing fence), or None when there is none."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    opener = lines[0].rstrip() if lines else ""
    if opener not in _FENCES:
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FENCES[opener]:
            return ("yaml" if opener == "---" else "toml"), "\n".join(lines[1:i]), i + 1
    return None


def lift_front_matter(text: str) -> str:
    """``text`` with the whitespace-only lines before its front matter moved to just after it, so
    that the front matter opens the file and every line after it keeps its number; ``text``
    unchanged when no front matter follows its leading blank lines. For generators that accept
    them (Astro ``@astrojs/markdown-remark`` ``frontmatterRE``: ``(?:^\\uFEFF?|^\\s*\\n)---``)."""
    lines = text.split("\n")
    k = 0
    while k < len(lines) - 1 and not lines[k].strip():
        k += 1
    if k == 0:
        return text
    found = split_front_matter("\n".join(lines[k:]))
    if found is None:
        return text
    end = found[2]  # 1-based line of the closing fence within lines[k:]
    return "\n".join(lines[k : k + end] + lines[:k] + lines[k + end :])


def parse_front_matter(text: str, path: str) -> dict[str, Any]:
    """The front matter of a page as a dict ({} when the page has none).

    Raises:
        SourceError: the front matter is not valid YAML/TOML or not a mapping; the message
            names the file and the line (counted in the file) where parsing failed.
    """
    found = split_front_matter(text)
    if found is None:
        return {}
    kind, body, _ = found
    try:
        data = yaml.safe_load(body) if kind == "yaml" else tomllib.loads(body)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise SourceError(path, f"front matter is not valid YAML{where}: {problem}; fix it or remove the --- block") from None
    except tomllib.TOMLDecodeError as exc:
        raise SourceError(path, f"front matter is not valid TOML: {exc}; fix it or remove the +++ block") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SourceError(path, f"front matter is a YAML {type(data).__name__}, not a mapping of keys to values")
    return data


def is_hidden(front: dict[str, Any]) -> str:
    """``"draft"`` or ``"unlisted"`` when the front matter hides the page, else ''."""
    for key in ("draft", "unlisted"):
        value = front.get(key)
        if value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes")):
            return key
    return ""
