"""One settings object, read from ``esrag.toml`` and ``ESRAG_*`` environment variables.

Precedence (highest first): values passed in code (CLI flags), environment variables, the TOML
file, defaults. The TOML file is ``./esrag.toml`` unless ``ESRAG_CONFIG`` names another.
Flat top-level names are the documented environment variables (``ESRAG_DB``, ``ESRAG_ES_URL``,
``ESRAG_INDEX``, ``ESRAG_EMBEDDER``…); nested sections (``[chunking]``, ``[search]``,
``[index_text]``, ``[ingest]``, ``[elasticsearch]``) can also be set from the environment with ``__`` as separator,
e.g. ``ESRAG_SEARCH__RRF_K=30``.
"""

from __future__ import annotations

import os
import re
import tomllib
import warnings
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource
from pydantic_settings import SettingsError as _SourceError

from esrag import config_check
from esrag.errors import InvalidSettings

DEFAULT_DB = Path(".esrag") / "esrag.db"
SEARCH_MODES = ("hybrid", "bm25", "dense")
ENV_PREFIX = "ESRAG_"
#: ``ESRAG_*`` variables read outside :class:`Settings` (by esrag, its tests or benchmarks):
#: never reported as unknown. ``ESRAG_TEST_*`` (:data:`OTHER_ENV_PREFIXES`) are the tests'.
OTHER_ENV = (
    "ESRAG_CONFIG",  # the settings file (config_path)
    "ESRAG_SERVE_API_KEY",  # esrag serve / mcp --http (esrag.serve.security)
    "ESRAG_RERANK_MODEL",  # http: reranker (esrag.search.rerank)
    "ESRAG_RERANK_API_KEY",  # http: reranker (esrag.search.rerank)
    "ESRAG_MODEL_CACHE",  # exported OpenVINO models (esrag.embedding.openvino_backend)
    "ESRAG_MAVEN_REPO",  # embedding models from Maven Central (esrag.embedding.maven_models)
    "ESRAG_CPU_BF16",  # CPU probe overrides (esrag.embedding.local)
    "ESRAG_CPU_VNNI",  # CPU probe overrides (esrag.embedding.local)
    "ESRAG_SHARED_DIR",  # tests/paths.py: the shared data folder
)
#: ``ESRAG_SOURCE_<NAME>_TOKEN``: the token of ``[sources.NAME]`` (esrag.gitsync.token_variable)
OTHER_ENV_PREFIXES = ("ESRAG_TEST_", "ESRAG_SOURCE_")


class SettingsWarning(UserWarning):
    """A setting esrag ignores (an unknown ``ESRAG_*`` variable); says the closest known name."""


class ChunkingSettings(BaseModel):
    """Chunker choice and its parameters (characters).

    ``tau_max`` defaults to 800, not the seed's 1,500: chunks then fit the default embedder's
    256-wordpiece window instead of being truncated, and on the Qasper slice the default hybrid
    gained about a point of rec@512t (``eval/defaults.toml`` has the paired contrasts).
    """

    chunker: str = "header"
    tau_max: int = 800
    tau_min: int = 100
    # hard cap of a chunk in cl100k tokens: larger blocks are split at their seams
    # (esrag.chunking.split); 0 = off. Below 512, so every chunk fits `--budget 512` whole.
    max_block_tokens: int = Field(default=480, ge=0)
    # file suffixes read as reStructuredText (add ".txt" for Sphinx trees that use it)
    rst_suffixes: list[str] = Field(default_factory=lambda: [".rst", ".rest"])


class IndexTextSettings(BaseModel):
    """What each chunk contributes to BM25 and to the embedded text (arms S, S+T… of seed 000
    are configurations of this, not code paths).

    ``embed_fields``: chunk fields joined by a blank line to form the embedded passage, in order
    (``section_path``, ``doc_title``, ``text``, and enrichment fields ``title``, ``summary``,
    ``keywords``, ``questions``, ``context``). ``bm25_fields``: field -> weight for BM25.
    ``analyzer``: BM25 text analysis, ``english`` (Porter stemming, English stop words) or
    ``standard`` (see :mod:`esrag.analysis`); fixed when an index is created.
    ``section_context``: weight α of the section's mean vector in each chunk's vector (0 = off;
    :mod:`esrag.section_context`); ``section_context_depth``: section-path levels that define
    a section for it (2: the chunks under one ``##`` of a file with a ``#`` title). Changing
    either re-embeds the affected chunks on the next ingest.
    """

    embed_fields: list[str] = Field(default_factory=lambda: ["section_path", "text"])
    bm25_fields: dict[str, float] = Field(default_factory=lambda: {"text": 1.0, "section_path": 1.0})
    analyzer: str = "english"
    section_context: float = Field(default=1.0, ge=0.0)
    section_context_depth: int = Field(default=2, ge=1)

    @field_validator("analyzer")
    @classmethod
    def _analyzer(cls, v: str) -> str:
        from esrag.analysis import ANALYZERS

        if v not in ANALYZERS:
            raise ValueError(f"unknown analyzer {v!r}; valid: {', '.join(ANALYZERS)}")
        return v


