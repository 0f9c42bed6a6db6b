"""The reranker hook: one interface, ``rerank(query, texts) -> scores``, applied to the top N
fused candidates (default 30) *before* any expansion (seed 001: "reranking before expansion,
with clauses at leaf size and tickets whole, keeps the comparison closer to like-for-like, and
merging afterwards preserves the ordering the cross-encoder produced").

Implementations register under the ``esrag.rerankers`` entry-point group and are chosen by a
spec ``NAME:ARGUMENT`` (:func:`make_reranker`):

============================  ===============================================================
``cross-encoder:MODEL``       a sentence-transformers ``CrossEncoder`` (hub name or local path;
                              fails fast when the hub is unreachable and the model is not local)
``http:URL``                  a ``/rerank`` endpoint in the common wire format (Cohere, Jina,
                              TEI-compatible servers): ``{"query", "documents", "top_n"}`` →
                              ``{"results": [{"index", "relevance_score"}]}``; a bare URL
                              (``http://…``/``https://…``) is the same
``elastic:INFERENCE_ID``      Elasticsearch's ``text_similarity_reranker`` retriever with that
                              inference endpoint (needs the Elasticsearch store and a cluster
                              with the inference plugin and licence; refused clearly otherwise)
============================  ===============================================================

Scores are higher-is-better and only order the candidates they were computed for; a reranker's
scores are never compared with fused RRF scores. A reranked hit keeps its fused ``score`` and
gains a ``rerank`` leg (its rank among the reranked candidates and the reranker's score).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from esrag.errors import ConfigError, ModelLoadError, PluginError, RerankError
from esrag.model import Hit, LegResult
from esrag.stores.base import NativeRerank, Store
from esrag.urls import redact_url

DEFAULT_TOP_N = 30


RerankFn = Callable[[str, Sequence[str]], Sequence[float]]
"""A plain reranker: ``rerank(query, texts) -> scores`` (one per text, higher is better)."""


@runtime_checkable
class TextReranker(Protocol):
    """Scores texts for a query: what a reranker plugin or a ``module:attribute`` reranker
    needs to have (its ``spec`` is optional)."""

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in input order, higher is better.

        Raises:
            RerankError: the reranker cannot answer (unreachable, refused, malformed reply).
        """
        ...


@runtime_checkable
class Reranker(TextReranker, Protocol):
    """A reranker as the search stack uses it: ``spec`` names it
    (``http:http://127.0.0.1:8080/rerank``), :meth:`rerank` scores texts and :meth:`rerank_hits`
    scores hits (by their text, or — the Elasticsearch reranker — by the stored chunks' ids).
    Everything else (:data:`RerankFn` callables, :class:`TextReranker` objects) becomes one by
    :func:`as_reranker`."""

    spec: str

    def rerank_hits(self, query: str, hits: Sequence[Hit]) -> list[float]:
        """One score per hit, in input order, higher is better.

        Raises:
            RerankError: the reranker cannot answer.
        """
        ...


class ByText:
    """Base of the rerankers that score a hit by its chunk's text: :meth:`rerank_hits` from
    :meth:`rerank`, and the instance callable as a :data:`RerankFn` (``esrag eval``'s slot)."""

    spec: str

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        raise NotImplementedError

    def rerank_hits(self, query: str, hits: Sequence[Hit]) -> list[float]:
        """``rerank(query, [hit texts])``."""
        return self.rerank(query, [h.chunk.text for h in hits])

    def __call__(self, query: str, texts: Sequence[str]) -> list[float]:
        """``rerank(query, texts)``: usable wherever a plain reranker callable is (``esrag eval``)."""
        return self.rerank(query, texts)


class FunctionReranker(ByText):
    """A :data:`RerankFn` callable or a :class:`TextReranker` object as a :class:`Reranker`.

    Args:
        target: the callable or object. spec: its name in reports (default: its ``repr``;
            :func:`make_reranker` passes the spec it was given).
    """

    def __init__(self, target: RerankFn | TextReranker, spec: str | None = None) -> None:
        self.target = target
        self.spec = spec or repr(target)

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """The target's scores as floats."""
        target = self.target
        scores = target.rerank(query, texts) if isinstance(target, TextReranker) else target(query, texts)
        return [float(x) for x in scores]


