"""Docusaurus and Hugo read from their own configuration, proven on the two whole sites in
shared/data/corpora (docusaurus-docs: facebook/docusaurus website/; hugo-docs: gohugoio/hugoDocs),
plus detection up to the repository root and the ingest summary's site / file_report blocks.

Hugo: Debian's ``hugo`` (scripts/test installs it) builds a copy of hugoDocs with stand-in
templates (the corpus has no theme), and every section URL esrag writes must be a page of the
build with an element of that id. Docusaurus: its build needs the site's React sources, which the
corpus does not hold, so the whole site is checked against Docusaurus's own rules instead: every
internal link the authors wrote (the build fails on broken links) must land on a page and an
anchor esrag wrote.
"""

from __future__ import annotations

import html
import json
import os
import posixpath
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.config import load_settings
from esrag.filereport import SUFFIX_NOT_READ
from esrag.formats.shortcodes import content_finder, expand
from esrag.ingest import Ingester
from esrag.model import Document
from esrag.sites import resolve_site
from esrag.sites.docusaurus import doc_slug, read_docusaurus, strip_number_prefix
from esrag.sites.hugo import read_hugo, sanitize_path
from esrag.sites.jsconfig import UNKNOWN, evaluate
from esrag.sources import discover, load_document
from paths import DATA

DOCUSAURUS = DATA / "corpora" / "docusaurus-docs" / "website"
HUGO = DATA / "corpora" / "hugo-docs"


def site_pages(root: Path):
    """Every page of the tree as ``esrag ingest`` reads it (no embedding): the Site, and per
    indexed file (page URL, all header anchors, doc_version, chunks); skipped files by reason."""
    site = resolve_site(root)
    settings = load_settings()
    pages, skipped = {}, {}
    for src in discover(root, settings.ingest.include, settings.ingest.exclude):
        doc = load_document(src, "c", 5_000_000)
        reason = site.prepare(doc)
        if reason:
            skipped.setdefault(reason, []).append(src.rel)
            continue
        doc.source, doc.root = str(src.path), str(src.root)
        chunks = HeaderChunker().chunk(doc)
        site.apply(doc, chunks)
        anchors = [a for a, _ in site.section_anchors(doc)]
        pages[src.rel] = (site.page_url(doc), set(anchors), doc.doc_version, chunks, doc.problems)
    return site, pages, skipped


# -- the JS/TS configuration reader --------------------------------------------------------------
def test_js_config_comments_templates_and_typescript():
    cfg = evaluate("""
        import type {Config} from '@docusaurus/types';
        const base = '/proj/';
        const config: Config = {
          url: `https://x.example`,          // a template literal without substitutions is a string
          baseUrl: base,
          title: `Site ${process.env.NAME}`, // computed
          // routeBasePath: '/',
          /* trailingSlash: true, */
          presets: [['classic', ({docs: {path: 'docs', editUrl: ({locale}) => `e/${locale}`}}) satisfies Preset.Options]],
          plugins: [async function local() { return {name: 'x'}; }, ['content-docs', {id: 'api', path: 'api'}]],
          re: /a\\/b[/]/g,
          tail: 'ok',
        };
        export default config;
    """)
    assert cfg["url"] == "https://x.example" and cfg["baseUrl"] == "/proj/" and cfg["tail"] == "ok"
    assert cfg["title"] is UNKNOWN and "routeBasePath" not in cfg and "trailingSlash" not in cfg
    assert cfg["presets"][0][1]["docs"]["path"] == "docs" and cfg["presets"][0][1]["docs"]["editUrl"] is UNKNOWN
    assert cfg["plugins"][0] is UNKNOWN and cfg["plugins"][1] == ["content-docs", {"id": "api", "path": "api"}]


