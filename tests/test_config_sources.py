"""Settings precedence (defaults < esrag.toml < environment < flags) and source discovery."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from esrag.config import load_settings
from esrag.errors import SourceError
from esrag.sources import discover, read_text


def test_precedence(tmp_path, monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("ESRAG_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "esrag.toml").write_text('embedder = "st:from-toml"\n[search]\nk = 7\nrrf_k = 30\n')
    s = load_settings()
    assert (s.embedder, s.search.k, s.search.rrf_k, s.search.mode) == ("st:from-toml", 7, 30, "hybrid")
    monkeypatch.setenv("ESRAG_SEARCH__RRF_K", "20")
    monkeypatch.setenv("ESRAG_EMBEDDER", "st:from-env")
    s = load_settings()
    assert (s.embedder, s.search.k, s.search.rrf_k) == ("st:from-env", 7, 20)
    assert load_settings(embedder="st:from-flag").embedder == "st:from-flag"
    assert load_settings(embedder=None).embedder == "st:from-env"


def test_store_selection_and_db_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ESRAG_ES_URL", raising=False)
    monkeypatch.delenv("ESRAG_DB", raising=False)
    s = load_settings()
    assert s.store_name == "sqlite" and s.db_path == Path(".esrag/esrag.db")
    monkeypatch.setenv("ESRAG_DB", str(tmp_path / "x.db"))
    monkeypatch.setenv("ESRAG_ES_URL", "http://127.0.0.1:9200")
    s = load_settings()
    assert s.store_name == "elastic" and s.db_path == tmp_path / "x.db"


def test_bad_mode_names_valid_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ESRAG_SEARCH__MODE", "fuzzy")
    with pytest.raises(ValueError, match="hybrid, bm25, dense"):
        load_settings()


def test_a_missing_key_names_the_file_and_the_table(tmp_path, monkeypatch):
    """A required key left out of a table of the settings file is reported against that file
    (it was ``setting sources.docs.git: …``, as if a flag had set it)."""
    config = tmp_path / "esrag.toml"
    config.write_text('[sources.docs]\nrefs = ["main"]\n', encoding="utf-8")
    monkeypatch.setenv("ESRAG_CONFIG", str(config))
    with pytest.raises(ValueError, match=r"^" + str(config).replace(".", r"\.") + r": sources\.docs\.git: field required"):
        load_settings()


def make_tree(root: Path) -> None:
    for rel in ["a.md", "docs/b.md", "docs/c.markdown", "docs/d.txt", "node_modules/x.md", "drafts/e.md", ".esrag/f.md"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# t\n")


def test_include_exclude_are_gitignore_style(tmp_path):
    make_tree(tmp_path)
    found = [s.rel for s in discover(tmp_path, ["*.md", "*.markdown"], ["node_modules/", ".esrag/", "drafts/"])]
    assert found == ["a.md", "docs/b.md", "docs/c.markdown"]
    assert [s.rel for s in discover(tmp_path, ["docs/*.md"], [])] == ["docs/b.md"]
    assert [s.rel for s in discover(tmp_path / "a.md", ["*.txt"], [])] == ["a.md"]
    with pytest.raises(SourceError, match="no such file"):
        discover(tmp_path / "missing", ["*.md"], [])


@pytest.mark.integration
def test_git_ignored_files_are_skipped(tmp_path):
    make_tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("drafts/\n")
    found = [s.rel for s in discover(tmp_path, ["*.md"], ["node_modules/", ".esrag/"])]
    assert found == ["a.md", "docs/b.md"]


def test_read_text_decodes_bom_and_names_bad_bytes(tmp_path):
    p = tmp_path / "bom.md"
    p.write_bytes("\ufeff# T\r\n".encode("utf-8"))
    assert read_text(p, "bom.md", 1000) == "# T\r\n"
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"ok\nok\n\xff\n")
    with pytest.raises(SourceError, match=r"bad.md: not valid UTF-8 at line 3 \(byte offset 6\)"):
        read_text(bad, "bad.md", 1000)
