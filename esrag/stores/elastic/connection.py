"""Connection to the cluster and error translation: the client (8.x, orjson serializers), one
clear :class:`~esrag.errors.StoreError` per client exception (:class:`Connected`), the most
specific reason of an error body, and the classification of refused retriever requests."""

from __future__ import annotations

import json
import re
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
    ConnectionTimeout,
    Elasticsearch,
    TransportError,
)
from elasticsearch import (
    ConnectionError as ESConnectionError,
)
from elasticsearch.serializer import (
    CompatibilityModeJsonSerializer,
    CompatibilityModeNdjsonSerializer,
    JsonSerializer,
    NdjsonSerializer,
)

from esrag.errors import ConfigError, StoreError
from esrag.urls import redact_url  # noqa: F401  (re-exported: esrag.stores.elastic.redact_url)

_PACKAGE = __name__.rsplit(".", 1)[0]


class ClusterWarning(UserWarning):
    """The cluster lacks something esrag can do without (e.g. ingest processors)."""


def classify_reranker_error(inference_id: str, status: int, body: Any) -> str:
    """A clear message for a refused ``text_similarity_reranker`` / ``_inference`` request."""
    reason = error_reason(body)
    way_out = "use --rerank http:URL or cross-encoder:MODEL instead"
    if "unknown retriever [text_similarity_reranker]" in reason or "no handler found" in reason:
        return (
            f"this Elasticsearch has no text_similarity_reranker retriever / inference API ({reason}); it needs the "
            f"inference plugin of a full distribution (8.14+, Enterprise or trial licence): {way_out}"
        )
    if status == 403 or "license" in reason.lower():
        return f"the cluster's licence does not allow semantic reranking ({reason}; Enterprise or trial needed): {way_out}"
    if status == 404 or "resource_not_found" in reason:
        return (
            f"the cluster has no inference endpoint {inference_id!r} ({reason}); create one for the rerank task "
            f"(PUT _inference/rerank/{inference_id}) or {way_out}"
        )
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


#: Elasticsearch's index and cluster blocks by id (``IndexMetadata``/``Metadata`` in its source:
#: ``[FORBIDDEN/8/index write (api)]``, ``[TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage
#: watermark, index has read-only-allow-delete block]``) -> the setting that sets it
BLOCK_SETTINGS = {
    "5": "index.blocks.read_only",
    "8": "index.blocks.write",
    "9": "index.blocks.metadata",
    "12": "index.blocks.read_only_allow_delete",
    "6": "cluster.blocks.read_only",
    "13": "cluster.blocks.read_only_allow_delete",
}
_BLOCK = re.compile(r"(?:index \[(?P<index>[^\]]+)\] )?blocked by: \[(?P<status>[A-Z_]+)/(?P<id>\d+)/(?P<what>[^;\]]*)")


def block_message(reason: str) -> str | None:
    """The one-line error for a ``cluster_block_exception`` reason (the index, the block's
    setting and the exact settings call that clears it), or None when ``reason`` names no block.

    The flood-stage disk watermark sets ``index.blocks.read_only_allow_delete`` on every index
    with a shard on the full node (Elasticsearch "Fix watermark errors"); from 7.4 it releases
    it once the disk is below the high watermark again, and it can always be cleared by hand."""
    found = _BLOCK.search(reason)
    if not found:
        return None
    setting = BLOCK_SETTINGS.get(found["id"], "")
    if not setting:
        where = f"the index {found['index']}" if found["index"] else "the cluster"
        return f"Elasticsearch refused to write: {where} is blocked ({found['what'].strip()})"
    return blocked_line(found["index"], setting)


