"""``esrag serve``: HTTP search latency and throughput on the Laravel docs, beside the CLI.

For each store (the embedded SQLite store, and Elasticsearch at ``ESRAG_ES_URL`` or the 9.2.8
test node on :9200):
  1. the Laravel docs are ingested once into an index kept under ``benchmarks/results/serve/``
     (SQLite) or the alias ``esrag-bench-serve`` (Elasticsearch) and reused by later runs
     (``--fresh`` re-ingests); passages share one embedding cache;
  2. ``esrag serve`` starts on a free port (the model loads once, before it listens);
  3. 100 sequential hybrid searches (k = 10) through HTTP with one keep-alive client: p50/p95
     wall time including the query embedding, and the server's own total;
  4. 8 concurrent clients (25 searches each) on queries the server has not seen: throughput and
     p95; then the same queries again (their vectors kept by the searcher): throughput and p95;
  5. on Elasticsearch, the requests the server sends to the cluster per search (through a
     counting proxy, after warm-up);
  6. the CLI's per-call time (``esrag search --json``, model load included), median of 3;
  7. the graceful shutdown: seconds from SIGTERM to the server's exit, and its status (0). The
     test suite checks only that it exits 0 and says so (tests/test_serve.py), never how fast.
Target: HTTP p95 <= 50 ms with one client.

Against today (issue 39, embedded store): ``--baseline REF`` (default 46c2bf3, the code before
per-thread read connections) exports that commit's ``esrag`` with ``git archive`` into a
temporary folder (the repository is not touched) and serves the same index from it beside this
checkout's server (each process imports its own code through ``PYTHONPATH``); ``--rounds``
rounds alternate the two (which one goes first too), each round on queries neither server has
seen, then prints baseline vs new: 1 client and N clients, searches/s, p50, p95, failures, the
server process's CPU per search (user + system, every thread, from ``/proc/PID/stat``) and the
ratio. The N clients run twice per round, with two load generators on the cores the servers
share: httpx (what the figures before 2026-12-07 used; ~1.1 ms of CPU a request) and the
standard library's ``http.client`` (~0.2 ms), each client one keep-alive connection. Target
(issue 39): N = 8 clients at >= 200 searches/s with p95 <= 50 ms, no failure.
``--baseline none`` skips it.

    .venv/bin/python benchmarks/bench_serve.py [--queries 100] [--clients 8] [--stores sqlite,elastic] [--fresh]
        [--baseline 46c2bf3] [--rounds 3] [--only-compare]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from _data import shared_data
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT / "tests"))
from serve_helpers import CountingProxy, Server, clean_env  # noqa: E402

LARAVEL = shared_data() / "corpora" / "laravel-docs"
RESULTS = HERE / "results" / "serve"
ESRAG = str(Path(sys.executable).with_name("esrag"))
ALIAS = "esrag-bench-serve"
console = Console(width=180)


def queries(n: int, seed: int = 2027) -> list[str]:
    titles = []
    for path in sorted(LARAVEL.glob("*.md")):
        titles += re.findall(r"^#{2,3} (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
    return [f"how do I use {t.strip().lower()}" for t in random.Random(seed).sample(titles, n)]


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system, every thread) process ``pid`` has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([ESRAG, *args], env=clean_env(env), capture_output=True, text=True, timeout=1800, check=True)


def ensure_index(env: dict[str, str], fresh: bool) -> tuple[int, float]:
    """(chunks, ingest seconds; 0 when an existing index was reused)."""
    if not fresh:
        status = json.loads(cli(["status", "--json"], env).stdout)
        if status.get("corpora", {}).get("laravel", {}).get("chunks"):
            return status["chunks"], 0.0
    t0 = time.perf_counter()
    cli(["ingest", str(LARAVEL), "--corpus", "laravel", "--json"], env)
    return json.loads(cli(["status", "--json"], env).stdout)["chunks"], time.perf_counter() - t0


def sequential(url: str, qs: list[str]) -> tuple[list[float], list[float]]:
    walls, totals = [], []
    with httpx.Client(timeout=60) as client:
        for q in qs:
            t0 = time.perf_counter()
            r = client.get(url + "/search", params={"q": q, "k": 10, "mode": "hybrid"})
            walls.append((time.perf_counter() - t0) * 1000)
            r.raise_for_status()
            totals.append(r.json()["timings_ms"]["total"])
    return walls, totals


def concurrent(url: str, qs: list[str], clients: int) -> tuple[float, list[float]]:
    per = [qs[i::clients] for i in range(clients)]

    def run(part: list[str]) -> list[float]:
        out = []
        with httpx.Client(timeout=60) as client:
            for q in part:
                t0 = time.perf_counter()
                client.get(url + "/search", params={"q": q, "k": 10}).raise_for_status()
                out.append((time.perf_counter() - t0) * 1000)
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        lat = [x for part in pool.map(run, per) for x in part]
    return len(lat) / (time.perf_counter() - t0), lat


def concurrent_counted(url: str, qs: list[str], clients: int) -> tuple[float, list[float], int]:
    """Like :func:`concurrent`, but a failed search (an error status or a transport error) is
    counted, not raised: (searches/s over all, latencies ms of the answered ones, failures)."""
    per = [qs[i::clients] for i in range(clients)]

    def run(part: list[str]) -> tuple[list[float], int]:
        out, failed = [], 0
        with httpx.Client(timeout=60) as client:
            for q in part:
                t0 = time.perf_counter()
                try:
                    ok = client.get(url + "/search", params={"q": q, "k": 10}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    out.append((time.perf_counter() - t0) * 1000)
                failed += not ok
        return out, failed

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        parts = list(pool.map(run, per))
    return len(qs) / (time.perf_counter() - t0), [x for lat, _ in parts for x in lat], sum(f for _, f in parts)


def export_commit(ref: str, into: Path) -> Path:
    """``esrag`` as of commit ``ref``, written by ``git archive`` under ``into`` (the repository
    and its worktrees are left as they are); the folder to put on ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(PROJECT), "archive", ref, "esrag"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def stdlib_counted(url: str, qs: list[str], clients: int) -> tuple[float, list[float], int]:
    """:func:`concurrent_counted` with a lighter load generator: each client one keep-alive
    ``http.client`` connection (~0.2 ms of CPU a request against httpx's ~1.1 ms, on the cores
    the server shares)."""
    host, port = url.removeprefix("http://").split(":")
    per = [qs[i::clients] for i in range(clients)]

    def run(part: list[str]) -> tuple[list[float], int]:
        out, failed = [], 0
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        for q in part:
            t0 = time.perf_counter()
            try:
                conn.request("GET", "/search?" + urllib.parse.urlencode({"q": q, "k": 10}))
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                ok = False
            if ok:
                out.append((time.perf_counter() - t0) * 1000)
            failed += not ok
        conn.close()
        return out, failed

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        parts = list(pool.map(run, per))
    return len(qs) / (time.perf_counter() - t0), [x for lat, _ in parts for x in lat], sum(f for _, f in parts)


