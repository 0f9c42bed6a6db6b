"""What an agent receives from ``esrag mcp`` on FastAPI's docs: tokens per response, whether the
page's example code is in it, and the rank of the answering section (issue 30).

FastAPI's docs (``../shared/data/corpora/fastapi-docs``, 155 pages) are ingested once into a
temporary embedded store (or ``--db``). Then each ``esrag`` executable given (``--esrag``,
repeatable: e.g. main's and this branch's) is started as ``esrag mcp`` over stdio and driven by
the official MCP client, exactly as an agent would, with the tools' defaults:

* eight everyday how-to questions through ``search_docs(query)`` (the first one: setting a
  cookie in a response). Per response: cl100k tokens of the text the client receives (the
  ``TextContent``, which an agent's host shows to the model; structured content, when a server
  also sends it, is counted separately), whether the answering page's example code is in it
  (a line of the included ``docs_src`` file that the page's own Markdown does not contain),
  and the rank of the first hit from the answering section (by its URL anchor);
* ``get_page`` of ``docs/release-notes.md`` and of the cookie page, with the default budget.

    .venv/bin/python benchmarks/bench_agent_answers.py --esrag /work/main/.venv/bin/esrag --esrag .venv/bin/esrag
        [--db PATH] [--out benchmarks/results/agent_answers.json]

Results (JSON and a table) go to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from _data import shared_data
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from rich.console import Console
from rich.table import Table

from esrag.tokens import count_tokens

HERE = Path(__file__).resolve().parent
FASTAPI = shared_data() / "corpora" / "fastapi-docs"
SITE = "https://fastapi.tiangolo.com/"

# (question, answering page (source path suffix), answering section anchors, a line of its example code)
QUESTIONS = [
    (
        "How do I set a cookie in the response?",
        "advanced/response-cookies.md",
        {"use-a-response-parameter", "return-a-response-directly", "response-cookies"},
        "response.set_cookie(",
    ),
    (
        "How do I allow CORS requests from my frontend?",
        "tutorial/cors.md",
        {"use-corsmiddleware", "cors-cross-origin-resource-sharing"},
        "allow_origins=origins",
    ),
    (
        "How do I receive an uploaded file?",
        "tutorial/request-files.md",
        {"define-file-parameters", "file-parameters-with-uploadfile", "request-files"},
        "def create_upload_file(",
    ),
    (
        "How do I run a task in the background after returning the response?",
        "tutorial/background-tasks.md",
        {"add-the-background-task", "using-backgroundtasks", "background-tasks"},
        "background_tasks.add_task(",
    ),
    (
        "How do I change the status code of a created item response to 201?",
        "tutorial/response-status-code.md",
        {"response-status-code", "shortcut-to-remember-the-names"},
        "status_code=201",
    ),
    (
        "How do I return a 404 error when an item is not found?",
        "tutorial/handling-errors.md",
        {"raise-an-httpexception-in-your-code", "use-httpexception", "handling-errors"},
        "if item_id not in items:",
    ),
    (
        "How do I open a database session per request and close it afterwards?",
        "tutorial/dependencies/dependencies-with-yield.md",
        {"a-database-dependency-with-yield", "dependencies-with-yield"},
        "db = DBSession()",
    ),
    ("How do I write tests for my FastAPI app?", "tutorial/testing.md", {"using-testclient", "testing"}, "client = TestClient(app)"),
]
PAGES = ["docs/release-notes.md", "advanced/response-cookies.md"]


def ingest(esrag: str, db: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}, "ESRAG_DB": str(db)}
    subprocess.run([esrag, "ingest", str(FASTAPI), "--corpus", "fastapi", "--json"], env=env, check=True, stdout=subprocess.DEVNULL)


def hits_of(text: str) -> list[dict[str, str]]:
    """The hits of a response: JSON ``{"hits": [...]}``, or Markdown ``## section path`` followed
    by the URL or ``source_path (lines a-b)`` line."""
    try:
        body = json.loads(text)
        return [
            {"where": h.get("url") or h.get("source_path") or "", "section_path": h.get("section_path") or ""} for h in body.get("hits", [])
        ]
    except ValueError:
        found = re.findall(r"(?m)^## (.+)\n(https?://\S+|\S+ \(lines \d+-\d+\))", text)
        return [{"where": where.split(" ", 1)[0], "section_path": head} for head, where in found]


def slug(title: str) -> str:
    """A heading's anchor as MkDocs' toc slugify makes it (lower case, punctuation dropped, spaces to -)."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title.replace("`", "")).strip().lower())


def rank(hits: list[dict[str, str]], page: str, anchors: set[str]) -> int | None:
    """1-based rank of the first hit from the answering page whose section (URL anchor, else
    the last part of its section path) is one of ``anchors``."""
    stem = page.removesuffix(".md")
    for i, h in enumerate(hits, 1):
        where, _, anchor = h["where"].partition("#")
        on_page = where.rstrip("/").endswith(stem) or where.endswith(page)
        section = anchor or slug(h["section_path"].rsplit(" > ", 1)[-1])
        if on_page and section in anchors:
            return i
    return None


async def session_run(esrag: str, db: Path) -> dict[str, Any]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}, "ESRAG_DB": str(db)}
    params = StdioServerParameters(command=esrag, args=["mcp"], env=env)
    out: dict[str, Any] = {"esrag": esrag, "questions": [], "pages": []}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for question, page, anchors, code in QUESTIONS:
            r = await session.call_tool("search_docs", {"query": question})
            text = r.content[0].text if r.content else ""
            structured = json.dumps(r.structured_content) if r.structured_content else ""
            hits = hits_of(text)
            out["questions"].append(
                {
                    "question": question,
                    "error": bool(r.is_error),
                    "tokens": count_tokens(text),
                    "structured_tokens": count_tokens(structured) if structured else 0,
                    "hits": len(hits),
                    "code_in_response": code in text,
                    "answer_rank": rank(hits, page, anchors),
                    "pages": len({h["where"].split("#")[0] for h in hits}),
                }
            )
        for path in PAGES:
            short = path.removeprefix("docs/")
            for asked in dict.fromkeys([path, "docs/" + short, "docs/en/docs/" + short]):  # as given, then as indexed
                r = await session.call_tool("get_page", {"path": asked})
                if not r.is_error:
                    break
            text = r.content[0].text if r.content else ""
            out["pages"].append(
                {
                    "path": path,
                    "asked": asked,
                    "error": bool(r.is_error),
                    "tokens": count_tokens(text),
                    "first_line": text.split("\n", 1)[0][:120],
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--esrag", action="append", help="an esrag executable to serve (repeatable)")
    ap.add_argument("--db", type=Path, help="the SQLite index (default: a temporary one, ingested first)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "agent_answers.json")
    args = ap.parse_args()
    executables = args.esrag or [str(Path(sys.executable).with_name("esrag"))]
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "fastapi.db"
        if not db.exists():
            ingest(executables[-1], db)
        runs = [anyio.run(session_run, exe, db) for exe in executables]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"corpus": str(FASTAPI), "runs": runs}, indent=2) + "\n")
    console = Console()
    for run in runs:
        table = Table("question", "tokens", "struct.", "hits", "pages", "code", "rank", title=run["esrag"])
        for q in run["questions"]:
            table.add_row(
                q["question"][:60],
                str(q["tokens"]),
                str(q["structured_tokens"]),
                str(q["hits"]),
                str(q["pages"]),
                "yes" if q["code_in_response"] else "no",
                str(q["answer_rank"] or "-"),
            )
        for p in run["pages"]:
            table.add_row(f"get_page {p['path']}", str(p["tokens"]), "", "", "", "", "error" if p["error"] else "")
        console.print(table)
    args.out.with_suffix(".md").write_text(summary(runs))
    console.print(f"written {args.out} and {args.out.with_suffix('.md')}")


def summary(runs: list[dict[str, Any]]) -> str:
    """A Markdown table: per question, each run's tokens / code in response / rank."""
    head = "| question | " + " | ".join(f"{r['esrag']}: tokens, code, rank" for r in runs) + " |\n"
    head += "|---|" + "---|" * len(runs) + "\n"
    rows = []
    for i, (question, *_rest) in enumerate(QUESTIONS):
        cells = [
            f"{r['questions'][i]['tokens']}, {'yes' if r['questions'][i]['code_in_response'] else 'no'}, "
            f"{r['questions'][i]['answer_rank'] or '-'}"
            for r in runs
        ]
        rows.append(f"| {question} | " + " | ".join(cells) + " |")
    for j, path in enumerate(PAGES):
        cells = [f"{r['pages'][j]['tokens']}" + (" (error)" if r["pages"][j]["error"] else f" (as {r['pages'][j]['asked']})") for r in runs]
        rows.append(f"| get_page {path} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n"


if __name__ == "__main__":
    main()
