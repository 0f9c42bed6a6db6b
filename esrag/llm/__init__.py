"""LLM access shared by enrichment, query reformulation and grounded answers: clients for
Ollama and OpenAI-compatible servers (:mod:`esrag.llm.clients`, registered under the
``esrag.llms`` entry-point group) and the persistent reply cache with its cost ledger
(:mod:`esrag.llm.cache`): everything an LLM produced is cached by (model, prompt hash, input
hash) and never recomputed for unchanged input.
"""
