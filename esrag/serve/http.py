"""``esrag serve``: the HTTP JSON API (FastAPI on uvicorn) and the search page at ``/``.

Routes (OpenAPI at ``/openapi.json``, docs at ``/docs``):

* ``GET /search?q=&k=&mode=&corpus=&doc_version=&budget=&token_budget=&expand=&explain=`` and
  ``POST /search`` (a JSON body with the same fields) -> ``{"hits": [...], "timings_ms": {...}}``,
  the hits in the ``esrag search --json`` form (:func:`esrag.service.hit_json`, each with its
  ``doc_version``) and ``versions`` (``{corpus: version}``) when a corpus of several versions was
  searched in its default one only (``doc_version=*`` searches every version); with ``explain``
  also ``fusion`` (and ``diagnostics``/``notes`` when there are any). ``budget`` packs the hits'
  source text; ``token_budget`` bounds the whole JSON body (cl100k tokens; hits left out are
  counted in ``left_out``, a hit shortened at a block boundary has ``truncated``).
* ``POST /ask`` ``{"question", "corpus"?, "budget"?}`` -> the ``esrag ask --json`` answer.
* ``GET /pages/{path}?corpus=&doc_version=&section=&offset=&token_budget=`` ->
  :meth:`esrag.pages.Page.to_dict` plus ``versions`` (the versions holding the page; the one
  returned is ``doc_version``: the one asked for, else the corpus's default). ``path`` is a
  source path (with or without the docs root prefix) or the page's URL. With ``section``,
  ``offset`` or ``token_budget`` only that part of the page (:func:`esrag.pages.page_window`),
  with ``start_line``, ``end_line``, ``complete`` and ``left_out`` added.
* ``GET /corpora`` -> ``{"corpora": {name: {"chunks", "sources", "versions", "default_version"}}}``
  (with a key per corpus only its corpora: docs/serving.md "Keys per corpus"). ``GET /corpora?q=NAME``:
  only the corpora the library name ``NAME`` names, in rank order, and ``"libraries"``: the
  ranked matches (:func:`esrag.libraries.resolve_library`).
* ``GET /corpora/{corpus}/llms.txt`` and ``/corpora/{corpus}/llms-full.txt`` (``?doc_version=``)
  -> the corpus's llms.txt files as ``esrag export llms-txt`` writes them (:mod:`esrag.llms_txt`,
  ``text/markdown``); ``GET /corpora/{corpus}/{site path}.md`` -> one page as Markdown;
  ``GET /llms.txt`` / ``/llms-full.txt`` -> the one corpus's files, or (several corpora) an
  llms.txt linking each corpus's. Unknown corpus, version or page: 404 with one line.
* ``GET /health`` -> store reachable, model loaded (200 when both, else 503).
* ``POST /sync/{source}`` -> 202 ``{"source", "state": "queued"|"running", "coalesced"}``: a
  sync of ``[sources.NAME]`` queued on the server's :class:`~esrag.serve.sync.SyncRunner` (a
  webhook for pushes). Needs a key that may sync it (``[serve.keys.NAME] sync``, or the single
  ``--api-key``): none or a wrong one is 401, a source unknown or not the key's is 404 in the
  same words. ``GET /sync`` -> ``{"interval", "sources": {name: {"state", "started_at",
  "finished_at", "error", "versions": {version: ...}}}}`` (:func:`esrag.gitsync.sync_status`),
  only the sources the key may read or sync. docs/hub.md "Keep it fresh while serving".

Every request of the process shares one :class:`~esrag.service.SearchService` (one store
connection, one warm query embedder); handlers are plain functions run on the server's thread
pool and keep nothing between requests. Errors are one-line JSON ``{"error": "..."}``: 422 for a
bad field (bounded by :class:`~esrag.serve.security.Limits`), 413 for an oversized body, 404 for
an unknown corpus or page, 401 without the API key, 503 when the store or LLM is unreachable; no
stack trace or setting ever reaches a response.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import re
import signal
from collections.abc import Callable
from importlib import resources
from typing import Annotated, Any, Literal
from urllib.parse import quote

import anyio
import anyio.to_thread
import orjson
from fastapi import Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from esrag import __version__, llms_txt
from esrag.errors import (
    AnswerError,
    ConfigError,
    EsragError,
    ModelLoadError,
    NotIndexedError,
    PageNotFound,
    RerankError,
    StoreError,
)
from esrag.gitsync import sync_status
from esrag.llm.clients import LLMError
from esrag.search.searcher import QUERY_BATCH
from esrag.serve.responses import candidate_budget, pack_json, page_json
from esrag.serve.security import ACCESS_SCOPE_KEY, LIMITS, BodyLimit, KeyRing, Limits, RequireKey, request_access
from esrag.serve.sync import SyncRunner, never_run
from esrag.service import SearchRequest, SearchService, UnknownCorpus, result_json
from esrag.urls import scrub_credentials

log = logging.getLogger("esrag.serve")

_L = LIMITS
Name = Annotated[str, Field(min_length=1, max_length=200)]


def _not_bool(value: Any) -> Any:
    """Refuse ``true``/``false`` where a number is expected (pydantic's lax mode reads them as 1/0)."""
    if isinstance(value, bool):
        raise ValueError("expected an integer, got a boolean")
    return value


Int = Annotated[int, BeforeValidator(_not_bool)]
#: a language code as ``--lang`` takes it: ISO 639-1 (or a BCP 47 tag, reduced to its primary subtag by the search) or ``auto``
Lang = Annotated[str, Field(min_length=2, max_length=35, pattern=r"^(?:auto|[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*)$")]


class SearchParams(BaseModel):
    """The fields of ``/search`` (query string or JSON body)."""

    model_config = ConfigDict(extra="forbid")

    q: str = Field(min_length=1, max_length=_L.query_chars, description="The question or keywords.")
    k: Int | None = Field(None, ge=1, le=_L.k, description="Hits (default [search] k).")
    mode: Literal["hybrid", "bm25", "dense"] | None = None
    corpus: list[Name] = Field(default_factory=list, max_length=20, description="Only these corpora (repeatable).")
    doc_version: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Only this documentation version. Default: each corpus's default version; '*': every version.",
    )
    budget: Int | None = Field(None, ge=1, le=_L.budget, description="Pack hits to N cl100k tokens of source text.")
    token_budget: Int | None = Field(
        None,
        ge=100,
        le=_L.budget,
        description=(
            "Bound the whole JSON response to N cl100k tokens: hits that do not fit are left out (counted in left_out) "
            "or shortened at a block boundary (truncated)."
        ),
    )
    expand: str | None = Field(None, max_length=100, description="neighbours:W, parent or auto-merge:M.")
    explain: bool = Field(False, description="Add the fusion and diagnostics (each hit's legs are always there).")
    lang: list[Lang] = Field(
        default_factory=list,
        max_length=10,
        description=(
            "Only chunks in this language (ISO 639-1, repeatable; 'auto': the query's language). Default: [language] filter; "
            "with neither, a site's translated pages are left out (each site in its default locale)."
        ),
    )

    @field_validator("corpus", "lang", mode="before")
    @classmethod
    def _one_corpus(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class AskParams(BaseModel):
    """The body of ``POST /ask``."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=_L.query_chars)
    corpus: list[Name] = Field(default_factory=list, max_length=20)
    budget: Int | None = Field(None, ge=1, le=_L.budget)

    _one_corpus = field_validator("corpus", mode="before")(lambda cls, v: [v] if isinstance(v, str) else v)


def _status(exc: EsragError) -> int:
    """The HTTP status of a library error: 404 unknown corpus, 422 bad value, 409 nothing indexed
    yet, 503 store/model/LLM unreachable, 502 the LLM gave no usable answer."""
    if isinstance(exc, UnknownCorpus):
        return 404
    if isinstance(exc, (StoreError, ModelLoadError, RerankError)):
        return 503
    if isinstance(exc, NotIndexedError):
        return 409
    if isinstance(exc, ConfigError):
        return 422
    if isinstance(exc, AnswerError):
        return 502
    return 503 if isinstance(exc, LLMError) else 422


def _one_line(text: str) -> str:
    return scrub_credentials(" ".join(str(text).split()))[:500]


class FastJSON(JSONResponse):
    """JSON by orjson straight from plain dicts (no ``jsonable_encoder`` pass: ~5 ms less per
    search response of ten hits with their text)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def error(status: int, message: str) -> JSONResponse:
    """The one error shape: ``{"error": "<one line>"}``."""
    return JSONResponse({"error": _one_line(message)}, status_code=status)


def page_html() -> tuple[str, str]:
    """The search page and its Content-Security-Policy (inline script and style allowed by hash only)."""
    html = resources.files("esrag.serve").joinpath("page.html").read_text(encoding="utf-8")
    hashes = {}
    for tag in ("script", "style"):
        m = re.search(rf"<{tag}>(.*?)</{tag}>", html, re.S)
        digest = hashlib.sha256(m.group(1).encode()).digest() if m else b""
        hashes[tag] = base64.b64encode(digest).decode()
    csp = (
        f"default-src 'none'; script-src 'sha256-{hashes['script']}'; style-src 'sha256-{hashes['style']}'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    return html, csp


#: where ``/docs`` and ``/redoc`` load their scripts and styles from: this server, never a CDN
DOCS_ASSETS = "/docs-assets"


def create_app(
    service: SearchService,
    *,
    api_key: str | KeyRing | None = None,
    cors_origins: list[str] | None = None,
    limits: Limits = LIMITS,
    syncer: SyncRunner | None = None,
) -> Any:
    """The ASGI app over ``service``: FastAPI routes inside the API-key check (everything but
    ``/`` and ``/health`` when a key is set; ``api_key`` a plain key or a
    :class:`~esrag.serve.security.KeyRing` with keys per corpus, whose requests see only their
    corpora), the body limit, and CORS only for ``cors_origins``; ``syncer`` runs the syncs
    ``POST /sync/{source}`` asks for (None: every source is unknown there)."""
    # /docs (Swagger UI) and /redoc with their assets served from the fastapi-offline package at
    # DOCS_ASSETS: FastAPI's own pages load them from a CDN, which a machine without internet cannot reach
    app = FastAPIOffline(title="esrag", version=__version__, description="Search an esrag documentation index.", static_url=DOCS_ASSETS)
    html, csp = page_html()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "body")) or "body"
        if first.get("type") == "json_invalid":
            return error(422, "body: not valid JSON")
        return error(422, f"{where}: {first.get('msg', 'invalid value')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(EsragError)
    async def esrag_error(request: Request, exc: EsragError) -> JSONResponse:
        return error(_status(exc), str(exc))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error(500, "internal error; see the server log")

    def within(request: Request) -> frozenset[str] | None:
        return request_access(request.scope).corpora

    def search_request(p: SearchParams) -> SearchRequest:
        budget = p.budget if p.budget is not None or p.token_budget is None else candidate_budget(p.token_budget)
        return SearchRequest(
            p.q,
            k=p.k,
            mode=p.mode,
            corpora=list(p.corpus),
            doc_version=p.doc_version,
            budget=budget,
            expand=p.expand,
            languages=list(p.lang),
        )

    def run_search(p: SearchParams, request: Request) -> Response:
        req = search_request(p)
        body = result_json(service.search(req, check_corpora=True, within=within(request)), explain=p.explain)
        if p.token_budget is None:
            return FastJSON(body)
        if p.k:
            body["hits"] = body["hits"][: p.k]
        return Response(pack_json(body, p.token_budget)[0], media_type="application/json")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(
            html, headers={"content-security-policy": csp, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"}
        )

    turns: dict[str, anyio.CapacityLimiter] = {}

    async def in_turn(p: SearchParams, request: Request) -> Response:
        """``run_search`` in a worker thread, at most ``service.search_slots`` at once, the
        others waiting in arrival order (anyio's limiter, made on the server's event loop);
        every worker thread when there is no limit. Why a limiter in front of the worker
        threads rather than behind them: waiting here costs nothing, while 8 threads taking
        turns inside a search (at the service's own slots) ran 215 searches/s at p95 56 ms
        against 239/s at p95 40 ms (8 clients, 2 cores, Laravel docs; issue 39). A search that
        will wait embeds its query first, in a worker thread outside the limiter
        (:meth:`esrag.service.SearchService.embed_ahead`): the waiting searches' queries go
        through the model together, in one forward pass. At most
        :data:`esrag.search.searcher.QUERY_BATCH` threads embed ahead at once (their own
        limiter, not the pool the other routes use); beyond them a search just waits."""
        if not service.search_slots:
            return await run_in_threadpool(run_search, p, request)
        if "search" not in turns:
            turns["search"] = anyio.CapacityLimiter(service.search_slots)
            turns["embed"] = anyio.CapacityLimiter(QUERY_BATCH)  # threads embedding ahead: no more than a pass takes
        limiter = turns["search"]
        if limiter.available_tokens < 1 and turns["embed"].available_tokens >= 1:  # it will wait: embed its query meanwhile
            ahead = functools.partial(service.embed_ahead, search_request(p), within(request))
            await anyio.to_thread.run_sync(ahead, limiter=turns["embed"])
        return await anyio.to_thread.run_sync(functools.partial(run_search, p, request), limiter=limiter)

    @app.get("/search", summary="Search (query string)", response_class=FastJSON)
    async def search_get(params: Annotated[SearchParams, Query()], request: Request) -> Response:
        return await in_turn(params, request)

    @app.post("/search", summary="Search (JSON body)", response_class=FastJSON)
    async def search_post(params: SearchParams, request: Request) -> Response:
        return await in_turn(params, request)

    @app.post("/ask", summary="Answer from the index (grounded, cited, abstains)")
    def ask(params: AskParams, request: Request) -> dict[str, Any]:
        return service.ask(params.question, list(params.corpus), params.budget, check_corpora=True, within=within(request)).to_dict()

    @app.get("/pages/{path:path}", summary="A page (or one section, or from a line) by source path or URL")
    def page(
        path: str,
        request: Request,
        corpus: Annotated[str | None, Query(max_length=200)] = None,
        doc_version: Annotated[str | None, Query(max_length=200)] = None,
        section: Annotated[str | None, Query(max_length=1000, description="Only this section (anchor or section path).")] = None,
        offset: Annotated[int | None, Query(ge=1, description="Start at this source line.")] = None,
        token_budget: Annotated[
            int | None, Query(ge=100, le=_L.budget, description=("Bound the whole JSON response to N cl100k tokens."))
        ] = None,
    ) -> Any:
        if len(path) > 1000:
            return error(422, "path: over 1000 characters")
        path = re.sub(r"^(https?):/+", r"\1://", path)  # a URL in the route's path loses one of its slashes
        scope = within(request)
        if corpus:
            service.check_corpora([corpus], scope)
        try:
            if section is None and offset is None and token_budget is None:
                found = service.page(path, corpus, doc_version, scope)
                if found is None:
                    return error(404, f"no page {path!r}")
                return FastJSON({**found.to_dict(), "versions": found.versions})
            fit, part = service.page_windows(path, corpus, doc_version, section=section, offset=offset, within=scope)
            text, _ = page_json(fit, token_budget, part, sections=True)
        except StoreError:
            raise
        except PageNotFound as exc:
            return error(404, f"{exc}; GET /corpora lists the corpora and their versions")
        except ConfigError as exc:
            return error(422, str(exc))
        except EsragError as exc:
            return error(404, str(exc))
        return Response(text, media_type="application/json")

    def markdown(text: str) -> Response:
        return Response(text, media_type="text/markdown; charset=utf-8")

    def llms(request: Request, corpus: str, doc_version: str | None, render: Callable[[Any], str]) -> Response:
        """``render`` of ``corpus``'s llms.txt site; 404 naming the indexed corpora (the key's) or versions."""
        if len(corpus) > 200:
            return error(422, "corpus: over 200 characters")
        try:
            return markdown(render(service.llms_site(corpus, doc_version, within(request))))
        except PageNotFound as exc:
            return error(404, str(exc))

    @app.get("/llms.txt", summary="llms.txt: the corpus's (one corpus) or a list of every corpus's", response_class=Response)
    def llms_root(request: Request) -> Response:
        corpora = service.corpora(fresh=True, within=within(request))
        if len(corpora) == 1:
            return llms(request, next(iter(corpora)), None, llms_txt.llms_txt)
        if not corpora:
            return error(404, "no corpus indexed yet; `esrag ingest` adds one")
        base = str(request.base_url)
        rows = [
            (name, f"{base}corpora/{quote(name, safe='')}/llms.txt", f"{row.get('sources', 0)} pages")
            for name, row in sorted(corpora.items())
        ]
        return markdown(llms_txt.corpora_llms_txt("esrag", rows))

    @app.get(
        "/llms-full.txt", summary="llms-full.txt of the one corpus (several: GET /corpora/{corpus}/llms-full.txt)", response_class=Response
    )
    def llms_full_root(request: Request) -> Response:
        corpora = service.corpora(fresh=True, within=within(request))
        if len(corpora) == 1:
            return llms(request, next(iter(corpora)), None, llms_txt.llms_full_txt)
        names = ", ".join(sorted(corpora)) or "(none)"
        return error(404, f"{len(corpora)} corpora indexed; GET /corpora/{{corpus}}/llms-full.txt for one of: {names}")

    @app.get("/corpora/{corpus}/llms.txt", summary="llms.txt of a corpus (llmstxt.org format)", response_class=Response)
    def llms_corpus(request: Request, corpus: str, doc_version: Annotated[str | None, Query(max_length=200)] = None) -> Response:
        return llms(request, corpus, doc_version, llms_txt.llms_txt)

    @app.get("/corpora/{corpus}/llms-full.txt", summary="Every page of a corpus as Markdown", response_class=Response)
    def llms_full_corpus(request: Request, corpus: str, doc_version: Annotated[str | None, Query(max_length=200)] = None) -> Response:
        return llms(request, corpus, doc_version, llms_txt.llms_full_txt)

    @app.get(
        "/corpora/{corpus}/{path:path}", summary="A page as Markdown at its site path + .md (as llms.txt links it)", response_class=Response
    )
    def page_md(request: Request, corpus: str, path: str, doc_version: Annotated[str | None, Query(max_length=200)] = None) -> Response:
        if len(path) > 1000:
            return error(422, "path: over 1000 characters")
        if not path.endswith(".md"):
            return error(404, f"no route {path!r} under /corpora/{corpus}/; pages are served at their site path + .md")

        def one(site: Any) -> str:
            found = site.page_at(path)
            if found is None:
                raise PageNotFound(f"no page {path!r} in corpus {corpus!r}; /corpora/{corpus}/llms.txt lists its pages")
            return llms_txt.page_markdown(found)

        return llms(request, corpus, doc_version, one)

    @app.get("/corpora", summary="Indexed corpora with chunk and source counts, versions and default version")
    def corpora(
        request: Request,
        q: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=200,
                description="A library name as a user writes it ('django', 'react router v6'): only the corpora it names, best first.",
            ),
        ] = None,
    ) -> dict[str, Any]:
        if q is None:
            return {"corpora": service.corpora(fresh=True, within=within(request))}
        found = service.libraries(q, within(request))
        rows = service.corpora(within=within(request))
        return {"corpora": {h["corpus"]: rows[h["corpus"]] for h in found}, "libraries": found}

    @app.post("/sync/{source}", status_code=202, summary="Sync a source now (a webhook; a key that may sync it)")
    def sync_now(source: str, request: Request) -> JSONResponse:
        if ACCESS_SCOPE_KEY not in request.scope:  # an open server: syncing always needs a key
            return error(401, "POST /sync needs a key that may sync the source ([serve.keys.NAME] sync, or --api-key)")
        if syncer is None or source not in service.settings.sources or not request_access(request.scope).may_sync(source):
            return error(404, f"no source {source[:200]!r} to sync with this key")
        return JSONResponse(syncer.request(source), status_code=202)

    @app.get("/sync", summary="Sync state of the sources, per version")
    def sync_state(request: Request) -> dict[str, Any]:
        access = request_access(request.scope)
        versions = sync_status(service.settings)
        names = sorted(n for n in set(service.settings.sources) | set(versions) if access.allows(n) or access.may_sync(n))
        return {
            "interval": syncer.interval if syncer else 0.0,
            "sources": {n: (syncer.state(n) if syncer else never_run()) | {"versions": versions.get(n, {})} for n in names},
        }

    @app.get("/health", summary="Store reachable, model loaded")
    def health() -> JSONResponse:
        h = service.health()
        return JSONResponse(h, status_code=200 if h["ok"] else 503)

    wrapped: Any = app
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        wrapped = CORSMiddleware(
            wrapped, allow_origins=cors_origins, allow_methods=["GET", "POST"], allow_headers=["authorization", "x-api-key", "content-type"]
        )
    wrapped = BodyLimit(wrapped, limits.body_bytes)
    return RequireKey(wrapped, api_key, open_paths=("/", "/health"))


