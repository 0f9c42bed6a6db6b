"""``esrag mcp``: the index as Model Context Protocol tools (official SDK, PyPI ``mcp`` 2.x,
where ``FastMCP`` became :class:`mcp.server.mcpserver.MCPServer`), over stdio or streamable HTTP.

Tools (all read-only, annotated ``readOnlyHint``; every argument typed strictly — ``true`` is
not an integer — with its meaning, default and limits in the tool's input schema):

* ``search_docs(query, corpus?, doc_version?, k?, token_budget?, format?)`` -> by default compact
  Markdown (per hit: the section path as a heading, the URL, the text); ``format="json"`` gives
  ``{"hits": [{section_path, url, anchor, source_path, start_line, end_line, text, corpus,
  doc_title, doc_version, score, tokens, truncated?}], "versions"?, "left_out"?}``. A corpus of
  several versions is searched in its default one (``versions``: ``{corpus: version}``, in
  Markdown a first line saying so); ``doc_version="*"`` searches every version. Either way the whole text
  holds at most ``token_budget`` cl100k tokens (default 2,000; :mod:`esrag.serve.responses`).
* ``get_page(path, corpus?, doc_version?, section?, offset?, token_budget?, format?)`` -> one copy
  of the page's text (or of one section, or from a line), at most ``token_budget`` cl100k tokens
  (default 4,000), with what was left out and the calls that read the rest. ``path`` is a
  source path (with or without the docs root prefix) or the page's URL as search returns it.
* ``list_corpora()`` -> ``{"corpora": {name: {"chunks", "sources", "versions", "default_version"}}}``.
* ``resolve_library(name)`` -> ``{"name", "libraries": [{"corpus", "score", "matched", "versions",
  "default_version", "version"?, ...}]}``: the corpora a library name means
  (:func:`esrag.libraries.resolve_library`).

Over HTTP with keys per corpus every tool sees only the corpora of the request's key (:func:`within`).

Session memory (opt-in: ``esrag mcp --session-memory`` or ``[mcp] session_memory``): within one
MCP session (:func:`session_of`) ``search_docs`` and ``get_page`` leave out the chunks already
sent whole, name them (Markdown lines; JSON ``"already_sent"``; in a page one line in place) and
take ``resend=true`` to send them again (:mod:`esrag.serve.session_memory`). Off, a repeated
call answers the same.

The text the tools return is one ``TextContent`` (no duplicate structured copy), so the
budget bounds what the client receives. Errors (empty query, unknown corpus or page, store
down, bad arguments) come back as tool errors whose text is a one-line reason naming the next
step in terms of these tools; the server keeps running. The server's instructions tell the
agent which corpora the index holds and how many chunks each has.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field, ValidationError
from starlette.requests import Request

from esrag import __version__
from esrag.errors import EsragError, PageNotFound
from esrag.pages import page_window
from esrag.serve.responses import (
    DEFAULT_PAGE_BUDGET,
    DEFAULT_SEARCH_BUDGET,
    HIT_FIELDS,
    candidate_budget,
    code_examples,
    pack_json,
    page_json,
    page_markdown,
    search_markdown,
    search_outline,
)
from esrag.serve.security import LIMITS, KeyRing, request_access
from esrag.serve.session_memory import (
    MAX_LISTED,
    RESEND_HINT,
    Sent,
    SessionMemory,
    leave_out_sent,
    left_out_lines,
    page_without_sent,
    record_page,
    record_search,
)
from esrag.service import SearchRequest, SearchService, hit_json, versions_note
from esrag.urls import scrub_credentials

DEFAULT_TOKEN_BUDGET = DEFAULT_SEARCH_BUDGET
"""cl100k tokens of a whole ``search_docs`` response when the agent gives no budget."""
MIN_TOKEN_BUDGET = 100
"""The smallest ``token_budget`` the tools accept (a heading, a URL and a few lines)."""

Query = Annotated[
    str,
    Field(min_length=1, max_length=LIMITS.query_chars, description=f"A question or keywords (at most {LIMITS.query_chars:,} characters)."),
]
CorpusArg = Annotated[str | None, Field(max_length=200, description="Only this corpus (list_corpora names them). Default: all.")]
Count = Annotated[
    int | None,
    Field(
        strict=True, ge=1, le=LIMITS.k, description=(f"At most this many sections (1-{LIMITS.k}). Default: as many as fit token_budget.")
    ),
]
Format = Annotated[
    Literal["markdown", "json"],
    Field(description=("'markdown': compact text for reading; 'json': the same content as structured fields. Default: 'markdown'.")),
]
SearchFormat = Annotated[
    Literal["markdown", "json", "outline"],
    Field(
        description=(
            "'markdown': compact text for reading; 'json': the same content as structured fields; 'outline': section paths, "
            "URLs and one line per hit, to choose before reading (get_page reads one). Default: 'markdown'."
        )
    ),
]
Resend = Annotated[
    bool,
    Field(
        strict=True,
        description=(
            "With session memory on (esrag mcp --session-memory): true sends again the sections already sent in this session "
            "(otherwise left out and named). Default: false."
        ),
    ),
]
Kind = Annotated[
    Literal["all", "code"],
    Field(description="'code': only the code examples of each hit, under its section path and URL. Default: 'all'."),
]


_SEARCH_BUDGET_TEXT = (
    f"Most cl100k tokens of the whole response ({MIN_TOKEN_BUDGET}-{LIMITS.budget:,}), counted over "
    "everything returned; sections that do not fit are left out or shortened at a paragraph boundary. "
    f"Default: {DEFAULT_SEARCH_BUDGET:,}."
)
_PAGE_BUDGET_TEXT = (
    f"Most cl100k tokens of the whole response ({MIN_TOKEN_BUDGET}-{LIMITS.budget:,}); what does not "
    f"fit is named with the call that reads it. Default: {DEFAULT_PAGE_BUDGET:,}."
)
SearchBudget = Annotated[int | None, Field(strict=True, ge=MIN_TOKEN_BUDGET, le=LIMITS.budget, description=_SEARCH_BUDGET_TEXT)]
PageBudget = Annotated[int | None, Field(strict=True, ge=MIN_TOKEN_BUDGET, le=LIMITS.budget, description=_PAGE_BUDGET_TEXT)]


def validation_line(exc: Exception) -> str:
    """A pydantic ``ValidationError`` of tool arguments as one line naming the argument, the
    rule and the value given (``k: Input should be less than or equal to 100 (got 1000)``)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    first: dict[str, Any] = dict(errors[0]) if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
    given = first.get("input")
    shown = repr(given) if not isinstance(given, (dict, str)) or len(repr(given)) < 80 else repr(given)[:77] + "..."
    extra = f" (got {shown})" if first.get("type") != "missing" else ""
    return _one_line(f"{where}: {first.get('msg', 'invalid value')}{extra}")


