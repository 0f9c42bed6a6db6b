"""``esrag mcp``: the index as Model Context Protocol tools (official SDK, PyPI ``mcp`` 2.x,
where ``FastMCP`` became :class:`mcp.server.mcpserver.MCPServer`), over stdio or streamable HTTP.

Tools (all read-only, annotated ``readOnlyHint``):

* ``search_docs(query, corpus?, doc_version?, k?, token_budget?)`` -> ``{"hits": [{section_path,
  url, source_path, start_line, end_line, text, corpus, doc_title, score, tokens, ...}]}``, packed
  to ``token_budget`` cl100k tokens of source text by the rule of ``esrag search --budget``
  (:func:`esrag.search.pipeline.pack`: hits in rank order, the last one cut to fit).
* ``get_page(path, corpus?)`` -> the whole page (:meth:`esrag.pages.Page.to_dict`).
* ``list_corpora()`` -> ``{"corpora": {name: {"chunks", "sources"}}}``.

Errors (empty query, unknown corpus, store down, bad arguments) come back as tool errors whose
text is a one-line reason; the server keeps running. The server's instructions tell the agent
which corpora the index holds and how many chunks each has.
"""

from __future__ import annotations

from typing import Any

from esrag.urls import scrub_credentials
from esrag import __version__
from esrag.errors import EsragError
from esrag.serve.security import LIMITS
from esrag.service import SearchRequest, SearchService, hit_json

DEFAULT_TOKEN_BUDGET = 2000
"""cl100k tokens of source text ``search_docs`` returns when the agent gives no budget."""

HIT_FIELDS = ("section_path", "url", "anchor", "source_path", "start_line", "end_line", "text", "corpus",
              "doc_title", "doc_version", "score", "tokens", "truncated")


def instructions(service: SearchService) -> str:
    """The server's instructions: what the index holds (corpora and chunk counts) and how to use the tools."""
    try:
        corpora = service.corpora(fresh=True)
        held = ", ".join(f"{name} ({row['chunks']:,} chunks, {row['sources']:,} pages)" for name, row in corpora.items())
    except EsragError as exc:
        held = f"unknown right now ({' '.join(str(exc).split())[:200]})"
    return (
        "Search indexed documentation with esrag (BM25 + embeddings fused by reciprocal rank fusion). "
        f"Corpora: {held or '(none yet)'}. Use search_docs with a natural-language question (optionally one "
        "corpus) to get the most relevant sections with their section path, source path, line span and url; "
        "token_budget caps the returned text in cl100k tokens. Use get_page with a hit's source_path to read "
        "the whole page, and list_corpora to see what is indexed. All tools are read-only."
    )


def _one_line(exc: Exception) -> str:
    return scrub_credentials(" ".join(str(exc).split()))[:500] or type(exc).__name__


def build_server(service: SearchService, host: str = "127.0.0.1") -> Any:
    """The :class:`~mcp.server.mcpserver.MCPServer` with the three tools over ``service``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("esrag", instructions=instructions(service), version=__version__)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def search_docs(query: str, corpus: str | None = None, doc_version: str | None = None, k: int | None = None,
                    token_budget: int | None = None) -> dict[str, Any]:
        """Search the documentation index. Returns the best sections for `query` (a question or
        keywords) with section_path, url, source_path, start_line, end_line and text, in rank
        order, packed to `token_budget` cl100k tokens (default 2000; the last section is cut to
        fit). `corpus` limits the search to one corpus (see list_corpora), `doc_version` to one
        documentation version, `k` caps the number of sections (1-100)."""
        if not query or not query.strip():
            raise ToolError("query is empty; give a question or keywords")
        if len(query) > LIMITS.query_chars:
            raise ToolError(f"query is over {LIMITS.query_chars} characters")
        if k is not None and not 1 <= k <= LIMITS.k:
            raise ToolError(f"k must be between 1 and {LIMITS.k}, got {k}")
        budget = DEFAULT_TOKEN_BUDGET if token_budget is None else token_budget
        if not 1 <= budget <= LIMITS.budget:
            raise ToolError(f"token_budget must be between 1 and {LIMITS.budget} cl100k tokens, got {budget}")
        try:
            result = service.search(SearchRequest(query, k=k, corpora=[corpus] if corpus else [], doc_version=doc_version,
                                                  budget=budget), check_corpora=True)
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None
        hits = result.hits[:k] if k else result.hits
        return {"hits": [{f: d.get(f) for f in HIT_FIELDS if f in d or f in ("url",)} for d in map(hit_json, hits)]}

    @server.tool(annotations=read_only)
    def get_page(path: str, corpus: str | None = None) -> dict[str, Any]:
        """The whole page at `path` (a source_path from search_docs), as its sections in order
        (section_path, url, start_line, end_line, text) and the full text."""
        try:
            if corpus:
                service.check_corpora([corpus])
            page = service.page(path, corpus)
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None
        if page is None:
            raise ToolError(f"no page {path!r}")
        return page.to_dict()

    @server.tool(annotations=read_only)
    def list_corpora() -> dict[str, Any]:
        """The indexed corpora with their chunk and page (source) counts."""
        try:
            return {"corpora": service.corpora(fresh=True)}
        except EsragError as exc:
            raise ToolError(_one_line(exc)) from None

    return server


def run_stdio(service: SearchService) -> None:
    """Serve the tools over stdio until the client closes the stream."""
    build_server(service).run("stdio")


def http_app(service: SearchService, host: str, api_key: str | None) -> Any:
    """The streamable-HTTP ASGI app (endpoint ``/mcp``) behind the API-key check and body limit."""
    from mcp.server.transport_security import TransportSecuritySettings

    from esrag.serve.security import BodyLimit, RequireKey

    server = build_server(service, host)
    security = None
    if host not in ("127.0.0.1", "localhost", "::1"):  # the SDK's DNS-rebinding guard only knows loopback names
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=security, max_request_body_size=LIMITS.body_bytes)
    return RequireKey(BodyLimit(app, LIMITS.body_bytes), api_key)
