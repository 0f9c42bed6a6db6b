"""LLM enrichment at index time (seed 000, §3, App. N.2–N.4).

* :mod:`esrag.llm.clients` — providers (``ollama``, ``openai``) behind one interface.
* :mod:`esrag.llm.cache` — the persistent LLM cache and the cost ledger.
* :mod:`esrag.enrich.prompts` — versioned prompt files and their SHA-256.
* :mod:`esrag.enrich.enrichment` — arms E, E−K, CR, PF and the rolling key dictionary.
* :mod:`esrag.enrich.merge` — key-based merging M, controls RM/SM, key consolidation.
* :mod:`esrag.enrich.expand` — related-key expansion KX and adjacency control AX.
"""

from esrag.enrich.enrichment import MODES, Enricher, make_enricher

__all__ = ["MODES", "Enricher", "make_enricher"]
