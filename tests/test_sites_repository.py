"""A repository is the unit: ``esrag ingest REPO`` finds the site configuration below the root
(FastAPI keeps ``mkdocs.yml`` in ``docs/en/``, its example code in ``docs_src/`` at the root), and
include directives may read any file inside the repository (its git root, or ``--root``), never
outside it. Ingested from the root or from ``docs/en``, FastAPI gives the same published URLs and
the same example code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from paths import DATA
from site_builds import site_chunks

FASTAPI = DATA / "corpora" / "fastapi-docs"
BASE = "https://fastapi.tiangolo.com/"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A git repository holding the FastAPI corpus (as a clone of tiangolo/fastapi would)."""
    root = tmp_path_factory.mktemp("fastapi") / "fastapi"
    shutil.copytree(FASTAPI, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    return root


def _by_page(chunks, prefix: str = "") -> dict[tuple[str, str], str]:
    return {(c.source_path.removeprefix(prefix), c.section_path): c.url for c in chunks}


def _with_example_code(chunks) -> int:
    return sum(1 for c in chunks if "from fastapi import" in c.text)


@pytest.mark.integration  # copies and git-inits a 4 MB tree
def test_fastapi_from_the_root_and_from_docs_en_same_urls_and_code(repo):
    from_root = site_chunks(repo, None, BASE)
    from_en = site_chunks(repo / "docs" / "en", None, BASE)
    assert from_root.chunks and len(from_root.chunks) == len(from_en.chunks)
    assert _by_page(from_root.chunks, "docs/en/") == _by_page(from_en.chunks)
    assert all(c.url.startswith(BASE) and "/docs/en/" not in c.url for c in from_root.chunks)
    refused = [p for p in from_root.problems + from_en.problems if "outside" in p[1]]
    assert not refused, refused[:5]
    code_root, code_en = _with_example_code(from_root.chunks), _with_example_code(from_en.chunks)
    assert code_root == code_en and code_root > 200, (code_root, code_en)
    # the repository's files that are no pages of the site are named, not indexed
    assert all(reason == "outside the generator's source folder" for _, reason in from_root.skipped if not _.startswith("docs/en/docs/"))


def test_include_outside_the_repository_is_refused(tmp_path):
    """An include may read anything inside the include root, nothing outside it."""
    repo = tmp_path / "repo"
    (repo / "docs" / "docs").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "src").mkdir()
    (repo / "src" / "ex.py").write_text("print('inside')\n", encoding="utf-8")
    (tmp_path / "secret.py").write_text("print('outside')\n", encoding="utf-8")
    (repo / "docs" / "mkdocs.yml").write_text(
        "site_url: https://x.example/\nmarkdown_extensions:\n  - pymdownx.snippets:\n      base_path: ['.']\n"
    )
    page = '# P\n\n```python\n--8<-- "../src/ex.py"\n```\n\n```python\n--8<-- "../../secret.py"\n```\n'
    (repo / "docs" / "docs" / "p.md").write_text(page, encoding="utf-8")
    written = site_chunks(repo / "docs", None, "")
    text = "\n".join(c.text for c in written.chunks)
    assert "print('inside')" in text and "print('outside')" not in text
    assert any("secret.py" in p for _, p in written.problems)
