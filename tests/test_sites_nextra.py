"""Nextra 4 (:mod:`esrag.sites.nextra`): detection, the app router's routes (route groups,
private, dynamic and slot folders), content-directory mode, ``basePath``, i18n, heading ids, and
the whole ``nextra-docs`` corpus.

Conformance: heading ids against Nextra's own MDX compiler from npm (:mod:`nextra_build`: every
section URL's anchor is an id the compiled page has, and the h1 has none); page URLs against the
documented rule (the Next.js app router conventions; a real ``next build`` of the corpus needs the
layout, components and ``examples/`` its pages import, which the corpus lacks): every
``page.mdx`` at its folder path (the corpus README: ``app/docs/guide/markdown/page.mdx`` ->
``/docs/guide/markdown``), and the site's own ``/page#anchor`` links landing on the section URLs
esrag computes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from esrag.errors import ConfigError
from esrag.sites.layout import OUTSIDE
from esrag.sites.nextra import DYNAMIC, GENERATOR, META, NOT_A_PAGE, PRIVATE, SLOT, detect, nextra_anchors, route_of
from paths import DATA

sys.path.insert(0, str(Path(__file__).parent))
from site_builds import site_chunks  # noqa: E402

CORPUS = DATA / "corpora" / "nextra-docs"

NEXT_CONFIG = """import nextra from 'nextra'

// nextra({ contentDirBasePath: '/wrong' }) in a comment is not read
const withNextra = nextra({ contentDirBasePath: '/docs', latex: true })

