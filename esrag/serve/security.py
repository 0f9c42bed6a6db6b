"""Limits and access rules shared by ``esrag serve`` and ``esrag mcp --http``.

* A server binds 127.0.0.1 by default; binding any other address needs an API key
  (``--api-key`` or ``ESRAG_SERVE_API_KEY``), which every request then carries as
  ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``, compared in constant time
  (:func:`hmac.compare_digest`).
* Requests are bounded: query length, k, budget and body size (:class:`Limits`); a request over a
  bound gets 422 (fields) or 413 (body), never a 5xx.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from dataclasses import dataclass
from typing import Any

from esrag.errors import ConfigError

API_KEY_ENV = "ESRAG_SERVE_API_KEY"


@dataclass(frozen=True)
class Limits:
    """Bounds on one request.

    Attributes:
        query_chars: longest query or question (characters).
        k: most hits. budget: largest token budget (cl100k tokens).
        body_bytes: largest request body (bytes).
    """

    query_chars: int = 2000
    k: int = 100
    budget: int = 32_000
    body_bytes: int = 64 * 1024


LIMITS = Limits()


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_api_key(host: str, api_key: str | None) -> str | None:
    """The API key in force (``api_key``, else ``$ESRAG_SERVE_API_KEY``, else None).

    Raises:
        ConfigError: ``host`` is not a loopback address and no key is given.
    """
    key = api_key or os.environ.get(API_KEY_ENV) or None
    if key is None and not is_loopback(host):
        raise ConfigError(f"binding {host} (not loopback) needs an API key: pass --api-key or set {API_KEY_ENV}")
    return key


def presented_key(headers: Any) -> str:
    """The key a request carries: ``Authorization: Bearer KEY`` or ``X-API-Key: KEY`` ('' if none)."""
    auth = headers.get("authorization") or ""
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return (headers.get("x-api-key") or "").strip()


def key_matches(expected: str | None, presented: str) -> bool:
    """True when no key is required, or ``presented`` equals it (constant-time comparison)."""
    if expected is None:
        return True
    return hmac.compare_digest(expected.encode(), presented.encode())


class BodyLimit:
    """ASGI middleware: a request whose body exceeds ``limit`` bytes (by ``Content-Length`` or
    as it streams in) gets 413 with a one-line JSON error; ``skip`` path prefixes are exempt."""

    def __init__(self, app: Any, limit: int, skip: tuple[str, ...] = ()) -> None:
        self.app, self.limit, self.skip = app, limit, skip

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.skip):
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _too_large(send, self.limit)
            return
        if length is not None:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []  # no Content-Length (chunked): read it all, at most limit bytes, then replay
        seen, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            more = message.get("more_body", False)
            if seen > self.limit:
                await _too_large(send, self.limit)
                return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Any, limit: int) -> None:
    body = f'{{"error": "request body over {limit} bytes"}}'.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequireKey:
    """ASGI middleware: without the API key (:func:`presented_key`) a request gets 401, except
    for the ``open`` paths (exact matches)."""

    def __init__(self, app: Any, key: str | None, open_paths: tuple[str, ...] = ()) -> None:
        self.app, self.key, self.open_paths = app, key, open_paths

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if self.key is None or scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        if key_matches(self.key, presented_key(headers)):
            await self.app(scope, receive, send)
            return
        body = b'{"error": "missing or wrong API key (Authorization: Bearer KEY or X-API-Key: KEY)"}'
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
