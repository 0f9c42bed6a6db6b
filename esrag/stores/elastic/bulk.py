"""Bulk writes over :func:`elasticsearch.helpers.streaming_bulk`, behind a small adapter that
keeps one report per chunk (:class:`BulkItem`).

``streaming_bulk`` batches the actions (``chunk_size`` documents per ``_bulk``), retries the
items refused with 429/503 — and a whole request refused so, as each of its items — with
exponential backoff (``initial_backoff`` seconds, doubling, at most ``max_backoff``) up to
``max_retries`` times, and yields one ``(ok, item)`` per action. The adapter turns those into
:class:`BulkItem` (a ``delete`` of a missing id is fine; an item that stays refused says "gave up
after N retries"), and turns a whole request refused for any other reason into one clear
:class:`~esrag.errors.StoreError`. Any other per-item error is reported and never stops the
batches after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import ApiError, Elasticsearch, TransportError
from elasticsearch.helpers import streaming_bulk

from esrag.errors import StoreError
from esrag.stores.base import WriteReport
from esrag.stores.elastic.connection import error_reason

#: statuses retried per item (and for a whole request): the cluster is busy.
RETRYABLE = (429, 503)


@dataclass(slots=True)
class BulkItem:
    """Outcome of one bulk action: ``ok``; ``result`` (``created``/``updated``/``deleted``/
    ``not_found``) or ``error`` (``type: reason``); the HTTP ``status`` of the item."""

    id: str
    ok: bool
    result: str = ""
    error: str = ""
    status: int = 0


@dataclass(slots=True)
class Action:
    """One bulk action: ``op`` (index or delete), target index, document id, optional source
    and concurrency guard."""

    op: str
    index: str
    id: str
    source: dict[str, Any] | None = None
    if_seq_no: int | None = None
    if_primary_term: int | None = None

    def to_bulk(self) -> dict[str, Any]:
        """The action as ``streaming_bulk`` takes it (``_op_type``, ``_index``, ``_id``,
        ``_source``, ``if_seq_no``/``if_primary_term``)."""
        out: dict[str, Any] = {"_op_type": self.op, "_index": self.index, "_id": self.id}
        if self.if_seq_no is not None:
            out["if_seq_no"], out["if_primary_term"] = self.if_seq_no, self.if_primary_term
        if self.source is not None:
            out["_source"] = self.source
        return out


def bulk_stream(
    client: Elasticsearch,
    actions: Sequence[Action],
    batch_size: int = 500,
    max_retries: int = 5,
    initial_backoff: float = 0.5,
    max_backoff: float = 30.0,
    fail: Callable[[Exception, str], StoreError] | None = None,
) -> Iterator[BulkItem]:
    """Send ``actions`` in ``_bulk`` requests of ``batch_size``; yield one :class:`BulkItem`
    per action (retried items after the others of their batch).

    Raises:
        StoreError: a whole request refused other than with 429/503, or the cluster unreachable
            (``fail(exc, what)`` words it; a plain message without it).
    """
    by_op = {a.id: a.op for a in actions}
    stream = streaming_bulk(
        client, (a.to_bulk() for a in actions), chunk_size=max(1, batch_size), raise_on_error=False,
        raise_on_exception=False, max_retries=max_retries, initial_backoff=initial_backoff, max_backoff=max_backoff,
        retry_on_status=RETRYABLE, yield_ok=True,
    )
    try:
        for ok, info in stream:
            yield _item(ok, info, by_op, max_retries, fail)
    except (ApiError, TransportError) as exc:
        raise (fail(exc, "write a bulk batch") if fail else StoreError(f"a bulk batch failed: {exc}")) from None


def _item(ok: bool, info: dict[str, Any], by_op: dict[str, str], max_retries: int,
          fail: Callable[[Exception, str], StoreError] | None) -> BulkItem:
    op, res = next(iter(info.items()))
    doc_id, status = str(res.get("_id", "")), int(res.get("status", 0))
    exc = res.get("exception")
    if isinstance(exc, ApiError):  # the whole request was refused
        if status not in RETRYABLE:
            raise (fail(exc, "write a bulk batch") if fail else StoreError(f"a bulk batch failed: {exc}"))
        return BulkItem(doc_id, False, error=f"gave up after {max_retries} retries: {status} {error_reason(exc.body)}",
                        status=status)
    if by_op.get(doc_id, op) == "delete" and status == 404:
        return BulkItem(doc_id, True, "not_found", status=status)
    if not ok or "error" in res or status >= 300:
        return BulkItem(doc_id, False, error=error_reason({"error": res.get("error", {})}), status=status)
    return BulkItem(doc_id, True, res.get("result", ""), status=status)


def report(items: Iterable[BulkItem]) -> WriteReport:
    """A :class:`WriteReport` of bulk outcomes: the number written, failed ids with reasons."""
    out = WriteReport()
    for item in items:
        if item.ok:
            out.written += 1
        else:
            out.failed[item.id] = item.error
    return out
