"""docker/compose.yml and the Kibana data view it imports: parsed and checked for the keys that
make the stack work, and validated by docker-compose itself where it is installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from esrag.config import Settings
from esrag.stores.elastic import load_asset

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker" / "compose.yml"
DATA_VIEW = ROOT / "docker" / "kibana" / "esrag-data-view.ndjson"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_has_elasticsearch_with_trial_licence_kibana_and_ollama():
    services = compose()["services"]
    assert set(services) >= {"elasticsearch", "kibana", "kibana-setup", "ollama"}
    es = services["elasticsearch"]
    env = dict(e.split("=", 1) for e in es["environment"])
    assert env["xpack.license.self_generated.type"] == "trial"  # native rrf works
    assert env["discovery.type"] == "single-node"
    assert es["image"].startswith("docker.elastic.co/elasticsearch/elasticsearch:")
    assert "127.0.0.1:9200:9200" in es["ports"] and "healthcheck" in es
    kibana = services["kibana"]
    assert kibana["image"].startswith("docker.elastic.co/kibana/kibana:")
    assert kibana["depends_on"]["elasticsearch"]["condition"] == "service_healthy"
    assert "ELASTICSEARCH_HOSTS=http://elasticsearch:9200" in kibana["environment"]
    assert services["ollama"]["image"].startswith("ollama/ollama") and "127.0.0.1:11434:11434" in services["ollama"]["ports"]


def test_kibana_setup_imports_the_data_view_file():
    setup = compose()["services"]["kibana-setup"]
    assert setup["depends_on"]["kibana"]["condition"] == "service_healthy" and setup["restart"] == "no"
    [mount] = setup["volumes"]
    host, container = mount.split(":")[:2]
    assert (COMPOSE.parent / host).resolve() == DATA_VIEW
    command = " ".join(setup["command"])
    assert "/api/saved_objects/_import" in command and f"file=@{container}" in command and "kbn-xsrf" in command


def test_data_view_is_importable_ndjson_for_the_esrag_alias():
    lines = [json.loads(line) for line in DATA_VIEW.read_text().splitlines() if line.strip()]
    [view] = [o for o in lines if o["type"] == "index-pattern"]
    attrs = view["attributes"]
    assert attrs["title"] == Settings(es_url=None).index == "esrag"
    mappings = load_asset("mappings", "esrag-mappings.json")["template"]["mappings"]["properties"]
    assert mappings[attrs["timeFieldName"]]["type"] == "date"
    assert {f["value"] for f in json.loads(attrs["sourceFilters"])} == {"vector", "vector_bin"}
    for key in ("fields", "fieldAttrs", "fieldFormatMap", "runtimeFieldMap"):
        json.loads(attrs[key])  # Kibana stores these as JSON strings
    assert view["id"] and view["references"] == []


@pytest.mark.integration
def test_docker_compose_validates_the_file_when_installed():
    """`docker-compose config` (Debian's docker-compose package) where it is on PATH; the
    structural checks above run everywhere."""
    tool = shutil.which("docker-compose")
    if tool is None:
        assert compose()["services"]  # nothing more to check without the tool
        return
    done = subprocess.run([tool, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
