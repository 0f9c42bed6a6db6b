"""Helpers for the ``esrag serve`` / ``esrag mcp`` tests: a real index made by the real CLI, the
real server as a subprocess on a free port, and a counting HTTP proxy in front of Elasticsearch."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from paths import LARAVEL

ESRAG = str(Path(sys.executable).with_name("esrag"))
LARAVEL_FILES = ("routing.md", "queues.md", "scheduling.md", "cache.md", "validation.md", "blade.md")

EVIL = """# Evil <script>window.__pwned = 1</script> page

Some text with <img src=x onerror="window.__pwned = 2"> markup and a link
[click](javascript:window.__pwned=3) that a page must show as text, never run.

## Second <b onmouseover="window.__pwned=4">section</b>

Scheduling pwned payloads every minute is still just text here.
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    env.update(extra)
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([ESRAG, *args], env=clean_env(env), cwd=cwd, capture_output=True, text=True, timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"esrag {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def make_docs(base: Path) -> tuple[Path, Path]:
    """Six real Laravel pages in base/laravel and one hostile page in base/evil."""
    docs, evil = base / "laravel", base / "evil"
    docs.mkdir(parents=True)
    evil.mkdir()
    for name in LARAVEL_FILES:
        shutil.copy(LARAVEL / name, docs / name)
    (evil / "evil.md").write_text(EVIL, encoding="utf-8")
    return docs, evil


def ingest(env: dict[str, str], docs: Path, evil: Path) -> None:
    run_cli(["ingest", str(docs), "--corpus", "laravel", "--json"], env)
    run_cli(["ingest", str(evil), "--corpus", "evil", "--json"], env)


def indexed_env(base: Path) -> dict[str, str]:
    """``{"ESRAG_DB": ...}`` of a SQLite index under ``base`` holding :func:`make_docs`'s
    corpora ``laravel`` and ``evil``, ingested through the real CLI."""
    docs, evil = make_docs(base / "docs")
    env = {"ESRAG_DB": str(base / "index.db")}
    ingest(env, docs, evil)
    return env


class Server:
    """``esrag ARGS --port N`` as a subprocess; waits until ``ready_path`` answers."""

    def __init__(self, args: list[str], env: dict[str, str], ready_path: str = "/health", timeout: float = 180) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile("w+")  # the server's output, for failure messages
        self.proc = subprocess.Popen(
            [ESRAG, *args, "--port", str(self.port)], env=clean_env(env), stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited {self.proc.returncode}: {self.output()}")
            try:
                r = httpx.get(self.url + ready_path, timeout=2)
                if r.status_code < 500 or ready_path != "/health":
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"server not ready in {timeout} s: {self.output()}")
            time.sleep(0.3)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def stop(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class CountingProxy:
    """An HTTP proxy on a free port that forwards every request to ``target`` and counts them
    by (method, path without the query string)."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=60)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    proxy.counts[(self.command, self.path.split("?")[0])] += 1
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                r = proxy._client.request(self.command, proxy.target + self.path, content=body, headers=headers)
                data = r.content
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def snapshot(self) -> Counter:
        with self._lock:
            return Counter(self.counts)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()