def test_js_config_function_returning_the_config(tmp_path):
    # the shape of facebook/docusaurus website/docusaurus.config.ts (2025): an async function
    # returning the object, values computed from the environment, a commented-out routeBasePath
    (tmp_path / "docusaurus.config.ts").write_text("""
        import versions from './versions.json';
        const baseUrl = process.env.BASE_URL ?? '/';
        const isDeployPreview = !!process.env.NETLIFY && process.env.CONTEXT === 'deploy-preview';
        function getLastVersion() { return versions[0]; }
        export default async function createConfigAsync() {
          return {
            baseUrl,
            url: 'https://docusaurus.io',
            trailingSlash: isDeployPreview,
            plugins: [['content-docs', {id: 'community', path: 'community', routeBasePath: 'community',
                       editUrl: ({locale}) => { return `x/${locale}`; }} satisfies DocsOptions]],
            presets: [['classic', {docs: {
                // routeBasePath: '/',
                path: 'docs',
                lastVersion: isDeployPreview ? 'current' : getLastVersion(),
                onlyIncludeVersions: (() => { return undefined; })(),
                versions: {current: {label: `${getNextVersionName()} 🚧`}},
            }}]],
          };
        }
    """)
    (tmp_path / "versions.json").write_text('["3.8.1", "3.7.0"]')
    (tmp_path / "versioned_docs/version-3.8.1").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    layout = read_docusaurus(tmp_path)
    assert layout is not None and layout.base_url == "https://docusaurus.io/" and layout.trailing_slash is None
    routes = {v.name: v.route for p in layout.plugins if p.id == "default" for v in p.versions}
    assert routes == {"current": "/docs/next/", "3.8.1": "/docs/", "3.7.0": "/docs/3.7.0/"}
    notes = " ".join(layout.describe()["notes"])
    assert "baseUrl is computed" in notes and "lastVersion is computed" in notes and "version-3.7.0 does not exist" in notes


def test_docusaurus_commented_route_base_path_is_not_read():
    layout = read_docusaurus(DOCUSAURUS)
    assert layout is not None
    routes = {v.name: v.route for p in layout.plugins if p.id == "default" for v in p.versions}
    assert routes == {"current": "/docs/next/", "3.8.1": "/docs/"}  # lastVersion 3.8.1, onlyIncludeVersions


# -- Docusaurus rules ----------------------------------------------------------------------------
def test_docusaurus_slug_rules():
    assert strip_number_prefix("01-intro") == "intro" and strip_number_prefix("003 - x") == "x"
    assert strip_number_prefix("2021-01-01-post") == "2021-01-01-post" and strip_number_prefix("1.2-x") == "1.2-x"
    assert doc_slug("01-guides/02-setup.md", {}) == "/guides/setup"
    assert doc_slug("guides/index.md", {}) == doc_slug("guides/README.mdx", {}) == doc_slug("guides/guides.md", {}) == "/guides/"
    assert doc_slug("guides/a.md", {"id": "alpha"}) == "/guides/alpha"
    assert doc_slug("guides/a.md", {"slug": "/start"}) == "/start"
    assert doc_slug("guides/a.md", {"slug": "rel"}) == "/guides/rel"
    assert doc_slug("guides/a.md", {"slug": "../up"}) == "/up"
    assert doc_slug("01-a/02-b.md", {"parse_number_prefixes": False}) == "/01-a/02-b"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_docusaurus_versions_locales_and_plugins(tmp_path):
    _write(
        tmp_path,
        {
            "docusaurus.config.ts": """const config = {url: 'https://d.example', baseUrl: '/b/', trailingSlash: true,
            i18n: {defaultLocale: 'en', locales: ['en', 'fr']},
            presets: [['@docusaurus/preset-classic', {docs: {versions: {'1.0': {path: 'legacy'}}}}]],
            plugins: [['@docusaurus/plugin-content-docs', {id: 'api', path: 'api', routeBasePath: 'reference'}]]};
            export default config;""",
            "versions.json": '["2.0", "1.0"]',
            "docs/01-intro.md": "# Intro\n",
            "docs/_partial.mdx": "Shared text.\n",
            "versioned_docs/version-2.0/01-intro.md": "# Intro 2\n",
            "versioned_docs/version-1.0/guide/index.md": "# Guide 1\n",
            "i18n/fr/docusaurus-plugin-content-docs/current/01-intro.md": "# Intro fr\n",
            "api/cli.md": "---\nslug: /commands\n---\n# CLI\n",
            "README.md": "# Repo\n",
        },
    )
    site = resolve_site(tmp_path)
    assert site.site == "docusaurus" and site.base_url == "https://d.example/b/"
    placed = {
        rel: site.layout.place(tmp_path / rel, {"slug": "/commands"} if rel == "api/cli.md" else {})
        for rel in (
            "docs/01-intro.md",
            "versioned_docs/version-2.0/01-intro.md",
            "versioned_docs/version-1.0/guide/index.md",
            "i18n/fr/docusaurus-plugin-content-docs/current/01-intro.md",
            "api/cli.md",
        )
    }
    assert {rel: (p.path, p.doc_version, p.language) for rel, p in placed.items()} == {
        "docs/01-intro.md": ("docs/next/intro/", "current", "en"),
        "versioned_docs/version-2.0/01-intro.md": ("docs/intro/", "2.0", "en"),
        "versioned_docs/version-1.0/guide/index.md": ("docs/legacy/guide/", "1.0", "en"),
        "i18n/fr/docusaurus-plugin-content-docs/current/01-intro.md": ("fr/docs/next/intro/", "current", "fr"),
        "api/cli.md": ("reference/commands/", "current", "en"),
    }
    assert site.layout.skip_reason(tmp_path / "docs/_partial.mdx", {}).startswith("excluded by the docs plugin")
    assert site.layout.skip_reason(tmp_path / "README.md", {}) == "outside the generator's content folders"
    assert site.doc_versions() == ["current", "2.0", "1.0"]


