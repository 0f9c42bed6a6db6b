"""Serving the index: the HTTP API and search page (:mod:`esrag.serve.http`) and the MCP server
(:mod:`esrag.serve.mcp`), both thin skins over :class:`esrag.service.SearchService`, plus what
they share: request limits and the API-key rule (:mod:`esrag.serve.security`)."""
