"""A docs hub of 50+ git sources on one machine (issue 39, "Scale"), through the real CLI.

The sources are the 15 shared corpora (each made a local git repository here, one commit) and
the public repositories fetched under ``--mirrors`` (default ``/work/.mirror``; each a git
directory, its default branch indexed, its docs folder as ``path`` when it has one). For a store
(the embedded SQLite store, or Elasticsearch with ``--es-url``):

  1. ``esrag sync --json`` of every source from nothing: seconds, chunks, outcome per source;
  2. ``esrag sync --json`` again with nothing changed: every version ``unchanged``, seconds;
  3. one file of one shared corpus edited and committed, then ``esrag sync NAME --json``:
     seconds and the ingest's counts (only that file's changed chunks are embedded again);
  4. ``esrag status --json``: corpora, chunks; one ``esrag search --json`` per source's corpus
     (its name as the query) must return a hit from that corpus.

The embedding cache beside the store is kept between runs (``--work``), so a second store or a
re-run embeds nothing it has embedded before; ``--fresh-cache`` empties it for a cold figure.
Results go to ``benchmarks/results/hub-<store>.json``.

    .venv/bin/python benchmarks/bench_hub.py [--es-url URL] [--limit N] [--work /tmp/esrag-hub]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _data import shared_data
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
ESRAG = str(Path(sys.executable).with_name("esrag"))
DOC = re.compile(r"\.(md|mdx|markdown|rst|adoc|asciidoc|ipynb)$")
DOCS_FOLDERS = ("docs", "guide", "documentation", "content")
console = Console(width=160, stderr=True)


def git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def shared_sources(repos: Path) -> dict[str, dict]:
    """Each shared corpus as a local git repository with one commit on ``main`` (made once)."""
    out = {}
    for corpus in sorted(p for p in (shared_data() / "corpora").iterdir() if p.is_dir()):
        repo = repos / corpus.name
        if not (repo / ".git").is_dir():
            shutil.copytree(corpus, repo, dirs_exist_ok=True)
            git("init", "-q", "-b", "main", cwd=repo)
            git("add", "-A", cwd=repo)
            git("commit", "-q", "-m", "import", cwd=repo)
        out[corpus.name] = {"git": str(repo), "refs": ["main"], "path": ""}
    return out


def mirror_sources(mirrors: Path) -> dict[str, dict]:
    """Each fetched repository (``owner+name/repo`` or ``owner+name``): its default branch,
    and its docs folder as ``path`` when it has one holding documentation files."""
    out = {}
    for d in sorted(p for p in mirrors.iterdir() if p.is_dir()):
        gitdir = d / "repo" if (d / "repo").is_dir() else d
        try:
            branch = git("--git-dir", str(gitdir), "rev-parse", "--abbrev-ref", "HEAD")
            files = git("--git-dir", str(gitdir), "ls-tree", "-r", "--name-only", "HEAD").splitlines()
        except subprocess.CalledProcessError:
            continue
        docs = [f for f in files if DOC.search(f)]
        if len(docs) < 5:
            continue
        path = next((f for f in DOCS_FOLDERS if sum(x.startswith(f + "/") for x in docs) >= 5), "")
        name = re.sub(r"[^a-z0-9-]+", "-", d.name.split("+")[-1].lower()).strip("-")
        if name in out:
            name = re.sub(r"[^a-z0-9-]+", "-", d.name.lower())
        out[name] = {"git": str(gitdir), "refs": [branch], "path": path}
    return out


def toml(sources: dict[str, dict], db: Path, es_url: str | None) -> str:
    lines = [
        f'es_url = "{es_url}"\nindex = "esrag-bench-hub"' if es_url else f'db = "{db}"',
        "",
        "[ingest]",
        "max_delete_fraction = 0.5",
        "",
    ]
    for name, s in sources.items():
        lines += [f"[sources.{name}]", f'git = "{s["git"]}"', f"refs = {json.dumps(s['refs'])}", f'path = "{s["path"]}"', ""]
    return "\n".join(lines)


def run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, dict, int]:
    """``esrag ARGS`` (``--json``): seconds, parsed stdout, exit status (stderr shown live)."""
    t0 = time.perf_counter()
    p = subprocess.run([ESRAG, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    try:
        data = json.loads(p.stdout) if p.stdout.strip() else {}
    except json.JSONDecodeError:
        data = {"raw": p.stdout[-2000:]}
    return seconds, data, p.returncode


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def counts(report: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in report.get("versions", {}).values():
        for k, v in (row.get("summary") or {}).items():
            if isinstance(v, int):
                out[k] = out.get(k, 0) + v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/esrag-hub"))
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--es-url", default=None, help="Elasticsearch (a node or a cluster) instead of the embedded store")
    ap.add_argument("--limit", type=int, default=0, help="only the first N sources (a quick try)")
    ap.add_argument("--fresh-cache", action="store_true", help="empty the embedding cache first (a cold figure)")
    a = ap.parse_args()

    store = "elastic" if a.es_url else "sqlite"
    work = a.work
    (work / "repos").mkdir(parents=True, exist_ok=True)
    sources = {**shared_sources(work / "repos"), **(mirror_sources(a.mirrors) if a.mirrors.is_dir() else {})}
    if a.limit:
        sources = dict(list(sources.items())[: a.limit])
    run_dir = work / f"run-{store}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    db = run_dir / "esrag.db"
    (run_dir / "esrag.toml").write_text(toml(sources, db, a.es_url), encoding="utf-8")
    env = {**os.environ, "ESRAG_CONFIG": str(run_dir / "esrag.toml"), "ESRAG_EMBEDDING_CACHE": str(work / "embedding_cache.db")}
    if a.fresh_cache:
        (work / "embedding_cache.db").unlink(missing_ok=True)
    if a.es_url:
        subprocess.run([ESRAG, "drop", "--yes"], cwd=run_dir, env=env, capture_output=True)
    console.print(f"[bold]{len(sources)} sources[/bold] on {store}; work in {run_dir}")

    first_s, first, rc1 = run(["sync", "--json"], env, run_dir)
    reports = {r["source"]: r for r in first.get("sources", [])}
    if not reports:
        sys.exit(f"the first sync reported no source (exit {rc1}); see the error above")
    again_s, again, rc2 = run(["sync", "--json"], env, run_dir)
    unchanged = sum(row["outcome"] == "unchanged" for r in again.get("sources", []) for row in r["versions"].values())
    versions = sum(len(r["versions"]) for r in again.get("sources", []))

    def markdown(name: str) -> list[Path]:
        return [p for p in sorted(Path(sources[name]["git"]).rglob("*.md")) if ".git" not in p.parts]

    edited = "laravel-docs" if "laravel-docs" in sources else next(n for n in sources if "/repos/" in sources[n]["git"] and markdown(n))
    repo = Path(sources[edited]["git"])
    target = markdown(edited)[0]
    with target.open("a", encoding="utf-8") as f:
        f.write(f"\n\n## Hub benchmark note {time.time():.0f}\n\nOne paragraph added by bench_hub to time a one-file sync.\n")
    git("commit", "-qam", "one file", cwd=repo)
    one_s, one, rc3 = run(["sync", edited, "--json"], env, run_dir)
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo)  # the shared copy as it was, for the next run
    one_counts = counts(one.get("sources", [{}])[0]) if one.get("sources") else {}
    one_files = [
        f
        for s in one.get("sources", [])
        for row in s.get("versions", {}).values()
        for f in (row.get("summary") or {}).get("files_changed", [])
    ]

    _, status, _ = run(["status", "--json"], env, run_dir)
    found = 0
    for name in sources:
        _, hits, _ = run(["search", name.replace("-", " "), "--corpus", name, "-k", "1", "--json"], env, run_dir)
        found += bool(hits.get("hits") if isinstance(hits, dict) else hits)

    table = Table("source", "outcome", "chunks new", "files", title=f"first sync of {len(sources)} sources ({store})")
    total_chunks = 0
    for name in sources:
        r = reports.get(name, {})
        c = counts(r)
        total_chunks += c.get("chunks_new", 0)
        outcome = ",".join(sorted({row["outcome"] for row in r.get("versions", {}).values()})) or (r.get("error") or "missing")[:60]
        table.add_row(name, outcome, str(c.get("chunks_new", 0)), str(c.get("files", "")))
    console.print(table)
    summary = {
        "store": store,
        "cpu": cpu_model(),
        "bf16": "avx512_bf16" in open("/proc/cpuinfo").read(),
        "sources": len(sources),
        "first_sync_seconds": round(first_s, 1),
        "first_sync_exit": rc1,
        "chunks": total_chunks,
        "failed_sources": [
            n for n, r in reports.items() if r.get("error") or any(v["outcome"] in ("error", "refused") for v in r["versions"].values())
        ],
        "resync_seconds": round(again_s, 1),
        "resync_exit": rc2,
        "resync_unchanged": f"{unchanged}/{versions}",
        "one_file_sync_seconds": round(one_s, 1),
        "one_file_sync_exit": rc3,
        "one_file_counts": one_counts,
        "one_file_changed": f"{target.relative_to(repo)} edited; sync names {one_files}",
        "corpora_in_status": len((status or {}).get("corpora", [])) if isinstance(status, dict) else None,
        "sources_searchable": f"{found}/{len(sources)}",
    }
    t2 = Table("measure", "value", title="docs hub")
    for k, v in summary.items():
        t2.add_row(k, json.dumps(v) if not isinstance(v, str) else v)
    console.print(t2)
    out = HERE / "results" / f"hub-{store}.json"
    out.write_text(
        json.dumps({**summary, "per_source": {n: {"counts": counts(r), "error": r.get("error")} for n, r in reports.items()}}, indent=2),
        encoding="utf-8",
    )
    console.print(f"written {out}")


if __name__ == "__main__":
    main()
