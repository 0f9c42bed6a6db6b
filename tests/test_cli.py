"""The esrag command: every command has help, --json shapes are the documented contracts, bad
input gives a clear message and a non-zero exit, and a third-party plugin is picked up by name.

Commands run as real subprocesses of the installed console script (``.venv/bin/esrag``) with
the embedded store in a temporary folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from esrag.cli import main

ROOT = Path(__file__).resolve().parents[1]
from paths import LARAVEL

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ESRAG = str(Path(sys.executable).with_name("esrag"))


def run(args: list[str], cwd: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    full_env.update(env or {})
    proc = subprocess.run([ESRAG, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"esrag {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with three Laravel files ingested into ./.esrag (the default location)."""
    base = tmp_path_factory.mktemp("cli")
    docs = base / "docs"
    docs.mkdir()
    for name in ("scheduling.md", "queues.md", "cache.md"):
        shutil.copy(LARAVEL / name, docs / name)
    run(["ingest", "docs", "--json"], cwd=base)
    return base


def test_every_command_has_help_text():
    runner = CliRunner()
    commands = [([name], command) for name, command in main.commands.items()]
    while commands:  # a group (esrag export) has help; each of its subcommands has --json
        path, command = commands.pop()
        assert command.help and len(command.help) > 20, f"command {' '.join(path)} has no help text"
        result = runner.invoke(main, [*path, "--help"])
        if isinstance(command, click.Group):
            assert result.exit_code == 0 and command.commands, path
            commands += [([*path, name], sub) for name, sub in command.commands.items()]
            continue
        assert result.exit_code == 0 and "--json" in result.output, path


def test_search_k_below_one_is_refused_as_over_http_and_mcp(tmp_path):
    runner = CliRunner()
    for k in ("0", "-3"):
        result = runner.invoke(main, ["search", "waker", "-k", k], env={"ESRAG_DB": str(tmp_path / "x.db")})
        assert result.exit_code == 2 and "-k" in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "x.db").exists()  # refused before anything was opened


def test_ingest_json_summary_and_default_location(workdir):
    assert (workdir / ".esrag" / "esrag.db").exists()
    again = json.loads(run(["ingest", "docs", "--json"], cwd=workdir).stdout)
    for key in (
        "files",
        "chunks_new",
        "chunks_changed",
        "chunks_unchanged",
        "chunks_deleted",
        "embeddings_computed",
        "failures",
        "seconds",
    ):
        assert key in again
    assert again["files"] == 3 and again["chunks_new"] == 0 and again["embeddings_computed"] == 0
    assert again["chunks_unchanged"] > 50 and again["failures"] == []


def test_search_json_hits(workdir):
    hits = json.loads(run(["search", "how do I schedule a task to run every minute", "--json", "-k", "4"], cwd=workdir).stdout)
    assert len(hits) == 4
    for hit in hits:
        for key in ("source_path", "section_path", "start_line", "end_line", "score", "text", "tokens", "corpus"):
            assert key in hit
    assert hits[0]["source_path"] == "scheduling.md" and hits[0]["section_path"].startswith("Task Scheduling")
    assert hits[0]["corpus"] == "docs"


def test_search_modes_filters_and_explain(workdir):
    out = json.loads(run(["search", "retry failed jobs", "--json", "--mode", "bm25", "--path", "queues"], cwd=workdir).stdout)
    assert out and {h["source_path"] for h in out} == {"queues.md"} and all(set(h["legs"]) == {"bm25"} for h in out)
    explained = json.loads(run(["search", "cache tags", "--json", "--explain", "-k", "2"], cwd=workdir).stdout)
    assert set(explained) == {"hits", "timings_ms", "fusion"} and "total" in explained["timings_ms"]
    text = run(["search", "cache tags", "--explain", "-k", "2"], cwd=workdir).stdout
    assert "bm25: rank" in text and "timings (ms)" in text
    none = json.loads(run(["search", "cache", "--json", "--corpus", "nope"], cwd=workdir).stdout)
    assert none == []


def test_status_and_chunk(workdir):
    status = json.loads(run(["status", "--json"], cwd=workdir).stdout)
    assert status["corpora"]["docs"]["sources"] == 3 and status["embedder"] == "st:all-MiniLM-L6-v2"
    chunks = json.loads(run(["chunk", str(LARAVEL / "scheduling.md"), "--json"], cwd=workdir).stdout)
    assert {"id", "section_path", "start_line", "end_line", "tokens", "text"} <= set(chunks[0])
    assert chunks[0]["start_line"] == 1 and any("Sub-Minute" in c["section_path"] for c in chunks)
    table = run(["chunk", str(LARAVEL / "scheduling.md")], cwd=workdir).stdout
    assert "Task Scheduling > Running the Scheduler" in table


