"""LLM providers for index-time enrichment: one small interface, two official clients.

* ``ollama`` — a local or remote Ollama server through the official ``ollama`` client
  (``/api/chat`` and ``/api/generate``); default model ``qwen2.5:7b`` (seed 000's 7B indexing LLM).
* ``openai`` — any OpenAI-compatible server (vLLM, llama.cpp server, LM Studio, OpenRouter,
  OpenAI itself) through the official ``openai`` client (``/v1/chat/completions``), chosen by
  base URL and API key.

Both register under the ``esrag.llms`` entry-point group, so ``--llm ollama:MODEL`` or
``--llm openai:MODEL`` (``ESRAG_LLM``) picks one by name, and a plugin can add another.

Every call is deterministic by default (seed 000, §3: temperature 0, seed 0; the seed can be
overridden per call, which is how parse failures are retried with seeds 1–3), asks for JSON
where the server supports it (Ollama ``format: "json"``, OpenAI
``response_format: {"type": "json_object"}``), caps the output tokens, and has a timeout.
A reply carries the text, the server's own token counts (model tokens, *not* cl100k; estimated
with cl100k only when the server reports none) and the wall time in seconds.

Concurrency: each provider holds a semaphore of ``concurrency`` slots, so at most that many
calls are in flight however many threads call it (the enricher runs one worker per document).

Errors: every transport or server failure (connection refused, timeout, HTTP 4xx/5xx, a reply
without content) is raised as :class:`LLMError` with the provider, URL and model named;
``fatal`` is set for errors that will fail identically on every call (unknown model, bad key).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from esrag.errors import EsragError
from esrag.urls import redact_url

if TYPE_CHECKING:
    from esrag.config import Settings

DEFAULT_OLLAMA_MODEL = "qwen2.5:7b"
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"


class LLMError(EsragError):
    """An LLM call failed (transport, timeout, HTTP status, empty reply).

    Attributes:
        status: HTTP status when the server answered with one, else None.
        fatal: True when every further call would fail the same way (401/403/404: wrong key,
            unknown model), so callers stop calling instead of failing chunk after chunk.
    """

    def __init__(self, message: str, status: int | None = None, fatal: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.fatal = fatal


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """Generation options of one call (they are part of the cache key).

    Attributes:
        temperature: sampling temperature (0 = greedy; seed 000 uses 0).
        seed: sampling seed (0; parse-failure retries use 1, 2, 3).
        max_tokens: output-token limit in model tokens (seed 000: 1,000 for enrichment, 120
            for contextual retrieval).
        json: ask the server for a JSON object (ignored by servers that cannot).
        num_ctx: Ollama context window in model tokens (None: the server's default); other
            providers ignore it.
    """

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 1000
    json: bool = True
    num_ctx: int | None = None

    def with_seed(self, seed: int) -> LLMOptions:
        """The same options with another seed (for retries)."""
        return replace(self, seed=seed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "json": self.json,
            "num_ctx": self.num_ctx,
        }


@dataclass(slots=True)
class LLMReply:
    """What one call returned.

    Attributes:
        text: the generated text ('' if the server sent no content).
        tokens_in, tokens_out: prompt and output tokens as counted by the server (Ollama
            ``prompt_eval_count``/``eval_count``, OpenAI ``usage``); cl100k estimates when
            ``estimated`` is True (the server reported none).
        seconds: wall time of the HTTP call.
        model: the model that answered (as the server names it).
        cached: True when the reply came from the persistent cache (no call was made).
    """

    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    model: str = ""
    cached: bool = False
    estimated: bool = False


Message = dict[str, str]


@runtime_checkable
class LLM(Protocol):
    """A chat/completion model. Implementations register under ``esrag.llms``.

    Attributes:
        provider: registry name (``ollama``, ``openai``).
        model: model name as the server knows it.
        spec: ``provider:model``, recorded on every enriched chunk (``Enrichment.model``).
        url: base URL of the server.
        concurrency: maximum calls in flight.
    """

    provider: str
    model: str
    url: str
    concurrency: int

    @property
    def spec(self) -> str: ...

    def chat(self, messages: list[Message], options: LLMOptions) -> LLMReply:
        """One chat completion of ``messages`` (``[{"role": "user", "content": ...}]``).

        Raises:
            LLMError: transport failure, timeout, HTTP error or a reply without content.
        """
        ...

    def complete(self, prompt: str, options: LLMOptions) -> LLMReply:
        """One completion of a single prompt (Ollama ``/api/generate``; a one-message chat
        elsewhere). Raises :class:`LLMError` like :meth:`chat`."""
        ...


@dataclass
class _Base:
    """Shared parts: spec, semaphore, transport retries, token estimates."""

    model: str
    url: str
    timeout: float = 120.0
    concurrency: int = 4
    retries: int = 1
    provider: str = ""
    _slots: threading.BoundedSemaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise EsragError(f"LLM concurrency must be >= 1, got {self.concurrency} (ESRAG_LLM_CONCURRENCY)")
        self._slots = threading.BoundedSemaphore(self.concurrency)

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"

    def _guarded(self, send: Any, prompt_text: str) -> LLMReply:
        """Run ``send()`` in a concurrency slot, retrying non-fatal failures ``retries`` times
        (0.5 s, 1 s … backoff); fill token counts from cl100k when the server gave none."""
        attempt = 0
        while True:
            with self._slots:
                t0 = time.perf_counter()
                try:
                    reply = send()
                    reply.seconds = time.perf_counter() - t0
                    break
                except LLMError as exc:
                    if exc.fatal or attempt >= self.retries:
                        raise
            attempt += 1
            time.sleep(0.5 * attempt)
        if reply.tokens_in <= 0 and reply.tokens_out <= 0:
            from esrag.tokens import count_tokens

            reply.tokens_in, reply.tokens_out, reply.estimated = count_tokens(prompt_text), count_tokens(reply.text), True
        return reply

    def chat(self, messages: list[Message], options: LLMOptions) -> LLMReply:
        """See :class:`LLM`; each provider sends it its own way."""
        raise NotImplementedError

    def complete(self, prompt: str, options: LLMOptions) -> LLMReply:
        return self.chat([{"role": "user", "content": prompt}], options)

    def _where(self) -> str:
        return f"{self.spec} at {redact_url(self.url)}"


def _fatal_status(status: int | None) -> bool:
    return status in (401, 403, 404)


class OllamaLLM(_Base):
    """Ollama through the official ``ollama`` client.

    Args:
        model: Ollama model name (default ``qwen2.5:7b``).
        url: server URL (default ``http://127.0.0.1:11434``).
        timeout: seconds per HTTP call; concurrency: calls in flight; retries: extra attempts
            after a non-fatal failure.
    """

    def __init__(
        self, model: str = DEFAULT_OLLAMA_MODEL, url: str | None = None, timeout: float = 120.0, concurrency: int = 4, retries: int = 1
    ) -> None:
        super().__init__(model or DEFAULT_OLLAMA_MODEL, (url or DEFAULT_OLLAMA_URL).rstrip("/"), timeout, concurrency, retries, "ollama")
        import ollama

        self._client = ollama.Client(host=self.url, timeout=timeout)

    @classmethod
    def from_settings(cls, model: str, settings: Settings) -> OllamaLLM:
        """Built from ``llm_url``, ``llm_timeout``, ``llm_concurrency``, ``llm_retries``."""
        return cls(model, settings.llm_url, settings.llm_timeout, settings.llm_concurrency, settings.llm_retries)

    def _options(self, options: LLMOptions) -> tuple[dict[str, Any], Literal["json"] | None]:
        """Ollama ``options`` and ``format`` (``"json"``, or None: free text)."""
        opts: dict[str, Any] = {"temperature": options.temperature, "seed": options.seed, "num_predict": options.max_tokens}
        if options.num_ctx:
            opts["num_ctx"] = options.num_ctx
        return opts, ("json" if options.json else None)

    def chat(self, messages: list[Message], options: LLMOptions) -> LLMReply:
        """See :class:`LLM`. Uses ``/api/chat`` with ``stream: false``."""
        opts, fmt = self._options(options)

        def send() -> LLMReply:
            resp = self._call(lambda: self._client.chat(model=self.model, messages=messages, format=fmt or "", options=opts, stream=False))
            return self._reply((resp.message.content if resp.message else "") or "", resp)

        return self._guarded(send, "\n".join(m["content"] for m in messages))

    def complete(self, prompt: str, options: LLMOptions) -> LLMReply:
        """See :class:`LLM`. Uses ``/api/generate`` with ``stream: false``."""
        opts, fmt = self._options(options)

        def send() -> LLMReply:
            resp = self._call(lambda: self._client.generate(model=self.model, prompt=prompt, format=fmt, options=opts, stream=False))
            return self._reply(resp.response or "", resp)

        return self._guarded(send, prompt)

    def _reply(self, text: str, resp: Any) -> LLMReply:
        return LLMReply(
            text=text, tokens_in=int(resp.prompt_eval_count or 0), tokens_out=int(resp.eval_count or 0), model=resp.model or self.model
        )

    def _call(self, fn: Any) -> Any:
        import httpx
        import ollama

        try:
            return fn()
        except ollama.ResponseError as exc:
            hint = f"; pull it first: `ollama pull {self.model}`" if exc.status_code == 404 else ""
            raise LLMError(
                f"{self._where()}: HTTP {exc.status_code}: {exc.error}{hint}", exc.status_code, _fatal_status(exc.status_code)
            ) from exc
        except httpx.TimeoutException as exc:
            raise LLMError(
                f"{self._where()}: no reply within {self.timeout}s (raise ESRAG_LLM_TIMEOUT or lower ESRAG_LLM_CONCURRENCY)"
            ) from exc
        except (ConnectionError, httpx.HTTPError) as exc:
            raise LLMError(f"{self._where()}: cannot connect ({exc}); start Ollama (`ollama serve`) or set ESRAG_LLM_URL") from exc
        except ValueError as exc:  # a malformed body from the server (not JSON, wrong shape)
            raise LLMError(f"{self._where()}: unreadable reply: {exc}") from exc


class OpenAILLM(_Base):
    """Any OpenAI-compatible chat server through the official ``openai`` client.

    Args:
        model: model name on that server.
        url: base URL including ``/v1`` (e.g. ``http://127.0.0.1:8080/v1``); None: the
            client's default (``OPENAI_BASE_URL`` or api.openai.com).
        api_key: the key (``ESRAG_LLM_API_KEY``); None: ``OPENAI_API_KEY``, or a placeholder
            for local servers that need none. Never logged or printed.
        timeout, concurrency, retries: as for :class:`OllamaLLM` (the client's own retries are
            off; esrag retries).
    """

    def __init__(
        self, model: str, url: str | None = None, api_key: str | None = None, timeout: float = 120.0, concurrency: int = 4, retries: int = 1
    ) -> None:
        import os

        import openai

        if not model:
            raise EsragError("the openai provider needs a model name: --llm openai:MODEL")
        key = api_key or os.environ.get("OPENAI_API_KEY") or "esrag-no-key"
        self._client = openai.OpenAI(base_url=url, api_key=key, timeout=timeout, max_retries=0)
        super().__init__(model, str(self._client.base_url).rstrip("/"), timeout, concurrency, retries, "openai")

    @classmethod
    def from_settings(cls, model: str, settings: Settings) -> OpenAILLM:
        """Built from ``llm_url``, ``llm_api_key``, ``llm_timeout``, ``llm_concurrency``, ``llm_retries``."""
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
        return cls(model, settings.llm_url, key, settings.llm_timeout, settings.llm_concurrency, settings.llm_retries)

    def chat(self, messages: list[Message], options: LLMOptions) -> LLMReply:
        """See :class:`LLM`. ``/v1/chat/completions`` with ``response_format: json_object`` when
        ``options.json``."""
        kwargs: dict[str, Any] = {"temperature": options.temperature, "seed": options.seed, "max_tokens": options.max_tokens}
        if options.json:
            kwargs["response_format"] = {"type": "json_object"}

        def send() -> LLMReply:
            sent: Any = messages  # plain {"role", "content"} dicts, what ChatCompletionMessageParam types
            resp = self._call(lambda: self._client.chat.completions.create(model=self.model, messages=sent, **kwargs))
            if not getattr(resp, "choices", None):
                raise LLMError(f"{self._where()}: reply without choices")
            text = resp.choices[0].message.content or ""
            usage = resp.usage
            return LLMReply(
                text=text,
                tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
                tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
                model=resp.model or self.model,
            )

        return self._guarded(send, "\n".join(m["content"] for m in messages))

    def _call(self, fn: Any) -> Any:
        import openai

        try:
            return fn()
        except openai.APITimeoutError as exc:
            raise LLMError(f"{self._where()}: no reply within {self.timeout}s (raise ESRAG_LLM_TIMEOUT)") from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"{self._where()}: cannot connect ({exc}); check ESRAG_LLM_URL") from exc
        except openai.APIStatusError as exc:
            hint = {
                401: "; check ESRAG_LLM_API_KEY",
                403: "; check ESRAG_LLM_API_KEY",
                404: "; check the model name and the URL (it usually ends in /v1)",
            }.get(exc.status_code, "")
            raise LLMError(
                f"{self._where()}: HTTP {exc.status_code}: {_short(exc.message)}{hint}", exc.status_code, _fatal_status(exc.status_code)
            ) from exc
        except openai.APIError as exc:  # e.g. a body that is not JSON
            raise LLMError(f"{self._where()}: {_short(str(exc))}") from exc
        except ValueError as exc:
            raise LLMError(f"{self._where()}: unreadable reply: {exc}") from exc


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_llm_spec(spec: str) -> tuple[str, str]:
    """``"ollama:qwen2.5:7b"`` -> ``("ollama", "qwen2.5:7b")`` (split at the first colon).

    A bare provider (``"ollama"``) gives an empty model (the provider's default).

    Raises:
        EsragError: empty spec.
    """
    spec = (spec or "").strip()
    if not spec:
        raise EsragError("no LLM configured: pass --llm ollama:MODEL or openai:MODEL (or set ESRAG_LLM)")
    provider, _, model = spec.partition(":")
    return provider.strip().lower(), model.strip()


def make_llm(spec: str, settings: Settings) -> LLM:
    """The LLM named by ``spec`` (``provider:model``), found in the ``esrag.llms`` registry and
    configured from ``settings`` (``llm_url``, ``llm_api_key``, ``llm_timeout``,
    ``llm_concurrency``, ``llm_retries``).

    Raises:
        PluginError: unknown provider (lists the installed ones).
        EsragError: a provider needs a model name.
    """
    from esrag import plugins

    parse_llm_spec(spec)  # an empty spec says how to configure one
    llm: LLM = plugins.create("esrag.llms", spec, settings)
    return llm
