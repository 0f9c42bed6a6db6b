"""Session memory for agents (issue 38): tokens an agent receives in one MCP session with memory
on vs off, and the evidence it holds.

A simulated agent session per corpus of the documentation question set
(``eval/docs_questions.jsonl``: 87 questions over 9 shared sites): the corpus's questions in
sequence, each as ``search_docs(question, corpus)`` at the default ``token_budget`` (2,000,
Markdown), then (unless ``--no-page``) ``get_page`` of the first hit's URL or source path at its
default budget (4,000) — an agent reading on. Each session goes through the official MCP client
(``mcp.Client``) to the real server (:func:`esrag.serve.mcp.build_server`) in process, once with
``session_memory`` off and once on, over one embedded store (ingested as
``benchmarks/eval_cutoff.py`` does; ``--db`` kept between runs). Per corpus and mode:

* **tokens**: cl100k tokens of every response of the session (searches + pages);
* **rec resp**: evidence recall within each question's search response (word 5-grams, as rec@Bt:
  :func:`esrag.eval.metrics.found`), mean over questions — what one response holds;
* **rec session**: evidence recall within everything the session received up to and including
  that question (the union) — what the agent holds, since a block left out was sent before;
* **fresh**: the share of the word 5-grams received (distinct per response) that the session
  had not received before — new text rather than repeats;
* **left out**: hits (or parts of merged hits) the searches left out as already sent, and
  **page lines**: the one-line stand-ins for sent sections in the pages (memory on).

    .venv/bin/python benchmarks/bench_session_memory.py [--db /tmp/esrag-cutoff/esrag.db] [--no-page]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
from pathlib import Path
from typing import Any

import anyio
from eval_cutoff import QUESTIONS, ingest
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
_FIRST_WHERE = re.compile(r"(?m)^## .+\n(\S+)")
_LEFT_OUT = re.compile(r"^_Left out: (\d+) already sent in this session", re.M)


async def session(service: Any, questions: list[dict[str, Any]], memory: bool, page: bool) -> list[dict[str, Any]]:
    """One agent session over ``questions`` (one corpus) through the official MCP client; per
    question its response tokens and evidence recall (within the response, within the session)."""
    from mcp import Client

    from esrag.eval.metrics import Gold, Selection, found, grams, words
    from esrag.serve.mcp import build_server
    from esrag.tokens import count_tokens

    rows: list[dict[str, Any]] = []
    units: list[list[str]] = []
    held: set[Any] = set()
    async with Client(build_server(service, session_memory=memory)) as client:
        for q in questions:
            result = await client.call_tool("search_docs", {"query": q["question"], "corpus": q["corpus"]})
            md = result.content[0].text
            texts = [md]
            where = _FIRST_WHERE.search(md)
            if page and where:
                got = await client.call_tool("get_page", {"path": where.group(1), "corpus": q["corpus"]})
                texts.append(got.content[0].text)
            gold = Gold.from_texts(q.get("evidence") or [])
            ws = words(md)
            own = found(gold, Selection([ws], set(grams(ws)), 0))
            seen, fresh = 0, 0
            for t in texts:
                units.append(words(t))
                g = grams(units[-1])
                seen, fresh = seen + len(g), fresh + len(g - held)
                held |= g
            union = found(gold, Selection(units, held, 0))
            rows.append(
                {
                    "id": q["id"],
                    "search_tokens": count_tokens(md),
                    "page_tokens": sum(count_tokens(t) for t in texts[1:]),
                    "rec_resp": sum(own) / len(own) if own else 0.0,
                    "rec_session": sum(union) / len(union) if union else 0.0,
                    "grams": seen,
                    "fresh": fresh,
                    "left_out": int(m.group(1)) if (m := _LEFT_OUT.search(md)) else 0,
                    "placeholders": sum(t.count("[Already sent in this session: ") for t in texts[1:]),
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, default=Path("/tmp/esrag-cutoff/esrag.db"))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "session_memory.json")
    ap.add_argument("--no-page", dest="page", action="store_false", help="searches only (no get_page after each)")
    args = ap.parse_args()
    console = Console(width=170)
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpora = sorted({q["corpus"] for q in questions})
    args.db.parent.mkdir(parents=True, exist_ok=True)
    ingest(args.db, corpora, console)
    os.environ["ESRAG_DB"] = str(args.db)
    from esrag.config import load_settings
    from esrag.service import open_service

    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with open_service(load_settings()) as service:
        for corpus in corpora:
            asked = [q for q in questions if q["corpus"] == corpus]
            results[corpus] = {mode: anyio.run(session, service, asked, mode == "on", args.page) for mode in ("off", "on")}
            console.print(f"{corpus}: {len(asked)} questions")

    what = "search_docs + get_page(first hit)" if args.page else "search_docs"
    table = Table(title=f"One MCP session per corpus, questions in sequence ({what}, default budgets): memory off vs on")
    for col in (
        "corpus",
        "q",
        "tokens off",
        "tokens on",
        "on/off",
        "search t off",
        "search t on",
        "rec resp off",
        "rec resp on",
        "rec session off",
        "rec session on",
        "fresh off",
        "fresh on",
        "left out",
        "page lines",
    ):
        table.add_column(col, justify="left" if col == "corpus" else "right")
    summary: dict[str, Any] = {}
    every: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    for corpus, modes in [*results.items(), ("all", None)]:
        rows = modes if modes is not None else every
        if modes is not None:
            for m in ("off", "on"):
                every[m].extend(modes[m])
        s = {
            m: {
                "questions": len(rows[m]),
                "tokens": sum(r["search_tokens"] + r["page_tokens"] for r in rows[m]),
                "search_tokens": sum(r["search_tokens"] for r in rows[m]),
                "rec_resp": statistics.mean(r["rec_resp"] for r in rows[m]),
                "rec_session": statistics.mean(r["rec_session"] for r in rows[m]),
                "fresh": sum(r["fresh"] for r in rows[m]) / max(sum(r["grams"] for r in rows[m]), 1),
                "left_out": sum(r["left_out"] for r in rows[m]),
                "placeholders": sum(r["placeholders"] for r in rows[m]),
            }
            for m in ("off", "on")
        }
        summary[corpus] = s
        off, on = s["off"], s["on"]
        table.add_row(
            corpus,
            str(off["questions"]),
            f"{off['tokens']:,}",
            f"{on['tokens']:,}",
            f"{on['tokens'] / max(off['tokens'], 1):.2f}",
            f"{off['search_tokens']:,}",
            f"{on['search_tokens']:,}",
            f"{off['rec_resp']:.3f}",
            f"{on['rec_resp']:.3f}",
            f"{off['rec_session']:.3f}",
            f"{on['rec_session']:.3f}",
            f"{off['fresh']:.2f}",
            f"{on['fresh']:.2f}",
            str(on["left_out"]),
            str(on["placeholders"]),
        )
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"scenario": what, "summary": summary, "rows": results}, indent=1) + "\n", encoding="utf-8")
    console.print(f"written {args.out}")


if __name__ == "__main__":
    main()