def blocked_line(index: str | None, setting: str) -> str:
    """The one-line error for the block ``setting`` (``index.blocks.write``…) on ``index``:
    what set it and the exact settings call that clears it."""
    if setting.startswith("cluster."):
        call, where = f"PUT _cluster/settings {json.dumps({'persistent': {setting: None}})}", "the cluster"
    else:
        call, where = f"PUT {index}/_settings {json.dumps({setting: None})}", f"the index {index}"
    cause = (
        "the disk of a node holding it passed the flood-stage watermark, or it was set by hand; free disk space first"
        if setting.endswith("read_only_allow_delete")
        else "it was set by hand, or by a snapshot, shrink or migration"
    )
    return (
        f"Elasticsearch refused to write: {where} has the block {setting} = true ({cause}); clear it with `{call}` "
        "(Kibana Dev Tools, or curl -X PUT), then run the ingest again: it resumes where it stopped"
    )


def is_block(body: Any) -> bool:
    """Whether an error body is a ``cluster_block_exception`` (a block refuses, never retried)."""
    return "cluster_block_exception" in error_reason(body)


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
    return (
        f"{failed} of {shards.get('total', '?')} shards did not answer ({reason}): a shard has no live copy (its "
        "node is down and it has no replica); bring the node back, or set [elasticsearch] replicas >= 1"
    )


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
        return (
            False,
            f"this Elasticsearch has no {name} retriever ({reason}; it needs 8.16+ with the rank modules, e.g. the default distribution)",
        )
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


def cloud_url(cloud_id: str) -> str:
    """The ``https://host:port`` URL of the Elasticsearch of an Elastic Cloud deployment
    (``ESRAG_ES_CLOUD_ID``, decoded as the client does: elastic-transport's ``parse_cloud_id``).

    Raises:
        ConfigError: not a Cloud ID (names the setting, never shows the value).
    """
    from elastic_transport.client_utils import parse_cloud_id

    try:
        address = parse_cloud_id(cloud_id).es_address
    except ValueError:
        address = None
    if not address or not all(address):
        raise ConfigError(
            "ESRAG_ES_CLOUD_ID is not an Elastic Cloud ID (copy it from the deployment's page in the Elastic Cloud console: NAME:BASE64)"
        )
    return f"https://{address[0]}:{address[1]}"


def fingerprint_hex(value: str) -> str:
    """``value`` (SHA-256 fingerprint, hex, colons and blanks allowed) as 64 lower-case hex digits.

    Raises:
        ConfigError: not 64 hex digits (names ``ESRAG_ES_SSL_ASSERT_FINGERPRINT``).
    """
    digits = "".join(value.split()).replace(":", "").lower()
    if len(digits) != 64 or any(c not in "0123456789abcdef" for c in digits):
        raise ConfigError(
            "ESRAG_ES_SSL_ASSERT_FINGERPRINT is not a SHA-256 fingerprint (64 hex digits, colons allowed), "
            "as Elasticsearch prints at first start (`openssl x509 -fingerprint -sha256 -in http_ca.crt`)"
        )
    return digits


def tls_mode(scheme: str, ca_certs: str | Path | None, fingerprint: str | None, verify_certs: bool) -> tuple[str, bool]:
    """How the connection is secured, for ``esrag doctor``: ``(text, safe)``; ``safe`` is False
    for plain HTTP and for TLS without verification. Never shows a secret (the fingerprint and
    the CA file's path are not secrets)."""
    if scheme != "https":
        return "plain HTTP, no TLS (an https:// URL or ESRAG_ES_CLOUD_ID encrypts the connection)", False
    if fingerprint:
        return (
            f"TLS, certificate pinned by SHA-256 fingerprint {fingerprint[:8]}…{fingerprint[-8:]} (ESRAG_ES_SSL_ASSERT_FINGERPRINT)",
            True,
        )
    if not verify_certs:
        return "TLS WITHOUT certificate verification (ESRAG_ES_VERIFY_CERTS=false): anyone on the path can impersonate the cluster", False
    if ca_certs:
        return f"TLS, certificate verified against the CA file {ca_certs} (ESRAG_ES_CA_CERTS)", True
    return "TLS, certificate verified against the system's trusted CAs (certifi)", True


