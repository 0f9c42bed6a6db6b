"""The published site as ground truth: page URLs and heading ids read from a generator's output.

esrag computes every chunk's URL from the generator's rules (each generator's module behind
:mod:`esrag.sites.registry`, and :mod:`esrag.sites.slugs`). When the user has the built site (``--built-site DIR``: the HTML the
generator wrote) or its ``sitemap.xml`` (``--sitemap FILE|URL``), this module says what the
server really publishes, so the computed URL can be checked and, where the rules guessed, replaced:

- :func:`read_sitemap` — the ``<loc>`` URLs of a sitemap (file or http(s) URL; sitemap index
  files followed; gzip handled), per the sitemaps.org protocol 0.9;
- :func:`read_built_site` — every ``**/*.html`` page of an output folder with its served URL,
  its heading ids and texts in document order, and every other id on it;
- :class:`BuiltSite` — :meth:`BuiltSite.page_url` (the built page that is the same page as a
  computed page URL), :meth:`BuiltSite.anchor` (the built heading id for a section),
  :meth:`BuiltSite.has_id`;
- :func:`compare` — the pages whose computed URL differs from the built one, the pages not in
  the build and the built pages no source mapped to (:class:`Comparison`).

One page has several URL shapes across generators and servers: ``x.html`` (Sphinx ``html``,
mdBook, MkDocs without directory URLs), ``x/`` (Sphinx ``dirhtml``, MkDocs, Hugo), ``x``
(Docusaurus, VitePress ``cleanUrls``, a static host's pretty URLs) and ``x/index.html`` (the
file behind ``x/``). They are one *route* here: the site-relative path with a final
``index.html``, ``.html`` and ``/`` removed (``ref/models.html`` and ``ref/models/`` are both
route ``ref/models``).
"""

from __future__ import annotations

import http.client
import os
import posixpath
import re
import unicodedata
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit
from xml.etree import ElementTree

from esrag import __version__
from esrag.errors import ConfigError

#: seconds to wait for a sitemap server (connect and each read)
SITEMAP_TIMEOUT = 20.0
#: bytes a sitemap may have once decompressed (the protocol allows 50 MB; a gzip bomb stops here)
SITEMAP_MAX_BYTES = 64 * 1024 * 1024
#: how deep sitemap index files may nest (an index naming itself stops here)
SITEMAP_MAX_DEPTH = 4

# -- sitemaps ----------------------------------------------------------------------------------


def read_sitemap(source: str, timeout: float = SITEMAP_TIMEOUT) -> list[str]:
    """The page URLs of the sitemap at ``source`` (a local file path or an http(s) URL), in
    document order, duplicates dropped: each ``<url><loc>`` of a ``<urlset>``; a
    ``<sitemapindex>`` is followed, its ``<sitemap><loc>`` sitemaps read in order (nesting up
    to :data:`SITEMAP_MAX_DEPTH`). A gzip-compressed file (``.xml.gz``, detected by its magic
    bytes, not its name) is decompressed. ``timeout`` is in seconds per network operation.

    A local index naming ``https://site/sitemap-0.xml`` reads ``sitemap-0.xml`` beside itself
    when that file exists (generators write the parts side by side), else fetches the URL.

    Raises ConfigError in one line naming the file or URL and the fault: missing file, HTTP
    status, unreachable host, timeout, bad gzip, XML that does not parse (line, column), a root
    element that is neither ``urlset`` nor ``sitemapindex``, an index nested too deep."""
    urls: list[str] = []
    _read_into(source, timeout, urls, set(), 0)
    return list(dict.fromkeys(urls))


def _read_into(source: str, timeout: float, urls: list[str], visited: set[str], depth: int) -> None:
    """Append the ``<loc>`` values of the sitemap ``source`` (recursing into index files)."""
    if depth > SITEMAP_MAX_DEPTH:
        raise ConfigError(f"sitemap {source}: sitemap index files nest deeper than {SITEMAP_MAX_DEPTH} levels")
    if source in visited:
        return
    visited.add(source)
    kind, locs = _parse_sitemap(source, _load(source, timeout))
    if kind == "urlset":
        urls.extend(locs)
        return
    for loc in locs:
        _read_into(_part_source(source, loc), timeout, urls, visited, depth + 1)


