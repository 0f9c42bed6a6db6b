"""esrag: index documentation repositories into Elasticsearch (or an embedded SQLite store) for
retrieval-augmented generation, and search them with BM25 + kNN fused by RRF.

The library's front door (docs/python.md "Use from Python")::

    import esrag
    from pathlib import Path

    settings = esrag.load_settings(db="index/esrag.db")   # Elasticsearch: es_url=... (or ESRAG_ES_URL)
    with esrag.open_store(settings) as store:
        esrag.ingest_tree(settings, store, Path("docs"))
    with esrag.open_service(settings) as service:          # one store connection, one warm model
        for hit in service.search(esrag.SearchRequest("how do I cache a value?", k=3)).hits:
            print(hit.chunk.url or hit.chunk.source_path, hit.chunk.section_path)

The names in :data:`__all__` are loaded on first use (module ``__getattr__``, PEP 562), so
``import esrag`` stays as light as the ``esrag`` command needs it to be. Framework retrievers
(LangChain, LlamaIndex, Haystack) live in :mod:`esrag.integrations`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first access)
_EXPORTS: dict[str, str] = {
    # settings and errors
    "Settings": "esrag.config",
    "load_settings": "esrag.config",
    "EsragError": "esrag.errors",
    # use cases
    "open_store": "esrag.app",
    "ingest_tree": "esrag.app",
    "IngestResult": "esrag.app",
    "list_corpora": "esrag.app",
    "open_service": "esrag.service",
    "SearchService": "esrag.service",
    "SearchRequest": "esrag.service",
    "get_page": "esrag.pages",
    # types
    "Page": "esrag.pages",
    "PipelineResult": "esrag.search.pipeline",
    "Hit": "esrag.model",
    "Chunk": "esrag.model",
    "Filters": "esrag.stores.base",
    "Store": "esrag.stores.base",
}

__all__ = [
    "__version__",
    "Settings",
    "load_settings",
    "EsragError",
    "open_store",
    "ingest_tree",
    "IngestResult",
    "list_corpora",
    "open_service",
    "SearchService",
    "SearchRequest",
    "get_page",
    "Page",
    "PipelineResult",
    "Hit",
    "Chunk",
    "Filters",
    "Store",
]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on demand
    from esrag.app import IngestResult, ingest_tree, list_corpora, open_store
    from esrag.config import Settings, load_settings
    from esrag.errors import EsragError
    from esrag.model import Chunk, Hit
    from esrag.pages import Page, get_page
    from esrag.search.pipeline import PipelineResult
    from esrag.service import SearchRequest, SearchService, open_service
    from esrag.stores.base import Filters, Store


def __getattr__(name: str) -> Any:
    """``esrag.NAME`` for a name of :data:`__all__`: imported from its module on first use and
    kept on the package. Raises AttributeError for any other name (so ``from esrag import
    submodule`` still finds submodules)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'esrag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
