"""Warnings reach CLI users as one clean ``warning: <message>`` line on stderr (no Python file
path, no source line), through the real console script against both Elasticsearch nodes (the
8.15.5 integ-test node has no ingest processors and no stemmer: ``ClusterWarning``s)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from esrag.stores.elastic import ElasticStore
from paths import LARAVEL

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ESRAG = str(Path(sys.executable).with_name("esrag"))


def test_cluster_warnings_print_as_one_line(es_url, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(LARAVEL / "queues.md", docs / "queues.md")
    alias = f"esrag-warn-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    env |= {"ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias, "ESRAG_EMBEDDING_CACHE": str(tmp_path / "emb.db")}
    probe = ElasticStore(es_url, alias)
    version = probe.server_version()
    try:
        proc = subprocess.run([ESRAG, "ingest", str(docs), "--json"], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stderr.splitlines()
        warned = [line for line in lines if line.startswith("warning: ")]
        assert ".py:" not in proc.stderr and "ClusterWarning" not in proc.stderr and "self.store" not in proc.stderr
        # every warning (e.g. a node without the porter_stem filter) is one whole line
        assert all(line.startswith("warning: ") for line in lines if "Elasticsearch at" in line)
        assert all(line.rstrip().endswith(".") for line in warned)
        if version.startswith("8.15"):
            # the pipeline warning: one line, whole, naming the pipeline and the way it copes
            [pipeline] = [line for line in warned if "no ingest processors" in line]
            assert f"the ingest pipeline {alias}-chunks was not installed" in pipeline
            assert pipeline.endswith("A full Elasticsearch distribution has them.")
    finally:
        probe.drop()
        probe.close()


def test_other_warnings_keep_python_format(tmp_path):
    """Only esrag's own warnings are reshaped; another library's keep file:line: Category."""
    script = tmp_path / "other.py"
    script.write_text(
        "import warnings\n"
        "from esrag.cli.common import install_warning_hook\n"
        "from esrag.stores.elastic import ClusterWarning\n"
        "install_warning_hook()\n"
        "warnings.warn('third party says\\nsomething', DeprecationWarning)\n"
        "warnings.warn(ClusterWarning('cluster says\\n  this'))\n"
    )
    proc = subprocess.run([sys.executable, "-W", "always", str(script)], capture_output=True, text=True, timeout=120, check=True)
    lines = proc.stderr.splitlines()
    assert f"{script}:5: DeprecationWarning: third party says" in lines[0]
    assert lines[-1] == "warning: cluster says this"
