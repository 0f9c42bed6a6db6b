"""Whole pages: a source file reassembled from its indexed chunks, in order, with its title,
URL and sections (anchors, URLs, line spans) — what ``esrag page``, the HTTP API and the MCP
"fetch the page" tool return, so an agent can read the full context of a hit.

Three more jobs live here, shared by every surface:

* **Finding the page** an agent names (:func:`find_page`): a source path as indexed, the same
  path with or without the docs root prefix (``release-notes.md`` for
  ``docs/en/docs/release-notes.md``), or the page's published URL with or without its
  ``#anchor`` (the URL a search hit carries). A miss raises :class:`PageNotFound` naming the
  nearest indexed paths.
* **Choosing the version** (:func:`pick_version`): the one asked for, else the corpus's default
  version (``[corpora.NAME] default_version``, else the most recently ingested), else the most
  recent version that holds the page. The page says which one it is.
* **A window that fits a budget** (:func:`page_window`): one section (by anchor or section
  path) or the text from a line offset, cut at a block boundary (never mid-line) to a number of
  cl100k tokens (:func:`esrag.search.budget.fit_text`, the one fitting rule), with what was left out and where to continue.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from esrag.errors import ConfigError, PageNotFound
from esrag.model import SECTION_SEPARATOR, Chunk
from esrag.search.budget import fit_text
from esrag.stores.base import PageListing, PageRef, Store
from esrag.tokens import count_tokens

__all__ = [
    "Page",
    "PageNotFound",
    "PageRef",
    "PageWindow",
    "Section",
    "find_page",
    "get_page",
    "page_window",
    "pick_version",
    "read_page",
    "reassemble",
]


@dataclass(slots=True)
class Section:
    """One chunk of a page: its section path, anchor, URL, line span, source text and the
    section's other URLs (``alt_urls``, :attr:`esrag.model.Chunk.alt_urls`)."""

    section_path: str
    anchor: str
    url: str
    start_line: int
    end_line: int
    text: str
    tokens: int = -1  # cl100k tokens of ``text`` (-1: not known, counted when needed)
    alt_urls: list[str] = field(default_factory=list)

    def token_count(self) -> int:
        """cl100k tokens of ``text`` (the stored count when known)."""
        if self.tokens < 0:
            self.tokens = count_tokens(self.text)
        return self.tokens


def section_count(sections: Sequence[Section]) -> int:
    """How many sections of the page ``sections`` (chunks in page order) hold: a section cut
    into several chunks counts once (a run of chunks with one section path and anchor)."""
    count, last = 0, None
    for s in sections:
        if (s.section_path, s.anchor) != last:
            count, last = count + 1, (s.section_path, s.anchor)
    return count


@dataclass(slots=True)
class Page:
    """A page as indexed. ``url`` is the page URL without anchor ('' when none is known);
    ``text`` is the source reassembled from the chunks (blank lines between chunks restored
    from their line spans). ``versions`` are the documentation versions of the corpus that
    hold this page ('' = unversioned), ``doc_version`` the one returned; ``metadata`` the page's
    chunk metadata (not part of :meth:`to_dict`)."""

    source_path: str
    corpus: str
    doc_version: str
    title: str
    url: str
    sections: list[Section] = field(default_factory=list)
    text: str = ""
    versions: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # the first chunk's (front matter ``description``, ``translation``, ...)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (a contract of ``esrag page --json``, the HTTP API and MCP)."""
        return {
            "source_path": self.source_path,
            "corpus": self.corpus,
            "doc_version": self.doc_version or None,
            "title": self.title,
            "url": self.url or None,
            "sections": [
                {
                    "section_path": s.section_path,
                    "anchor": s.anchor or None,
                    "url": s.url or None,
                    "alt_urls": list(s.alt_urls),
                    "start_line": s.start_line,
                    "end_line": s.end_line,
                    "text": s.text,
                }
                for s in self.sections
            ],
            "text": self.text,
        }