def compare(env: dict[str, str], ref: str, clients: int, rounds: int, n: int) -> dict:
    """Baseline (commit ``ref``) and new (this checkout) ``esrag serve`` on the same SQLite
    index, phases interleaved: per round, ``n`` sequential searches (1 client), then ``2 n``
    searches from ``clients`` keep-alive httpx clients, then ``2 n`` from as many ``http.client``
    ones (:func:`stdlib_counted`), on queries new to both servers (each keeps recent query
    vectors). Returns {variant: {phase: {searches, rate, p50, p95, failures, cpu_ms}}}."""
    loads = {f"{clients} clients (httpx)": concurrent_counted, f"{clients} clients (http.client)": stdlib_counted}
    with tempfile.TemporaryDirectory(prefix="esrag-baseline-") as tmp:
        paths = {"baseline": str(export_commit(ref, Path(tmp))), "new": str(PROJECT)}
        servers = {name: Server(["serve"], {**env, "PYTHONPATH": path}) for name, path in paths.items()}
        raw: dict[str, dict[str, dict[str, list]]] = {
            name: {phase: {"lat": [], "t": [], "cpu": [], "fail": []} for phase in ("1 client", *loads)} for name in servers
        }
        try:
            for server in servers.values():
                sequential(server.url, queries(20, seed=7))  # warm-up
            per_round = (1 + 2 * len(loads)) * n
            pool = queries(per_round * rounds, seed=5)  # distinct headings: up to ~1,780 (--queries x --rounds <= ~350)
            for r in range(rounds):
                chunk = pool[r * per_round : (r + 1) * per_round]
                for name in ("baseline", "new") if r % 2 == 0 else ("new", "baseline"):
                    url, pid = servers[name].url, servers[name].proc.pid
                    t0, c0 = time.perf_counter(), process_cpu(pid)
                    walls, _ = sequential(url, chunk[:n])
                    row = raw[name]["1 client"]
                    row["lat"] += walls
                    row["t"].append(time.perf_counter() - t0)
                    row["cpu"].append(process_cpu(pid) - c0)
                    row["fail"].append(0)
                    for i, (phase, load) in enumerate(loads.items()):
                        qs = chunk[n + 2 * n * i : n + 2 * n * (i + 1)]
                        t0, c0 = time.perf_counter(), process_cpu(pid)
                        _, lat, failed = load(url, qs, clients)
                        row = raw[name][phase]
                        row["t"].append(time.perf_counter() - t0)
                        row["cpu"].append(process_cpu(pid) - c0)
                        row["lat"] += lat
                        row["fail"].append(failed)
                        console.print(
                            f"[dim]round {r + 1} {name}: {phase} {len(qs) / row['t'][-1]:.1f}/s, p95 {pct(lat, 95):.1f} ms, {failed} failed[/dim]"
                        )
        finally:
            for server in servers.values():
                server.stop(timeout=60)
    out: dict = {}
    for name, phases in raw.items():
        out[name] = {}
        for phase, d in phases.items():
            searches = (n if phase == "1 client" else 2 * n) * rounds
            out[name][phase] = {
                "searches": searches,
                "rate": searches / sum(d["t"]),
                "p50": pct(d["lat"], 50),
                "p95": pct(d["lat"], 95),
                "failures": sum(d["fail"]),
                "cpu_ms": 1000 * sum(d["cpu"]) / searches,
            }
    return out