def _part_source(index: str, loc: str) -> str:
    """Where to read a sitemap named by ``index``: the file of the same name beside a local
    index when it exists, else ``loc`` resolved against an http(s) index's URL."""
    if _is_url(index):
        return urljoin(index, loc)
    local = Path(index).parent / posixpath.basename(urlsplit(loc).path)
    if local.is_file() or not _is_url(loc):
        return str(local)
    return loc


def _is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


def _load(source: str, timeout: float) -> bytes:
    """The bytes of ``source`` (file or http(s) URL), gunzipped when they are gzip; ConfigError."""
    data = _fetch(source, timeout) if _is_url(source) else _read_file(source)
    if data[:2] == b"\x1f\x8b":
        try:
            data = _gunzip(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ConfigError(f"sitemap {source}: not valid gzip ({exc})") from None
    return data


def _gunzip(data: bytes) -> bytes:
    """``data`` decompressed, at most :data:`SITEMAP_MAX_BYTES` (OSError beyond)."""
    out = zlib.decompressobj(16 + zlib.MAX_WBITS)
    plain = out.decompress(data, SITEMAP_MAX_BYTES + 1)
    if len(plain) > SITEMAP_MAX_BYTES:
        raise OSError(f"more than {SITEMAP_MAX_BYTES} bytes once decompressed")
    if not out.eof:
        raise EOFError("compressed data ends early")
    return plain


def _read_file(source: str) -> bytes:
    try:
        with open(source, "rb") as fh:
            return fh.read(SITEMAP_MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"sitemap {source}: cannot read the file ({exc.strerror or exc})") from None


def _fetch(url: str, timeout: float) -> bytes:
    """GET ``url`` with the stdlib (no proxy magic beyond urllib's own environment handling)."""
    try:
        request = urllib.request.Request(url, headers={"User-Agent": f"esrag/{__version__}", "Accept": "application/xml, text/xml, */*"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read(SITEMAP_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise ConfigError(f"sitemap {url}: the server answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise ConfigError(f"sitemap {url}: cannot reach it ({exc.reason})") from None
    except OSError as exc:  # TimeoutError while reading, a reset connection
        raise ConfigError(f"sitemap {url}: cannot read it ({exc or type(exc).__name__}; timeout {timeout:g} s)") from None
    except (ValueError, http.client.HTTPException) as exc:  # a malformed URL, a truncated answer
        raise ConfigError(f"sitemap {url}: not a URL esrag can fetch ({exc or type(exc).__name__})") from None


def _parse_sitemap(source: str, data: bytes) -> tuple[str, list[str]]:
    """``("urlset" | "sitemapindex", [loc, ...])`` of a sitemap document; ConfigError."""
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise ConfigError(f"sitemap {source}: not well-formed XML at line {line}, column {column + 1}") from None
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise ConfigError(f"sitemap {source}: the root element is <{kind}>, not <urlset> or <sitemapindex> (sitemaps.org 0.9)")
    entry = "url" if kind == "urlset" else "sitemap"
    locs = [_loc(child) for child in root if _local(child.tag) == entry]
    return kind, [loc for loc in locs if loc]


def _local(tag: str) -> str:
    """An element's name without its ``{namespace}``."""
    return tag.rsplit("}", 1)[-1]


def _loc(entry: ElementTree.Element) -> str:
    for child in entry:
        if _local(child.tag) == "loc":
            return (child.text or "").strip()
    return ""


# -- HTML pages --------------------------------------------------------------------------------

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
#: elements after which a ``<section id>`` without its heading yet no longer waits for one
_CONTENT = frozenset({"p", "ul", "ol", "dl", "table", "pre", "blockquote", "div", "nav", "aside", "footer", "form", "figure"})
#: permalink glyphs generators append to headings (Sphinx/MkDocs ``¶``, Docusaurus/VitePress a
#: zero-width space, Hugo themes ``#``, ``§``, ``🔗``); a heading's ``<a href="#…">`` holding only
#: these is dropped from its text; ``¶`` and zero-width characters are dropped anywhere
_GLYPHS = "¶§#🔗⚓\u200b\u200c\u200d\u2060\ufeff"
_ALWAYS_DROPPED = re.compile("[¶\u200b\u200c\u200d\u2060\ufeff]")
_SPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"[\W_]+")
_PLAIN_SPAN = re.compile(r'<span(?: class="[^"<>]*")?>|</span>')


@dataclass(frozen=True)
class BuiltHeading:
    """One ``<h1>``–``<h6>`` of a built page: its ``id`` (its own, or the id of the
    ``<section id>`` / ``<div class="section" id>`` it opens, as Sphinx writes it), its text with
    permalink glyphs removed and whitespace collapsed, and its ``level`` (1–6)."""

    id: str
    text: str
    level: int


@dataclass
class BuiltPage:
    """One page of the built site. ``url``: its canonical URL (absolute; the served form of its
    file, or the sitemap's ``<loc>``). ``file``: its path in the output folder (``/``-separated),
    or None from a sitemap. ``headings``: its headings that carry an id, in document order, or
    None when unknown (sitemap). ``ids``: every ``id`` (and ``<a name>``) on the page, or None
    when unknown."""

    url: str
    file: str | None = None
    headings: list[BuiltHeading] | None = None
    ids: frozenset[str] | None = None


class _PageParser(HTMLParser):
    """Collects the ids and the id-carrying headings of one HTML page in one pass."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.headings: list[BuiltHeading] = []
        self._pending: str | None = None  # the id of a <section> whose heading has not come yet
        self._heading: tuple[str, str] | None = None  # (tag, id) of the open heading
        self._text: list[str] = []
        self._link: list[str] | None = None  # text of an in-page <a href="#…"> inside the heading

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = None
        for name, value in attrs:
            if value and (name == "id" or (name == "name" and tag == "a")):
                self.ids.add(value)
                ident = value if name == "id" else ident
        if self._heading is not None:
            if tag == "a" and self._link is None and (dict(attrs).get("href") or "").startswith("#"):
                self._link = []
        elif tag in _HEADINGS:
            self._heading, self._text = (tag, ident or self._pending or ""), []
            self._pending = None
        elif tag == "section" or (tag == "div" and "section" in (dict(attrs).get("class") or "").split()):
            self._pending = ident
        elif tag in _CONTENT:
            self._pending = None

    def handle_endtag(self, tag: str) -> None:
        if self._heading is None:
            return
        if tag == "a" and self._link is not None:
            link = "".join(self._link)
            if link.strip(_GLYPHS + " \t\r\n\xa0"):
                self._text.append(link)
            self._link = None
        elif tag == self._heading[0]:
            heading_tag, ident = self._heading
            if ident:
                self.headings.append(BuiltHeading(ident, heading_text("".join(self._text)), _HEADINGS[heading_tag]))
            self._heading, self._link = None, None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            (self._link if self._link is not None else self._text).append(data)


def heading_text(raw: str) -> str:
    """A heading's text as a reader sees it: ``¶`` and zero-width characters removed, whitespace
    runs collapsed to one space, ends stripped."""
    return _SPACE.sub(" ", _ALWAYS_DROPPED.sub("", raw)).strip()


def normalise_title(text: str) -> str:
    """The form titles are compared in (:meth:`BuiltSite.anchor`): NFKC, :func:`heading_text`,
    case-folded."""
    return heading_text(unicodedata.normalize("NFKC", text)).casefold()


def _loose_title(text: str) -> str:
    """:func:`normalise_title` with every run of non-alphanumerics (markup such as backticks,
    ``**``, quotes, punctuation) made one space: the second, looser comparison."""
    return _NON_WORD.sub(" ", normalise_title(text)).strip()


def parse_page(html: str) -> tuple[list[BuiltHeading], frozenset[str]]:
    """``(headings, ids)`` of one HTML page: its headings that carry an id, in document order
    (:class:`BuiltHeading`), and every ``id`` / ``<a name>`` on it. Pure; the stdlib parser.

    ``<span>`` tags without attributes or with only a ``class`` (Pygments' highlighting: about
    80 % of a Sphinx build's tags) are removed first, their text kept: they carry no id, and the
    parser runs ~4x faster without them."""
    parser = _PageParser()
    parser.feed(_PLAIN_SPAN.sub("", html))
    parser.close()
    return parser.headings, frozenset(parser.ids)


# -- the built site ----------------------------------------------------------------------------


def _base(base_url: str) -> str:
    """``base_url`` with a final ``/``; ConfigError unless it is an absolute http(s) URL."""
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"base URL must be an absolute http(s) URL such as https://docs.example.com/, got {base_url!r}")
    return base_url if base_url.endswith("/") else base_url + "/"


def route(rel: str) -> str:
    """The route of a site-relative, decoded page path: a final ``index.html``, else ``.html``,
    removed, then a final ``/`` (``a/index.html``, ``a.html``, ``a/``, ``a`` -> ``a``; the
    home page -> ``""``)."""
    if rel == "index.html" or rel.endswith("/index.html"):
        rel = rel[: -len("index.html")]
    elif rel.endswith(".html"):
        rel = rel[: -len(".html")]
    return rel.rstrip("/")


def served_forms(file: str) -> tuple[str, ...]:
    """The site-relative paths under which the output file ``file`` (``/``-separated) is
    published, the canonical one first: ``a/index.html`` -> ``a/``, ``a`` (which static hosts
    redirect to ``a/``, and Docusaurus links); ``index.html`` -> ``""``; ``a/b.html`` ->
    ``a/b.html``, ``a/b`` (the clean URL that GitHub Pages, Netlify and Cloudflare Pages serve).
    ``a/index.html`` itself is served too, but no generator that writes it links it: it matches
    by route (:meth:`BuiltSite.page_url` gives ``a/``)."""
    if file == "index.html":
        return ("",)
    if file.endswith("/index.html"):
        folder = file[: -len("index.html")]
        return (folder, folder[:-1])
    return (file, file[: -len(".html")])


class BuiltSite:
    """The pages a site publishes under ``base_url`` (normalised with a final ``/``), from its
    output folder (:func:`read_built_site`) or its sitemap (:meth:`from_urls`).

    ``pages``: one :class:`BuiltPage` per page, in file or sitemap order. ``outside``: sitemap
    URLs not under ``base_url`` (host compared case-insensitively, scheme ignored), which
    nothing can match."""

    def __init__(self, base_url: str) -> None:
        self.base_url = _base(base_url)
        parts = urlsplit(self.base_url)
        self._host, self._path = parts.netloc.lower(), parts.path
        self.pages: list[BuiltPage] = []
        self.outside: list[str] = []
        self._by_form: dict[str, BuiltPage] = {}
        self._by_route: dict[str, BuiltPage] = {}

    @classmethod
    def from_urls(cls, urls: Iterable[str], base_url: str) -> BuiltSite:
        """A site of the page URLs ``urls`` (e.g. :func:`read_sitemap`), each its own canonical
        URL, without headings or ids (:meth:`anchor` then keeps the computed id)."""
        site = cls(base_url)
        for url in urls:
            rel = site.relative(url)
            if rel is None:
                site.outside.append(url)
            else:
                site.add(BuiltPage(url.split("#", 1)[0]), (rel,))
        return site

    def add(self, page: BuiltPage, forms: Iterable[str]) -> None:
        """Record ``page`` under its site-relative, decoded served ``forms`` (the first page
        recorded keeps a form or route that two pages share)."""
        self.pages.append(page)
        for form in forms:
            self._by_form.setdefault(form, page)
            self._by_route.setdefault(route(form), page)

    def relative(self, url: str) -> str | None:
        """``url``'s decoded path relative to the base URL (fragment and query dropped), or None
        when ``url`` is on another host or outside the base path. ``https://d.org/docs`` is the
        home page of base ``https://d.org/docs/``."""
        parts = urlsplit(url)
        if parts.netloc.lower() != self._host:
            return None
        if parts.path == self._path.rstrip("/"):
            return ""
        if not parts.path.startswith(self._path):
            return None
        return unquote(parts.path[len(self._path) :])

    def _find(self, url: str) -> tuple[BuiltPage, bool] | None:
        """The page ``url`` names and whether ``url`` is one of its served forms (else the
        same route in another shape), or None."""
        rel = self.relative(url)
        if rel is None:
            return None
        if rel in self._by_form:
            return self._by_form[rel], True
        page = self._by_route.get(route(rel))
        return (page, False) if page is not None else None

    def page_url(self, computed: str) -> str | None:
        """The built URL of the page the computed page URL ``computed`` names (a fragment or
        query is dropped): ``computed`` itself when the build serves that exact URL (one of
        :func:`served_forms`, or the sitemap's ``<loc>``), else the canonical URL of the built
        page with the same route (``x.html``, ``x/``, ``x``, ``x/index.html`` under the same base:
        ``https://d.org/ref/models.html`` -> ``https://d.org/ref/models/``), else None."""
        found = self._find(computed)
        if found is None:
            return None
        page, exact = found
        return computed.split("#", 1)[0].split("?", 1)[0] if exact else page.url

    def page(self, url: str) -> BuiltPage | None:
        """The :class:`BuiltPage` that ``url`` names (any shape of its route), or None."""
        found = self._find(url)
        return found[0] if found else None

    def has_id(self, page_url: str, fragment: str) -> bool | None:
        """Whether the page ``page_url`` carries the element id ``fragment`` (decoded); None
        when the page is unknown or its ids are (a sitemap's pages)."""
        page = self.page(page_url)
        return None if page is None or page.ids is None else fragment in page.ids

    def anchor(self, page_url: str, title: str, ordinal: int, computed: str) -> str:
        """The id to link a heading titled ``title`` on the page ``page_url`` with: ``computed``
        when the built page has that id; else the id of the ``ordinal``-th (0-based, counting
        only headings of that title, for repeated titles) built heading whose text equals
        ``title`` (:func:`normalise_title`; when none does, compared by alphanumerics only,
        :func:`_loose_title`, so ``**Install** `pip``` meets ``Install pip``); else ``computed``
        (the page, its headings or that heading is unknown: the caller reports it)."""
        page = self.page(page_url)
        if page is None or page.headings is None or (page.ids is not None and computed in page.ids):
            return computed
        for key in (normalise_title, _loose_title):
            wanted = key(title)
            same = [h.id for h in page.headings if key(h.text) == wanted]
            if same:
                return same[ordinal] if 0 <= ordinal < len(same) else computed
        return computed


def read_built_site(folder: Path, base_url: str) -> BuiltSite:
    """The pages of a generator's output folder ``folder`` served under ``base_url``: every
    ``**/*.html`` file (hidden folders skipped, files in path order), recorded under each of
    its :func:`served_forms` with its canonical URL (``base_url`` + the percent-encoded first
    form), headings and ids (:func:`parse_page`; UTF-8, undecodable bytes replaced).

    Raises ConfigError naming ``folder`` when it is not a folder or holds no HTML file."""
    if not folder.is_dir():
        raise ConfigError(f"built site {folder}: not a folder (give the generator's output folder, e.g. _build/html or site/)")
    site = BuiltSite(base_url)
    for file in _html_files(folder):
        headings, ids = parse_page((folder / file).read_text(encoding="utf-8", errors="replace"))
        forms = served_forms(file)
        site.add(BuiltPage(site.base_url + quote(forms[0]), file, headings, ids), forms)
    if not site.pages:
        raise ConfigError(f"built site {folder}: no .html file in it (is it the generator's output folder?)")
    return site


def _html_files(folder: Path) -> list[str]:
    """The ``/``-separated paths of the ``.html`` files under ``folder``, hidden folders
    skipped, sorted."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = Path(dirpath).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        found.extend(prefix + name for name in filenames if name.endswith(".html"))
    return sorted(found)


# -- comparing computed and built URLs ---------------------------------------------------------


@dataclass
class Comparison:
    """Computed page URLs checked against a built site (:func:`compare`).

    ``moved``: ``(source, computed, built)`` for pages the build serves at another URL than the
    computed one (both without fragment). ``missing``: ``(source, computed)`` for pages with no
    built page of that route. ``unmapped``: canonical URLs of built pages no source mapped to
    (search, genindex, generated pages…), in build order. ``matched``: how many sources the
    build serves at exactly the computed URL."""

    moved: list[tuple[str, str, str]] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    matched: int = 0

    @property
    def ok(self) -> bool:
        """True when every source's computed URL is served as computed."""
        return not self.moved and not self.missing

    def summary(self) -> str:
        """One line: counts of matched, moved, missing and unmapped pages."""
        return (
            f"{self.matched} pages as computed, {len(self.moved)} at another URL in the build, "
            f"{len(self.missing)} not in the build, {len(self.unmapped)} built pages from no source"
        )


def compare(site: BuiltSite, pages: Iterable[tuple[str, str]]) -> Comparison:
    """Check each ``(source, computed page URL)`` of ``pages`` against ``site``
    (:meth:`BuiltSite.page_url`; fragments ignored)."""
    out = Comparison()
    used: set[int] = set()
    for source, computed in pages:
        bare = computed.split("#", 1)[0]
        built = site.page_url(bare)
        if built is None:
            out.missing.append((source, bare))
            continue
        used.add(id(site.page(bare)))
        if built == bare:
            out.matched += 1
        else:
            out.moved.append((source, bare, built))
    out.unmapped = [p.url for p in site.pages if id(p) not in used]
    return out