class SearchSettings(BaseModel):
    """Search defaults. ``rank_window_size``: candidates taken from each leg before fusion;
    ``rrf_k``: the RRF rank constant (Cormack et al., 2009); ``weights``: per-leg RRF weights."""

    k: int = 10
    mode: str = "hybrid"
    rrf_k: int = 60
    rank_window_size: int = 50
    num_candidates: int = 100
    weights: dict[str, float] = Field(default_factory=lambda: {"bm25": 1.0, "dense": 1.0})
    # Second-pass levers of issue 29 (esrag.search.feedback; docs/evaluation.md "Retrieval levers"): fusion
    # function (rrf | linear), pseudo-relevance feedback from the first `prf_docs` fused hits
    # (RM3 terms -> leg bm25_prf, Rocchio beta -> leg dense_prf; their weights in `weights`,
    # default prf_weight), and parent signals (section / page weights, section depth).
    fusion: str = "rrf"
    prf_docs: int = Field(default=0, ge=0)
    prf_terms: int = Field(default=10, ge=0)
    prf_weight: float = Field(default=0.5, ge=0.0)
    rocchio_beta: float = Field(default=0.0, ge=0.0)
    parent_section: float = Field(default=0.0, ge=0.0)
    parent_page: float = Field(default=0.0, ge=0.0)
    parent_depth: int = Field(default=2, ge=1)
    # Retrieval stack of issue 7 (esrag.search.pipeline); every part is off by default.
    budget: int | None = Field(default=None, ge=1)  # cl100k tokens of source text (take_budget)
    expand: str | None = None  # neighbours:W | parent | auto-merge:M (esrag.search.expand)
    expand_max_tokens: int | None = Field(default=1024, ge=1)  # cap of one expanded hit (cl100k)
    rerank: str | None = None  # cross-encoder:MODEL | http:URL | elastic:INFERENCE_ID
    rerank_top_n: int = Field(default=30, ge=1)  # fused candidates the reranker reorders
    reformulate: int = Field(default=0, ge=0)  # LLM reformulations fused with the query (seed 002)
    corpora: list[str] = Field(default_factory=list)  # fan out over these corpora (seed 001)
    router: bool = False  # adjust per-corpus k by predicted intent (never to zero)
    # Sections, not fragments (esrag.search.sections): adjacent hits of one section become one
    # hit; a hit under min_hit_tokens cl100k tokens comes with its neighbours (0: off)
    merge_sections: bool = True
    min_hit_tokens: int = Field(default=40, ge=0)

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        if v not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {v!r}; valid: {', '.join(SEARCH_MODES)}")
        return v

    @field_validator("fusion")
    @classmethod
    def _fusion(cls, v: str) -> str:
        if v not in ("rrf", "linear"):
            raise ValueError(f"unknown fusion {v!r}; valid: linear, rrf")
        return v


