"""``esrag remove`` / ``esrag drop`` (and :func:`esrag.app.remove_corpus` / ``drop_index``) on the
real SQLite store and both Elasticsearch nodes: removing one corpus leaves the other searchable
and untouched, a removed corpus re-ingests cleanly, drop then setup/ingest works, and nothing is
deleted without ``--yes`` (or a "y" on a real terminal)."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from esrag.cli import main
from esrag.stores.elastic import ClusterWarning, ElasticStore
from paths import LARAVEL

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ESRAG = str(Path(sys.executable).with_name("esrag"))


def _trees(base: Path) -> dict[str, Path]:
    """Two real Laravel corpora: cache (2 files) and queues (1 file)."""
    trees = {"cachedocs": ["cache.md", "scheduling.md"], "queuedocs": ["queues.md"]}
    out = {}
    for name, files in trees.items():
        (base / name).mkdir()
        for f in files:
            shutil.copy(LARAVEL / f, base / name / f)
        out[name] = base / name
    return out


def _cli(args: list[str], env: dict) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusterWarning)  # the 8.15.5 node has no ingest processors
        r = CliRunner().invoke(main, args, env=env)
    return r.exit_code, r.stdout, r.stderr


def _ok(args: list[str], env: dict):
    code, stdout, stderr = _cli(args, env)
    assert code == 0, f"esrag {' '.join(args)}: {stdout}{stderr}"
    return json.loads(stdout) if "--json" in args else stdout


def _ids(hits: list[dict]) -> list[str]:
    return [h["id"] for h in hits]


def _scenario(env: dict, base: Path) -> None:
    trees = _trees(base)
    counts = {name: _ok(["ingest", str(tree), "--json"], env)["chunks_new"] for name, tree in trees.items()}
    assert all(n > 0 for n in counts.values())
    queue_query = ["search", "retry a failed job on the queue worker", "-k", "5", "--corpus", "queuedocs", "--json"]
    queue_hits = _ok(queue_query, env)
    queue_texts = {h["id"]: h["text"] for h in queue_hits}
    # kNN scores depend on the chunk alone (BM25's statistics shift when other documents go)
    dense_query = [*queue_query, "--mode", "dense"]
    dense_hits = _ok(dense_query, env)

    # no --yes and no terminal: refused, nothing deleted
    code, _, stderr = _cli(["remove", "--corpus", "cachedocs"], env)
    assert code == 1 and "--yes" in stderr and len(stderr.strip().splitlines()) == 1
    assert _ok(["status", "--json"], env)["corpora"]["cachedocs"]["chunks"] == counts["cachedocs"]
    # an unknown corpus names the flag and the corpora there are
    code, _, stderr = _cli(["remove", "--corpus", "nosuch", "--yes"], env)
    assert code == 1 and "--corpus 'nosuch'" in stderr and "cachedocs, queuedocs" in stderr

    removed = _ok(["remove", "--corpus", "cachedocs", "--yes", "--json"], env)
    assert removed == {"corpus": "cachedocs", "doc_version": None, "chunks": counts["cachedocs"]}
    status = _ok(["status", "--json"], env)
    assert set(status["corpora"]) == {"queuedocs"} and status["corpora"]["queuedocs"]["chunks"] == counts["queuedocs"]
    # the other corpus: same hits, same text; the removed one is gone from every leg
    assert _ids(_ok(dense_query, env)) == _ids(dense_hits)
    again = _ok(queue_query, env)
    assert {h["source_path"] for h in again} == {"queues.md"} and again[0]["id"] in queue_texts
    assert all(h["text"] == queue_texts[h["id"]] for h in again if h["id"] in queue_texts)
    for mode in ("bm25", "dense", "hybrid"):
        hits = _ok(["search", "cache store tags and locks", "-k", "10", "--mode", mode, "--json"], env)
        assert hits and {h["corpus"] for h in hits} == {"queuedocs"}

    # re-ingest: every chunk comes back, searchable
    back = _ok(["ingest", str(trees["cachedocs"]), "--json"], env)
    assert back["chunks_new"] == counts["cachedocs"] and back["failures"] == []
    hits = _ok(["search", "cache store tags and locks", "-k", "3", "--corpus", "cachedocs", "--json"], env)
    assert hits[0]["source_path"] == "cache.md"

    # a version of a corpus: only that version goes
    versioned = _ok(["ingest", str(trees["queuedocs"]), "--corpus", "queuedocs", "--doc-version", "12.x", "--json"], env)
    assert versioned["chunks_new"] == counts["queuedocs"]
    code, _, stderr = _cli(["remove", "--corpus", "queuedocs", "--doc-version", "13.x", "--yes"], env)
    assert code == 1 and "--doc-version '13.x'" in stderr
    gone = _ok(["remove", "--corpus", "queuedocs", "--doc-version", "12.x", "--yes", "--json"], env)
    assert gone["chunks"] == counts["queuedocs"]
    assert _ok(["status", "--json"], env)["corpora"]["queuedocs"]["chunks"] == counts["queuedocs"]
    assert _ids(_ok(dense_query, env)) == _ids(dense_hits)

    # drop everything, then setup + ingest start afresh
    code, _, stderr = _cli(["drop"], env)
    assert code == 1 and "--yes" in stderr
    dropped = _ok(["drop", "--yes", "--json"], env)
    assert dropped["chunks"] == counts["cachedocs"] + counts["queuedocs"]
    assert _ok(["status", "--json"], env)["chunks"] == 0
    code, _, stderr = _cli(["search", "cache", "--json"], env)
    assert code == 1 and "esrag ingest" in stderr
    _ok(["setup", "--json"], env)
    assert _ok(["ingest", str(trees["queuedocs"]), "--json"], env)["chunks_new"] == counts["queuedocs"]
    fresh = _ok(queue_query, env)  # (BM25 statistics now count one corpus only: ranks may shift)
    assert {h["source_path"] for h in fresh} == {"queues.md"} and fresh[0]["id"] in queue_texts
    return dropped


def test_remove_and_drop_on_sqlite(tmp_path):
    env = {"ESRAG_ES_URL": None, "ESRAG_DB": str(tmp_path / "db" / "esrag.db"), "ESRAG_EMBEDDING_CACHE": str(tmp_path / "emb.db")}
    dropped = _scenario(env, tmp_path)
    assert dropped["tables"] == ["chunks", "chunks_fts", "meta"] and dropped["corpora"] == 2


def test_remove_and_drop_on_elasticsearch(es_url, tmp_path):
    alias = f"esrag-rm-{uuid.uuid4().hex[:8]}"
    env = {"ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias, "ESRAG_DB": None, "ESRAG_EMBEDDING_CACHE": str(tmp_path / "emb.db")}
    try:
        dropped = _scenario(env, tmp_path)
        assert dropped["alias"] == alias and dropped["indices"] == [f"{alias}-000001"]
        assert dropped["templates"] == [alias, f"{alias}-settings", f"{alias}-mappings"]
        assert dropped["pipelines"] in ([], [f"{alias}-chunks"])  # (installed where the node has ingest processors)
        store = ElasticStore(es_url, alias)
        left = store.assets()
        store.close()
        assert left["index"] == f"{alias}-000001"  # the setup after the drop made a fresh first index
    finally:
        cleaner = ElasticStore(es_url, alias)
        report = cleaner.drop()
        cleaner.close()
    assert report["indices"] == [f"{alias}-000001"] and not ElasticStore(es_url, alias).assets()["index_template"]


def test_drop_asks_on_a_terminal(tmp_path):
    """On a real terminal (a pty) `esrag drop` asks; "n" keeps everything, "y" drops."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(LARAVEL / "queues.md", docs / "queues.md")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    env |= {"ESRAG_DB": str(tmp_path / "esrag.db"), "ESRAG_EMBEDDING_CACHE": str(tmp_path / "emb.db")}
    subprocess.run([ESRAG, "ingest", str(docs)], env=env, check=True, capture_output=True, timeout=600)

    def answer(text: bytes) -> subprocess.CompletedProcess:
        leader, follower = pty.openpty()
        try:
            proc = subprocess.Popen([ESRAG, "drop"], stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            os.write(leader, text)
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            os.close(leader)
            os.close(follower)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout.decode(), stderr.decode())

    no = answer(b"n\n")
    assert no.returncode == 1 and "Drop the whole index the embedded store" in no.stderr and "Aborted" in no.stderr
    status = subprocess.run([ESRAG, "status", "--json"], env=env, check=True, capture_output=True, text=True)
    assert json.loads(status.stdout)["corpora"]["docs"]["chunks"] > 0
    yes = answer(b"y\n")
    assert yes.returncode == 0 and "dropped" in yes.stdout
    status = subprocess.run([ESRAG, "status", "--json"], env=env, check=True, capture_output=True, text=True)
    assert json.loads(status.stdout)["chunks"] == 0
