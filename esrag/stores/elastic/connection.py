"""Connection to the cluster and error translation: the client (8.x, orjson serializers), one
clear :class:`~esrag.errors.StoreError` per client exception (:class:`Connected`), the most
specific reason of an error body, and the classification of refused retriever requests."""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import orjson
from elasticsearch import (
    ApiError,
    AuthenticationException,
    AuthorizationException,
    ConnectionError as ESConnectionError,
    ConnectionTimeout,
    Elasticsearch,
    TransportError,
)
from elasticsearch.serializer import (
    CompatibilityModeJsonSerializer,
    CompatibilityModeNdjsonSerializer,
    JsonSerializer,
    NdjsonSerializer,
)

from esrag.urls import redact_url  # noqa: F401  (re-exported: esrag.stores.elastic.redact_url)
from esrag.errors import ConfigError, StoreError

_PACKAGE = __name__.rsplit(".", 1)[0]


class ClusterWarning(UserWarning):
    """The cluster lacks something esrag can do without (e.g. ingest processors)."""


def classify_reranker_error(inference_id: str, status: int, body: Any) -> str:
    """A clear message for a refused ``text_similarity_reranker`` / ``_inference`` request."""
    reason = error_reason(body)
    way_out = "use --rerank http:URL or cross-encoder:MODEL instead"
    if "unknown retriever [text_similarity_reranker]" in reason or "no handler found" in reason:
        return (f"this Elasticsearch has no text_similarity_reranker retriever / inference API ({reason}); it needs the "
                f"inference plugin of a full distribution (8.14+, Enterprise or trial licence): {way_out}")
    if status == 403 or "license" in reason.lower():
        return f"the cluster's licence does not allow semantic reranking ({reason}; Enterprise or trial needed): {way_out}"
    if status == 404 or "resource_not_found" in reason:
        return (f"the cluster has no inference endpoint {inference_id!r} ({reason}); create one for the rerank task "
                f"(PUT _inference/rerank/{inference_id}) or {way_out}")
    return f"the cluster refused the rerank request ({status} {reason})"


def error_reason(body: Any) -> str:
    """The most specific reason in an Elasticsearch error body (``type: reason``), or its text."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            root = (err.get("root_cause") or [err])[0]
            reason = root.get("reason") or err.get("reason") or ""
            caused = err.get("caused_by") or {}
            if caused.get("reason") and caused.get("reason") not in reason and root is err:
                reason = f"{reason}: {caused['reason']}"
            return _clip(f"{root.get('type') or err.get('type', 'error')}: {reason}".strip())
        return _clip(str(err))
    return _clip(str(body))


def shard_failure(answer: dict[str, Any]) -> str | None:
    """Why a search answer came from only some of its shards (``_shards.failed`` > 0: a shard
    with no live copy, e.g. its node is down and it has no replica), or None when every shard
    answered. The text names the counts and the first failure's reason."""
    shards = answer.get("_shards") or {}
    failed = int(shards.get("failed") or 0)
    if not failed:
        return None
    first = (shards.get("failures") or [{}])[0]
    reason = error_reason({"error": first.get("reason") or {}}) if first.get("reason") else "no reason given"
    return (f"{failed} of {shards.get('total', '?')} shards did not answer ({reason}): a shard has no live copy (its "
            "node is down and it has no replica); bring the node back, or set [elasticsearch] replicas >= 1")


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit] + "…"



def classify_retriever_probe(name: str, status: int, body: Any) -> tuple[bool, str]:
    """Classify the answer to :func:`retriever_probe_body`: ``(available, why)``.

    200 means available. "unknown retriever [rrf]" (a build without the rank module, like the
    integ-test node) and a licence refusal (403 ``security_exception`` "current license is
    non-compliant for [...]", a Basic licence) mean unavailable, with the reason.
    """
    if 200 <= status < 300:
        return True, f"{name} retriever available"
    reason = error_reason(body)
    if f"unknown retriever [{name}]" in reason or "named_object_not_found" in reason:
        return False, f"this Elasticsearch has no {name} retriever ({reason}; it needs 8.16+ with the rank modules, e.g. the default distribution)"
    if status == 403 or "license" in reason.lower():
        return False, f"the cluster's licence does not allow the {name} retriever ({reason}; it needs an Enterprise or trial licence)"
    return False, f"the {name} retriever was refused ({status} {reason})"

