"""A Sphinx site written in MyST Markdown: ``myst_parser`` (or ``myst_nb``, ``recommonmark``) in
``extensions`` registers ``.md`` at set-up, so ``source_suffix`` in conf.py is not the whole list
(``myst_parser/sphinx_ext/main.py``: ``app.add_source_suffix(".md", "markdown")``). Every
``.md`` page is indexed with no setting, and where ``extensions`` cannot be read esrag reads the
``.md`` files and says so.

The conformance test builds real MyST Markdown (the Jupyter Book documentation's pages,
``shared/data/corpora/jupyterbook-docs``) as a Sphinx project with the real Sphinx and
myst-parser from PyPI, and checks every section URL esrag writes against the build.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from esrag.sites import resolve_site
from esrag.sites.sphinx import read_conf
from paths import DATA
from site_builds import Build, check, run, site_chunks

JUPYTERBOOK = DATA / "corpora" / "jupyterbook-docs" / "docs"

CONF = """\
project = "MyST on Sphinx"
extensions = ["myst_parser"]
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "fieldlist", "substitution", "tasklist"]
exclude_patterns = ["_build"]
html_baseurl = "https://myst.example/"
"""


def _tree(tmp_path: Path, conf: str = CONF) -> Path:
    site = tmp_path / "site"
    shutil.copytree(JUPYTERBOOK, site, ignore=shutil.ignore_patterns("myst.yml", "*.ipynb"))
    (site / "conf.py").write_text(conf, encoding="utf-8")
    return site


@pytest.mark.parametrize("ext", ["myst_parser", "myst_nb", "recommonmark"])
def test_parser_extensions_add_md_to_source_suffix(tmp_path, ext):
    (tmp_path / "conf.py").write_text(f"extensions = ['sphinx.ext.autodoc', {ext!r}]\n", encoding="utf-8")
    conf = read_conf(tmp_path / "conf.py")
    assert conf.suffixes[".rst"] == "restructuredtext" and conf.suffixes[".md"] == "markdown"
    assert conf.excluded("guide/page.md") == "" and not conf.notes


def test_conf_py_own_source_suffix_wins_over_an_extension(tmp_path):
    (tmp_path / "conf.py").write_text("extensions = ['myst_parser']\nsource_suffix = {'.md': 'restructuredtext'}\n", encoding="utf-8")
    assert read_conf(tmp_path / "conf.py").suffixes == {".md": "restructuredtext"}


def test_computed_extensions_read_md_and_say_so(tmp_path):
    (tmp_path / "conf.py").write_text("import os\nextensions = [e for e in os.environ.get('X', 'myst_parser').split()]\n", encoding="utf-8")
    conf = read_conf(tmp_path / "conf.py")
    assert conf.excluded("a.md") == ""
    assert conf.notes and ".md files are read as Markdown" in conf.notes[0]
    site = resolve_site(tmp_path)
    assert site.describe()["notes"] == list(conf.notes)


@pytest.mark.parametrize(
    "conf,note",
    [
        ("extensions = ['sphinx.ext.autodoc']\nextensions.append('myst_parser')\n", False),
        ("extensions = ['sphinx.ext.autodoc']\nextensions += ['myst_nb']\n", False),
        ("extensions = []\ntry:\n    import myst_parser\n    extensions.extend(['myst_parser'])\nexcept ImportError:\n    pass\n", False),
        ("extensions = ['sphinx.ext.autodoc']\nextensions.append(os.environ['PARSER'])\n", True),
    ],
)
def test_extensions_changed_after_their_assignment(tmp_path, conf, note):
    """Real conf.py files add parsers after the list (append, +=, extend inside try): what they
    add is read; a change that is not a literal reads .md and says so (never 27 of 28 pages lost)."""
    (tmp_path / "conf.py").write_text(conf, encoding="utf-8")
    read = read_conf(tmp_path / "conf.py")
    assert read.suffixes[".md"] == "markdown" and read.excluded("guide/page.md") == ""
    assert bool(read.notes) is note


def test_every_md_page_of_a_myst_site_is_indexed_with_no_setting(tmp_path):
    site = _tree(tmp_path)
    written = site_chunks(site, None, "")
    pages = {c.source_path for c in written.chunks}
    md = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.md"))
    assert not written.skipped, written.skipped
    assert sorted(pages) == md and len(md) >= 28


@pytest.mark.integration
def test_myst_sphinx_site_every_page_and_url_in_the_build(tmp_path):
    """The real Sphinx + myst-parser build (html builder) of the MyST pages: every page built is
    indexed, and >= 99% of the section URLs esrag writes name a built page carrying that id."""
    import sys

    site = _tree(tmp_path)
    out = tmp_path / "html"
    run([sys.executable, "-m", "sphinx", "-b", "html", "-q", str(site), str(out)], cwd=site)
    written = site_chunks(site, None, "https://myst.example/")
    built = sorted(p.relative_to(out).with_suffix(".md").as_posix() for p in out.rglob("*.html") if p.parent.name != "_static")
    built = [b for b in built if b not in ("genindex.md", "search.md")]
    assert sorted({c.source_path for c in written.chunks}) == built
    report = check(Build(out, "https://myst.example/"), written.chunks)
    print(f"myst-on-sphinx: {report}")
    assert report.urls > 100 and report.share >= 0.99, str(report)


def test_a_header_inside_a_myst_directive_opens_no_section():
    """docutils allows no section inside a directive's body: in MyST Markdown a ``# Title`` in a
    ``:::{tab-item}`` is a paragraph (found on the Jupyter Book pages, where it cost 2 URLs)."""
    from esrag.formats.markdown_blocks import myst_directive_spans, parse_blocks
    from esrag.model import BlockKind

    text = "# Page\n\n:::::{tab-set}\n::::{tab-item} A\n```{code} md\n:::\n```\n# Introduction\n\nx\n::::\n:::::\n\n## After\n"
    lines = text.split("\n")
    assert myst_directive_spans(lines) == [(2, 12)]
    titles = [b.section_path[-1] for b in parse_blocks(text, myst=True) if b.kind is BlockKind.HEADER]
    assert titles == ["Page", "After"]
    plain = [b.section_path[-1] for b in parse_blocks(text) if b.kind is BlockKind.HEADER]
    assert "Introduction" in plain


def test_myst_syntax_shown_in_a_code_fence_opens_no_directive():
    """A page that shows ``:::{note}`` inside a ```md fence (MyST's own docs do) and closes the
    fence without ``:::``: the sections after it are still sections."""
    from esrag.formats.markdown_blocks import parse_blocks
    from esrag.model import BlockKind

    text = "# Guide\n\n```md\n:::{note}\nshown, not run\n```\n\n## Install\n\ntext\n\n:::{tip}\n## Inside\n:::\n\n## Usage\n\ntext\n"
    headers = [b.section_path[-1] for b in parse_blocks(text, myst=True) if b.kind is BlockKind.HEADER]
    assert headers == ["Guide", "Install", "Usage"]
