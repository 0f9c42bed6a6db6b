"""Limits and access rules shared by ``esrag serve`` and ``esrag mcp --http``.

* A server binds 127.0.0.1 by default; binding any other address needs an API key
  (``--api-key`` or ``ESRAG_SERVE_API_KEY``) or keys per corpus (``[serve.keys.NAME]``), which
  every request then carries as ``Authorization: Bearer KEY`` or ``X-API-Key: KEY``, compared
  in constant time (:func:`hmac.compare_digest`).
* Keys per corpus (:class:`Access`, :class:`KeyRing`; docs/serving.md "Keys per corpus"): each
  ``[serve.keys.NAME]`` holds the hex SHA-256 of its key and the corpora it may read. The
  request's :class:`Access` rides in the ASGI scope (:data:`ACCESS_SCOPE_KEY`) to the routes and
  tools, which show it only its corpora; it is logged by NAME, never by value.
* Requests are bounded: query length, k, budget and body size (:class:`Limits`); a request over a
  bound gets 422 (fields) or 413 (body), never a 5xx.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError

API_KEY_ENV = "ESRAG_SERVE_API_KEY"
#: where :class:`RequireKey` puts the request's :class:`Access` in the ASGI scope
ACCESS_SCOPE_KEY = "esrag.access"

log = logging.getLogger("esrag.serve")


@dataclass(frozen=True)
class Access:
    """What one request may read.

    Attributes:
        name: the ``[serve.keys.NAME]`` in force ('' for the single ``--api-key`` or an open server).
        corpora: the corpus names it may read; None = every corpus.
        sync: the sources it may sync (``POST /sync/NAME``); None = every source.
    """

    name: str = ""
    corpora: frozenset[str] | None = None
    sync: frozenset[str] | None = frozenset()

    def allows(self, corpus: str) -> bool:
        """Whether ``corpus`` is one this request may read."""
        return self.corpora is None or corpus in self.corpora

    def may_sync(self, source: str) -> bool:
        """Whether this request may sync the source ``source``."""
        return self.sync is None or source in self.sync


#: an open server, or the single ``--api-key``: every corpus (and, with the key, every source)
EVERYTHING = Access(sync=None)


def printable(text: str, limit: int = 300) -> str:
    """``text`` (a request path, decoded) fit for one log line: every character that is not
    printable (newlines, NUL, other control characters) as its escape (``\\n``, ``\\x00``),
    at most ``limit`` characters — so a request can neither forge log lines nor break the log."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text[:limit])


