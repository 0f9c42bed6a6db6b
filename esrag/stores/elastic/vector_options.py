"""How the ``vector`` field of a new index is indexed and kept: the kNN ``index_options`` chosen
for the cluster's version (``[elasticsearch] index_options`` / ``rescore_oversample``) and where a
metadata-only update gets the vector back (``[elasticsearch] vector_copy``).

The plan is computed once, when esrag learns the cluster (:meth:`ClusterFacts.learn`), written
into the new index's mapping ``_meta.vectors`` and read back from there: an index keeps the plan
it was made with, whatever the cluster is upgraded to.

Version gates (Elasticsearch's ``dense_vector`` reference and source; each option verified live
on 8.15.5 and 9.2.8 by ``tests/test_vector_options.py``):

* ``hnsw`` (float32 HNSW): every 8.x/9.x; ``int8_hnsw``: 8.12+; ``int4_hnsw``: 8.15+ (even
  dims); ``bbq_hnsw`` (better binary quantization, 1 bit per dimension): 8.16+ (dims >= 64;
  elasticsearch PR #114783), since 9.1 the default of float vectors of >= 384 dims.
* ``rescore_vector.oversample`` in the mapping: 9.1+ (elasticsearch-specification PR #4182,
  "goes into the 9.1 specification"); values 1.0-10.0, or exactly 0 = off. Since 9.1 a new
  ``bbq_hnsw`` field rescores 3x by default, so esrag always writes the value it means.
* synthetic vectors (``index.mapping.exclude_source_vectors``, the 9.2 default): the vector is
  kept out of the stored ``_source`` and rebuilt from the index when asked for
  (``_source_exclude_vectors=false``) and by ``_update`` (elasticsearch PRs #130382, #130834;
  verified on 9.2.8 by the store tests). Older versions keep the ``vector_bin`` stored copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from esrag.errors import ConfigError

#: the ``[elasticsearch] index_options`` values (besides ``auto``).
INDEX_OPTIONS = ("hnsw", "int8_hnsw", "int4_hnsw", "bbq_hnsw")

#: the first version with each option (major, minor).
SINCE: dict[str, tuple[int, int]] = {"hnsw": (8, 0), "int8_hnsw": (8, 12), "int4_hnsw": (8, 15), "bbq_hnsw": (8, 16)}

#: the first version whose mapping takes ``index_options.rescore_vector``.
RESCORE_SINCE = (9, 1)

#: the first version with synthetic vectors (``index.mapping.exclude_source_vectors``) as esrag uses them.
SYNTHETIC_SINCE = (9, 2)

#: HNSW graph parameters pinned in every index (Elasticsearch's defaults, written out).
HNSW_M, HNSW_EF_CONSTRUCTION = 16, 100

#: the oversampling esrag writes for ``bbq_hnsw`` when ``rescore_oversample`` is unset (Elastic's 9.1 default).
BBQ_DEFAULT_OVERSAMPLE = 3.0

#: what ``auto`` chooses from 9.1 (mapping-level rescoring) for >= 64 dims, and before: measured,
#: docs/elasticsearch.md "Vector index options and sizing" (bbq_hnsw without rescoring lost 4.5 points of dense
#: rec@512t on Qasper; with 3x oversampling it equals float hnsw at 1/25 of int8's vector RAM).
AUTO_RESCORED, AUTO_OTHERWISE = "bbq_hnsw", "int8_hnsw"


def version_tuple(version: str) -> tuple[int, int, int]:
    """``"9.2.8"`` -> ``(9, 2, 8)`` (missing parts are 0; ``"unknown"`` -> ``(0, 0, 0)``)."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    return (parts + [0, 0, 0])[0], (parts + [0, 0, 0])[1], (parts + [0, 0, 0])[2]