class IngestSettings(BaseModel):
    """Ingest defaults: which files (gitignore-style patterns), size limit (bytes), batching,
    and ``cache_embeddings``: keep every passage vector in the embedding cache
    (``Settings.embedding_cache_path``), so a text seen before is never embedded again — the
    unchanged neighbours of an edited chunk under section-context vectors, a rebuild, a
    settings change that only regroups chunks."""

    include: list[str] = Field(default_factory=lambda: ["*.md", "*.markdown", "*.mdx", "*.rst", "*.adoc", "*.asciidoc", "*.ipynb"])
    exclude: list[str] = Field(default_factory=lambda: [".git/", "node_modules/", ".esrag/", ".venv/"])
    max_file_bytes: int = 5_000_000
    embed_batch_size: int = 16
    cache_embeddings: bool = True
    #: the deletion guard (docs/ingest.md "Deletion guard"): an ingest that would delete more than this
    #: fraction of a corpus's chunks, or lose more than this fraction of its files (per doc version),
    #: deletes nothing and fails; 1.0 = off
    #: (except for a tree that yields no file at all: only --allow-delete allows that)
    max_delete_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    #: index files reached through symbolic links that point outside the ingested tree
    follow_external_symlinks: bool = False
    #: Jupyter notebooks (.ipynb, esrag.formats.notebook): index the text outputs of code cells
    #: (``stream``, ``text/plain`` of ``execute_result``; at most 2,000 characters per output,
    #: truncation marked) after the cell's code; off: code and Markdown only
    notebook_outputs: bool = False


class ElasticsearchSettings(BaseModel):
    """``[elasticsearch]``: index and cluster settings of the Elasticsearch store (env
    ``ESRAG_ELASTICSEARCH__<NAME>``). Fields are added by the features that use them;
    docs/elasticsearch.md says what to choose for one node and for several."""

    # cluster, node failures, bulk-load profile (docs/elasticsearch.md "Running on a cluster")
    shards: int = Field(default=1, ge=1, le=1024)  # ESRAG_ELASTICSEARCH__SHARDS: primaries of a new index
    # ESRAG_ELASTICSEARCH__REPLICAS: copies of each shard in a new index; unset = the shipped
    # template's auto_expand_replicas "0-1" (0 on one node, 1 as soon as there are two)
    replicas: int | None = Field(default=None, ge=0, le=64)
    retry_seconds: float = Field(default=60.0, ge=0)  # ESRAG_ELASTICSEARCH__RETRY_SECONDS: bulk waits this long for a lost node
    # ESRAG_ELASTICSEARCH__BULK_LOAD: a first ingest / --rebuild loads with refresh_interval -1 and 0 replicas;
    # off: it did not pay on the Laravel docs, one node or three (docs/elasticsearch.md "Running on a cluster")
    bulk_load: bool = False
    health_timeout: float = Field(default=120.0, gt=0)  # seconds to wait for green after a bulk load
    #: kNN format of the ``vector`` field (``dense_vector.index_options.type``, pinned in every
    #: new index): ``auto`` chooses by the cluster's version (docs/elasticsearch.md "Vector index
    #: options and sizing"; :func:`esrag.stores.elastic.vector_options.plan_vectors`); an explicit option
    #: the cluster cannot do is a one-line error naming this setting and the version.
    index_options: Literal["auto", "hnsw", "int8_hnsw", "int4_hnsw", "bbq_hnsw"] = "auto"
    #: ``index_options.rescore_vector.oversample`` of a quantized option (Elasticsearch 9.1+):
    #: the kNN search gathers ``oversample * k`` candidates and rescores them with the float
    #: vectors; 0 = off, else 1.0-10.0; None (default) = 3.0 for ``bbq_hnsw`` on 9.1+, else off.
    rescore_oversample: float | None = None
    #: how a metadata-only update gets a chunk's vector back: ``auto`` = synthetic vectors where
    #: the cluster has them (9.2+: ``index.mapping.exclude_source_vectors``, no second copy),
    #: else the stored ``vector_bin`` copy (8.x); ``stored`` = always keep ``vector_bin``.
    vector_copy: Literal["auto", "stored"] = "auto"

    @field_validator("rescore_oversample")
    @classmethod
    def _oversample_range(cls, v: float | None) -> float | None:
        if v is not None and v != 0 and not 1.0 <= v <= 10.0:
            raise ValueError(f"[elasticsearch] rescore_oversample={v:g}: use 0 (off) or 1.0-10.0 (Elasticsearch's range)")
        return v


class RecordFields(BaseModel):
    """Field names of a record source (JSONL/CSV, :mod:`esrag.chunking.records`): which record field
    holds the id, the text, the title, the date (stored as ``effective_date``), the authority
    label, the id of the superseding record and the language; ``metadata`` lists further
    fields copied onto the chunk's metadata."""

    id: str = "id"
    text: str = "text"
    title: str | None = "title"
    date: str | None = "date"
    authority: str | None = "authority"
    superseded_by: str | None = "superseded_by"
    language: str | None = "language"
    metadata: list[str] = Field(default_factory=list)


