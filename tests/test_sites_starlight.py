"""Starlight (Astro): the site's configuration, which files are pages, their URLs and languages,
and heading ids (:mod:`esrag.sites.starlight`); and the biome website built by the real Astro +
Starlight (integration), whose every section URL esrag writes must name a built page and id."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from esrag.errors import ConfigError
from esrag.sites.generator import Generator
from esrag.sites.jsconfig import call_arguments
from esrag.sites.layout import OUTSIDE, Layout
from esrag.sites.starlight import (
    DRAFT,
    GENERATOR,
    HIDDEN,
    NOT_A_PAGE,
    NOT_FOUND,
    PARTIAL,
    StarlightLayout,
    astro_anchors,
    detect,
    entry_slug,
    page_slug,
)
from paths import DATA

BIOME = DATA / "corpora" / "starlight-biome"


def site(tmp_path: Path, config: str, files: dict[str, str] | None = None) -> Path:
    """A Starlight site in ``tmp_path``: ``astro.config.mjs`` and pages under src/content/docs."""
    (tmp_path / "astro.config.mjs").write_text(config, encoding="utf-8")
    for rel, text in (files or {"index.md": "# Home\n"}).items():
        path = tmp_path / "src" / "content" / "docs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def config(astro: str = "", options: str = "title: 'X'") -> str:
    return (
        "import { defineConfig } from 'astro/config';\n"
        "import starlight from '@astrojs/starlight';\n"
        "// starlight({ locales: { fr: {} } }) in a comment is not read\n"
        f"export default defineConfig({{\n  site: 'https://docs.example.com',\n  {astro}\n"
        f"  integrations: [starlight({{ {options} }})],\n}});\n"
    )


def layout_of(folder: Path) -> StarlightLayout:
    found = detect(folder)
    assert found is not None
    assert isinstance(found.layout, StarlightLayout)
    return found.layout


def place(layout: StarlightLayout, rel: str, front: dict | None = None):
    return layout.place(layout.docs_dir / rel, front or {})


# -- the generator and detection ---------------------------------------------------------------
def test_generator_contract():
    assert isinstance(GENERATOR, Generator)
    assert GENERATOR.name == "starlight" and GENERATOR.page_path is None and GENERATOR.title_from_front
    assert GENERATOR.config_files == ("astro.config.{mjs,js,ts,mts}",)


def test_detect_biome_corpus():
    found = detect(BIOME)
    assert found is not None and found.site == "starlight" and found.confidence == 1.0
    assert found.pages_dir == (BIOME / "src" / "content" / "docs").resolve()
    assert found.base_url == "https://biomejs.dev/"
    assert found.config == BIOME / "astro.config.mjs"
    assert isinstance(found.layout, Layout)
    assert found.layout.locales.langs == {"root": "en", "ja": "ja"}


def test_detect_needs_starlight_or_docs_folder(tmp_path):
    (tmp_path / "astro.config.mjs").write_text("import { defineConfig } from 'astro/config';\nexport default defineConfig({});\n")
    assert detect(tmp_path) is None  # a plain Astro site
    (tmp_path / "src" / "content" / "docs").mkdir(parents=True)
    found = detect(tmp_path)
    assert found is not None and found.confidence < 1.0 and any("@astrojs/starlight" in n for n in found.notes)
    assert detect(tmp_path / "src") is None  # no configuration there


def test_detect_typescript_config_and_base(tmp_path):
    (tmp_path / "astro.config.ts").write_text(
        "import starlight from '@astrojs/starlight';\nimport { defineConfig } from 'astro/config';\n"
        "const site = 'https://example.org/';\n"
        "export default defineConfig({ site, base: '/docs', integrations: [starlight({ title: 'Docs' }) as any] });\n"
    )
    found = detect(tmp_path)
    assert found is not None and found.base_url == "https://example.org/docs/"


def test_unreadable_config_names_the_file(tmp_path):
    (tmp_path / "astro.config.mjs").write_text("import starlight from '@astrojs/starlight';\nexport default { site: 'x\n")
    with pytest.raises(ConfigError, match=r"astro\.config\.mjs.*unterminated string"):
        detect(tmp_path)


def test_computed_options_are_noted(tmp_path):
    site(
        tmp_path,
        "import starlight from '@astrojs/starlight';\nexport default { site: process.env.SITE, integrations: [starlight(opts)] };\n",
    )
    found = detect(tmp_path)
    assert found is not None and found.base_url == ""
    assert any("site is computed" in n for n in found.notes) and any("starlight() options" in n for n in found.notes)


def test_call_arguments_finds_the_integration_options():
    text = "import sl from '@astrojs/starlight';\nexport default defineConfig({ integrations: [react(), sl({ title: 'T', locales: { root: { lang: 'de' } } })] });"
    assert call_arguments(text, "@astrojs/starlight") == [{"title": "T", "locales": {"root": {"lang": "de"}}}]
    assert call_arguments(text, "@astrojs/markdoc") is None
    assert call_arguments("import s from '@astrojs/starlight';\ns();", "@astrojs/starlight") == [{}]


# -- slugs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("rel", "slug"),
    [
        ("index.md", "index"),  # Astro keeps the root index; Starlight maps it to ''
        ("guides/index.mdx", "guides"),
        ("guides/Index.md", "guides"),  # slugged first, then /index dropped
        ("Guides/Getting Started.md", "guides/getting-started"),
        ("reference/01 - intro.md", "reference/01---intro"),  # no number-prefix rule; spaces kept as -
        ("blog/biome-v1.5.md", "blog/biome-v15"),  # dots dropped
        ("api/foo_bar.md", "api/foo_bar"),
        ("ja/ガイド/はじめに.md", "ja/ガイド/はじめに"),
        ("de/Über uns.mdx", "de/über-uns"),
        ("c++/what's new?.md", "c/whats-new"),
        ("index/nested.md", "index/nested"),
    ],
)
def test_entry_slug(rel, slug):
    assert entry_slug(rel) == slug


def test_page_slug_front_matter_and_index():
    assert page_slug("index.md", {}) == ""
    assert page_slug("a/B.md", {"slug": "custom/Path"}) == "custom/Path"  # as written, not slugged
    assert page_slug("a/b.md", {"slug": "/x/"}) == "x"
    assert page_slug("a/b.md", {"slug": ""}) == "a/b"
    assert page_slug("a/b.md", {"slug": 2024}) == "2024"


# -- pages, skips and URLs -----------------------------------------------------------------------
def test_skip_reasons(tmp_path):
    layout = layout_of(site(tmp_path, config(), {"index.md": "# x\n"}))
    docs = layout.docs_dir
    assert layout.skip_reason(docs / "guide.mdx", {}) == ""
    assert layout.skip_reason(docs / "_partial.mdx", {}) == PARTIAL
    assert layout.skip_reason(docs / "_shared" / "page.md", {}) == ""  # only file names count
    assert layout.skip_reason(docs / ".drafts" / "page.md", {}) == HIDDEN
    assert layout.skip_reason(docs / "notes.mdoc", {}) == NOT_A_PAGE  # Markdoc is not an integration
    assert layout.skip_reason(docs / "page.mkd", {}) == ""
    assert layout.skip_reason(tmp_path / "README.md", {}) == OUTSIDE
    assert layout.skip_reason(tmp_path / "src" / "content" / "other" / "a.md", {}) == OUTSIDE
    assert layout.skip_reason(docs / "wip.md", {"draft": True}) == DRAFT
    assert layout.skip_reason(docs / "404.md", {}) == NOT_FOUND
    assert layout.skip_reason(docs / "ja" / "404.md", {}) == ""
    assert place(layout, "_partial.md") is None


def test_markdoc_integration_adds_mdoc(tmp_path):
    text = (
        config()
        .replace("import starlight", "import markdoc from '@astrojs/markdoc';\nimport starlight")
        .replace("integrations: [", "integrations: [markdoc(), ")
    )
    found = detect(site(tmp_path, text))
    assert found is not None and found.layout.skip_reason(found.pages_dir / "a.mdoc", {}) == ""
    assert "*.mdoc" in found.include and found.formats[".mdoc"] == "markdown"


@pytest.mark.parametrize(
    ("astro", "rel", "front", "path"),
    [
        ("", "index.md", {}, ""),
        ("", "guides/Getting Started.md", {}, "guides/getting-started/"),
        ("", "guides/index.md", {}, "guides/"),
        ("", "a/b.md", {"slug": "elsewhere/page"}, "elsewhere/page/"),
        ("trailingSlash: 'always',", "a/b.md", {}, "a/b/"),
        ("trailingSlash: 'ignore',", "a/b.md", {}, "a/b/"),
        ("trailingSlash: 'never',", "a/b.md", {}, "a/b"),
        ("build: { format: 'file' },", "a/b.md", {}, "a/b.html"),
        ("build: { format: 'file' }, trailingSlash: 'always',", "a/index.md", {}, "a.html"),
        ("build: { format: 'file' },", "index.md", {}, ""),
        ("build: { format: 'preserve' },", "a/b.md", {}, "a/b.html"),
        ("base: '/docs/', trailingSlash: 'never',", "index.md", {}, ""),
    ],
)
def test_page_paths(tmp_path, astro, rel, front, path):
    layout = layout_of(site(tmp_path, config(astro)))
    placed = place(layout, rel, front)
    assert placed is not None and placed.path == path and placed.language == ""


def test_base_and_site(tmp_path):
    found = detect(site(tmp_path, config("base: 'v2',")))
    assert found is not None and found.base_url == "https://docs.example.com/v2/"
    assert found.layout.describe()["base_path"] == "/v2/"


# -- locales -------------------------------------------------------------------------------------
ROOT_AND_JA = "defaultLocale: 'root', locales: { root: { label: 'English', lang: 'en' }, ja: { label: '日本語' }, 'zh-cn': { label: '简体中文', lang: 'zh-CN' } }"


def test_locales_root_language_and_fallbacks(tmp_path):
    files = {"index.md": "", "guide.md": "", "ja/index.md": "", "ja/guide.md": "", "only-en.md": "", "draft.md": "---\ndraft: true\n---\n"}
    layout = layout_of(site(tmp_path, config(options=ROOT_AND_JA), files))
    en = place(layout, "guide.md")
    assert en is not None and en.path == "guide/" and en.language == "en"
    assert en.alt_paths == ["zh-cn/guide/"]  # ja has its own guide; zh-cn falls back to English
    ja = place(layout, "ja/guide.md")
    assert ja is not None and ja.path == "ja/guide/" and ja.language == "ja" and ja.alt_paths == []  # lang: the key
    zh = place(layout, "zh-cn/x.md")
    assert zh is not None and zh.language == "zh-CN"
    home = place(layout, "index.md")
    assert home is not None and home.path == "" and home.alt_paths == ["zh-cn/"]
    assert layout.describe()["languages"] == ["en", "ja", "zh-CN"]
    assert not en.translation and not home.translation and ja.translation and zh.translation  # root is the default


def test_locales_without_root(tmp_path):
    options = "defaultLocale: 'en', locales: { en: { label: 'English' }, fr: { label: 'Français', lang: 'fr-FR' } }"
    layout = layout_of(site(tmp_path, config(options=options), {"en/a.md": "", "fr/b.md": ""}))
    a = place(layout, "en/a.md")
    assert a is not None and a.path == "en/a/" and a.language == "en" and a.alt_paths == ["fr/a/"]
    b = place(layout, "fr/b.md")
    assert b is not None and b.language == "fr-FR" and b.alt_paths == []
    stray = place(layout, "notes.md")  # outside every locale folder: the default locale's
    assert stray is not None and stray.language == "en"
    assert not a.translation and b.translation and not stray.translation


def test_single_root_locale_is_monolingual(tmp_path):
    layout = layout_of(site(tmp_path, config(options="locales: { root: { label: 'Deutsch', lang: 'de' } }"), {"a.md": ""}))
    assert not layout.locales.multilingual and layout.locales.default_lang == "de"
    placed = place(layout, "a.md")
    assert placed is not None and placed.language == "" and placed.alt_paths == [] and not placed.translation
    assert layout.describe()["languages"] == ["de"]


def test_unknown_default_locale_is_an_error(tmp_path):
    site(tmp_path, config(options="defaultLocale: 'de', locales: { en: {}, fr: {} }"))
    with pytest.raises(ConfigError, match="defaultLocale 'de'"):
        detect(tmp_path)


# -- heading ids ---------------------------------------------------------------------------------
def test_anchors_github_slugger_per_page():
    titles = ["Summary", "How to configure", "Examples", "Invalid", "Valid", "Examples", "Invalid", "Valid", "Invalid"]
    assert astro_anchors(titles, [""] * len(titles)) == [
        "summary",
        "how-to-configure",
        "examples",
        "invalid",
        "valid",
        "examples-1",
        "invalid-1",
        "valid-1",
        "invalid-2",
    ]


def test_anchors_trailing_dash_and_explicit_ids():
    assert astro_anchors(["Options ", "`ignore`", "Ünïcode ✓", "C++", "What's new?"], [""] * 5) == [
        "options",  # "options-" loses its trailing dash (rehypeHeadingIds)
        "ignore",
        "ünïcode",
        "c",
        "whats-new",
    ]
    # an id written in HTML is kept and not counted: the next "Setup" is still "setup"
    assert astro_anchors(["Setup", "Setup", "Setup"], ["setup", "", ""]) == ["setup", "setup", "setup-1"]
    assert astro_anchors(["A -", "A -"], ["", ""]) == ["a-", "a---1"]  # "a--" -> "a-"; then "a---1"


def test_biome_rule_pages_repeat_headings():
    layout = layout_of(BIOME)
    page = BIOME / "src" / "content" / "docs" / "linter" / "rules" / "no-barrel-file" / "javascript.mdx"
    placed = layout.place(page, {})
    assert placed is not None and placed.path == "linter/rules/no-barrel-file/javascript/" and placed.language == "en"
    assert placed.alt_paths == ["ja/linter/rules/no-barrel-file/javascript/"]  # no Japanese translation: a fallback page


def test_biome_corpus_pages():
    layout = layout_of(BIOME)
    files = sorted(p for p in layout.docs_dir.rglob("*") if p.is_file())
    reasons = {p.relative_to(layout.docs_dir).as_posix(): layout.skip_reason(p, {}) for p in files}
    assert reasons["404.md"] == NOT_FOUND
    assert sum(1 for r in reasons.values() if not r) == len(files) - 1
    ja = layout.place(layout.docs_dir / "ja" / "index.mdx", {})
    assert ja is not None and ja.path == "ja/" and ja.language == "ja"


# -- the real build ------------------------------------------------------------------------------
@pytest.mark.integration
def test_starlight_build_conformance(tmp_path):
    from site_builds import Build, check, site_chunks
    from starlight_build import build

    base = "https://biomejs.dev/"
    copy = tmp_path / "starlight-biome"
    shutil.copytree(BIOME, copy)
    out, seconds, stubbed = build(BIOME, "biome")
    print(f"starlight-biome: astro build {seconds:.0f} s; stubbed {len(stubbed)} modules")
    written = site_chunks(copy, None, base)
    assert written.site is not None and written.site.site == "starlight"  # detected with no --site
    report = check(Build(out, base), written.chunks)
    print(f"starlight-biome: {report}")
    assert report.urls > 1000 and report.share >= 0.99, report
    assert len(report.alt_failed) <= 0.01 * report.alt_urls, report
    # every page the build emitted is a page esrag indexed (or a fallback of one), or was skipped with a reason
    built = {p.relative_to(out).as_posix() for p in out.rglob("*.html")}
    indexed = {_page_file(u, base) for c in written.chunks for u in (c.url, *c.alt_urls) if u}
    accounted = indexed | ({"404.html"} if any(reason == NOT_FOUND for _, reason in written.skipped) else set())
    unaccounted = sorted(built - accounted)
    print(f"starlight-biome: {len(built)} pages built, {len(built) - len(unaccounted)} indexed or skipped with a reason")
    assert unaccounted == [], unaccounted[:20]


def _page_file(url: str, base: str) -> str:
    path = url.split("#", 1)[0][len(base) :]
    return path + "index.html" if path == "" or path.endswith("/") else path


def test_front_matter_after_blank_lines(tmp_path):
    """Astro's frontmatterRE accepts blank lines before the opening ``---`` (biome's
    getting-started page starts with one): the title is read, no setext header is made of the
    front matter, and every content line keeps its number."""
    from esrag.app import make_chunker
    from esrag.config import load_settings
    from esrag.sites import resolve_site
    from esrag.sites.frontmatter import lift_front_matter
    from esrag.sources import discover, load_document

    assert lift_front_matter("\n\n---\ntitle: A\n---\ntext\n") == "---\ntitle: A\n---\n\n\ntext\n"
    assert lift_front_matter("\ntext\n---\n") == "\ntext\n---\n"  # no front matter after the blank lines
    root = site(
        tmp_path,
        config(),
        {
            "guides/start.mdx": "\n---\ntitle: Getting Started\nslug: begin\n---\n\n## Install\n\n"
            + "npm i " * 300
            + "\n\n## Use\n\n"
            + "run " * 300
        },
    )
    where = resolve_site(root, None, None)
    src = next(f for f in discover(root, load_settings().ingest.include, []) if f.rel.endswith("start.mdx"))
    doc = load_document(src, "c", 10**6)
    assert where.prepare(doc) == ""
    chunks = make_chunker(load_settings()).chunk(doc)
    where.apply(doc, chunks)
    assert doc.title == "Getting Started"
    install = next(c for c in chunks if c.section_path == "Getting Started > Install")
    assert install.start_line == 7 and install.url == "https://docs.example.com/begin/#install"
    assert install.metadata["page_heading"] == "Getting Started"  # in the meta hash: a re-ingest rewrites the path
    assert not any("title-getting-started" in (c.url or "") for c in chunks)


def test_merged_short_sections_keep_their_addresses(tmp_path):
    """Starlight's badges page: ``### text`` and ``### size`` are too short to be chunks of their
    own, so the chunker merges them into ``## Badge props``; a link to ``#text`` must still land
    on that chunk (``alt_urls``), and a chunk's own URL is never repeated there."""
    from esrag.app import make_chunker
    from esrag.config import load_settings
    from esrag.sites import resolve_site
    from esrag.sources import discover, load_document

    page = "---\ntitle: Badges\n---\n\n## Badge props\n\nThe props.\n\n### text\n\nThe text.\n\n### size\n\nThe size.\n"
    root = site(tmp_path, config(), {"components/badges.mdx": page})
    where = resolve_site(root, None, None)
    src = next(f for f in discover(root, load_settings().ingest.include, []) if f.rel.endswith("badges.mdx"))
    doc = load_document(src, "c", 10**6)
    assert where.prepare(doc) == ""
    chunks = make_chunker(load_settings()).chunk(doc)
    where.apply(doc, chunks)
    base = "https://docs.example.com/components/badges/"
    holding = [c for c in chunks if "The size." in c.text]
    assert len(holding) == 1 and len(chunks) == 1, [c.section_path for c in chunks]
    assert f"{base}#text" in holding[0].alt_urls and f"{base}#size" in holding[0].alt_urls
    assert holding[0].url not in holding[0].alt_urls