def print_compare(cmp: dict, ref: str, clients: int, rounds: int) -> None:
    t = Table(title=f"esrag serve on SQLite (Laravel docs, hybrid k=10): baseline {ref} vs this checkout, {rounds} interleaved rounds")
    for col in (
        "phase",
        "code",
        "searches",
        "searches/s",
        "p50 ms",
        "p95 ms",
        "failures",
        "server CPU ms/search",
        "new / baseline (searches/s)",
        "target",
    ):
        t.add_column(col, justify="right")
    for phase in cmp["new"]:
        for name in ("baseline", "new"):
            r = cmp[name][phase]
            ratio = f"{cmp['new'][phase]['rate'] / cmp['baseline'][phase]['rate']:.2f}x" if name == "new" else ""
            target = ""
            if phase.startswith(f"{clients} clients"):
                target = (
                    "met" if r["rate"] >= 200 and r["p95"] <= 50 and not r["failures"] else "NOT met (>= 200/s, p95 <= 50 ms, 0 failed)"
                )
            t.add_row(
                phase,
                name,
                str(r["searches"]),
                f"{r['rate']:.1f}",
                f"{r['p50']:.1f}",
                f"{r['p95']:.1f}",
                str(r["failures"]),
                f"{r['cpu_ms']:.1f}",
                ratio,
                target,
            )
    console.print(t)


def requests_per_search(env: dict[str, str], qs: list[str]) -> float:
    proxy = CountingProxy(env["ESRAG_ES_URL"])
    server = Server(["serve"], {**env, "ESRAG_ES_URL": proxy.url})
    try:
        sequential(server.url, qs[:3])  # warm: capability probes
        before = proxy.snapshot()
        sequential(server.url, qs[:20])
        delta = proxy.snapshot() - before
        console.print(f"[dim]requests to the cluster for 20 searches: {dict(delta)}[/dim]")
        return sum(delta.values()) / 20
    finally:
        server.stop()
        proxy.stop()