DEMOTE_PATTERNS = (
    "release-notes.*",
    "release_notes.*",
    "releasenotes.*",
    "releases.*",
    "changelog.*",
    "change-log.*",
    "changes.*",
    "history.*",
    "changelog/",
    "release-notes/",
)


class DemoteSettings(BaseModel):
    """``[corpora.NAME] demote``: hits that compete with the prose that answers get a lower
    score (:mod:`esrag.search.demote`). ``patterns``: gitignore-style patterns of source paths
    (matched case-insensitively; default: release notes and changelogs by their usual file
    names); ``api_stubs``: also demote chunks holding a generated API reference directive
    (mkdocstrings ``::: package.Name``; Sphinx autodoc pages leave no trace in a chunk's text:
    name them in ``patterns``, e.g. ``"docs/api.rst"``); ``weight``: the factor on a
    demoted hit's fused score (1.0 turns demotion off). Written inline:
    ``demote = {patterns = ["release-notes.*", "reference/"], weight = 0.5}``."""

    patterns: list[str] = Field(default_factory=lambda: list(DEMOTE_PATTERNS))
    api_stubs: bool = True
    weight: float = Field(default=0.5, gt=0.0, le=1.0)


class CorpusSettings(BaseModel):
    """Per-corpus settings, ``[corpora.NAME]`` in esrag.toml (seed 001: each corpus shape gets
    its own chunking, k, selection, filters and authority label).

    ``k``: passages this corpus's fan-out branch returns; ``mmr_lambda`` (0..1, None = off) and
    ``mmr_pool``: maximal marginal relevance over a wide pool; ``per_source_cap``: at most that
    many passages with one ``cap_by`` value (a chunk field or metadata key); ``filters``:
    ``"effective_date <= today"`` / ``"effective_date <= YYYY-MM-DD"`` / ``"not superseded"``;
    ``authority`` and ``authority_rank`` (higher governs where sources conflict); ``expand``:
    ``"none"`` or an expansion spec overriding the search's; ``intent``: what this corpus
    answers, for the router; ``records``: field names when ingested with ``--records``;
    ``query_prefix``/``passage_prefix``: the embedder's prefixes for this corpus instead of the
    model table's (never stored in ``text`` or counted in budgets); ``site`` (a registered
    generator: ``esrag ingest --help`` lists them, :func:`esrag.sites.registry.site_names`),
    ``base_url`` (absolute http(s)) and ``url_template``: where the corpus is published
    (:mod:`esrag.sites`; as ``esrag ingest --site/--base-url/--url-template``); ``doc_version``:
    the version stored on every chunk (``--doc-version``); ``default_version``: the version
    ``esrag page``, ``GET /pages`` and MCP ``get_page`` return and a search reads when none is
    asked for (default: the most recently ingested one, :func:`esrag.app.default_version`); ``demote``: lower weight for release
    notes, changelogs and generated API stubs (:class:`DemoteSettings`); ``aliases`` and
    ``description``: other names of the library and one line on it, for ``resolve_library``.
    """

    chunker: str | None = None
    k: int | None = Field(default=None, ge=1)
    mmr_lambda: float | None = Field(default=None, ge=0.0, le=1.0)
    mmr_pool: int = Field(default=50, ge=1)
    per_source_cap: int | None = Field(default=None, ge=1)
    cap_by: str = "source_path"
    filters: list[str] = Field(default_factory=list)
    authority: str | None = None
    authority_rank: int = 0
    expand: str | None = None
    intent: str = ""
    records: RecordFields = Field(default_factory=RecordFields)
    query_prefix: str | None = None  # embedder prefixes for this corpus (None: the model table's)
    passage_prefix: str | None = None
    site: str | None = None
    base_url: str | None = None
    url_template: str | None = None
    doc_version: str | None = None
    default_version: str | None = None
    demote: DemoteSettings = Field(default_factory=DemoteSettings)
    #: other names users write for this library (``resolve_library``, ``GET /corpora?q=``), e.g. ``["rr", "remix router"]``
    aliases: list[str] = Field(default_factory=list)
    #: one line on what the corpus documents (shown by ``resolve_library``; its words help it match)
    description: str | None = None


