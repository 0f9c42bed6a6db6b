"""What the cluster can do: facts read from it (version, licence, retrievers, ingest processors,
analyzers) for ``esrag doctor`` and setup, and the capabilities *learned once* and kept in the
index's mapping ``_meta`` (:class:`Learned`) so that a search needs no probe.

Learned capabilities (``_meta.capabilities``) are written when esrag creates an index or sets
up / ingests into one whose record is missing or was learned from another Elasticsearch version,
and re-learned when a native path is refused (a licence downgraded, a node replaced).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from elasticsearch import ApiError, TransportError

from esrag.errors import ConfigError
from esrag.stores.elastic.bodies import retriever_probe_body
from esrag.stores.elastic.connection import Connected, _warn, classify_retriever_probe, error_reason
from esrag.stores.elastic.documents import now
from esrag.stores.elastic.vector_options import plan_vectors

#: the key of the learned capabilities inside the index's mapping ``_meta``.
META_KEY = "capabilities"


@dataclass(slots=True)
class Learned:
    """Capabilities learned once and kept in the index's ``_meta.capabilities``.

    Attributes:
        es_version: the Elasticsearch version they were learned from (``"9.2.8"``).
        rrf: whether the native ``rrf`` retriever works (feature and licence), and why.
        default_pipeline: whether the index's default ingest pipeline stamps ``indexed_at``
            (else esrag stamps it).
        learned_at: when (ISO 8601, UTC).
        vectors: the vector plan a NEW index gets on this cluster with the store's settings
            (:meth:`esrag.stores.elastic.vector_options.VectorPlan.to_meta`), or None; the
            mappings component moves it to ``_meta.vectors``, which an index keeps for good.
    """

    es_version: str
    rrf: tuple[bool, str]
    default_pipeline: bool
    learned_at: str = ""
    vectors: dict[str, Any] | None = None

    def to_meta(self) -> dict[str, Any]:
        """The ``_meta.capabilities`` object (with ``vectors`` when a plan was made)."""
        out: dict[str, Any] = {
            "es_version": self.es_version,
            "rrf": {"available": self.rrf[0], "detail": self.rrf[1]},
            "default_pipeline": self.default_pipeline,
            "learned_at": self.learned_at or now(),
        }
        if self.vectors is not None:
            out["vectors"] = self.vectors
        return out

    @classmethod
    def from_meta(cls, raw: dict[str, Any] | None) -> Learned | None:
        """The learned capabilities of an index's ``_meta`` (None when it has none: an index
        made before esrag kept them)."""
        found = (raw or {}).get(META_KEY)
        if not isinstance(found, dict) or "rrf" not in found or "default_pipeline" not in found:
            return None
        rrf = found["rrf"] or {}
        vectors = found.get("vectors")
        return cls(
            str(found.get("es_version", "")),
            (bool(rrf.get("available")), str(rrf.get("detail", ""))),
            bool(found["default_pipeline"]),
            str(found.get("learned_at", "")),
            vectors if isinstance(vectors, dict) else None,
        )


@dataclass(slots=True)
class Capabilities:
    """What a cluster can do, found once per connection.

    Attributes:
        version: server version (nodes info API), e.g. ``"9.2.8"``.
        licence: licence type and status (``"trial"``, ``"active"``), or ``"unknown"``.
        rrf, linear: whether the native retriever is usable, with the reason.
        ingest_processors: processor types the ingest nodes offer (``set``…).
        analyzers: language analyzer name -> available.
    """

    version: str
    licence: dict[str, str]
    rrf: tuple[bool, str]
    linear: tuple[bool, str]
    ingest_processors: list[str] = field(default_factory=list)
    analyzers: dict[str, bool] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "licence": self.licence,
            "rrf": {"available": self.rrf[0], "detail": self.rrf[1]},
            "linear": {"available": self.linear[0], "detail": self.linear[1]},
            "ingest_processors": self.ingest_processors,
            "analyzers": self.analyzers,
        }


class ClusterFacts(Connected):
    """The facts of the cluster (a mixin of the store): each read when asked, the expensive
    ones once per connection."""

    _capabilities: Capabilities | None
    _retrievers: dict[str, tuple[bool, str]]
    _stemming: bool | None
    _analyzers: dict[str, bool]
    text_languages: list[str]
    language_candidates: list[str]
    index_options: str
    rescore_oversample: float | None
    vector_copy: str

    def learn(self, default_pipeline: bool) -> Learned:
        """Learn what the cluster can do now (the nodes' version and an ``rrf`` probe: two
        requests), for ``_meta.capabilities``, with the vector plan a new index gets here
        (:func:`~esrag.stores.elastic.vector_options.plan_vectors` of the store's
        ``index_options``, ``rescore_oversample`` and ``vector_copy``).

        Raises:
            ConfigError: an explicit ``[elasticsearch] index_options`` or ``rescore_oversample``
                this cluster's version cannot do (one line naming the setting and the version).
        """
        self._retrievers.pop("rrf", None)
        version = self.server_version()
        plan = plan_vectors(version, None, self.index_options, self.rescore_oversample, self.vector_copy)
        return Learned(version, self.retriever_support("rrf"), default_pipeline, now(), plan.to_meta())

    def health(self) -> dict[str, Any]:
        """``GET _cluster/health`` (status, nodes, cluster name)."""
        resp = self._call("check cluster health", self._es.cluster.health)
        self._checked = True
        return dict(resp.body)

    def server_version(self) -> str:
        """The version of the nodes (nodes info API; the lowest when they differ)."""
        resp = self._call("read the nodes' version", self._es.nodes.info, filter_path="nodes.*.version")
        versions = sorted({n["version"] for n in resp.body.get("nodes", {}).values()}, key=_version_key)
        return versions[0] if versions else "unknown"

    def licence(self) -> dict[str, str]:
        """``{"type": ..., "status": ...}`` of the cluster's licence (``unknown`` when unreadable)."""
        try:
            body = self._es.license.get().body.get("license", {})
            return {"type": body.get("type", "unknown"), "status": body.get("status", "unknown")}
        except ApiError as exc:
            return {"type": "unknown", "status": f"unreadable ({error_reason(exc.body)})"}
        except TransportError as exc:
            raise self._fail(exc, "read the licence") from None

    def retriever_support(self, name: str) -> tuple[bool, str]:
        """Whether the native ``rrf``/``linear`` retriever works here (licence and feature),
        probed once per connection with a no-hit search; ``(available, reason)``."""
        if name not in self._retrievers:
            try:
                self._es.search(index=self.alias, body=retriever_probe_body(name), ignore_unavailable=True, allow_no_indices=True)
                self._retrievers[name] = classify_retriever_probe(name, 200, {})
            except ApiError as exc:
                self._retrievers[name] = classify_retriever_probe(name, exc.meta.status, exc.body)
            except TransportError as exc:
                raise self._fail(exc, f"probe the {name} retriever") from None
        return self._retrievers[name]

    def ingest_processors(self) -> list[str]:
        """Processor types offered by the ingest nodes (``GET _nodes/ingest``)."""
        resp = self._call("list ingest processors", self._es.nodes.info, metric="ingest", filter_path="nodes.*.ingest.processors")
        types: set[str] = set()
        for node in resp.body.get("nodes", {}).values():
            types.update(p["type"] for p in node.get("ingest", {}).get("processors", []))
        return sorted(types)

    def stemming_available(self) -> bool:
        """Whether the cluster has the ``porter_stem`` token filter (analysis-common), which the
        ``english`` analyzer needs; without it esrag analyzes with ``standard`` + stop words."""
        if self._stemming is None:
            try:
                self._es.indices.analyze(tokenizer="standard", filter=["porter_stem"], text="running")
                self._stemming = True
            except ApiError as exc:
                if exc.meta.status != 400:
                    raise self._fail(exc, "check the porter_stem token filter") from None
                self._stemming = False
                _warn(
                    f"Elasticsearch at {self.url} has no porter_stem token filter ({error_reason(exc.body)}); text is "
                    "analyzed without stemming (standard analyzer + English stop words). A full distribution has it."
                )
            except TransportError as exc:
                raise self._fail(exc, "check the porter_stem token filter") from None
        return self._stemming

    def analyzer_available(self, analyzer: str) -> bool:
        """Whether the built-in ``analyzer`` (e.g. ``english``) exists on the cluster."""
        try:
            self._es.indices.analyze(analyzer=analyzer, text="running")
            return True
        except ApiError as exc:
            if exc.meta.status != 400:  # e.g. 403: a role without cluster:admin/analyze is not "no such analyzer"
                raise self._fail(exc, f"check the {analyzer} analyzer") from None
            return False
        except TransportError as exc:
            raise self._fail(exc, f"check the {analyzer} analyzer") from None

    def language_fields(self) -> dict[str, str]:
        """``{code: analyzer}`` of the ``text.<code>`` subfields a new index gets: the configured
        ``text_languages`` whose built-in analyzer this cluster has (probed with ``_analyze``
        once per connection). Missing analyzers are warned about; those languages are searched
        on ``text`` with ``esrag_text`` (the integ-test node has no language analyzers).

        Raises:
            ConfigError: a language without a built-in Elasticsearch analyzer.
        """
        from esrag.language import ES_ANALYZERS, es_language_fields

        try:
            wanted = {ES_ANALYZERS[c] for c in self.text_languages if c in ES_ANALYZERS}
            fields = es_language_fields(self.text_languages, {a: self._analyzer_cached(a) for a in wanted})
        except ValueError as exc:
            raise ConfigError(f"[language] fields: {exc}") from None
        missing = [c for c in self.text_languages if c not in fields]
        if missing:
            _warn(
                f"Elasticsearch at {self.url} has no language analyzer for {', '.join(missing)} "
                f"({', '.join(ES_ANALYZERS[c] for c in missing)}); those languages are searched on text with esrag_text. "
                "A full distribution has them."
            )
        return fields

    def _analyzer_cached(self, analyzer: str) -> bool:
        if analyzer not in self._analyzers:
            self._analyzers[analyzer] = self.analyzer_available(analyzer)
        return self._analyzers[analyzer]

    def capabilities(self, analyzers: Sequence[str] = ("english", "german", "french")) -> Capabilities:
        """Everything :mod:`esrag.store_checks` (``esrag doctor``) reports, found once per connection."""
        if self._capabilities is None:
            self._ready()
            self._capabilities = Capabilities(
                version=self.server_version(),
                licence=self.licence(),
                rrf=self.retriever_support("rrf"),
                linear=self.retriever_support("linear"),
                ingest_processors=self.ingest_processors(),
                analyzers={a: self.analyzer_available(a) for a in analyzers},
            )
        return self._capabilities


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])