def bench(store: str, env: dict[str, str], qs: list[str], clients: int, fresh: bool) -> dict:
    chunks, ingest_s = ensure_index(env, fresh)
    server = Server(["serve"], env)
    try:
        sequential(server.url, queries(20, seed=7))  # warm-up
        walls, totals = sequential(server.url, qs)
        # queries the server has not seen (it keeps recent query vectors: repeats skip the model),
        # then the same ones again (every query's vector kept)
        fresh = [q for q in queries(4 * len(qs), seed=11) if q not in set(qs)][: 2 * len(qs)]
        rate, lat = concurrent(server.url, fresh, clients)
        warm_rate, warm_lat = concurrent(server.url, fresh, clients)
    finally:
        t0 = time.perf_counter()
        status = server.stop(timeout=120)  # SIGTERM, then the graceful shutdown
        shutdown_s = time.perf_counter() - t0
    cli_times = []
    for q in qs[:3]:
        t0 = time.perf_counter()
        cli(["search", q, "--json"], env)
        cli_times.append(time.perf_counter() - t0)
    out = {
        "store": store,
        "chunks": chunks,
        "ingest_s": ingest_s,
        "p50": pct(walls, 50),
        "p95": pct(walls, 95),
        "server_p50": pct(totals, 50),
        "rate": rate,
        "conc_p50": pct(lat, 50),
        "conc_p95": pct(lat, 95),
        "warm_rate": warm_rate,
        "warm_p95": pct(warm_lat, 95),
        "cli_s": statistics.median(cli_times),
        "requests": None,
        "sigterm_exit_s": shutdown_s,
        "sigterm_status": status,
    }
    if store == "elastic":
        out["requests"] = requests_per_search(env, qs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--stores", default="sqlite,elastic")
    ap.add_argument("--fresh", action="store_true", help="Re-ingest even when a kept index exists.")
    ap.add_argument("--baseline", default="46c2bf3", help="Commit to compare against on SQLite ('none': skip).")
    ap.add_argument("--rounds", type=int, default=3, help="Interleaved baseline/new rounds.")
    ap.add_argument("--only-compare", action="store_true", help="Only the baseline comparison (SQLite).")
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    common = {"ESRAG_EMBEDDING_CACHE": str(RESULTS / "embedding_cache.db")}
    envs = {
        "sqlite": {**common, "ESRAG_DB": str(RESULTS / "laravel.db")},
        "elastic": {**common, "ESRAG_ES_URL": os.environ.get("ESRAG_ES_URL", "http://127.0.0.1:9200"), "ESRAG_INDEX": ALIAS},
    }
    qs = queries(args.queries)
    if args.baseline != "none" and "sqlite" in args.stores.split(","):
        ensure_index(envs["sqlite"], args.fresh)
        cmp = compare(envs["sqlite"], args.baseline, args.clients, args.rounds, args.queries)
        print_compare(cmp, args.baseline, args.clients, args.rounds)
        machine = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = re.search(r"Model name:\s*(.+)", machine)
        record = {
            "baseline": args.baseline,
            "clients": args.clients,
            "rounds": args.rounds,
            "queries": args.queries,
            "cpu": model.group(1).strip() if model else "",
            "bf16": "avx512_bf16" in machine,
            "cores": os.cpu_count(),
            "loadavg_after": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            **cmp,
        }
        (HERE / "results" / "serve_compare.json").write_text(json.dumps(record, indent=2))
        if args.only_compare:
            return
    rows = [bench(s, envs[s], qs, args.clients, args.fresh) for s in args.stores.split(",")]
    t = Table(title=f"esrag serve: Laravel docs, hybrid k=10, {args.queries} sequential queries, {args.clients} concurrent clients")
    for col in (
        "store",
        "chunks",
        "HTTP p50 / p95 (1 client)",
        "server total p50",
        f"{args.clients} clients: req/s",
        f"{args.clients} clients: p50 / p95",
        f"{args.clients} clients, repeated queries: req/s / p95",
        "CLI per call",
        "cluster requests / search",
        "SIGTERM to exit",
        "target p95 <= 50 ms",
    ):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            r["store"],
            f"{r['chunks']:,}",
            f"{r['p50']:.1f} / {r['p95']:.1f} ms",
            f"{r['server_p50']:.1f} ms",
            f"{r['rate']:.1f}",
            f"{r['conc_p50']:.1f} / {r['conc_p95']:.1f} ms",
            f"{r['warm_rate']:.1f} / {r['warm_p95']:.1f} ms",
            f"{r['cli_s']:.2f} s",
            "-" if r["requests"] is None else f"{r['requests']:.2f}",
            f"{r['sigterm_exit_s']:.2f} s (status {r['sigterm_status']})",
            "met" if r["p95"] <= 50 else "NOT met",
        )
    console.print(t)
    (RESULTS / "bench_serve.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
