"""Dataset loaders: the real Qasper slice and XQuAD from ../shared/data, and the small BEIR and
spans fixtures in tests/data (written for these tests)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from esrag.errors import ConfigError
from esrag.eval import datasets
from esrag.eval.metrics import words
from esrag.formats.markdown_blocks import parse_blocks
from esrag.model import BlockKind
from paths import QASPER
from paths import XQUAD as XQUAD_DIR

XQUAD = XQUAD_DIR / "xquad.en.json"
DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def qasper():
    return datasets.load_dataset("qasper", QASPER)


def test_qasper_slice_counts(qasper):
    assert len(qasper.documents) == 104
    assert len(qasper.questions) == 320
    assert qasper.per_document and len(qasper.pools) == 104
    assert len({q.pool for q in qasper.questions}) == 102  # two papers have no text-evidence question
    assert all(q.cluster == q.pool for q in qasper.questions)
    assert len({q.id for q in qasper.questions}) == 320
    assert sum(len(q.evidence) for q in qasper.questions) == 811


def test_qasper_evidence_is_text_only_and_union_of_annotators(qasper):
    for q in qasper.questions:
        assert q.evidence and q.annotator_evidence
        assert not any(e.startswith("FLOAT SELECTED") or ":::" in e for e in q.evidence)
        assert set(q.evidence) == {e for ev in q.annotator_evidence for e in ev}
    multi = [q for q in qasper.questions if len(q.annotator_evidence) > 1 and len(set(map(tuple, q.annotator_evidence))) > 1]
    assert multi, "the slice has questions whose annotators marked different evidence"


def test_every_evidence_paragraph_is_in_its_papers_markdown(qasper):
    docs = {d.id: "\x1f" + "\x1f".join(words(d.text)) + "\x1f" for d in qasper.documents}
    for q in qasper.questions:
        for e in q.evidence:
            assert "\x1f" + "\x1f".join(words(e)) + "\x1f" in docs[q.pool], (q.id, e[:80])


def test_qasper_markdown_structure(qasper):
    doc = qasper.documents[0]
    assert doc.text.startswith("# A Readable Read: Automatic Assessment of Language Learning Materials")
    assert "\n\n## Abstract\n\n" in doc.text and "\n\n## Introduction\n\n" in doc.text
    blocks = parse_blocks(doc.text)
    headers = [b for b in blocks if b.kind is BlockKind.HEADER]
    assert headers[0].level == 1 and headers[1].section_path[-1] == "Abstract"
    assert all(b.kind in (BlockKind.HEADER, BlockKind.PARAGRAPH) for b in blocks)  # paragraphs stay paragraphs
    nested = next(d for d in qasper.documents if "### " in d.text)
    child = next(b for b in parse_blocks(nested.text) if b.kind is BlockKind.HEADER and b.level == 3)
    assert len(child.section_path) == 3  # title > parent > child


def test_qasper_conversion_and_filters_on_a_small_file(tmp_path):
    paper = {
        "title": "A  Paper",
        "abstract": "We study things.",
        "full_text": [
            {"section_name": "Intro", "paragraphs": ["1. First item stays a paragraph.", "", "# not a header"]},
            {"section_name": "Method ::: Data", "paragraphs": ["Data paragraph with words."]},
            {"section_name": "Method ::: Model ::: Encoder", "paragraphs": ["Encoder paragraph."]},
            {"section_name": "Method ::: Model", "paragraphs": ["Back in the model section."]},
        ],
        "qas": [
            {
                "question": "what data?",
                "question_id": "q1",
                "answers": [
                    {
                        "answer": {
                            "unanswerable": False,
                            "evidence": ["Data paragraph with words.", "FLOAT SELECTED: Table 1", "Method ::: Data"],
                        }
                    },
                    {"answer": {"unanswerable": True, "evidence": ["We study things."]}},
                    {"answer": {"unanswerable": False, "evidence": ["Encoder paragraph.", "Data paragraph with words."]}},
                ],
            },
            {
                "question": "only a table?",
                "question_id": "q2",
                "answers": [{"answer": {"unanswerable": False, "evidence": ["FLOAT SELECTED: Figure 2"]}}],
            },
        ],
    }
    path = tmp_path / "mini.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump({"p1": paper}, f)
    ds = datasets.load_dataset("qasper", path)
    md = ds.documents[0].text
    assert md == (
        "# A Paper\n\n## Abstract\n\nWe study things.\n\n## Intro\n\n1\\. First item stays a paragraph.\n\n"
        "\\# not a header\n\n## Method\n\n### Data\n\nData paragraph with words.\n\n### Model\n\n#### Encoder\n\n"
        "Encoder paragraph.\n\n### Model\n\nBack in the model section.\n"
    )
    kinds = [b.kind for b in parse_blocks(md)]
    assert BlockKind.LIST not in kinds
    [q] = ds.questions
    assert q.evidence == ["Data paragraph with words.", "Encoder paragraph."]
    assert q.annotator_evidence == [["Data paragraph with words."], ["Encoder paragraph.", "Data paragraph with words."]]
    assert ds.name == "mini"


def test_beir_tiny_and_gzip(tmp_path):
    ds = datasets.load_dataset("beir", DATA / "beir_tiny")
    assert len(ds.documents) == 6 and not ds.per_document
    assert [q.id for q in ds.questions] == ["q1", "q2", "q3"]  # q4 has only a score-0 judgement
    q2 = ds.questions[1]
    assert q2.gold_docs == {"d3": 2.0, "d2": 1.0} and q2.cluster == "q2" and q2.pool == datasets.POOL_ALL
    assert q2.evidence[0].startswith("A job that exhausts its attempts")
    assert (
        ds.documents[0].text
        == "# Scheduler\n\nThe scheduler runs periodic tasks from a single cron entry that calls schedule:run every minute.\n"
    )
    assert not ds.documents[4].text.startswith("#")  # no title, no header
    gz = tmp_path / "beir_gz"
    (gz / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        with open(DATA / "beir_tiny" / name, "rb") as src, gzip.open(gz / f"{name}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
    again = datasets.load_dataset("beir", gz)
    assert [q.gold_docs for q in again.questions] == [q.gold_docs for q in ds.questions]
    assert [d.text for d in again.documents] == [d.text for d in ds.documents]


def test_squad_xquad():
    ds = datasets.load_dataset("squad", XQUAD)
    assert (len(ds.documents), len(ds.questions)) == (240, 1190)
    q = ds.questions[0]
    assert q.gold_docs == {"Super_Bowl_50#0": 1.0} and q.evidence[0].startswith("The Panthers defense gave up just 308 points")
    assert len({d.path for d in ds.documents}) == 240
    assert len(datasets.load_dataset("squad", XQUAD, limit=5).questions) == 5


def test_spans_character_offsets():
    ds = datasets.load_dataset("spans", DATA / "eval_spans")
    assert [d.id for d in ds.documents] == ["cache.md", "queues.md", "scheduling.md"]
    assert len(ds.questions) == 8
    q1 = ds.questions[0]
    assert q1.evidence == ["The withoutOverlapping method takes a lock so that only one instance runs at a time"]
    assert q1.gold_docs == {"scheduling.md": 1.0}
    q8 = ds.questions[-1]
    assert q8.evidence[1] == "Redis" and set(q8.gold_docs) == {"cache.md", "queues.md"}
    # the questions file itself works as PATH too
    assert len(datasets.load_dataset("spans", DATA / "eval_spans" / "questions.jsonl").questions) == 8


def test_spans_byte_offsets_are_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    text = "Crème brûlée first.\n\nThe gold sentence is here.\n\nAnd some more text after it.\n"
    (tmp_path / "docs" / "a.md").write_text(text, encoding="utf-8")
    gold = "The gold sentence is here."
    byte_start = text.encode("utf-8").index(gold.encode("utf-8"))
    char_start = text.index(gold)
    assert byte_start != char_start
    rows = [{"id": "q", "question": "where?", "gold": [{"file": "a.md", "start": byte_start, "end": byte_start + len(gold), "text": gold}]}]
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    with pytest.raises(ConfigError, match="reads ' gold sentence.*characters of the decoded text, not bytes"):
        datasets.load_dataset("spans", tmp_path)
    rows[0]["gold"][0].update(start=len(text) - 3, end=len(text) + 20)
    del rows[0]["gold"][0]["text"]
    (tmp_path / "questions.jsonl").write_text(json.dumps(rows[0]), encoding="utf-8")
    with pytest.raises(ConfigError, match="outside a.md .*not bytes"):
        datasets.load_dataset("spans", tmp_path)
    rows[0]["gold"][0].update(start=char_start, end=char_start + len(gold))
    with gzip.open(tmp_path / "questions.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps(rows[0]) + "\n")
    (tmp_path / "questions.jsonl").unlink()
    assert datasets.load_dataset("spans", tmp_path).questions[0].evidence == [gold]


def test_bad_dataset_arguments():
    assert datasets.parse_dataset_arg("qasper:/x/y.json") == ("qasper", "/x/y.json")
    with pytest.raises(ConfigError, match="KIND one of qasper, beir, squad, spans"):
        datasets.parse_dataset_arg("msmarco:/x")
    with pytest.raises(ConfigError, match="does not exist"):
        datasets.load_dataset("beir", DATA / "nope")
    with pytest.raises(ConfigError, match="wants a folder"):
        datasets.load_dataset("beir", DATA / "beir_tiny" / "corpus.jsonl")
