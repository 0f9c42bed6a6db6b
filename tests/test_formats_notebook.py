"""Jupyter notebooks (esrag.formats.notebook): Markdown cells as Markdown, code cells fenced in
the kernel's language, raw cells and (by default) outputs left out, line spans as cell numbers.

Real notebooks: tests/data/notebooks (copied unchanged from executablebooks/MyST-NB, BSD-3;
see the README there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esrag.errors import SourceError
from esrag.formats import parse
from esrag.formats.notebook import OUTPUT_LIMIT, TRUNCATED, parse_notebook
from esrag.model import BlockKind, Document

NOTEBOOKS = Path(__file__).parent / "data" / "notebooks"


def _nb(*cells: dict, metadata: dict | None = None) -> str:
    return json.dumps({"cells": list(cells), "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5})


def _read(name: str) -> str:
    return (NOTEBOOKS / name).read_text(encoding="utf-8")


def test_real_notebook_markdown_headings_and_fenced_python():
    parsed = parse(Document(path="basic_run.ipynb", text=_read("basic_run.ipynb"), corpus="c"))
    assert parsed.lines[:3] == ["# a title", "", "some text"]
    code = [b for b in parsed.blocks if b.kind == BlockKind.CODE]
    assert [b.text for b in code] == ["```python\na = 1\nprint(a)\n```"]
    assert [(b.kind, b.section_path) for b in parsed.blocks if b.kind == BlockKind.HEADER] == [(BlockKind.HEADER, ("a title",))]
    assert "1" not in parsed.lines  # the stream output is left out by default
    # line spans are cell numbers: the code block comes from cell 2
    assert {parsed.line_map[i - 1] for i in range(code[0].start_line, code[0].end_line + 1)} == {2}
    assert len(parsed.line_map) == len(parsed.lines)


def test_outputs_setting_indexes_text_outputs_truncated():
    text = _read("scroll_outputs.ipynb")
    off = parse_notebook(text, "scroll_outputs.ipynb")
    assert "long output" not in off.lines and "short output" not in off.lines
    on = parse_notebook(text, "scroll_outputs.ipynb", outputs=True)
    joined = "\n".join(on.lines)
    assert "```text\nshort output\nshort output\n```" in joined
    assert on.lines.count("long output") == 100  # 1,200 characters: under the limit
    long = "x" * (OUTPUT_LIMIT + 50)
    cut = parse_notebook(
        _nb(
            {
                "cell_type": "code",
                "source": "f()",
                "metadata": {},
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "data": {"text/plain": long, "image/png": "AAA"},
                        "metadata": {},
                        "execution_count": 1,
                    },
                    {"output_type": "error", "ename": "E", "evalue": "boom", "traceback": ["boom"]},
                ],
            }
        ),
        "a.ipynb",
        outputs=True,
    )
    assert ("x" * OUTPUT_LIMIT) in cut.lines and TRUNCATED in cut.lines and "boom" not in "\n".join(cut.lines)


def test_raw_cells_left_out_and_language_from_language_info():
    text = _nb(
        {"cell_type": "raw", "source": "\\section{LaTeX only}", "metadata": {}},
        {"cell_type": "markdown", "source": ["## Part\n", "text"], "metadata": {}},
        {"cell_type": "code", "source": "println(1)\n```inner```", "metadata": {}, "outputs": []},
        metadata={"language_info": {"name": "Julia"}},
    )
    parsed = parse_notebook(text, "j.ipynb")
    assert "LaTeX only" not in "\n".join(parsed.lines)
    code = [b.text for b in parsed.blocks if b.kind == BlockKind.CODE]
    assert code == ["````julia\nprintln(1)\n```inner```\n````"]  # fence longer than the run inside
    assert parsed.line_map[0] == 2  # the raw cell 1 left no line


def test_myst_cells_read_as_myst():
    text = _nb({"cell_type": "markdown", "source": "(target)=\n# Title\n\n```{note}\n# not a heading\n```\n", "metadata": {}})
    parsed = parse(Document(path="m.ipynb", text=text, corpus="c", format_options={"myst": True}))
    headers = [b for b in parsed.blocks if b.kind == BlockKind.HEADER]
    assert [b.section_path for b in headers] == [("Title",)]


def test_real_notebook_many_cells_sections():
    parsed = parse_notebook(_read("complex_outputs_unrun.ipynb"), "complex_outputs_unrun.ipynb")
    titles = [b.section_path[-1] for b in parsed.blocks if b.kind == BlockKind.HEADER]
    assert titles[:3] == ["Markdown", "General", "References and Citations"]
    assert "Interactive outputs" in titles and "ipywidgets" in titles
    assert all(b.text.startswith("```python\n") for b in parsed.blocks if b.kind == BlockKind.CODE)


@pytest.mark.parametrize(
    "text,message",
    [
        ("{not json", "invalid JSON"),
        ("[]", "not an object"),
        (json.dumps({"nbformat": 3, "worksheets": []}), "only nbformat 4"),
        (json.dumps({"nbformat": 4, "metadata": {}}), "no list of cells"),
        (_nb({"cell_type": "markdown", "source": 5, "metadata": {}}), "cell 1: source"),
    ],
)
def test_malformed_notebook_is_a_source_error_naming_the_file(text, message):
    with pytest.raises(SourceError, match=message) as err:
        parse_notebook(text, "docs/bad.ipynb")
    assert "docs/bad.ipynb" in str(err.value)


def test_empty_notebook_parses():
    parsed = parse_notebook(_nb(), "e.ipynb")
    assert parsed.blocks == [] and parsed.line_map == [1]


def _mkdocs_site(tmp_path, plugins: str):
    from esrag.sites import resolve_site

    (tmp_path / "mkdocs.yml").write_text(f"site_name: x\nsite_url: https://m.dev/\n{plugins}", encoding="utf-8")
    (tmp_path / "docs" / "skip").mkdir(parents=True)
    (tmp_path / "docs" / "nb.ipynb").write_text(_read("complex_outputs_unrun.ipynb"), encoding="utf-8")
    (tmp_path / "docs" / "skip" / "b.ipynb").write_text(_read("basic_run.ipynb"), encoding="utf-8")
    return resolve_site(tmp_path, None, "https://m.dev/")


def test_mkdocs_jupyter_notebooks_are_pages_with_nbconvert_ids(tmp_path):
    """mkdocs-jupyter (mkdocs_jupyter/plugin.py should_include; nbconvert add_anchor ids)."""
    from site_builds import site_chunks

    _mkdocs_site(tmp_path, 'plugins:\n  - search\n  - mkdocs-jupyter:\n      ignore: ["skip/*.ipynb"]\n')
    got = site_chunks(tmp_path, None, "https://m.dev/")
    assert got.skipped == [("docs/skip/b.ipynb", "not a page of mkdocs-jupyter (its include / ignore in mkdocs.yml)")]
    urls = {c.url for c in got.chunks}
    assert {"https://m.dev/nb/#General", "https://m.dev/nb/#Tables-(with-pandas)"} <= urls


def test_mkdocs_without_the_plugin_names_notebooks_static(tmp_path):
    from site_builds import site_chunks

    _mkdocs_site(tmp_path, "")
    reasons = {reason for _, reason in site_chunks(tmp_path, None, "https://m.dev/").skipped}
    assert reasons == {"a notebook MkDocs copies as a static file (no mkdocs-jupyter plugin in mkdocs.yml)"}


def test_mkdocs_jupyter_markdown_processor_mkdocs_uses_the_toc_slug(tmp_path):
    from site_builds import site_chunks

    _mkdocs_site(tmp_path, "plugins:\n  - mkdocs-jupyter:\n      markdown_cell_processor: mkdocs\n")
    urls = {c.url for c in site_chunks(tmp_path, None, "https://m.dev/").chunks}
    assert "https://m.dev/nb/#tables-with-pandas" in urls
