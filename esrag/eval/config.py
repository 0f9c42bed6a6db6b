"""``esrag eval`` configuration: the TOML an evaluation reads, validated by pydantic like the
settings (:mod:`esrag.config`), and the :class:`EvalConfig` it becomes.

A config file (``eval/qasper.toml``; paths relative to the file) has top-level keys ``arms``
(a list, or ``[arms.NAME]`` tables plus ``use``), ``retrievers``, ``budgets``, ``reranker``
(a spec or ``[reranker] target/depth``), ``reformulations``, ``embedder``, ``cache``, ``out``,
``seed``, ``resamples``; a ``[dataset]`` table (``kind``, ``path``, ``limit``, ``split``, ``root``); and
``[[contrasts]]`` tables. A bad file fails with one line naming the file, the key and the
problem (``eval/x.toml: budgets.1: Input should be greater than 0``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError, model_validator
from pydantic.dataclasses import dataclass

from esrag.errors import ConfigError
from esrag.eval.arms import ARM_NAMES
from esrag.eval.datasets import KINDS
from esrag.eval.stats import RESAMPLES

_M = TypeVar("_M", bound=BaseModel)

DEFAULT_ARMS = ("S", "S+T", "F512c", "F256t", "P", "FL", "default", "lc-header", "lc-recursive-512t")
DEFAULT_RETRIEVERS = ("bm25", "dense", "hybrid")
DEFAULT_BUDGETS = (512, 1024, 2048)

_ARBITRARY = ConfigDict(arbitrary_types_allowed=True)

Metric = Literal["rec", "prec", "recall@1", "recall@5", "recall@10", "recall@50", "mrr", "ndcg@10"]
"""What a contrast compares: rec@Bt / prec@Bt at its budget, or a ranking metric (gold
documents or, on ``docs``, gold sections; the budget does not apply)."""


@dataclass
class ContrastSpec:
    """A paired contrast A − B.

    Attributes:
        a, b: ``"ARM/RETRIEVER"`` (or ``"ARM"`` with ``retriever`` given).
        family: Holm family name (tests are adjusted within it).
        margin: TOST equivalence margin in points (None: a two-sided test only).
        metric: ``rec`` or ``prec`` (at ``budget``), or a ranking metric (:data:`Metric`);
        budget: B in cl100k tokens (None: the first budget).
    """

    a: str
    b: str
    family: str = "exploratory"
    margin: float | None = None
    metric: Metric = "rec"
    budget: PositiveInt | None = None

    @property
    def label(self) -> str:
        return f"{self.a} − {self.b}"


@dataclass(config=_ARBITRARY)
class EvalConfig:
    """What to evaluate. Paths in a TOML config are relative to the config file.

    Attributes:
        kind, path: the dataset (``qasper``, ``beir``, ``squad``, ``spans``, ``docs``) and its file/folder.
        root: ``docs`` only: the folder holding the corpora the questions name (None: found
            beside the questions, :func:`esrag.eval.docs.default_root`).
        limit: first N pools (per-document datasets) or questions (pooled); split: BEIR qrels.
        arms, retrievers: grid axes (arm names, ``bm25``/``dense``/``hybrid``/``MODE+rerank``).
        budgets: B values in cl100k tokens; the first is the primary budget.
        contrasts: paired contrasts to test.
        custom_arms: ``[arms.NAME]`` tables (see :func:`esrag.eval.arms.make_arm`).
        reranker, rerank_depth: ``module:function``, an ``esrag.rerankers`` spec
            (``http:URL``, ``cross-encoder:MODEL``) or a callable ``rerank(query, texts) ->
            scores``; and how many first hits it reorders.
        reformulations: LLM reformulations per query for ``MODE+reformulate`` retrievers.
        embedder: embedder spec (None: ``Settings().embedder``).
        cache: embedding cache file (None: ``$XDG_CACHE_HOME/esrag/embeddings.sqlite``).
        out: output folder (None: ``eval-out/<dataset name>``).
        seed, resamples: bootstrap / permutation seed and count.
    """

    kind: str = "qasper"
    path: Path | None = None
    limit: PositiveInt | None = None
    split: str = "test"
    root: Path | None = None
    arms: list[str] = field(default_factory=lambda: list(DEFAULT_ARMS))
    retrievers: list[str] = field(default_factory=lambda: list(DEFAULT_RETRIEVERS))
    budgets: list[int] = field(default_factory=lambda: list(DEFAULT_BUDGETS))
    contrasts: list[ContrastSpec] = field(default_factory=list)
    custom_arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    reranker: Any = None
    rerank_depth: PositiveInt = 30
    reformulations: PositiveInt = 5
    embedder: str | None = None
    cache: Path | None = None
    out: Path | None = None
    seed: int = 0
    resamples: PositiveInt = RESAMPLES

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first bad value and the valid ones."""
        if self.kind not in KINDS:
            raise ConfigError(f"unknown dataset kind {self.kind!r}; valid: {', '.join(KINDS)}")
        if self.path is None:
            raise ConfigError("no dataset: give --dataset KIND:PATH or [dataset] kind/path in the config")
        if not self.budgets or any(b < 1 for b in self.budgets):
            raise ConfigError(f"budgets must be positive cl100k token counts, got {self.budgets}")
        if not self.arms or not self.retrievers:
            raise ConfigError("at least one arm and one retriever are needed")
        for name in self.arms:
            if name not in ARM_NAMES and name not in self.custom_arms:
                raise ConfigError(f"unknown arm {name!r}; valid: {', '.join(ARM_NAMES)} (or define [arms.{name}])")
        for c in self.contrasts:
            for side in (c.a, c.b):
                arm, _, retriever = side.partition("/")
                if arm not in self.arms or retriever not in self.retrievers:
                    raise ConfigError(f"contrast {c.label}: {side} is not in the grid (arms {self.arms}, retrievers {self.retrievers})")
            if c.budget is not None and c.budget not in self.budgets:
                raise ConfigError(f"contrast {c.label}: budget {c.budget} is not among {self.budgets}")


