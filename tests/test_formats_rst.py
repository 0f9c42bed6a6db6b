"""reStructuredText through docutils: the real requests docs (Sphinx), Sphinx directives and roles
docutils does not know, includes, and a malformed file in an ingest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.config import Settings
from esrag.formats import parse
from esrag.formats.base import is_unresolved_include
from esrag.ingest import Ingester
from esrag.model import BlockKind, Document
from paths import DATA

REQUESTS = DATA / "corpora" / "requests-docs"


def _doc(root: Path, rel: str) -> Document:
    return Document(rel, (root / rel).read_text(), source=str(root / rel), root=str(root))


def test_requests_quickstart_sections_anchors_and_text(capsys):
    p = parse(_doc(REQUESTS, "docs/user/quickstart.rst"))
    heads = [(b.section_path, b.anchor, b.level) for b in p.blocks if b.kind is BlockKind.HEADER]
    # `.. _quickstart:` before the title: docutils (auto_id_prefix "id") gives the section
    # ["id1", "quickstart"]; Sphinx's SortIds puts "id1" last, and a Sphinx 9.0.4 build of these
    # docs writes <section id="quickstart"><span id="id1"> (the title's ¶ links #quickstart)
    assert heads[0] == (("Quickstart",), "quickstart", 1)
    assert (("Quickstart", "Make a Request"), "make-a-request", 2) in heads
    assert (("Quickstart", "Response Content"), "response-content", 2) in heads
    text = "\n".join(p.lines)
    assert "Now, we have a `Response` object called `r`." in text  # :class:`Response <requests.Response>` as code (issue 38)
    assert "Requests is installed" in text  # :ref:`installed <install>`
    assert "```python\n>>> import requests\n```" in text  # a literal block (::) is a fence in highlight_language (python)
    assert ":class:" not in text and ".. module::" not in text and p.problems == []
    assert capsys.readouterr().err == ""  # docutils reports went to the captured stream
    first = p.blocks[0]
    assert (p.line_map[first.start_line - 1], p.end_map[first.end_line - 1]) == (3, 4)  # title text + underline


# <section id=…> of every section, in order, in a Sphinx 9.0.4 (docutils 0.22.4) html build of
# these files; every one of the 118 sections of the requests docs matched when this was written.
SPHINX_SECTION_IDS = {
    "docs/user/advanced.rst": [
        "advanced-usage",
        "session-objects",
        "request-and-response-objects",
        "prepared-requests",
        "ssl-cert-verification",
        "client-side-certificates",
        "ca-certificates",
        "body-content-workflow",
        "keep-alive",
        "streaming-uploads",
        "chunk-encoded-requests",
        "post-multiple-multipart-encoded-files",
        "event-hooks",
        "custom-authentication",
        "streaming-requests",
        "proxies",
        "socks",
        "compliance",
        "encodings",
        "http-verbs",
        "custom-verbs",
        "link-headers",
        "transport-adapters",
        "example-specific-ssl-version",
        "example-automatic-retries",
        "blocking-or-non-blocking",
        "header-ordering",
        "timeouts",
    ],
    "docs/api.rst": [  # `.. module:: requests` first in the section: its target leads (MoveModuleTargets)
        "module-requests",
        "main-interface",
        "exceptions",
        "request-sessions",
        "lower-level-classes",
        "lower-lower-level-classes",
        "authentication",
        "encodings",
        "cookies",
        "status-code-lookup",
        "migrating-to-1-x",
        "api-changes",
        "licensing",
        "migrating-to-2-x",
        "id1",
        "behavioural-changes",
    ],
    "docs/community/support.rst": ["support", "stack-overflow", "file-an-issue", "send-a-tweet"],
    "docs/user/authentication.rst": [
        "authentication",
        "basic-authentication",
        "netrc-authentication",
        "digest-authentication",
        "oauth-1-authentication",
        "oauth-2-and-openid-connect-authentication",
        "other-authentication",
        "new-forms-of-authentication",
    ],
}


def test_requests_section_anchors_are_the_ids_sphinx_publishes():
    for rel, published in SPHINX_SECTION_IDS.items():
        p = parse(_doc(REQUESTS, rel))
        assert [b.anchor for b in p.blocks if b.kind is BlockKind.HEADER] == published, rel


def test_requests_docs_chunk_with_section_paths_and_line_spans():
    chunker = HeaderChunker.from_settings(Settings().chunking)
    api = _doc(REQUESTS, "docs/api.rst")
    chunks = chunker.chunk(api)
    paths = {c.section_path for c in chunks}
    assert "Developer Interface > Main Interface" in paths and "Developer Interface > Exceptions" in paths
    body = "\n".join(c.text for c in chunks)
    lines = set(body.split("\n"))
    assert {"`request`", "`get`", "`class Session`", "`class Response`"} <= lines  # autofunction/autoclass: their argument, as code
    n = api.text.count("\n") + 1
    assert all(1 <= c.start_line <= c.end_line <= n for c in chunks)
    ordered = [c.start_line for c in chunks]
    assert ordered == sorted(ordered)
    adv = _doc(REQUESTS, "docs/user/advanced.rst")
    session = next(c for c in chunker.chunk(adv) if "Session Objects" in c.section_path)
    assert adv.text.split("\n")[session.start_line - 1].strip()  # the span starts on a source line with text


def test_sphinx_directives_roles_and_includes(tmp_path):
    (tmp_path / "conf.py").write_text("")
    (tmp_path / "part.rst").write_text("Included paragraph about caching.\n")
    (tmp_path / "example.py").write_text("import os\n# start\nprint('hello')\n# end\nexit()\n")
    (tmp_path / "page.rst").write_text(
        "\n".join(
            [
                "Guide",
                "=====",
                "",
                ".. versionadded:: 2.1",
                "   The *new* option.",
                "",
                ".. autofunction:: pkg.func",
                "",
                "Call :func:`~pkg.mod.func` or see :doc:`the guide <guide>`.",
                "",
                ".. code-block:: python",
                "   :emphasize-lines: 1",
                "",
                "   x = 1",
                "",
                ".. literalinclude:: example.py",
                "   :start-after: # start",
                "   :end-before: # end",
                "   :language: python",
                "",
                ".. include:: part.rst",
                "",
                ".. include:: ../outside.rst",
                "",
                ".. literalinclude:: missing.py",
                "",
                "===== =====",
                "col1  col2",
                "===== =====",
                "x     y",
                "===== =====",
                "",
                ".. note:: Mind the gap.",
                "",
                "- one",
                "- two",
                "",
            ]
        )
    )
    p = parse(_doc(tmp_path, "page.rst"))
    text = "\n".join(p.lines)
    assert "Added in version 2.1:\nThe *new* option." in text and "`pkg.func`" in text
    assert "Call `func()` or see the guide." in text
    assert "```python\nx = 1\n```" in text and "```python\nprint('hello')\n```" in text
    assert "Included paragraph about caching." in text
    assert ".. include::" not in text and "literalinclude" not in text  # unresolved: reported, left out of the text
    assert "| col1 | col2 |\n|---|---|\n| x | y |" in text and "> **Note:**\n> Mind the gap." in text
    assert "- one\n- two" in text
    assert len(p.problems) == 2
    assert p.problems[0].startswith("line 23: .. include:: ../outside.rst:") and "outside the ingested tree" in p.problems[0]
    assert p.problems[1].startswith("line 25: .. literalinclude:: missing.py: no such file")
    assert all(is_unresolved_include(q) and "left out of the indexed text" in q for q in p.problems)
    inc = next(i for i, ln in enumerate(p.lines) if ln == "Included paragraph about caching.")
    assert p.line_map[inc] == 21  # included lines map to the include directive's line
    assert p.dependencies == {(tmp_path / "part.rst").resolve(), (tmp_path / "example.py").resolve()}


MALFORMED = """Broken page
===========

