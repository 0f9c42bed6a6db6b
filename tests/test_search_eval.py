"""Query reformulation and reranker specs are measurable in ``esrag eval``: the retrievers
``hybrid+reformulate`` and ``hybrid+reformulate+rerank`` (and a reranker given as
``http:URL``) on the tiny spans dataset, LLM and reranker over real HTTP (stand-ins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from esrag.config import Settings
from esrag.errors import ConfigError
from esrag.eval import harness
from esrag.eval.arms import make_retriever
from llm_standin import StandIn
from rerank_standin import RerankStandIn

SPANS = Path(__file__).parent / "data" / "eval_spans"


def test_reformulate_retriever_names():
    assert make_retriever("hybrid+reformulate", reformulate=lambda q: []).reformulate is not None
    r = make_retriever("dense+reformulate+rerank", rerank=lambda q, t: [0.0] * len(t), reformulate=lambda q: [])
    assert r.mode == "dense" and r.rerank is not None and r.reformulate is not None
    with pytest.raises(ConfigError, match="needs a reformulator"):
        make_retriever("hybrid+reformulate")
    with pytest.raises(ConfigError, match="MODE\\+reformulate"):
        make_retriever("hybrid+expand")


@pytest.mark.integration
def test_eval_measures_reformulation_and_an_http_reranker(tmp_path):
    cfg = harness.load_config(SPANS / "eval.toml")
    cfg = harness.apply_overrides(
        cfg, arms=["S+T"], retrievers=["hybrid", "hybrid+reformulate", "hybrid+reformulate+rerank"], budgets=[64], out=tmp_path / "out"
    )
    cfg.cache, cfg.reformulations, cfg.rerank_depth = tmp_path / "emb.sqlite", 3, 5
    with StandIn() as llm_server, RerankStandIn() as reranker:
        cfg.reranker = f"http:{reranker.url}"
        settings = Settings(llm="openai:standin", llm_url=f"{llm_server.url}/v1", llm_cache=tmp_path / "llm.db")
        run = harness.run_eval(cfg, settings=settings)
        n = len(run.dataset.questions)
        assert len(llm_server.calls("/v1")) == n  # one reformulation call per question (the second retriever hit the cache)
        assert len(reranker.requests) == n
    rows = {r["retriever"]: r for r in harness.summary_rows(run)}
    assert set(rows) == {"hybrid", "hybrid+reformulate", "hybrid+reformulate+rerank"}
    assert all(0 <= rows[r]["rec"] <= 100 for r in rows)
    by = {(r.question_id, r.retriever): r.selected for r in run.results}
    assert any(by[(q.id, "hybrid")] != by[(q.id, "hybrid+reformulate")] for q in run.dataset.questions)
