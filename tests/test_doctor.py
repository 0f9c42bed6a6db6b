"""esrag doctor: the library's checks and the CLI command, on real nodes and the embedded store."""

from __future__ import annotations

import json
import uuid
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from esrag.cli import main
from esrag.config import Settings
from esrag.store_checks import run_checks, worst
from esrag.stores.base import IndexMeta
from esrag.stores.elastic import ClusterWarning, ElasticStore
from esrag.stores.sqlite import SQLiteStore
from store_suite import make_chunk

MINILM = IndexMeta("st:all-MiniLM-L6-v2", 384, ["section_path", "text"], {"text": 1.0, "section_path": 1.0})


def by_name(checks):
    return {c.name: c for c in checks}


@pytest.mark.integration
def test_elastic_checks_on_the_test_node(es_url):
    alias = f"esrag-doc-{uuid.uuid4().hex[:10]}"
    store = ElasticStore(es_url, alias)
    try:
        settings = Settings(es_url=es_url, index=alias)
        empty = by_name(run_checks(settings))
        assert empty["connectivity"].status == "ok"
        version = empty["server version"]
        if store.server_version().startswith("8.15"):  # retrievers are GA from 8.16: fusion runs client-side
            assert version.status == "warn" and "8.16" in version.detail and "upgrade" in version.way_out
        else:
            assert version.status == "ok" and version.detail == f"Elasticsearch {store.server_version()}"
        assert empty["licence"].status == "ok" and "trial" in empty["licence"].detail
        assert empty["rrf retriever"].status == "warn" and "unknown retriever [rrf]" in empty["rrf retriever"].detail
        assert "client-side" in empty["rrf retriever"].detail and empty["rrf retriever"].way_out
        assert empty["linear retriever"].status == "warn"
        assert empty["ingest processors"].status == "warn" and "indexed_at" in empty["ingest processors"].detail
        assert empty["language analyzers"].status == "warn" and "english" in empty["language analyzers"].detail
        assert empty["alias"].status == "warn" and "esrag ingest" in empty["alias"].way_out
        assert empty["embedder"].status == "ok"

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClusterWarning)
            store.install(IndexMeta(**{**MINILM.to_dict()}))
        store.write([make_chunk(0, "x")], np.ones((1, 384), dtype=np.float32), ["m"])
        ready = by_name(run_checks(settings))
        assert ready["alias"].status == "ok" and ready["alias"].detail.endswith(f"{alias}-000001")
        assert ready["templates"].status == "ok" and ready["embedder"].status == "ok"
        assert worst(list(ready.values())) == "warn"

        other = by_name(run_checks(Settings(es_url=es_url, index=alias, embedder="st:other-model")))
        assert other["embedder"].status == "fail" and "st:all-MiniLM-L6-v2 (384 dims" in other["embedder"].detail
        assert "ESRAG_EMBEDDER=st:all-MiniLM-L6-v2" in other["embedder"].way_out and "--rebuild" in other["embedder"].way_out
    finally:
        store.drop()
        store.close()


def test_unreachable_cluster_is_one_failed_check():
    checks = run_checks(Settings(es_url="http://127.0.0.1:9", index="esrag"))
    assert [c.name for c in checks] == ["store", "tls", "authentication", "connectivity"]
    assert [c.status for c in checks] == ["ok", "ok", "ok", "fail"]
    assert "cannot reach Elasticsearch at http://127.0.0.1:9" in checks[3].detail and "ESRAG_ES_URL" in checks[3].way_out


def test_embedded_store_checks(tmp_path):
    db = tmp_path / "e.db"
    fresh = by_name(run_checks(Settings(db=db)))
    assert fresh["index"].status == "warn" and not db.exists()  # the doctor never creates the file
    s = SQLiteStore(db)
    s.ensure(IndexMeta(**MINILM.to_dict()))
    s.write([make_chunk(0, "hello")], np.ones((1, 384), dtype=np.float32), ["m"])
    s.close()
    ok = by_name(run_checks(Settings(db=db)))
    assert ok["index"].status == "ok" and "1 chunks" in ok["index"].detail and ok["embedder"].status == "ok"
    bad = by_name(run_checks(Settings(db=db, embedder="st:e5-small")))
    assert bad["embedder"].status == "fail" and "ESRAG_DB" in bad["embedder"].way_out


@pytest.mark.integration
def test_cli_doctor_json_and_exit_status(es_url, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(main, ["doctor", "--json"], env={"ESRAG_ES_URL": es_url, "ESRAG_INDEX": f"esrag-doc-{uuid.uuid4().hex[:8]}"})
    assert ok.exit_code == 0, ok.output
    checks = json.loads(ok.output)
    assert {c["name"] for c in checks} >= {
        "connectivity",
        "server version",
        "licence",
        "rrf retriever",
        "linear retriever",
        "ingest processors",
        "language analyzers",
        "alias",
        "templates",
        "pipeline",
        "embedder",
    }
    down = runner.invoke(main, ["doctor"], env={"ESRAG_ES_URL": "http://127.0.0.1:9"})
    assert down.exit_code == 1 and "cannot reach" in down.output
    embedded = runner.invoke(main, ["doctor", "--json"], env={"ESRAG_ES_URL": None, "ESRAG_DB": str(tmp_path / "x.db")})
    assert embedded.exit_code == 0 and json.loads(embedded.output)[0]["detail"].startswith("embedded SQLite store")


@pytest.mark.integration
def test_cli_doctor_table_fits_100_columns(es_url, tmp_path):
    """Through the console script with COLUMNS=100: no line over 100 characters, nothing ends in
    "…", every word of every detail and way out that fits a column is whole on one line, and
    the long names (index, templates, pipeline) are all there when their folded pieces join."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    esrag = str(Path(sys.executable).with_name("esrag"))
    alias = f"esrag-doctor-wide-table-{uuid.uuid4().hex[:8]}-documentation-knowledge-base"
    base = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    for env in (
        {**base, "ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias},
        {**base, "ESRAG_DB": str(tmp_path / "x.db")},
        {**base, "ESRAG_ES_URL": "http://127.0.0.1:9"},
    ):
        checks = json.loads(subprocess.run([esrag, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=300).stdout)
        table = subprocess.run([esrag, "doctor"], env={**env, "COLUMNS": "100"}, capture_output=True, text=True, timeout=300).stdout
        lines = table.splitlines()
        assert lines and max(len(line) for line in lines) <= 100 and "…" not in table
        cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
        assert all(len(row) == 4 for row in cells)
        for c in checks:
            for word in (c["detail"] + " " + c["way_out"]).split():
                assert len(word) > 25 or any(word in line for line in lines), (c["name"], word)
        joined = "".join("".join(row[2].split()) for row in cells)
        for c in checks:
            assert "".join(c["detail"].split()) in joined, c["name"]
        if "ESRAG_INDEX" in env:
            assert f"{alias}-settings" in joined and f"{alias}-chunks" in joined
