"""Does down-weighting release notes, changelogs and generated API stubs help? (issue 30)

Runs the documentation question set (``eval/docs_questions.jsonl``, 87 questions with a gold
page and section over the real sites in ``../shared/data/corpora``) against an index the caller
built with ``esrag ingest`` (one corpus per site, named as the questions' ``corpus``), once per
arm, through the same :class:`~esrag.search.pipeline.Pipeline` as ``esrag search``:

* ``off``: ``[corpora.NAME] demote = {weight = 1.0}`` (nothing demoted);
* ``on``: the default ``demote`` (release-notes / changelog / CHANGES … paths and mkdocstrings
  stubs at weight 0.5);
* ``sections``: as ``on`` with sections on (adjacent hits of one section merged, small hits
  grown): what an agent gets.

Gold (the question set's rule): a hit is in the gold section when its source path is the page
(or an ``alternates`` page) and the ``section`` headings appear, in order, in its section path,
compared as lower-case words. Reported per arm: recall@1/5/10 and MRR@10 of the gold section and
of the gold page, the questions whose rank changed, and how many of the top 10 were demoted.

Usage::

    ESRAG_DB=/tmp/docs.db python benchmarks/bench_demote.py eval/docs_questions.jsonl [--mode hybrid]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from esrag import app
from esrag.config import CorpusSettings, DemoteSettings, load_settings
from esrag.model import Hit
from esrag.search.sections import members_of

ARMS = ("off", "on", "sections")


def words(text: str) -> list[str]:
    text = re.sub(r"\{[^}]*#[^}]*\}", " ", text)  # {#id} / { #id } attribute lists
    return re.findall(r"[a-z0-9]+", text.lower())


def in_section(section_path: str, section: list[str]) -> bool:
    """The ``section`` headings appear, in order, among the titles of ``section_path``."""
    titles = [words(t) for t in section_path.split(" > ")]
    i = 0
    for t in titles:
        if i < len(section) and t == words(section[i]):
            i += 1
    return i == len(section)


def ranks(q: dict[str, Any], hits: list[Hit], store: Any) -> tuple[int | None, int | None]:
    """1-based rank of the first hit in the gold section and on the gold page (None: not in top k);
    a merged or grown hit is in the gold section when one of its member chunks is."""
    pages = {q["page"], *q.get("alternates", [])}
    sec = page = None
    for r, h in enumerate(hits, 1):
        if h.chunk.source_path in pages:
            page = page or r
            ids = [m.id for m in members_of(h)]
            paths = {h.chunk.section_path} | ({c.section_path for c in store.get(ids)} if len(ids) > 1 else set())
            if sec is None and any(in_section(p, q["section"]) for p in paths):
                sec = r
    return sec, page


def metrics(rs: list[int | None]) -> dict[str, float]:
    n = len(rs)
    return {
        "r@1": sum(r is not None and r <= 1 for r in rs) / n,
        "r@5": sum(r is not None and r <= 5 for r in rs) / n,
        "r@10": sum(r is not None and r <= 10 for r in rs) / n,
        "mrr@10": sum(1 / r for r in rs if r) / n,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions", type=Path)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--corpus", action="append", default=[], help="only these corpora (repeatable; default: all)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    questions = [json.loads(line) for line in a.questions.read_text().splitlines() if line.strip()]
    base = load_settings()
    with app.open_store(base) as store:
        if a.corpus:
            questions = [q for q in questions if q["corpus"] in a.corpus]
        corpora = sorted({q["corpus"] for q in questions})
        results: dict[str, dict[str, Any]] = {}
        per_q: dict[str, dict[str, Any]] = {}
        for arm in ARMS:
            weight = 1.0 if arm == "off" else 0.5
            settings = base.model_copy(update={"corpora": {c: CorpusSettings(demote=DemoteSettings(weight=weight)) for c in corpora}})
            pipeline = app.make_pipeline(settings, store)
            secs, pages, demoted, tokens, n_hits = [], [], 0, 0, 0
            for q in questions:
                r = pipeline.search(q["question"], k=a.k, mode=a.mode, corpora=[q["corpus"]], sections=arm == "sections")
                s, p = ranks(q, r.hits, store)
                secs.append(s)
                pages.append(p)
                demoted += sum(1 for h in r.hits if h.chunk.metadata.get("demoted"))
                tokens += sum(h.chunk.tokens for h in r.hits)
                n_hits += len(r.hits)
                per_q.setdefault(q["id"], {})[arm] = s
            results[arm] = {
                "section": metrics(secs),
                "page": metrics(pages),
                "demoted_in_top_k": demoted,
                "hits_per_question": round(n_hits / max(len(questions), 1), 1),
                "tokens_per_question": round(tokens / max(len(questions), 1), 1),
            }
    changed = {qid: v for qid, v in per_q.items() if len(set(v.values())) > 1}
    report = {"questions": len(questions), "corpora": corpora, "mode": a.mode, "k": a.k, "arms": results, "changed": changed}
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