# -- the file ------------------------------------------------------------------------------------


class Table(BaseModel):
    """A TOML table of an eval config: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class DatasetTable(Table):
    """``[dataset]``: ``kind`` (qasper, beir, squad, spans, docs), ``path`` (relative to the
    file), ``limit`` (first N pools or questions), ``split`` (BEIR qrels), ``root`` (docs: the
    corpora folder, relative to the file)."""

    kind: str = "qasper"
    path: str | None = None
    limit: PositiveInt | None = None
    split: str = "test"
    root: str | None = None


class RerankerTable(Table):
    """``[reranker]``: ``target`` (a reranker spec or ``module:attribute``) and ``depth``."""

    target: str
    depth: PositiveInt = 30


class ContrastTable(Table):
    """``[[contrasts]]``: ``a``, ``b`` as ``ARM/RETRIEVER`` (or ``ARM`` with ``retriever``),
    ``family``, ``margin`` (points), ``metric`` (rec, prec, or a ranking metric: recall@1,
    recall@5, recall@10, recall@50, mrr, ndcg@10), ``budget`` (cl100k tokens)."""

    a: str
    b: str
    retriever: str | None = None
    family: str = "exploratory"
    margin: float | None = None
    metric: Metric = "rec"
    budget: PositiveInt | None = None

    @model_validator(mode="after")
    def _sides(self) -> ContrastTable:
        if self.retriever:
            self.a = self.a if "/" in self.a else f"{self.a}/{self.retriever}"
            self.b = self.b if "/" in self.b else f"{self.b}/{self.retriever}"
        if "/" not in self.a or "/" not in self.b:
            raise ValueError(f"contrast {self.a} − {self.b}: write each side as ARM/RETRIEVER or give retriever = ...")
        return self

    def to_spec(self) -> ContrastSpec:
        return ContrastSpec(self.a, self.b, self.family, self.margin or None, self.metric, self.budget)


class ArmTable(Table):
    """``[arms.NAME]``: see :func:`esrag.eval.arms.make_arm` (keys ``base``, ``chunker``, ``tau_max``,
    ``tau_min``, ``max_block_tokens``, ``embed_fields``, ``bm25_fields``, ``analyzer``,
    ``section_context``, ``section_context_depth``, ``description``, ``search``)."""

    base: Literal["default"] | None = None
    chunker: str | None = None
    tau_max: PositiveInt | None = None
    tau_min: int | None = Field(default=None, ge=0)
    max_block_tokens: int | None = Field(default=None, ge=0)
    embed_fields: list[str] | None = None
    bm25_fields: dict[str, float] | None = None
    analyzer: str | None = None
    section_context: float | None = Field(default=None, ge=0)
    section_context_depth: PositiveInt | None = None
    description: str | None = None
    search: dict[str, Any] | None = None


class EvalFile(Table):
    """The top level of an eval TOML (see the module docstring)."""

    dataset: DatasetTable = Field(default_factory=DatasetTable)
    arms: list[str] | dict[str, Any] | None = None
    retrievers: list[str] | None = None
    budgets: list[PositiveInt] | None = None
    contrasts: list[ContrastTable] = Field(default_factory=list)
    reranker: str | RerankerTable | None = None
    reformulations: PositiveInt = 5
    embedder: str | None = None
    cache: str | None = None
    out: str | None = None
    seed: int = 0
    resamples: PositiveInt = RESAMPLES


_TABLE_OF: dict[str, type[BaseModel]] = {"contrasts": ContrastTable, "reranker": RerankerTable}


def one_line(path: Path | str, exc: ValidationError, model: type[BaseModel], prefix: str = "") -> ConfigError:
    """The first error of ``exc`` (raised validating ``model``) as one :class:`ConfigError`
    line: ``FILE: KEY.PATH: message``; unknown keys are listed with the valid ones of their
    table (``FILE: unknown [dataset] key(s) budgets; valid: kind, path, limit, split (…)``)."""
    tags = {"str", "RerankerTable", "list[str]", "dict[str,any]"}  # union branches pydantic names in a loc
    found: list[tuple[tuple[str | int, ...], str, str, bool]] = [  # (loc, type, msg, under the str branch)
        (tuple(p for p in e["loc"] if p not in tags), e["type"], e["msg"], [p for p in e["loc"] if p in tags] == ["str"])
        for e in exc.errors()
    ]
    errors = [e for e in found if not e[3]] or found  # a table given: report the table's error
    extra = [e for e in errors if e[1] == "extra_forbidden"]
    if extra:
        parent = extra[0][0][:-1]
        names = [str(e[0][-1]) for e in extra if e[0][:-1] == parent]
        table = prefix or ("" if not parent else ".".join(map(str, parent)))
        inner: type[BaseModel] = model
        for part in parent:
            f = inner.model_fields.get(str(part))
            sub = f.annotation if f is not None else None
            inner = sub if isinstance(sub, type) and issubclass(sub, BaseModel) else _TABLE_OF.get(str(part), inner)
        where = f"[{table}] " if table else ""
        return ConfigError(
            f"{path}: unknown {where}key(s) {', '.join(names)}; valid: {', '.join(inner.model_fields)} "
            "(top-level keys must come before the first [table])"
        )
    loc, _, msg, _ = errors[0]
    where = ".".join(str(p) for p in (*([prefix] if prefix else []), *loc))
    return ConfigError(f"{path}: {where}: {msg.removeprefix('Value error, ')}")


def read_validated(path: Path, model: type[_M]) -> _M:
    """The TOML file at ``path`` validated by the pydantic ``model`` (the eval and XQuAD configs).

    Raises:
        ConfigError: unreadable TOML, or a bad key or value (one line naming the file and key,
            :func:`one_line`).
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read eval config {path}: {exc}") from exc
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise one_line(path, exc, model) from None