Fine paragraph before the damage.

+------+-----+
| a    | b |
+------+

Later
-----

Text after the malformed table is still indexed.
"""


@pytest.mark.integration
def test_malformed_rst_is_reported_by_name_and_line_and_the_rest_indexed(tmp_path, sqlite_store):
    from esrag.embedding import SentenceTransformerEmbedder

    root = tmp_path / "docs"
    shutil.copytree(REQUESTS / "docs", root)
    (root / "broken.rst").write_text(MALFORMED)
    emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    ingester = Ingester(
        sqlite_store,
        emb.spec,
        lambda: emb,
        HeaderChunker.from_settings(Settings().chunking),
        ["section_path", "text"],
        {"text": 1.0, "section_path": 1.0},
    )
    summary = ingester.run(root, "requests", Settings().ingest.include, [])
    assert summary.files == 16 and summary.failures == []
    warned = {(w.path, w.error) for w in summary.warnings}
    assert ("broken.rst", "line 7: ERROR: Malformed table.") in warned
    assert {w.path for w in summary.warnings} == {"broken.rst", "community/updates.rst", "dev/authors.rst"}
    assert summary.to_dict()["warnings"][0].keys() == {"path", "error"}
    stored = sqlite_store.manifest("requests")
    assert set(stored) >= {"broken.rst", "user/quickstart.rst", "api.rst"} and len(stored) == 16
    assert len(stored["broken.rst"]) >= 1


def test_included_lines_map_to_the_include_line_from_any_working_directory(tmp_path, monkeypatch):
    """docutils names an included file relative to the working directory when the two share a
    leading folder (CI clones next to pytest's tmp dirs); the line map must not depend on it."""
    (tmp_path / "conf.py").write_text("")
    (tmp_path / "part.rst").write_text("Included paragraph about caching.\n")
    (tmp_path / "page.rst").write_text("Guide\n=====\n\nSome text.\n\n.. include:: part.rst\n\nMore.\n")
    for cwd in (tmp_path, tmp_path.parent, Path("/")):
        monkeypatch.chdir(cwd)
        p = parse(_doc(tmp_path, "page.rst"))
        inc = p.lines.index("Included paragraph about caching.")
        assert p.line_map[inc] == 6, cwd