class KeySettings(BaseModel):
    """``[serve.keys.NAME]``: one key of ``esrag serve`` / ``esrag mcp --http`` that may read only
    some corpora (docs/serving.md "Keys per corpus"; :class:`esrag.serve.security.KeyRing`).
    ``sha256``: the hex SHA-256 of the key (64 hex digits; the key itself is never stored);
    ``corpora``: the corpus names it may read (at least one); ``sync``: the ``[sources.NAME]``
    it may sync through ``POST /sync/NAME`` of ``esrag serve`` (docs/hub.md "Keep it fresh while
    serving"; default none). ``esrag keys add`` writes one."""

    sha256: str = Field(pattern=r"^[0-9a-fA-F]{64}$")
    corpora: list[str] = Field(min_length=1)
    sync: list[str] = Field(default_factory=list)


def check_key_sync(sync: Iterable[str], sources: Collection[str]) -> None:
    """A key's ``sync`` names ``[sources.NAME]`` entries only: a typo would make a key that may
    sync nothing, found out only when its webhook gets 404 (``[serve.keys.NAME]`` as loaded, and
    ``esrag keys add --sync`` before it writes).

    Raises:
        ValueError: ``'NAME' is not a [sources.NAME] (sources: A, B)`` for the first that is not
            (the caller names the key or the flag)."""
    unknown = [s for s in sync if s not in sources]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a [sources.NAME] (sources: {', '.join(sorted(sources)) or 'none'})")


#: the shortest ``[serve] sync_interval`` / ``--sync-interval`` (seconds) other than 0 (off): each
#: round fetches every source, so a shorter one is a busy loop of git fetches, not freshness
MIN_SYNC_INTERVAL = 10.0


def check_sync_interval(seconds: float) -> float:
    """``seconds`` when it is 0 (off) or at least :data:`MIN_SYNC_INTERVAL`.

    Raises:
        ValueError: otherwise (the caller names the setting or the flag)."""
    if seconds < 0 or 0 < seconds < MIN_SYNC_INTERVAL:
        raise ValueError(f"0 (never) or at least {MIN_SYNC_INTERVAL:g} seconds, got {seconds:g}")
    return seconds


class ServeSettings(BaseModel):
    """``[serve]``: ``esrag serve`` and ``esrag mcp --http``. ``keys``: the keys per corpus by
    name; ``sync_interval``: seconds between syncs of every ``[sources.NAME]`` while serving
    (the first at start; 0 = never, else at least :data:`MIN_SYNC_INTERVAL`, 10 s;
    :mod:`esrag.serve.sync`, docs/hub.md "Keep it fresh while serving"); ``search_concurrency``:
    searches one process runs at once, the others wait their turn (0 = auto: the CPUs it may use
    on the embedded store with a local embedder and no LLM or reranker server per search, else
    no limit;
    :func:`esrag.service.search_concurrency`, docs/serving.md "Many clients at once")."""

    keys: dict[str, KeySettings] = Field(default_factory=dict)
    sync_interval: float = Field(default=0.0, ge=0)
    search_concurrency: int = Field(default=0, ge=0)

    @field_validator("sync_interval")
    @classmethod
    def _sync_interval(cls, v: float) -> float:
        return check_sync_interval(v)


class MCPSettings(BaseModel):
    """``[mcp]``: ``esrag mcp``. ``session_memory``: search_docs and get_page leave out the
    sections already sent in the same MCP session and name them (``esrag mcp --session-memory``;
    docs/serving.md "Session memory"; :mod:`esrag.serve.session_memory`)."""

    session_memory: bool = False


