"""LLM enrichment at index time (seed 000, §3, App. N.2–N.4). The LLM client, its cache and
ledger, the prompts and the one JSON-reply retry loop live in :mod:`esrag.llm`.

* :mod:`esrag.enrich.enrichment` — arms E, E−K, CR, PF and the rolling key dictionary.
* :mod:`esrag.enrich.merge` — key-based merging M, controls RM/SM, key consolidation.
* :mod:`esrag.enrich.key_links` — chunks linked by key or related keys (KX) and the adjacency
  control (AX), which the evaluation's E+KX / E+AX arms insert after each hit.
"""

from esrag.enrich.enrichment import MODES, Enricher, make_enricher

__all__ = ["MODES", "Enricher", "make_enricher"]