def test_docusaurus_whole_site_urls_versions_and_links():
    site, pages, skipped = site_pages(DOCUSAURUS)
    assert site.base_url == "https://docusaurus.io/"
    chunks = [c for p in pages.values() for c in p[3]]
    assert len(chunks) > 1500 and all(re.match(r"https://docusaurus.io/docs(/|#|$)", c.url) for c in chunks)
    # the two versions are told apart: current at /docs/next/, 3.8.1 (the last release) at /docs/
    for rel, (url, _, version, page_chunks, _) in pages.items():
        assert version == ("3.8.1" if rel.startswith("versioned_docs/version-3.8.1/") else "current"), rel
        assert url.startswith("https://docusaurus.io/docs/next") == (version == "current"), (rel, url)
        assert all(c.doc_version == version for c in page_chunks)
    assert pages["docs/guides/docs/versioning.mdx"][0] == "https://docusaurus.io/docs/next/versioning"
    assert pages["versioned_docs/version-3.8.1/introduction.mdx"][0] == "https://docusaurus.io/docs"
    assert all(c.anchor for c in chunks if c.section_path and "{#" not in c.section_path)
    assert sorted(skipped) == ["excluded by the docs plugin's include/exclude (e.g. a _partial)"]
    # the partial a page imports is shown where it is used, so its heading is on that page
    assert "tags-file" in pages["docs/api/plugins/plugin-content-docs.mdx"][1]
    # every internal link the authors wrote lands on a page and an anchor esrag wrote
    by_url = {url.rstrip("/"): anchors for url, anchors, *_ in pages.values()}
    link = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
    checked, bad = 0, []
    for rel in pages:
        text = re.sub(r"```.*?```", "", (DOCUSAURUS / rel).read_text(encoding="utf-8"), flags=re.S)
        version_root = "/".join(rel.split("/")[:2]) if rel.startswith("versioned_docs/") else "docs"
        for m in link.finditer(text):
            path, _, anchor = m.group(1).partition("#")
            if path.startswith("/docs") and not re.match(r"/docs/(\d|[23]\.x|category/)", path):
                anchors = by_url.get("https://docusaurus.io" + path.rstrip("/"))
            elif re.search(r"\.mdx?$", path) and "://" not in path and not path.startswith("@site"):
                # Docusaurus resolves a file link from the linking file, then from the version's root
                tr = posixpath.normpath(posixpath.join(posixpath.dirname(rel), unquote(path)))
                tr = tr if tr in pages else posixpath.normpath(posixpath.join(version_root, unquote(path).lstrip("/")))
                anchors = pages[tr][1] if tr in pages else None
            else:
                continue
            checked += 1
            if anchors is None or (anchor and anchor not in anchors):
                bad.append((rel, m.group(1)))
    # the only misses are the example links of the page that documents links ("target.mdx")
    assert checked > 700 and [b for b in bad if "target.mdx" not in b[1]] == []


