"""Seed 002's diagnostics: Sim@k and the top-1/top-2 gap on hand cases, self-retrieval with its
self-match constant, paired contrasts, and `esrag diagnose` on a real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from esrag.eval.diagnostics import QueryDiagnostics, contrast, diagnose_queries, read_queries, rescore, self_retrieval, sim_at_k
from paths import XQUAD

ESRAG = str(Path(sys.executable).with_name("esrag"))


def test_sim_at_k_hand_cases():
    assert sim_at_k([0.2, 0.9, 0.5, 0.7, 0.1, 0.3]) == pytest.approx({"sim@1": 0.9, "sim@5": (0.9 + 0.7 + 0.5 + 0.3 + 0.2) / 5, "gap": 0.2})
    assert sim_at_k([0.4, 0.6]) == pytest.approx({"sim@1": 0.6, "sim@5": 0.5, "gap": 0.2})  # fewer than five: all of them
    assert sim_at_k([0.8]) == {"sim@1": 0.8, "sim@5": 0.8, "gap": 0.0}
    with pytest.raises(ValueError, match="no candidates"):
        sim_at_k([])


def test_rescore_is_cosine_whatever_the_norms():
    assert rescore(np.array([2.0, 0.0]), np.array([[3.0, 0.0], [0.0, 5.0], [1.0, 1.0]])) == pytest.approx([1.0, 0.0, 2**-0.5], abs=1e-6)


def test_self_retrieval_counts_the_chunk_itself_as_cosine_one():
    v = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
    out = self_retrieval(v, k=2)
    # k=2: each chunk's own cosine 1 plus its nearest other: (1 + 0.8)/2, (1 + 0.8)/2, (1 + 0.6)/2
    assert out["top2"] == pytest.approx((0.9 + 0.9 + 0.8) / 3, abs=1e-4)
    assert out["gap"] == pytest.approx((0.2 + 0.2 + 0.4) / 3, abs=1e-4)
    five = self_retrieval(v, k=5)  # fewer chunks than k: all others
    assert five["top5"] == pytest.approx(np.mean([(1 + 0.8 + 0.0) / 3, (1 + 0.8 + 0.6) / 3, (1 + 0.6 + 0.0) / 3]), abs=1e-4)
    assert self_retrieval(np.eye(4), 5, sample=2)["n_queries"] == 2


def test_diagnose_queries_and_paired_contrast():
    vecs = {"a": np.array([1.0, 0.0]), "b": np.array([0.6, 0.8]), "c": np.array([0.0, 1.0])}
    queries = {str(i): t for i, t in enumerate(["x", "y", "z", "w"])}
    qv = {"x": np.array([1.0, 0.1]), "y": np.array([0.9, 0.3]), "z": np.array([1.0, 0.0]), "w": np.array([0.8, 0.2])}
    good = diagnose_queries("good", queries, lambda q: ["a", "b"], qv.__getitem__, lambda c: np.stack([vecs[i] for i in c]))
    bad = diagnose_queries("bad", queries, lambda q: ["c", "b"], qv.__getitem__, lambda c: np.stack([vecs[i] for i in c]))
    rows = {r["metric"]: r for r in contrast(good, bad, resamples=2000)}
    assert rows["sim@1"]["estimate"] > 0 and rows["sim@1"]["n"] == 4
    s = good.summary(resamples=2000)
    assert s["n"] == 4 and s["sim@1"]["ci_low"] <= s["sim@1"]["mean"] <= s["sim@1"]["ci_high"]
    assert rows["sim@5"]["estimate"] > 0 and rows["sim@5"]["ci_low"] > 0  # a beats c for every query
    empty = QueryDiagnostics("none")
    empty.add("q", [])
    assert empty.summary(resamples=100)["empty"] == 1


def test_read_queries(tmp_path):
    (tmp_path / "q.txt").write_text("first\n\nsecond\n", encoding="utf-8")
    assert read_queries(tmp_path / "q.txt") == {"1": "first", "3": "second"}
    (tmp_path / "q.jsonl").write_text('{"id": "a", "question": "why"}\n', encoding="utf-8")
    assert read_queries(tmp_path / "q.jsonl") == {"a": "why"}


@pytest.mark.integration
def test_esrag_diagnose_on_a_real_index(tmp_path):
    """German XQuAD paragraphs (records) with MiniLM; English questions; dense vs hybrid."""
    data = json.loads((XQUAD / "xquad.de.json").read_text(encoding="utf-8"))["data"][:6]
    en = json.loads((XQUAD / "xquad.en.json").read_text(encoding="utf-8"))["data"][:6]
    with (tmp_path / "de.jsonl").open("w", encoding="utf-8") as f:
        for a in data:
            for n, p in enumerate(a["paragraphs"][:3]):
                f.write(json.dumps({"id": f"{a['title']}#{n}", "text": p["context"]}, ensure_ascii=False) + "\n")
    with (tmp_path / "q.jsonl").open("w", encoding="utf-8") as f:
        for a in en:
            for q in a["paragraphs"][0]["qas"][:2]:
                f.write(json.dumps({"id": q["id"], "query": q["question"]}) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")} | {"ESRAG_DB": str(tmp_path / "d.db")}
    subprocess.run(
        [ESRAG, "ingest", "de.jsonl", "--records", "--corpus", "de", "--json"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )
    proc = subprocess.run(
        [ESRAG, "diagnose", "q.jsonl", "--mode", "dense", "--mode", "hybrid", "--depth", "5", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["scorer"] == report["index_embedder"] == "st:all-MiniLM-L6-v2"
    dense, hybrid = report["configs"]
    n = len((tmp_path / "q.jsonl").read_text(encoding="utf-8").splitlines())
    assert dense["config"] == "dense" and dense["n"] == n >= 10 and 0 < dense["sim@5"]["mean"] <= dense["sim@1"]["mean"] <= 1
    assert {r["metric"] for r in report["contrasts"]} == {"sim@1", "sim@5", "gap"}
    # the dense list re-scored by its own model is the argmax by construction (seed F.4): hybrid cannot beat it
    assert next(r for r in report["contrasts"] if r["metric"] == "sim@1")["estimate"] >= 0
    sr = report["self_retrieval"]
    assert sr["n_chunks"] == 18 and 0 < sr["top5"] < 1 and 0 < sr["gap"] < 1
    text = subprocess.run(
        [ESRAG, "diagnose", "q.jsonl", "--no-self-retrieval"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert text.returncode == 0 and "Sim@1" in text.stdout and "self-retrieval" not in text.stdout
