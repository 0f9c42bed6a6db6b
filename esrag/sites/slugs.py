"""Header anchors as each documentation generator makes them: one slug function and one
duplicate rule per generator, implemented from the generators' own sources.

Every function takes the header's *rendered* text: inline markup removed the way the generators
render it (code-span content kept, emphasis markers and link URLs dropped, raw HTML tags
dropped) — :func:`esrag.formats.markdown_blocks.header_title` produces exactly that text.

=============  =========================================================  ===================
generator      slug of one header                                          duplicates
=============  =========================================================  ===================
mkdocs         Python-Markdown ``toc.slugify`` (markdown 3.x): NFKD to      ``_1``, ``_2``
               ASCII, drop ``[^\\w\\s-]``, strip, lowercase, runs of        (``toc.unique``)
               whitespace/``-`` -> ``-``
mdbook         mdBook ``utils::normalize_id`` (0.4): keep alphanumerics,   ``-1``, ``-2``
               ``_``, ``-`` (ASCII-lowercased), whitespace -> ``-``         (``unique_id_from_content``)
sphinx         docutils ``nodes.make_id`` (0.21): lowercase, Latin          ``id1``, ``id2``
               letters with strokes/digraphs translated, NFKD to ASCII,     (Sphinx's
               runs of ``[^a-z0-9]`` -> ``-``, leading digits/``-`` and     ``auto_id_prefix``)
               trailing ``-`` dropped
github,        github-slugger 2.0 (GitHub's own rule): lowercase, remove    ``-1``, ``-2``
docusaurus     every character that is not a letter, mark, decimal/letter  (``BananaSlug``)
               number, connector punctuation, ``-`` or space; space -> ``-``
hugo           Hugo ``sanitizeAnchorName`` with ``autoHeadingIDType =       ``-1``, ``-2``
               "github"`` (goldmark autoid.go): ``-``/space/tab -> ``-``,   (``idFactory``),
               keep ``_``, letters, digits (lowercased), drop the rest      empty -> ``heading``
=============  =========================================================  ===================

Explicit ids (``{#id}``, ``<a name="id">``, a docutils section id) always win and take part in
the duplicate counting as each generator does it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

# -- Python-Markdown (MkDocs) ----------------------------------------------------------------
_IDCOUNT_RE = re.compile(r"^(.*)_([0-9]+)$")


def mkdocs_slug(value: str, separator: str = "-") -> str:
    """Python-Markdown ``markdown.extensions.toc.slugify`` (markdown 3.x, the MkDocs default)."""
    value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(rf"[{separator}\s]+", separator, value)


def mkdocs_unique(slug: str, used: set[str]) -> str:
    """Python-Markdown ``toc.unique``: append ``_1``, ``_2``… (bumping an existing ``_N``)."""
    while slug in used or not slug:
        m = _IDCOUNT_RE.match(slug)
        slug = f"{m.group(1)}_{int(m.group(2)) + 1}" if m else f"{slug}_1"
    used.add(slug)
    return slug


# -- mdBook ----------------------------------------------------------------------------------
def mdbook_slug(value: str) -> str:
    """mdBook ``utils::id_from_content`` + ``normalize_id``: trim, drop leading ``#``, keep
    alphanumerics, ``_`` and ``-`` (``to_ascii_lowercase``: only ASCII letters are lowercased),
    whitespace -> ``-``, everything else dropped."""
    value = value.strip().lstrip("#").strip()
    out = []
    for ch in value:
        if ch.isalnum() or ch in "_-":
            out.append(ch.lower() if ch.isascii() else ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


# -- docutils (Sphinx) ------------------------------------------------------------------------
_NON_ID_CHARS = re.compile("[^a-z0-9]+")
_NON_ID_AT_ENDS = re.compile("^[-0-9]+|-+$")
_NON_ID_TRANSLATE = {
    248: "o",
    273: "d",
    295: "h",
    305: "i",
    322: "l",
    359: "t",
    384: "b",
    387: "b",
    392: "c",
    396: "d",
    402: "f",
    409: "k",
    410: "l",
    414: "n",
    421: "p",
    427: "t",
    429: "t",
    436: "y",
    438: "z",
    485: "g",
    549: "z",
    564: "l",
    565: "n",
    566: "t",
    567: "j",
    572: "c",
    575: "s",
    576: "z",
    583: "e",
    585: "j",
    587: "q",
    589: "r",
    591: "y",
}
_NON_ID_TRANSLATE_DIGRAPHS = {223: "sz", 230: "ae", 339: "oe", 568: "db", 569: "qp"}
#: docutils' ``_non_id_translate`` tables, which Sphinx's ``_make_id`` uses too (public names).
NON_ID_TRANSLATE, NON_ID_TRANSLATE_DIGRAPHS = _NON_ID_TRANSLATE, _NON_ID_TRANSLATE_DIGRAPHS


def docutils_make_id(value: str) -> str:
    """docutils ``nodes.make_id`` (0.21): ids match ``[a-z](-?[a-z0-9]+)*``."""
    s = value.lower().translate(_NON_ID_TRANSLATE_DIGRAPHS).translate(_NON_ID_TRANSLATE)
    s = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode("ascii")
    s = _NON_ID_CHARS.sub("-", " ".join(s.split()))
    return _NON_ID_AT_ENDS.sub("", s)


# -- GitHub / Docusaurus (github-slugger) ----------------------------------------------------
_GH_KEEP = ("L", "M")


def github_slug(value: str) -> str:
    """github-slugger 2.0 ``slug`` (what GitHub renders; Docusaurus uses the same package):
    lowercase, then remove every character outside letters (L*), marks (M*), decimal and
    letter numbers (Nd, Nl), connector punctuation (Pc), ``-`` and the ASCII space; each
    space becomes ``-`` (runs are not collapsed)."""
    out = []
    for ch in value.lower():
        if ch == " ":
            out.append("-")
        elif ch == "-":
            out.append(ch)
        else:
            cat = unicodedata.category(ch)
            if cat[0] in _GH_KEEP or cat in ("Nd", "Nl", "Pc"):
                out.append(ch)
    return "".join(out)


def github_unique(slug: str, occurrences: dict[str, int]) -> str:
    """github-slugger ``BananaSlug.slug``'s duplicate rule: ``x``, ``x-1``, ``x-2``…"""
    original, result = slug, slug
    while result in occurrences:
        occurrences[original] += 1
        result = f"{original}-{occurrences[original]}"
    occurrences[result] = 0
    return result