# -- Hugo ----------------------------------------------------------------------------------------
def test_hugo_config_dirs_mounts_languages_and_front_matter(tmp_path):
    _write(
        tmp_path,
        {
            "config/_default/hugo.toml": "baseURL = 'https://h.example/'\ndefaultContentLanguage = 'en'\n"
            "defaultContentLanguageInSubdir = true\n",
            "config/_default/languages.toml": "[en]\nweight = 1\n[fr]\nweight = 2\n[de]\ndisabled = true\n",
            "config/_default/module.toml": "[[mounts]]\nsource = 'content/english'\ntarget = 'content'\nlang = 'en'\n"
            "[[mounts]]\nsource = 'content/french'\ntarget = 'content'\nlang = 'fr'\n"
            "[[mounts]]\nsource = 'shared'\ntarget = 'content/shared'\nexcludeFiles = '**/skip.md'\n",
            "content/english/_index.md": "# Home\n",
            "content/english/Posts/My Post.md": "---\naliases: [/old/, older]\n---\n# P\n",
            "content/english/posts/bundle/index.md": "# Bundle\n",
            "content/english/posts/bundle/extra.md": "# A page resource\n",
            "content/english/posts/slugged.md": "---\nslug: Nice Name\n---\n# S\n",
            "content/english/posts/fixed.md": "---\nurl: /fixed/Here/\n---\n# F\n",
            "content/english/posts/draft.md": "---\ndraft: true\n---\n# D\n",
            "content/english/hidden/_index.md": "---\ncascade:\n  build:\n    render: never\n---\n",
            "content/english/hidden/part.md": "# Part\n",
            "content/french/posts/a.fr.md": "# A\n",
            "shared/s.md": "# S\n",
            "shared/skip.md": "# skip\n",
            "notes.md": "# outside\n",
        },
    )
    layout = read_hugo(tmp_path)
    assert layout is not None and layout.base_url == "https://h.example/" and layout.languages == ["en", "fr"]

    def where(rel: str) -> tuple[str, str, list[str]] | str:
        from esrag.sites.frontmatter import parse_front_matter

        file = tmp_path / rel
        front = parse_front_matter(file.read_text(), rel)
        reason = layout.skip_reason(file, front)
        placed = layout.place(file, front)
        return reason or (placed.path, placed.language, placed.alt_paths)

    assert where("content/english/_index.md") == ("en/", "en", [])
    assert where("content/english/Posts/My Post.md") == ("en/posts/my-post/", "en", ["old/", "en/Posts/older"])
    assert where("content/english/posts/bundle/index.md") == ("en/posts/bundle/", "en", [])
    assert where("content/english/posts/slugged.md") == ("en/posts/nice-name/", "en", [])
    assert where("content/english/posts/fixed.md") == ("fixed/Here/", "en", [])
    assert where("content/french/posts/a.fr.md") == ("fr/posts/a/", "fr", [])
    assert where("shared/s.md") == ("en/shared/s/", "en", [])
    assert where("content/english/posts/bundle/extra.md") == "page resource of a leaf bundle (not a page)"
    assert where("content/english/posts/draft.md") == "draft"
    assert where("content/english/hidden/part.md") == "not built by the generator (headless or render: never)"
    assert where("shared/skip.md") == where("notes.md") == "outside the generator's content folders"
    assert sanitize_path("A b/C+d?.md") == "a-b/c+d.md" and sanitize_path("Keep Case", lower=False) == "Keep-Case"


def test_hugo_permalinks_and_heading_id_type(tmp_path):
    _write(
        tmp_path,
        {
            "hugo.yaml": "baseURL: https://p.example/\npermalinks:\n  page:\n    posts: /:year/:month/:slug/\n"
            "  section:\n    posts: /articles/\n"
            "markup:\n  goldmark:\n    parser:\n      autoHeadingIDType: github-ascii\n",
            "content/posts/_index.md": "# Posts\n",
            "content/posts/a.md": "---\ntitle: Hello World\ndate: 2024-03-05\n---\n",
            "content/docs/b.md": "# B\n\n## Café Über\n\nText of the section, long enough to be a chunk of its own here.\n",
        },
    )
    site = resolve_site(tmp_path)  # hugo.yaml found above content/ too (see the detection test)
    pages = {
        rel: site.page_url(_prepared(site, tmp_path, rel)) for rel in ("content/posts/_index.md", "content/posts/a.md", "content/docs/b.md")
    }
    assert pages == {
        "content/posts/_index.md": "https://p.example/articles/",
        "content/posts/a.md": "https://p.example/2024/03/hello-world/",
        "content/docs/b.md": "https://p.example/docs/b/",
    }
    doc = _prepared(site, tmp_path, "content/docs/b.md")
    chunks = HeaderChunker().chunk(doc)
    site.apply(doc, chunks)
    assert chunks[-1].url == "https://p.example/docs/b/#cafe-uber"  # not #café-über: the ascii id type


def _prepared(site, root: Path, rel: str) -> Document:
    doc = Document(rel, (root / rel).read_text())
    assert site.prepare(doc) == ""
    return doc


