"""Whole sites built by their real generators: every section URL esrag writes for a corpus
names a page of the build and an element with that id on it (and so does every alternative
URL, ``alt_urls``). At least 99% must resolve; the failures are printed when fewer do.

Builds happen once per test session in a temporary folder (copies of the corpora):

* Sphinx (PyPI ``sphinx``, the ``test`` extra): flask-docs with the ``dirhtml`` builder it is
  published with (``pallets-sphinx-themes``, ``sphinx-tabs``, ``sphinxcontrib-log-cabinet`` and
  ``flask`` itself for autodoc), requests-docs with the ``html`` builder its conf.py is detected
  as (its Pygments style module and sidebar templates are not in the corpus: the copy's conf.py
  uses the default style and no custom sidebars, which changes no id). Intersphinx inventories
  are not fetched.
* mdBook 0.4 (``cargo install mdbook``, :func:`site_builds.mdbook`): rust-book without its
  ``trpl-note`` / ``trpl-listing`` preprocessors and extra CSS/JS (not in the corpus; they turn
  note blockquotes and ``<Listing>`` tags into figures and add no heading), async-book without
  its ``linkcheck`` renderer.
* MkDocs 1.6 with Material (PyPI ``mkdocs``, ``mkdocs-material``): fastapi-docs and
  pydantic-docs with only the ``search`` plugin and the Markdown extensions that install here
  (what each build left out is printed and named in its test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paths import DATA
from site_builds import Build, check, mdbook_build, mkdocs_build, site_chunks, sphinx_build

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

CORPORA = DATA / "corpora"


@pytest.fixture(scope="session")
def builds(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("site-builds")


def assert_resolves(name: str, build: Build, chunks) -> None:
    report = check(build, chunks)
    print(f"{name}: {report}")
    assert report.urls > 50 and report.share >= 0.99, f"{name}: {report}"
    assert len(report.alt_failed) <= 0.01 * report.alt_urls, f"{name}: {report}"


def test_flask_docs_sphinx_dirhtml(builds):
    base = "https://flask.palletsprojects.com/en/stable/"
    written = site_chunks(CORPORA / "flask-docs", "sphinx-dirhtml", base)
    out = sphinx_build(CORPORA / "flask-docs" / "docs", builds / "flask", "dirhtml")
    assert not written.skipped
    assert_resolves("flask-docs", Build(out, base), written.chunks)


def test_requests_docs_sphinx_html(builds):
    base = "https://requests.readthedocs.io/en/latest/"
    written = site_chunks(CORPORA / "requests-docs", None, base)  # detected: conf.py, html builder
    out = sphinx_build(
        CORPORA / "requests-docs" / "docs", builds / "requests", "html", conf_tail='pygments_style = "default"\nhtml_sidebars = {}'
    )
    assert_resolves("requests-docs", Build(out, base), written.chunks)
    assert any(c.alt_urls for c in written.chunks)  # labels and autodoc objects


def test_rust_book_mdbook(builds):
    base = "https://doc.rust-lang.org/book/"  # book.toml has no site-url
    written = site_chunks(CORPORA / "rust-book", None, base)
    assert written.skipped == [("src/SUMMARY.md", "SUMMARY.md is mdBook's table of contents, not a page")]
    out = mdbook_build(
        CORPORA / "rust-book",
        builds / "rust-book",
        drop=("preprocessor.trpl-note", "preprocessor.trpl-listing", "output.html.additional-css", "output.html.additional-js"),
    )
    assert_resolves("rust-book", Build(out, base), written.chunks)
    renamed = [c for c in written.chunks if c.url.endswith("ch08-02-strings.html#bytes-scalar-values-and-grapheme-clusters")]
    assert renamed and renamed[0].alt_urls == [base + "ch08-02-strings.html#bytes-and-scalar-values-and-grapheme-clusters-oh-my"]


def test_async_book_mdbook(builds):
    written = site_chunks(CORPORA / "async-book", None, "")  # book.toml: site-url + GitHub repository
    base = "https://rust-lang.github.io/async-book/"
    assert written.chunks and all(c.url.startswith(base) for c in written.chunks if c.url)
    out = mdbook_build(CORPORA / "async-book", builds / "async-book", drop=("output.linkcheck",))
    assert_resolves("async-book", Build(out, base), written.chunks)


def test_fastapi_docs_mkdocs_material(builds):
    # left out of the build (not installable here or not in the corpus): the mkdocstrings plugin,
    # theme overrides, and the zensical.extensions.macros / mdx_include / markdown_include_variants
    # extensions (code includes); none of them names a heading
    base = "https://fastapi.tiangolo.com/"
    written = site_chunks(CORPORA / "fastapi-docs" / "docs" / "en", None, base)
    out, left_out = mkdocs_build(CORPORA / "fastapi-docs", "docs/en/mkdocs.yml", builds / "fastapi")
    print("fastapi-docs build left out:", left_out)
    assert_resolves("fastapi-docs", Build(out, base), written.chunks)


def test_pydantic_docs_mkdocs_material(builds):
    # left out of the build: plugins but search (social, mike, llmstxt, exclude, mkdocstrings with
    # its autorefs, redirects), hooks, watch, the theme's custom_dir and pydantic_docs.mdext. Without
    # mkdocs-autorefs the build keeps "[Field()][pydantic.Field]" as text in two headings, and the
    # installed Material no longer has the :simple-slack: icon: those 3 of 561 ids differ from the
    # published site (esrag gives the published ones)
    base = "https://docs.pydantic.dev/latest/"  # site_url + the mike plugin's version folder (not read)
    written = site_chunks(CORPORA / "pydantic-docs", None, base)
    out, left_out = mkdocs_build(CORPORA / "pydantic-docs", "mkdocs.yml", builds / "pydantic")
    print("pydantic-docs build left out:", left_out)
    assert_resolves("pydantic-docs", Build(out, base), written.chunks)
