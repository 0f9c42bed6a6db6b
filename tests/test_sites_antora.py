"""Antora: the asciidoctor docs component (corpus antora-asciidoctor) detected, its pages placed,
resources and nav files skipped with reasons, and every section id compared with Asciidoctor.js.

Conformance: the real Antora build (npm ``antora`` 3, offline, a minimal local UI bundle:
:func:`antora_build.build`) — every page URL and section URL (page + anchor) esrag gives must be
in the built HTML; and Asciidoctor.js (``@asciidoctor/core``) section ids page by page."""

from __future__ import annotations

import collections

import pytest

from antora_build import build, section_ids
from esrag.errors import ConfigError
from esrag.formats import parse
from esrag.model import BlockKind, Document
from esrag.sites.antora import NAV, RESOURCE, detect, page_file
from paths import DATA
from site_builds import Build, check, site_chunks

CORPUS = DATA / "corpora" / "antora-asciidoctor"


def test_detect_corpus_component():
    found = detect(CORPUS / "docs")
    assert found is not None and found.site == "antora"
    layout = found.layout
    assert (layout.component, layout.version) == ("asciidoctor", "2.1")
    assert found.format_options["asciidoc_attributes"]["xrefstyle"] == "short"  # soft-set @ removed
    place = layout.place(CORPUS / "docs/modules/api/pages/index.adoc", {})
    assert place.path == "asciidoctor/2.1/api/index.html"
    assert layout.place(CORPUS / "docs/modules/ROOT/pages/features.adoc", {}).path == "asciidoctor/2.1/features.html"


def test_playbook_latest_segment_and_extension_style(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "antora-playbook.yml").write_text(
        "site: {url: 'https://docs.example.org'}\nurls: {latest_version_segment: latest, html_extension_style: indexify}\n"
    )
    comp = tmp_path / "docs"
    (comp / "modules/ROOT/pages/_hidden").mkdir(parents=True)
    (comp / "antora.yml").write_text("name: c\nversion: '1.0'\n")
    found = detect(comp)
    assert found.base_url == "https://docs.example.org/"
    assert found.layout.place(comp / "modules/ROOT/pages/a/b.adoc", {}).path == "c/latest/a/b/"
    assert "hidden" in found.layout.skip_reason(comp / "modules/ROOT/pages/_hidden/x.adoc", {})
    (tmp_path / "antora-playbook.yml").write_text(
        "urls: {latest_version_segment: current, latest_version_segment_strategy: 'redirect:to'}\n"
        "asciidoc: {attributes: {idprefix: '@', idseparator: '-@', hard: x}}\n"
    )  # docs.asciidoctor.org's settings: pages keep their version, ids like `hello-world`
    (comp / "antora.yml").write_text("name: c\nversion: '1.0'\nasciidoc: {attributes: {idseparator: _, hard: y}}\n")
    found = detect(comp)
    assert found.layout.place(comp / "modules/ROOT/pages/a.adoc", {}).path == "c/1.0/a.html"
    assert {k: found.format_options["asciidoc_attributes"][k] for k in ("idprefix", "idseparator", "hard")} == {
        "idprefix": "",
        "idseparator": "_",
        "hard": "x",
    }
    (tmp_path / "antora-playbook.yml").unlink()
    (comp / "antora.yml").write_text("name: c\nversion: ~\n")
    assert detect(comp).layout.place(comp / "modules/m/pages/index.adoc", {}).path == "c/m/index.html"


def test_bad_descriptor_is_named(tmp_path):
    (tmp_path / "modules").mkdir()
    (tmp_path / "antora.yml").write_text("version: '1'\n")
    with pytest.raises(ConfigError, match="antora.yml"):
        detect(tmp_path)


def test_page_file_styles():
    assert page_file("a/index", "default") == "a/index.html"
    assert page_file("a/index", "drop") == "a/" and page_file("a/b", "drop") == "a/b"
    assert page_file("b", "indexify") == "b/"


def test_corpus_ingest_pages_and_skips():
    got = site_chunks(CORPUS, None, "https://docs.asciidoctor.org/")
    assert got.site is not None and got.site.generator.name == "antora"
    reasons = collections.Counter(r for _, r in got.skipped)
    assert reasons == {NAV: 17, RESOURCE: 5}
    urls = {c.url for c in got.chunks}
    # no playbook in the corpus: the version segment is the descriptor's (docs.asciidoctor.org's playbook says `latest`)
    assert "https://docs.asciidoctor.org/asciidoctor/2.1/api/index.html#require" in urls
    # 78 pages; cli/pages/man1/asciidoctor.adoc includes partial$man-asciidoctor.adoc, which in this
    # checkout is a git symlink stored as its target's path (a line read as a block title, as
    # Asciidoctor reads it): that page has no text, the 77 others have chunks
    assert len({u.split("#")[0] for u in urls}) == 77


@pytest.mark.integration
def test_antora_asciidoctorjs_conformance():
    found = detect(CORPUS / "docs")
    attrs = found.format_options["asciidoc_attributes"]
    files = sorted((CORPUS / "docs/modules").glob("*/pages/**/*.adoc"))
    ref = section_ids(files, attrs)
    total = same = 0
    for f in files:
        rel = str(f.relative_to(CORPUS))
        doc = Document(rel, f.read_text(), source=str(f), root=str(CORPUS), format="asciidoc", format_options=found.format_options)
        ours = [b.anchor for b in parse(doc).blocks if b.kind is BlockKind.HEADER and b.level > 1]
        theirs = ref[str(f)]
        total += max(len(ours), len(theirs))
        same += sum(a == b for a, b in zip(ours, theirs))
    assert total > 300 and same / total >= 0.99, f"{same}/{total}"


@pytest.mark.integration
@pytest.mark.parametrize("urls", [{}, {"latest_version_segment": "latest", "html_extension_style": "indexify"}])
def test_antora_build_conformance(tmp_path, urls):
    docs, out = build(CORPUS / "docs", tmp_path, "https://docs.asciidoctor.org", urls)
    got = site_chunks(docs.parent, None, "")  # the base URL is the playbook's site.url
    assert got.site is not None and got.site.generator.name == "antora"
    site = Build(out, "https://docs.asciidoctor.org/")
    pages = sorted({c.url.split("#")[0] for c in got.chunks})
    assert len(pages) == 77 and not [u for u in pages if site.problem(u)]
    if urls:
        assert "https://docs.asciidoctor.org/asciidoctor/latest/api/" in pages
    report = check(site, got.chunks)
    assert report.urls > 300 and report.share >= 0.99, str(report)


def test_page_aliases_are_other_urls(tmp_path):
    pages = tmp_path / "modules" / "theme" / "pages"
    pages.mkdir(parents=True)
    (tmp_path / "antora.yml").write_text("name: pdf\nversion: '3.0'\n")
    # the header of asciidoctor-pdf's docs/modules/theme/pages/create-theme.adoc (MIT licence)
    (pages / "create-theme.adoc").write_text("= Create a Theme\n:page-aliases: extend-theme.adoc, ROOT:old.adoc, 2.3@x.adoc\n\ntext\n")
    place = detect(tmp_path).layout.place(pages / "create-theme.adoc", {})
    assert (place.path, place.alt_paths) == ("pdf/3.0/theme/create-theme.html", ["pdf/3.0/theme/extend-theme.html", "pdf/3.0/old.html"])