def as_reranker(obj: Reranker | TextReranker | RerankFn, spec: str | None = None) -> Reranker:
    """``obj`` as a :class:`Reranker`: itself when it is one, else wrapped
    (:class:`FunctionReranker`).

    Raises:
        ConfigError: ``obj`` neither has ``rerank(query, texts)`` nor is callable.
    """
    if isinstance(obj, Reranker):
        return obj
    if isinstance(obj, TextReranker) or callable(obj):
        return FunctionReranker(obj, spec)
    raise ConfigError(f"reranker {spec or obj!r} is not callable as rerank(query, texts) -> scores")


def rerank_hits(query: str, hits: list[Hit], reranker: Reranker | TextReranker | RerankFn, top_n: int = DEFAULT_TOP_N) -> list[Hit]:
    """``hits`` with the first ``top_n`` reordered by the reranker (stable on ties); the rest
    follow unchanged. Each reordered hit gets a ``rerank`` leg (rank 1..n, reranker score).

    ``reranker`` is a :class:`Reranker` (its ``rerank_hits``: the Elasticsearch reranker scores
    stored chunks by id), or anything :func:`as_reranker` accepts (the evaluation's reranker slot
    takes a plain ``rerank(query, texts) -> scores`` callable).

    Raises:
        RerankError: the reranker returned another number of scores than candidates.
        ConfigError: ``reranker`` is not a reranker.
    """
    head, tail = hits[:top_n], hits[top_n:]
    if not head:
        return hits
    r = as_reranker(reranker)
    scores = list(r.rerank_hits(query, head))
    if len(scores) != len(head):
        raise RerankError(f"the reranker {r.spec} returned {len(scores)} scores for {len(head)} texts")
    order = sorted(range(len(head)), key=lambda i: -float(scores[i]))
    out = []
    for rank, i in enumerate(order, 1):
        hit = head[i]
        legs = dict(hit.legs)
        legs["rerank"] = LegResult(rank, float(scores[i]))
        out.append(Hit(hit.chunk, hit.score, legs, hit.expanded_from))
    return out + tail


def parse_spec(spec: str) -> tuple[str, str]:
    """``"http:http://h/rerank"`` -> ``("http", "http://h/rerank")``; a bare ``http(s)://`` URL
    is the ``http`` reranker.

    Raises:
        ConfigError: an empty spec or one without ``NAME:ARGUMENT``.
    """
    spec = (spec or "").strip()
    if spec.startswith(("http://", "https://")):
        return "http", spec
    name, sep, arg = spec.partition(":")
    if not sep or not name or not arg:
        raise ConfigError(f"reranker spec {spec!r} is not NAME:ARGUMENT; use cross-encoder:MODEL, http:URL or elastic:INFERENCE_ID")
    return name.strip().lower(), arg.strip()


@runtime_checkable
class FromSpec(Protocol):
    """A reranker class built from a spec's argument (and the store, for rerankers that work
    inside it): ``cls.from_spec(argument, store=store)``."""

    def from_spec(self, arg: str, store: Store | None = None) -> Reranker | TextReranker | RerankFn: ...


def make_reranker(spec: str, store: Store | None = None) -> Reranker:
    """The reranker for ``spec``: the one loader of rerankers, for ``esrag search --rerank`` and
    ``esrag eval`` alike.

    * ``NAME:ARGUMENT`` (or a bare ``http(s)://`` URL) of the ``esrag.rerankers`` registry: the
      class is built with ``from_spec(argument, store=store)`` when it has it, else
      ``cls(argument)``;
    * a bare registered ``NAME``: ``cls()``;
    * ``module:attribute`` (an importable module that is not a registered name): the object, or
      an instance when it is a class; it must be callable as ``rerank(query, texts) -> scores``
      or have ``rerank(query, texts)``.

    Raises:
        ConfigError: malformed spec, or a ``module:attribute`` that is not a reranker.
        PluginError: unknown reranker name (lists the installed ones).
        RerankError: the reranker cannot work here (e.g. ``elastic:`` on the embedded store).
    """
    from esrag import plugins

    registered = plugins.names("esrag.rerankers")
    bare = (spec or "").strip()
    if bare.lower() in registered:
        return as_reranker(plugins.load("esrag.rerankers", bare.lower())(), bare)
    module, sep, attr = bare.partition(":")
    if sep and attr and module.strip().lower() not in registered and not bare.startswith(("http://", "https://")):
        target = _import_target(module.strip(), attr.strip())
        if target is not None:
            return as_reranker(target() if isinstance(target, type) else target, bare)
    name, arg = parse_spec(spec)
    try:
        cls = plugins.load("esrag.rerankers", name)
    except PluginError as exc:
        raise PluginError(f"{exc} (reranker spec {spec!r}; or give module:attribute of a rerank(query, texts) callable)") from None
    if isinstance(cls, FromSpec):
        return as_reranker(cls.from_spec(arg, store=store), spec)
    return as_reranker(cls(arg), spec)