def test_esrag_db_env_moves_the_store(tmp_path):
    doc = tmp_path / "one.md"
    doc.write_text("# One\n\nA page about queues and workers.\n")
    db = tmp_path / "elsewhere" / "x.db"
    run(["ingest", str(doc), "--json"], cwd=tmp_path, env={"ESRAG_DB": str(db)})
    assert db.exists() and not (tmp_path / ".esrag").exists()


def test_bad_files_exit_nonzero_and_name_the_file(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nFine text about routing.\n")
    (docs / "bad.md").write_bytes(b"# Bad\n\ncaf\xe9\n")
    proc = run(["ingest", "docs", "--json"], cwd=tmp_path, check=False)
    assert proc.returncode == 1
    summary = json.loads(proc.stdout)
    assert summary["failures"] == [
        {"path": "bad.md", "error": "not valid UTF-8 at line 3 (byte offset 10); convert it with e.g. `iconv -f latin1 -t utf-8`"}
    ]
    assert summary["chunks_new"] == 1
    human = run(["ingest", "docs"], cwd=tmp_path, check=False)
    assert human.returncode == 1 and "bad.md" in human.stderr and "not valid UTF-8" in human.stderr


def test_search_before_ingest_and_bad_mode_are_clear(tmp_path):
    proc = run(["search", "anything"], cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "esrag ingest" in proc.stderr
    proc = run(["search", "anything", "--mode", "fuzzy"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "hybrid" in proc.stderr


def test_unknown_chunker_lists_installed_ones(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\ntext\n")
    proc = run(["chunk", str(doc), "--chunker", "nope"], cwd=tmp_path, check=False)
    assert proc.returncode == 1 and "unknown chunker 'nope'" in proc.stderr and "header" in proc.stderr


def test_third_party_plugin_is_selected_by_name(tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT / "tests" / "plugins" / "esrag-lines-chunker"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {"PYTHONPATH": str(target)}
    listed = json.loads(run(["plugins", "--json"], cwd=tmp_path, env=env).stdout)
    assert {
        "group": "esrag.chunkers",
        "name": "lines",
        "target": "esrag_lines_chunker:LinesChunker",
        "distribution": "esrag-lines-chunker",
    } in listed
    doc = tmp_path / "seven.md"
    doc.write_text("\n".join(f"line {i}" for i in range(1, 8)))
    chunks = json.loads(run(["chunk", str(doc), "--chunker", "lines", "--json"], cwd=tmp_path, env=env).stdout)
    assert [(c["start_line"], c["end_line"]) for c in chunks] == [(1, 3), (4, 6), (7, 7)]
    assert all(c["section_path"] == "lines" for c in chunks)
    # and it ingests through the same name
    summary = json.loads(run(["ingest", str(doc), "--chunker", "lines", "--json"], cwd=tmp_path, env=env).stdout)
    assert summary["chunks_new"] == 3


def test_files_named_lists_a_few_and_counts_the_rest():
    """The changed files of an ingest or a sync in one table cell."""
    from esrag.cli.common import files_named

    assert files_named([]) == "0"
    assert files_named(["a.md"]) == "1: a.md"
    assert files_named([f"{c}.md" for c in "abcde"]) == "5: a.md, b.md, c.md (+2)"


def test_ingest_table_names_changed_files_as_written(tmp_path):
    """File names in the summary table are shown as they are, never read as rich markup
    (``[slug]`` is a dynamic-route page of Nextra, Astro or VitePress sites)."""
    docs = tmp_path / "docs"
    (docs / "pages").mkdir(parents=True)
    (docs / "pages" / "[slug].md").write_text("# Slug page\n\nA dynamic route page.\n")
    (docs / "a[").mkdir()
    (docs / "a[" / "b].md").write_text("# Bold\n\nA page whose path holds a closing markup tag.\n")
    proc = run(["ingest", "docs"], cwd=tmp_path, env={"ESRAG_DB": str(tmp_path / "x.db")})
    assert "2: a[/b].md, pages/[slug].md" in proc.stderr, proc.stderr