def reassemble(chunks: Sequence[Chunk | Section]) -> str:
    """The source text of consecutive chunks of one file (sorted by position): chunk texts
    joined by as many newlines as their line spans call for."""
    parts: list[str] = []
    prev_end = None
    for c in chunks:
        if prev_end is not None:
            gap = max(c.start_line - prev_end - 1, 0)
            parts.append("\n" * (gap + 1))
        parts.append(c.text)
        prev_end = c.end_line
    return "".join(parts)


# -- finding the page ---------------------------------------------------------------------------
def _clean_path(path: str) -> str:
    return unquote(path.strip()).removeprefix("./").lstrip("/")


def _url_key(url: str) -> str:
    """A published URL compared loosely: no scheme, query or anchor; no ``index.html`` or
    ``.html`` suffix; no trailing slash; lower-case host."""
    parts = urlsplit(url.strip())
    path = unquote(parts.path)
    for suffix in ("/index.html", "/index.htm", ".html", ".htm"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    return f"{parts.netloc.lower()}{path.rstrip('/')}"


def is_url(path: str) -> bool:
    """Whether ``path`` is an absolute http(s) URL rather than a source path."""
    return bool(re.match(r"(?i)https?://", path.strip()))


def find_page(refs: Sequence[PageRef], path: str, corpus: str | None = None) -> tuple[list[PageRef], str]:
    """The indexed pages ``path`` names, and the anchor it carried ('' when none).

    ``path`` is, in the order tried: a page URL (``https://…/page/#anchor``; scheme, trailing
    slash, ``index.html`` and anchor do not matter); a source path as indexed (``./`` and a
    leading ``/`` ignored); a source path that ends with ``path`` at a folder boundary (the
    docs root prefix left out: ``release-notes.md`` finds ``docs/en/docs/release-notes.md``);
    a source path that ``path`` ends with (an extra prefix).

    Returns:
        ``(refs, anchor)``: every (corpus, version) copy of the one page found, best match
        first — empty when nothing matches.

    Raises:
        PageNotFound: ``path`` matches several different pages (the message lists them).
    """
    refs = [r for r in refs if corpus is None or r.corpus == corpus]
    anchor = ""
    if is_url(path):
        url, _, anchor = path.strip().partition("#")
        key = _url_key(url)
        found = [r for r in refs if r.url and _url_key(r.url) == key]
        return _one_page(found, path), unquote(anchor)
    clean = _clean_path(path.partition("#")[0])
    anchor = unquote(path.partition("#")[2])
    for match in (lambda s: s == clean, lambda s: s.endswith("/" + clean), lambda s: clean.endswith("/" + s)):
        found = [r for r in refs if match(r.source_path)]
        if found:
            return _one_page(found, path), anchor
    return [], anchor


def _one_page(found: list[PageRef], asked: str) -> list[PageRef]:
    paths = sorted({r.source_path for r in found})
    if len(paths) > 1:
        shown = ", ".join(paths[:8]) + (f" (and {len(paths) - 8} more)" if len(paths) > 8 else "")
        raise PageNotFound(f"{asked!r} matches {len(paths)} pages: {shown}; give the whole source path")
    return found


def nearest_paths(refs: Sequence[PageRef], path: str, n: int = 5) -> list[str]:
    """Up to ``n`` indexed source paths closest to ``path`` (difflib's ratio over the paths and
    over their file names), best first."""
    clean = _clean_path(path.partition("#")[0]) if not is_url(path) else urlsplit(path).path.strip("/")
    paths = sorted({r.source_path for r in refs})
    by_full = difflib.get_close_matches(clean, paths, n=n, cutoff=0.4)
    names: dict[str, list[str]] = {}
    for p in paths:
        names.setdefault(p.rsplit("/", 1)[-1], []).append(p)
    leaf = clean.rstrip("/").rsplit("/", 1)[-1]
    by_name = [p for name in difflib.get_close_matches(leaf, list(names), n=n, cutoff=0.5) for p in names[name]]
    return list(dict.fromkeys(by_full + by_name))[:n]


def pick_version(copies: Sequence[PageRef], doc_version: str | None, default_version: str | None) -> PageRef:
    """The copy of a page to return: of ``doc_version`` when given; else of the corpus's
    ``default_version`` when it holds the page; else the most recently ingested copy
    (``PageRef.indexed_at``; the unversioned one first on a tie).

    Raises:
        PageNotFound: ``doc_version`` is given and no copy has it (names the versions held).
    """
    if doc_version is not None:
        for r in copies:
            if r.doc_version == doc_version:
                return r
        held = ", ".join(repr(r.doc_version) for r in copies)
        raise PageNotFound(f"page {copies[0].source_path!r} has no version {doc_version!r}; versions holding it: {held}")
    if default_version is not None:
        for r in copies:
            if r.doc_version == default_version:
                return r
    return max(copies, key=lambda r: (r.indexed_at or "", r.doc_version == "", r.doc_version))


def get_page(
    store: Store,
    path: str,
    corpus: str | None = None,
    doc_version: str | None = None,
    *,
    default_versions: Mapping[str, str] | None = None,
    within: Collection[str] | None = None,
) -> Page | None:
    """The page ``path`` reassembled from the store's chunks.

    Args:
        store: any store with ``source_chunks`` (SQLite, Elasticsearch); a store that can list
            its pages (:class:`~esrag.stores.base.PageListing`) also finds a page by URL or by
            a path without (or with an extra) docs root prefix, and names the nearest paths
            when nothing matches.
        path: the page's source path as indexed (``"scheduling.md"``,
            ``"docs/concepts/models.md"``), the same without the docs root prefix, or the
            page's published URL, with or without ``#anchor``.
        corpus: only this corpus (default: the first corpus in name order holding the page).
        doc_version: this documentation version ('' = the unversioned chunks; default: the
            corpus's default version from ``default_versions`` when it holds the page, else the
            most recently ingested version that does).
        default_versions: ``{corpus: version}`` (:func:`esrag.app.default_versions`).
        within: only pages of these corpora (None = every corpus): what a key per corpus may
            read (:class:`esrag.serve.security.Access`); a page outside them is not found, and
            the nearest paths named are theirs only.

    Returns:
        The :class:`Page` (its ``versions`` lists every version holding it); never None today
        (an unknown path raises), the Optional return keeps room for stores that cannot tell.

    Raises:
        PageNotFound: no page matches (the message names the path, corpus, version and the
            nearest indexed paths) or the path matches several pages.
    """
    refs = store.pages(corpus) if isinstance(store, PageListing) else None
    if refs is not None and within is not None:
        refs = [r for r in refs if r.corpus in within]
    clean = _clean_path(path.partition("#")[0])
    if refs is None:
        copies = [r for r in _copies_of(store.source_chunks(clean, corpus, None)) if within is None or r.corpus in within]
    else:
        copies, _ = find_page(refs, path, corpus)
    if not copies:
        where = "".join(f" {k} {v!r}" for k, v in (("in corpus", corpus), ("version", doc_version)) if v is not None)
        near = nearest_paths(refs, path) if refs else []
        raise PageNotFound(
            f"no indexed page {clean if not is_url(path) else path!r}{where}" + (f"; nearest: {', '.join(near)}" if near else "")
        )
    first_corpus = min(r.corpus for r in copies)
    matched = [r for r in copies if r.corpus == first_corpus]
    if refs is not None:  # every version of that page, also those whose URL differs from the one given
        copies = [r for r in refs if r.corpus == first_corpus and r.source_path == matched[0].source_path]
    else:
        copies = matched
    if doc_version is None and is_url(path) and len({r.doc_version for r in matched}) == 1:
        doc_version = matched[0].doc_version  # a version's own URL names that version
    pick = pick_version(copies, doc_version, (default_versions or {}).get(first_corpus))
    return read_page(store, pick, sorted({r.doc_version for r in copies}))


def read_page(store: Store, ref: PageRef, versions: Sequence[str] = ()) -> Page:
    """The page ``ref`` names (one corpus, version and source path), reassembled from its
    chunks in order; ``versions`` are the versions holding it (default: ``[ref.doc_version]``).
    What :func:`get_page` returns once it has chosen the copy, and what :mod:`esrag.llms_txt`
    reads for every page of a corpus.

    Raises:
        PageNotFound: the store holds no chunk of ``ref`` (removed since it was listed).
    """
    chunks = store.source_chunks(ref.source_path, ref.corpus, ref.doc_version)
    chunks = sorted(chunks, key=lambda c: c.position)
    if not chunks:  # removed between the listing and the read
        raise PageNotFound(f"no indexed page {ref.source_path!r} in corpus {ref.corpus!r}")
    page_url = chunks[0].url.split("#", 1)[0] if chunks[0].url else ""
    sections = [Section(c.section_path, c.anchor, c.url, c.start_line, c.end_line, c.text, c.tokens, list(c.alt_urls)) for c in chunks]
    return Page(
        ref.source_path,
        ref.corpus,
        ref.doc_version,
        chunks[0].doc_title,
        page_url,
        sections,
        reassemble(chunks),
        list(versions) or [ref.doc_version],
        dict(chunks[0].metadata),
    )


def _copies_of(chunks: list[Chunk]) -> list[PageRef]:
    """The (corpus, version) copies among one path's chunks (a store without a page listing)."""
    seen = {(c.corpus, c.doc_version): c for c in chunks}
    return [PageRef(c, v, ch.source_path, ch.url.split("#", 1)[0]) for (c, v), ch in sorted(seen.items())]


# -- a window that fits a budget ------------------------------------------------------------------
@dataclass(slots=True)
class PageWindow:
    """The part of a page that fits a budget.

    Attributes:
        page: the page (all of its sections). text: the text shown (one copy).
        sections: the sections shown, their text as shown (the last may be shortened).
        start_line, end_line: the source lines shown (inclusive; 0 when nothing is shown).
        scope_start, scope_end: the lines of the section asked for (the whole page without one).
        before: sections of the page before the window. after: sections of the page after it
            (the first is the one shown in part, when one is).
        next_offset: the source line to continue from (None when the scope is all shown).
        next_section: the first section after the window with another section path (None at
            the end of the scope).
        tokens_left: cl100k tokens of the scope's text after the window (from chunk counts).
    """

    page: Page
    text: str
    sections: list[Section]
    start_line: int
    end_line: int
    scope_start: int
    scope_end: int
    before: list[Section]
    after: list[Section]
    next_offset: int | None
    next_section: Section | None
    tokens_left: int

    @property
    def complete(self) -> bool:
        """Whether the whole page is shown."""
        return not self.before and not self.after


def find_section(page: Page, section: str) -> tuple[int, str]:
    """Where the section ``section`` names starts in ``page.sections``, and its section path.

    ``section`` is an anchor (with or without ``#``), a section path, the end of a section path
    (``"Set Cookies"`` for ``"Response Cookies > Set Cookies"``), or the first words of one
    heading on a path (``"0.115.14"`` for ``"Release Notes > 0.115.14 (2025-06-26) > Fixes"``,
    when that heading has no text of its own); case, spacing, code ticks and emphasis marks do
    not matter. Returns ``(index of its first chunk, its section path)``.

    Raises:
        ConfigError: no section matches (the message names the closest anchors and headings).
    """
    want = section.strip().lstrip("#")

    def norm(s: str) -> str:  # section paths hold a heading's plain text: no code ticks or emphasis marks
        return " ".join(s.replace("`", "").replace("*", "").lower().split())

    for i, s in enumerate(page.sections):
        if s.anchor and (s.anchor == want or norm(s.anchor) == norm(want)):
            return i, s.section_path
    target = norm(want)
    for exact in (True, False):
        for i, s in enumerate(page.sections):
            parts = s.section_path.split(SECTION_SEPARATOR)
            for depth in range(len(parts), 0, -1):
                path = SECTION_SEPARATOR.join(parts[:depth])
                title = norm(parts[depth - 1])
                if exact and (norm(path) == target or title == target):
                    return i, path
                if not exact and (title + " ").startswith(target + " "):
                    return i, path
    names = list(
        dict.fromkeys(
            [s.anchor for s in page.sections if s.anchor] + [p for s in page.sections for p in s.section_path.split(SECTION_SEPARATOR)]
        )
    )
    close = difflib.get_close_matches(want, names, n=6, cutoff=0.5) or names[:8]
    raise ConfigError(f"section {section!r}: not on page {page.source_path!r}; closest: " + (", ".join(close) or "(none)"))


def _scope(page: Page, section: str | None) -> tuple[int, int]:
    """``[lo, hi)``: the indices of ``section`` and its subsections (the whole page without one)."""
    if not section:
        return 0, len(page.sections)
    lo, root = find_section(page, section)
    hi = lo + 1
    while hi < len(page.sections) and (
        page.sections[hi].section_path == root or page.sections[hi].section_path.startswith(root + SECTION_SEPARATOR)
    ):
        hi += 1
    return lo, hi


def page_window(page: Page, budget: int | None, *, section: str | None = None, offset: int | None = None) -> PageWindow:
    """The part of ``page`` that fits ``budget`` cl100k tokens of text.

    Args:
        page: the whole page (:func:`get_page`).
        budget: cl100k tokens of text to show at most (None: no limit).
        section: show this section and its subsections only (:func:`find_section`).
        offset: start at this source line (a window's ``next_offset``); with ``section``,
            inside that section.

    Whole sections are taken in order while they fit; the section that does not fit is
    shortened by :func:`esrag.search.budget.fit_text` (``window=True``: its whole blocks that
    fit, or its whole lines outside code when they hold twice as much — a long list or table),
    and the window ends there. Text is never cut inside a line, except a first line longer than
    the whole budget (then its first ``budget`` tokens).

    Raises:
        ConfigError: an unknown ``section``, or an ``offset`` outside the page or section.
    """
    secs = page.sections
    lo, hi = _scope(page, section)
    scope_start, scope_end = (secs[lo].start_line, secs[hi - 1].end_line) if hi > lo else (0, 0)
    parts = [(i, secs[i]) for i in range(lo, hi)]
    if offset is not None:
        if not scope_start <= offset <= scope_end:
            where = f"section {section!r} of" if section else "page"
            raise ConfigError(f"offset {offset}: outside lines {scope_start}-{scope_end} of {where} {page.source_path!r}")
        parts = [(i, s) for i, s in parts if s.end_line >= offset]
        i, s = parts[0]
        if s.start_line < offset:
            parts[0] = (
                i,
                Section(
                    s.section_path,
                    s.anchor,
                    s.url,
                    offset,
                    s.end_line,
                    "\n".join(s.text.split("\n")[offset - s.start_line :]),
                    alt_urls=list(s.alt_urls),
                ),
            )
    shown: list[Section] = []
    left = budget
    stop: int | None = None  # index of the first section not shown whole
    partial = False  # whether that section is shown in part
    next_offset: int | None = None
    for i, s in parts:
        sep = 1 if shown else 0  # the newline that joins it to the previous section
        if left is None or s.token_count() + sep <= left:
            shown.append(s)
            left = None if left is None else left - s.token_count() - sep
            continue
        stop = i
        fit = fit_text(s.text, left - sep, window=True, alone=not shown)
        text = fit.text
        partial = bool(text)
        if text:
            end = s.start_line + text.count("\n")
            shown.append(Section(s.section_path, s.anchor, s.url, s.start_line, end, text, alt_urls=list(s.alt_urls)))
            next_offset = end + 1
        else:
            next_offset = s.start_line
        break
    first = parts[0][0] if parts else lo
    after = list(secs[stop:]) if stop is not None else list(secs[hi:])
    next_section = None
    tokens_left = 0
    if stop is not None:
        path = secs[stop].section_path
        next_section = next((s for s in secs[stop + 1 : hi] if s.section_path != path), None) if partial else secs[stop]
        tokens_left = sum(s.token_count() for s in secs[stop:hi]) - (shown[-1].token_count() if partial else 0)
    return PageWindow(
        page,
        reassemble(shown),
        shown,
        shown[0].start_line if shown else 0,
        shown[-1].end_line if shown else 0,
        scope_start,
        scope_end,
        list(secs[:first]),
        after,
        next_offset,
        next_section,
        tokens_left,
    )
