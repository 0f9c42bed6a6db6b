"""``llms.txt`` and ``llms-full.txt`` of a corpus (issue 38): one renderer behind
``esrag export llms-txt`` and the ``esrag serve`` routes ``/corpora/{corpus}/llms.txt``,
``/corpora/{corpus}/llms-full.txt`` and ``/corpora/{corpus}/{page}.md``.

The format is the llmstxt.org proposal (Jeremy Howard, 2024): an H1 with the site's name (the
only required part), a ``>`` blockquote with a short summary, then H2 sections each holding a
"file list": Markdown list lines ``- [title](url)`` with an optional ``: description``. Pages
are also offered as clean Markdown at their URL with ``.md`` appended (``index.html.md`` for a
URL that ends in ``/``) — :func:`markdown_path` gives that path for each page.

What esrag knows of a site decides what is written:

* **title**: the corpus name (the index keeps no site title);
* **summary**: ``[corpora.NAME] intent`` when set, else a line saying what the corpus is (pages,
  version, where it is published);
* **sections**: one per top-level folder of the published site (of the source tree when pages
  have no URL), root pages first under ``Docs``, in path order (the index keeps no navigation
  order), a folder's index page first;
* **descriptions**: the page's front matter ``description``, else the first sentence of its
  first paragraph (at most :data:`DESCRIPTION_CHARS` characters), else none.

Pages come from the store through :func:`esrag.pages.read_page` (what ``esrag page`` and
``get_page`` return), one version per corpus: the one asked for, else the corpus's default
version; translations (pages of a locale other than the site's default) are left out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlsplit

from esrag.errors import PageNotFound
from esrag.pages import Page, read_page
from esrag.stores.base import PageListing, PageRef, Store

__all__ = [
    "DESCRIPTION_CHARS",
    "LlmsSite",
    "arrange",
    "corpora_llms_txt",
    "description",
    "llms_full_txt",
    "llms_txt",
    "markdown_path",
    "page_markdown",
    "read_site",
]

#: the longest one-line description of a link (characters; longer ones end in "…")
DESCRIPTION_CHARS = 200
#: the H2 of pages at the top of the site (the name llmstxt.org's examples use)
ROOT_SECTION = "Docs"

_INDEX_NAMES = ("index", "readme", "_index", "intro")


@dataclass(slots=True)
class LlmsSite:
    """One corpus as ``llms.txt`` describes it.

    Attributes:
        corpus: the corpus name. title: the H1. summary: the blockquote (one line).
        doc_version: the version read ('' = unversioned).
        pages: the pages in the order written (section by section).
        sections: ``[(H2 title, [index into pages, ...]), ...]`` in order.
        paths: each page's site path (its URL path below the site's common prefix, or its
            source path when it has no URL), parallel to ``pages``.
    """

    corpus: str
    title: str
    summary: str
    doc_version: str
    pages: list[Page] = field(default_factory=list)
    sections: list[tuple[str, list[int]]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def page_at(self, md_path: str) -> Page | None:
        """The page whose :func:`markdown_path` is ``md_path`` (a leading ``/`` ignored; percent
        escapes decoded on both sides, as a server hands the path over decoded), or None."""
        want = unquote(md_path.lstrip("/"))
        for page, path in zip(self.pages, self.paths, strict=True):
            if unquote(markdown_path(page, path)) == want:
                return page
        return None


def read_site(
    store: Store,
    corpus: str,
    *,
    doc_version: str | None = None,
    default_versions: Mapping[str, str] | None = None,
    summary: str = "",
    title: str = "",
) -> LlmsSite:
    """Every page of ``corpus`` of one version, grouped into sections (see the module text).

    Args:
        store: a store that lists its pages (both built-in stores).
        corpus: the corpus name.
        doc_version: this version ('' = unversioned); default: ``default_versions[corpus]``,
            else each page's most recent copy (:func:`esrag.pages.pick_version`).
        default_versions: ``{corpus: version}`` (:func:`esrag.app.default_versions`).
        summary: the blockquote (``[corpora.NAME] intent``); '' = a line made here.
        title: the H1 (the site's own title); '' = the corpus name.

    Raises:
        PageNotFound: the store does not list pages, holds no page of ``corpus`` (the message
            names the indexed corpora) or none of ``doc_version``.
    """
    from esrag.pages import pick_version

    if not isinstance(store, PageListing):
        raise PageNotFound(f"the {store.name} store cannot list its pages, so it has no llms.txt")
    refs = store.pages(corpus)
    if not refs:
        known = sorted({r.corpus for r in store.pages()})
        raise PageNotFound(f"unknown corpus {corpus!r}; indexed: {', '.join(known) or '(none)'}")
    version = doc_version if doc_version is not None else (default_versions or {}).get(corpus)
    by_path: dict[str, list[PageRef]] = {}
    for r in refs:
        by_path.setdefault(r.source_path, []).append(r)
    if version is not None:
        chosen = [r for r in refs if r.doc_version == version]
        if not chosen:
            held = ", ".join(sorted({repr(r.doc_version) for r in refs}))
            raise PageNotFound(f"corpus {corpus!r} has no version {version!r}; versions: {held}")
    else:
        chosen = [pick_version(copies, None, None) for copies in by_path.values()]
    pages = [read_page(store, r, sorted({c.doc_version for c in by_path[r.source_path]})) for r in chosen]
    pages, sections, paths = arrange([p for p in pages if not p.metadata.get("translation")])
    used = version if version is not None else (pages[0].doc_version if pages else "")
    if not summary:
        where = _common_url(pages)
        summary = (
            f"The {corpus} documentation: {len(pages)} page{'s' if len(pages) != 1 else ''}"
            + (f" of version {used}" if used else "")
            + (f", published at {where}" if where else "")
            + ", as indexed by esrag."
        )
    return LlmsSite(corpus, " ".join(title.split()) or corpus, " ".join(summary.split()), used, pages, sections, paths)


def arrange(pages: Sequence[Page]) -> tuple[list[Page], list[tuple[str, list[int]]], list[str]]:
    """``pages`` in ``llms.txt`` order, their sections and site paths (the fields of
    :class:`LlmsSite`): pages at the top first (:data:`ROOT_SECTION`), then one section per
    top-level folder, all in path order with a folder's index page first."""
    paths = _site_paths(pages)
    names = _sections_of(paths)
    order = sorted(range(len(pages)), key=lambda i: (names[i] != ROOT_SECTION, _segments(paths[i]), paths[i]))
    sections: dict[str, list[int]] = {}
    for at, i in enumerate(order):
        sections.setdefault(names[i], []).append(at)
    return [pages[i] for i in order], list(sections.items()), [paths[i] for i in order]


# -- where pages sit on the site --------------------------------------------------------------------
def _common_url(pages: Sequence[Page]) -> str:
    """The longest folder URL (ending in ``/``) every page URL starts with (pages without URL
    left out); '' when no page has a URL or the hosts differ."""
    urls = [p.url for p in pages if p.url]
    heads = {urlsplit(u)[:2] for u in urls}
    if len(heads) != 1:
        return ""
    dirs = [urlsplit(u).path.rsplit("/", 1)[0].split("/") for u in urls]
    common: list[str] = []
    for parts in zip(*dirs, strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    scheme, host = heads.pop()
    return f"{scheme}://{host}{'/'.join(common)}/"


def _site_paths(pages: Sequence[Page]) -> list[str]:
    """Each page's path below the site's common URL (``concepts/models/``, ``ch01.html``, ''
    for the home page); for a page without URL, its source path below the folder every such
    page shares (``user/install.rst`` for ``docs/user/install.rst``)."""
    prefix = urlsplit(_common_url(pages)).path
    sources = [p.source_path.split("/")[:-1] for p in pages if not p.url]
    common = 0
    while sources and common < min(map(len, sources)) and len({s[common] for s in sources}) == 1:
        common += 1
    return [urlsplit(p.url).path[len(prefix) :] if p.url else "/".join(p.source_path.split("/")[common:]) for p in pages]


def _segments(path: str) -> list[str]:
    """Path order of a site path: its folders, then its file name without suffix ('' for a
    folder's index page, which so comes before the folder's other pages)."""
    parts = path.strip("/").split("/") if path.strip("/") else []
    if path.endswith("/") or not parts:
        return [*parts, ""]
    stem = posixpath.splitext(parts[-1])[0]
    return [*parts[:-1], "" if stem.lower() in _INDEX_NAMES else stem]


def _sections_of(paths: Sequence[str]) -> list[str]:
    """The H2 of each page: its top-level folder, humanized (``01_getting_started`` ->
    ``Getting started``), or :data:`ROOT_SECTION` for a page at the top (a folder URL such as
    ``concepts/`` is its folder's page when other pages sit below it)."""
    folders = {s[0] for s in map(_segments, paths) if len(s) > 2 or (len(s) == 2 and s[1])}
    out = []
    for path in paths:
        seg = _segments(path)
        top = seg[0] if len(seg) >= 2 and (len(seg) > 2 or seg[1] or seg[0] in folders) else ""
        if not top:
            out.append(ROOT_SECTION)
            continue
        name = re.sub(r"^\d+[-_. ]*", "", top) or top
        name = re.sub(r"[-_]+", " ", name).strip()
        out.append(name[:1].upper() + name[1:])
    return out


def markdown_path(page: Page, path: str) -> str:
    """Where ``page`` is served as Markdown below its corpus: its site ``path`` with ``.md``
    appended (llmstxt.org's convention), ``index.html.md`` for a folder URL; a source path
    (a page without URL) with its suffix replaced by ``.md``."""
    if not page.url:
        return posixpath.splitext(path)[0] + ".md"
    if path == "" or path.endswith("/"):
        return path + "index.html.md"
    return path + ".md"


# -- the text ---------------------------------------------------------------------------------------
#: blocks that are no prose: headings, fences, HTML, tables, quotes, admonitions (``!!!``, ``???``,
#: ``:::``), tabs (``===``), shortcodes, directives, lists, rules, images, link definitions, MDX ESM
_SKIP = re.compile(r"^\s*(#|```|~~~|<|\||>|!!!|\?\?\?|:::|===|\{|\.\.|[-*+] |\d+[.)] |[=-]{3,}\s*$|!\[|\[[^\]]+\]:\s|import |export )")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def description(page: Page) -> str:
    """One line about ``page``: its front matter ``description``, else the first sentence of
    its first paragraph (not a heading, list, table, quote, fence, HTML or directive), links
    as their text, emphasis marks dropped; at most :data:`DESCRIPTION_CHARS` characters; ''
    when the page has no such paragraph."""
    meta = page.metadata.get("description")
    text = str(meta) if isinstance(meta, str) and meta.strip() else ""
    if not text:
        fence = ""
        for block in re.split(r"\n\s*\n", page.text):
            lines = block.strip("\n").split("\n")
            for line in lines:
                m = re.match(r"^\s*(`{3,}|~{3,})", line)
                if m and not fence:
                    fence = m.group(1)
                elif m and line.strip().startswith(fence):
                    fence = ""
            if fence or not block.strip() or _SKIP.match(block) or any(re.match(r"^\s*(`{3,}|~{3,})", x) for x in lines):
                continue
            text = _LINK.sub(r"\1", " ".join(block.split()))
            text = re.sub(r"(\*\*|__|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w))", "", text)
            if text.strip():
                break
            text = ""
    text = " ".join(text.split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z`*\[(])", text)
    text = text[: m.start()] if m else text
    if len(text) > DESCRIPTION_CHARS:
        text = text[: DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return text


def _link(title: str, url: str) -> str:
    title = re.sub(r"([\[\]\\])", r"\\\1", " ".join(title.split()))
    return f"[{title}]({quote(url, safe=':/?#[]@!$&*+,;=%~')})"


def llms_txt(site: LlmsSite) -> str:
    """The ``llms.txt`` of ``site``: ``# title``, ``> summary``, then per section ``## name``
    and a line ``- [page title](page URL): description`` per page (the page's source path
    when it has no URL). Ends with one newline."""
    out = [f"# {site.title}", "", f"> {site.summary}"]
    for name, members in site.sections:
        out += ["", f"## {name}", ""]
        for i in members:
            page = site.pages[i]
            about = description(page)
            out.append(f"- {_link(page.title or page.source_path, page.url or page.source_path)}" + (f": {about}" if about else ""))
    return "\n".join(out) + "\n"


def page_markdown(page: Page) -> str:
    """``page`` as one Markdown document: ``# title``, a ``Source:`` line with its URL (its
    source path without one), then its text as indexed without its own leading H1. Ends with
    one newline."""
    text = page.text.strip("\n")
    first = text.split("\n", 1)
    if first[0].startswith("# "):
        text = first[1].lstrip("\n") if len(first) > 1 else ""
    head = f"# {page.title or page.source_path}\n\nSource: {page.url or page.source_path}\n"
    return head + (f"\n{text}\n" if text.strip() else "")


def llms_full_txt(site: LlmsSite) -> str:
    """The ``llms-full.txt`` of ``site``: every page as :func:`page_markdown`, in the order of
    ``llms.txt``, separated by a blank line."""
    return "\n".join(page_markdown(p) for p in site.pages)


def corpora_llms_txt(title: str, corpora: Sequence[tuple[str, str, str]]) -> str:
    """An ``llms.txt`` over several corpora (what ``esrag serve`` answers at ``/llms.txt`` when
    it holds more than one): ``# title``, a summary, and one ``## Corpora`` list linking each
    corpus's own ``llms.txt``. ``corpora`` is ``[(name, llms.txt URL, one-line description)]``."""
    out = [f"# {title}", "", f"> {len(corpora)} documentation corpora; each has its own llms.txt and llms-full.txt.", "", "## Corpora", ""]
    out += [f"- {_link(name, url)}" + (f": {' '.join(about.split())}" if about.strip() else "") for name, url, about in corpora]
    return "\n".join(out) + "\n"
