"""Index lifecycle: the state of the index behind the alias (read once: one ``GET <alias>/_mapping``
gives the concrete index, esrag's ``_meta`` and the learned capabilities), creating it with its
templates and pipeline (all or nothing), setup, rebuild into a new versioned index with an atomic
alias swap, and dropping everything; the index settings a cluster needs (shards, replicas,
:class:`~esrag.stores.elastic.cluster.ClusterOptions`) and the bulk-load profile
(:class:`~esrag.stores.elastic.cluster.BulkLoad`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elasticsearch import ApiError, NotFoundError, TransportError

from esrag.errors import EmbedderMismatch, NotIndexedError, StoreError
from esrag.stores.base import IndexMeta, check_compatible
from esrag.stores.elastic.assets import IndexNames, load_asset
from esrag.stores.elastic.bodies import index_template_body, mappings_component_body, pipeline_body, settings_component_body
from esrag.stores.elastic.capabilities import META_KEY, ClusterFacts, Learned
from esrag.stores.elastic.cluster import BulkLoad
from esrag.stores.elastic.connection import _warn, error_reason
from esrag.stores.elastic.documents import now

#: ``_meta`` key of a rebuild index: true once a run into it ended (:meth:`Lifecycle.settle_rebuild`)
SETTLED_KEY = "rebuild_settled"


class Lifecycle(BulkLoad, ClusterFacts):
    """Index state, creation, setup, rebuild and drop (a mixin of the store).

    The state (:meth:`_state`) is a dict: ``index`` (where reads and writes go: the alias, or
    the rebuild index), ``concrete`` (the versioned index), ``meta`` (:class:`IndexMeta`),
    ``raw`` (the whole ``_meta``), ``pipeline`` (a default pipeline stamps ``indexed_at``) and
    ``learned`` (:class:`Learned` or None). It is replaced, never mutated, so threads sharing
    the store see one state or the next.
    """

    names: IndexNames
    name: str
    _info: dict[str, Any] | None
    _rebuild: bool
    _rebuild_index: str | None
    _writable: set[str]

    def assets(self) -> dict[str, Any]:
        """State of esrag's objects for this alias: templates, pipeline, alias target, pending rebuild."""
        self._ready()
        n = self.names

        def exists(what: str, fn: Callable[..., Any], **kw: Any) -> bool:
            try:
                fn(**kw)
                return True
            except NotFoundError:
                return False
            except (ApiError, TransportError) as exc:
                raise self._fail(exc, f"read {what}") from None

        return {
            "index_template": exists("the index template", self._es.indices.get_index_template, name=n.template),
            "component_templates": {
                c: exists("a component template", self._es.cluster.get_component_template, name=c) for c in (n.settings, n.mappings)
            },
            "pipeline": exists("the ingest pipeline", self._es.ingest.get_pipeline, id=n.pipeline),
            "alias": self.alias,
            "index": self._alias_index(),
            "pending_rebuild": self._pending_rebuild(),
        }

    def _alias_index(self) -> str | None:
        """The concrete index behind the alias (its write index), or None."""
        try:
            resp = self._es.indices.get_alias(name=self.alias)
        except NotFoundError:
            return None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"read the alias {self.alias}") from None
        indices = resp.body
        for index, data in indices.items():
            if data.get("aliases", {}).get(self.alias, {}).get("is_write_index"):
                return index
        return sorted(indices)[-1] if indices else None

    def _mappings(self, target: str) -> dict[str, Any] | None:
        """``GET <target>/_mapping``: ``{concrete index: _meta}``, or None when there is no such
        alias or index (one request)."""
        try:
            resp = self._es.indices.get_mapping(index=target)
        except NotFoundError:
            return None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"read the mapping of {target}") from None
        return {index: (data.get("mappings") or {}).get("_meta") or {} for index, data in resp.body.items()}

    def _state(self) -> dict[str, Any] | None:
        """Cached facts of the target index (see the class docstring), or None before the first
        ingest. A fresh store reads them with one ``GET <alias>/_mapping`` when the index
        carries its learned capabilities (an index made before them also reads its settings)."""
        info = self._info
        if info is None:
            info = self._read_state()
            self._info = info
        return info

    def _read_state(self) -> dict[str, Any] | None:
        target = self._rebuild_index if self._rebuild else self.alias
        found = self._mappings(target) if target else None
        if not found:
            return None
        if len(found) > 1:  # several indices behind the alias: its write index
            concrete = self._alias_index() or sorted(found)[-1]
        else:
            concrete = next(iter(found))
        if concrete == self.alias:  # a concrete index holds the alias's name: no alias (yet)
            return None
        raw = found.get(concrete) or {}
        if "embedder" not in raw:
            raise StoreError(
                f"the index behind {target!r} on Elasticsearch at {self.url} was not made by esrag (no esrag _meta); "
                "choose another ESRAG_INDEX"
            )
        learned = Learned.from_meta(raw)
        pipeline = learned.default_pipeline if learned is not None else self._default_pipeline(concrete)
        return {
            "index": target,
            "concrete": concrete,
            "meta": IndexMeta.from_dict(raw),
            "pipeline": pipeline,
            "raw": raw,
            "learned": learned,
        }

    def _default_pipeline(self, index: str) -> bool:
        """Whether ``index`` has a default ingest pipeline (its settings; for indices made
        before esrag kept it in ``_meta.capabilities``)."""
        settings = self._call("read index settings", self._es.indices.get_settings, index=index, name="index.default_pipeline")
        return any(v.get("settings", {}).get("index", {}).get("default_pipeline") for v in settings.body.values())

    def meta(self) -> IndexMeta | None:
        """See :class:`esrag.stores.base.Store`. During a rebuild: the new index's meta."""
        state = self._state()
        return state["meta"] if state else None

    def ensure(self, meta: IndexMeta) -> None:
        """See :class:`esrag.stores.base.Store`. Installs templates, pipeline, the first
        versioned index and the alias when the alias is missing (``esrag ingest`` on an empty
        cluster). During a rebuild (:meth:`begin_rebuild`) it creates the next versioned index
        instead, without the alias. An existing index gets the link fields mapped and, when its
        learned capabilities are missing or from another Elasticsearch version, learns them
        again (:meth:`learn`), in the same ``PUT _mapping``.

        Raises:
            EmbedderMismatch: the index holds another model/dims/embed fields; the message
                names both and the way out (``esrag ingest --rebuild``).
            StoreError: the cluster is unreachable or rejects the templates (nothing is left behind).
        """
        state = self._state()
        if state is not None:
            self._check(state["meta"], meta, state["index"])
            self._recover_bulk_load(state)
            state = self._state() or state
            learned = state["learned"]
            version = self.server_version()
            if learned is None or learned.es_version != version:
                learned = self.learn(state["pipeline"])
                raw = {**state["raw"], META_KEY: learned.to_meta()}
                self._add_link_fields(state["index"], raw)
                self._info = {**state, "raw": raw, "learned": learned}
            else:
                self._add_link_fields(state["index"])
            return
        self._info = None
        if self._rebuild:
            current = self._alias_index()
            self._rebuild_index = self._install(meta, with_alias=current is None, rebuild_of=current)
            if current is None:  # nothing to rebuild: a plain first index
                self._rebuild, self._rebuild_index = False, None
        else:
            self._install(meta, with_alias=True)

    def relearn(self, rrf: tuple[bool, str]) -> None:
        """Record in ``_meta.capabilities`` that the native ``rrf`` retriever is (un)available,
        after a native request was refused (one ``PUT _mapping``; its version stays). A
        read-only store (``read_only``), or one the cluster refuses the write, keeps it in
        memory for this connection instead: a search never fails for it."""
        state = self._state()
        if state is None:
            return
        old = state["learned"]
        learned = Learned(old.es_version if old else "", rrf, state["pipeline"], now())
        raw = {**state["raw"], META_KEY: learned.to_meta()}
        if not self.read_only:  # a searcher never writes: kept for this connection only
            try:
                self._call("record the cluster's capabilities", self._es.indices.put_mapping, index=state["index"], meta=raw)
            except StoreError:  # e.g. a key with read privileges only: the search goes on, learned in memory
                pass
        self._info = {**state, "raw": raw, "learned": learned}

    def _add_link_fields(self, index: str, meta: dict[str, Any] | None = None) -> None:
        """Map ``doc_version``, ``anchor``, ``url``, ``alt_urls`` and ``translation`` in an index made before they existed
        (adding fields to a mapping is allowed; the definitions are the shipped ones); with
        ``meta``, replace the index's ``_meta`` in the same request."""
        props = load_asset("mappings", "esrag-mappings.json")["template"]["mappings"]["properties"]
        wanted = {k: props[k] for k in ("doc_version", "anchor", "url", "alt_urls", "translation")}
        extra = {"meta": meta} if meta is not None else {}
        self._call("add the link fields to the mapping", self._es.indices.put_mapping, index=index, properties=wanted, **extra)

    def _check(self, current: IndexMeta, wanted: IndexMeta, index: str) -> None:
        try:
            check_compatible(current, wanted, f"{self.url} ({index})")
        except EmbedderMismatch as exc:
            if self._rebuild:
                raise EmbedderMismatch(
                    f"{exc} A rebuild into {index} is pending for that embedder: finish it with the same embedder "
                    f"(`esrag ingest --rebuild` with ESRAG_EMBEDDER={current.embedder}) or delete the index {index}."
                ) from None
            raise EmbedderMismatch(
                f"{exc} On Elasticsearch, `esrag ingest --rebuild PATH` builds a new versioned index with the configured "
                f"embedder and swaps the alias {self.alias} to it when complete."
            ) from None

    def install(self, meta: IndexMeta) -> dict[str, Any]:
        """``esrag setup``: install templates, pipeline, first index and alias for the index
        ``meta`` describes (made by :func:`esrag.app.setup_index` from the configured embedder);
        refreshes the templates of an existing index.

        Returns:
            a report: store, url, alias, index, status, embedder, dims, templates, pipeline state.

        Raises:
            EmbedderMismatch: the existing index was built with another embedder.
            StoreError: unreachable cluster or rejected templates.
        """
        state = self._state()
        if state is None:
            self.ensure(meta)
            state = self._state()
            status = "created"
        else:
            self._check(state["meta"], meta, state["index"])
            self._recover_bulk_load(state)
            state = self._state() or state
            _, learned = self._put_assets(state["meta"], [], rebuild_of=state["raw"].get("rebuild_of"))
            learned.default_pipeline = state["pipeline"]  # the index keeps the settings it was made with
            raw = {**state["raw"], META_KEY: learned.to_meta()}
            self._call("record the cluster's capabilities", self._es.indices.put_mapping, index=state["index"], meta=raw)
            self._info = {**state, "raw": raw, "learned": learned}
            status = "exists (templates refreshed)"
        assets = self.assets()
        return {
            "store": self.name,
            "url": self.url,
            "alias": self.alias,
            "index": assets["index"],
            "status": status,
            "embedder": meta.embedder,
            "dims": meta.dims,
            "index_template": self.names.template,
            "component_templates": [self.names.settings, self.names.mappings],
            "pipeline": self.names.pipeline if assets["pipeline"] else "not installed (no ingest processors; esrag sets indexed_at)",
        }

    def _put_assets(self, meta: IndexMeta, undo: list[Callable[[], Any]], rebuild_of: str | None = None) -> tuple[bool, Learned]:
        """PUT pipeline, mappings component (its ``_meta`` with the capabilities learned now,
        :meth:`learn`), settings component and index template, recording how to undo each.
        Returns whether the pipeline is installed, and the learned capabilities."""
        n, es = self.names, self._es
        pipeline = self._put_pipeline(undo)
        learned = self.learn(pipeline)
        self._put(
            undo,
            "the mappings component template",
            es.cluster.get_component_template,
            es.cluster.put_component_template,
            es.cluster.delete_component_template,
            "component_templates",
            n.mappings,
            mappings_component_body(meta, rebuild_of, self.stemming_available(), self.language_fields(), capabilities=learned.to_meta()),
        )
        self._put(
            undo,
            "the settings component template",
            es.cluster.get_component_template,
            es.cluster.put_component_template,
            es.cluster.delete_component_template,
            "component_templates",
            n.settings,
            settings_component_body(n.pipeline if pipeline else None),
        )
        self._put(
            undo,
            "the index template",
            es.indices.get_index_template,
            es.indices.put_index_template,
            es.indices.delete_index_template,
            "index_templates",
            n.template,
            index_template_body(n),
        )
        return pipeline, learned

    def _put(
        self,
        undo: list[Callable[[], Any]],
        what: str,
        get: Callable[..., Any],
        put: Callable[..., Any],
        delete: Callable[..., Any],
        key: str,
        name: str,
        body: dict[str, Any],
    ) -> None:
        previous = _previous(get, key, name)
        try:
            put(name=name, body=body)
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"install {what} {name}") from None
        if previous is None:
            undo.append(lambda: delete(name=name))
        else:
            undo.append(lambda: put(name=name, body=previous))

    def _put_pipeline(self, undo: list[Callable[[], Any]]) -> bool:
        name, es = self.names.pipeline, self._es
        try:
            previous = es.ingest.get_pipeline(id=name).body.get(name)
        except NotFoundError:
            previous = None
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, "read the ingest pipeline") from None
        try:
            es.ingest.put_pipeline(id=name, body=pipeline_body())
        except ApiError as exc:
            reason = error_reason(exc.body)
            if exc.meta.status == 400 and ("processor" in reason.lower()):
                _warn(
                    f"Elasticsearch at {self.url} has no ingest processors ({reason}); the ingest pipeline {name} was not "
                    "installed and esrag sets indexed_at itself. A full Elasticsearch distribution has them."
                )
                return False
            raise self._fail(exc, f"install the ingest pipeline {name}") from None
        except TransportError as exc:
            raise self._fail(exc, f"install the ingest pipeline {name}") from None
        undo.append(
            (lambda: es.ingest.delete_pipeline(id=name)) if previous is None else (lambda: es.ingest.put_pipeline(id=name, body=previous))
        )
        return True

    def _install(self, meta: IndexMeta, with_alias: bool, rebuild_of: str | None = None) -> str:
        """Templates, pipeline and the next versioned index (+ alias) with the cluster's shards
        and replicas (``[elasticsearch] shards``/``replicas``); all or nothing."""
        if not meta.created_at:
            meta.created_at = now()
        undo: list[Callable[[], Any]] = []
        index = self.names.index(self._next_number())
        try:
            pipeline, learned = self._put_assets(meta, undo, rebuild_of)
            aliases = {self.alias: {"is_write_index": True}} if with_alias else None
            try:
                self._es.indices.create(index=index, aliases=aliases, settings=self.cluster.create_settings())
            except ApiError as exc:
                if error_reason(exc.body).startswith("resource_already_exists_exception") and with_alias and self._alias_index():
                    return self._alias_index() or index  # another ingest created it first
                raise self._fail(exc, f"create the index {index} with the alias {self.alias}") from None
            except TransportError as exc:
                raise self._fail(exc, f"create the index {index}") from None
            undo.append(lambda: self._es.indices.delete(index=index))
            got = (self._mappings(index) or {}).get(index) or {}
            if got.get("embedder") != meta.embedder or got.get("dims") != meta.dims:
                raise StoreError(
                    f"Elasticsearch at {self.url} created {index} without esrag's mapping: another index template with a "
                    f"higher priority than {self.names.priority} matches {self.names.pattern}; remove it or choose another ESRAG_INDEX"
                )
        except BaseException as exc:
            for step in reversed(undo):
                try:
                    step()
                except Exception:  # best effort: the original error is the one to report
                    pass
            if isinstance(exc, StoreError) and not isinstance(exc, NotIndexedError):
                raise StoreError(
                    f"{exc}. Nothing was left behind (templates, pipeline and index rolled back): fix the cause and run the command again"
                ) from None
            raise
        # what the next reads need is known: no request to read it back
        target = self.alias if with_alias else index
        self._info = {
            "index": target,
            "concrete": index,
            "meta": IndexMeta.from_dict(got),
            "pipeline": pipeline,
            "raw": got,
            "learned": Learned.from_meta(got) or learned,
        }
        self._created = index
        self._writable.update((index, target))  # made just now with esrag's settings: no write block to read back
        return index

    def _next_number(self) -> int:
        try:
            names = self._es.indices.get(index=self.names.pattern, expand_wildcards="all", allow_no_indices=True).body
        except NotFoundError:
            names = {}
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, "list the versioned indices") from None
        numbers = [n for n in (self.names.number(i) for i in names) if n is not None]
        return max(numbers, default=0) + 1

    # -- rebuild (new embedder) -------------------------------------------------------------
    def _pending_rebuilds(self) -> dict[str, dict[str, Any]]:
        """Versioned indices being filled by an unfinished rebuild (not behind the alias): name
        -> their ``_meta``."""
        try:
            mappings = self._es.indices.get_mapping(index=self.names.pattern, allow_no_indices=True).body
        except NotFoundError:
            return {}
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, "look for a pending rebuild") from None
        live = self._alias_index()
        metas = {i: d.get("mappings", {}).get("_meta", {}) or {} for i, d in mappings.items()}
        return {i: m for i, m in metas.items() if i != live and self.names.number(i) and m.get("rebuild_of")}

    def _pending_rebuild(self) -> str | None:
        """A versioned index being filled by an unfinished rebuild (not behind the alias)."""
        pending = self._pending_rebuilds()
        return max(pending, key=lambda i: self.names.number(i) or 0) if pending else None

    def begin_rebuild(self, meta: IndexMeta | None = None) -> str | None:
        """Route this store's reads and writes to a new versioned index, leaving the alias (and
        every searcher) on the current one until :meth:`finish_rebuild`.

        An unfinished rebuild whose last run ended (:meth:`settle_rebuild`: it waits for other
        corpora, or had failures) is resumed; a half-built index, whose run was killed or
        stopped by an error before it ended, is deleted (with a warning) and the rebuild starts
        afresh. The alias stays on the live index throughout. With ``meta`` the index is created
        now; without it, on the next :meth:`ensure` (the Ingester's first write), so ``meta()``
        and ``manifest()`` see the new, empty index and everything is re-embedded.

        Returns:
            the rebuild index's name, or None when it is created later.
        """
        self._ready()
        self._rebuild, self._info = True, None
        pending = self._pending_rebuilds()
        for index, raw in sorted(pending.items()):
            if not raw.get(SETTLED_KEY):
                self._call(f"delete the half-built index {index}", self._es.indices.delete, index=index)
                _warn(
                    f"deleted {index}, the half-built index of an `esrag ingest --rebuild` that did not end; this "
                    f"rebuild starts afresh (the alias {self.alias} stayed on the live index)"
                )
                del pending[index]
        self._rebuild_index = max(pending, key=lambda i: self.names.number(i) or 0) if pending else None
        if self._rebuild_index:  # resumed: half-built again until this run ends
            self._set_settled(self._rebuild_index, pending[self._rebuild_index], False)
        if meta is not None:
            self.ensure(meta)
        return self._rebuild_index

    def finish_rebuild(self, force: bool = False, delete_old: bool = True) -> dict[str, Any]:
        """Swap the alias to the rebuilt index in one atomic ``_aliases`` call, then delete the
        old index. Refuses (returns ``swapped: False`` with ``missing_corpora``) while the new
        index lacks corpora the live one has — ingest them with ``--rebuild`` too — unless
        ``force``.

        Returns:
            ``{"swapped": bool, "index": new, "previous": old, ...}``.
        """
        if not self._rebuild or not self._rebuild_index:
            self._rebuild, self._rebuild_index = False, None
            return {"swapped": False, "reason": "no rebuild in progress", "index": self._alias_index()}
        self.settle_rebuild()
        new, old = self._rebuild_index, self._alias_index()
        if self._bulk_load == new:
            self.end_bulk_load()  # restore and wait for the health before the swap (the ingest's refresh did, usually)
        self._call("refresh the rebuilt index", self._es.indices.refresh, index=new)
        missing = sorted(set(self._corpora(old)) - set(self._corpora(new))) if old else []
        if missing and not force:
            return {"swapped": False, "index": new, "previous": old, "missing_corpora": missing}
        actions: list[dict[str, Any]] = []
        if old:
            actions.append({"remove": {"index": old, "alias": self.alias}})
        actions.append({"add": {"index": new, "alias": self.alias, "is_write_index": True}})
        self._call(f"swap the alias {self.alias} to {new}", self._es.indices.update_aliases, actions=actions)
        if old and delete_old:
            self._call(f"delete the previous index {old}", self._es.indices.delete, index=old)
        self._rebuild, self._rebuild_index, self._info = False, None, None
        return {"swapped": True, "index": new, "previous": old, "deleted_previous": bool(old and delete_old)}

    def settle_rebuild(self) -> None:
        """Record in the rebuild index's ``_meta`` (``rebuild_settled``) that a run into it
        ended — complete, or with failures, or waiting for other corpora — so the next
        :meth:`begin_rebuild` resumes it rather than deleting it as half-built. No-op outside a
        rebuild or before its index exists."""
        if not self._rebuild or not self._rebuild_index:
            return
        raw = (self._mappings(self._rebuild_index) or {}).get(self._rebuild_index) or {}
        self._set_settled(self._rebuild_index, raw, True)

    def _set_settled(self, index: str, raw: dict[str, Any], settled: bool) -> None:
        meta = {**raw, SETTLED_KEY: settled}
        self._call(f"mark the rebuild index {index}", self._es.indices.put_mapping, index=index, meta=meta)
        if self._info is not None and self._info.get("concrete") == index:
            self._info = {**self._info, "raw": meta}

    @property
    def rebuilding(self) -> bool:
        """True between :meth:`begin_rebuild` and a successful :meth:`finish_rebuild`."""
        return self._rebuild

    def _corpora(self, index: str) -> list[str]:
        resp = self._call(
            f"list the corpora of {index}",
            self._es.search,
            index=index,
            body={"size": 0, "aggs": {"c": {"terms": {"field": "corpus", "size": 10_000}}}},
        )
        return [b["key"] for b in resp.body["aggregations"]["c"]["buckets"]]

    def drop(self) -> dict[str, Any]:
        """Delete everything esrag made for this alias: versioned indices, alias, templates,
        pipeline (``esrag drop``, tests' teardown). Missing pieces are skipped. Returns
        ``{"store", "url", "alias", "chunks", "indices", "templates", "pipelines"}``: chunks in
        the deleted indices, and the names deleted.

        Raises:
            StoreError: the cluster is unreachable or refuses a deletion."""
        es, n = self._es, self.names
        try:
            indices = sorted(es.indices.get(index=n.pattern, expand_wildcards="all", allow_no_indices=True).body)
            chunks = es.count(index=n.pattern, allow_no_indices=True).body["count"] if indices else 0
            for index in indices:
                _quiet(es.indices.delete, index=index)
            templates = [
                t
                for t, fn in (
                    (n.template, es.indices.delete_index_template),
                    (n.settings, es.cluster.delete_component_template),
                    (n.mappings, es.cluster.delete_component_template),
                )
                if _quiet(fn, name=t)
            ]
            pipelines = [n.pipeline] if _quiet(es.ingest.delete_pipeline, id=n.pipeline) else []
        except (ApiError, TransportError) as exc:
            raise self._fail(exc, f"drop the index {self.alias}") from None
        self._info, self._rebuild, self._rebuild_index = None, False, None
        return {
            "store": self.name,
            "url": self.url,
            "alias": self.alias,
            "chunks": chunks,
            "indices": indices,
            "templates": templates,
            "pipelines": pipelines,
        }

    def stats(self) -> dict[str, Any]:
        """See :class:`esrag.stores.base.Store`; adds url, alias, concrete index, embedder."""
        base: dict[str, Any] = {"store": self.name, "url": self.url, "alias": self.alias}
        state = self._state()
        if state is None:
            return {**base, "index": None, "chunks": 0, "sources": 0, "corpora": {}}
        sources = {"cardinality": {"field": "source_path", "precision_threshold": 40_000}}
        versions = {
            "terms": {"field": "doc_version", "size": 10_000, "missing": ""},
            "aggs": {"sources": sources, "indexed_at": {"max": {"field": "indexed_at"}}},
        }
        body = {
            "size": 0,
            "track_total_hits": True,
            "aggs": {"corpora": {"terms": {"field": "corpus", "size": 10_000}, "aggs": {"sources": sources, "versions": versions}}},
        }
        resp = self._call("count chunks", self._es.search, index=state["index"], body=body)
        corpora = {
            b["key"]: {
                "chunks": b["doc_count"],
                "sources": b["sources"]["value"],
                "versions": {
                    v["key"]: {
                        "chunks": v["doc_count"],
                        "sources": v["sources"]["value"],
                        "indexed_at": v["indexed_at"].get("value_as_string"),
                    }
                    for v in sorted(b["versions"]["buckets"], key=lambda v: v["key"])
                },
            }
            for b in sorted(resp.body["aggregations"]["corpora"]["buckets"], key=lambda b: b["key"])
        }
        meta = state["meta"]
        concrete = state["concrete"]
        return {
            **base,
            "index": concrete,
            "chunks": resp.body["hits"]["total"]["value"],
            "sources": sum(v["sources"] for v in corpora.values()),
            "corpora": corpora,
            "embedder": meta.embedder,
            "dims": meta.dims,
            "pipeline": state["pipeline"],
            "rebuilding": self._rebuild,
        }

    def close(self) -> None:
        """See :class:`esrag.stores.base.Store`."""
        self._es.close()


def _previous(get: Callable[..., Any], key: str, name: str) -> dict[str, Any] | None:
    """The current body of a component/index template (to restore on rollback), or None."""
    try:
        body = get(name=name).body
    except NotFoundError:
        return None
    for item in body.get(key, []):
        if item.get("name") == name:
            found = dict(item.get("component_template") or item.get("index_template") or {})
            for read_only in ("created_date", "created_date_millis", "modified_date", "modified_date_millis"):
                found.pop(read_only, None)
            return found
    return None


def _quiet(fn: Callable[..., Any], **kwargs: Any) -> bool:
    """``fn(**kwargs)``; False when it answered 404 (nothing to delete), else True."""
    try:
        fn(**kwargs)
    except NotFoundError:
        return False
    return True
