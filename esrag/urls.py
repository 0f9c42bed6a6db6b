"""URLs in messages without their credentials (the project's rule: secrets never appear in
output). ``ESRAG_ES_URL``, ``ESRAG_LLM_URL``, embedder and reranker URLs may carry
``user:password@``; every error a user or an HTTP/MCP client reads goes through
:func:`scrub_credentials`, and the clients name their server by :func:`redact_url`."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

#: ``scheme://userinfo@`` (RFC 3986 3.2.1: userinfo holds no ``/`` or ``@``; here no blanks either)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@]*@")


def redact_url(url: str) -> str:
    """``url`` without user:password (safe to print); for a comma-separated list of node URLs,
    each of them."""
    if "," in url:
        return ",".join(redact_url(u.strip()) for u in url.split(","))
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


def scrub_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it removed
    (``"at http://u:pw@host:9: refused"`` -> ``"at http://host:9: refused"``)."""
    return _USERINFO.sub(r"\1", text) if "@" in text else text