# -- Hugo (goldmark, autoHeadingIDType "github") ---------------------------------------------
def hugo_slug(value: str) -> str:
    """Hugo ``markup/goldmark/autoid.go`` ``sanitizeAnchorName`` ("github" type) on the trimmed
    heading text: ``-``, space and tab -> ``-``; ``_``, letters and digits kept (lowercased)."""
    out = []
    for ch in value.strip():
        if ch in "- \t":
            out.append("-")
        elif ch == "_" or ch.isalpha() or unicodedata.category(ch) == "Nd":
            out.append(ch.lower())
    return "".join(out)


# -- anchors of a whole page: explicit ids and each generator's duplicate rule ----------------
def mkdocs_page_anchors(titles: Sequence[str], explicit: Sequence[str], slug: Callable[[str], str] = mkdocs_slug) -> list[str]:
    """MkDocs anchors of a page's headers with the ``toc`` slug function ``slug`` (mkdocs.yml
    ``markdown_extensions: toc: slugify``): explicit ids kept, the rest ``toc.unique``-d."""
    used = {e for e in explicit if e}  # toc collects every existing id first
    return [e or mkdocs_unique(slug(t), used) for t, e in zip(titles, explicit)]


def counter_page_anchors(slug: Callable[[str], str]) -> Callable[[Sequence[str], Sequence[str]], list[str]]:
    """The page rule ``x``, ``x-1``, ``x-2`` per slug with explicit ids counted (mdBook's
    ``id_counter``; github-slugger's occurrences; markdown-it-anchor's ``uniqueSlug``)."""

    def page(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
        occurrences: dict[str, int] = {}
        out = []
        for t, e in zip(titles, explicit):
            if e:
                occurrences.setdefault(e, 0)
                out.append(e)
            else:
                out.append(github_unique(slug(t), occurrences))
        return out

    return page


def hugo_ascii_slug(value: str) -> str:
    """Hugo's ``autoHeadingIDType = "github-ascii"``: accents removed (NFD, marks dropped), then
    the "github" rule keeping ASCII characters only."""
    value = "".join(ch for ch in unicodedata.normalize("NFD", value) if unicodedata.category(ch) != "Mn")
    return "".join(ch for ch in hugo_slug(value) if ch.isascii())


def blackfriday_slug(value: str) -> str:
    """Hugo's ``autoHeadingIDType = "blackfriday"`` (blackfriday ``SanitizedAnchorName``): letters
    and numbers lowercased, every run of other characters between them one ``-``."""
    out: list[str] = []
    dash = False
    for ch in value:
        if ch.isalpha() or unicodedata.category(ch)[0] == "N":
            if dash and out:
                out.append("-")
            dash = False
            out.append(ch.lower())
        else:
            dash = True
    return "".join(out)


def hugo_page_anchors(titles: Sequence[str], explicit: Sequence[str], slug: Callable[[str], str] = hugo_slug) -> list[str]:
    """Hugo (goldmark ``idFactory``): explicit ids kept, ``-1``, ``-2`` for repeats, an empty
    slug is ``heading``."""
    vals = {e for e in explicit if e}
    out = []
    for t, e in zip(titles, explicit):
        if e:
            out.append(e)
            continue
        base = slug(t) or "heading"
        cand, i = base, 1
        while cand in vals:
            cand, i = f"{base}-{i}", i + 1
        vals.add(cand)
        out.append(cand)
    return out


def sphinx_page_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """docutils ``document.set_id`` with Sphinx's ``auto_id_prefix`` ``id``: a slug already used
    (or empty) becomes ``id1``, ``id2``…"""
    ids: set[str] = {e for e in explicit if e}
    counter = 0
    out = []
    for t, e in zip(titles, explicit):
        if e:
            out.append(e)
            continue
        cand = docutils_make_id(t)
        if not cand or cand in ids:
            while True:
                counter += 1
                cand = f"id{counter}"
                if cand not in ids:
                    break
        ids.add(cand)
        out.append(cand)
    return out


#: github-slugger anchors of a page (GitHub, Docusaurus, Starlight).
github_page_anchors = counter_page_anchors(github_slug)


def nbconvert_header_id(value: str) -> str:
    """nbconvert's id of a Markdown cell's heading (``nbconvert/filters/strings.py``
    ``add_anchor`` / ``_convert_header_id``): the heading's text with each space as ``-``, case
    and punctuation kept (mkdocs-jupyter's default ``markdown_cell_processor: jupyter``)."""
    return value.replace(" ", "-")


def nbconvert_page_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """A notebook page's heading ids as nbconvert renders them: explicit ids win, repeats are
    not numbered (``add_anchor`` sets the id of each heading on its own)."""
    return [e or nbconvert_header_id(t) for t, e in zip(titles, explicit)]