def auth_mode(api_key: str | None, user: str | None, url_user: str | None) -> str:
    """Which credentials the client sends, for ``esrag doctor`` (a user name, never a secret)."""
    if api_key:
        return "API key (ESRAG_ES_API_KEY)"
    if user is not None:
        return f"basic authentication as user {user!r} (ESRAG_ES_USER / ESRAG_ES_PASSWORD)"
    if url_user:
        return f"basic authentication as user {url_user!r} (from ESRAG_ES_URL)"
    return "none (the cluster must allow anonymous access)"


def make_client(
    url: str | list[str] | None,
    request_timeout: float,
    api_key: str | None,
    user: str | None,
    password: str | None,
    ca_certs: str | Path | None,
    redacted_url: str,
    redact: Callable[[str], str],
    *,
    cloud_id: str | None = None,
    fingerprint: str | None = None,
    verify_certs: bool = True,
) -> Elasticsearch:
    """The client for ``url`` (one node URL, or a list of them) or ``cloud_id`` (an Elastic
    Cloud deployment): ``request_timeout`` seconds per request, orjson serializers, API key
    (wins) or basic auth, and TLS as configured: a CA bundle (``ca_certs``), a pinned SHA-256
    ``fingerprint`` of a certificate in the chain the cluster presents (the client checks every
    certificate of the chain, so the CA fingerprint Elasticsearch prints at first start works),
    or ``verify_certs=False`` (no verification; warned about once).

    Failover (elastic-transport's node pool, no sniffing): a request that fails with a
    connection error or a timeout, or answers 502/503/504, is retried on the next node, up to
    ``max(2, nodes)`` times; a node that failed is left out (it is marked dead, then tried
    again after a back-off of 1 s doubling up to 30 s), so with several nodes a dead one costs
    one failed attempt, not one per request.

    Raises:
        ConfigError: ``ca_certs`` is not a file, or the client refuses the URL or options.
    """
    hosts = None if url is None else [url] if isinstance(url, str) else list(url)
    options: dict[str, Any] = {
        "request_timeout": request_timeout,
        "max_retries": max(2, len(hosts or [1])),
        "retry_on_timeout": True,
        "retry_on_status": (502, 503, 504),
        "serializers": fast_serializers(),
    }
    if cloud_id:
        options["cloud_id"] = cloud_id
    if api_key:
        options["api_key"] = api_key
    elif user is not None:
        options["basic_auth"] = (user, password)
    if ca_certs:
        if not Path(ca_certs).is_file():
            raise ConfigError(f"ESRAG_ES_CA_CERTS={str(ca_certs)!r} is not a file; point it at the cluster's CA certificate (PEM)")
        options["ca_certs"] = str(ca_certs)
    if fingerprint:
        options["ssl_assert_fingerprint"] = fingerprint_hex(fingerprint)
    elif not verify_certs:
        options.update(verify_certs=False, ssl_show_warn=False)
    if not fingerprint and not verify_certs and (cloud_id or any(str(h).startswith("https:") for h in hosts or [])):
        _warn(
            f"TLS certificates of Elasticsearch at {redacted_url} are not verified (ESRAG_ES_VERIFY_CERTS=false); pin them "
            "with ESRAG_ES_SSL_ASSERT_FINGERPRINT or ESRAG_ES_CA_CERTS instead"
        )
    try:
        return Elasticsearch(hosts, **options)
    except ValueError as exc:
        setting = "ESRAG_ES_CLOUD_ID" if cloud_id else "ESRAG_ES_URL"
        raise ConfigError(f"cannot use {setting}={redacted_url!r}: {redact(str(exc))}") from None


