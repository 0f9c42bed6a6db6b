"""Jupyter Book 2 / mystmd (esrag.sites.jupyterbook): the pages of ``myst.yml``'s toc, their
URLs and heading ids, checked against the real mystmd build of the Jupyter Book documentation
(shared/data/corpora/jupyterbook-docs/docs, published at https://jupyterbook.org/).

Conformance: ``myst build --site`` (mystmd 1.8.3 from npm, installed once under
``~/.cache/esrag-tests/mystmd-1.8.3``) writes every page as ``_build/site/content/<slug>.json``
(its ``slug``, its source ``location`` and its mdast, whose headings and targets carry the
``html_id`` the theme renders as the element id). The HTML step then downloads the book theme,
which cannot run offline, so the build is read from that JSON: a page URL is ``/`` +
``slugToUrl(slug)`` (mystmd ``myst-common`` ``slugToUrl``, the rule the theme links pages with),
the project index ``/``. The corpus's ``myst.yml`` extends a remote file and loads plugins that
are not in the corpus: the build's copy drops those two keys (no page, slug or id depends on them).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from esrag.sites import resolve_site
from esrag.sites.jupyterbook import create_html_id, create_slug, page_anchors
from paths import DATA
from site_builds import site_chunks

CORPUS = DATA / "corpora" / "jupyterbook-docs" / "docs"
MYSTMD = "1.8.3"
ROOT = Path.home() / ".cache" / "esrag-tests" / f"mystmd-{MYSTMD}"
BASE = "https://jupyterbook.org/"


def _myst() -> Path:
    """The ``myst`` command, installed from npm once."""
    exe = ROOT / "node_modules" / ".bin" / "myst"
    if not exe.is_file():
        assert shutil.which("npm"), "npm is required for the mystmd conformance build"
        ROOT.mkdir(parents=True, exist_ok=True)
        (ROOT / "package.json").write_text(json.dumps({"name": "esrag-mystmd-build", "private": True, "dependencies": {"mystmd": MYSTMD}}))
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=ROOT, check=True, capture_output=True, timeout=900)
    return exe


def _tree(tmp_path: Path) -> Path:
    site = tmp_path / "docs"
    shutil.copytree(CORPUS, site)
    text = (site / "myst.yml").read_text(encoding="utf-8")
    text = re.sub(r"extends:\n(  - .*\n)+", "", text)
    text = re.sub(r"  plugins:\n(    .*\n)+", "", text)
    (site / "myst.yml").write_text(text, encoding="utf-8")
    return site


def _built(site: Path) -> dict[str, set[str]]:
    """``{page path under the base URL: the ids on it}`` from the mystmd content JSON."""
    subprocess.run([str(_myst()), "build", "--site"], cwd=site, capture_output=True, timeout=900, check=False)
    content = site / "_build" / "site" / "content"
    pages: dict[str, set[str]] = {}
    for file in content.glob("*.json"):
        data = json.loads(file.read_text(encoding="utf-8"))
        ids: set[str] = set()
        _ids(data["mdast"], ids)
        slug = data["slug"]
        path = "" if slug == "index" else re.sub(r"\.index$", "", slug).replace(".", "/")
        pages[path] = ids
    return pages


def _ids(node: object, out: set[str]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("html_id"), str):
            out.add(node["html_id"])
        for value in node.values():
            _ids(value, out)
    elif isinstance(node, list):
        for value in node:
            _ids(value, out)


@pytest.mark.integration
def test_mystmd_build_conformance(tmp_path):
    site = _tree(tmp_path)
    built = _built(site)
    assert len(built) == 31, sorted(built)
    got = site_chunks(site, None, BASE)
    assert got.site.generator.name == "jupyterbook"
    pages = {c.url.split("#")[0] for c in got.chunks}
    assert {BASE + p for p in built} == pages  # every built page indexed, nothing else
    urls = sorted({c.url for c in got.chunks if "#" in c.url})
    failed = []
    for url in urls:
        page, _, anchor = url.removeprefix(BASE).partition("#")
        if anchor not in built.get(page, set()):
            failed.append(url)
    share = 1 - len(failed) / len(urls)
    print(f"jupyterbook-docs: {len(pages)} pages, {len(urls) - len(failed)}/{len(urls)} section URLs in the build ({share:.2%})")
    assert len(urls) > 120 and share >= 0.99, failed[:10]


def test_toc_pages_only_and_slugs(tmp_path):
    (tmp_path / "myst.yml").write_text(
        "version: 1\nproject:\n  exclude: [drafts/*]\n  toc:\n    - file: intro.md\n    - title: Part\n      children:\n"
        "        - file: a/01_Getting Started.md\n        - pattern: 'b/*.md'\n        - url: https://x.dev\n          title: X\n"
        "        - file: c/index\n",
        encoding="utf-8",
    )
    for rel in ("intro.md", "a/01_Getting Started.md", "b/getting-started.md", "b/z.md", "c/index.md", "stray.md", "drafts/d.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# T\n", encoding="utf-8")
    site = resolve_site(tmp_path, None, "https://x.dev/")
    assert site.generator.name == "jupyterbook"
    paths = {
        rel: site.page_path(rel, {}) for rel in ("intro.md", "a/01_Getting Started.md", "b/getting-started.md", "b/z.md", "c/index.md")
    }
    # no folders option: file names only; the repeat gets -1; c/index -> "index" taken -> index-1
    assert paths == {
        "intro.md": "",
        "a/01_Getting Started.md": "getting-started",
        "b/getting-started.md": "getting-started-1",
        "b/z.md": "z",
        "c/index.md": "index-1",
    }
    assert site.skip is not None and site.skip("stray.md") == "not in myst.yml project.toc" and site.skip("intro.md") == ""


def test_rules_from_mystmd_source():
    assert create_slug("01_Getting Started") == "getting-started" and create_slug("2024-review") == "2024-review"
    assert create_slug("Q&A") == "q-and-a"
    assert create_html_id("Links & cross-references") == "links-cross-references"
    assert create_html_id("2. Install") == "id-2-install" and create_html_id("Don't “quote”") == "dont-quote"
    assert page_anchors(["Same", "Same", "Other"], ["", "", "My_Label"]) == ["same", "same", "my-label"]


def test_bad_myst_yml_names_the_file(tmp_path):
    from esrag.errors import ConfigError

    (tmp_path / "myst.yml").write_text("project:\n  toc: [\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"myst\.yml: not valid YAML"):
        resolve_site(tmp_path)


def test_myst_target_names_the_next_heading_and_notebooks_are_pages(tmp_path):
    (tmp_path / "myst.yml").write_text("version: 1\nproject:\n  toc:\n    - file: index.md\n    - file: nb.ipynb\n", encoding="utf-8")
    (tmp_path / "index.md").write_text("# Home\n\n(section:My_Label)=\n## Title\n\ntext\n\n## Plain one\n\nmore\n", encoding="utf-8")
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Notebook\n\n## Part A"},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1"},
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    got = site_chunks(tmp_path, None, "https://x.dev/")
    urls = {c.url for c in got.chunks}
    assert {"https://x.dev/#section-my-label", "https://x.dev/nb#part-a"} <= urls
    assert any("```python\nx = 1\n```" in c.text for c in got.chunks if c.url.startswith("https://x.dev/nb"))


JB1 = Path(__file__).parent / "data" / "jupyterbook1"  # real pages of the Jupyter Book 1 docs (SOURCE.txt)

#: what ``jupyter-book config sphinx`` writes for JB1 (``jupyter_book/config.py``), with myst_parser
#: for myst_nb (not installed here: notebooks are built from their cells, see the test)
JB1_CONF = """\
project = "JB1"
extensions = ["myst_parser"]
source_suffix = {{".rst": "restructuredtext", ".md": "markdown"}}
myst_enable_extensions = {extensions!r}
myst_substitutions = {{"sub3": "My _global_ value!"}}
exclude_patterns = {exclude!r}
root_doc = "intro"
html_baseurl = "https://jupyterbook.org/"
suppress_warnings = ["*"]
"""


def _notebook_as_myst(nb_file: Path) -> str:
    """A notebook's cells as the MyST page myst_nb parses them into: Markdown cells as they are,
    code cells as fenced code (no heading can come from them)."""
    nb = json.loads(nb_file.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        parts.append(text if cell["cell_type"] == "markdown" else f"````\n{text}\n````")
    return "\n\n".join(parts) + "\n"


@pytest.mark.integration
def test_jupyter_book_1_sphinx_build_conformance(tmp_path):
    """Jupyter Book 1 is Sphinx (sphinx-book-theme, myst_nb): the fixture's real ``_config.yml``
    / ``_toc.yml`` read by esrag, the pages built by the real Sphinx + myst-parser with the
    configuration JB1 generates from that ``_config.yml`` (its myst extensions, incl. smartquotes,
    and exclude_patterns). myst_nb is not installed: each notebook is built from its cells as
    MyST (Markdown cells are parsed by the same myst-parser either way)."""
    import yaml

    from esrag.sites.jupyterbook import JB1_EXCLUDE
    from site_builds import Build, check, sphinx_build

    cfg = yaml.safe_load((JB1 / "_config.yml").read_text(encoding="utf-8"))
    exts = [e for e in cfg["parse"]["myst_enable_extensions"] if e != "linkify"]  # linkify-it-py: links only, no id
    src = tmp_path / "src" / "docs"
    shutil.copytree(JB1, src)
    for nb in src.rglob("*.ipynb"):
        nb.with_suffix(".md").write_text(_notebook_as_myst(nb), encoding="utf-8")
        nb.unlink()
    exclude = [*JB1_EXCLUDE, *cfg["exclude_patterns"]]
    (src / "conf.py").write_text(JB1_CONF.format(extensions=exts, exclude=exclude), encoding="utf-8")
    out = sphinx_build(src, tmp_path / "html", builder="html")
    got = site_chunks(JB1, None, "https://jupyterbook.org/")
    assert got.site.generator.name == "jupyterbook" and got.site.base_url == "https://jupyterbook.org/"
    assert got.skipped == [("file-types/include-rst.rst", "excluded by _config.yml exclude_patterns")]
    pages = {c.url.split("#")[0] for c in got.chunks}
    assert "https://jupyterbook.org/interactive/launchbuttons.html" in pages and len(pages) == 13
    notebook = [c for c in got.chunks if c.url.startswith("https://jupyterbook.org/file-types/notebooks.html")]
    assert any("```python\n" in c.text for c in notebook)
    report = check(Build(out, "https://jupyterbook.org/"), got.chunks)
    print(f"jupyterbook1 fixture: {len(pages)} pages, {report}")
    assert report.urls > 60 and report.share >= 0.99, str(report)
