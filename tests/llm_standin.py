"""A local stand-in LLM server for tests: real sockets, real HTTP, the Ollama and OpenAI wire
formats, replies that are scripted or computed.

Endpoints: ``POST /api/chat`` and ``POST /api/generate`` (Ollama, ``stream: false``),
``POST /v1/chat/completions`` (OpenAI), ``GET /api/tags`` and ``GET /v1/models``. Every request
is recorded (path, JSON body, prompt text, seed) for assertions.

With ``context_window=N`` it behaves like a real server with an N-token window: a chat whose
prompt (cl100k tokens) plus its ``max_tokens``/``num_predict`` exceeds N gets HTTP 400 ("This
model's maximum context length is N tokens. However, you requested M tokens..."), and it reports
N where real servers do: Ollama's ``POST /api/show`` (``parameters`` ``num_ctx N``), llama.cpp's
``GET /props`` (``default_generation_settings.n_ctx``) and vLLM's ``GET /v1/models``
(``max_model_len``); ``report_window=False`` keeps it silent about N.

What a request gets, in order of precedence:
1. the next reply queued with :meth:`StandIn.queue` (FIFO, any prompt);
2. the replies routed with :meth:`StandIn.route` to prompts containing a marker, per seed;
3. the ``responder`` function (default :func:`fake_model`, a deterministic "model" that answers
   enrichment, context, per-field and consolidation prompts with plausible, valid output).

A :class:`Reply` can carry text (possibly malformed JSON), ``None`` content, an HTTP error
status, a raw body (not JSON at all), or a delay longer than the client's timeout. Token counts
are cl100k counts of the prompt and the reply unless given, so E and CR input sizes compare as
real prompts would.

``RECORDED`` holds replies recorded from the smoke-test model (SmolLM2-135M-Instruct Q4_1
served by llama-cpp-python) for replay: weak JSON exactly as such a model writes it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from esrag.tokens import count_tokens


@dataclass
class Reply:
    """One scripted reply. ``content=None`` sends a null content; ``status`` ≠ 200 sends an
    error body in the API's format; ``raw`` sends these bytes as the body (status 200, JSON
    content type); ``delay`` waits that many seconds first (a timeout when above the client's)."""

    content: str | None = ""
    status: int = 200
    delay: float = 0.0
    raw: bytes | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None


@dataclass
class Request:
    """A recorded request."""

    path: str
    body: dict[str, Any]
    prompt: str
    seed: int | None
    at: float = field(default_factory=time.monotonic)
    finished: float = 0.0


def _prompt_of(path: str, body: dict[str, Any]) -> str:
    if path == "/api/generate":
        return str(body.get("prompt", ""))
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def _seed_of(path: str, body: dict[str, Any]) -> int | None:
    if path.startswith("/api/"):
        return (body.get("options") or {}).get("seed")
    return body.get("seed")


class StandIn:
    """The server. Use as a context manager or call :meth:`start` / :meth:`stop`.

    Args:
        responder: computes a reply for requests nothing is queued or routed for.
    """

    def __init__(
        self, responder: Callable[[Request], Reply] | None = None, context_window: int | None = None, report_window: bool = True
    ) -> None:
        self.responder = responder or fake_model
        #: like a real server: a request whose prompt (cl100k) plus its max_tokens exceeds this
        #: many tokens gets HTTP 400; reported by /api/show, /props and /v1/models when ``report_window``
        self.context_window = context_window
        self.report_window = report_window
        self.requests: list[Request] = []
        self._queue: deque[Reply] = deque()
        self._routes: list[tuple[str, dict[int | None, deque[Reply]]]] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> StandIn:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="llm-standin")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def queue(self, *replies: Reply | str) -> None:
        """Replies for the next requests, whatever they ask (a str is a 200 reply)."""
        with self._lock:
            self._queue.extend(r if isinstance(r, Reply) else Reply(r) for r in replies)

    def route(self, marker: str, replies: dict[int | None, Reply | str | list[Reply | str]]) -> None:
        """For prompts containing ``marker``: per seed, the reply (or replies, in order) to send;
        the key None matches any seed. Routes are tried in the order added."""
        table: dict[int | None, deque[Reply]] = {}
        for seed, rs in replies.items():
            items = rs if isinstance(rs, list) else [rs]
            table[seed] = deque(r if isinstance(r, Reply) else Reply(r) for r in items)
        with self._lock:
            self._routes.append((marker, table))

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self._routes.clear()
            self.max_in_flight = 0

    def calls(self, path_prefix: str = "") -> list[Request]:
        """Recorded requests whose path starts with ``path_prefix``."""
        with self._lock:
            return [r for r in self.requests if r.path.startswith(path_prefix)]

    def requested_tokens(self, path: str, body: dict[str, Any], prompt: str) -> int:
        """What a request asks of the window: its prompt's cl100k tokens plus its output limit."""
        limit = (
            (body.get("options") or {}).get("num_predict")
            if path.startswith("/api/")
            else (body.get("max_tokens") or body.get("max_completion_tokens"))
        )
        return count_tokens(prompt) + int(limit or 0)

    def _too_long(self, path: str, body: dict[str, Any], req: Request) -> bool:
        return bool(self.context_window) and self.requested_tokens(path, body, req.prompt) > self.context_window

    def _choose(self, req: Request) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            for marker, table in self._routes:
                if marker in req.prompt:
                    for key in (req.seed, None):
                        q = table.get(key)
                        if q:
                            return q.popleft() if len(q) > 1 else q[0]
        return self.responder(req)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                window = standin.context_window if standin.report_window else None
                if self.path == "/api/tags":
                    self._send(200, {"models": [{"name": "qwen2.5:7b", "model": "qwen2.5:7b"}]})
                elif self.path == "/v1/models":
                    model = {"id": "standin", "object": "model", **({"max_model_len": window} if window else {})}
                    self._send(200, {"object": "list", "data": [model]})
                elif self.path == "/props" and window:  # llama.cpp's server
                    self._send(200, {"default_generation_settings": {"n_ctx": window}, "total_slots": 1})
                else:
                    self._send(404, {"error": f"no route {self.path}"})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": "request body is not JSON"})
                    return
                path = self.path.split("?")[0]
                if path == "/api/show":  # Ollama: the model's details
                    window = standin.context_window if standin.report_window else None
                    self._send(
                        200,
                        {
                            "model_info": {"qwen2.context_length": 32768},
                            "parameters": f'num_ctx {window}\nstop "<|im_end|>"' if window else 'stop "<|im_end|>"',
                        },
                    )
                    return
                if path not in ("/api/chat", "/api/generate", "/v1/chat/completions"):
                    self._send(404, {"error": f"no route {path}"})
                    return
                req = Request(path, body, _prompt_of(path, body), _seed_of(path, body))
                with standin._lock:
                    standin.requests.append(req)
                    standin.in_flight += 1
                    standin.max_in_flight = max(standin.max_in_flight, standin.in_flight)
                try:
                    if standin._too_long(path, body, req):
                        self._reject(path, body, req)
                        return
                    reply = standin._choose(req)
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._answer(path, body, req, reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)
                finally:
                    req.finished = time.monotonic()
                    with standin._lock:
                        standin.in_flight -= 1

            def _reject(self, path: str, body: dict[str, Any], req: Request) -> None:
                asked, window = standin.requested_tokens(path, body, req.prompt), standin.context_window
                message = (
                    f"This model's maximum context length is {window} tokens. However, you requested {asked} tokens. "
                    "Please reduce the length of the messages or completion."
                )
                self._send(
                    400,
                    {"error": message}
                    if path.startswith("/api/")
                    else {"error": {"message": message, "type": "invalid_request_error", "code": 400}},
                )

            def _answer(self, path: str, body: dict[str, Any], req: Request, reply: Reply) -> None:
                if reply.raw is not None:
                    self._send_bytes(200, reply.raw)
                    return
                model = body.get("model", "")
                if reply.status != 200:
                    err = (
                        {"error": "stand-in server error"}
                        if path.startswith("/api/")
                        else {"error": {"message": "stand-in server error", "type": "server_error", "code": reply.status}}
                    )
                    self._send(reply.status, err)
                    return
                text = reply.content
                n_in = reply.tokens_in if reply.tokens_in is not None else count_tokens(req.prompt)
                n_out = reply.tokens_out if reply.tokens_out is not None else count_tokens(text or "")
                if path == "/v1/chat/completions":
                    self._send(
                        200,
                        {
                            "id": f"chatcmpl-{len(standin.requests)}",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": model,
                            "system_fingerprint": "standin",
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
                            ],
                            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
                        },
                    )
                    return
                common = {
                    "model": model,
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": 1_000_000,
                    "load_duration": 1000,
                    "prompt_eval_count": n_in,
                    "prompt_eval_duration": 500_000,
                    "eval_count": n_out,
                    "eval_duration": 400_000,
                }
                if path == "/api/chat":
                    self._send(200, {**common, "message": {"role": "assistant", "content": text}})
                else:
                    self._send(200, {**common, "response": text, "context": [1, 2, 3]})

            def _send(self, status: int, obj: Any) -> None:
                self._send_bytes(status, json.dumps(obj).encode())

            def _send_bytes(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


# -- the default "model" --------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z][A-Za-z_]{3,}")
_STOP = set(
    "this that with from have will your when what which there their then than them they into also "
    "each only other more some such these those about after before should would could using used "
    "file files method methods value values example following within where while does make".split()
)


def _between(text: str, start: str, end: str) -> str:
    a = text.find(start)
    if a < 0:
        return ""
    a += len(start)
    b = text.find(end, a)
    return text[a : b if b >= 0 else None].strip()


def _line_after(text: str, label: str) -> str:
    m = re.search(rf"^{re.escape(label)}\s*(.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def _top_words(text: str, n: int) -> list[str]:
    counts = Counter(w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP)
    return [w for w, _ in counts.most_common(n)]


def fake_enrichment(prompt: str) -> dict[str, Any]:
    """Plausible enrichment fields computed from an enrich prompt: the key is the section's
    last title (so chunks of one section share a key), related keys are listed keys whose
    words occur in the chunk."""
    section = _line_after(prompt, "Section path:")
    chunk = _between(prompt, "<<<\n", "\n>>>")
    leaf = section.split(" > ")[-1] if section and section != "(no section)" else "preamble"
    words = _top_words(chunk, 8) or ["content", "documentation", "markdown", "chunk", "section"]
    keywords = (words + ["laravel", "documentation", "framework", "php", "guide"])[:6]
    dictionary = _between(prompt, "(specific subtopics of earlier chunks):\n", "\n\nAnswer")
    listed = [m.group(1) for m in re.finditer(r"^- (.+) \(seen \d+x\)$", dictionary, re.M)]
    related = [k for k in listed if any(w in chunk.lower() for w in k.split()) and k != leaf.lower()][:2]
    first_words = " ".join(chunk.split()[:30])
    return {
        "title": f"{leaf} details"[:60],
        "summary": f"Explains {leaf.lower()}: {first_words}",
        "keywords": keywords,
        "questions": [f"How does {leaf.lower()} work?", f"What is {words[0]} used for?"],
        "entities": sorted({w for w in re.findall(r"\b[A-Z][a-zA-Z]+\b", chunk)})[:5],
        "key": leaf.lower(),
        "related_keys": related,
    }


_CONTENT = re.compile(r"[a-z0-9_:]{4,}")
_QUESTION_STOP = _STOP | {"how", "does", "what", "when", "why", "who", "after", "into", "need", "want", "there"}


def fake_reformulations(prompt: str) -> dict[str, Any]:
    """Reformulations of a reformulate_v1 prompt's query: word-order and wording variants."""
    query = _line_after(prompt, "Query:")
    n = int(re.search(r"Write (\d+) reformulations", prompt).group(1)) if re.search(r"Write (\d+) reformulations", prompt) else 5
    words = query.rstrip("?.!").split()
    variants = [
        f"how to {query.rstrip('?')}",
        " ".join(reversed(words)),
        f"{query.rstrip('?')} in Laravel",
        f"Laravel documentation: {query.rstrip('?')}",
        f"fix for {query.rstrip('?')}",
        f"{query.rstrip('?')} explained",
    ]
    return {"reformulations": variants[:n]}


def fake_answer(prompt: str) -> dict[str, Any]:
    """A grounded "answer" to an answer_v1 prompt: the passage sharing most content words with the
    question answers it (its first sentence, citing its section path) when it holds at least 60%
    of them; otherwise the model abstains."""
    question = prompt.rsplit("Question:", 1)[1].split("\n", 1)[0].strip()
    asked = {w for w in _CONTENT.findall(question.lower()) if w not in _QUESTION_STOP}
    best, best_hits = None, 0
    for m in re.finditer(r"^Section: (.*?) \(lines \d+-\d+\)\n(.*?)(?=\n\nSection: |\n\n---\n\n|\n\nQuestion:)", prompt, re.M | re.S):
        found = {w for w in asked if w in m.group(2).lower()}
        if len(found) > best_hits:
            best, best_hits = m, len(found)
    if best is None or not asked or best_hits < 0.6 * len(asked):
        return {"answer": "The sources do not answer this question.", "abstained": True, "citations": []}
    text = " ".join(best.group(2).split())
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:300]
    return {"answer": f"According to the documentation: {sentence}", "abstained": False, "citations": [best.group(1)]}


def fake_model(req: Request) -> Reply:
    """The default responder: valid answers for every esrag prompt, ``{}`` otherwise."""
    p = req.prompt
    if "reformulations of the query below" in p:
        return Reply(json.dumps(fake_reformulations(p)))
    if p.startswith("You answer questions using ONLY the sources below"):
        return Reply(json.dumps(fake_answer(p)))
    if "Keys already assigned in this document" in p:
        return Reply(json.dumps(fake_enrichment(p)))
    if p.startswith("<document>"):
        doc = _between(p, "<document>\n", "\n</document>")
        title = next((line.lstrip("# ").strip() for line in doc.splitlines() if line.startswith("# ")), "the document")
        chunk = _between(p, "<chunk>\n", "\n</chunk>")
        return Reply(f"This chunk is from {title}; it covers {' '.join(chunk.split()[:12])}.")
    if "with exactly this field:" in p:
        name = _between(p, '{\n  "', '"')
        full = fake_enrichment(p.replace("with exactly this field", "Keys already assigned in this document"))
        return Reply(json.dumps({name: full.get(name)}))
    if '"mapping"' in p:
        keys = [k for k in _between(p, "Keys:\n", "\n\nMap").splitlines() if k]
        canon: dict[str, str] = {}
        first_word: dict[str, str] = {}
        for k in keys:
            canon[k] = first_word.setdefault(k.split()[0], k)
        return Reply(json.dumps({"mapping": canon}))
    return Reply("{}")


# -- replies recorded from the smoke-test model (SmolLM2-135M-Instruct Q4_1, llama-cpp-python) -----
# Recorded 2026-11-29 from E prompts (enrich_v1) on Laravel chunks, max_tokens 200/256, temperature 0.
RECORDED: dict[str, str] = {
    "schema_echo_no_key": (
        "{\n"
        '  "title": "a short descriptive title for this chunk, 3 to 8 words",\n'
        '  "summary": "one or two sentences (30 to 60 words) on what this chunk says that the other chunks do not; do not repeat it in a single sentence.",\n'
        '  "keywords": ["5 to 8 specific terms or phrases from the domain"],\n'
        '  "questions": ["2 to 3 specific questions that this chunk answers"],\n'
        '  "entities": ["named things in the domain", "tools, products, functions, classes, people, places"]\n'
        "}"
    ),
    "schema_echo_example_keys_as_entities": (
        "{\n"
        '  "title": "a short descriptive title for this chunk, 3 to 8 words",\n'
        '  "summary": "one or two sentences (30 to 60 words) on what this chunk says that the other chunks do not; do not repeat it in a single sentence.",\n'
        '  "keywords": ["5 to 8 specific terms or phrases from the chunk\'s domain"],\n'
        '  "questions": ["2 to 3 specific questions that this chunk answers"],\n'
        '  "entities": ["named things in the chunk: tools, products, functions, classes, people, places", "admissions process", "gradient descent optimization", "oauth token flow", "q3 revenue breakdown"]\n'
        "}"
    ),
    "truncated_at_max_tokens_questions_as_objects": (
        "{\n"
        '  "title": "Task Scheduling",\n'
        '  "summary": "A task scheduling document that outlines the process of planning and executing tasks, including how to schedule tasks based on specific criteria such as deadlines, resource allocation, and performance metrics.",\n'
        '  "keywords": ["task scheduling", "schedule frequency options"],\n'
        '  "questions": [\n'
        "    {\n"
        '      "id": "1234567890-1.html#description-of-the-document-content-and-structure-for-a-list of-specific-keywords-that-are-important-to-this-task-scheduling",\n'
        '      "type": "section_title"\n'
        "    },\n"
        "    {\n"
        '      "id": "234567890.html#description-of-the-document-content-and-structure-for-a-list of-specific-keywordsthat-are-importanttothis-taskscheduling",\n'
        '      "type": "section_title"\n'
        "    },\n"
        "  {\n"
        '    "id": "34567890.html#description-of-the-document-content-and-structure-for-a-list of-specifickeywordsthatisveryimportanttothis'
    ),
}


def counting_responder(counter: defaultdict[str, int] | None = None) -> Callable[[Request], Reply]:
    """:func:`fake_model`, counting requests per path in ``counter``."""
    counter = counter if counter is not None else defaultdict(int)

    def respond(req: Request) -> Reply:
        counter[req.path] += 1
        return fake_model(req)

    return respond


def laravel_dir():
    """The shared Laravel docs (``ESRAG_SHARED_DIR``, ``<project>/../shared`` or ``/work/shared``)."""
    import os
    from pathlib import Path

    project = Path(__file__).resolve().parents[1]
    for base in (os.environ.get("ESRAG_SHARED_DIR"), project.parent / "shared", "/work/shared"):
        if base and (Path(base) / "data" / "corpora" / "laravel-docs").is_dir():
            return Path(base) / "data" / "corpora" / "laravel-docs"
    raise RuntimeError("cannot find shared/data/corpora/laravel-docs; set ESRAG_SHARED_DIR")
