"""The published site as ground truth (esrag/sites/built.py): sitemaps read from files and from a
real local HTTP server, built HTML pages parsed with the stdlib parser, computed page URLs and
heading ids matched against them, and (integration) the requests docs built by the real Sphinx
``dirhtml`` builder checked against the ``.html`` URLs esrag computes for them."""

from __future__ import annotations

import functools
import gzip
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from esrag.errors import ConfigError
from esrag.sites.built import (
    BuiltHeading,
    BuiltSite,
    compare,
    parse_page,
    read_built_site,
    read_sitemap,
    route,
    served_forms,
)
from paths import DATA
from site_builds import site_chunks, sphinx_build

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*urls: str) -> str:
    body = "".join(f"<url><loc>\n  {u}\n</loc><lastmod>2026-01-01</lastmod></url>" for u in urls)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{body}</urlset>\n'


def sitemap_index(*locs: str) -> str:
    body = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {NS}>{body}</sitemapindex>\n'


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A real HTTP server on a free port serving a fresh folder: (folder, root URL)."""
    root = tmp_path / "www"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# -- sitemaps ----------------------------------------------------------------------------------


def test_sitemap_file_gives_locs_in_order(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(urlset("https://d.org/b/", "https://d.org/a/", "https://d.org/b/"), encoding="utf-8")
    assert read_sitemap(str(path)) == ["https://d.org/b/", "https://d.org/a/"]


def test_sitemap_without_namespace_is_read(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text("<urlset><url><loc>https://d.org/</loc></url></urlset>", encoding="utf-8")
    assert read_sitemap(str(path)) == ["https://d.org/"]


def test_gzip_sitemap_file(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(urlset("https://d.org/x.html").encode()))
    assert read_sitemap(str(path)) == ["https://d.org/x.html"]


def test_sitemap_index_over_http_with_gzip_part(served: tuple[Path, str]) -> None:
    root, url = served
    (root / "sitemap-0.xml").write_text(urlset(f"{url}a/", f"{url}b/"), encoding="utf-8")
    (root / "sitemap-1.xml.gz").write_bytes(gzip.compress(urlset(f"{url}c/").encode()))
    (root / "sitemap.xml").write_text(sitemap_index(f"{url}sitemap-0.xml", "sitemap-1.xml.gz"), encoding="utf-8")
    assert read_sitemap(url + "sitemap.xml") == [f"{url}a/", f"{url}b/", f"{url}c/"]


def test_local_sitemap_index_reads_its_parts_beside_it(tmp_path: Path) -> None:
    (tmp_path / "sitemap-0.xml").write_text(urlset("https://d.org/a/"), encoding="utf-8")
    (tmp_path / "sitemap-index.xml").write_text(sitemap_index("https://d.invalid/sitemap-0.xml"), encoding="utf-8")
    assert read_sitemap(str(tmp_path / "sitemap-index.xml")) == ["https://d.org/a/"]


def test_sitemap_index_naming_itself_stops(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(sitemap_index("sitemap.xml"), encoding="utf-8")
    assert read_sitemap(str(path)) == []


def test_bad_xml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text("<urlset>\n<url><loc>https://d.org/</url>\n</urlset>", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sitemap .*sitemap\.xml: not well-formed XML at line 2") as info:
        read_sitemap(str(path))
    assert "\n" not in str(info.value)


def test_html_instead_of_a_sitemap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text("<html><body>Not found</body></html>", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sitemap\.xml: the root element is <html>, not <urlset> or <sitemapindex>"):
        read_sitemap(str(path))


def test_missing_file_and_bad_gzip(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.xml: cannot read the file \(No such file"):
        read_sitemap(str(tmp_path / "nope.xml"))
    bad = tmp_path / "sitemap.xml.gz"
    bad.write_bytes(gzip.compress(b"<urlset/>")[:12])
    with pytest.raises(ConfigError, match=r"sitemap\.xml\.gz: not valid gzip"):
        read_sitemap(str(bad))


def test_http_status_names_the_url(served: tuple[Path, str]) -> None:
    _, url = served
    with pytest.raises(ConfigError, match=r"sitemap http://127\.0\.0\.1:\d+/missing\.xml: the server answered HTTP 404"):
        read_sitemap(url + "missing.xml")


def test_unreachable_url_is_one_line() -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ConfigError, match=rf"sitemap http://127\.0\.0\.1:{port}/sitemap\.xml: cannot reach it") as info:
        read_sitemap(f"http://127.0.0.1:{port}/sitemap.xml", timeout=5)
    assert "\n" not in str(info.value)


# -- built pages -------------------------------------------------------------------------------

SPHINX = """<!DOCTYPE html><html><head><title>Models</title></head><body>
<div class="body" role="main">
<section id="models">
<span id="label-models"></span><h1>Models<a class="headerlink" href="#models" title="Link to this heading">¶</a></h1>
<p>Intro with <a href="#fields">a link</a>.</p>
<section id="fields">
<h2>Fields &amp; <code class="docutils literal"><span class="pre">Meta</span></code><a class="headerlink" href="#fields">¶</a></h2>
<dl><dt id="models.Field.name">name</dt></dl>
</section>
<section id="example">
<h2>Example<a class="headerlink" href="#example">¶</a></h2>
</section>
<section id="id1">
<h2>Example<a class="headerlink" href="#id1">¶</a></h2>
</section>
</section>
<div class="section" id="old-style">
<h2>Old style<a class="headerlink" href="#old-style">¶</a></h2>
</div>
</div>
<div class="sphinxsidebar"><h3>Navigation</h3><h3 id="searchlabel">Quick search</h3></div>
</body></html>"""

MKDOCS = """<html><body><nav><h2>Menu</h2></nav><article>
<h1 id="c-and-more">C# and more<a class="headerlink" href="#c-and-more" title="Permanent link">&para;</a></h1>
<h2 id="install">Install <em>it</em><a class="headerlink" href="#install">¶</a></h2>
<h2 id="install_1">Install it<a class="headerlink" href="#install_1">¶</a></h2>
</article></body></html>"""

DOCUSAURUS = """<html><body><header><h1>Intro</h1></header>
<h2 class="anchor anchorWithStickyNavbar_x" id="getting-started">Getting <a href="/other">started</a>\
<a href="#getting-started" class="hash-link" aria-label="Direct link to Getting started">\u200b</a></h2>
<h3 class="anchor" id="step-1">Step\u00a01<a href="#step-1" class="hash-link">#</a></h3>
</body></html>"""


def test_sphinx_section_ids_give_the_headings_ids() -> None:
    headings, ids = parse_page(SPHINX)
    assert headings == [
        BuiltHeading("models", "Models", 1),
        BuiltHeading("fields", "Fields & Meta", 2),
        BuiltHeading("example", "Example", 2),
        BuiltHeading("id1", "Example", 2),
        BuiltHeading("old-style", "Old style", 2),
        BuiltHeading("searchlabel", "Quick search", 3),  # the sidebar's own id; "Navigation" has none
    ]
    assert {"label-models", "models.Field.name", "models"} <= ids


def test_hn_ids_and_permalink_glyphs_are_stripped() -> None:
    mkdocs, _ = parse_page(MKDOCS)
    assert mkdocs == [
        BuiltHeading("c-and-more", "C# and more", 1),
        BuiltHeading("install", "Install it", 2),
        BuiltHeading("install_1", "Install it", 2),
    ]
    docusaurus, _ = parse_page(DOCUSAURUS)
    assert docusaurus == [BuiltHeading("getting-started", "Getting started", 2), BuiltHeading("step-1", "Step 1", 3)]


def test_served_forms_and_routes() -> None:
    assert served_forms("index.html") == ("",)
    assert served_forms("a/index.html") == ("a/", "a")
    assert served_forms("a/b.html") == ("a/b.html", "a/b")
    assert {route(x) for x in ("a/b.html", "a/b/", "a/b", "a/b/index.html")} == {"a/b"}
    assert route("index.html") == route("") == ""


@pytest.fixture
def built(tmp_path: Path) -> BuiltSite:
    out = tmp_path / "site"
    for rel, html in {
        "index.html": "<h1 id='home'>Home</h1>",
        "ref/models.html": SPHINX,
        "guide/index.html": MKDOCS,
        "docs/intro/index.html": DOCUSAURUS,
        "a b.html": "<h1 id='space'>Space</h1>",
        ".git/x.html": "<p>hidden</p>",
    }.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(html, encoding="utf-8")
    return read_built_site(out, "https://docs.x.org")


def test_read_built_site_records_pages_under_their_served_urls(built: BuiltSite) -> None:
    assert [(p.file, p.url) for p in built.pages] == [
        ("a b.html", "https://docs.x.org/a%20b.html"),
        ("docs/intro/index.html", "https://docs.x.org/docs/intro/"),
        ("guide/index.html", "https://docs.x.org/guide/"),
        ("index.html", "https://docs.x.org/"),
        ("ref/models.html", "https://docs.x.org/ref/models.html"),
    ]
    assert built.has_id("https://docs.x.org/ref/models.html", "models.Field.name") is True
    assert built.has_id("https://docs.x.org/ref/models.html", "nope") is False
    assert built.has_id("https://docs.x.org/nope.html", "x") is None


def test_page_url_matches_the_shapes_of_one_route(built: BuiltSite) -> None:
    assert built.page_url("https://docs.x.org/ref/models.html#fields") == "https://docs.x.org/ref/models.html"
    assert built.page_url("https://docs.x.org/ref/models") == "https://docs.x.org/ref/models"  # clean URL served
    assert built.page_url("https://docs.x.org/ref/models/") == "https://docs.x.org/ref/models.html"
    assert built.page_url("https://docs.x.org/guide.html") == "https://docs.x.org/guide/"
    assert built.page_url("https://docs.x.org/guide/index.html") == "https://docs.x.org/guide/"
    assert built.page_url("https://docs.x.org/guide") == "https://docs.x.org/guide"
    assert built.page_url("https://docs.x.org/index.html") == "https://docs.x.org/"
    assert built.page_url("https://docs.x.org") == "https://docs.x.org"
    assert built.page_url("https://docs.x.org/a%20b") == "https://docs.x.org/a%20b"
    assert built.page_url("https://docs.x.org/ref/other.html") is None
    assert built.page_url("https://other.org/ref/models.html") is None


def test_sitemap_urls_fix_a_directory_url_site() -> None:
    site = BuiltSite.from_urls(["https://docs.x.org/ref/models/", "https://docs.x.org/", "https://elsewhere.org/x/"], "https://docs.x.org/")
    assert site.page_url("https://docs.x.org/ref/models.html#fields") == "https://docs.x.org/ref/models/"
    assert site.page_url("https://docs.x.org/index.html") == "https://docs.x.org/"
    assert site.page_url("https://docs.x.org/ref/models/") == "https://docs.x.org/ref/models/"
    assert site.outside == ["https://elsewhere.org/x/"]
    # no heading list: the computed id stays
    assert site.anchor("https://docs.x.org/ref/models/", "Fields", 0, "fields") == "fields"


def test_anchor_prefers_an_existing_id_then_the_title(built: BuiltSite) -> None:
    page = "https://docs.x.org/ref/models.html"
    assert built.anchor(page, "Anything", 0, "models.Field.name") == "models.Field.name"
    assert built.anchor(page, "Example", 0, "example-1") == "example"
    assert built.anchor(page, "Example", 1, "example-1") == "id1"
    assert built.anchor(page, "Example", 2, "example-2") == "example-2"  # no third one
    assert built.anchor(page, "fields &  ``Meta``", 0, "fields-meta") == "fields"  # loose: markup ignored
    assert built.anchor(page, "Nowhere", 0, "nowhere") == "nowhere"
    assert built.anchor("https://docs.x.org/guide.html", "C# and more", 0, "c-and-more-x") == "c-and-more"
    assert built.anchor("https://docs.x.org/missing.html", "Models", 0, "m") == "m"


def test_compare_lists_moved_missing_and_unmapped(built: BuiltSite) -> None:
    result = compare(
        built,
        [
            ("ref/models.rst", "https://docs.x.org/ref/models.html#models"),
            ("guide/index.md", "https://docs.x.org/guide.html"),
            ("gone.md", "https://docs.x.org/gone/"),
        ],
    )
    assert result.matched == 1
    assert result.moved == [("guide/index.md", "https://docs.x.org/guide.html", "https://docs.x.org/guide/")]
    assert result.missing == [("gone.md", "https://docs.x.org/gone/")]
    assert result.unmapped == ["https://docs.x.org/a%20b.html", "https://docs.x.org/docs/intro/", "https://docs.x.org/"]
    assert not result.ok
    assert result.summary() == "1 pages as computed, 1 at another URL in the build, 1 not in the build, 3 built pages from no source"


def test_read_built_site_refuses_an_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"built site .*: no \.html file in it"):
        read_built_site(tmp_path, "https://d.org/")
    with pytest.raises(ConfigError, match=r"built site .*nope: not a folder"):
        read_built_site(tmp_path / "nope", "https://d.org/")


# -- the real Sphinx build ---------------------------------------------------------------------

REQUESTS = DATA / "corpora" / "requests-docs"


@pytest.mark.integration
def test_requests_dirhtml_build_is_the_ground_truth(tmp_path: Path) -> None:
    """esrag computes the ``html`` builder's ``x.html`` URLs for the requests docs (its conf.py
    names no builder); served as ``dirhtml`` every page maps to the built ``x/`` URL, and every
    section title maps to the id Sphinx gave it."""
    base = "https://requests.example.org/"
    out = sphinx_build(REQUESTS / "docs", tmp_path / "requests", "dirhtml", conf_tail='pygments_style = "default"\nhtml_sidebars = {}')
    site = read_built_site(out, base)
    chunks = site_chunks(REQUESTS, None, base).chunks
    pages = sorted({(c.source_path, c.url.split("#", 1)[0]) for c in chunks if c.url})
    assert len(pages) >= 15
    result = compare(site, pages)
    assert result.missing == [] and result.matched == 0
    for _source, computed, built in result.moved:
        assert computed.endswith(".html") and built == (
            computed[: -len("index.html")] if computed.endswith("index.html") else computed[:-5] + "/"
        )
    generated = {u[len(base) :] for u in result.unmapped if not u.startswith(base + "_modules/")}  # viewcode's source pages
    assert generated <= {"genindex/", "search/", "py-modindex/"}
    titled = _titled_sections(chunks)
    assert len(titled) >= 100
    wrong = [(url, title, anchor) for url, title, n, anchor in titled if site.anchor(site.page_url(url) or url, title, n, "?") != anchor]
    assert wrong == []


def _titled_sections(chunks: list) -> list[tuple[str, str, int, str]]:
    """(page URL, section title, ordinal of that title on the page, esrag's anchor) per section."""
    seen: dict[tuple[str, str], None] = {}
    counts: dict[tuple[str, str], int] = {}
    out = []
    for c in chunks:
        if not (c.url and c.anchor and c.section_path) or (c.url, c.anchor) in seen:
            continue
        seen[(c.url, c.anchor)] = None
        page, title = c.url.split("#", 1)[0], c.section_path.split(" > ")[-1]
        n = counts.get((page, title), 0)
        counts[(page, title)] = n + 1
        out.append((page, title, n, c.anchor))
    return out


@pytest.mark.parametrize("url", ["http://exa mple.com/sitemap.xml", "http://[::1/sitemap.xml"])
def test_a_malformed_sitemap_url_is_one_line(url):
    with pytest.raises(ConfigError, match=r"^sitemap .*: not a URL esrag can fetch"):
        read_sitemap(url)


def test_a_sitemap_of_another_host_is_refused(tmp_path):
    """www. against the apex: every page would be 'missing from the build'; the flag says why."""
    from esrag.sites import resolve_site

    (tmp_path / "mkdocs.yml").write_text("site_name: s\nsite_url: https://example.org/\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://www.example.org/a/</loc></url></urlset>',
        encoding="utf-8",
    )
    site = resolve_site(tmp_path, None)
    with pytest.raises(
        ConfigError, match=r"--sitemap .*: 1 of 1 URLs are not under the base URL https://example.org/ \(e\.g\. https://www"
    ):
        site.attach_built(None, str(sitemap))