class _Orjson:
    """orjson in place of the standard library's json inside the client's serializers (the
    client's own ``default`` still handles dates, decimals, numpy and pandas values). On the
    Laravel index a hybrid ``_msearch`` (two legs of 50 hits with ``_source``, ~118 KB) spent
    ~0.4 ms less in the client per query (wall minus ``took``: 2.2 -> 1.8 ms); bulk bodies of
    float vectors encode faster too."""

    def json_dumps(self, data: Any) -> bytes:
        return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)  # type: ignore[attr-defined]

    def json_loads(self, data: bytes) -> Any:
        return orjson.loads(data)


_ORJSON_SERIALIZERS: tuple[type[Any], ...] = tuple(
    type(f"Orjson{kind.__name__}", (_Orjson, kind), {"__doc__": f"{kind.__name__} on orjson."})
    for kind in (JsonSerializer, NdjsonSerializer, CompatibilityModeJsonSerializer, CompatibilityModeNdjsonSerializer)
)


def fast_serializers() -> dict[str, Any]:
    """The client's serializers by mimetype (JSON, NDJSON and their ``compatible-with``
    variants, which the 8.x client sends and 9.x servers answer with) backed by orjson."""
    return {kind.mimetype: kind() for kind in _ORJSON_SERIALIZERS}


def node_urls(url: str) -> list[str]:
    """The node URLs of ``ESRAG_ES_URL``: one ``http(s)://host[:port]`` URL or several,
    comma-separated (blanks around the commas are ignored), in their order.

    Raises:
        ConfigError: the value is empty, or one entry is not an http(s)://host[:port] URL (the
            message names it, redacted, and its position).
    """
    entries = [u.strip() for u in (url or "").split(",")]
    if not any(entries):
        raise ConfigError(f"ESRAG_ES_URL={redact_url(url or '')!r} is not an http(s)://host:port URL")
    out: list[str] = []
    for pos, entry in enumerate(entries, 1):
        parts = urlsplit(entry)
        try:
            port_ok = parts.port is None or 0 < parts.port < 65536
        except ValueError:
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            where = f" (node {pos} of {len(entries)} in ESRAG_ES_URL={redact_url(url)!r})" if len(entries) > 1 else ""
            raise ConfigError(f"ESRAG_ES_URL entry {redact_url(entry)!r}{where} is not an http(s)://host:port URL")
        out.append(entry)
    return out


def url_secrets(urls: list[str]) -> list[str]:
    """The passwords written into ``urls`` (``user:password@host``), to redact from messages."""
    return [p for p in (urlsplit(u).password for u in urls) if p]


def make_client(url: str | list[str], request_timeout: float, api_key: str | None, user: str | None, password: str | None,
                ca_certs: str | Path | None, redacted_url: str, redact: Callable[[str], str]) -> Elasticsearch:
    """The client for ``url`` (one node URL, or a list of them): ``request_timeout`` seconds
    per request, orjson serializers, API key (wins) or basic auth, a CA bundle.

    Failover (elastic-transport's node pool, no sniffing): a request that fails with a
    connection error or a timeout, or answers 502/503/504, is retried on the next node, up to
    ``max(2, nodes)`` times; a node that failed is left out (it is marked dead, then tried
    again after a back-off of 1 s doubling up to 30 s), so with several nodes a dead one costs
    one failed attempt, not one per request.

    Raises:
        ConfigError: ``ca_certs`` is not a file, or the client refuses the URL.
    """
    hosts = [url] if isinstance(url, str) else list(url)
    options: dict[str, Any] = {
        "request_timeout": request_timeout, "max_retries": max(2, len(hosts)), "retry_on_timeout": True,
        "retry_on_status": (502, 503, 504), "serializers": fast_serializers(),
    }
    if api_key:
        options["api_key"] = api_key
    elif user is not None:
        options["basic_auth"] = (user, password)
    if ca_certs:
        if not Path(ca_certs).is_file():
            raise ConfigError(f"ESRAG_ES_CA_CERTS={str(ca_certs)!r} is not a file; point it at the cluster's CA certificate (PEM)")
        options["ca_certs"] = str(ca_certs)
    try:
        return Elasticsearch(hosts, **options)
    except ValueError as exc:
        raise ConfigError(f"cannot use ESRAG_ES_URL={redacted_url!r}: {redact(str(exc))}") from None


