"""The checks table of ``esrag doctor``: what the configured store can do, and what to do
about each problem. (Not to be confused with :mod:`esrag.eval.diagnostics`, the Sim@K
diagnostics of ``esrag diagnose``.)

:func:`run_checks` returns a list of :class:`Check` (status ``ok``, ``warn`` or ``fail``, a
detail and the way out). With ``ESRAG_ES_URL`` set it reports on Elasticsearch: connectivity,
server version, licence, the capabilities found (native ``rrf`` and ``linear`` retrievers,
ingest processors, language analyzers), esrag's templates, pipeline and alias, and the index's
embedder against the configured one. Without it, on the embedded SQLite store.

This module knows nothing of the ``elasticsearch`` package: it asks the store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from esrag.config import Settings
from esrag.embedding import normalize_spec
from esrag.errors import EsragError

if TYPE_CHECKING:
    from esrag.stores.base import IndexMeta

OK, WARN, FAIL = "ok", "warn", "fail"
#: Oldest server version with the retriever API generally available (native rrf needs it).
RETRIEVERS_GA = (8, 16)
UNREACHABLE = (
    "start Elasticsearch (scripts/es-node start, or docker-compose -f docker/compose.yml up -d), fix ESRAG_ES_URL, the "
    "credentials (ESRAG_ES_API_KEY or ESRAG_ES_USER/ESRAG_ES_PASSWORD) or ESRAG_ES_CA_CERTS; or unset ESRAG_ES_URL for the embedded store"
)


@dataclass(slots=True)
class Check:
    """One finding: ``name``, ``status`` (ok/warn/fail), ``detail`` and, for a problem, ``way_out``."""

    name: str
    status: str
    detail: str
    way_out: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_checks(settings: Settings) -> list[Check]:
    """All checks for the configured store (never raises for a store problem: it reports it)."""
    if settings.store_name == "elastic":
        return elastic_checks(settings)
    return embedded_checks(settings)


def worst(checks: list[Check]) -> str:
    """``fail`` if any check failed, else ``warn`` if any warned, else ``ok``."""
    statuses = {c.status for c in checks}
    return FAIL if FAIL in statuses else WARN if WARN in statuses else OK


# -- Elasticsearch ----------------------------------------------------------------------------
@runtime_checkable
class Inspectable(Protocol):
    """What a cluster-backed store tells ``esrag doctor`` (:class:`esrag.stores.elastic.ElasticStore`)."""

    url: str
    alias: str
    names: Any  # the index's asset names (alias, template, component templates, pipeline)
    tls: str  # how the connection is secured (no secret)
    tls_safe: bool  # False: plain HTTP, or TLS without verification
    authentication: str  # which credentials are sent (a user name at most)

    def health(self) -> dict[str, Any]: ...
    def capabilities(self) -> Any: ...
    def assets(self) -> dict[str, Any]: ...
    def stemming_available(self) -> bool: ...
    def meta(self) -> Any: ...
    def close(self) -> None: ...


def elastic_checks(settings: Settings) -> list[Check]:
    """Checks of the Elasticsearch store named by ``settings`` (see the module docstring)."""
    from esrag.app import connect

    try:
        opened = connect(settings, read_only=True)
    except EsragError as exc:
        return [Check("settings", FAIL, str(exc), "fix ESRAG_ES_URL / ESRAG_INDEX / the credentials settings")]
    if not isinstance(opened, Inspectable):
        opened.close()
        return [Check("store", FAIL, f"the {opened.name} store cannot report on a cluster", "unset ESRAG_STORE")]
    store = opened
    checks = [
        Check("store", OK, f"Elasticsearch at {store.url}, alias {store.alias!r} (ESRAG_INDEX)"),
        _tls(store),
        Check("authentication", OK, store.authentication),
    ]
    try:
        try:
            health = store.health()
        except EsragError as exc:
            checks.append(Check("connectivity", FAIL, str(exc), UNREACHABLE))
            return checks
        checks.append(_connectivity(health))
        if checks[-1].status == FAIL:
            return checks
        caps = store.capabilities()
        checks += [
            _version(caps.version),
            _licence(caps.licence),
            _retriever("rrf", caps.rrf),
            _retriever("linear", caps.linear),
            _processors(caps.ingest_processors),
            _analyzers(caps.analyzers),
            _stemming(store, settings),
        ]
        checks += _assets(store.assets(), store)
        checks.append(_embedder(settings, store.meta(), f"the index behind {store.alias!r}"))
    except EsragError as exc:
        checks.append(Check("elasticsearch", FAIL, str(exc), "fix what the message names, then run `esrag doctor` again"))
    finally:
        store.close()
    return checks


def _tls(store: Inspectable) -> Check:
    """The TLS mode in use: ``warn`` for TLS without verification, and for plain HTTP to
    anything but the loopback interface (where credentials and text would cross the network
    readable)."""
    host = urlsplit(store.url).hostname or ""
    if store.tls_safe or (store.tls.startswith("plain HTTP") and host in ("127.0.0.1", "localhost", "::1")):
        return Check("tls", OK, store.tls)
    way_out = (
        "set ESRAG_ES_CA_CERTS to the cluster's CA certificate, or ESRAG_ES_SSL_ASSERT_FINGERPRINT to its SHA-256 "
        "fingerprint, and unset ESRAG_ES_VERIFY_CERTS"
        if store.tls.startswith("TLS")
        else "use an https:// URL in ESRAG_ES_URL (Elasticsearch 8+ secures HTTP with TLS by default) or ESRAG_ES_CLOUD_ID"
    )
    return Check("tls", WARN, store.tls, way_out)


def _connectivity(health: dict[str, Any]) -> Check:
    status = health.get("status", "unknown")
    detail = f"cluster {health.get('cluster_name', '?')!r} is {status} ({health.get('number_of_nodes', '?')} node(s))"
    if status == "red":
        return Check("connectivity", FAIL, detail, "some primary shards are unassigned: see GET _cluster/allocation/explain")
    return Check("connectivity", OK, detail)


def _version(version: str) -> Check:
    parts = tuple(int(p) for p in version.split("-")[0].split(".")[:2] if p.isdigit())
    if not parts or parts[0] < 8:
        return Check(
            "server version", FAIL, f"Elasticsearch {version}", "esrag needs Elasticsearch 8.x or 9.x (the 8.x Python client talks to both)"
        )
    if parts < RETRIEVERS_GA:
        return Check(
            "server version",
            WARN,
            f"Elasticsearch {version}: retrievers are GA from 8.16, so rank fusion runs client-side",
            "upgrade to 8.16+ for native rrf (results are the same; one round trip less)",
        )
    return Check("server version", OK, f"Elasticsearch {version}")


def _licence(licence: dict[str, str]) -> Check:
    kind, status = licence.get("type", "unknown"), licence.get("status", "unknown")
    detail = f"{kind} licence, {status}"
    if status != "active":
        return Check("licence", WARN, detail, "renew the licence, or start a trial: POST _license/start_trial?acknowledge=true")
    if kind in ("basic", "standard", "gold", "platinum"):
        return Check(
            "licence",
            WARN,
            f"{detail}: the native rrf retriever needs Enterprise or trial; esrag fuses client-side (same ranking)",
            "nothing needed; for native rrf start a trial (POST _license/start_trial?acknowledge=true) or use Enterprise",
        )
    return Check("licence", OK, detail)


def _retriever(name: str, found: tuple[bool, str]) -> Check:
    available, why = found
    if available:
        return Check(f"{name} retriever", OK, why)
    use = "hybrid search fuses BM25 and kNN client-side with the same RRF over one _msearch" if name == "rrf" else "not used by esrag today"
    return Check(
        f"{name} retriever",
        WARN,
        f"unavailable: {why}; {use}",
        "nothing needed; a default distribution of 8.16+ with an Enterprise or trial licence has it",
    )


def _processors(processors: list[str]) -> Check:
    if "set" in processors:
        return Check("ingest processors", OK, f"{len(processors)} processor types (set among them): the pipeline stamps indexed_at")
    return Check(
        "ingest processors",
        WARN,
        f"no 'set' processor (found: {', '.join(processors) or 'none'}): esrag stamps indexed_at itself",
        "nothing needed; a full Elasticsearch distribution (ingest-common module) has them",
    )


def _stemming(store: Inspectable, settings: Settings) -> Check:
    meta = store.meta()
    analyzer = meta.analyzer if meta else settings.index_text.analyzer
    if analyzer != "english":
        return Check("BM25 analysis", OK, f"analyzer {analyzer!r}: lowercased words, no stemming or stop words")
    if store.stemming_available():
        return Check("BM25 analysis", OK, "analyzer 'english': standard tokenizer, English stop words, porter_stem (as the embedded store)")
    return Check(
        "BM25 analysis",
        WARN,
        "analyzer 'english' without stemming: the cluster lacks the porter_stem token filter, so text is "
        "analyzed by the standard analyzer with English stop words (the embedded store also stems)",
        "nothing needed; a full distribution (analysis-common module) stems, and indices created there stem",
    )


def _analyzers(analyzers: dict[str, bool]) -> Check:
    found = [a for a, ok in analyzers.items() if ok]
    missing = [a for a, ok in analyzers.items() if not ok]
    if not missing:
        return Check("language analyzers", OK, f"available: {', '.join(found)}")
    return Check(
        "language analyzers",
        WARN,
        f"missing: {', '.join(missing)}; esrag's mapping needs none of them (its esrag_text analyzer is built from standard parts)",
        "nothing needed; a full distribution (analysis-common module) has language analyzers",
    )


def _assets(state: dict[str, Any], store: Inspectable) -> list[Check]:
    names = store.names
    checks: list[Check] = []
    templates_ok = state["index_template"] and all(state["component_templates"].values())
    missing = [n for n, ok in ((names.template, state["index_template"]), *state["component_templates"].items()) if not ok]
    if state["index"] is None:
        checks.append(
            Check(
                "alias",
                WARN,
                f"nothing indexed yet: no alias {names.alias!r}",
                "run `esrag setup`, or `esrag ingest PATH` (which sets everything up)",
            )
        )
    else:
        checks.append(Check("alias", OK, f"{names.alias!r} -> {state['index']}"))
    if templates_ok:
        checks.append(Check("templates", OK, f"index template {names.template!r} composed of {names.settings!r} and {names.mappings!r}"))
    else:
        checks.append(
            Check(
                "templates",
                WARN if state["index"] is None else FAIL,
                f"missing: {', '.join(missing)}",
                "run `esrag setup` to install them (new versioned indices need them)",
            )
        )
    checks.append(
        Check(
            "pipeline",
            OK if state["pipeline"] else WARN,
            f"ingest pipeline {names.pipeline!r} "
            + ("installed" if state["pipeline"] else "not installed: esrag stamps indexed_at itself"),
            "" if state["pipeline"] else "nothing needed; on a cluster with ingest processors `esrag setup` installs it",
        )
    )
    if state.get("pending_rebuild"):
        checks.append(
            Check(
                "rebuild",
                WARN,
                f"an unfinished rebuild is filling {state['pending_rebuild']}",
                "run `esrag ingest --rebuild PATH` for every corpus to finish it (the alias swaps when all are in)",
            )
        )
    return checks


def _embedder(settings: Settings, meta: IndexMeta | None, where: str) -> Check:
    wanted = normalize_spec(settings.embedder)
    fields = list(settings.index_text.embed_fields)
    if meta is None:
        return Check("embedder", OK, f"configured {wanted}; nothing indexed yet")
    detail = f"{where}: {meta.embedder} ({meta.dims} dims, embeds {meta.embed_fields}); configured: {wanted} (embeds {fields})"
    if meta.embedder != wanted:
        return Check(
            "embedder",
            FAIL,
            detail,
            f"set ESRAG_EMBEDDER={meta.embedder} to search and ingest with the index's model, or rebuild with the new one "
            "(`esrag ingest --rebuild PATH` on Elasticsearch; a new ESRAG_DB for the embedded store)",
        )
    if meta.embed_fields != fields:
        return Check("embedder", FAIL, detail, f"set index_text.embed_fields = {meta.embed_fields} or rebuild the index")
    return Check("embedder", OK, detail)


# -- embedded ---------------------------------------------------------------------------------
def embedded_checks(settings: Settings) -> list[Check]:
    """Checks of the embedded SQLite store at ``settings.db_path`` (never creates the file)."""
    path = settings.db_path.absolute()  # (where it looked, also when ESRAG_DB is relative)
    checks = [Check("store", OK, f"embedded SQLite store at {path} (ESRAG_ES_URL is not set)")]
    if not path.exists():
        checks.append(Check("index", WARN, f"nothing indexed yet: {path} does not exist", "run `esrag ingest PATH`"))
        checks.append(_embedder(settings, None, str(path)))
        return checks
    from esrag.app import open_store

    try:
        with open_store(settings, read_only=True) as store:
            stats, meta = store.stats(), store.meta()
    except EsragError as exc:
        return checks + [Check("index", FAIL, str(exc), "point ESRAG_DB at an esrag database, or remove the file and ingest again")]
    except Exception as exc:  # a file that is not SQLite raises sqlite3.DatabaseError
        return checks + [Check("index", FAIL, f"{path}: {exc}", "point ESRAG_DB at an esrag database, or remove the file and ingest again")]
    checks.append(
        Check(
            "index",
            OK,
            f"{stats.get('chunks', 0)} chunks from {stats.get('sources', 0)} sources in {len(stats.get('corpora', {}))} corpora",
        )
    )
    checks.append(_embedder(settings, meta, str(path)))
    return checks