def instructions(service: SearchService, listed: bool = True) -> str:
    """The server's instructions: what the index holds (corpora and chunk counts; with
    ``listed`` False — keys per corpus, where the instructions are the same for every key — only
    that list_corpora names them) and how to use the tools."""
    try:
        corpora = service.corpora(fresh=True) if listed else {}
        held = ", ".join(f"{name} ({row['chunks']:,} chunks, {row['sources']:,} pages)" for name, row in corpora.items())
        held = held if listed else "those this key may read (list_corpora names them)"
    except EsragError as exc:
        held = f"unknown right now ({' '.join(str(exc).split())[:200]})"
    return (
        "Search indexed documentation with esrag (BM25 + embeddings fused by reciprocal rank fusion). "
        f"Corpora: {held or '(none yet)'}. Use search_docs with a natural-language question (optionally one "
        "corpus) to get the most relevant sections, each with its section path, URL and text; token_budget caps "
        "the whole response in cl100k tokens. Use get_page with a hit's URL (or source path) to read the page "
        "around it, one budgeted window at a time (section= or offset= as its note says), and list_corpora to see "
        "what is indexed and which documentation versions each corpus has; resolve_library maps a library name "
        "as the user wrote it ('Django 5') to a corpus and version. All tools are read-only."
    )


def _one_line(exc: Exception | str) -> str:
    return scrub_credentials(" ".join(str(exc).split()))[:500] or type(exc).__name__


def within(ctx: Context) -> frozenset[str] | None:
    """The corpora the request behind a tool call may read (None = every corpus): the
    :class:`~esrag.serve.security.Access` :class:`~esrag.serve.security.RequireKey` put on the
    HTTP request; over stdio every corpus."""
    try:
        request = ctx.request_context.request
    except ValueError:  # no request (a call from code)
        return None
    return request_access(request.scope if isinstance(request, Request) else None).corpora


def session_of(ctx: Context | None) -> tuple[str, str] | None:
    """The MCP session a tool call belongs to, as a key of
    :class:`~esrag.serve.session_memory.SessionMemory`: over stdio (no HTTP request) the
    process's one session ``("", "stdio")``; over streamable HTTP ``(key name, mcp-session-id)``
    — the id the SDK's session manager gave the client, with the name of the API key that made
    the call (:class:`~esrag.serve.security.Access`), so keys never share a memory; None for a
    call without a session (stateless HTTP, or a call from code)."""
    if ctx is None:
        return None
    try:
        request = ctx.request_context.request
    except ValueError:  # no request (a call from code)
        return None
    if request is None:
        return ("", "stdio")
    if isinstance(request, Request):
        sid = request.headers.get("mcp-session-id")
        if sid:
            return (request_access(request.scope).name, sid)
    return None