def load_config(path: Path) -> EvalConfig:
    """Read and validate an eval TOML (see the module docstring) into an :class:`EvalConfig`.

    Raises:
        ConfigError: unreadable TOML, or a bad key or value (one line naming the file and key).
    """
    f = read_validated(path, EvalFile)
    base = path.resolve().parent
    arms: Any = f.arms if f.arms is not None else list(DEFAULT_ARMS)
    custom: dict[str, dict[str, Any]] = {}
    if isinstance(arms, dict):  # [arms.NAME] tables plus an optional list under arms.use
        for name, table in arms.items():
            if isinstance(table, dict):
                try:
                    custom[name] = ArmTable.model_validate(table).model_dump(exclude_none=True)
                except ValidationError as exc:
                    raise one_line(path, exc, ArmTable, f"arms.{name}") from None
        use = arms.get("use", [*DEFAULT_ARMS, *custom])
        if not isinstance(use, list) or not all(isinstance(a, str) for a in use):
            raise ConfigError(f"{path}: arms.use: a list of arm names")
        arms = use
    rr = f.reranker
    try:
        return EvalConfig(
            kind=f.dataset.kind,
            path=base / f.dataset.path if f.dataset.path else None,
            limit=f.dataset.limit,
            split=f.dataset.split,
            root=base / f.dataset.root if f.dataset.root else None,
            arms=list(arms),
            retrievers=list(f.retrievers or DEFAULT_RETRIEVERS),
            budgets=list(f.budgets or DEFAULT_BUDGETS),
            contrasts=[c.to_spec() for c in f.contrasts],
            custom_arms=custom,
            reranker=rr.target if isinstance(rr, RerankerTable) else rr,
            rerank_depth=rr.depth if isinstance(rr, RerankerTable) else 30,
            reformulations=f.reformulations,
            embedder=f.embedder,
            cache=base / f.cache if f.cache else None,
            out=base / f.out if f.out else None,
            seed=f.seed,
            resamples=f.resamples,
        )
    except ValidationError as exc:
        raise one_line(path, exc, EvalFile) from None


def apply_overrides(
    cfg: EvalConfig,
    dataset: tuple[str, str] | None = None,
    arms: Sequence[str] | None = None,
    retrievers: Sequence[str] | None = None,
    budgets: Sequence[int] | None = None,
    out: Path | None = None,
    limit: int | None = None,
) -> EvalConfig:
    """``cfg`` with command-line flags applied (flags win over the config file). Contrasts whose
    arms or retrievers are no longer in the grid are dropped."""
    if dataset:
        cfg = replace(cfg, kind=dataset[0], path=Path(dataset[1]))
    if limit is not None:
        cfg = replace(cfg, limit=limit)
    if arms:
        cfg = replace(cfg, arms=list(arms))
    if retrievers:
        cfg = replace(cfg, retrievers=list(retrievers))
    if budgets:
        cfg = replace(cfg, budgets=list(budgets))
    if out:
        cfg = replace(cfg, out=out)
    keep = [
        c
        for c in cfg.contrasts
        if all(s.partition("/")[0] in cfg.arms and s.partition("/")[2] in cfg.retrievers for s in (c.a, c.b))
        and (c.budget is None or c.budget in cfg.budgets)
    ]
    return replace(cfg, contrasts=keep)
