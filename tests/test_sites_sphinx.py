"""Sphinx read from its own configuration: ``conf.py`` through ``ast`` (never executed), its
``source_suffix`` / ``exclude_patterns`` / ``root_doc`` / ``html_baseurl``, object types its
extensions register, and object directives read as the reader sees them with their ids as
alternative anchors. The tree ``tests/data/sites/djangolike`` is laid out as Django's ``docs/``
(``source_suffix = ".txt"``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esrag.formats.rst import parse_rst, sphinx_make_id
from esrag.model import Document
from esrag.sites import resolve_site
from esrag.sites.sphinx import matches, read_conf
from serve_helpers import run_cli

DJANGOLIKE = Path(__file__).parent / "data" / "sites" / "djangolike" / "docs"
BASE = "https://docs.djangoproject.com/en/5.2/"


def conf(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "conf.py"
    path.write_text(text)
    read_conf.cache_clear()
    return path


@pytest.mark.parametrize(
    ("source", "want"),
    [
        ('source_suffix = ".txt"', {".txt": "restructuredtext"}),
        ("source_suffix = ['.rst', '.txt']", {".rst": "restructuredtext", ".txt": "restructuredtext"}),
        ("source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}", {".rst": "restructuredtext", ".md": "markdown"}),
        ("source_suffix: dict = {'.txt': 'restructuredtext'}", {".txt": "restructuredtext"}),
        ("", {".rst": "restructuredtext"}),
        ("source_suffix = SUFFIXES", {".rst": "restructuredtext"}),  # not a literal: Sphinx's default, and said so
    ],
)
def test_source_suffix_string_list_dict_or_default(tmp_path, source, want):
    got = read_conf(conf(tmp_path, source + "\n"))
    assert got.suffixes == want
    assert ("source_suffix" in got.skipped) == ("SUFFIXES" in source)


def test_conf_py_is_read_never_executed(tmp_path):
    marker = tmp_path / "executed"
    got = read_conf(
        conf(
            tmp_path,
            f"""
import pathlib
pathlib.Path({str(marker)!r}).write_text("ran")
master_doc = "contents"
root_doc = "start"
exclude_patterns = ["_build", "**/drafts", "notes/*.rst"]
html_baseurl = "https://docs.example.org/en/"
html_file_suffix = ".htm"
release = version + ".dev"
def setup(app):
    app.add_object_type("confval", "confval", objname="configuration value")
    app.add_crossref_type(directivename="setting", rolename="setting")
""",
        )
    )
    assert not marker.exists()
    assert (got.root_doc, got.base_url, got.file_suffix) == ("start", "https://docs.example.org/en/", ".htm")
    assert got.object_types == {"confval": "confval", "setting": "setting"} and got.crossref_types == ("setting",)
    assert got.excluded("_build/x.rst") == "excluded by conf.py exclude_patterns"
    assert got.excluded("a/drafts/x.rst") and got.excluded("drafts/x.rst")  # "**/x" also matches at the top
    assert got.excluded("notes/a.rst") and not got.excluded("notes/sub/a.rst")  # "*" stays in one segment
    assert got.excluded("index.md") == "suffix not in conf.py source_suffix" and got.excluded("index.rst") == ""


def test_sphinx_matcher_rules():  # sphinx.util.matching: ** crosses folders, * and ? do not, folders prune
    assert matches("_build/html/index.rst", ("_build",))
    assert matches("a/b/c.rst", ("a/**",)) and matches("x/a/b.rst", ("**/b.rst",))
    assert not matches("a/b/c.rst", ("a/*.rst",)) and matches("a/c.rst", ("a/?.rst",))
    assert matches("a/x.rst", ("a/[xy].rst",)) and not matches("a/z.rst", ("a/[!z].rst",))


def test_sphinx_make_id_keeps_case_and_dots():  # sphinx.util.nodes._make_id / make_id(prefix, term)
    assert sphinx_make_id("django.db.models.query.QuerySet.filter") == "django.db.models.query.QuerySet.filter"
    assert sphinx_make_id("DEBUG", "setting") == "setting-DEBUG"
    assert sphinx_make_id("--database", "cmdoption") == "cmdoption-database"
    assert sphinx_make_id("Straße Ærø", "x") == "x-Strasze-AEro" or sphinx_make_id("Straße Ærø", "x").startswith("x-Stras")


@pytest.mark.integration
def test_djangolike_tree_is_read_completely_with_no_setting(tmp_path):
    env = {"ESRAG_DB": str(tmp_path / "x.db")}
    out = run_cli(["ingest", str(DJANGOLIKE), "--site", "sphinx-dirhtml", "--base-url", BASE, "--json"], env)
    summary = json.loads(out.stdout)
    txt = sorted(p.relative_to(DJANGOLIKE).as_posix() for p in DJANGOLIKE.rglob("*.txt"))
    built = [p for p in txt if not p.startswith("_theme/") and p != "requirements.txt"]
    assert len(built) == 4 and summary["failures"] == [] and summary["chunks_new"] >= len(built)
    assert sorted(summary["skipped"]) == sorted(
        [
            "README.rst (suffix not in conf.py source_suffix)",
            "_theme/notes.txt (excluded by conf.py exclude_patterns)",
            "requirements.txt (excluded by conf.py exclude_patterns)",
        ]
    )
    pages = {}
    for rel in built:
        pages[rel] = json.loads(run_cli(["page", rel, "--json"], env).stdout)
    assert all(p["sections"] for p in pages.values())
    q = pages["ref/models/querysets.txt"]
    paths = [s["section_path"] for s in q["sections"]]
    assert "QuerySet API reference > When QuerySets are evaluated" in paths  # reStructuredText, not Markdown
    assert not any("\\s" in p or "``" in p for s in pages.values() for p in (x["section_path"] for x in s["sections"]))
    assert q["url"] == BASE + "ref/models/querysets/"
    every_alt = {u for p in pages.values() for s in p["sections"] for u in s["alt_urls"]}
    assert {
        BASE + "ref/models/querysets/#django.db.models.query.QuerySet",
        BASE + "ref/models/querysets/#django.db.models.query.QuerySet.ordered",
        BASE + "ref/models/querysets/#django.db.models.query.QuerySet.filter",  # currentmodule names the class
        BASE + "ref/settings/#setting-DEBUG",
        BASE + "ref/settings/#envvar-DJANGO_SETTINGS_MODULE",
        BASE + "ref/settings/#cmdoption-database",
        BASE + "topics/db/#django.db.connection.cursor",
    } <= every_alt
    # django-admin has a parse_node function in the extension: its id is made in code, so none is claimed
    assert not any("django-admin" in u for u in every_alt)
    text = "\n".join(s["text"] for s in q["sections"])
    assert "class QuerySet(model=None, query=None, using=None, hints=None)" in text
    assert "`filter(*args, **kwargs)`" in text and "`True` if the `QuerySet` is ordered." in text  # signatures, literals as code
    settings_text = "\n".join(s["text"] for s in pages["ref/settings.txt"]["sections"])
    assert "migrate [app_label] [migration_name]" in settings_text and ".. setting::" not in settings_text
    hits = json.loads(run_cli(["search", "turn on debug mode", "--json", "-k", "3"], env).stdout)
    assert hits[0]["url"] == BASE + "ref/settings/#debug" and BASE + "ref/settings/#setting-DEBUG" in hits[0]["alt_urls"]


@pytest.mark.integration
def test_esrag_chunk_reads_a_sphinx_txt_page_as_restructuredtext():
    out = run_cli(["chunk", str(DJANGOLIKE / "ref" / "models" / "querysets.txt"), "--json"], {})
    chunks = json.loads(out.stdout)
    paths = [c["section_path"] for c in chunks]
    assert "QuerySet API reference > QuerySet API > Methods that return new QuerySets > filter()" in paths
    assert not any(".. class::" in c["text"] or "====" in c["text"] for c in chunks)


def test_object_directives_keep_signature_and_body_and_give_ids():
    text = """Title
