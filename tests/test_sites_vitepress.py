"""The VitePress generator (:mod:`esrag.sites.vitepress`) and its includes
(:mod:`esrag.formats.vitepress_includes`): configuration reading, page paths, languages,
anchors, ``<!--@include-->`` and ``<<<`` snippets; and (integration) the vitepress-docs corpus
built by the real ``vitepress`` from npm, every section URL esrag writes checked against it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from esrag.formats.includes import context_for, resolve
from esrag.sites import path_to_regexp
from esrag.sites.layout import EXCLUDED, OUTSIDE
from esrag.sites.vitepress import ALWAYS_EXCLUDED, DYNAMIC_ROUTE, GENERATOR, NOT_MARKDOWN, detect, page_anchors, slugify

# (title, slug) pairs printed by node with the real npm package @mdit-vue/shared@3.0.2
# (`slugify` of dist/index.js, the version VitePress 2.0.0-alpha.20 depends on), 2026-12-06.
MDIT_VUE_SLUGS = [
    ("Hello World", "hello-world"),
    ("  Leading and trailing  ", "leading-and-trailing"),
    ("What's new in 2.0?", "what-s-new-in-2-0"),
    ("2.0 release", "_2-0-release"),
    ("1st place", "_1st-place"),
    ("\xdcber Caf\xe9", "uber-cafe"),
    ("cr\xe8me br\xfbl\xe9e", "creme-brulee"),
    ("useData composable", "usedata-composable"),
    ("`<Content />` component", "content-component"),
    ("$frontmatter template global", "frontmatter-template-global"),
    ("Title default", "title-default"),
    ("a--b__c", "a-b-c"),
    ("Foo_Bar", "foo-bar"),
    ("C# and F#", "c-and-f"),
    ("Emoji \U0001f389", "emoji-\U0001f389"),
    ("\u4e2d\u6587\u6807\u9898", "\u4e2d\u6587\u6807\u9898"),
    ("\u7b80\u4f53\u4e2d\u6587 \u914d\u7f6e", "\u7b80\u4f53\u4e2d\u6587-\u914d\u7f6e"),
    ("\ufb01 ligature \u2460", "fi-ligature-1"),
    ("\uff21\uff42\uff43 fullwidth", "abc-fullwidth"),
    ("Tab\there", "tabhere"),
    ("Quotes \u201csmart\u201d \u2018single\u2019", "quotes-smart-single"),
    ("a/b\\c|d", "a-b-c-d"),
    ("\u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2 \u03a3\u0391\u03a3", "\u03c3\u03b9\u03c3\u03c5\u03c6\u03bf\u03c2-\u03c3\u03b1\u03c2"),
    ("\u0130stanbul", "istanbul"),
    ("---", ""),
    ("", ""),
    ("_private", "private"),
    ("-dash start", "dash-start"),
    ("$params", "params"),
    ("100%", "_100"),
    ("a\xa0b", "a-b"),
    ("a\x85b", "a\x85b"),
    ("zero\u200bwidth", "zero\u200bwidth"),
    ("a\ufeffb", "a-b"),
    ("\xd1and\xfa", "nandu"),
    ("\u01c4emal", "dzemal"),
    ("x&y<z>", "x-y-z"),
    ("a.b.c", "a-b-c"),
    ("mdit-vue/shared", "mdit-vue-shared"),
    ("9 lives", "_9-lives"),
    ("\u216b roman", "xii-roman"),
    ("\u65e5\u672c\u8a9e\u306e\u30c6\u30b9\u30c8", "\u65e5\u672c\u8a9e\u306e\u30c6\u30b9\u30c8"),
    ("\ud55c\uad6d\uc5b4 \uc81c\ubaa9", "\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165-\u110c\u1166\u1106\u1169\u11a8"),
    ("\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440", "\u043f\u0440\u0438\u0432\u0435\u0442-\u043c\u0438\u0440"),
    ("na\xefve r\xe9sum\xe9", "naive-resume"),
    ("\xbfQu\xe9?", "\xbfque"),
    ("\xabguillemets\xbb", "\xabguillemets\xbb"),
    ("em\u2014dash \u2013 en", "em\u2014dash-\u2013-en"),
    ("tilde~caret^", "tilde-caret"),
    ("a+b=c", "a-b-c"),
]


@pytest.mark.parametrize(("title", "slug"), MDIT_VUE_SLUGS)
def test_slugify_matches_mdit_vue_shared(title, slug):
    assert slugify(title) == slug


def test_duplicates_and_explicit_ids():
    titles = ["Intro", "Intro", "Intro 1", "Intro", "Custom", "Emoji :tada:"]
    explicit = ["", "", "", "", "my-id", ""]
    # @mdit/plugin-anchor: x, x-1, x-2…; {#id} kept; emoji left out of the slug text (the built
    # vitepress.dev page has id="emoji" for "## Emoji :tada:")
    assert page_anchors(titles, explicit) == ["intro", "intro-1", "intro-1-1", "intro-2", "my-id", "emoji"]
    assert GENERATOR.anchors(["A", "A"], ["", ""]) == ["a", "a-1"]


# (from, to, page, rewritten) checked with node against the npm package path-to-regexp@6.3.0
# (match(from)(page) then compile('/' + to, {validate: false}) as rewritesPlugin.ts calls them)
PATH_TO_REGEXP = [
    ("packages/:pkg/src/:slug*", ":pkg/:slug*", "packages/pkg-a/src/foo.md", "pkg-a/foo.md"),
    ("packages/:pkg/src/:slug*", ":pkg/:slug*", "packages/pkg-a/src/nested/x/index.md", "pkg-a/nested/x/index.md"),
    ("en/:rest*", ":rest*", "en/guide/routing.md", "guide/routing.md"),
    ("en/:rest*", ":rest*", "EN/index.md", "index.md"),
    ("en/:rest*", ":rest*", "zh/index.md", None),
    ("packages/:pkg/src/(.*)", ":pkg/index.md", "packages/a/src/x/y.md", "a/index.md"),
    ("docs/:file.md", "guide/:file.md", "docs/intro.md", "guide/intro.md"),
    ("{v:ver}?/:page", "x/:page", "v1/a.md", "x/a.md"),
]


@pytest.mark.parametrize(("source", "dest", "page", "expected"), PATH_TO_REGEXP)
def test_path_to_regexp(source, dest, page, expected):
    params = path_to_regexp.match(source)(page)
    assert (path_to_regexp.compile("/" + dest)(params)[1:] if params is not None else None) == expected


def test_path_to_regexp_errors():
    with pytest.raises(path_to_regexp.PathPatternError, match="missing text after"):
        path_to_regexp.match("{v:ver/}?:page")


def _site(tmp_path: Path, config: str, files: dict[str, str], name: str = "config.mts") -> Path:
    (tmp_path / ".vitepress" / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / ".vitepress" / name).write_text(config, encoding="utf-8")
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def test_default_config_html_urls(tmp_path):
    root = _site(tmp_path, "export default defineConfig({ title: 'x' })", {"index.md": "# A", "guide/index.md": "", "guide/a.md": ""})
    found = detect(root)
    assert found is not None and found.site == "vitepress" and found.pages_dir == root.resolve() and found.base_url == ""
    layout = found.layout
    assert [layout.place(root / p, {}).path for p in ("index.md", "guide/index.md", "guide/a.md")] == ["", "guide/", "guide/a.html"]
    assert layout.place(root / "guide/a.md", {}).language == ""  # no locales, no lang
    assert detect(tmp_path / "guide") is None


def test_config_index_file_and_clean_urls(tmp_path):
    root = _site(tmp_path, "export default { cleanUrls: true, lang: 'de-DE' }", {"a/b.md": ""}, name="config/index.ts")
    layout = detect(root).layout
    assert layout.place(root / "a/b.md", {}).path == "a/b"
    assert layout.place(root / "a/b.md", {}).language == "de-DE"


def test_src_dir_exclude_base_sitemap(tmp_path):
    config = """
    export default {
      srcDir: 'src',
      srcExclude: ['**/README.md', 'drafts/**', 'old'],
      base: '/docs',
      sitemap: { hostname: 'https://example.org' },
    }
    """
    files = {
        p: ""
        for p in (
            "src/a.md",
            "src/README.md",
            "src/drafts/x.md",
            "src/old/y.md",
            "README.md",
            "src/node_modules/m/z.md",
            "src/dist/d.md",
            "src/.hidden/h.md",
            "src/items/[id].md",
            "src/notes.txt",
        )
    }
    root = _site(tmp_path, config, files)
    found = detect(root)
    assert found.pages_dir == (root / "src").resolve()
    assert found.base_url == "https://example.org/docs/"
    layout = found.layout
    reasons = {p: layout.skip_reason(root / p, {}) for p in files}
    assert reasons == {
        "src/a.md": "",
        "src/README.md": EXCLUDED,
        "src/drafts/x.md": EXCLUDED,
        "src/old/y.md": EXCLUDED,
        "README.md": OUTSIDE,
        "src/node_modules/m/z.md": ALWAYS_EXCLUDED,
        "src/dist/d.md": ALWAYS_EXCLUDED,
        "src/.hidden/h.md": ALWAYS_EXCLUDED,
        "src/items/[id].md": DYNAMIC_ROUTE,
        "src/notes.txt": NOT_MARKDOWN,
    }
    assert layout.place(root / "src/a.md", {}).path == "a.html"
    assert layout.place(root / "README.md", {}) is None


def test_rewrites_first_match_wins_and_locales(tmp_path):
    config = """
    export default {
      rewrites: {
        'en/:rest*': ':rest*',
        'packages/:pkg/src/:slug*': ':pkg/:slug*',
        'packages/:pkg/(.*)': 'never/:pkg',
      },
      cleanUrls: true,
      lang: 'en-GB',
      locales: {
        root: { label: 'English', lang: 'en-US' },
        zh: { label: '简体中文', lang: 'zh-Hans' },
        fr: { label: 'Français' },
      },
    }
    """
    files = {p: "" for p in ("en/index.md", "en/guide/x.md", "zh/index.md", "zh/guide/x.md", "fr/a.md", "packages/p/src/index.md")}
    root = _site(tmp_path, config, files)
    layout = detect(root).layout
    placed = {p: layout.place(root / p, {}) for p in files}
    assert {p: (x.path, x.language) for p, x in placed.items()} == {
        "en/index.md": ("", "en-US"),
        "en/guide/x.md": ("guide/x", "en-US"),
        "zh/index.md": ("zh/", "zh-Hans"),
        "zh/guide/x.md": ("zh/guide/x", "zh-Hans"),
        "fr/a.md": ("fr/a", "en-GB"),  # a locale without lang: the top-level lang
        "packages/p/src/index.md": ("p/", "en-US"),
    }
    assert layout.describe()["languages"] == ["en-US", "zh-Hans", "en-GB"]
    assert {p for p, x in placed.items() if x.translation} == {"zh/index.md", "zh/guide/x.md", "fr/a.md"}  # root: the default


def test_rewrites_function_is_noted(tmp_path):
    root = _site(tmp_path, "export default { rewrites(id) { return id.replace('en/', '') } }", {"en/a.md": ""})
    found = detect(root)
    assert found.layout.place(root / "en/a.md", {}).path == "en/a.html"
    assert any("rewrites is a function" in n for n in found.notes)


def test_wrapped_define_config_is_read(tmp_path):
    config = "export default ({ mode }) => withPwa(extendConfig(defineConfig({ cleanUrls: true, srcExclude: ['x.md'] })))"
    root = _site(tmp_path, config, {"a.md": "", "x.md": ""})
    found = detect(root)
    assert found.layout.place(root / "a.md", {}).path == "a"
    assert found.layout.skip_reason(root / "x.md", {}) == EXCLUDED
    assert "defineConfig() was read" in found.notes[0]


def test_invalid_rewrite_names_the_file(tmp_path):
    root = _site(tmp_path, "export default { rewrites: { ':a:b': 'x' } }", {})
    with pytest.raises(Exception, match=r"config\.mts: rewrites"):
        detect(root)


# -- includes --------------------------------------------------------------------------------
SNIPPET_JS = """// #region setup
  const a = 1
  const b = 2
