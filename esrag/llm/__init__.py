"""LLM access shared by enrichment, key consolidation, query reformulation and grounded answers:

* :mod:`esrag.llm.clients` — Ollama and OpenAI-compatible clients (``esrag.llms`` entry points);
* :mod:`esrag.llm.cache` — the persistent reply cache and the cost ledger: everything an LLM
  produced is cached by (model, prompt hash, input hash) and never recomputed for unchanged input;
* :mod:`esrag.llm.prompts` — the versioned prompt files (``esrag/prompts/*.txt``) and their SHA-256;
* :mod:`esrag.llm.json_reply` — the one ask-parse-retry loop (seeds 0, 1–3) that records every
  retry and failure in the ledger.
"""