def test_hugo_shortcodes_show_what_the_reader_sees(tmp_path):
    _write(tmp_path, {"content/_common/part.md": "---\n_build: {render: never}\n---\n## From the part\n\nIncluded text.\n"})
    text = (
        "# T\n\nNew {{< new-in 0.1 >}} text.\n\n{{< code-toggle file=hugo >}}\n# a TOML comment\nx = 1\n"
        "{{< /code-toggle >}}\n\n{{% note %}}\n**Markdown** inside.\n{{% /note %}}\n\n```\n{{</* example */>}}\n```\n\n"
        '{{% include "/_common/part.md" %}}\n\n{{% include "/_common/missing.md" %}}\n\n{{< img\n  src="a.png"\n>}}\nend\n'
    )
    root = tmp_path / "content"
    got = expand(text, root / "page.md", content_finder([(root.resolve(), "")]))
    joined = "\n".join(got.lines)
    assert "{{" not in joined.replace("{{< example >}}", "")  # delimiters gone, the comment form shown as Hugo shows it
    assert "New  text." in joined and "```\n# a TOML comment\nx = 1\n```" in joined and "**Markdown** inside." in joined
    assert "## From the part\n\nIncluded text." in joined
    assert len(got.problems) == 1 and "missing.md" in got.problems[0] and got.problems[0].startswith("line 20:")
    assert got.line_map[got.lines.index("end")] == text.split("\n").index("end") + 1  # later lines keep their numbers