class SourceSettings(CorpusSettings):
    """``[sources.NAME]``: a git repository whose branches and tags are indexed as the corpus
    NAME, one documentation version per ref, by ``esrag sync`` (:mod:`esrag.gitsync`; docs/hub.md
    "Host a docs hub"). Every ``[corpora.NAME]`` setting applies too (site, base_url, k…), except
    ``doc_version``: the ref's name is the version.

    ``git``: a clone URL (https, ssh, file) or a local repository path; ``refs``: branch and tag
    names, or shell-style patterns (``v5.*``) matched against the repository's branches and tags;
    ``last``: of the refs a pattern matches, only the N highest in version order
    (:func:`esrag.gitsync.version_key`; None = all); ``path``: the docs folder inside the repository
    (POSIX, relative; "" = the root); ``allow_force_push``: index a ref that moved to a commit
    that does not descend from the one indexed last (refused otherwise). A token for private
    repositories comes from ``ESRAG_SOURCE_<NAME>_TOKEN`` (never from this file).
    """

    git: str = Field(min_length=1)
    refs: list[str] = Field(min_length=1)
    last: int | None = Field(default=None, ge=1)
    path: str = ""
    allow_force_push: bool = False

    @field_validator("path")
    @classmethod
    def _relative_path(cls, v: str) -> str:
        clean = v.strip().strip("/")
        if v.strip().startswith("/") or ".." in clean.split("/") or "\\" in clean:
            raise ValueError(f'path {v!r}: give the docs folder relative to the repository root, e.g. "docs"')
        return clean

    @field_validator("doc_version")
    @classmethod
    def _no_doc_version(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError("not used in [sources.NAME]: each branch or tag is indexed as the version of its own name; remove it")
        return v

    @field_validator("git")
    @classmethod
    def _git(cls, v: str) -> str:
        if v.strip().startswith("-"):
            raise ValueError(f"git {v!r}: give a clone URL or a repository path (not an option)")
        return v.strip()

    @field_validator("refs")
    @classmethod
    def _refs(cls, v: list[str]) -> list[str]:
        for ref in v:
            if not ref.strip() or ref.startswith("-") or any(c.isspace() or c in "~^:\\" for c in ref) or ".." in ref:
                raise ValueError(f"ref {ref!r} is not a branch or tag name (or a pattern such as v5.*)")
        return v


class LanguageSettings(BaseModel):
    """``[language]``: language of chunks and queries (:mod:`esrag.language`, seed 002).

    ``detect``: store each chunk's detected ISO 639-1 code in ``language`` at ingest (a
    record's own ``language`` field wins); ``candidates``: restrict detection to these codes
    (empty: every language the detector knows); ``min_chars``: texts with fewer letters take the
    document's language; ``filter``: only chunks in these languages (``auto``: the query's
    detected language), as ``esrag search --lang``; ``fields``: codes that get an analyzed
    subfield ``text.<code>`` with the cluster's language analyzer on Elasticsearch (e.g.
    ``["de", "es"]``; fixed when the index is created; a cluster without that analyzer keeps
    ``text`` and its ``esrag_text`` analyzer), searched for queries in that language.
    """

    detect: bool = True
    candidates: list[str] = Field(default_factory=list)
    min_chars: int = Field(default=20, ge=1)
    filter: list[str] = Field(default_factory=list)
    fields: list[str] = Field(default_factory=list)


class AnswerSettings(BaseModel):
    """``esrag ask``: the context budget (cl100k tokens of source text), the answer's output
    limit (model tokens) and the LLM's context window (model tokens; the budget is cut so that
    prompt, context and answer fit it)."""

    budget: int = Field(default=3000, ge=1)
    max_tokens: int = Field(default=800, ge=1)
    #: the LLM's context window in model tokens; None = ask its server (esrag.llm_window)
    context_tokens: int | None = Field(default=None, ge=256)


class Settings(BaseSettings):
    """All esrag settings. See the module docstring for where values come from."""

    model_config = SettingsConfigDict(env_prefix="ESRAG_", env_nested_delimiter="__", extra="ignore", populate_by_name=True)

    db: Path | None = None
    es_url: str | None = None
    es_api_key: SecretStr | None = None
    es_user: str | None = None
    es_password: SecretStr | None = None
    es_ca_certs: Path | None = None
    # Elastic Cloud and TLS (docs/elasticsearch.md "Connecting to a secured cluster")
    es_cloud_id: str | None = None  # ESRAG_ES_CLOUD_ID: an Elastic Cloud deployment, instead of ESRAG_ES_URL
    # ESRAG_ES_SSL_ASSERT_FINGERPRINT: SHA-256 (hex, colons allowed) of the cluster's CA or HTTP certificate, pinned
    es_ssl_assert_fingerprint: str | None = None
    es_verify_certs: bool = True  # ESRAG_ES_VERIFY_CERTS: verify the cluster's TLS certificate (false: warned about)
    index: str = "esrag"
    store: str | None = None
    embedder: str = "st:all-MiniLM-L6-v2"
    embedder_precision: str = "auto"
    embedder_backend: str = "auto"  # ESRAG_EMBEDDER_BACKEND: auto | openvino | torch (st: embedders; docs/performance.md)
    # ollama:/openai: embedders (esrag.embedding.remote): server URL, key, seconds per request
    embedder_url: str | None = None  # ESRAG_EMBEDDER_URL: Ollama URL, or an OpenAI-compatible base URL
    embedder_api_key: SecretStr | None = None  # ESRAG_EMBEDDER_API_KEY (never printed)
    embedder_timeout: float = Field(default=120.0, gt=0)
    embedder_concurrency: int = Field(default=4, ge=1)  # ESRAG_EMBEDDER_CONCURRENCY: ollama:/openai: batches in flight
    language: LanguageSettings = Field(default_factory=LanguageSettings)  # [language]
    entities: str | None = None  # ESRAG_ENTITIES: entity extractor (esrag.entities): llm, caps, spacy:MODEL
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    index_text: IndexTextSettings = Field(default_factory=IndexTextSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    elasticsearch: ElasticsearchSettings = Field(default_factory=ElasticsearchSettings)  # [elasticsearch]
    corpora: dict[str, CorpusSettings] = Field(default_factory=dict)  # [corpora.NAME]
    sources: dict[str, SourceSettings] = Field(default_factory=dict)  # [sources.NAME]: git sources of esrag sync
    answer: AnswerSettings = Field(default_factory=AnswerSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)  # [serve]
    mcp: MCPSettings = Field(default_factory=MCPSettings)  # [mcp]
    # LLM enrichment at index time (esrag.enrich): provider:model, server, key, limits.
    enrich: str | None = None  # ESRAG_ENRICH: e, e-k, cr or pf (off when unset)
    llm: str = "ollama:qwen2.5:7b"  # ESRAG_LLM: ollama:MODEL or openai:MODEL
    llm_url: str | None = None  # ESRAG_LLM_URL: Ollama URL, or an OpenAI-compatible base URL ending in /v1
    llm_api_key: SecretStr | None = None  # ESRAG_LLM_API_KEY (never printed)
    llm_concurrency: int = Field(default=4, ge=1)  # calls in flight
    llm_timeout: float = Field(default=120.0, gt=0)  # seconds per call
    llm_retries: int = Field(default=1, ge=0)  # extra attempts after a transport error
    llm_max_tokens: int = Field(default=1000, ge=1)  # output tokens of an enrichment call
    llm_context_max_tokens: int = Field(default=120, ge=1)  # output tokens of a CR call
    llm_num_ctx: int | None = 16384  # Ollama context window (model tokens)
    llm_json: bool = True  # ask for JSON output where the server supports it
    llm_cache: Path | None = None  # ESRAG_LLM_CACHE; default llm_cache.db beside the embedded store
    embedding_cache: Path | None = None  # ESRAG_EMBEDDING_CACHE; default embedding_cache.db beside it

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=config_path()))

    @field_validator("sources")
    @classmethod
    def _sources_are_not_corpora(cls, v: dict[str, SourceSettings], info: ValidationInfo) -> dict[str, SourceSettings]:
        for name in v:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
                raise ValueError(f"[sources.{name}]: a source name is letters, digits, '.', '_' and '-' (it names the corpus and a folder)")
        both = sorted(set(v) & set(info.data.get("corpora") or {}))
        if both:
            raise ValueError(f"[sources.{both[0]}] and [corpora.{both[0]}] both set: put the corpus settings in [sources.{both[0]}]")
        return v

    @model_validator(mode="after")
    def _source_corpora(self) -> Settings:
        """Each ``[sources.NAME]``'s corpus settings become ``corpora[NAME]`` (site, k,
        default_version… apply to the corpus everywhere: search, pages, status, serve)."""
        names = set(CorpusSettings.model_fields)
        for name, source in self.sources.items():
            self.corpora[name] = CorpusSettings(**source.model_dump(include=names))
        return self

    @model_validator(mode="after")
    def _key_sync_sources(self) -> Settings:
        for key, ks in self.serve.keys.items():
            try:
                check_key_sync(ks.sync, self.sources)
            except ValueError as exc:
                raise ValueError(f"[serve.keys.{key}] sync: {exc}") from None
        return self

    @field_validator("es_ssl_assert_fingerprint")
    @classmethod
    def _fingerprint(cls, v: str | None) -> str | None:
        digits = "".join((v or "").split()).replace(":", "")
        if v is not None and (len(digits) != 64 or any(c not in "0123456789abcdefABCDEF" for c in digits)):
            raise ValueError("expected a SHA-256 fingerprint: 64 hex digits, colons allowed (as Elasticsearch prints at first start)")
        return v

    @property
    def store_name(self) -> str:
        """``elastic`` when ``ESRAG_ES_URL`` or ``ESRAG_ES_CLOUD_ID`` is set (or ``store`` names
        it), else ``sqlite``."""
        if self.store:
            return self.store
        return "elastic" if self.es_url or self.es_cloud_id else "sqlite"

    @property
    def llm_cache_path(self) -> Path:
        """The LLM cache file: ``ESRAG_LLM_CACHE`` or ``llm_cache.db`` beside the embedded store."""
        return self.llm_cache if self.llm_cache is not None else self.db_path.parent / "llm_cache.db"

    @property
    def embedding_cache_path(self) -> Path:
        """The ingest's passage-vector cache (:class:`esrag.embedding.EmbeddingCache`):
        ``ESRAG_EMBEDDING_CACHE`` or ``embedding_cache.db`` beside the embedded store (also when
        the index itself is in Elasticsearch, like the LLM cache)."""
        return self.embedding_cache if self.embedding_cache is not None else self.db_path.parent / "embedding_cache.db"

    @property
    def db_path(self) -> Path:
        """The embedded store's SQLite file: ``ESRAG_DB`` or ``.esrag/esrag.db`` under cwd."""
        return self.db if self.db is not None else DEFAULT_DB