@dataclass(frozen=True, slots=True)
class VectorPlan:
    """How a new index indexes and keeps its vectors.

    Attributes:
        index_options: the ``dense_vector.index_options`` object (``type``, ``m``,
            ``ef_construction`` and, on 9.1+ for a quantized type, ``rescore_vector``).
        vector_copy: ``"synthetic"`` (no second copy: 9.2+ rebuilds the vector from the index)
            or ``"stored"`` (the ``vector_bin`` stored field beside the indexed vector).
        requested: the setting as given (``"auto"``, ``"bbq_hnsw"``…).
        es_version: the version the plan was made for.
    """

    index_options: dict[str, Any]
    vector_copy: str
    requested: str
    es_version: str

    @property
    def kind(self) -> str:
        """The index option type (``"int8_hnsw"``…)."""
        return str(self.index_options["type"])

    @property
    def oversample(self) -> float:
        """The mapping's ``rescore_vector.oversample`` (0.0 when absent or off)."""
        return float((self.index_options.get("rescore_vector") or {}).get("oversample", 0.0))

    def to_meta(self) -> dict[str, Any]:
        """The ``_meta.vectors`` object of the index."""
        return {
            "index_options": dict(self.index_options),
            "vector_copy": self.vector_copy,
            "requested": self.requested,
            "es_version": self.es_version,
        }

    @classmethod
    def from_meta(cls, raw: dict[str, Any] | None) -> VectorPlan | None:
        """The plan of an index's ``_meta.vectors`` (None for an index made before esrag kept
        one: it has ``int8_hnsw`` and the ``vector_bin`` copy)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("index_options"), dict):
            return None
        return cls(
            dict(raw["index_options"]), str(raw.get("vector_copy", "stored")), str(raw.get("requested", "")), str(raw.get("es_version", ""))
        )


def plan_vectors(
    es_version: str,
    dims: int | None = None,
    index_options: str = "auto",
    rescore_oversample: float | None = None,
    vector_copy: str = "auto",
) -> VectorPlan:
    """The :class:`VectorPlan` of a new index on a cluster of ``es_version``.

    ``auto`` is ``bbq_hnsw`` with 3x rescoring on 9.1+ (where the mapping can say
    ``rescore_vector``) and ``int8_hnsw`` before (8.15 has no BBQ; on 8.16-9.0 BBQ cannot be
    rescored from the mapping, and unrescored it loses recall), and never ``bbq_hnsw`` for fewer
    than 64 dims. ``rescore_oversample`` None means 3.0 for ``bbq_hnsw`` on 9.1+, else off.

    Args:
        es_version: the cluster's (lowest) node version, ``"9.2.8"``.
        dims: vector dimensions (None: not checked here).
        index_options: ``auto`` or one of :data:`INDEX_OPTIONS`.
        rescore_oversample: None, 0 (off) or 1.0-10.0.
        vector_copy: ``auto`` or ``stored``.

    Raises:
        ConfigError: an option or oversampling the cluster's version (or the dims) cannot do;
            one line naming the setting, the version and what to set instead.
    """
    v = version_tuple(es_version)[:2]
    kind = _choose(index_options, v, dims, es_version)
    options: dict[str, Any] = {"type": kind, "m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION}
    oversample = rescore_oversample
    if oversample is None:
        oversample = BBQ_DEFAULT_OVERSAMPLE if kind == "bbq_hnsw" and v >= RESCORE_SINCE else 0.0
    if oversample and kind == "hnsw":
        raise ConfigError(
            f"[elasticsearch] rescore_oversample={oversample:g} needs a quantized index_options "
            "(int8_hnsw, int4_hnsw, bbq_hnsw): hnsw keeps float vectors and has nothing to rescore; set it to 0"
        )
    if oversample and v < RESCORE_SINCE:
        raise ConfigError(
            f"[elasticsearch] rescore_oversample={oversample:g}: Elasticsearch {es_version} has no "
            "index_options.rescore_vector (9.1+); set it to 0"
        )
    if kind != "hnsw" and v >= RESCORE_SINCE:  # pinned: 9.1+ would otherwise rescore bbq 3x by default
        options["rescore_vector"] = {"oversample": float(oversample)}
    copy = "synthetic" if vector_copy == "auto" and v >= SYNTHETIC_SINCE else "stored"
    return VectorPlan(options, copy, index_options, es_version)


def _choose(requested: str, v: tuple[int, int], dims: int | None, es_version: str) -> str:
    if requested == "auto":
        if v < RESCORE_SINCE or (dims is not None and dims < 64):
            return AUTO_OTHERWISE
        return AUTO_RESCORED
    if requested not in INDEX_OPTIONS:
        raise ConfigError(f"[elasticsearch] index_options={requested!r} is not one of auto, {', '.join(INDEX_OPTIONS)}")
    since = SINCE[requested]
    if v < since:
        raise ConfigError(
            f"[elasticsearch] index_options={requested}: Elasticsearch {es_version} cannot index it "
            f"({since[0]}.{since[1]}+); use auto, {', '.join(k for k in INDEX_OPTIONS if SINCE[k] <= v)}"
        )
    if dims is not None:
        _check_dims(requested, dims)
    return requested


def _check_dims(kind: str, dims: int) -> None:
    if kind == "bbq_hnsw" and dims < 64:
        raise ConfigError(f"[elasticsearch] index_options=bbq_hnsw needs vectors of >= 64 dims (the embedder has {dims}); use int8_hnsw")
    if kind == "int4_hnsw" and dims % 2:
        raise ConfigError(f"[elasticsearch] index_options=int4_hnsw needs an even number of dims (the embedder has {dims}); use int8_hnsw")


def check_dims(plan: VectorPlan, dims: int) -> VectorPlan:
    """``plan`` for vectors of ``dims`` dimensions: an ``auto`` plan that chose ``bbq_hnsw`` for
    fewer than 64 dims becomes ``int8_hnsw`` (same oversampling rule).

    Raises:
        ConfigError: an explicit ``bbq_hnsw`` under 64 dims or ``int4_hnsw`` with odd dims.
    """
    if plan.requested == "auto" and plan.kind == "bbq_hnsw" and dims < 64:
        options = {**plan.index_options, "type": "int8_hnsw"}
        if "rescore_vector" in options:
            options["rescore_vector"] = {"oversample": 0.0}
        return VectorPlan(options, plan.vector_copy, plan.requested, plan.es_version)
    _check_dims(plan.kind, dims)
    return plan


def apply_plan(mappings: dict[str, Any], settings: dict[str, Any], plan: VectorPlan) -> None:
    """Write ``plan`` into a mappings component: ``vector.index_options``, ``_meta.vectors``,
    and for synthetic vectors ``index.mapping.exclude_source_vectors: true`` (pinned: the 9.2
    default). ``_source.excludes`` stays ``["vector", "vector_bin"]``: on 9.2.8 the vector is
    still rebuilt from the index on ``_source_exclude_vectors=false`` and by ``_update``
    (verified live by the store tests)."""
    mappings["properties"]["vector"]["index_options"] = dict(plan.index_options)
    mappings["_meta"]["vectors"] = plan.to_meta()
    if plan.vector_copy == "synthetic":
        settings.setdefault("index", {}).setdefault("mapping", {})["exclude_source_vectors"] = True