export default withNextra({
  basePath: '/site',
  i18n: { locales: ['en', 'de'], defaultLocale: 'en' }
})
"""


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def test_anchors_github_slugger_with_custom_ids():
    titles = ["Long heading about Nextra [#about-nextra]", "Setup", "Setup", "Typesetting [#Typesetting Section]"]
    assert nextra_anchors(titles, [""] * 4) == ["about-nextra", "setup", "setup-1", "typesetting-section"]


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        (["docs", "guide"], ("docs/guide", "")),
        (["(marketing)", "about"], ("about", "")),
        ([], ("", "")),
        (["_internal", "x"], ("", PRIVATE)),
        (["blog", "[slug]"], ("", DYNAMIC)),
        (["[[...mdxPath]]"], ("", DYNAMIC)),
        (["@modal", "x"], ("", SLOT)),
    ],
)
def test_app_router_routes(folders, expected):
    assert route_of(folders) == expected


def test_app_router_site_with_base_path_and_locales(tmp_path):
    project(
        tmp_path,
        {
            "next.config.mjs": NEXT_CONFIG,
            "app/page.mdx": "# Home\n",
            "app/en/docs/page.mdx": "# Docs\n",
            "app/de/docs/page.mdx": "# Doku\n",
            "app/(group)/about/page.md": "# About\n",
            "app/docs/old.mdx": "# Old\n",
            "app/_meta.js": "export default {}\n",
            "components/x.mdx": "# Part\n",
        },
    )
    found = detect(tmp_path)
    assert found is not None and found.site == "nextra" and found.confidence == 1.0
    layout = found.layout
    placed = {
        rel: layout.place(tmp_path / rel, {})
        for rel in ("app/page.mdx", "app/en/docs/page.mdx", "app/de/docs/page.mdx", "app/(group)/about/page.md")
    }
    assert {k: (p.path, p.language, p.translation) for k, p in placed.items()} == {
        "app/page.mdx": ("site", "", False),
        "app/en/docs/page.mdx": ("site/en/docs", "en", False),
        "app/de/docs/page.mdx": ("site/de/docs", "de", True),
        "app/(group)/about/page.md": ("site/about", "", False),
    }
    assert layout.skip_reason(tmp_path / "app/docs/old.mdx", {}) == NOT_A_PAGE
    assert layout.skip_reason(tmp_path / "app/_meta.js", {}) == META
    assert layout.skip_reason(tmp_path / "components/x.mdx", {}) == OUTSIDE


def test_content_directory_mode(tmp_path):
    project(
        tmp_path,
        {
            "package.json": '{"dependencies": {"nextra": "^4.0.0", "next": "^15"}}',
            "next.config.mjs": NEXT_CONFIG,
            "app/[[...mdxPath]]/page.jsx": "export default function Page() {}\n",
            "content/index.mdx": "# Home\n",
            "content/guide/index.mdx": "# Guide\n",
            "content/guide/setup.md": "# Setup\n",
            "content/_meta.js": "export default {}\n",
        },
    )
    layout = detect(tmp_path).layout
    assert [layout.place(tmp_path / "content" / r, {}).path for r in ("index.mdx", "guide/index.mdx", "guide/setup.md")] == [
        "site/docs",
        "site/docs/guide",
        "site/docs/guide/setup",
    ]
    assert layout.skip_reason(tmp_path / "content/_meta.js", {}) == META


def test_catch_all_below_a_route_and_locale_content(tmp_path):
    """Nextra's own examples: ``src/app/docs/[[...mdxPath]]`` (examples/docs) and
    ``app/[lang]/[[...mdxPath]]`` with ``content/<locale>/`` (examples/swr-site)."""
    project(
        tmp_path,
        {
            "package.json": '{"devDependencies": {"nextra": "4"}}',
            "src/app/[lang]/[[...mdxPath]]/page.tsx": "export default 1\n",
            "src/content/en/index.mdx": "# Home\n",
            "src/content/ru/docs/a.mdx": "# A\n",
        },
    )
    layout = detect(tmp_path).layout
    en, ru = (layout.place(tmp_path / "src/content" / r, {}) for r in ("en/index.mdx", "ru/docs/a.mdx"))
    assert (en.path, en.language, en.translation) == ("en", "", False)  # no i18n in the config: no locales
    assert ru.path == "ru/docs/a"


def test_not_nextra_and_bad_config(tmp_path):
    project(tmp_path, {"app/page.tsx": "export default 1\n", "package.json": '{"dependencies": {"next": "15"}}'})
    assert detect(tmp_path) is None  # a Next.js app without MDX pages
    project(tmp_path, {"app/docs/page.mdx": "# Docs\n"})
    assert detect(tmp_path) is None  # a Next.js MDX site of another kind (package.json without nextra)
    (tmp_path / "package.json").unlink()
    assert detect(tmp_path).confidence < 1.0  # a docs folder copied out of its project: assumed, with a note
    (tmp_path / "package.json").write_text("{oops", encoding="utf-8")
    (tmp_path / "app" / "page.mdx").write_text("# X\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="package.json"):
        detect(tmp_path)


@pytest.fixture(scope="module")
def corpus():
    return site_chunks(CORPUS, None, "https://nextra.site/")


def test_corpus_every_page_at_its_folder_path(corpus):
    assert corpus.site.site == "nextra" and any("Nextra assumed" in n for n in corpus.site.notes)
    pages = sorted(p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("page.mdx"))
    indexed = {c.source_path for c in corpus.chunks}
    assert len(pages) == 51 and set(pages) == indexed
    assert dict(corpus.skipped) == {
        "docs/app/docs/custom-theme/old.mdx": NOT_A_PAGE,
        "docs/app/docs/docs-theme/built-ins/layout/old.mdx": NOT_A_PAGE,
        "docs/components/example-tsdoc.mdx": OUTSIDE,
        "docs/components/install-nextra-theme.mdx": OUTSIDE,
        "docs/components/ready-to-go.mdx": OUTSIDE,
    }
    urls = {c.source_path: c.url.split("#")[0] for c in corpus.chunks}
    assert urls["docs/app/docs/guide/markdown/page.mdx"] == "https://nextra.site/docs/guide/markdown"
    assert urls["docs/app/about/page.mdx"] == "https://nextra.site/about"


def test_corpus_own_links_land_on_pages_and_sections(corpus):
    """The site's own links (``/docs/x``, ``/docs/x#anchor``) to a page the corpus holds
    (``docs/app/docs/x/page.mdx``) against the page and section URLs esrag computes: all land
    (links to pages generated from code, which the corpus lacks, are not counted)."""
    urls = {u for c in corpus.chunks for u in (c.url, *c.alt_urls)}
    pages = {u.split("#")[0] for u in urls}
    ok = total = 0
    for path in (CORPUS / "docs" / "app").rglob("page.mdx"):
        for m in re.finditer(r"\]\((/[a-z][^)#\s]*)(#[^)\s]+)?\)", path.read_text(encoding="utf-8")):
            if (CORPUS / "docs" / "app" / m.group(1).strip("/") / "page.mdx").is_file():
                url = f"https://nextra.site{m.group(1).rstrip('/')}"
                total, ok = total + 1, ok + ((url + m.group(2)) in urls if m.group(2) else url in pages)
    assert total >= 10 and ok == total


@pytest.mark.integration
def test_nextra_compile_conformance(corpus):
    """Every section URL of the corpus is its page URL (an h1, which Nextra gives no id) or the
    page URL + an id Nextra's compiler gives one of the page's headings: >= 99 %; and the
    compiled pages' ids are nearly all section addresses esrag gives (GFM's generated
    ``footnote-label`` heading is no section of the source)."""
    from nextra_build import heading_ids

    pages = sorted({CORPUS / c.source_path for c in corpus.chunks})
    built = heading_ids(pages)
    sections = {(c.source_path, c.url) for c in corpus.chunks}
    ok = sum(1 for src, url in sections if "#" not in url or url.split("#", 1)[1] in built[CORPUS / src])
    wrong = sorted(u for src, u in sections if "#" in u and u.split("#", 1)[1] not in built[CORPUS / src])
    print(f"nextra-docs: {ok}/{len(sections)} section URLs match Nextra {len(built)} compiled pages")
    assert len(sections) > 150 and ok >= 0.99 * len(sections), wrong[:20]
    ours = {(CORPUS / c.source_path, u.split("#", 1)[1]) for c in corpus.chunks for u in (c.url, *c.alt_urls) if "#" in u}
    theirs = {(p, i) for p, ids in built.items() for i in ids if i != "footnote-label"}
    assert len(theirs - ours) <= 0.02 * len(theirs), sorted(theirs - ours)[:20]
    assert not [c for c in corpus.chunks if c.section_path.count(">") == 0 and c.section_path and "#" in c.url], "an h1 has no id"


def test_generator_entry():
    assert GENERATOR.name == "nextra" and not GENERATOR.title_from_front