def config_path() -> Path:
    """The settings file: ``$ESRAG_CONFIG``, else ``esrag.toml`` in the working folder (which
    may be missing: then only the environment and defaults count)."""
    return Path(os.environ.get("ESRAG_CONFIG") or "esrag.toml")


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """The parsed settings file (``path`` or :func:`config_path`); ``{}`` when ``esrag.toml``
    is absent.

    Raises:
        InvalidSettings: ``ESRAG_CONFIG`` names a missing file; the file is not valid TOML
            (names its line and column) or cannot be read; it has a key no setting has (names
            the dotted key and the closest known one).
    """
    path = path or config_path()
    if not path.is_file():
        if os.environ.get("ESRAG_CONFIG"):
            raise InvalidSettings(f"ESRAG_CONFIG={str(path)!r}: no such file; point it at an esrag.toml or unset it")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidSettings(f"{path}: cannot read the settings file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidSettings(f"{path}: not valid TOML: {exc}") from None
    unknown = config_check.unknown_keys(Settings, data)
    if unknown:
        raise InvalidSettings(config_check.unknown_keys_message(Settings, path, unknown))
    return data


def warn_unknown_env(environ: dict[str, str] | None = None) -> list[str]:
    """Warn (:class:`SettingsWarning`, one line each) about every ``ESRAG_*`` variable that
    sets no setting and is not one esrag reads elsewhere (:data:`OTHER_ENV`), with the closest
    known name; returns the warnings' texts."""
    said = []
    for name, hint in config_check.unknown_env(
        Settings, os.environ if environ is None else environ, ENV_PREFIX, OTHER_ENV, OTHER_ENV_PREFIXES
    ):
        text = f"unknown environment variable {name} (ignored)" + (f"; did you mean {hint}?" if hint else "")
        warnings.warn(SettingsWarning(text), stacklevel=3)
        said.append(text)
    return said


def load_settings(**overrides: Any) -> Settings:
    """Settings from defaults < ``esrag.toml`` < environment < ``overrides`` (None values ignored).

    Strict: an unknown key in the settings file, a missing ``ESRAG_CONFIG`` file or a bad
    value is an :class:`~esrag.errors.InvalidSettings` of one line naming the file (or the
    ``ESRAG_*`` variable) and the dotted key (:mod:`esrag.config_check`); an unknown
    ``ESRAG_*`` variable is a :class:`SettingsWarning` naming the closest known one.

    Raises:
        InvalidSettings (a ConfigError and a ValueError): as above, e.g.
            ``esrag.toml: chunking.tau_max: expected an integer, got "big"``.
    """
    path = config_path()
    data = read_config_file(path)
    warn_unknown_env()
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        raise InvalidSettings(config_check.validation_message(Settings, exc, dict(os.environ), ENV_PREFIX, path, data, given)) from None
    except _SourceError as exc:  # an ESRAG_* value that should be JSON (a list, a table) is not
        raise InvalidSettings(config_check.source_error_message(str(exc), dict(os.environ), ENV_PREFIX)) from None
