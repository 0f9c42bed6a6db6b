"""Down-weighting pages that compete with the prose that answers: changelogs / release notes and
generated API reference stubs (``[corpora.NAME] demote``).

A release-notes page mentions every feature once per release, and a generated reference page
(mkdocstrings ``::: fastapi.Response``, Sphinx ``.. autoclass::``) repeats an API's name and
its member list: both match many queries lexically and semantically while rarely holding the
explanation. A hit is **demoted** when its source path matches one of the corpus's
``patterns`` (gitignore-style, :mod:`pathspec`, matched case-insensitively against the path
inside the corpus) or, with ``api_stubs`` on, when its text is a generated reference stub
(:func:`is_api_stub`). A demoted hit's fused score is multiplied by ``weight`` (0 < weight <= 1;
a negative score is divided by it, so it falls too) and the hits are re-sorted, stable for ties.
Nothing is removed.

Rank fusion scores are ``sum 1/(rrf_k + rank)``: with ``rrf_k`` = 60 and weight 0.5, a hit
ranked first by both legs (2/61) scores as one ranked first by one leg only (1/61).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import replace

import pathspec

from esrag.model import Hit

# mkdocstrings' identifier line (``::: package.module.Name``, mkdocstrings' ``AutoDocProcessor``
# regex ``^(?P<heading>#{1,6} *|)::: ?(?P<name>.+?) *$``), here only with a dotted Python path,
# so that Docusaurus / MyST admonitions (``:::tip``, ``:::note Title``) are not taken for one.
# Sphinx autodoc directives (``.. autoclass:: flask.Flask``) leave only their argument in a
# chunk's text (esrag.formats.rst), so Sphinx API pages are demoted by path (``patterns``).
_MKDOCSTRINGS = re.compile(r"^(?:#{1,6} *)?::: ?[A-Za-z_]\w*(?:\.\w+)+ *$")


def is_api_stub(text: str) -> bool:
    """True when ``text`` holds a generated API reference directive, a mkdocstrings line
    ``::: package.module.Name`` (a dotted path): the page shows generated reference there, not
    prose. (Sphinx autodoc pages are matched by path: see ``patterns``.)"""
    return any(_MKDOCSTRINGS.match(line) for line in text.split("\n"))


@functools.lru_cache(maxsize=128)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitignore", [p.lower() for p in patterns])


def demoted(source_path: str, text: str, patterns: tuple[str, ...], api_stubs: bool) -> bool:
    """Whether a chunk at ``source_path`` with ``text`` is demoted under these settings."""
    if patterns and _spec(patterns).match_file(source_path.lower()):
        return True
    return api_stubs and is_api_stub(text)


def apply_demotion(hits: list[Hit], rule_for: Callable[[Hit], tuple[tuple[str, ...], bool, float] | None]) -> list[Hit]:
    """``hits`` re-sorted after multiplying the score of each demoted hit by its weight.

    Args:
        hits: ranked hits, best first.
        rule_for: a hit's ``(patterns, api_stubs, weight)`` (its corpus's ``demote``), or None
            when its corpus demotes nothing.

    Returns:
        The hits, best first (demoted ones as new hits with the new score and
        ``chunk.metadata["demoted"]`` = the weight; the given hits are not changed); the order of
        hits not demoted is unchanged.
    """
    out: list[Hit] = []
    changed = False
    for h in hits:
        rule = rule_for(h)
        if rule is None or rule[2] >= 1.0 or not demoted(h.chunk.source_path, h.chunk.text, rule[0], rule[1]):
            out.append(h)
            continue
        w = rule[2]
        score = h.score * w if h.score >= 0 else h.score / w
        out.append(Hit(replace(h.chunk, metadata={**h.chunk.metadata, "demoted": w}), score, h.legs, h.expanded_from))
        changed = True
    if not changed:
        return hits
    return sorted(out, key=lambda h: -h.score)
