"""MkDocs read from ``mkdocs.yml`` as MkDocs reads it: ``exclude_docs`` / ``draft_docs`` /
``not_in_nav``, README beside index, ``INHERIT``, and the ``toc`` ``slugify`` named there
(``!!python/name:`` / ``!!python/object/apply:`` tags), checked against the real libraries and a
real ``mkdocs build`` of ``tests/data/sites/mkdocs-slugs``."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown.extensions import toc
from pymdownx import slugs

from esrag.sites.mkdocs import PyApply, PyName, load_yaml, pymdownx_slugify, read_mkdocs, slug_rule, toc_slugify
from paths import DATA
from site_builds import Build, check, mkdocs_build, site_chunks

SLUGS = Path(__file__).parent / "data" / "sites" / "mkdocs-slugs"
TITLES = [
    "Café Übersicht",
    "Größe ±♠Ωℑ der Daten",
    "Testing unicode-slugs_headers ±♠Ωℑ",
    "  Spaces   and\ttabs  ",
    "<b>Bold</b> tag & <i>more</i>",
    "İstanbul ǅemal ﬁne",
    "日本語 の 見出し",
    "x -- y __ z",
    "Ünïcödé Çase FOLD ẞ",
]


def corpus_titles() -> list[str]:
    out = []
    for path in sorted((DATA / "corpora" / "pydantic-docs" / "docs").rglob("*.md"))[:60]:
        out += [ln.lstrip("#").strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("## ")]
    return out


@pytest.mark.parametrize("case", ["none", "lower", "lower-ascii", "fold"])
@pytest.mark.parametrize("percent", [False, True])
def test_pymdownx_slugify_is_the_libraries_rule(case, percent):
    theirs = slugs.slugify(case=case, percent_encode=percent)
    for title in TITLES + corpus_titles():
        for sep in ("-", "_"):
            assert pymdownx_slugify(title, sep, case=case, percent_encode=percent) == theirs(title, sep), title


def test_toc_slugify_is_python_markdowns():
    for title in TITLES + corpus_titles():
        assert toc_slugify(title, "-") == toc.slugify(title, "-")
        assert toc_slugify(title, "_", unicode=True) == toc.slugify_unicode(title, "_")


def test_slug_rules_named_by_tags():
    assert slug_rule(PyName("markdown.extensions.toc.slugify_unicode"))("Größe Daten", separator="-") == "größe-daten"
    assert slug_rule(PyName("pymdownx.slugs.uslugify"))("Größe ±Daten", separator="-") == "größe-daten"
    assert slug_rule(PyName("pymdownx.slugs.uslugify_cased"))("Größe Daten", separator="-") == "Größe-Daten"
    assert slug_rule(PyApply("pymdownx.slugs.slugify", kwds={"case": "lower"}))("A B", separator="-") == "a-b"
    assert slug_rule(PyName("my_project.slugs.custom")) is None


def test_mkdocs_yml_tags_inherit_and_unknown_slugify(tmp_path):
    (tmp_path / "base.yml").write_text(
        "site_url: https://base.example/\nmarkdown_extensions:\n  - toc:\n"
        "      separator: _\n      slugify: !!python/name:pymdownx.slugs.uslugify\n"
    )
    (tmp_path / "mkdocs.yml").write_text("INHERIT: base.yml\ndocs_dir: pages\nextra: !ENV [NOPE, 3]\n")
    cfg = load_yaml(tmp_path / "mkdocs.yml")
    assert cfg["site_url"] == "https://base.example/" and cfg["extra"] == 3
    conf = read_mkdocs(tmp_path / "mkdocs.yml")
    assert conf.docs_dir == tmp_path / "pages" and conf.slugify is not None
    assert conf.slugify("Größe der Daten") == "größe_der_daten"  # the toc separator is passed on
    (tmp_path / "mkdocs.yml").write_text("markdown_extensions:\n  toc:\n    slugify: !!python/name:my.slug\n")
    conf = read_mkdocs(tmp_path / "mkdocs.yml")
    assert conf.slugify is None and conf.slugify_unknown == "my.slug"


@pytest.mark.integration
def test_mkdocs_site_reads_exclusions_and_slugify_and_matches_a_real_build(tmp_path):
    base = "https://slugs.example.org/docs/"
    written = site_chunks(SLUGS, None, "")  # site_url from mkdocs.yml
    assert sorted(written.skipped) == [
        ("docs/.hidden.md", "excluded by mkdocs.yml exclude_docs"),  # MkDocs' own ".*"
        ("docs/README.md", "conflicts with index.md (MkDocs builds index.md)"),
        ("docs/drafts/next.md", "draft (mkdocs.yml draft_docs)"),
        ("docs/guide/private-notes.md", "excluded by mkdocs.yml exclude_docs"),
        ("docs/guide/scratch.tmp.md", "excluded by mkdocs.yml exclude_docs"),
        ("docs/templates/page.md", "excluded by mkdocs.yml exclude_docs"),  # MkDocs' own "/templates/"
    ]
    urls = {c.url for c in written.chunks}
    assert base + "guide/orphan/#not-in-the-nav" in urls  # not_in_nav pages are built
    assert {
        base + "#größe-ωℑ-der-daten",
        base + "#größe-ωℑ-der-daten_1",
        base + "#kept-as-written",
        base + "guide/#première-étape",
    } <= urls  # the configured rule, not the ASCII default
    out, left_out = mkdocs_build(SLUGS, "mkdocs.yml", tmp_path / "site")
    assert left_out == []
    report = check(Build(out, base), written.chunks)
    assert report.urls >= 6 and report.failed == [], report
    # the default (ASCII) rule would have linked to an id the build does not have
    assert toc.slugify("Größe ±♠Ωℑ der Daten", "-") == "groe-i-der-daten"
    assert Build(out, base).problem(base + "#groe-i-der-daten").startswith("no id")