def key_hash(key: str) -> str:
    """The hex SHA-256 of ``key`` (UTF-8): what ``[serve.keys.NAME] sha256`` holds."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    """A fresh random key: ``esrag_`` and 43 URL-safe characters (256 bits from :mod:`secrets`)."""
    return "esrag_" + secrets.token_urlsafe(32)


class KeyRing:
    """The keys a server accepts: the single ``api_key`` (sees everything) and the keys per
    corpus ``{name: (sha256 hex, corpora)}`` or ``{name: (sha256 hex, corpora, sources it may
    sync)}`` (``[serve.keys]``).

    :meth:`access` hashes the presented key once and compares it with every configured hash
    (no early exit, :func:`hmac.compare_digest`), so the time does not depend on which key matched.
    """

    def __init__(self, api_key: str | None = None, keys: Mapping[str, tuple[Any, ...]] | None = None) -> None:
        self.api_key = api_key
        self.keys = [
            (name, bytes.fromhex(entry[0]), Access(name, frozenset(entry[1]), frozenset(entry[2] if len(entry) > 2 else ())))
            for name, entry in sorted((keys or {}).items())
        ]

    @property
    def required(self) -> bool:
        """Whether a request needs a key at all."""
        return self.api_key is not None or bool(self.keys)

    @property
    def names(self) -> list[str]:
        """The names of the keys per corpus."""
        return [name for name, _, _ in self.keys]

    def access(self, presented: str) -> Access | None:
        """The :class:`Access` of a request carrying ``presented`` ('' = none); None = refuse (401)."""
        if not self.required:
            return EVERYTHING
        digest = hashlib.sha256(presented.encode()).digest()
        found: Access | None = None
        if self.api_key is not None and key_matches(self.api_key, presented):
            found = EVERYTHING
        for _, expected, access in self.keys:
            if hmac.compare_digest(expected, digest) and found is None:
                found = access
        return found if presented else None


def request_access(scope: Mapping[str, Any] | None) -> Access:
    """The :class:`Access` :class:`RequireKey` put in an ASGI ``scope`` (:data:`EVERYTHING`
    when there is none: stdio, or an app without the middleware)."""
    found = (scope or {}).get(ACCESS_SCOPE_KEY)
    return found if isinstance(found, Access) else EVERYTHING


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


def resolve_api_key(host: str, api_key: str | None, keys_configured: bool = False) -> str | None:
    """The API key in force (``api_key``, else ``$ESRAG_SERVE_API_KEY``, else None).

    Raises:
        ConfigError: ``host`` is not a loopback address and there is neither a key nor
            ``keys_configured`` (``[serve.keys]`` in the settings).
    """
    key = api_key or os.environ.get(API_KEY_ENV) or None
    if key is None and not keys_configured and not is_loopback(host):
        raise ConfigError(
            f"binding {host} (not loopback) needs an API key: pass --api-key, set {API_KEY_ENV} or add keys per corpus (esrag keys add)"
        )
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
    """ASGI middleware: a request without a key the :class:`KeyRing` accepts
    (:func:`presented_key`) gets 401, except for the ``open`` paths (exact matches); an accepted
    one carries its :class:`Access` in ``scope[ACCESS_SCOPE_KEY]`` (:func:`request_access`), and
    a key per corpus is logged by its name. ``keys`` may be a plain key (``--api-key``) or None."""

    def __init__(self, app: Any, keys: KeyRing | str | None, open_paths: tuple[str, ...] = ()) -> None:
        self.app, self.open_paths = app, open_paths
        self.keys = keys if isinstance(keys, KeyRing) else KeyRing(keys)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.keys.required or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        access = self.keys.access(presented_key(headers))
        if access is not None:
            if access.name:
                log.info("key %s: %s %s", access.name, scope.get("method", ""), printable(scope["path"]))
            await self.app({**scope, ACCESS_SCOPE_KEY: access}, receive, send)
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


KEY_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def add_key(name: str, corpora: list[str], path: Path | None = None, sync: Collection[str] = ()) -> str:
    """Make a key that may read ``corpora`` (and sync the sources ``sync``) and write
    ``[serve.keys.NAME]`` (its SHA-256, the corpora and the sources; never the key) at the end of the settings file ``path`` (default
    :func:`esrag.config.config_path`, created when missing), leaving the rest of the file as it
    was. Returns the key: the only time it exists outside its user's hands.

    Raises:
        ConfigError: ``name`` is not 1-64 letters, digits, ``_`` or ``-``; no corpus, or an
            empty corpus name; a ``sync`` name is not a ``[sources.NAME]`` of the file; a key
            ``name`` exists already; the file would not be valid TOML
            with the entry added (e.g. ``[serve] keys`` written inline); the file cannot be written.
        InvalidSettings: the file is not valid settings now.
    """
    from esrag.config import check_key_sync, config_path, read_config_file

    path = path or config_path()
    if not KEY_NAME.match(name):
        raise ConfigError(f"key name {name!r}: use 1-64 letters, digits, '_' or '-'")
    if not corpora or not all(c.strip() for c in corpora):
        raise ConfigError("--corpus: give at least one corpus name the key may read")
    data = read_config_file(path) if path.is_file() else {}
    try:
        check_key_sync(sync, data.get("sources") or {})
    except ValueError as exc:
        raise ConfigError(f"--sync: {exc} in {path}") from None
    if name in ((data.get("serve") or {}).get("keys") or {}):
        raise ConfigError(f"{path}: key {name!r} exists already in [serve.keys]; choose another name or remove it first")
    key = new_key()
    listed = ", ".join(json.dumps(c) for c in dict.fromkeys(corpora))
    entry = f'[serve.keys.{name}]\nsha256 = "{key_hash(key)}"\ncorpora = [{listed}]\n'
    if sync:
        entry += f"sync = [{', '.join(json.dumps(s) for s in dict.fromkeys(sync))}]\n"
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    text = old + ("\n" if old and not old.endswith("\n") else "") + ("\n" if old else "") + entry
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot add [serve.keys.{name}] at its end ({exc}); write [serve] keys as tables") from None
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the settings file: {exc.strerror or exc}") from None
    return key