def _import_target(module: str, attr: str) -> Any:
    """``module.attr`` when ``module`` imports (None when there is no such module).

    Raises:
        ConfigError: the module imports but has no ``attr``, or fails while importing.
    """
    import importlib
    import importlib.util

    try:
        if importlib.util.find_spec(module) is None:
            return None
    except (ImportError, ValueError):
        return None
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import reranker {module}:{attr}: {exc}") from exc


class HTTPReranker(ByText):
    """A ``/rerank`` endpoint over HTTP (Cohere/Jina wire format, also served by TEI-compatible
    servers and most self-hosted rerankers).

    Request ``POST URL`` with ``{"query": q, "documents": [texts], "top_n": n,
    "return_documents": false}`` (plus ``"model"`` when given); reply ``{"results": [{"index":
    i, "relevance_score": s}, ...]}`` (a bare list of ``{"index", "score"}``, TEI's native
    reply, is read too). Texts the reply leaves out score ``-inf``.

    Args:
        url: the endpoint (``http://127.0.0.1:8080/rerank``).
        model: model name to send (``ESRAG_RERANK_MODEL``), if the server wants one.
        api_key: bearer token (``ESRAG_RERANK_API_KEY``); never printed.
        timeout: seconds per request.
    """

    def __init__(self, url: str, model: str | None = None, api_key: str | None = None, timeout: float = 30.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"http reranker URL {url!r} must start with http:// or https://")
        self.url = url
        self.spec = f"http:{redact_url(url)}"
        self.model = model if model is not None else os.environ.get("ESRAG_RERANK_MODEL")
        self._key = api_key if api_key is not None else os.environ.get("ESRAG_RERANK_API_KEY")
        self.timeout = timeout

    @classmethod
    def from_spec(cls, arg: str, store: Store | None = None) -> HTTPReranker:
        return cls(arg)

    def request_body(self, query: str, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON sent for one call (pure; unit-tested as exact JSON)."""
        body: dict[str, Any] = {"query": query, "documents": list(texts), "top_n": len(texts), "return_documents": False}
        if self.model:
            body["model"] = self.model
        return body

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """See :class:`Reranker`. One HTTP request for all texts."""
        import httpx

        if not texts:
            return []
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            resp = httpx.post(self.url, json=self.request_body(query, texts), headers=headers, timeout=self.timeout)
        except httpx.HTTPError as exc:
            raise RerankError(f"reranker {self.spec}: cannot reach it ({type(exc).__name__}: {exc}); start it or fix the URL") from None
        if resp.status_code != 200:
            raise RerankError(f"reranker {self.spec}: HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return parse_rerank_reply(resp.json(), len(texts))
        except (ValueError, KeyError, TypeError) as exc:
            raise RerankError(f"reranker {self.spec}: unreadable reply ({exc}): {resp.text[:300]}") from None


def parse_rerank_reply(data: Any, n: int) -> list[float]:
    """Scores in input order from a ``/rerank`` reply: ``{"results": [{"index",
    "relevance_score"}]}`` (Cohere, Jina) or ``[{"index", "score"}]`` (TEI).

    Raises:
        ValueError: an index outside ``0..n-1`` or no result list.
    """
    items = data.get("results", data.get("data")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("no 'results' list")
    scores = [float("-inf")] * n
    for item in items:
        i = int(item["index"])
        if not 0 <= i < n:
            raise ValueError(f"index {i} outside 0..{n - 1}")
        scores[i] = float(item["relevance_score"] if "relevance_score" in item else item["score"])
    return scores


class CrossEncoderReranker(ByText):
    """A sentence-transformers ``CrossEncoder`` (any model: hub name or local folder), loaded on
    first use. When the Hugging Face hub is unreachable it loads only from local files and fails
    at once with :class:`~esrag.errors.ModelLoadError` (as :mod:`esrag.embedding` does) instead of
    retrying for minutes.

    Args:
        model: hub name (``cross-encoder/ms-marco-MiniLM-L-6-v2``) or a local path.
        batch_size: pairs per forward pass; max_length: model tokens per pair (longer is cut).
    """

    def __init__(self, model: str, batch_size: int = 16, max_length: int | None = 512) -> None:
        self.model_name = model
        self.spec = f"cross-encoder:{model}"
        self.batch_size = batch_size
        self.max_length = max_length
        self._model: Any = None

    @classmethod
    def from_spec(cls, arg: str, store: Store | None = None) -> CrossEncoderReranker:
        return cls(arg)

    def _load(self) -> Any:
        if self._model is None:
            from pathlib import Path

            from esrag.embedding import hub_reachable

            local = Path(self.model_name).exists()
            offline = local or not hub_reachable()
            try:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(self.model_name, max_length=self.max_length, device="cpu", local_files_only=offline)
            except Exception as exc:  # OSError, ValueError, HTTP errors…
                where = (
                    "from its local files"
                    if local
                    else "from the local Hugging Face cache: the hub (huggingface.co) is unreachable from here"
                    if offline
                    else "from the Hugging Face hub"
                )
                raise ModelLoadError(
                    f"cannot load cross-encoder {self.model_name!r} {where} ({' '.join(str(exc).split())[:300]}). "
                    "Give a local model folder (cross-encoder:/path/to/model), or serve a reranker and use http:URL."
                ) from exc
        return self._model

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """See :class:`Reranker`; raises :class:`~esrag.errors.ModelLoadError` when the model cannot load."""
        if not texts:
            return []
        model = self._load()
        scores = model.predict([(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in scores]


class ElasticReranker(ByText):
    """Elasticsearch's ``text_similarity_reranker`` retriever with the inference endpoint
    ``inference_id``: the candidates are stored chunks, so it reorders them by id inside the
    cluster (:meth:`rerank_hits`, one ``_search``); :meth:`rerank` scores arbitrary texts through
    ``POST _inference/rerank/<id>``. Clusters without the inference plugin (such as the
    integ-test distribution), without the licence, or without the endpoint are detected on the
    first call and refused with :class:`~esrag.errors.RerankError` naming the way out.

    Raises:
        RerankError: built without an Elasticsearch store.
    """

    def __init__(self, inference_id: str, store: Store | None = None, field: str = "text") -> None:
        if not isinstance(store, NativeRerank):
            raise RerankError(
                f"elastic:{inference_id} reranks inside Elasticsearch and needs the Elasticsearch store (set ESRAG_ES_URL); "
                "on the embedded store use --rerank http:URL or cross-encoder:MODEL"
            )
        self.inference_id: str = inference_id
        self.spec = f"elastic:{inference_id}"
        self.store: NativeRerank = store
        self.field: str = field

    @classmethod
    def from_spec(cls, arg: str, store: Store | None = None) -> ElasticReranker:
        return cls(arg, store)

    def rerank_hits(self, query: str, hits: Sequence[Hit]) -> list[float]:
        """Scores of ``hits`` (in order) from the ``text_similarity_reranker`` retriever;
        candidates the cluster leaves out score ``-inf``."""
        scores = self.store.rerank_ids(query, [h.chunk.id for h in hits], self.inference_id, self.field)
        return [scores.get(h.chunk.id, float("-inf")) for h in hits]

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """See :class:`Reranker`: ``POST _inference/rerank/<inference_id>``."""
        return self.store.inference_rerank(self.inference_id, query, texts)