def tls_failure(text: str, scheme: str) -> tuple[str, str] | None:
    """``(cause, way out)`` for a connection error that is about TLS, read from the client's
    error ``text`` (urllib3 / OpenSSL wording), each way out naming the setting to fix; None
    when it is not about TLS. ``scheme`` is the URL's (``http`` / ``https``)."""
    if "Fingerprints did not match" in text:
        got = text.split("got", 1)[1].strip(" \"'.)") if "got" in text else ""
        return (
            "the certificate does not match ESRAG_ES_SSL_ASSERT_FINGERPRINT",
            "set ESRAG_ES_SSL_ASSERT_FINGERPRINT to the SHA-256 fingerprint of the cluster's CA (printed at its first start) "
            "or of its HTTP certificate" + (f"; the cluster presented {_clip(got, 300)}" if got else ""),
        )
    if "Hostname mismatch" in text or "IP address mismatch" in text or "doesn't match" in text:
        return (
            "the certificate is not for this host name",
            "connect by a name the certificate lists (ESRAG_ES_URL), or pin it with ESRAG_ES_SSL_ASSERT_FINGERPRINT",
        )
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return (
            "TLS verification failed: the certificate is signed by an unknown authority",
            "set ESRAG_ES_CA_CERTS to the cluster's CA certificate (PEM), or ESRAG_ES_SSL_ASSERT_FINGERPRINT to its SHA-256 fingerprint",
        )
    if "WRONG_VERSION_NUMBER" in text or "wrong version number" in text or "record layer failure" in text:
        return ("the node does not speak TLS on this port", "use http:// in ESRAG_ES_URL (or the node's HTTPS port)")
    if scheme == "http" and (
        "RemoteDisconnected" in text or "Remote end closed connection" in text or "Connection reset" in text or "Connection aborted" in text
    ):
        return (
            "the node closed the connection without an answer",
            "if the cluster speaks TLS (HTTPS), write https:// in ESRAG_ES_URL (and set ESRAG_ES_CA_CERTS or ESRAG_ES_SSL_ASSERT_FINGERPRINT)",
        )
    if "SSL" in text or "TLS" in text:
        return ("TLS failed", "check ESRAG_ES_CA_CERTS / ESRAG_ES_SSL_ASSERT_FINGERPRINT and the URL's scheme (ESRAG_ES_URL)")
    return None


