"""Arms and retrievers of the evaluation grid (seed 000, §3 Table 1 and §4.3).

An **arm** is a chunk set × indexed text: a chunker (built for the whole dataset, since FL needs
the corpus's median header-led chunk length), an optional enricher that fills LLM fields
(arms E and CR plug in here), and the fields that feed the embedded passage
(``embed_fields``) and BM25 (``bm25_fields``), plus the search settings its retrievers use.
Arms S, S+T, E and CR share boundaries and differ only in indexed text; evidence is always
matched on the chunk's own source text.

Built-in arms (:data:`ARMS`):

=================  ==========================================================================
``S``              header-led chunks (seed τ_max 1,500 / τ_min 100 characters), text only
``S+T``            the same chunks, section path + text (embedded; BM25 on both fields)
``F512c``          512-character windows, text only
``F256t``          256-token windows (cl100k), 64-token overlap, text only
``P``              paragraph packer ignoring headers (τ_max 1,500), text only
``FL``             token windows of the median S length (cl100k), no overlap, text only
``default``        exactly what ``esrag ingest`` + ``esrag search`` do with the current settings
                   (``Settings()``: chunker and its τ, ``index_text.embed_fields`` /
                   ``bm25_fields``, ``search``) — it follows the defaults when they change
``lc-header``      peer: LangChain MarkdownHeaderTextSplitter + 1,500-character cap
``lc-recursive-512t``  peer: LangChain RecursiveCharacterTextSplitter at 512 cl100k tokens
=================  ==========================================================================

Named arms search with the seed's protocol (:data:`SEED_SEARCH`: RRF k = 60, equal leg
weights, fusion over the whole ranked pool); ``default`` searches with ``Settings().search``.

A **retriever** is what the harness asks the same :class:`~esrag.search.pipeline.Pipeline` as
``esrag search`` for: a search mode (``bm25``, ``dense``, ``hybrid``), optionally followed by a
reranker (``MODE+rerank``: any callable ``rerank(query, texts) -> scores``, higher is better, or
a reranker spec, reorders the first ``depth`` hits, default 30, the seed's "hybrid top-30"; the
rest keep their order — ``esrag search --rerank``). ``MODE+reformulate`` (also
``MODE+reformulate+rerank``) searches the query and its LLM reformulations and fuses the lists
by RRF (seed 002; ``esrag search --reformulate N``, :mod:`esrag.search.reformulate`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from esrag import plugins
from esrag.analysis import check_analyzer
from esrag.chunking.base import Chunker
from esrag.chunking.baselines import FixedCharChunker, ParagraphPacker, TokenWindowChunker, length_matched
from esrag.chunking.header import HeaderChunker
from esrag.config import SEARCH_MODES, SearchSettings, Settings
from esrag.errors import ConfigError
from esrag.eval.base import SECTION_AND_TEXT, SEED_SEARCH, TEXT_ONLY, Arm, ChunkerFactory, Enricher, Rerank
from esrag.eval.llm_arms import LLM_ARM_NAMES, make_llm_arm
from esrag.indexed_text import EMBED_FIELDS
from esrag.model import Document
from esrag.search.rerank import Reranker

__all__ = [
    "ARMS",
    "ARM_NAMES",
    "CHUNKERS",
    "SECTION_AND_TEXT",
    "SEED_SEARCH",
    "TEXT_ONLY",
    "Arm",
    "Enricher",
    "Retriever",
    "default_arm",
    "make_arm",
    "make_retriever",
]


def _fl(documents: Sequence[Document]) -> Chunker:
    header = HeaderChunker()
    return length_matched([c for d in documents for c in header.chunk(replace(d))])


def _peer(name: str) -> ChunkerFactory:
    def build(documents: Sequence[Document]) -> Chunker:
        from esrag.eval import peers

        return peers.LangChainHeaderChunker() if name == "lc-header" else peers.LangChainRecursiveChunker()

    return build


#: Chunker factories by name, for built-in and config-defined arms.
CHUNKERS: dict[str, ChunkerFactory] = {
    "header": lambda docs: HeaderChunker(),
    "f512c": lambda docs: FixedCharChunker(),
    "f256t": lambda docs: TokenWindowChunker(),
    "p": lambda docs: ParagraphPacker(),
    "fl": _fl,
    "lc-header": _peer("lc-header"),
    "lc-recursive-512t": _peer("lc-recursive-512t"),
}

_SECTION_BM25 = {"text": 1.0, "section_path": 1.0}

#: Built-in arms other than ``default``: (chunker, embed_fields, bm25_fields, description).
ARMS: dict[str, tuple[str, tuple[str, ...], dict[str, float], str]] = {
    "S": ("header", TEXT_ONLY, {"text": 1.0}, "header-led chunks, text only"),
    "S+T": ("header", SECTION_AND_TEXT, _SECTION_BM25, "header-led chunks, section-path prefix"),
    "F512c": ("f512c", TEXT_ONLY, {"text": 1.0}, "512-character windows"),
    "F256t": ("f256t", TEXT_ONLY, {"text": 1.0}, "256-token windows, 64-token overlap"),
    "P": ("p", TEXT_ONLY, {"text": 1.0}, "paragraph packer ignoring headers"),
    "FL": ("fl", TEXT_ONLY, {"text": 1.0}, "token windows of the median S length"),
    "lc-header": ("lc-header", TEXT_ONLY, {"text": 1.0}, "LangChain MarkdownHeaderTextSplitter, 1,500-char cap"),
    "lc-recursive-512t": ("lc-recursive-512t", TEXT_ONLY, {"text": 1.0}, "LangChain RecursiveCharacterTextSplitter, 512 tokens"),
}
ARM_NAMES = (*ARMS, "default", *LLM_ARM_NAMES)


def default_arm(settings: Settings) -> Arm:
    """Arm ``default``: what ``esrag ingest`` builds with ``settings`` — the chunker of
    :func:`esrag.app.make_chunker` and the indexed text of :func:`esrag.app.make_ingester` — and
    the configured search settings.

    Raises:
        ConfigError: the settings ask ingest to enrich chunks (``enrich``), which the eval's
            default arm does not run yet; evaluate enrichment as an arm with an enricher.
    """
    from esrag.app import make_chunker, make_ingester

    ingester = make_ingester(settings, None, make_chunker(settings))  # type: ignore[arg-type]
    if ingester.enricher is not None:
        raise ConfigError("the default arm cannot evaluate ingest-time enrichment (ESRAG_ENRICH) yet; unset it for `esrag eval`")

    def build(documents: Sequence[Document]) -> Chunker:
        return make_chunker(settings)

    c, t = settings.chunking, settings.index_text
    embed, bm25 = tuple(ingester.embed_fields), dict(ingester.bm25_fields)
    context = f", section context {t.section_context:g} (depth {t.section_context_depth})" if t.section_context else ""
    return Arm(
        "default",
        build,
        embed,
        bm25,
        settings.search,
        None,
        f"esrag defaults: chunker {c.chunker} (tau {c.tau_max}/{c.tau_min}), embed {list(embed)}, bm25 {bm25}, "
        f"analyzer {t.analyzer}{context}",
        analyzer=t.analyzer,
        section_context=t.section_context,
        section_context_depth=t.section_context_depth,
    )


def make_arm(name: str, settings: Settings, custom: Mapping[str, Mapping[str, Any]] | None = None) -> Arm:
    """The arm ``name``: built-in (:data:`ARM_NAMES`), or defined in the config's ``[arms.NAME]``
    table (keys ``chunker`` — a name of :data:`CHUNKERS` or of an ``esrag.chunkers`` plugin —
    ``tau_max``/``tau_min`` (header chunker, characters), ``max_block_tokens`` (its cap in cl100k
    tokens, default 0: never split), ``embed_fields``, ``bm25_fields``,
    ``analyzer``, ``section_context`` and ``section_context_depth`` (:mod:`esrag.section_context`;
    α 0 when absent), ``description``, and a ``search`` table overriding the seed protocol's
    :class:`~esrag.config.SearchSettings`: ``rrf_k``, ``weights``, ``rank_window_size``). With
    ``base = "default"`` the arm is instead arm ``default`` with those keys overriding the
    settings (:func:`_from_default`).

    Raises:
        ConfigError: unknown arm or chunker, or an unknown indexed field (lists the valid ones).
    """
    custom = custom or {}
    if name in custom and custom[name].get("base") == "default":
        return _from_default(name, custom[name], settings)
    if name in custom:
        spec = custom[name]
        chunker_name = str(spec.get("chunker", "header"))
        chunker: ChunkerFactory
        if chunker_name == "header" and ("tau_max" in spec or "tau_min" in spec or "max_block_tokens" in spec):
            tau_max, tau_min = int(spec.get("tau_max", 1500)), int(spec.get("tau_min", 100))
            cap = int(spec.get("max_block_tokens", 0))
            chunker = lambda docs: HeaderChunker(tau_max=tau_max, tau_min=tau_min, max_block_tokens=cap)  # noqa: E731
        else:
            chunker = _chunker_factory(chunker_name, settings)
        embed = tuple(spec.get("embed_fields", TEXT_ONLY))
        bm25 = dict(spec.get("bm25_fields", {"text": 1.0}))
        _check_fields(name, embed, bm25)
        search = SEED_SEARCH.model_copy(update=dict(spec.get("search", {})))
        analyzer = check_analyzer(str(spec.get("analyzer", "standard")))
        alpha, depth = float(spec.get("section_context", 0.0)), int(spec.get("section_context_depth", 2))
        if alpha < 0 or depth < 1:
            raise ConfigError(f"arm {name!r}: section_context must be >= 0 and section_context_depth >= 1, got {alpha} and {depth}")
        return Arm(
            name,
            chunker,
            embed,
            bm25,
            SearchSettings(**search.model_dump()),
            None,
            str(spec.get("description", "")),
            analyzer=analyzer,
            section_context=alpha,
            section_context_depth=depth,
        )
    if name == "default":
        return default_arm(settings)
    if name in LLM_ARM_NAMES:
        return make_llm_arm(name, settings)
    if name not in ARMS:
        raise ConfigError(f"unknown arm {name!r}; valid: {', '.join(ARM_NAMES)} (or define [arms.{name}] in the config)")
    chunker_name, embed, bm25, description = ARMS[name]
    return Arm(name, CHUNKERS[chunker_name], embed, bm25, SEED_SEARCH, None, description)


_CHUNKING_KEYS = ("chunker", "tau_max", "tau_min", "max_block_tokens")
_INDEX_TEXT_KEYS = ("embed_fields", "bm25_fields", "analyzer", "section_context", "section_context_depth")


def _from_default(name: str, spec: Mapping[str, Any], settings: Settings) -> Arm:
    """Arm ``name`` = arm ``default`` with the table's overrides (``base = "default"``): the
    chunking keys replace ``[chunking]`` values, the indexed-text keys ``[index_text]`` values and
    the ``search`` table ``[search]`` values, so the arm is exactly the defaults with one lever
    changed (the levers of issue 29). Raises ConfigError for an unknown field or a bad value."""
    try:
        chosen = settings.model_copy(
            update={
                "chunking": settings.chunking.model_validate(
                    {**settings.chunking.model_dump(), **{k: spec[k] for k in _CHUNKING_KEYS if k in spec}}
                ),
                "index_text": settings.index_text.model_validate(
                    {**settings.index_text.model_dump(), **{k: spec[k] for k in _INDEX_TEXT_KEYS if k in spec}}
                ),
                "search": settings.search.model_validate({**settings.search.model_dump(), **dict(spec.get("search", {}))}),
            }
        )
    except ValueError as exc:
        raise ConfigError(f"arm {name!r}: {exc}") from None
    arm = default_arm(chosen)
    _check_fields(name, arm.embed_fields, arm.bm25_fields)
    return replace(arm, name=name, description=str(spec.get("description") or f"default with {dict(spec)}"))


def _chunker_factory(name: str, settings: Settings) -> ChunkerFactory:
    if name in CHUNKERS:
        return CHUNKERS[name]
    if name not in plugins.names("esrag.chunkers"):
        raise ConfigError(f"unknown chunker {name!r}; valid: {', '.join(sorted({*CHUNKERS, *plugins.names('esrag.chunkers')}))}")
    from esrag.app import make_chunker

    return lambda docs: make_chunker(settings, name)


def _check_fields(arm: str, embed: Sequence[str], bm25: Mapping[str, float]) -> None:
    from esrag.stores.base import TEXT_FIELDS

    bad = [f for f in embed if f not in EMBED_FIELDS] + [f for f in bm25 if f not in TEXT_FIELDS]
    if bad:
        raise ConfigError(
            f"arm {arm!r} names unknown fields {bad}; embed_fields: {', '.join(EMBED_FIELDS)}; bm25_fields: {', '.join(TEXT_FIELDS)}"
        )


# -- retrievers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Retriever:
    """What one column of the grid asks :meth:`esrag.search.pipeline.Pipeline.ranked_pool`
    for: a search mode, optionally with LLM reformulations fused by RRF and a reranker over the
    first ``depth`` fused hits (the stages of ``esrag search --reformulate N --rerank SPEC``).

    Attributes:
        name: label (``hybrid``, ``hybrid+rerank``, ``dense+reformulate+rerank``…).
        mode: ``bm25``, ``dense`` or ``hybrid``.
        rerank: the reranker (``rerank(query, texts) -> scores``, higher is better, or a
            :class:`~esrag.search.rerank.Reranker`), or None.
        depth: how many of the first hits the reranker reorders (``rerank_top_n``).
        reformulate: ``query -> [reformulations]``, or None.
    """

    name: str
    mode: str
    rerank: Rerank | Reranker | None = None
    depth: int = 30
    reformulate: Callable[[str], list[str]] | None = None


def make_retriever(
    name: str, rerank: Rerank | Reranker | None = None, depth: int = 30, reformulate: Callable[[str], list[str]] | None = None
) -> Retriever:
    """``bm25``, ``dense``, ``hybrid``, or ``MODE+rerank`` (needs ``rerank``),
    ``MODE+reformulate`` (needs ``reformulate``) or ``MODE+reformulate+rerank``.

    Raises:
        ConfigError: unknown mode or suffix, or a suffix without its reranker / reformulator.
    """
    mode, *suffixes = name.split("+")
    if mode not in SEARCH_MODES or any(s not in ("rerank", "reformulate") for s in suffixes) or len(set(suffixes)) < len(suffixes):
        raise ConfigError(
            f"unknown retriever {name!r}; valid: {', '.join(SEARCH_MODES)}, or MODE+rerank with a reranker, "
            "MODE+reformulate, MODE+reformulate+rerank"
        )
    if "rerank" in suffixes and rerank is None:
        raise ConfigError(f'retriever {name!r} needs a reranker: set reranker = "module:function" in the eval config')
    if "reformulate" in suffixes and reformulate is None:
        raise ConfigError(f"retriever {name!r} needs a reformulator (the LLM of ESRAG_LLM)")
    return Retriever(name, mode, rerank if "rerank" in suffixes else None, depth, reformulate if "reformulate" in suffixes else None)
