"""The documentation question set (issue 29): the real questions file against the real corpora,
gold-section matching, section-level ranking metrics, malformed files, and ``esrag eval`` on
a small real Sphinx site end to end (real embedder, real SQLite stores)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from esrag.app import make_chunker
from esrag.cli import main
from esrag.config import Settings
from esrag.errors import ConfigError
from esrag.eval.docs import GoldSection, default_root, heading_words, in_section, load_docs, section_metrics
from esrag.model import Chunk
from paths import DATA

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "eval" / "docs_questions.jsonl"
CORPORA = DATA / "corpora"  # wherever this machine keeps the shared data (tests/paths.py)


def chunk(source: str, section: str, cid: str = "", text: str = "x") -> Chunk:
    return Chunk(id=cid or f"{source}|{section}", corpus="c", source_path=source, text=text, section_path=section, start_line=1, end_line=1)


def test_question_file_covers_five_generators_with_verbatim_evidence():
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 80
    corpora = {r["corpus"] for r in rows}
    assert {"docusaurus-docs", "hugo-docs"} <= corpora
    assert corpora & {"flask-docs", "requests-docs"} and corpora & {"rust-book", "async-book"}
    assert corpora & {"fastapi-docs", "pydantic-docs"}
    assert len({r["id"] for r in rows}) == len(rows)
    # load_docs checks every page exists and every evidence sentence is in its page
    ds = load_docs(QUESTIONS, root=CORPORA, settings=Settings())
    assert ds.kind == "docs" and len(ds.questions) == len(rows)
    assert set(ds.pools) == corpora
    assert all(q.pool == r["corpus"] and q.gold_sections and q.evidence for q, r in zip(ds.questions, rows))


@pytest.mark.parametrize("corpus", ["requests-docs", "async-book"])
def test_every_gold_section_is_found_in_the_real_chunking(corpus):
    ds = load_docs(QUESTIONS, root=CORPORA, settings=Settings())
    chunks = ds.chunk_pool(make_chunker(Settings()), corpus)
    assert chunks and all(c.corpus == corpus for c in chunks)
    for q in ds.questions_of(corpus):
        inside = [c for c in chunks if in_section(c, q.gold_sections[0])]
        assert inside, q.id
        assert all(c.source_path in q.gold_sections[0].pages for c in inside)


def test_in_section_matches_heading_words_in_order_and_subsections():
    gold = GoldSection(("a.md",), ("Writing the Validation Logic", "Stopping on First Validation Failure"))
    assert in_section(chunk("a.md", "Validation > Quickstart > Writing the Validation Logic > Stopping on First Validation Failure"), gold)
    assert in_section(chunk("a.md", "Writing the validation logic > Stopping on first validation failure > Deeper"), gold)
    assert not in_section(chunk("a.md", "Form Requests > Stopping on First Validation Failure"), gold)
    assert not in_section(chunk("b.md", "Writing the Validation Logic > Stopping on First Validation Failure"), gold)
    assert not in_section(chunk("a.md", "Stopping on First Validation Failure > Writing the Validation Logic"), gold)
    assert heading_words("Trailing slash configuration {#trailing-slashes}") == ("trailing", "slash", "configuration")
    assert heading_words("`.await`ing on a Executor { #x }") == heading_words(".awaiting on a Executor")
    assert heading_words('Pydantic <a name="x"></a>') == ("pydantic",)


def test_section_metrics_rank_distinct_sections():
    gold = [GoldSection(("p.md", "old/p.md"), ("Timeouts",))]
    ranking = [
        chunk("p.md", "Intro", "1"),
        chunk("p.md", "Intro", "2"),
        chunk("q.md", "Timeouts", "3"),
        chunk("old/p.md", "Quickstart > Timeouts", "4"),
        chunk("p.md", "Timeouts", "5"),
    ]
    m = section_metrics(ranking, gold)
    assert m == {"recall@1": 0.0, "recall@5": 1.0, "recall@10": 1.0, "mrr": pytest.approx(1 / 3)}
    assert section_metrics(ranking[:3], gold) == {"recall@1": 0.0, "recall@5": 0.0, "recall@10": 0.0, "mrr": 0.0}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


GOOD = {
    "id": "r1",
    "corpus": "requests-docs",
    "question": "my request hangs forever",
    "page": "docs/user/quickstart.rst",
    "section": ["Timeouts"],
    "evidence": ["Failure to do so can cause your program to hang indefinitely"],
}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"page": "docs/nope.rst"}, "gold page 'docs/nope.rst' is not an ingested file"),
        ({"evidence": ["words that are not in the page at all"]}, "evidence 'words that are not in the page at all'"),
        ({"section": []}, "'section' must be a non-empty list"),
        ({"corpus": "no-such-corpus"}, "corpus folder .*no-such-corpus does not exist"),
    ],
)
def test_malformed_questions_name_file_and_line(tmp_path, change, message):
    path = _write(tmp_path / "q.jsonl", [GOOD, {**GOOD, "id": "r2", **change}])
    with pytest.raises(ConfigError, match=rf"q.jsonl:2: .*{message}|{message}"):
        load_docs(path, root=CORPORA, settings=Settings())
    dup = _write(tmp_path / "d.jsonl", [GOOD, GOOD])
    with pytest.raises(ConfigError, match="d.jsonl:2: duplicate question id 'r1'"):
        load_docs(dup, root=CORPORA, settings=Settings())


def test_default_root_beside_the_questions_then_esrag_shared_dir_then_an_ancestor(tmp_path, monkeypatch):
    monkeypatch.delenv("ESRAG_SHARED_DIR", raising=False)
    (tmp_path / "shared" / "data" / "corpora").mkdir(parents=True)
    (tmp_path / "p" / "eval").mkdir(parents=True)
    questions = tmp_path / "p" / "eval" / "q.jsonl"
    assert default_root(questions) == tmp_path / "shared" / "data" / "corpora"  # the project's layout
    (tmp_path / "elsewhere" / "data" / "corpora").mkdir(parents=True)
    monkeypatch.setenv("ESRAG_SHARED_DIR", str(tmp_path / "elsewhere"))
    assert default_root(questions) == tmp_path / "elsewhere" / "data" / "corpora"
    (tmp_path / "p" / "eval" / "corpora").mkdir()
    assert default_root(questions) == tmp_path / "p" / "eval" / "corpora"
    monkeypatch.setenv("ESRAG_SHARED_DIR", str(tmp_path / "nothing-here"))
    (tmp_path / "p" / "eval" / "corpora").rmdir()
    assert default_root(questions) == tmp_path / "shared" / "data" / "corpora"


def test_no_corpora_root_is_a_clear_error(tmp_path):
    path = _write(tmp_path / "q.jsonl", [GOOD])
    with pytest.raises(ConfigError, match=r"no corpora folder found; set \[dataset\] root"):
        load_docs(path, root=tmp_path / "missing", settings=Settings())


@pytest.mark.integration
def test_esrag_eval_runs_docs_questions_with_section_metrics_and_contrasts(tmp_path):
    """Three requests-docs questions over a copy of the real Sphinx site: summary rows carry
    recall@1/5/10 and MRR of the gold section, rec@512t of its evidence, and contrasts on MRR."""
    root = tmp_path / "corpora"
    shutil.copytree(CORPORA / "requests-docs", root / "requests-docs")
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if '"requests-docs"' in line][:3]
    _write(tmp_path / "q.jsonl", rows)
    (tmp_path / "docs.toml").write_text(
        'retrievers = ["bm25", "hybrid"]\nbudgets = [512]\nresamples = 200\ncache = "cache.sqlite"\n'
        '[dataset]\nkind = "docs"\npath = "q.jsonl"\nroot = "corpora"\n'
        '[arms]\nuse = ["default", "prf"]\n[arms.prf]\nbase = "default"\nsearch = { prf_docs = 3 }\n'
        '[[contrasts]]\na = "default/hybrid"\nb = "default/bm25"\nmetric = "mrr"\n'
        '[[contrasts]]\na = "prf/hybrid"\nb = "default/hybrid"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["eval", str(tmp_path / "docs.toml"), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["dataset"]["kind"] == "docs" and summary["dataset"]["questions"] == 3
    for row in summary["rows"]:
        assert {"recall@1", "recall@5", "recall@10", "mrr", "rec"} <= set(row)
        assert 0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= 100
    assert [c["metric"] for c in summary["contrasts"]] == ["mrr", "rec@512t"]
    assert "Ranking metrics (gold sections)" in (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