def build_server(service: SearchService, host: str = "127.0.0.1", listed: bool = True, session_memory: bool = False) -> Any:
    """The :class:`~mcp.server.mcpserver.MCPServer` with the tools over ``service``; each tool
    shows a call only the corpora its key may read (:func:`within`). ``listed``: the
    instructions name the corpora (False when keys per corpus are configured).
    ``session_memory``: search_docs and get_page leave out what the session was already sent
    (:mod:`esrag.serve.session_memory`; off: a repeated call gets the identical answer)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import ValidationError

    class Server(MCPServer):
        """MCPServer whose argument errors are one line naming the argument (the SDK's own text
        is pydantic's multi-line dump)."""

        async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().call_tool(*args, **kwargs)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(validation_line(exc.__cause__)) from None
                if isinstance(exc.__cause__, ToolError):  # the tool's own one-line error, without the SDK's prefix
                    raise exc.__cause__ from None
                raise

    memory = SessionMemory() if session_memory else None

    def remembered(ctx: Context | None) -> Sent | None:
        key = session_of(ctx) if memory is not None else None
        return memory.session(key) if memory is not None and key is not None else None

    hint = (
        " Session memory is on: search_docs and get_page leave out sections already sent in this session and name them; "
        "resend=true sends them again."
        if session_memory
        else ""
    )
    server = Server("esrag", instructions=instructions(service, listed) + hint, version=__version__)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    def text(value: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=value)])

    @server.tool(annotations=read_only, structured_output=False)
    def search_docs(
        query: Query,
        corpus: CorpusArg = None,
        doc_version: Annotated[
            str | None,
            Field(
                max_length=200,
                description=(
                    "Only this documentation version (list_corpora shows each corpus's versions). Default: each corpus's "
                    "default version; '*': every version."
                ),
            ),
        ] = None,
        k: Count = None,
        token_budget: SearchBudget = None,
        format: SearchFormat = "markdown",
        kind: Kind = "all",
        language: Annotated[
            str | None,
            Field(
                max_length=35,
                pattern=r"^(?:auto|[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*)$",
                description=(
                    "Only sections in this language (ISO 639-1, e.g. 'ja'; 'auto': the query's language). Default: each "
                    "site in its default locale (translated pages left out)."
                ),
            ),
        ] = None,
        resend: Resend = False,
        ctx: Context | None = None,
    ) -> Any:
        """Search the documentation index for `query`. Returns the best sections in rank order:
        each with its section path (as a heading), its URL (pass it to get_page to read on) and
        its text, the whole response within `token_budget` cl100k tokens (default 2,000).
        `format="outline"` gives one line per hit to choose from; `kind="code"` only the code
        examples of each hit."""
        if not query.strip():
            raise ToolError("query is empty; give a question or keywords")
        budget = DEFAULT_SEARCH_BUDGET if token_budget is None else token_budget
        sent = remembered(ctx) if format != "outline" and kind == "all" else None
        skip = None if resend else sent
        try:
            result = service.search(
                SearchRequest(
                    query,
                    k=k,
                    corpora=[corpus] if corpus else [],
                    doc_version=doc_version,
                    budget=candidate_budget(budget),
                    languages=[language] if language else [],
                ),
                check_corpora=True,
                within=within(ctx) if ctx else None,
            )
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None
        note = versions_note(result.versions, 'doc_version="*"') if result.versions else ""
        if sent is not None:
            memo = leave_out_sent(result.hits, skip)
            hits = memo.hits[:k] if k else memo.hits
            if format == "json":
                gone = {"total": len(memo.left_out), "listed": memo.left_out[:MAX_LISTED], "resend": RESEND_HINT} if memo.left_out else None
                body = {
                    "hits": hits,
                    **({"versions": result.versions} if result.versions else {}),
                    **({"already_sent": gone} if gone else {}),
                }
                out, shown = pack_json(body, budget, HIT_FIELDS)
                record_search(memo, shown["hits"], sent)
                return text(out)
            out, kept = search_markdown(hits, budget, query, note, tail=left_out_lines(memo.left_out))
            record_search(memo, kept, sent)
            return text(out)
        hits = [hit_json(h) for h in (result.hits[:k] if k else result.hits)]
        if kind == "code":
            hits = [c for c in map(code_examples, hits) if c is not None]
        if format == "outline":
            return text(search_outline(hits, budget, query, note)[0])
        if format == "json":
            return text(pack_json({"hits": hits, **({"versions": result.versions} if result.versions else {})}, budget, HIT_FIELDS)[0])
        return text(search_markdown(hits, budget, query, note)[0])

    @server.tool(annotations=read_only, structured_output=False)
    def get_page(
        path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2000,
                description=("The page: a hit's URL (with or without #anchor) or source path (with or without the docs root folder)."),
            ),
        ],
        corpus: CorpusArg = None,
        doc_version: Annotated[
            str | None,
            Field(
                max_length=200, description=("This documentation version. Default: the corpus's default version (list_corpora names it).")
            ),
        ] = None,
        section: Annotated[
            str | None,
            Field(
                max_length=1000,
                description=(
                    "Only this section and its subsections: its anchor or section path. Default: the URL's #anchor, else the whole page."
                ),
            ),
        ] = None,
        offset: Annotated[
            int | None,
            Field(
                strict=True,
                ge=1,
                description=("Start at this source line (the 'Continue' call of a previous response gives it). Default: the start."),
            ),
        ] = None,
        token_budget: PageBudget = None,
        format: Format = "markdown",
        resend: Resend = False,
        ctx: Context | None = None,
    ) -> Any:
        """Read a page of the documentation (or one section of it) as one copy of its text,
        within `token_budget` cl100k tokens (default 4,000). What does not fit is named at the
        end with the get_page call that reads it (the next section, or an offset)."""
        budget = DEFAULT_PAGE_BUDGET if token_budget is None else token_budget
        scope = within(ctx) if ctx else None
        try:
            if corpus:
                service.check_corpora([corpus], scope)
            fit, part = service.page_windows(path, corpus, doc_version, section=section, offset=offset, within=scope)
            sent = remembered(ctx)
            if sent is None:
                if format == "json":
                    return text(page_json(fit, budget, part, sections=False)[0])
                return text(page_markdown(fit, budget, part)[0])
            page = fit(0).page
            if not resend:
                page = page_without_sent(page, sent, offset)[0]
            fit = partial(page_window, page, section=part, offset=offset)
            if format == "json":
                out, body = page_json(fit, budget, part, sections=False)
                record_page(page, body["start_line"], body["end_line"], sent)
                return text(out)
            out, window = page_markdown(fit, budget, part)
            record_page(page, window.start_line, window.end_line, sent)
            return text(out)
        except PageNotFound as exc:
            raise ToolError(
                _one_line(exc) + "; list_corpora shows the corpora and their versions, and search_docs finds a page's URL"
            ) from None
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None

    @server.tool(annotations=read_only)
    def resolve_library(
        name: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="The library as the user wrote it, e.g. 'django', 'Django 5', 'react router v6', 'next.js'.",
            ),
        ],
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Which indexed corpora (and versions) a library name means, best first: each with
        its score, the name or alias that matched, its versions (those matching a version in
        `name` first; `version` the best of them) and default version. Pass `corpus` and
        `doc_version` from here to search_docs and get_page. Empty when nothing matches."""
        try:
            return {"name": name, "libraries": service.libraries(name, within(ctx) if ctx else None)}
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None

    @server.tool(annotations=read_only)
    def list_corpora(ctx: Context | None = None) -> dict[str, Any]:
        """The indexed corpora: per corpus its chunk and page (source) counts, its documentation
        versions (each with chunks, pages and when last indexed; "" = unversioned) and the default
        version get_page reads."""
        try:
            return {"corpora": service.corpora(fresh=True, within=within(ctx) if ctx else None)}
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None

    return server


def run_stdio(service: SearchService, session_memory: bool = False) -> None:
    """Serve the tools over stdio until the client closes the stream (``session_memory``: as
    :func:`build_server`)."""
    build_server(service, session_memory=session_memory).run("stdio")


def http_app(service: SearchService, host: str, api_key: str | KeyRing | None, session_memory: bool = False) -> Any:
    """The streamable-HTTP ASGI app (endpoint ``/mcp``) behind the API-key check (``api_key``:
    a plain key or a :class:`~esrag.serve.security.KeyRing` with keys per corpus) and body limit
    (``session_memory``: as :func:`build_server`, per MCP session)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from esrag.serve.security import BodyLimit, RequireKey

    server = build_server(service, host, listed=not (isinstance(api_key, KeyRing) and api_key.keys), session_memory=session_memory)
    security = None
    if host not in ("127.0.0.1", "localhost", "::1"):  # the SDK's DNS-rebinding guard only knows loopback names
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=security, max_request_body_size=LIMITS.body_bytes)
    return RequireKey(BodyLimit(app, LIMITS.body_bytes), api_key)
