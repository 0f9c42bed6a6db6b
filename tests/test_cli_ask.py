"""``esrag ingest --records``, ``esrag search`` with the retrieval stack's options and
``esrag ask`` through the command line (in-process CliRunner, embedded store in a temporary
folder, per-corpus settings from an esrag.toml, LLM and reranker stand-ins over real HTTP)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from esrag.cli import main
from esrag.tokens import count_tokens
from llm_standin import StandIn
from paths import LARAVEL, PROJECT
from rerank_standin import RerankStandIn

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

TOML = """
[search]
corpora = ["laravel", "tickets"]

[corpora.laravel]
k = 4
authority = "official documentation"
authority_rank = 2

[corpora.tickets]
k = 2
authority = "support ticket"
authority_rank = 1
filters = ["effective_date <= today", "not superseded"]
expand = "none"

[corpora.tickets.records]
metadata = ["product_area"]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    base = tmp_path_factory.mktemp("ask")
    (base / "docs").mkdir()
    for name in ("deployment.md", "scheduling.md"):
        shutil.copy(LARAVEL / name, base / "docs" / name)
    shutil.copy(PROJECT / "tests" / "data" / "laravel_tickets.jsonl", base / "tickets.jsonl")
    (base / "esrag.toml").write_text(TOML)
    env = {
        "ESRAG_CONFIG": str(base / "esrag.toml"),
        "ESRAG_DB": str(base / "idx" / "esrag.db"),
        "ESRAG_ES_URL": None,
        "ESRAG_LLM_CACHE": str(base / "llm.db"),
    }
    runner = CliRunner()
    docs = runner.invoke(main, ["ingest", str(base / "docs"), "--corpus", "laravel", "--json"], env=env)
    assert docs.exit_code == 0, docs.output
    tickets = runner.invoke(main, ["ingest", str(base / "tickets.jsonl"), "--corpus", "tickets", "--records", "--json"], env=env)
    assert tickets.exit_code == 0, tickets.output
    assert json.loads(tickets.stdout)["chunks_new"] == 30
    return base, env, runner


def test_search_fans_out_with_labels_tokens_and_diagnostics(project):
    base, env, runner = project
    out = runner.invoke(main, ["search", "scheduled tasks never run on the server", "--json"], env=env)
    assert out.exit_code == 0, out.output
    hits = json.loads(out.stdout)

    def passages(corpus: str) -> int:  # adjacent passages of one section come merged into one hit (issue 30)
        return sum(len(h.get("expanded_from") or [h["id"]]) for h in hits if h["corpus"] == corpus)

    assert passages("laravel") == 4 and passages("tickets") == 2
    for h in hits:
        assert h["tokens"] == count_tokens(h["text"]) and h["authority"] in ("official documentation", "support ticket")
        for key in ("id", "source_path", "section_path", "start_line", "end_line", "score", "legs", "doc_title"):
            assert key in h
    explained = json.loads(runner.invoke(main, ["search", "scheduled tasks never run", "--json", "--explain"], env=env).stdout)
    assert explained["diagnostics"]["corpora_without_passages"] == []
    assert explained["diagnostics"]["passages_per_corpus"] == {"laravel": 4, "tickets": 2}


def test_search_budget_expand_and_rerank_options(project):
    base, env, runner = project
    with RerankStandIn() as server:
        out = runner.invoke(
            main,
            [
                "search",
                "run the scheduler every minute with cron",
                "--budget",
                "600",
                "--expand",
                "parent",
                "--rerank",
                f"http:{server.url}",
                "--json",
            ],
            env=env,
        )
        assert out.exit_code == 0, out.output
        assert server.requests
    hits = json.loads(out.stdout)
    used = sum(h["tokens"] for h in hits)  # the last hit is cut at a block boundary, never inside one
    assert used <= 600 and (used == 600 or hits[-1].get("truncated")), (used, hits[-1].get("truncated"))
    expanded = [h for h in hits if "expanded_from" in h]
    assert expanded and all(h["corpus"] == "laravel" and h["chunk_ids"] for h in expanded)
    assert all("rerank" in h["legs"] for h in hits)
    bad = runner.invoke(main, ["search", "x", "--expand", "window:3"], env=env)
    assert bad.exit_code == 1 and "neighbours:W" in bad.stderr
    refused = runner.invoke(main, ["search", "x", "--rerank", "elastic:my-endpoint"], env=env)
    assert refused.exit_code == 1 and "needs the Elasticsearch store" in refused.stderr


def test_ask_answers_with_citations_or_abstains(project):
    base, env, runner = project
    with StandIn() as llm_server:
        llm_env = {**env, "ESRAG_LLM": "openai:standin", "ESRAG_LLM_URL": f"{llm_server.url}/v1"}
        got = runner.invoke(main, ["ask", "How do I run the scheduler every minute with cron on the server?", "--json"], env=llm_env)
        assert got.exit_code == 0, got.output
        answer = json.loads(got.stdout)
        assert answer["abstained"] is False and answer["citations"] and answer["sources"]
        assert all(c["section_path"] for c in answer["citations"])
        assert {s["corpus"] for s in answer["sources"]} == {"laravel", "tickets"}
        prompt = llm_server.calls("/v1")[-1].prompt
        assert "\n\n---\n\n" in prompt and "authority: support ticket" in prompt
        assert "Authority, highest first: official documentation > support ticket" in prompt
        no = runner.invoke(main, ["ask", "What is the airspeed velocity of an unladen swallow?", "--json"], env=llm_env)
        assert no.exit_code == 0 and json.loads(no.stdout)["abstained"] is True
        text = runner.invoke(main, ["ask", "How do I run the scheduler every minute with cron on the server?"], env=llm_env)
        assert text.exit_code == 0 and "According to the documentation" in text.stdout and "  [S" in text.stdout  # a citation line