def serve_log(log_level: str = "info") -> logging.Logger:
    """The ``esrag.serve`` log (errors, the key per request by name, sync outcomes) on stderr in
    uvicorn's line format, set up once; called before a server's sync thread starts, so its
    first round is logged too."""
    served = logging.getLogger("esrag.serve")
    if not served.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        served.addHandler(handler)
        served.propagate = False  # one line, also when a library configured the root logger (the MCP SDK does)
        served.setLevel(logging.INFO if log_level in ("info", "debug", "trace") else logging.WARNING)
    return served


def serve(app: Any, host: str, port: int, log_level: str = "info", on_listen: Callable[[int], None] | None = None) -> None:
    """Run ``app`` with uvicorn until SIGINT or SIGTERM; both shut down gracefully (in-flight
    requests finish, at most 5 s) and the process then exits with status 0. The ``esrag.serve``
    log (errors; the key per corpus of each request, by name) goes to stderr like uvicorn's.
    ``on_listen(port)`` is called once the socket is bound, with the port it got (the one
    the system chose for ``port`` 0), before the first request is accepted."""
    import uvicorn

    serve_log(log_level)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            if sig == signal.SIGTERM:  # a requested stop, not a crash: do not re-raise it afterwards
                self._captured_signals = [s for s in self._captured_signals if s != signal.SIGTERM]

    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5, server_header=False, proxy_headers=False
    )
    sock = config.bind_socket()
    if on_listen is not None:
        on_listen(int(sock.getsockname()[1]))
    Server(config).run(sockets=[sock])