=====

.. module:: pkg

.. class:: Thing(a, b=1)

   A thing.

   .. method:: run(*args)

      Runs it.

   .. attribute:: size

.. exception:: Oops

.. function:: helper(x) -> int
   :no-index:

   Helps.

.. program:: tool

.. option:: -v, --verbose

   Talk more.

.. envvar:: TOOL_HOME

.. confval:: timeout

   Seconds to wait.

.. _extra-label:

Some paragraph with a label.
"""
    parsed = parse_rst(text, "x.rst", None, None, {"object_types": {"confval": "confval"}, "crossref_types": []})
    body = "\n".join(b.text for b in parsed.blocks)
    for shown in (
        "class Thing(a, b=1)",
        "A thing.",
        "run(*args)",
        "Runs it.",
        "size",
        "exception Oops",
        "helper(x) -> int",
        "Helps.",
        "-v, --verbose",
        "Talk more.",
        "TOOL_HOME",
        "timeout",
        "Seconds to wait.",
    ):
        assert shown in body, shown
    (header,) = [b for b in parsed.blocks if b.level == 1]
    assert header.anchor == "module-pkg"  # Sphinx's MoveModuleTargets: the module's target first
    assert list(header.alt_anchors) == [
        "title",
        "pkg.Thing",
        "pkg.Thing.run",
        "pkg.Thing.size",
        "pkg.Oops",
        "cmdoption-tool-v",
        "cmdoption-tool-verbose",
        "envvar-TOOL_HOME",
        "confval-timeout",
        "extra-label",
    ]
    # conf.py's types are this document's only: another document reads .. confval:: as an unknown directive
    again = parse_rst(".. confval:: timeout\n\n   Seconds.\n", "y.rst", None, None)
    assert "timeout" in "\n".join(b.text for b in again.blocks)


def test_sphinx_site_reads_txt_only_inside_its_source_folder(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "conf.py").write_text('source_suffix = ".txt"\n')
    (tmp_path / "docs" / "index.txt").write_text("Home\n====\n\nText.\n")
    (tmp_path / "LICENSE.txt").write_text("Permission is hereby granted.\n")
    read_conf.cache_clear()
    site = resolve_site(tmp_path, "sphinx", "https://x.org/")
    inside = Document("docs/index.txt", "Home\n====\n")
    outside = Document("LICENSE.txt", "Permission.\n")
    assert site.prepare(inside) == "" and inside.format == "rst"
    assert site.prepare(outside) == "outside the generator's source folder"