class Connected:
    """What every part of the store shares: the client ``_es``, the printable ``url``, the
    ``alias``, and the translation of client exceptions into one clear :class:`StoreError`."""

    _es: Elasticsearch
    url: str
    alias: str
    _secrets: list[str]
    _checked: bool
    #: a store opened by a command that only reads: it never records anything on the cluster
    read_only: bool = False

    def _redact(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _fail(self, exc: Exception, what: str) -> StoreError:
        """One clear :class:`StoreError` for a client exception: the URL, the cause, the way out."""
        where = f"Elasticsearch at {self.url}"
        if isinstance(exc, (ESConnectionError, ConnectionTimeout)) or (isinstance(exc, TransportError) and not isinstance(exc, ApiError)):
            text = " ".join(
                [str(exc), str(getattr(exc, "message", "")), *(str(e) for e in getattr(exc, "errors", ()) or ()), str(exc.__cause__ or "")]
            )
            tls = tls_failure(text, urlsplit(self.url).scheme)
            if tls is not None:
                cause, hint = tls
            else:
                hint = (
                    "start it (scripts/es-node start, or docker-compose -f docker/compose.yml up -d), fix ESRAG_ES_URL, "
                    "or unset ESRAG_ES_URL to use the embedded store"
                )
                cause = _short_cause(text)
            return StoreError(self._redact(f"cannot reach {where} ({cause}) while trying to {what}; {hint}"))
        blocked = block_message(error_reason(exc.body)) if isinstance(exc, ApiError) and is_block(exc.body) else None
        if blocked:  # a block answers 403 or 429: not a permission problem, not a busy cluster
            return StoreError(self._redact(f"{blocked} ({where}, while trying to {what})"))
        if isinstance(exc, AuthenticationException):
            return StoreError(
                self._redact(
                    f"{where} refused the credentials (401) while trying to {what}; check ESRAG_ES_API_KEY or ESRAG_ES_USER/ESRAG_ES_PASSWORD"
                )
            )
        if isinstance(exc, AuthorizationException):
            return StoreError(
                self._redact(
                    f"{where} denied permission (403: {error_reason(exc.body)}) to {what}; grant the role of ESRAG_ES_API_KEY / "
                    f'ESRAG_ES_USER the privileges docs/elasticsearch.md "Elasticsearch privileges" lists for this use, on {self.alias} and '
                    f"{self.alias}-*"
                )
            )
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

    def _mget_waiting(self, what: str, retry_seconds: float, fn: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """The ``docs`` of an ``_mget`` sent by :meth:`_call_waiting`, sent again (0.5 s doubling
        to 10 s, up to ``[elasticsearch] retry_seconds``) while a doc comes back with an
        error of :data:`_SHARD_NOT_READY` instead of ``found``: ``_mget`` answers 200 with a
        per-document ``no_shard_available_action_exception`` while a restarted node's shards
        are not yet active, and such a document is neither found nor missing. Any other
        per-document error is raised at once. ``retry_seconds`` 0 (the reads
        of a search, which must not hang): one try, a failed document raised at once.

        Raises:
            StoreError: as :meth:`_call_waiting`; a document still failing after
                ``retry_seconds``, with its id and Elasticsearch's reason.
        """
        t0, delay = time.monotonic(), 0.5
        while True:
            resp = self._call_waiting(what, retry_seconds, fn, *args, **kwargs) if retry_seconds else self._call(what, fn, *args, **kwargs)
            docs: list[dict[str, Any]] = resp.body["docs"]
            failed = next((d for d in docs if "error" in d), None)
            if failed is None:
                return docs
            waited = time.monotonic() - t0
            if waited >= retry_seconds or _error_type(failed) not in _SHARD_NOT_READY:
                raise StoreError(
                    self._redact(
                        f"Elasticsearch at {self.url} could not {what}: chunk {failed.get('_id')}: {error_reason(failed)}"
                        + (
                            f" (retried for {waited:.0f} s, [elasticsearch] retry_seconds)"
                            if retry_seconds and waited >= retry_seconds
                            else ""
                        )
                    )
                )
            time.sleep(min(delay, retry_seconds - waited))
            delay = min(delay * 2, 10.0)

    def _ready(self) -> None:
        """Check once that the cluster answers (``cluster.health``; never ``ping``/``info``)."""
        if not self._checked:
            self._call("check cluster health", self._es.cluster.health)
            self._checked = True


#: Per-document ``_mget`` errors of a shard that is not (yet) active: waited for, as a lost node.
_SHARD_NOT_READY = frozenset(
    {
        "no_shard_available_action_exception",
        "unavailable_shards_exception",
        "shard_not_found_exception",
        "node_not_connected_exception",
        "node_disconnected_exception",
        # the shard is on its node again but still recovering ("CurrentState[RECOVERING]
        # operations only allowed when shard state is one of [POST_RECOVERY, STARTED]")
        "illegal_index_shard_state_exception",
    }
)


def _error_type(doc: dict[str, Any]) -> str:
    """The ``type`` of a failed ``_mget`` document's ``error`` (its first root cause's)."""
    err = doc.get("error")
    if not isinstance(err, dict):
        return ""
    root = (err.get("root_cause") or [err])[0]
    return str(root.get("type") or err.get("type") or "")


def lost(exc: Exception) -> bool:
    """Whether ``exc`` says the cluster is (for now) out of reach or busy, not that it refused
    the request: a connection error or timeout, or HTTP 429/502/503/504."""
    if isinstance(exc, ApiError):
        return exc.meta.status in (429, 502, 503, 504) and not is_block(exc.body)
    return isinstance(exc, TransportError)


def _warn(message: str) -> None:
    """A :class:`ClusterWarning` attributed to the first caller outside this package."""
    frame: FrameType | None = sys._getframe(1)
    level = 2
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(ClusterWarning(message), stacklevel=level)


def _short_cause(text: str) -> str:
    for needle in (
        "Connection refused",
        "timed out",
        "Name or service not known",
        "No route to host",
        "Temporary failure in name resolution",
        "Connection reset",
        "Remote end closed connection",
        "RemoteDisconnected",
        "Connection aborted",
        "Broken pipe",
    ):
        if needle in text:
            return "remote end closed connection" if needle == "RemoteDisconnected" else needle.lower()
    return text[:200]
