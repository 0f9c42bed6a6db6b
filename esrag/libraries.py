"""Find the corpora a library name names, as a user writes it (``resolve_library``, ``GET /corpora?q=``).

"django", "Django 5", "react router v6", "react-router", "Next.js 14": the name is split into
words (case, punctuation and ``@`` ignored) and its version words (``5``, ``v6``, ``5.1``,
``11.x``) are set apart. Each corpus is known by its name and its ``[corpora.NAME] aliases``
(:class:`esrag.config.CorpusSettings`); the best of these scores the corpus:

* 1.0 when the words run together are the same (``react-router`` = ``React Router`` = ``ReactRouter``);
* else the share of words in common (Dice), or a contained name ("router" in "react-router") by
  its share of the letters, or difflib's ratio for a misspelling, whichever is highest;
* the ``description``, by the share ``s`` of the name's words it holds: 0.6 s when no name
  matches (every word in it: 0.6, returned), else a tie-breaker of 0.05 s.

A synced source's site says more of itself (:func:`esrag.sync_state.site_titles`): its title
(MkDocs ``site_name``, Docusaurus ``title``, mdBook ``book.title``, Sphinx ``project``…) counts
as one more name, and its description (``site_description``, ``tagline``…) as the
``description`` when the configuration sets none.

Corpora scoring at least :data:`MIN_SCORE` are returned best first; a version in the name picks
the corpus's versions equal to it or under it (``5`` -> ``5.0``, ``5.1``; ``v6`` -> ``6.x``),
newest first, and a corpus holding such a version ranks 0.05 higher.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from esrag.config import CorpusSettings, Settings

MIN_SCORE = 0.55
"""The least score of a corpus returned (scores run 0-1.1)."""

_VERSION = re.compile(r"^v?(\d+(?:\.(?:\d+|x))*)$", re.I)


def split_name(name: str) -> tuple[list[str], str | None]:
    """``(words, version)`` of a library name: lowercased words without punctuation and the
    first version word without its ``v`` (``"React Router v6"`` -> ``(["react", "router"], "6")``)."""
    words: list[str] = []
    version: str | None = None
    for word in re.split(r"[^0-9a-z.]+", name.lower()):
        word = word.strip(".")
        m = _VERSION.match(word)
        if m and version is None and words:  # a leading number is part of the name ("3d-tiles")
            version = m.group(1).removesuffix(".x")
        elif word:
            words.extend(w for w in word.split(".") if w)
    return words, version


def _version_key(version: str) -> tuple:
    """Newest-last order of versions: numbers compared as numbers, a leading ``v`` ignored, words before numbers."""
    return tuple(int(p) if p.isdigit() else -1 for p in re.findall(r"\d+|[a-z]+", version.lower().removeprefix("v")))


def matching_versions(versions: list[str], wanted: str) -> list[str]:
    """The ``versions`` equal to ``wanted`` or under it (``5`` matches ``5``, ``v5``, ``5.1``,
    ``5.x``, not ``50``), newest first."""
    out = []
    for v in versions:
        plain = v.lower().removeprefix("v").removesuffix(".x")
        if plain == wanted or plain.startswith(wanted + "."):
            out.append(v)
    return sorted(out, key=_version_key, reverse=True)


def _name_score(words: list[str], candidate: str) -> float:
    cand = split_name(candidate)[0] or [candidate.lower()]
    joined, cjoined = "".join(words), "".join(cand)
    if not joined or not cjoined:
        return 0.0
    if joined == cjoined:
        return 1.0
    common = len(set(words) & set(cand))
    dice = 2 * common / (len(set(words)) + len(set(cand)))
    contained = 0.0
    if min(len(joined), len(cjoined)) >= 3 and (joined in cjoined or cjoined in joined):
        contained = 0.9 * min(len(joined), len(cjoined)) / max(len(joined), len(cjoined))
    fuzzy = difflib.SequenceMatcher(None, joined, cjoined).ratio()
    return max(dice, contained, fuzzy if fuzzy >= 0.8 else 0.0)


def resolve_library(
    settings: Settings,
    corpora: Mapping[str, Mapping[str, Any]],
    name: str,
    limit: int = 10,
    sites: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The corpora ``name`` may mean, best first (at most ``limit``).

    Args:
        settings: for each corpus's ``aliases`` and ``description``.
        corpora: ``{corpus: {"versions": {version: ...}, "default_version", ...}}`` as
            :meth:`esrag.service.SearchService.corpora` gives them (only those the caller may read).
        name: the library as the user wrote it.
        sites: ``{corpus: {"title", "description"}}``, what each corpus's site configuration
            says of itself (:func:`esrag.sync_state.site_titles`).

    Returns:
        ``[{"corpus", "score", "matched", "versions", "default_version", "version"?,
        "description"?, "aliases"?, "title"?}]``: ``matched`` is the name, alias or site title
        that matched (or ``"description"``); ``versions`` the corpus's versions, newest first,
        those matching a version in ``name`` first; ``version`` the best of those ('' =
        unversioned corpus); ``title`` the site's own title.
    """
    words, wanted = split_name(name)
    if not words:
        return []
    out = []
    for corpus, row in corpora.items():
        cs = settings.corpora.get(corpus) or CorpusSettings()
        site = (sites or {}).get(corpus, {})
        title = site.get("title", "")
        description = cs.description or site.get("description", "")
        names = [corpus, *cs.aliases, *([title] if title else [])]
        score, matched = max(((_name_score(words, n), n) for n in names), key=lambda t: t[0])
        if description:
            described = set(split_name(description)[0])
            share = sum(w in described for w in words) / len(words)
            if score >= MIN_SCORE:
                score += 0.05 * share  # a tie-breaker between names that match alike
            elif 0.6 * share > score:
                score, matched = 0.6 * share, "description"
        versions = sorted((v for v in row.get("versions", {}) if v), key=_version_key, reverse=True)
        picked = matching_versions(versions, wanted) if wanted else []
        if picked:
            score += 0.05
        if score < MIN_SCORE:
            continue
        hit: dict[str, Any] = {
            "corpus": corpus,
            "score": round(score, 3),
            "matched": matched,
            "versions": picked + [v for v in versions if v not in picked],
            "default_version": row.get("default_version"),
        }
        if picked:
            hit["version"] = picked[0]
        if description:
            hit["description"] = description
        if cs.aliases:
            hit["aliases"] = list(cs.aliases)
        if title:
            hit["title"] = title
        out.append(hit)
    out.sort(key=lambda h: (-h["score"], h["corpus"]))
    return out[:limit]
