"""What a cluster of several nodes needs from the store: index settings (:class:`ClusterOptions`:
shards, replicas, the bulk retry budget) and the bulk-load profile of a first load
(:class:`BulkLoad`, a mixin of the store).

Bulk-load profile (``[elasticsearch] bulk_load``, off by default: measured, it did not pay at
documentation scale — docs/elasticsearch.md "Running on a cluster"): the first write into an empty
index (a first ingest, or ``--rebuild``) that carries at least one bulk batch (``batch_size``
chunks; smaller loads gain nothing) switches the index to ``refresh_interval: -1`` and
``number_of_replicas: 0`` (Elastic's "Tune for indexing speed": "Unset or increase the refresh
interval", "Disable replicas for initial loads") and records that in its ``_meta.bulk_load``
(:meth:`BulkLoad.begin_bulk_load`). When the ingest ends (:meth:`BulkLoad.end_bulk_load`, from
the store's ``refresh``) both are restored and the index's health is waited for (green; yellow
where the replicas can never be assigned: as many replicas as data nodes or more) before the
refresh and, for a rebuild, the alias swap. An ingest that died during the load leaves the
marker behind; the next ingest or ``esrag setup`` restores the settings. The price: while the
load runs, a node lost loses the shards it held (no replica yet) and the ingest waits for it
(``retry_seconds``); turn the profile off to keep failover during a first load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from esrag.errors import StoreError
from esrag.stores.elastic.assets import load_asset
from esrag.stores.elastic.connection import Connected, _warn
from esrag.stores.elastic.documents import now

if TYPE_CHECKING:
    from esrag.config import ElasticsearchSettings

#: key in an index's ``_meta`` while it is bulk-loaded: ``{"started_at", "restore"}``
BULK_LOAD_KEY = "bulk_load"


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """Index settings for the cluster and the node-failure budget (``[elasticsearch]``).

    Attributes:
        shards: primary shards of a new index (``number_of_shards``; fixed for its life).
        replicas: copies of each shard (``number_of_replicas``, auto-expand off); None keeps the
            shipped template's ``auto_expand_replicas`` ("0-1": 0 on one node, 1 from two nodes).
        retry_seconds: how long a bulk batch is sent again while a node is lost (seconds).
        bulk_load: the bulk-load profile of a first ingest / rebuild (module docstring; off by default).
        health_timeout: seconds to wait for the loaded index's health before going on.
    """

    shards: int = 1
    replicas: int | None = None
    retry_seconds: float = 60.0
    bulk_load: bool = False
    health_timeout: float = 120.0

    @classmethod
    def from_settings(cls, es: ElasticsearchSettings) -> ClusterOptions:
        """From :class:`esrag.config.ElasticsearchSettings` (``settings.elasticsearch``)."""
        return cls(es.shards, es.replicas, es.retry_seconds, es.bulk_load, es.health_timeout)

    def replica_settings(self) -> dict[str, Any]:
        """The replica settings of a loaded index: ``replicas`` with auto-expand off, or the
        shipped template's (``mappings/esrag-settings.json``)."""
        if self.replicas is not None:
            return {"number_of_replicas": self.replicas, "auto_expand_replicas": False}
        shipped = _shipped_settings()
        if shipped.get("auto_expand_replicas") not in (None, False, "false"):
            return {"auto_expand_replicas": shipped["auto_expand_replicas"]}
        return {"number_of_replicas": shipped.get("number_of_replicas", 1), "auto_expand_replicas": False}

    def create_settings(self) -> dict[str, Any]:
        """``settings`` of ``PUT <index>`` (they win over the index template): the shards, and
        the replicas when set."""
        index: dict[str, Any] = {"number_of_shards": self.shards}
        if self.replicas is not None:
            index |= self.replica_settings()
        return {"index": index}

    @staticmethod
    def load_settings() -> dict[str, Any]:
        """``PUT <index>/_settings`` that starts the bulk-load profile: no refresh, no replica."""
        return {"index": {"refresh_interval": "-1", "number_of_replicas": 0, "auto_expand_replicas": False}}

    def restore_settings(self) -> dict[str, Any]:
        """``PUT <index>/_settings`` that ends the bulk-load profile: the template's refresh
        interval (default 1 s when it sets none) and the replica settings."""
        return {"index": {"refresh_interval": _shipped_settings().get("refresh_interval"), **self.replica_settings()}}

    def wanted_replicas(self, data_nodes: int) -> int:
        """Replicas the loaded index asks for on a cluster of ``data_nodes`` data nodes."""
        if self.replicas is not None:
            return self.replicas
        auto = str(_shipped_settings().get("auto_expand_replicas") or "")
        if "-" in auto:
            low, high = auto.split("-", 1)
            top = data_nodes - 1 if high == "all" else int(high)
            return max(int(low), min(top, data_nodes - 1))
        return int(_shipped_settings().get("number_of_replicas", 1))