class Connected:
    """What every part of the store shares: the client ``_es``, the printable ``url``, the
    ``alias``, and the translation of client exceptions into one clear :class:`StoreError`."""

    _es: Elasticsearch
    url: str
    alias: str
    _secrets: list[str]
    _checked: bool

    def _redact(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _fail(self, exc: Exception, what: str) -> StoreError:
        """One clear :class:`StoreError` for a client exception: the URL, the cause, the way out."""
        where = f"Elasticsearch at {self.url}"
        if isinstance(exc, (ESConnectionError, ConnectionTimeout)) or (isinstance(exc, TransportError) and not isinstance(exc, ApiError)):
            text = " ".join([str(exc), str(getattr(exc, "message", "")), *(str(e) for e in getattr(exc, "errors", ()) or ()),
                             str(exc.__cause__ or "")])
            if "CERTIFICATE_VERIFY_FAILED" in text or "SSL" in text or "TLS" in text:
                hint = "set ESRAG_ES_CA_CERTS to the cluster's CA certificate (PEM), or check the URL's scheme"
                cause = "TLS verification failed"
            else:
                hint = ("start it (scripts/es-node start, or docker-compose -f docker/compose.yml up -d), fix ESRAG_ES_URL, "
                        "or unset ESRAG_ES_URL to use the embedded store")
                cause = _short_cause(text)
            return StoreError(self._redact(f"cannot reach {where} ({cause}) while trying to {what}; {hint}"))
        if isinstance(exc, AuthenticationException):
            return StoreError(self._redact(
                f"{where} refused the credentials (401) while trying to {what}; check ESRAG_ES_API_KEY or ESRAG_ES_USER/ESRAG_ES_PASSWORD"))
        if isinstance(exc, AuthorizationException):
            return StoreError(self._redact(
                f"{where} denied permission (403: {error_reason(exc.body)}) to {what}; grant the user's role access to "
                f"{self.alias}* indices, templates and pipelines"))
        if isinstance(exc, ApiError):
            return StoreError(self._redact(f"{where} could not {what}: {exc.meta.status} {error_reason(exc.body)}"))
        return StoreError(self._redact(f"{where}: {what} failed: {type(exc).__name__}: {exc}"))

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``; a client exception becomes :meth:`_fail`'s StoreError."""
        try:
            return fn(*args, **kwargs)
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, what) from None

    def _call_waiting(self, what: str, retry_seconds: float, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """:meth:`_call`, but while the cluster looks lost — a connection error or timeout (the
        client has already tried every node URL), or 429/502/503/504 — ``fn`` is called again
        after 0.5 s, doubling to at most 10 s, for up to ``retry_seconds`` seconds (the last
        pause clipped to it): the requests of an ingest besides its bulk writes (reading the
        manifest and vectors back, the refresh, ending the bulk-load profile) wait for a
        restarting node as long as the bulk writes do (``[elasticsearch] retry_seconds``).
        Only for idempotent requests: ``fn`` may have run on the cluster before an answer was lost.

        Raises:
            StoreError: as :meth:`_call`; a lost cluster after ``retry_seconds``, with
                ``retried for N s`` in the message.
        """
        t0, delay = time.monotonic(), 0.5
        while True:
            try:
                return fn(*args, **kwargs)
            except (ApiError, TransportError) as exc:
                waited = time.monotonic() - t0
                if not lost(exc) or waited >= retry_seconds:
                    note = f" (retried for {waited:.0f} s, [elasticsearch] retry_seconds)" if lost(exc) and waited else ""
                    raise self._fail(exc, what + note) from None
                time.sleep(min(delay, retry_seconds - waited))
                delay = min(delay * 2, 10.0)

    def _ready(self) -> None:
        """Check once that the cluster answers (``cluster.health``; never ``ping``/``info``)."""
        if not self._checked:
            self._call("check cluster health", self._es.cluster.health)
            self._checked = True


def lost(exc: Exception) -> bool:
    """Whether ``exc`` says the cluster is (for now) out of reach or busy, not that it refused
    the request: a connection error or timeout, or HTTP 429/502/503/504."""
    if isinstance(exc, ApiError):
        return exc.meta.status in (429, 502, 503, 504)
    return isinstance(exc, TransportError)


def _warn(message: str) -> None:
    """A :class:`ClusterWarning` attributed to the first caller outside this package."""
    frame: FrameType | None = sys._getframe(1)
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(ClusterWarning(message), stacklevel=level)


def _short_cause(text: str) -> str:
    for needle in ("Connection refused", "timed out", "Name or service not known", "No route to host",
                   "Temporary failure in name resolution", "Connection reset", "Remote end closed connection",
                   "RemoteDisconnected", "Connection aborted", "Broken pipe"):
        if needle in text:
            return "remote end closed connection" if needle == "RemoteDisconnected" else needle.lower()
    return text[:200]
