"""The LLM's context window (model tokens), read from its server where the server says it.

* Ollama: ``POST /api/show {"model": M}`` -> ``parameters`` line ``num_ctx N`` (the window the
  model runs with) when set, else ``model_info["<arch>.context_length"]`` capped at
  :data:`OLLAMA_DEFAULT_NUM_CTX` (Ollama runs a model with its own default ``num_ctx``, not the
  model's maximum, unless told otherwise).
* OpenAI-compatible servers that report it: llama.cpp ``GET /props``
  (``default_generation_settings.n_ctx``, or ``n_ctx``) and vLLM ``GET /v1/models``
  (``data[].max_model_len`` of the model, or the only model served).
* Otherwise :data:`DEFAULT_CONTEXT_TOKENS`.

``[answer] context_tokens`` (``ESRAG_ANSWER__CONTEXT_TOKENS``) overrides all of these.
"""

from __future__ import annotations

import re
from typing import Any

DEFAULT_CONTEXT_TOKENS = 4096
"""Window assumed when neither the settings nor the server say (the smallest common one)."""

OLLAMA_DEFAULT_NUM_CTX = 4096
"""Ollama's default ``num_ctx`` (0.6 and later) when a model's parameters do not set one."""

PROBE_TIMEOUT_S = 3.0


def context_window(provider: str, url: str, model: str, timeout: float = PROBE_TIMEOUT_S) -> tuple[int, str]:
    """``(tokens, where it came from)`` for ``model`` served at ``url`` by ``provider``
    (``ollama`` or ``openai``). Never raises: an unreachable or silent server gives
    ``(DEFAULT_CONTEXT_TOKENS, "default")``."""
    import httpx

    try:
        with httpx.Client(timeout=timeout) as client:
            found = _ollama(client, url, model) if provider == "ollama" else _openai(client, url, model)
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        found = None
    return found if found else (DEFAULT_CONTEXT_TOKENS, "default")


def _ollama(client: Any, url: str, model: str) -> tuple[int, str] | None:
    resp = client.post(url.rstrip("/") + "/api/show", json={"model": model})
    if resp.status_code != 200:
        return None
    body = resp.json()
    m = re.search(r"(?m)^\s*num_ctx\s+(\d+)", str(body.get("parameters") or ""))
    if m:
        return int(m.group(1)), "ollama /api/show parameters num_ctx"
    for key, value in (body.get("model_info") or {}).items():
        if key.endswith(".context_length") and isinstance(value, int) and value > 0:
            return min(value, OLLAMA_DEFAULT_NUM_CTX), f"ollama /api/show {key} (capped at Ollama's default num_ctx)"
    return None


def _openai(client: Any, url: str, model: str) -> tuple[int, str] | None:
    base = url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    resp = client.get(root + "/props")
    if resp.status_code == 200:
        body = resp.json()
        n = (body.get("default_generation_settings") or {}).get("n_ctx") or body.get("n_ctx")
        if isinstance(n, int) and n > 0:
            return n, "llama.cpp /props n_ctx"
    resp = client.get(base + "/models")
    if resp.status_code == 200:
        data = resp.json().get("data") or []
        mine = [d for d in data if d.get("id") == model] or (data if len(data) == 1 else [])
        n = mine[0].get("max_model_len") if mine else None
        if isinstance(n, int) and n > 0:
            return n, "/v1/models max_model_len"
    return None
