"""A local stand-in reranker server for tests: real sockets, real HTTP, the common ``/rerank``
wire format (Cohere/Jina style): ``POST /rerank`` (or ``/v1/rerank``, ``/v2/rerank``) with
``{"query", "documents", "top_n"?}`` -> ``{"results": [{"index", "relevance_score"}]}``, best
first. ``POST /tei/rerank`` answers TEI's native format (``{"query", "texts"}`` ->
``[{"index", "score"}]``).

Scores are word overlap: the number of distinct query words (3+ letters, lower case) found in the
document, divided by ``1 + log(1 + words in the document)`` so a short exact ticket beats a long
section that merely mentions the words. Every request is recorded for assertions.
"""

from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_WORD = re.compile(r"[a-z0-9_]{3,}")


def overlap_score(query: str, document: str) -> float:
    q = set(_WORD.findall(query.lower()))
    words = _WORD.findall(document.lower())
    return len(q & set(words)) / (1.0 + math.log1p(len(words)))


class RerankStandIn:
    """The server; a context manager. ``requests`` holds ``(path, body)`` of every POST;
    ``status`` (default 200) lets a test make it fail."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.status = 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                outer.requests.append((self.path, body))
                if outer.status != 200:
                    return self._send(outer.status, {"message": "stand-in reranker error"})
                if self.path == "/tei/rerank":
                    scores = [overlap_score(body["query"], t) for t in body["texts"]]
                    ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
                    return self._send(200, [{"index": i, "score": scores[i]} for i in ranked])
                if not self.path.endswith("/rerank"):
                    return self._send(404, {"message": f"no route {self.path}"})
                docs = body["documents"]
                scores = [overlap_score(body["query"], d if isinstance(d, str) else d.get("text", "")) for d in docs]
                ranked = sorted(range(len(scores)), key=lambda i: -scores[i])[: body.get("top_n") or len(docs)]
                self._send(
                    200,
                    {
                        "id": "standin",
                        "results": [{"index": i, "relevance_score": scores[i]} for i in ranked],
                        "meta": {"billed_units": {"search_units": 1}},
                    },
                )

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="rerank-standin")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/rerank"

    def __enter__(self) -> RerankStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
