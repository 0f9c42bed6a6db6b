"""The LLM arms in ``esrag eval`` (E, E-K, CR, PF, M, RM, SM, M-TP, E+KX, E+AX) end to end on
real Qasper papers, with the LLM served by the local stand-in over real HTTP (the real ``ollama``
client), the real embedder and real SQLite stores. A second run makes no LLM call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from esrag.config import Settings
from esrag.errors import ConfigError
from esrag.eval import harness
from esrag.eval.llm_arms import LLM_ARM_NAMES, PrecomputedChunker, make_llm_arm
from esrag.model import Chunk, Document, Enrichment, Hit
from llm_standin import StandIn, laravel_dir

QASPER = laravel_dir().parents[1] / "qasper" / "qasper-test-v0.3.slice.json"
ESRAG = str(Path(sys.executable).with_name("esrag"))


@pytest.fixture
def standin():
    with StandIn() as s:
        yield s


@pytest.fixture
def settings(standin, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return Settings(llm="ollama:qwen2.5:7b", llm_url=standin.url, llm_cache=tmp_path / "llm_cache.db", llm_concurrency=4)


@pytest.mark.integration
def test_every_llm_arm_runs_end_to_end_on_qasper(settings, standin, tmp_path):
    arms = ["S+T", *LLM_ARM_NAMES]
    cfg = harness.EvalConfig(
        kind="qasper",
        path=QASPER,
        limit=2,
        arms=arms,
        retrievers=["bm25", "hybrid"],
        budgets=[512],
        cache=tmp_path / "emb.sqlite",
        resamples=200,
        contrasts=[
            harness.ContrastSpec("E/hybrid", "S+T/hybrid"),
            harness.ContrastSpec("M/hybrid", "RM/hybrid"),
            harness.ContrastSpec("E+KX/hybrid", "E+AX/hybrid"),
        ],
    )
    run = harness.run_eval(cfg, settings)
    rows = harness.summary_rows(run)
    assert {r["arm"] for r in rows} == set(arms) and all(0 <= r["rec"] <= 100 for r in rows)
    stats = run.chunk_stats
    n = stats["E"]["chunks"]
    assert stats["S+T"]["chunks"] == n == stats["CR"]["chunks"] == stats["PF"]["chunks"] == stats["E+KX"]["chunks"]
    merged = n - stats["M"]["chunks"]
    assert merged > 0 and stats["RM"]["chunks"] == stats["SM"]["chunks"] == n - merged  # count-matched controls
    assert stats["M-TP"]["chunks"] <= n
    # the expansion arms insert chunks that no retriever ranked
    sel = {a: [r.selected for r in run.results if r.arm == a and r.retriever == "hybrid"] for a in ("E", "E+KX", "E+AX")}
    assert sel["E+KX"] != sel["E"] and sel["E+AX"] != sel["E"]
    assert len(harness.contrast_rows(run)) == 3
    calls = len(standin.requests)
    papers = len(run.pools)
    assert calls >= n * (1 + 1 + 1 + 4) + papers  # E, E-K, CR, PF (4 per chunk), consolidation per paper
    standin.reset()
    again = harness.run_eval(cfg, settings)
    assert standin.requests == [] and harness.summary_rows(again) == rows  # every reply came from the LLM cache


def test_expansion_hook_orders_hits_and_marks_inserted_chunks():
    def c(i, key, related=()):
        return Chunk(
            id=f"c{i}", text="x", source_path="d.md", position=i, tokens=10, enrichment=Enrichment(key=key, related_keys=list(related))
        )

    pool = [c(1, "a"), c(2, "b", ("a",)), c(3, "a"), c(4, "z")]
    kx = make_llm_arm("E+KX", Settings()).expand
    out = kx([Hit(pool[2], 0.9), Hit(pool[3], 0.5)], pool)
    assert [h.chunk.id for h in out] == ["c3", "c1", "c2", "c4"]
    assert [h.expanded_from for h in out] == [None, ["c3"], ["c3"], None]
    ax = make_llm_arm("E+AX", Settings()).expand
    assert [h.chunk.id for h in ax([Hit(pool[2], 0.9), Hit(pool[3], 0.5)], pool)] == ["c3", "c4", "c2"]
    assert make_llm_arm("E", Settings()).expand is None


def test_arm_configuration_and_errors():
    e = make_llm_arm("E", Settings())
    assert e.embed_fields[-1] == "text" and "questions" in e.bm25_fields
    assert make_llm_arm("CR", Settings()).embed_fields == ("context", "text")
    with pytest.raises(ConfigError, match="valid: E, E-K, CR"):
        make_llm_arm("X", Settings())
    with pytest.raises(ConfigError, match="not part of the dataset"):
        PrecomputedChunker("p", {}).chunk(Document("a.md", "x"))


@pytest.mark.integration
def test_esrag_eval_cli_with_llm_arms(standin, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    env.update(
        {
            "ESRAG_LLM": "openai:standin",
            "ESRAG_LLM_URL": standin.url + "/v1",
            "ESRAG_LLM_CACHE": str(tmp_path / "llm.db"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        }
    )
    proc = subprocess.run(
        [
            ESRAG,
            "eval",
            "--dataset",
            f"qasper:{QASPER}",
            "--limit",
            "1",
            "--arms",
            "S+T,E,M,E+KX",
            "--retrievers",
            "hybrid",
            "--budgets",
            "512",
            "--out",
            str(tmp_path / "out"),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert {r["arm"] for r in rows} == {"S+T", "E", "M", "E+KX"}
    assert standin.requests and all(r.path == "/v1/chat/completions" for r in standin.requests)