def _shipped_settings() -> dict[str, Any]:
    settings: dict[str, Any] = load_asset("mappings", "esrag-settings.json")["template"]["settings"]["index"]
    return settings


class BulkLoad(Connected):
    """The bulk-load profile (module docstring), a mixin of the store: it needs ``cluster``,
    ``batch_size``, the index state ``_info`` and ``_mappings`` of the lifecycle."""

    cluster: ClusterOptions
    batch_size: int
    _info: dict[str, Any] | None
    #: the index this store is bulk-loading, until :meth:`end_bulk_load`
    _bulk_load: str | None = None
    #: the index this store created (empty until written), and the index whose first write was seen
    _created: str | None = None
    _first_write_seen: str | None = None

    def _mappings(self, target: str) -> dict[str, Any] | None:  # the lifecycle's
        raise NotImplementedError

    def begin_bulk_load(self, chunks: int) -> bool:
        """Before a write of ``chunks`` chunks: start the bulk-load profile (module docstring)
        when this is the first write into an empty index and it carries at least ``batch_size``
        chunks (one ``PUT _settings`` and one ``PUT _mapping``; the emptiness of an index this
        store did not create costs one ``_count``). Decided once per index.

        Returns:
            True when the profile started now.

        Raises:
            StoreError: the cluster refuses the settings.
        """
        state = self._info
        if state is None or not self.cluster.bulk_load or self._first_write_seen == state["concrete"]:
            return False
        index = state["concrete"]
        self._first_write_seen = index
        if chunks < max(1, self.batch_size) or BULK_LOAD_KEY in state["raw"]:
            return False
        if self._created != index and self._call(f"count the chunks of {index}", self._es.count, index=index).body["count"]:
            return False
        self._call(
            f"start the bulk-load profile of {index}", self._es.indices.put_settings, index=index, settings=self.cluster.load_settings()
        )
        raw = {**state["raw"], BULK_LOAD_KEY: {"started_at": now(), "restore": self.cluster.restore_settings()["index"]}}
        self._call(f"mark {index} as bulk-loading", self._es.indices.put_mapping, index=index, meta=raw)
        self._info = {**state, "raw": raw}
        self._bulk_load = index
        return True

    def end_bulk_load(self) -> dict[str, Any] | None:
        """End the bulk-load profile this store started (module docstring): restore the index's
        refresh interval and replicas and wait for its health (the caller refreshes it). A
        no-op (None) when this store is not bulk-loading.

        Returns:
            the health report of :meth:`_wait_health`, or None.

        Raises:
            StoreError: the cluster refuses the settings, or the index is red after
                ``health_timeout`` seconds (a primary shard has no copy on any node).
        """
        index, self._bulk_load = self._bulk_load, None
        if index is None:
            return None
        return self._restore_after_load(index)

    def _recover_bulk_load(self, state: dict[str, Any]) -> None:
        """Restore the settings of an index whose bulk load another (dead) ingest began."""
        mark = state["raw"].get(BULK_LOAD_KEY)
        if mark is not None and self._bulk_load != state["concrete"]:
            restore = mark.get("restore") if isinstance(mark, dict) else None
            self._restore_after_load(state["concrete"], restore if isinstance(restore, dict) else None)

    def _restore_after_load(self, index: str, restore: dict[str, Any] | None = None) -> dict[str, Any]:
        """Restore the settings of ``index`` (``restore``: those its marker recorded; else this
        store's) and wait for its health; then drop its ``_meta`` marker."""
        settings = {"index": restore} if restore else self.cluster.restore_settings()
        self._call_waiting(
            f"restore the refresh interval and replicas of {index}",
            self.cluster.retry_seconds,
            self._es.indices.put_settings,
            index=index,
            settings=settings,
        )
        health = self._wait_health(index)
        state = self._info
        known = state is not None and state.get("concrete") == index
        raw = state["raw"] if state is not None and known else (self._mappings(index) or {}).get(index) or {}
        if BULK_LOAD_KEY in raw:
            raw = {k: v for k, v in raw.items() if k != BULK_LOAD_KEY}
            self._call(f"clear the bulk-load mark of {index}", self._es.indices.put_mapping, index=index, meta=raw)
        if state is not None and known:
            self._info = {**state, "raw": raw}
        return health

    def _wait_health(self, index: str) -> dict[str, Any]:
        """Wait up to ``health_timeout`` seconds for ``index`` to be green — or yellow when its
        replicas can never all be assigned (as many replicas as data nodes or more: one node
        with replicas >= 1). Yellow after the timeout warns (searches are answered, failover
        waits for the replicas); red raises.

        Returns:
            ``{"status", "wanted", "data_nodes", "unassigned_shards", "seconds"}``.

        Raises:
            StoreError: red after the timeout: a primary shard of ``index`` has no copy.
        """
        t0 = time.monotonic()
        if self.cluster.replicas or "auto_expand_replicas" not in self.cluster.replica_settings():
            # can they all be assigned? (auto-expanded replicas always can)
            first = self._call(f"check the health of {index}", self._es.cluster.health, index=index).body
            nodes = int(first.get("number_of_data_nodes", 1))
        else:
            nodes = 0
        replicas = self.cluster.wanted_replicas(nodes)
        wanted = "yellow" if nodes and replicas >= nodes else "green"
        timeout = self.cluster.health_timeout
        es = self._es.options(request_timeout=timeout + 30, ignore_status=408)
        body = self._call(
            f"wait for {index} to be {wanted}", es.cluster.health, index=index, wait_for_status=wanted, timeout=f"{max(1, round(timeout))}s"
        ).body
        status, unassigned = body.get("status", "red"), int(body.get("unassigned_shards", 0))
        nodes = int(body.get("number_of_data_nodes", nodes))
        replicas = self.cluster.wanted_replicas(nodes)
        report = {
            "status": status,
            "wanted": wanted,
            "data_nodes": nodes,
            "unassigned_shards": unassigned,
            "seconds": round(time.monotonic() - t0, 2),
        }
        if status == "red":
            raise StoreError(
                self._redact(
                    f"the index {index} on Elasticsearch at {self.url} is red after {timeout:.0f} s: {unassigned} shard "
                    f"copies unassigned, a primary shard has no copy on any node; bring the lost node back, see "
                    f"GET _cluster/allocation/explain, or lower [elasticsearch] replicas/shards"
                )
            )
        if status != "green" and (wanted == "green" or body.get("timed_out")):
            _warn(
                f"the index {index} on Elasticsearch at {self.url} is {status} after {report['seconds']:.0f} s: "
                f"{unassigned} replica shards unassigned ({replicas} replicas wanted on {nodes} data nodes); searches "
                "are answered from the primaries, but a node lost now loses its shards"
            )
        elif status == "yellow":
            _warn(
                f"the index {index} on Elasticsearch at {self.url} stays yellow: {replicas} replicas can never be "
                f"assigned on {nodes} data node(s) (set [elasticsearch] replicas below the number of data nodes)"
            )
        return report
