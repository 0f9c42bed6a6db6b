"""Bulk writes over :func:`elasticsearch.helpers.streaming_bulk`, behind a small adapter that
keeps one report per chunk (:class:`BulkItem`).

``streaming_bulk`` batches the actions (``chunk_size`` documents per ``_bulk``), retries the
items refused with 429/503 — and a whole request refused so, as each of its items — with
exponential backoff (``initial_backoff`` seconds, doubling, at most ``max_backoff``) up to
``max_retries`` times, and yields one ``(ok, item)`` per action. The adapter turns those into
:class:`BulkItem` (a ``delete`` of a missing id is fine; an item that stays refused says "gave up
after N retries"), and turns a whole request refused for any other reason into one clear
:class:`~esrag.errors.StoreError`. Any other per-item error is reported and never stops the
batches after it, except a block (``cluster_block_exception``: a read-only index, e.g. under the
flood-stage disk watermark), which stops the writes with one line naming the block and the
settings call that clears it (:func:`~esrag.stores.elastic.connection.block_message`). Around it, :func:`bulk_stream` sends a batch again while a node is lost
(connection errors, timeouts, items still refused with 429/503) for a bounded time
(``[elasticsearch] retry_seconds``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from elasticsearch import ApiError, Elasticsearch, TransportError
from elasticsearch.helpers import streaming_bulk

from esrag.errors import StoreError
from esrag.stores.base import WriteReport
from esrag.stores.elastic.connection import block_message, error_reason

#: statuses retried per item (and for a whole request): the cluster is busy.
RETRYABLE = (429, 503)
#: the parts of a ``_bulk`` response the adapter reads (``filter_path``): per item its id, status,
#: result and error, not ``_index``/``_version``/``_shards``/``_seq_no`` — a smaller answer to
#: build, send and parse (Elasticsearch "Response filtering", common options).
FILTER_PATH = "items.*._id,items.*.status,items.*.result,items.*.error"


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
    retry_seconds: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[BulkItem]:
    """Send ``actions`` in ``_bulk`` requests of ``batch_size``; yield one :class:`BulkItem`
    per action (retried items after the others of their batch).

    Node failures: a batch whose request fails with a connection error or a timeout (the node
    died or restarts; the client has already tried its other nodes), and the items still
    refused with 429/503 after ``streaming_bulk``'s ``max_retries``, are sent again — only the
    actions without an outcome yet — with the same backoff (``initial_backoff`` seconds,
    doubling, at most ``max_backoff``) for up to ``retry_seconds`` seconds from the first
    failure of the batch without progress (an answer with at least one outcome restarts that
    clock). Documents are written by their stable id, so a batch sent twice never duplicates.

    Raises:
        StoreError: a whole request refused other than with 429/503, or the cluster unreachable
            for longer than ``retry_seconds`` (``fail(exc, what)`` words it; a plain message
            without it).
    """
    by_op = {a.id: a.op for a in actions}
    size = max(1, batch_size)
    for start in range(0, len(actions), size):
        yield from _batch(
            client, actions[start : start + size], by_op, max_retries, initial_backoff, max_backoff, fail, retry_seconds, sleep
        )


def _batch(
    client: Elasticsearch,
    batch: Sequence[Action],
    by_op: dict[str, str],
    max_retries: int,
    initial_backoff: float,
    max_backoff: float,
    fail: Callable[[Exception, str], StoreError] | None,
    retry_seconds: float,
    sleep: Callable[[float], None],
) -> Iterator[BulkItem]:
    """One batch through ``streaming_bulk``, sent again while a node is lost (see :func:`bulk_stream`)."""
    pending = list(batch)
    delay, since = initial_backoff, None
    while pending:
        outcome: Counter[str] = Counter()
        refused: list[BulkItem] = []
        error: Exception | None = None
        stream = streaming_bulk(
            client,
            (a.to_bulk() for a in pending),
            chunk_size=len(pending),
            raise_on_error=False,
            raise_on_exception=False,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            retry_on_status=RETRYABLE,
            yield_ok=True,
            filter_path=FILTER_PATH,
        )
        try:
            for ok, info in stream:
                item = _item(ok, info, by_op, max_retries, fail)
                if not item.ok and item.status in RETRYABLE:
                    refused.append(item)  # sent again below while there is time
                    continue
                outcome[item.id] += 1
                yield item
        except (ApiError, TransportError) as exc:  # the request itself failed: connection error, timeout
            error = exc
        left: list[Action] = []
        for a in pending:
            if outcome[a.id]:
                outcome[a.id] -= 1
            else:
                left.append(a)
        if not left:
            return
        now = time.monotonic()
        if since is None or len(left) < len(pending):
            since, delay = now, initial_backoff  # progress (or a first failure): the clock starts again
        waited = now - since
        if waited >= retry_seconds:
            if error is not None:
                raise _gave_up(error, fail, waited, len(left)) from None
            yield from (BulkItem(i.id, False, error=f"{i.error} (and {waited:.0f} s of retries)", status=i.status) for i in refused)
            return
        sleep(min(delay, retry_seconds - waited))  # the last pause ends at retry_seconds: one more try then
        delay = min(delay * 2, max_backoff)
        pending = left


def _gave_up(exc: Exception, fail: Callable[[Exception, str], StoreError] | None, waited: float, left: int) -> StoreError:
    """The error of a batch the cluster did not take for ``waited`` seconds."""
    what = f"write a bulk batch ({left} documents; retried for {waited:.0f} s, [elasticsearch] retry_seconds)"
    return fail(exc, what) if fail else StoreError(f"a bulk batch failed: {exc}")


def _item(
    ok: bool, info: dict[str, Any], by_op: dict[str, str], max_retries: int, fail: Callable[[Exception, str], StoreError] | None
) -> BulkItem:
    op, res = next(iter(info.items()))
    doc_id, status = str(res.get("_id", "")), int(res.get("status", 0))
    exc = res.get("exception")
    if isinstance(exc, ApiError):  # the whole request was refused
        blocked = block_message(error_reason(exc.body))
        if blocked:
            raise StoreError(blocked)
        if status not in RETRYABLE:
            raise (fail(exc, "write a bulk batch") if fail else StoreError(f"a bulk batch failed: {exc}"))
        return BulkItem(doc_id, False, error=f"gave up after {max_retries} retries: {status} {error_reason(exc.body)}", status=status)
    if by_op.get(doc_id, op) == "delete" and status == 404:
        return BulkItem(doc_id, True, "not_found", status=status)
    error = res.get("error")
    if isinstance(error, dict) and error.get("type") == "cluster_block_exception":
        raise StoreError(block_message(str(error.get("reason", ""))) or f"Elasticsearch refused to write: {error.get('reason')}")
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