// #endregion setup
export default a
"""

PARTS_MD = """---
title: parts
---
# Basics

Intro line.

## Basic usage {#custom-id}

Usage line.

## Other

Other line.
"""


def _resolved(root: Path, page: str):
    file = root / page
    res = resolve(file.read_text(encoding="utf-8"), context_for(file, root))
    return res, list(zip(res.lines, res.line_map))


def _include_site(tmp_path: Path, page: str) -> Path:
    return _site(
        tmp_path,
        "export default { srcDir: 'docs' }",
        {"docs/snippets/snippet.js": SNIPPET_JS, "docs/guide/parts/basics.md": PARTS_MD, "docs/guide/page.md": page},
    )


def test_include_ranges_regions_and_headings(tmp_path):
    page = "\n".join(
        [
            "# Page",  # 1
            "<!--@include: ./parts/basics.md-->",  # 2: front matter dropped
            "<!--@include: ./parts/basics.md{1,2}-->",  # 3: a range without region keeps front matter
            "<!--@include: @/snippets/snippet.js{2,3}-->",  # 4
            "<!--@include: @/snippets/snippet.js#setup-->",  # 5: region content, markers left out
            "<!--@include: ./parts/basics.md#custom-id-->",  # 6: the section under {#custom-id}
            "<!--@include: ./parts/basics.md#other{,1}-->",  # 7
            "<!--@@include: ./parts/basics.md-->",  # 8: escaped, shown as is
            "<!--@include: ./missing.md-->",  # 9
            "text <!--@include: @/snippets/snippet.js{5,5}--> inline",  # 10
        ]
    )
    root = _include_site(tmp_path, page)
    res, pairs = _resolved(root, "docs/guide/page.md")
    by_line: dict[int, list[str]] = {}
    for line, n in pairs:
        by_line.setdefault(n, []).append(line)
    assert by_line[2] == PARTS_MD.split("\n")[3:]
    assert by_line[3] == ["---", "title: parts"]
    assert by_line[4] == ["  const a = 1", "  const b = 2"]
    assert by_line[5] == ["  const a = 1", "  const b = 2"]
    assert by_line[6] == ["", "Usage line.", ""]
    assert by_line[7] == [""]
    assert by_line[8] == ["<!--@@include: ./parts/basics.md-->"]
    assert by_line[9] == [""]
    assert by_line[10] == ["text export default a inline"]
    assert res.directives == 7 and res.unresolved == 1 and "missing.md" in res.problems[0]


def test_snippets_become_fenced_code(tmp_path):
    page = "\n".join(
        [
            "# Page",  # 1
            "",  # 2
            "<<< @/snippets/snippet.js",  # 3
            "",  # 4
            "<<< ../snippets/snippet.js#setup{1,2 ts:line-numbers} [Setup]",  # 5
            "",  # 6
            "```md",  # 7
            "<<< @/snippets/snippet.js",  # 8: inside a fence, as written
            "```",  # 9
            "::: code-group",  # 10
            "<<< @/snippets/snippet.js{js}",  # 11
            ":::",  # 12
            "paragraph",  # 13
            "<<< @/snippets/snippet.js",  # 14: continues the paragraph
        ]
    )
    root = _include_site(tmp_path, page)
    res, pairs = _resolved(root, "docs/guide/page.md")
    by_line: dict[int, list[str]] = {}
    for line, n in pairs:
        by_line.setdefault(n, []).append(line)
    assert by_line[3] == ["```js [snippet.js]", *SNIPPET_JS.split("\n")[:-1], "```"]
    assert by_line[5] == ["```ts:line-numbers {1,2} [Setup]", "const a = 1", "const b = 2", "```"]
    assert by_line[8] == ["<<< @/snippets/snippet.js"]
    assert by_line[11][0] == "```js [snippet.js]"
    assert by_line[14] == ["<<< @/snippets/snippet.js"]
    assert res.directives == 3 and not res.problems


def test_includes_only_in_a_vitepress_project(tmp_path):
    (tmp_path / "a.md").write_text("<!--@include: ./b.md-->\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("B\n", encoding="utf-8")
    res, _ = _resolved(tmp_path, "a.md")
    assert res.lines[0] == "<!--@include: ./b.md-->" and res.directives == 0


# -- the real build ----------------------------------------------------------------------------
# files the corpus lacks that the build imports (public/ images, Vue components of using-vue.md);
# none names a heading (a component in a header is raw HTML, left out of its id)
VITEPRESS_STUBS: dict[str, str | bytes] = {
    "docs/public/search.png": b"\x89PNG\r\n",
    "docs/public/appearance-toggle-transition.webp": b"",
    "docs/components/ModalDemo.vue": "<template><div /></template>\n",
    "docs/components/ComponentInHeader.vue": "<template><span>component</span></template>\n",
}


@pytest.mark.integration
def test_vitepress_build_conformance(tmp_path):
    import shutil

    from paths import DATA
    from site_builds import Build, check, site_chunks, vitepress_build

    # never skipped: the machine has Node 20 and npm (README "The machine"); the build installs VitePress
    assert shutil.which("node") and shutil.which("npm"), "node and npm are needed for the VitePress build (apt-get install nodejs npm)"
    corpus = DATA / "corpora" / "vitepress-docs"
    base = "https://vitepress.dev/"
    written = site_chunks(corpus, None, base)
    out = vitepress_build(corpus, "docs", tmp_path / "dist", VITEPRESS_STUBS)
    report = check(Build(out, base, clean_urls=True), written.chunks)
    print(f"vitepress-docs: {report}")
    assert report.urls > 400 and report.share >= 0.99, str(report)
    built = {
        base + p.relative_to(out).as_posix().removesuffix(".html").removesuffix("index")
        for p in out.rglob("*.html")
        if p.name != "404.html"
    }
    indexed = {c.url.split("#")[0] for c in written.chunks if c.url}
    skipped = {rel for rel, reason in written.skipped if reason}
    print(f"vitepress-docs: {len(built)} pages built, {len(indexed)} indexed, {len(skipped)} skipped")
    assert built == indexed, (sorted(built - indexed)[:10], sorted(indexed - built)[:10])  # every built page indexed, nothing else
    assert not skipped  # no Markdown page of the corpus is left out


def test_summary_languages_are_the_pages_languages(tmp_path):
    """vite.dev: locales without ``lang`` read as en-US, as every page is; vitest.dev: a locale
    that only links to another site (no folder) publishes no page here, so it is no language."""
    config = "export default defineConfig({ locales: { root: { label: 'English' }, zh: { label: '中文', link: 'https://cn.x.dev/' } } })"
    root = _site(tmp_path, config, {"index.md": "# A", "guide/a.md": "# B"})
    layout = detect(root).layout
    assert layout.describe()["languages"] == ["en-US"]
    assert layout.place(root / "guide/a.md", {}).language == "en-US"
    (root / "zh").mkdir()
    assert layout.describe()["languages"] == ["en-US"]  # zh has no lang: the default, listed once


def test_locales_without_root_are_no_translations(tmp_path):
    """Every page under /en/ or /zh/ and no root locale: no default to translate from, so no page
    is left out of a search without --lang (with a root, /zh/ pages are translations)."""
    config = "export default defineConfig({ locales: { en: { lang: 'en-US' }, zh: { lang: 'zh-CN' } } })"
    root = _site(tmp_path, config, {"en/a.md": "# A", "zh/a.md": "# A"})
    layout = detect(root).layout
    placed = [layout.place(root / p, {}) for p in ("en/a.md", "zh/a.md")]
    assert [(p.language, p.translation) for p in placed] == [("en-US", False), ("zh-CN", False)]
