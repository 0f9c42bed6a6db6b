"""The evaluation harness end to end: peers mapped back to source text, arms built from settings,
the reranker slot, and ``esrag eval`` as a subprocess on the tiny spans dataset (tests/data),
twice, with byte-identical outputs. Real embedder (all-MiniLM-L6-v2), real SQLite stores."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from esrag.cli import main
from esrag.config import Settings
from esrag.errors import ConfigError, RerankError
from esrag.eval import harness
from esrag.eval.arms import make_arm, make_retriever
from esrag.eval.peers import LangChainHeaderChunker, LangChainRecursiveChunker, locate
from esrag.formats.markdown_blocks import normalize
from esrag.model import Chunk, Document, Hit
from esrag.search.rerank import rerank_hits
from paths import LARAVEL

DATA = Path(__file__).parent / "data"
SPANS = DATA / "eval_spans"
ESRAG = str(Path(sys.executable).with_name("esrag"))
ROW_KEYS = {"arm", "retriever", "budget", "rec", "prec", "ci_low", "ci_high", "n_questions", "n_documents"}


def overlap_rerank(query: str, texts: list[str]) -> list[float]:
    """A trivial real reranker: how many distinct query words each text contains."""
    q = set(query.lower().split())
    return [float(len(q & set(t.lower().split()))) for t in texts]


def reverse_rerank(query: str, texts: list[str]) -> list[float]:
    """Scores that reverse the incoming order."""
    return [float(i) for i in range(len(texts))]


# -- peers -------------------------------------------------------------------------------------


def test_locate_maps_rewritten_pieces_to_exact_source_spans():
    source = "# Title\n\nFirst  paragraph, with (brackets).\n\n  Second\tparagraph here.\n\n```\ncode line\n```\n"
    pieces = ["First paragraph, with (brackets).  \nSecond", "Second paragraph here.", "code line"]
    spans = locate(pieces, source)
    assert [source[s:e] for s, e in spans] == ["First  paragraph, with (brackets).\n\n  Second", "Second\tparagraph here.", "code line"]
    with pytest.raises(ValueError, match="cannot map"):
        locate(["words that are absent"], source)


@pytest.mark.parametrize("chunker", [LangChainHeaderChunker(), LangChainRecursiveChunker()], ids=lambda c: c.name)
def test_peer_chunks_are_source_spans_with_lines(chunker):
    text = (LARAVEL / "queues.md").read_text(encoding="utf-8")
    doc = Document(path="queues.md", text=text)
    chunks = chunker.chunk(doc)
    lines = normalize(text).split("\n")
    assert len(chunks) > 10
    for c in chunks:
        block = "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.text in block and c.text.strip() == c.text
    assert doc.title == "Queues"
    if chunker.name == "lc-header":
        # the cap counts LangChain's text, whose lines it strips; without whitespace the span fits
        assert max(len("".join(c.text.split())) for c in chunks) <= 1500
    else:
        assert max(c.tokens for c in chunks) <= 520


# -- arms and retrievers -----------------------------------------------------------------------


def test_default_arm_follows_settings():
    settings = Settings(
        chunking={"tau_max": 800, "tau_min": 50}, index_text={"embed_fields": ["text"], "bm25_fields": {"text": 2.0}}, search={"rrf_k": 10}
    )
    arm = make_arm("default", settings)
    assert arm.embed_fields == ("text",) and arm.bm25_fields == {"text": 2.0} and arm.search.rrf_k == 10
    chunker = arm.build_chunker([])
    assert chunker.name == "header" and chunker.tau_max == 800
    plain = make_arm("default", Settings())
    assert list(plain.embed_fields) == Settings().index_text.embed_fields
    st = make_arm("S+T", settings)
    assert st.embed_fields == ("section_path", "text") and st.search.rrf_k == 60  # named arms keep the seed protocol


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ConfigError, match="unknown arm 'nope'; valid: S, S\\+T, F512c"):
        make_arm("nope", Settings())
    with pytest.raises(ConfigError, match="valid: hybrid, bm25, dense"):
        make_retriever("sparse")
    with pytest.raises(ConfigError, match="needs a reranker"):
        make_retriever("hybrid+rerank")
    custom = make_arm("mine", Settings(), {"mine": {"chunker": "p", "embed_fields": ["doc_title", "text"]}})
    assert custom.embed_fields == ("doc_title", "text")
    with pytest.raises(ConfigError, match="unknown fields"):
        make_arm("bad", Settings(), {"bad": {"embed_fields": ["txt"]}})


def test_rerank_hits_reorders_only_the_first_depth_hits():
    hits = [Hit(Chunk(id=str(i), text=t), 1.0 / (i + 1)) for i, t in enumerate(["alpha", "queue worker restart", "beta", "worker"])]
    out = rerank_hits("restart the queue worker", hits, overlap_rerank, top_n=3)
    assert [h.chunk.id for h in out] == ["1", "0", "2", "3"]  # ties keep their order; the 4th is beyond depth
    with pytest.raises(RerankError, match="returned 1 scores for 3 texts"):
        rerank_hits("q", hits, lambda q, t: [1.0], top_n=3)


@pytest.mark.integration
def test_reranker_slot_in_a_real_run(two_runs):
    cfg = harness.load_config(SPANS / "eval.toml")
    cfg = harness.apply_overrides(cfg, arms=["S"], retrievers=["hybrid", "hybrid+rerank"], budgets=[512])
    cfg.reranker, cfg.rerank_depth = reverse_rerank, 3
    cfg.cache = two_runs[0] / "cache" / "esrag" / "embeddings.sqlite"  # passages and queries embedded there already
    run = harness.run_eval(cfg, settings=Settings())
    by = {(r.question_id, r.retriever): r for r in run.results}
    for q in run.dataset.questions:
        plain, reranked = by[(q.id, "hybrid")].selected, by[(q.id, "hybrid+rerank")].selected
        assert len(plain) > 3
        assert reranked[:3] == plain[:3][::-1] and reranked[3:] == plain[3:]
    cfg.reranker = "test_eval_harness:overlap_rerank"
    assert harness.run_eval(cfg, settings=Settings()).results


# -- the command -------------------------------------------------------------------------------


def _run(args: list[str], cwd: Path, cache_home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    env["XDG_CACHE_HOME"] = str(cache_home)
    proc = subprocess.run([ESRAG, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"esrag {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """`esrag eval` on the spans fixture twice (same config, shared embedding cache)."""
    base = tmp_path_factory.mktemp("eval")
    shutil.copytree(SPANS, base / "spans")
    cache = base / "cache"
    first = _run(["eval", "spans/eval.toml", "--out", "out1", "--json"], base, cache)
    second = _run(["eval", "spans/eval.toml", "--out", "out2"], base, cache)
    return base, first, second


@pytest.mark.integration
def test_eval_writes_every_output(two_runs):
    base, first, _ = two_runs
    out = base / "out1"
    for name in ("questions.jsonl", "summary.json", "summary.md", "plot.png", "run.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (base / "cache" / "esrag" / "embeddings.sqlite").exists()
    records = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(records) == 8 * 9 * 3
    assert {"question_id", "arm", "retriever", "rec@32t", "prec@128t", "recall@10", "mrr", "ndcg@10", "selected"} <= set(records[0])
    summary = json.loads((out / "summary.json").read_text())
    assert [c["a"] for c in summary["contrasts"]] == ["S+T/hybrid", "S/hybrid", "S+T/hybrid"]
    assert summary["contrasts"][2]["p_tost"] is not None and summary["contrasts"][0]["verdict"] in ("diff.", "n.d.")
    assert summary["default_settings"]["index_text"]["embed_fields"] == Settings().index_text.embed_fields
    assert "## rec@32t" in (out / "summary.md").read_text()


@pytest.mark.integration
def test_eval_json_rows(two_runs):
    _, first, _ = two_runs
    rows = json.loads(first.stdout)
    assert len(rows) == 9 * 3 * 3
    for row in rows:
        assert ROW_KEYS <= set(row)
        assert 0 <= row["ci_low"] <= row["rec"] <= row["ci_high"] <= 100 and 0 <= row["prec"] <= 100
        assert row["n_questions"] == 8 and row["n_documents"] == 3 and 0 <= row["oracle"] <= 100
    assert {(r["arm"], r["retriever"]) for r in rows if r["default"]} == {("default", "hybrid")}
    assert {r["budget"] for r in rows} == {32, 64, 128}


@pytest.mark.integration
def test_same_config_same_outputs(two_runs):
    base, _, second = two_runs
    for name in ("questions.jsonl", "summary.json", "summary.md", "plot.png"):
        assert (base / "out1" / name).read_bytes() == (base / "out2" / name).read_bytes(), name
    assert "| arm | chunks | median tokens | bm25 | dense | hybrid | oracle |" in second.stdout


@pytest.mark.integration
def test_eval_config_errors_are_one_line_messages(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["eval", "--dataset", f"spans:{SPANS}", "--arms", "S,nope"])
    assert result.exit_code != 0 and "unknown arm 'nope'" in result.output
    result = runner.invoke(main, ["eval", "--dataset", "msmarco:x"])
    assert result.exit_code != 0 and "KIND one of qasper, beir, squad, spans" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text('[dataset]\nkind = "spans"\npath = "."\nbudgets = [64]\n')
    result = runner.invoke(main, ["eval", str(bad)])
    assert result.exit_code != 0 and "unknown [dataset] key(s) budgets" in result.output


@pytest.mark.integration
def test_bm25_only_runs_index_no_vectors(tmp_path):
    cfg = harness.apply_overrides(harness.load_config(SPANS / "eval.toml"), retrievers=["bm25"], arms=["S", "F512c"])
    cfg.cache = tmp_path / "empty-cache.sqlite"
    run = harness.run_eval(cfg, settings=Settings())
    assert run.embeddings_computed == 0
    with sqlite3.connect(cfg.cache) as db:  # nothing was embedded, not even the queries
        assert db.execute("SELECT count(*) FROM vectors").fetchone() == (0,)
    assert len(run.results) == 8 * 2 and {r.retriever for r in run.results} == {"bm25"}
    rows = harness.summary_rows(run)
    assert {r["arm"] for r in rows} == {"S", "F512c"} and all(0 <= r["rec"] <= 100 for r in rows)
