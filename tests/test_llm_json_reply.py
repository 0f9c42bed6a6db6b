"""The one ask-parse-retry loop (esrag.llm.json_reply) as enrichment, reformulation and answers
use it, over real HTTP to the stand-in LLM: seeds 0-3, every retry and failure in the ledger;
prompt texts and hashes unchanged by the move to esrag.llm.prompts; the eval config's one-line
errors; the one reranker loader's module:attribute form."""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path

import pytest

from esrag.answer import Answerer
from esrag.errors import AnswerError, ConfigError
from esrag.eval.config import load_config
from esrag.llm.cache import CachedLLM, LLMCache
from esrag.llm.clients import LLMError, LLMOptions, OllamaLLM
from esrag.llm.json_reply import RETRY_SEEDS, ask_json, parse_json_object
from esrag.llm.prompts import ANSWER, REFORMULATE, load_prompt
from esrag.model import Chunk, Hit
from esrag.search.reformulate import Reformulator
from esrag.search.rerank import make_reranker, rerank_hits
from llm_standin import Reply, StandIn


@pytest.fixture
def standin():
    with StandIn() as s:
        yield s


def cached(s: StandIn, tmp_path: Path) -> CachedLLM:
    return CachedLLM(OllamaLLM("qwen2.5:7b", s.url, timeout=5, retries=0), LLMCache(tmp_path / "llm.db"))


def test_ask_json_retries_with_seeds_and_counts_the_failure(standin, tmp_path):
    llm = cached(standin, tmp_path)
    standin.queue("not json", '{"other": 1}', "[1, 2]", "```\nstill not\n```")
    got = ask_json(llm, "Give a title.", "p" * 64, LLMOptions(), "enrich", lambda o: "title" in o)
    assert got.value is None and got.transport is None and "after seeds 0, 1, 2, 3" in (got.error or "")
    assert [r.seed for r in standin.calls()] == [0, *RETRY_SEEDS]
    totals = llm.ledger.totals()
    assert (totals.llm_calls, totals.llm_retries, totals.llm_failures) == (4, 3, 1)
    standin.queue('{"title": "Queues"}')
    again = ask_json(llm, "Give a title.", "p" * 64, LLMOptions(seed=7), "enrich", lambda o: "title" in o)
    assert again.value == {"title": "Queues"} and again.reply is not None and standin.calls()[-1].seed == 7


def test_reformulation_failures_are_in_the_ledger(standin, tmp_path):
    llm = cached(standin, tmp_path)
    standin.queue(*["no reformulations here"] * 4)
    r = Reformulator(llm, n=3)
    assert r("restart queue workers") == []
    assert "gave no usable reformulations" in (r.last_error or "")
    totals = llm.ledger.totals()
    assert (totals.llm_retries, totals.llm_failures) == (3, 1) and totals.by_task["reformulate"]["failures"] == 1
    standin.queue(Reply(status=500), Reply(status=500))
    assert r("another query") == [] and "500" in (r.last_error or "")
    assert llm.ledger.totals().llm_failures == 2  # the transport error is counted too


def test_answer_failures_are_in_the_ledger_and_still_raise(standin, tmp_path):
    llm = cached(standin, tmp_path)
    hits = [
        Hit(
            Chunk(
                id="a",
                text="Run php artisan queue:restart after deploying.",
                section_path="Queues > Restart",
                source_path="queues.md",
                tokens=10,
            ),
            1.0,
        )
    ]
    answerer = Answerer(llm, context_tokens=8192)
    standin.queue(*['{"answer": ""}'] * 4)
    with pytest.raises(AnswerError, match="no usable answer .* after seeds 0, 1, 2, 3"):
        answerer.answer("How do I restart workers?", hits)
    assert llm.ledger.totals().by_task["answer"]["failures"] == 1
    standin.queue(Reply(status=503))
    with pytest.raises(LLMError):
        answerer.answer("How do I stop workers?", hits)
    assert llm.ledger.totals().by_task["answer"]["failures"] == 2


def test_prompts_are_the_shipped_files_byte_for_byte():
    folder = resources.files("esrag") / "prompts"
    for name in (ANSWER, REFORMULATE, "enrich_v1", "context_v1", "consolidate_v1", "field_title_v1"):
        raw = (folder / f"{name}.txt").read_bytes()
        assert load_prompt(name).sha256 == hashlib.sha256(raw).hexdigest()
    assert parse_json_object('Sure: {"a": 1} done') == {"a": 1}


@pytest.mark.parametrize(
    "text, message",
    [
        ('[dataset]\nkind = "spans"\nbudgets = [64]\n', "unknown [dataset] key(s) budgets; valid: kind, path, limit, split"),
        ("budgets = [512, 0]\n", "budgets.1: Input should be greater than 0"),
        ('[[contrasts]]\na = "S"\nb = "P"\nmetric = "f1"\n', "contrasts.0.metric: Input should be 'rec', 'prec', 'recall@1'"),
        ('[[contrasts]]\na = "S"\nb = "P"\n', "contrasts.0: contrast S − P: write each side as ARM/RETRIEVER"),
        ("[arms.mine]\ntau_max = -5\n", "arms.mine.tau_max: Input should be greater than 0"),
        ('[reranker]\ntarget = "m:f"\ndepth = 0\n', "reranker.depth: Input should be greater than 0"),
        ("reformulations = 0\n", "reformulations: Input should be greater than 0"),
    ],
)
def test_eval_config_errors_name_file_and_key_in_one_line(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value) and "\n" not in str(info.value)


def test_shipped_eval_configs_validate():
    root = Path(__file__).resolve().parents[1] / "eval"
    blocks = load_config(root / "blocks.toml")
    assert blocks.arms == ["cap-off", "cap-480", "cap-256"] and blocks.custom_arms["cap-256"]["max_block_tokens"] == 256
    assert len(load_config(root / "qasper.toml").contrasts) == 4


def overlap(query: str, texts: list[str]) -> list[float]:
    """A reranker as a plain function (module:attribute)."""
    words = set(query.lower().split())
    return [float(len(words & set(t.lower().split()))) for t in texts]


def test_reranker_by_module_attribute_is_the_one_loader():
    rerank = make_reranker("test_llm_json_reply:overlap")
    hits = [Hit(Chunk(id=str(i), text=t), 1.0) for i, t in enumerate(["blade views", "queue worker restart", "cache"])]
    assert [h.chunk.id for h in rerank_hits("restart the queue worker", hits, rerank, top_n=3)] == ["1", "0", "2"]
    with pytest.raises(ConfigError, match="cannot import reranker test_llm_json_reply:nothing"):
        make_reranker("test_llm_json_reply:nothing")