@pytest.fixture(scope="module")
def hugo_build(tmp_path_factory):
    """hugoDocs built by Debian's hugo with stand-in templates: pages show ``.Content``; each
    shortcode shows its inner content, ``include`` the named page's source (what hugoDocs'
    ``.RenderShortcodes`` shows, which this older hugo lacks)."""
    assert shutil.which("hugo"), "hugo is not installed: scripts/test installs Debian's hugo (apt-get install hugo)"
    site = tmp_path_factory.mktemp("hugo") / "site"
    shutil.copytree(HUGO, site)
    for p in site.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    layouts = site / "layouts"
    (layouts / "_default").mkdir(parents=True)
    (layouts / "shortcodes").mkdir()
    page = "<!doctype html><html><body>{{ .Content }}</body></html>\n"
    for name in ("_default/single.html", "_default/list.html", "index.html"):
        (layouts / name).write_text(page)
    names = set()
    for f in (site / "content").rglob("*.md"):
        names |= set(re.findall(r"\{\{[<%]\s*/?\s*([\w-]+)", f.read_text(encoding="utf-8")))
    paired = set()
    for f in (site / "content").rglob("*.md"):
        paired |= set(re.findall(r"\{\{[<%]\s*/\s*([\w-]+)", f.read_text(encoding="utf-8")))
    for name in names:
        body = "{{ .Inner }}" if name in paired else ""
        if name == "include":
            body = "{{ with .Get 0 }}{{ with or ($.Page.GetPage .) (site.GetPage .) }}{{ .RawContent }}{{ end }}{{ end }}"
        (layouts / "shortcodes" / f"{name}.html").write_text(body)
    out = site / "public"
    proc = subprocess.run(
        ["hugo", "--quiet", "-d", str(out)],
        cwd=site,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HUGO_ENVIRONMENT": "production"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.integration
def test_hugo_whole_site_every_section_url_is_in_the_build(hugo_build):
    site, pages, skipped = site_pages(HUGO)
    assert site.base_url == "https://gohugo.io/"
    chunks = [c for p in pages.values() for c in p[3]]
    assert len(chunks) > 2000 and all(c.url for c in chunks)
    assert not any("/en/" in c.url for c in chunks)  # content/en is mounted as content
    # 346 code-toggle, 214 include, 157 new-in in the source: what is left are the examples written
    # in Hugo's comment form {{</* x */>}}, which the reader sees as {{< x >}}
    names = r"\s*/?\s*(code-toggle|include|new-in)\b"
    shown = len(re.findall(r"\{\{[<%]" + names, "\n".join(c.text for c in chunks)))
    find = content_finder([(m.source, m.target) for m in site.layout.mounts])
    examples = 0
    for rel in pages:
        text = (HUGO / rel).read_text(encoding="utf-8")
        included = [find(p, HUGO / rel) for p in re.findall(r'\{\{%\s*include\s+"([^"]+)"\s*%\}\}', text)]
        for t in [text] + [f.read_text(encoding="utf-8") for f in included if f is not None]:
            examples += len(re.findall(r"\{\{[<%]/\*" + names, t))
    assert shown <= examples
    assert sum(len(v) for v in skipped.values()) < 0.3 * (len(pages) + sum(len(v) for v in skipped.values()))
    ids: dict[Path, set[str] | None] = {}
    bad = []
    for c in chunks:
        page, _, anchor = c.url.partition("#")
        path = unquote(page.removeprefix("https://gohugo.io/"))
        f = hugo_build / path / "index.html" if path.endswith("/") or not path else hugo_build / path
        if f not in ids:
            ids[f] = {html.unescape(i) for i in re.findall(r'\sid="([^"]*)"', f.read_text())} if f.is_file() else None
        if ids[f] is None or (anchor and anchor not in ids[f]):
            bad.append(c.url)
    assert len(bad) <= 0.01 * len(chunks), bad[:20]
    sass = [c for c in chunks if c.source_path == "content/en/functions/css/Sass.md"]
    assert sass and sass[0].url.startswith("https://gohugo.io/functions/css/sass/")
    usage = next(c for c in chunks if c.source_path == "content/en/getting-started/usage.md" and c.anchor == "livereload")
    assert "https://gohugo.io/usage/#livereload" in usage.alt_urls  # front matter aliases


# -- detection and the ingest report ---------------------------------------------------------------
def test_detection_walks_up_to_the_repository_root(tmp_path):
    _write(
        tmp_path,
        {
            "outer/mkdocs.yml": "site_name: outside the repo\n",
            "outer/repo/.git/HEAD": "ref: x\n",
            "outer/repo/hugo.toml": "baseURL = 'https://r.example/'\n",
            "outer/repo/content/a/b/c.md": "# C\n",
        },
    )
    found = resolve_site(tmp_path / "outer/repo/content/a/b")
    assert (found.site, found.base_url) == ("hugo", "https://r.example/")
    (tmp_path / "outer/repo/hugo.toml").unlink()
    (tmp_path / "outer/repo/content").rename(tmp_path / "outer/repo/docs")
    assert resolve_site(tmp_path / "outer/repo/docs").site == "plain"  # mkdocs.yml above the repository is not read


class _Fake:
    """A deterministic embedder (this test is about files and versions, not vectors)."""

    spec, dims = "fake:hash", 8

    def embed_documents(self, texts, progress=None):
        import numpy as np

        out = np.array([[((hash(t) >> (4 * i)) & 15) + 1.0 for i in range(8)] for t in texts], dtype="float32")
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def _ingest(store, root: Path, site=None, allow_delete=False):
    settings = load_settings()
    where = site or resolve_site(root)
    ing = Ingester(
        store,
        "fake:hash",
        _Fake,
        HeaderChunker(),
        ["text"],
        {"text": 1.0},
        site=where,
        doc_version=where.doc_version,
        allow_delete=allow_delete,
    )
    return ing.run(root, "c", settings.ingest.include, settings.ingest.exclude)


def test_ingest_versions_and_file_report(sqlite_store, tmp_path):
    body = "Words enough to make this paragraph a chunk of its own in the header chunker, surely. " * 3
    _write(
        tmp_path,
        {
            "docusaurus.config.js": "module.exports = {url: 'https://v.example', baseUrl: '/', presets: [['classic', {}]]};",
            "versions.json": '["1.0"]',
            "docs/a.md": f"# A now\n\n{body}\n",
            "versioned_docs/version-1.0/a.md": f"# A then\n\n{body}\n",
            "docs/_part.md": "# partial\n",
            "docs/logo.svg": "<svg/>",
            "blog/post.md": "# outside the docs plugin\n",
        },
    )
    summary = _ingest(sqlite_store, tmp_path)
    chunks = sqlite_store.source_chunks("docs/a.md") + sqlite_store.source_chunks("versioned_docs/version-1.0/a.md")
    assert {(c.doc_version, c.url) for c in chunks} == {
        ("current", "https://v.example/docs/next/a#a-now"),
        ("1.0", "https://v.example/docs/a#a-then"),
    }
    report = summary.file_report
    assert report["indexed"] == 2 and report["text_files"] == 7
    assert report["skipped"][SUFFIX_NOT_READ]["count"] == 3  # the svg, versions.json and the config
    assert report["skipped"]["outside the generator's content folders"]["examples"] == ["blog/post.md"]
    assert summary.site["generator"] == "docusaurus" and [v["name"] for v in summary.site["versions"]] == ["current", "1.0"]
    assert summary.coverage_warning == ""
    # re-ingest after a version is dropped: its chunks go, the other version's stay
    shutil.rmtree(tmp_path / "versioned_docs")
    (tmp_path / "versions.json").write_text("[]")
    # every stored chunk would go (the 1.0 page, and docs/a.md's 'current' id): the deletion guard asks first
    assert _ingest(sqlite_store, tmp_path).deletion_guard.refused
    again = _ingest(sqlite_store, tmp_path, allow_delete=True)
    assert again.chunks_deleted >= 1 and sqlite_store.source_chunks("versioned_docs/version-1.0/a.md") == []
    assert [c.doc_version for c in sqlite_store.source_chunks("docs/a.md")] == [""]


def test_coverage_warning_names_the_largest_skipped_group(sqlite_store, tmp_path):
    _write(
        tmp_path,
        {
            "conf.py": "project = 'x'\n",
            **{f"topics/t{i}.txt": f"Topic {i}\n=======\n\nText.\n" for i in range(5)},
            "index.rst": "Index\n=====\n\nText.\n",
        },
    )
    summary = _ingest(sqlite_store, tmp_path, resolve_site(tmp_path, "sphinx"))
    assert summary.file_report["indexed"] == 1 and summary.file_report["text_files"] == 7
    assert summary.coverage_warning.startswith("only 1 of 7 text files under the docs root")
    assert f"'{SUFFIX_NOT_READ}' (6 files" in summary.coverage_warning


def test_cli_summary_shows_site_and_files(tmp_path):
    from test_cli import run

    _write(
        tmp_path,
        {
            "site/hugo.toml": "baseURL = 'https://c.example/'\n",
            "site/content/a.md": "# A\n\nSome text for the page.\n",
            "site/content/b.md": "---\ndraft: true\n---\n# B\n",
            "site/content/data.json": "{}",
        },
    )
    out = json.loads(run(["ingest", "site", "--json"], tmp_path).stdout)
    assert out["site"]["generator"] == "hugo" and out["site"]["base_url"] == "https://c.example/"
    assert out["file_report"]["indexed"] == 1 and out["file_report"]["skipped"]["draft"]["examples"] == ["content/b.md"]
    table = run(["ingest", "site"], tmp_path).stderr
    assert "hugo" in table and "text files" in table and "draft" in table


def test_unreadable_generator_configuration_is_a_one_line_error(tmp_path):
    from esrag.errors import ConfigError

    _write(
        tmp_path,
        {
            "a/docusaurus.config.js": "module.exports = {\n  url: 'https://x.example,\n};\n",
            "b/hugo.toml": "baseURL = 'https://y.example/'\n[languages\n",
        },
    )
    with pytest.raises(ConfigError, match=r"docusaurus\.config\.js: line 2: unterminated string"):
        resolve_site(tmp_path / "a")
    with pytest.raises(ConfigError, match=r"hugo\.toml: not valid TOML"):
        resolve_site(tmp_path / "b")


def test_notebooks_sphinx_publishes_are_read(sqlite_store, tmp_path):
    """nbsphinx registers .ipynb: the notebook is a page Sphinx builds, read by
    esrag.formats.notebook at the URL Sphinx gives it (``nb.ipynb`` -> ``nb.html``)."""
    _write(
        tmp_path,
        {
            "conf.py": 'extensions = ["nbsphinx"]\n',
            "index.rst": "Index\n=====\n\nText.\n",
            "nb.ipynb": '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# NB\\n", "\\n", "Text."]}], '
            '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n',
        },
    )
    site = resolve_site(tmp_path, None, "https://x.dev/")
    summary = _ingest(sqlite_store, tmp_path, site)
    skipped = summary.file_report["skipped"]
    assert skipped["suffix not read"]["examples"] == ["conf.py"]
    assert summary.file_report["indexed"] == 2
    assert {c.url for c in sqlite_store.source_chunks("nb.ipynb")} == {"https://x.dev/nb.html#nb"}


@pytest.mark.integration
def test_search_without_a_language_reads_each_site_in_its_default_locale(sqlite_store, tmp_path):
    """Issue 36: a Starlight site with a Japanese translation; `esrag search` without --lang
    answers from the default locale only (the translation is stored with ``translation``), with
    --lang ja from the translation, and a page only the default locale has is found either way."""
    from esrag.service import SearchRequest, SearchService

    config = (
        "import starlight from '@astrojs/starlight';\n"
        "export default { site: 'https://x.dev', integrations: [starlight({ title: 'X', "
        "locales: { root: { label: 'English', lang: 'en' }, ja: { label: '日本語' } } })] };\n"
    )
    _write(
        tmp_path,
        {
            "astro.config.mjs": config,
            "src/content/docs/guide.md": "---\ntitle: Guide\n---\n\nConfigure the formatter with biome.json.\n",
            "src/content/docs/ja/guide.md": "---\ntitle: ガイド\n---\n\nConfigure the formatter with biome.json (ja).\n",
        },
    )
    summary = _ingest(sqlite_store, tmp_path, resolve_site(tmp_path, None))
    assert summary.file_report["indexed"] == 2
    service = SearchService(load_settings(), sqlite_store)

    def paths(**kw):
        return {h.chunk.source_path for h in service.search(SearchRequest("configure the formatter", mode="bm25", **kw)).hits}

    assert paths() == {"src/content/docs/guide.md"}
    assert paths(languages=["ja"]) == {"src/content/docs/ja/guide.md"}
    assert paths(languages=["en", "ja"]) == {"src/content/docs/guide.md", "src/content/docs/ja/guide.md"}


def test_merged_anchors_never_name_another_chunk(tmp_path):
    """Headers of an included file all map to the directive's line: a section that is a chunk of
    its own (Beta) is never another chunk's alt_url (a link resolves to one chunk), while a short
    section merged into a chunk (the page's intro) is one of that chunk's addresses."""
    from esrag.app import make_chunker

    _write(
        tmp_path,
        {
            "mkdocs.yml": "site_name: s\nsite_url: https://s.dev/\nmarkdown_extensions:\n  - pymdownx.snippets\n",
            "docs/page.md": '# Page\n\nintro\n\n--8<-- "part.md"\n',
            "docs/part.md": "## Alpha\n\nshort\n\n## Beta\n\n" + "long text " * 400 + "\n",
        },
    )
    where = resolve_site(tmp_path, None)
    settings = load_settings()
    src = next(f for f in discover(tmp_path, settings.ingest.include, []) if f.rel == "docs/page.md")
    doc = load_document(src, "c", 10**6)
    assert where.prepare(doc) == ""
    doc.source, doc.root = str(src.path), str(where.include_root)  # as the ingest does
    chunks = make_chunker(settings).chunk(doc)
    where.apply(doc, chunks)
    by_url = {c.url: c for c in chunks}
    assert "https://s.dev/page/#beta" in by_url
    assert all("https://s.dev/page/#beta" not in c.alt_urls for c in chunks)
    # the short intro of "# Page" went into the Alpha chunk: a link to #page lands there
    assert [c.alt_urls for c in chunks if c.url == "https://s.dev/page/#alpha"] == [["https://s.dev/page/#page"]]


def test_a_corpus_of_translations_only_says_so(sqlite_store, tmp_path):
    """Ingesting one translation of a site (its locale folder): every page is a translation, so a
    search without --lang would find none of them; the summary counts them and warns once."""
    config = (
        "import starlight from '@astrojs/starlight';\n"
        "export default { integrations: [starlight({ title: 'X', locales: { root: { label: 'English', lang: 'en' }, ja: { label: 'J' } } })] };\n"
    )
    _write(tmp_path, {"astro.config.mjs": config, "src/content/docs/ja/a.md": "# A\n\ntext\n", "src/content/docs/ja/b.md": "# B\n\ntext\n"})
    summary = _ingest(sqlite_store, tmp_path, resolve_site(tmp_path, None))
    assert summary.translated_pages == 2 and summary.file_report["indexed"] == 2
    assert summary.language_warning.startswith("every indexed page (2) is a translation")
    assert summary.to_dict()["translated_pages"] == 2


def test_a_docusaurus_repository_from_its_root_keeps_every_version(tmp_path):
    """docusaurus-docs ingested from the repository root (the site found below, in website/):
    the current docs and every version the layout places are indexed (versioned_docs/ lies
    outside the docs folder, but the layout, not the docs folder, decides what is a page)."""
    from site_builds import site_chunks

    written = site_chunks(DATA / "corpora" / "docusaurus-docs", None, "https://docusaurus.io/")
    assert written.site is not None and written.site.site == "docusaurus"
    versions = {c.doc_version for c in written.chunks}
    assert {"current", "3.8.1"} <= versions
    assert any(
        c.source_path.startswith("website/versioned_docs/") and c.url.startswith("https://docusaurus.io/docs/") for c in written.chunks
    )
    reasons = {reason for _, reason in written.skipped}
    assert "outside the generator's source folder" not in reasons
