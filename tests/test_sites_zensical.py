"""The Zensical generator (:mod:`esrag.sites.zensical`): ``zensical.toml`` read as Zensical 0.0.73
reads it, told apart from ``mkdocs.yml``; and (integration) real sites built by the real
``zensical`` from PyPI (its own venv under ``~/.cache/esrag-tests``, :mod:`zensical_build`), every
section URL esrag writes checked against the built HTML.

The fixture ``tests/data/zensical-scrapling`` is the documentation of D4Vinci/Scrapling at
4ce0fb1c (BSD-3-Clause, its LICENSE kept beside it): its real ``zensical.toml`` and every Markdown
page (images left out).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from esrag.sites.registry import generators
from esrag.sites.zensical import GENERATOR, as_mkdocs, detect, load_toml

DATA = Path(__file__).parent / "data" / "zensical-scrapling"
BASE = "https://scrapling.readthedocs.io/en/latest/"


def _site(tmp: Path, toml: str, pages: dict[str, str]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "zensical.toml").write_text(toml, encoding="utf-8")
    for rel, text in pages.items():
        (tmp / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "docs" / rel).write_text(text, encoding="utf-8")
    return tmp


def test_real_config_is_read_from_the_project_table():
    found = detect(DATA)
    assert found is not None and found.site == "zensical"
    assert found.pages_dir == DATA / "docs"
    assert found.base_url == BASE
    assert found.directory_urls is False  # use_directory_urls = false
    assert found.skip is not None
    assert found.skip("README_CN.md") == "excluded by zensical.toml exclude_docs"  # exclude_docs = "README*.md"
    assert found.skip("parsing/selection.md") == ""
    assert found.anchors is None and not found.notes  # toc without slugify: Python-Markdown's


def test_zensical_toml_wins_over_mkdocs_yml_in_the_same_folder(tmp_path):
    """Zensical's CLI reads zensical.toml first (main.py ``execute_build``); a lone mkdocs.yml
    stays MkDocs' (same rules when Zensical builds it)."""
    (tmp_path / "mkdocs.yml").write_text("site_name: x\ndocs_dir: other\n", encoding="utf-8")
    assert [g.name for g in generators().values() if g.detect and g.detect(tmp_path)] == ["mkdocs"]
    _site(tmp_path, '[project]\nsite_name = "x"\n', {"index.md": "# A"})
    order = [g.name for g in generators().values() if g.detect and g.detect(tmp_path)]
    assert order[:2] == ["zensical", "mkdocs"]
    assert GENERATOR.priority < generators()["mkdocs"].priority


def test_settings_without_a_project_table_and_defaults(tmp_path):
    _site(tmp_path, 'site_name = "x"\nsite_url = "https://x.org/d/"\n', {"index.md": "# A"})
    assert load_toml(tmp_path / "zensical.toml")["site_url"] == "https://x.org/d/"
    found = detect(tmp_path)
    assert found is not None and found.base_url == "https://x.org/d/" and found.directory_urls
    assert found.pages_dir == tmp_path / "docs"


def test_toc_slugify_table_and_offline_plugin():
    cfg = {
        "markdown_extensions": {"toc": {"permalink": True, "slugify": {"kwds": {"case": "lower"}}}},
        "plugins": {"offline": {}},
    }
    out = as_mkdocs(cfg)
    assert out["use_directory_urls"] is False
    assert as_mkdocs({"plugins": ["search", {"offline": {"enabled": False}}]}).get("use_directory_urls", True) is True
    assert as_mkdocs({"plugins": ["offline"]})["use_directory_urls"] is False
    toc = out["markdown_extensions"][0]["toc"]
    assert toc["slugify"].name == "pymdownx.slugs.slugify" and toc["slugify"].kwds == {"case": "lower"}


def test_bad_config_is_a_note_naming_the_file(tmp_path):
    _site(tmp_path, "[project\nsite_name = ", {"index.md": "# A"})
    found = detect(tmp_path)
    assert found is not None and found.pages_dir == tmp_path / "docs"
    assert len(found.notes) == 1 and str(tmp_path / "zensical.toml") in found.notes[0]
    _site(tmp_path, '[project.markdown_extensions.toc]\nslugify = {object = "my.slug"}\n', {})
    note = detect(tmp_path).notes  # type: ignore[union-attr]
    assert len(note) == 1 and "my.slug" in note[0] and "zensical.toml" in note[0]


def _built_pages(out: Path, docs: Path) -> set[str]:
    """Pages of a build: HTML files made from a Markdown page (not HTML copied from docs_dir)."""
    return {
        p.relative_to(out).as_posix() for p in out.rglob("*.html") if p.name != "404.html" and not (docs / p.relative_to(out)).is_file()
    }


def test_zensical_build_conformance(tmp_path):
    """Scrapling's docs (real zensical.toml: exclude_docs, use_directory_urls = false) built by
    zensical 0.0.73: every section URL is on the built page; every built page indexed, the
    excluded README_*.md skipped with the reason."""
    from site_builds import Build, check, site_chunks
    from zensical_build import zensical_build

    # never skipped: python -m venv + pip reach PyPI here (README "The machine")
    assert shutil.which("python3"), "python3 is needed to make zensical's venv"
    written = site_chunks(DATA, None, BASE)  # detected: no --site
    assert written.site is not None and written.site.site == "zensical"
    out, _ = zensical_build(DATA, tmp_path)
    report = check(Build(out, BASE), written.chunks)
    print(f"zensical-scrapling: {report}")
    assert report.urls > 250 and report.share >= 0.99, str(report)
    built = {BASE + rel for rel in _built_pages(out, DATA / "docs")}
    indexed = {c.url.split("#")[0] for c in written.chunks if c.url}
    assert built == indexed, (sorted(built - indexed)[:10], sorted(indexed - built)[:10])
    skipped = dict(written.skipped)
    assert set(skipped) == {f"docs/README_{x}.md" for x in ("AR", "CN", "DE", "ES", "FR", "JP", "KR", "PT_BR", "RU")}
    assert set(skipped.values()) == {"excluded by zensical.toml exclude_docs"}


def test_zensical_build_slugify_table_and_offline(tmp_path):
    """A ``toc.slugify`` table (``pymdownx.slugs.slugify(case="lower")`` keeps Unicode) and the
    ``offline`` plugin (``.html`` URLs), both as zensical.toml writes them, against the build."""
    from site_builds import Build, check, site_chunks
    from zensical_build import zensical_build

    toml = (
        '[project]\nsite_name = "t"\nsite_url = "https://t.org/"\n'
        "[project.markdown_extensions.toc]\npermalink = true\n"
        'slugify = {object = "pymdownx.slugs.slugify", kwds = {case = "lower"}}\n'
        "[project.plugins.offline]\n"
    )
    body = "Some words of text in this section, enough to be a chunk of its own.\n\n" * 3
    page = "".join(f"{h}\n\n{body}" for h in ("# Über Café", "## Größe & Maß", "## Größe & Maß", "## 中文 标题", "### API `v2`"))
    site = _site(tmp_path / "site", toml, {"index.md": page, "guide/a-b.md": page, "guide/README.md": page})
    written = site_chunks(site, None, "https://t.org/")
    urls = sorted({c.url for c in written.chunks if c.url and "#" in c.url})
    assert "https://t.org/guide/a-b.html#größe--maß_1" in urls  # unicode kept, each space a "-", duplicates _1, offline: .html
    out, _ = zensical_build(site, tmp_path / "build")
    report = check(Build(out, "https://t.org/"), written.chunks)
    assert report.urls >= 12 and report.share == 1.0, str(report)
