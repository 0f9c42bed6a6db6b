"""Header anchors and page URLs per documentation generator (esrag.sites), on the generators'
own test vectors and on the real corpora in shared/data/corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.errors import ConfigError, SourceError
from esrag.formats.markdown_blocks import header_title, parse_blocks, split_header_attrs
from esrag.model import BlockKind, Document
from esrag.sites import Site, resolve_site
from esrag.sites.frontmatter import parse_front_matter
from esrag.sites.registry import page_anchors, site_names
from esrag.sites.slugs import docutils_make_id, github_slug, hugo_slug, mdbook_slug, mkdocs_slug
from paths import DATA, LARAVEL, PROJECT

PYDANTIC = DATA / "corpora" / "pydantic-docs"
ASYNC_BOOK = DATA / "corpora" / "async-book"
REQUESTS = DATA / "corpora" / "requests-docs"


# -- slug rules, on vectors from the generators' own tests --------------------------------------
def test_mkdocs_slug_and_duplicates():  # Python-Markdown toc.slugify / toc.unique
    assert mkdocs_slug("Header 1") == "header-1"
    assert mkdocs_slug("Use `foo()` now".replace("`", "")) == "use-foo-now"
    assert mkdocs_slug("Résumé — žlutý kůň") == "resume-zluty-kun"
    assert mkdocs_slug("🎉 Party!") == "party"
    assert mkdocs_slug("Configuration on the validate_call decorator") == "configuration-on-the-validate_call-decorator"
    assert page_anchors("mkdocs", ["Header", "Header", "Header"]) == ["header", "header_1", "header_2"]
    # an explicit id is taken first: the slug that collides with it is numbered
    assert page_anchors("mkdocs", ["Usage", "Other"], ["", "usage"]) == ["usage_1", "usage"]


def test_mdbook_normalize_id_vectors():  # mdBook utils/mod.rs tests
    assert mdbook_slug("Method-call 🐙 expressions \U0001f47c") == "method-call--expressions-"
    assert mdbook_slug("--passes: add more rustdoc passes") == "--passes-add-more-rustdoc-passes"
    assert mdbook_slug("中文標題 CJK title") == "中文標題-cjk-title"
    assert mdbook_slug("Über") == "Über"  # to_ascii_lowercase
    assert mdbook_slug("_-_12345") == "_-_12345"
    assert page_anchors("mdbook", ["Example", "Example", "Example"]) == ["example", "example-1", "example-2"]


def test_docutils_make_id_and_sphinx_duplicates():
    assert docutils_make_id("Make a Request") == "make-a-request"
    assert docutils_make_id("JSON Response Content") == "json-response-content"
    assert docutils_make_id("1st: Section!") == "st-section"
    assert docutils_make_id("Straße Œuvre ø") == "strasze-oeuvre-o"
    assert docutils_make_id("  Spaces   and\ttabs ") == "spaces-and-tabs"
    assert page_anchors("sphinx", ["Usage", "Usage", "!!!"]) == ["usage", "id1", "id2"]


def test_github_slugger_fixtures():  # github-slugger README / fixtures
    assert github_slug("Привет non-latin 你好") == "привет-non-latin-你好"
    assert github_slug("😄 emoji") == "-emoji"
    assert github_slug("Foo Bar") == "foo-bar" and github_slug("a  b") == "a--b"
    assert github_slug("Via the Gate Facade") == "via-the-gate-facade"
    assert github_slug("Laravel's API: Authentication (v2)?") == "laravels-api-authentication-v2"
    assert page_anchors("github", ["foo", "foo", "foo-1", "bar"]) == ["foo", "foo-1", "foo-1-1", "bar"]
    assert page_anchors("docusaurus", ["Intro", "Intro"]) == ["intro", "intro-1"]


def test_hugo_sanitize_anchor_name_vectors():  # hugo markup/goldmark/autoid_test.go
    cases = {
        "God is good: 神真美好": "god-is-good-神真美好",
        "Number 32": "number-32",
        "Question?": "question",
        "1+2=3": "123",
        'Special !"#$%&(parens)=?´* chars': "special-parens-chars",
        "Resumé": "resumé",
        "One-Hyphen": "one-hyphen",
        "Multiple--Hyphens": "multiple--hyphens",
        "Trailing hyphen-": "trailing-hyphen-",
        "Many   spaces  here": "many---spaces--here",
        "Forward/slash": "forwardslash",
        "Backward\\slash": "backwardslash",
        "Under_score": "under_score",
        "Nonbreaking\u00a0Space": "nonbreakingspace",
        "Tab\tSpace": "tab-space",
        "Trailing Space ": "trailing-space",
    }
    for text, want in cases.items():
        assert hugo_slug(text) == want, text
    assert page_anchors("hugo", ["A", "A", "", ""]) == ["a", "a-1", "heading", "heading-1"]


# -- header attributes and explicit anchors -------------------------------------------------------
def test_header_attribute_lists_leave_the_title():
    assert split_header_attrs("First Steps { #first-steps }") == ("First Steps", "first-steps")
    assert split_header_attrs('"Schema" {: #schema .big data-x="1" }') == ('"Schema"', "schema")
    assert split_header_attrs("Title {#id}") == ("Title", "id")
    assert split_header_attrs("Title { .only-class }") == ("Title", "")
    assert split_header_attrs("Sets {a, b}") == ("Sets {a, b}", "")
    text = 'Intro {#intro}\n=====\n\ntext\n\n## OpenAPI { #openapi }\n\nbody\n\n<a name="x-y"></a>\n### Routing\n\nmore\n'
    headers = [b for b in parse_blocks(text) if b.kind is BlockKind.HEADER]
    assert [(b.section_path, b.anchor) for b in headers] == [
        (("Intro",), "intro"),
        (("Intro", "OpenAPI"), "openapi"),
        (("Intro", "OpenAPI", "Routing"), "x-y"),
    ]
    chunks = HeaderChunker().chunk(Document("a.md", text))
    assert all("{" not in c.section_path for c in chunks)
    assert any("{ #openapi }" in c.text for c in chunks)  # the chunk text stays the source


# -- URL rules -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "site,rel,want",
    [
        ("mkdocs", "a/b.md", "a/b/"),
        ("mkdocs", "a/index.md", "a/"),
        ("mkdocs", "index.md", ""),
        ("mdbook", "a/b.md", "a/b.html"),
        ("mdbook", "a/README.md", "a/index.html"),
        ("sphinx", "user/quickstart.rst", "user/quickstart.html"),
        ("sphinx-dirhtml", "user/quickstart.rst", "user/quickstart/"),
        ("sphinx-dirhtml", "index.rst", ""),
        ("plain", "a/b.md", "a/b"),
        ("github", "docs/a.md", "blob/HEAD/docs/a.md"),
        ("hugo", "Posts/My-Post.md", "posts/my-post/"),
        ("hugo", "posts/_index.md", "posts/"),
        ("hugo", "posts/trip/index.md", "posts/trip/"),
        ("docusaurus", "guides/01-intro.md", "guides/intro"),
        ("docusaurus", "guides/index.md", "guides/"),
    ],
)
def test_page_paths(site, rel, want):
    """Every generator's registered page rule, used when no configuration gives a layout
    (``--site docusaurus`` on a docs folder without docusaurus.config.js; a site found places
    its pages through its layout: tests/test_sites_whole.py)."""
    assert site in site_names()
    assert Site(site, Path("."), Path(".")).page_path(rel, {}) == want


def test_front_matter_url_keys():
    def path(site, rel, front):
        return Site(site, Path("."), Path(".")).page_path(rel, front)

    assert path("docusaurus", "guides/a.md", {"id": "alpha"}) == "guides/alpha"
    assert path("docusaurus", "guides/a.md", {"slug": "/start"}) == "start"
    assert path("docusaurus", "guides/a.md", {"slug": "rel"}) == "guides/rel"
    assert path("docusaurus", "docs/01-guides/02-setup.md", {"slug": "/custom"}) == "custom"
    assert path("hugo", "posts/a.md", {"slug": "Nice"}) == "posts/nice/" and path("hugo", "posts/a.md", {"url": "/x/y/"}) == "x/y/"
    assert path("mkdocs", "a.md", {"permalink": "/p/q/"}) == "p/q/"


def test_front_matter_permalink_wins_on_every_site():
    for site in ("mkdocs", "mdbook", "sphinx", "plain"):
        assert Site(site, Path("."), Path(".")).page_path("a.md", {"permalink": "/p/q/"}) == "p/q/"


def test_front_matter_errors_name_the_file_and_line():
    assert parse_front_matter("---\ntitle: A\ntags: [x, y]\n---\n# H\n", "a.md") == {"title": "A", "tags": ["x", "y"]}
    assert parse_front_matter("+++\ntitle = 'T'\ndraft = true\n+++\nbody", "b.md") == {"title": "T", "draft": True}
    with pytest.raises(SourceError, match=r"^bad\.md: front matter is not valid YAML at line 3"):
        parse_front_matter("---\ntitle: A\ntags: [x, y\n---\n", "bad.md")


def test_bad_site_and_base_url_name_the_flag(tmp_path):
    with pytest.raises(ConfigError, match=r"--site: unknown site 'jekyll'; valid: zensical, mkdocs, mdbook, antora"):
        resolve_site(tmp_path, "jekyll")
    with pytest.raises(ConfigError, match=r"--base-url must be an absolute http\(s\) URL"):
        resolve_site(tmp_path, "plain", "docs.example.com/x")
    with pytest.raises(ConfigError, match="--base-url"):
        resolve_site(tmp_path, "plain", "ftp://example.com/")


# -- real repositories -----------------------------------------------------------------------------
def _chunk_urls(root: Path, rel: str, site=None, base=None, in_tree=False) -> dict[str, str]:
    where = resolve_site(root, site, base)
    doc = Document(rel, (root / rel).read_text(encoding="utf-8"), **({"source": str(root / rel), "root": str(root)} if in_tree else {}))
    assert where.prepare(doc) == ""
    chunks = HeaderChunker().chunk(doc)
    where.apply(doc, chunks)
    return {c.section_path: c.url for c in chunks}


def test_pydantic_mkdocs_urls_from_mkdocs_yml():
    where = resolve_site(PYDANTIC)
    assert (where.site, where.pages_dir.name, where.base_url, where.directory_urls) == (
        "mkdocs",
        "docs",
        "https://docs.pydantic.dev/",
        True,
    )
    base = "https://docs.pydantic.dev/latest/"
    urls = _chunk_urls(PYDANTIC, "docs/concepts/alias.md", base=base)
    assert urls["AliasPath and AliasChoices"] == f"{base}concepts/alias/#aliaspath-and-aliaschoices"  # ## `AliasPath` and `AliasChoices`
    assert urls["Alias Configuration > ConfigDict Settings > Validation"] == f"{base}concepts/alias/#validation"
    assert urls["Alias Configuration > Runtime Settings > Validation"] == f"{base}concepts/alias/#validation_1"  # toc.unique
    urls = _chunk_urls(PYDANTIC, "docs/concepts/config.md", base=base)
    assert urls["Configuration on the @validate_call decorator"] == f"{base}concepts/config/#configuration-on-the-validate_call-decorator"
    urls = _chunk_urls(PYDANTIC, "docs/why.md", base=base)  # ## Type hints powering schema validation {#type-hints}
    assert urls["Why use Pydantic Validation? > Type hints powering schema validation"] == f"{base}why/#type-hints"
    urls = _chunk_urls(PYDANTIC, "docs/errors/usage_errors.md", base=base)
    assert urls["Invalid decorator fields"] == f"{base}errors/usage_errors/#decorator-invalid-fields"
    # every chunk of the tree has a URL, and no section path keeps attribute syntax
    chunker, n = HeaderChunker(), 0
    for path in sorted((PYDANTIC / "docs").rglob("*.md")):
        rel = path.relative_to(PYDANTIC).as_posix()
        doc = Document(rel, path.read_text(encoding="utf-8"))
        where.prepare(doc)
        chunks = chunker.chunk(doc)
        where.apply(doc, chunks)
        for c in chunks:
            n += 1
            assert c.url.startswith("https://docs.pydantic.dev/"), (rel, c.section_path)
            assert "{#" not in c.section_path and "{ #" not in c.section_path, (rel, c.section_path)
    assert n > 800


def test_pydantic_cross_reference_headers_read_and_link_as_mkdocs_autorefs_renders_them():
    # `## Using the [`Field()`][pydantic.Field] function…`: mkdocs-autorefs (pydantic's mkdocs.yml
    # enables mkdocstrings) renders the undefined reference as a link, so the reader sees
    # "Field()" and toc slugifies that text; documents read inside their tree, as ingest does
    base = "https://docs.pydantic.dev/latest/"
    urls = _chunk_urls(PYDANTIC, "docs/concepts/validation_decorator.md", base=base, in_tree=True)
    assert (
        urls["Using the Field() function to describe function parameters"]
        == f"{base}concepts/validation_decorator/#using-the-field-function-to-describe-function-parameters"
    )
    urls = _chunk_urls(PYDANTIC, "docs/examples/custom_validators.md", base=base, in_tree=True)
    assert (
        urls["Custom datetime Validator via Annotated Metadata"]
        == f"{base}examples/custom_validators/#custom-datetime-validator-via-annotated-metadata"
    )
    urls = _chunk_urls(PYDANTIC, "docs/errors/usage_errors.md", base=base, in_tree=True)  # {#id} still wins
    assert urls["Unpack used without a TypedDict"] == f"{base}errors/usage_errors/#unpack-typed-dict"
    assert not [p for p in urls if "][" in p]
    # a defined reference resolves to its text; with no autorefs an undefined one stays literal
    assert header_title("[Gate][g] and [x][]", {"references": {"G": {"href": "/g", "title": ""}}}, True) == "Gate and [x][]"
    assert header_title("[a][b.c] d", autorefs=True) == "a d" and header_title("[a][b.c] d") == "[a][b.c] d"
    # `## :simple-slack: Slack`: pymdownx.emoji (Material icons) renders an SVG, toc slugs "Slack"
    urls = _chunk_urls(PYDANTIC, "docs/help_with_pydantic.md", base=base, in_tree=True)
    assert urls["Getting help with Pydantic > Slack"] == f"{base}help_with_pydantic/#slack"
    assert urls["Getting help with Pydantic > API Documentation"] == f"{base}help_with_pydantic/#api-documentation"
    assert not [p for p in urls if ":simple-" in p or ":material-" in p]
    assert header_title(":material-api: API :smile:", icons=True) == "API :smile:"
    assert header_title(":material-api: API") == ":material-api: API"
    laravel = _chunk_urls(LARAVEL, "authentication.md", "plain", "https://laravel.com/docs/12.x/", in_tree=True)
    assert laravel == _chunk_urls(LARAVEL, "authentication.md", "plain", "https://laravel.com/docs/12.x/")


def test_async_book_mdbook_urls_from_book_toml():
    where = resolve_site(ASYNC_BOOK)
    assert (where.site, where.pages_dir.name, where.base_url) == ("mdbook", "src", "https://rust-lang.github.io/async-book/")
    base = where.base_url
    urls = _chunk_urls(ASYNC_BOOK, "src/01_getting_started/04_async_await_primer.md")
    assert urls["async/.await Primer"] == f"{base}01_getting_started/04_async_await_primer.html#asyncawait-primer"
    urls = _chunk_urls(ASYNC_BOOK, "src/02_execution/03_wakeups.md")
    assert urls["Task Wakeups with Waker > Applied: Build a Timer"] == f"{base}02_execution/03_wakeups.html#applied-build-a-timer"
    urls = _chunk_urls(ASYNC_BOOK, "src/02_execution/01_chapter.md")
    assert (
        urls["Under the Hood: Executing Futures and Tasks"]
        == f"{base}02_execution/01_chapter.html#under-the-hood-executing-futures-and-tasks"
    )
    assert _chunk_urls(ASYNC_BOOK, "README.md") and set(_chunk_urls(ASYNC_BOOK, "README.md").values()) == {""}  # outside src/


def test_laravel_plain_urls_use_the_a_name_anchors():
    base = "https://laravel.com/docs/12.x/"
    urls = _chunk_urls(LARAVEL, "authentication.md", "plain", base)
    assert urls["Authentication > Password Confirmation > Configuration"] == f"{base}authentication#password-confirmation-configuration"
    assert urls["Authentication > Manually Authenticating Users"] == f"{base}authentication#authenticating-users"
    urls = _chunk_urls(LARAVEL, "authorization.md", "plain", base)
    assert urls["Authorization > Gates > Authorizing Actions"] == f"{base}authorization#authorizing-actions-via-gates"
    urls = _chunk_urls(LARAVEL, "artisan.md", "plain", base)
    assert urls["Artisan Console > Command I/O > Prompting for Input > Auto-Completion"] == f"{base}artisan#auto-completion"


def test_laravel_on_github_uses_gfm_slugs_for_headers_without_ids(tmp_path):
    body = "Some text about gates and policies. " * 5
    (tmp_path / "guide.md").write_text(f"# Guide\n\n## Via the `Gate` Facade\n\n{body}\n\n## Via the `Gate` Facade\n\n{body}\n")
    where = resolve_site(tmp_path, "github", "https://github.com/acme/docs")
    doc = Document("guide.md", (tmp_path / "guide.md").read_text())
    chunks = HeaderChunker().chunk(doc)
    where.apply(doc, chunks)
    assert [c.url for c in chunks] == [
        "https://github.com/acme/docs/blob/HEAD/guide.md#via-the-gate-facade",
        "https://github.com/acme/docs/blob/HEAD/guide.md#via-the-gate-facade-1",
    ]
    where = resolve_site(tmp_path, "github", "https://github.com/acme/docs/tree/12.x/")
    where.apply(doc, chunks)
    assert chunks[0].url == "https://github.com/acme/docs/blob/12.x/guide.md#via-the-gate-facade"


def test_requests_sphinx_url_rules_and_make_id():
    where = resolve_site(REQUESTS, base_url="https://requests.readthedocs.io/en/latest/")
    assert (where.site, where.pages_dir.name) == ("sphinx", "docs")
    doc = Document("docs/user/quickstart.rst", (REQUESTS / "docs/user/quickstart.rst").read_text())
    assert where.page_url(doc) == "https://requests.readthedocs.io/en/latest/user/quickstart.html"
    dirhtml = resolve_site(REQUESTS, "sphinx-dirhtml", "https://requests.readthedocs.io/en/latest/")
    assert dirhtml.page_url(doc) == "https://requests.readthedocs.io/en/latest/user/quickstart/"
    text = doc.text
    for title, anchor in (
        ("Make a Request", "make-a-request"),
        ("JSON Response Content", "json-response-content"),
        ("Custom Headers", "custom-headers"),
        ("Errors and Exceptions", "errors-and-exceptions"),
    ):
        assert f"\n{title}\n" in text and docutils_make_id(title) == anchor


def test_draft_pages_are_hidden_and_front_matter_title_wins(tmp_path):
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\nsite_url: https://x.example/\ndocs_dir: pages\nuse_directory_urls: false\n"
        "markdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
    )
    (tmp_path / "pages").mkdir()
    where = resolve_site(tmp_path / "pages")
    assert (where.site, where.base_url, where.directory_urls) == ("mkdocs", "https://x.example/", False)
    body = "A paragraph long enough to stand as a chunk of its own in the header chunker. " * 3
    doc = Document("a.md", f"---\ntitle: From Front Matter\ndescription: d\ntags: [t1]\n---\n# Heading\n\n{body}\n\n## Sub\n\n{body}\n")
    assert where.prepare(doc) == ""
    chunks = HeaderChunker().chunk(doc)
    where.apply(doc, chunks)
    assert doc.title == "From Front Matter" and chunks[0].metadata["tags"] == ["t1"]
    assert chunks[-1].url == "https://x.example/a.html#sub"
    assert where.prepare(Document("b.md", "---\ndraft: true\n---\n# B\n")) == "draft"
    assert where.prepare(Document("c.md", "---\nunlisted: true\n---\n# C\n")) == "unlisted"


SITES_DATA = PROJECT / "tests" / "data" / "sites"


def test_docusaurus_site_slug_and_explicit_ids():  # excerpt of docusaurus.io's own docs
    root = SITES_DATA / "docusaurus"
    where = resolve_site(root)
    # the base URL is the site root (url + baseUrl): the docs route and version path are part of each page path
    assert (where.site, where.base_url, where.pages_dir.name) == ("docusaurus", "https://docusaurus.io/", "docs")
    urls = _chunk_urls(root, "docs/guides/docs/versioning.md")
    assert urls["Directory structure"] == "https://docusaurus.io/docs/versioning#directory-structure"
    assert urls["Directory structure > Tagging a new version"] == "https://docusaurus.io/docs/versioning#tagging-a-new-version"
    assert 'Docs > Figure out the behavior for the "current" version' in urls
    assert all("{#" not in k for k in urls)
    # without the explicit ids, github-slugger gives the same anchors docusaurus.io uses
    assert github_slug('Figure out the behavior for the "current" version') == "figure-out-the-behavior-for-the-current-version"


def test_hugo_site_content_dir_and_autoids():  # excerpt of gohugo.io's own docs
    root = SITES_DATA / "hugo"
    where = resolve_site(root)
    assert (where.site, where.base_url, where.pages_dir.as_posix().endswith("content/en")) == ("hugo", "https://gohugo.io/", True)
    urls = _chunk_urls(root, "content/en/getting-started/usage.md")
    base = "https://gohugo.io/getting-started/usage/"
    assert urls["Draft, future, and expired content"] == f"{base}#draft-future-and-expired-content"
    assert urls["Develop and test your site > LiveReload"] == f"{base}#livereload"
    assert urls["Test your installation"] == f"{base}#test-your-installation"


def test_url_template_and_sphinx_dirhtml_hint(tmp_path):
    (tmp_path / "conf.py").write_text("project = 'x'\nhtml_baseurl = 'https://x.example/en/'\n")
    (tmp_path / ".readthedocs.yaml").write_text("version: 2\nsphinx:\n  builder: dirhtml\n  configuration: conf.py\n")
    where = resolve_site(tmp_path)
    assert (where.site, where.base_url) == ("sphinx-dirhtml", "https://x.example/en/")
    assert where.page_url(Document("guide/install.rst", "")) == "https://x.example/en/guide/install/"
    body = "Enough words in this paragraph to make it a chunk on its own for the chunker. " * 3
    (tmp_path / "p.md").write_text(f"# Page\n\n{body}\n\n## Install It\n\n{body}\n")
    where = resolve_site(tmp_path, "plain", "https://kb.example/", "{base_url}view?doc={path}&v={doc_version}#s-{anchor}", doc_version="2")
    doc = Document("p.md", (tmp_path / "p.md").read_text())
    chunks = HeaderChunker().chunk(doc)
    where.apply(doc, chunks)
    assert chunks[-1].url == "https://kb.example/view?doc=p&v=2#s-install-it"
    bad = resolve_site(tmp_path, "plain", "https://kb.example/", "{base_url}{nope}")
    with pytest.raises(ConfigError, match=r"url_template .*unknown placeholder 'nope'"):
        bad.apply(doc, chunks)


def test_ask_citations_carry_the_link():
    from esrag.answer import group_sources, match_citations
    from esrag.model import Chunk, Hit

    chunk = Chunk(
        id="c1",
        text="t",
        corpus="laravel",
        source_path="scheduling.md",
        section_path="Task Scheduling > Introduction",
        url="https://laravel.com/docs/12.x/scheduling#introduction",
        anchor="introduction",
    )
    found, unsupported = match_citations(["Task Scheduling > Introduction"], group_sources([Hit(chunk, 1.0)]))
    assert unsupported == [] and found[0]["url"] == "https://laravel.com/docs/12.x/scheduling#introduction"


def test_docusaurus_route_base_path(tmp_path):
    (tmp_path / "docusaurus.config.js").write_text(
        "module.exports = {url: 'https://d.example', baseUrl: '/proj/',\n  presets: [['classic', {docs: {routeBasePath: '/'}}]]};\n"
    )
    (tmp_path / "docs").mkdir()
    where = resolve_site(tmp_path)
    assert where.base_url == "https://d.example/proj/"
    assert where.page_url(Document("docs/guides/02-setup.md", "")) == "https://d.example/proj/guides/setup"
