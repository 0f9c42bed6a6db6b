"""What the benchmarks share: where the real data is (same rule as tests/paths.py) and the
chunker `esrag ingest` uses out of the box."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def shared_data() -> Path:
    """``$ESRAG_SHARED_DIR/data``, else ``<project>/../shared/data``, else ``/work/shared/data``."""
    for c in (os.environ.get("ESRAG_SHARED_DIR"), PROJECT.parent / "shared", "/work/shared"):
        if c and (Path(c) / "data").is_dir():
            return Path(c) / "data"
    raise SystemExit("cannot find shared/data; set ESRAG_SHARED_DIR")


def default_chunker():
    """The chunker `esrag ingest` uses out of the box (Settings(): header-led, tau_max 800 characters)."""
    from esrag.app import make_chunker
    from esrag.config import Settings

    return make_chunker(Settings(db=None, es_url=None))


def default_ingester(store, embedder, cache_path: Path):
    """An :class:`~esrag.ingest.Ingester` doing what `esrag ingest` does out of the box
    (Settings(): chunker, indexed text, section-context vectors, and the embedding cache — here
    at ``cache_path``, which a benchmark keeps fresh) around an already loaded ``embedder``."""
    from esrag.config import Settings
    from esrag.embedding import CachedEmbedder, EmbeddingCache
    from esrag.ingest import Ingester

    t = Settings(db=None, es_url=None).index_text
    cache = EmbeddingCache(cache_path)
    return Ingester(
        store,
        embedder.spec,
        lambda: CachedEmbedder(embedder, cache),
        default_chunker(),
        t.embed_fields,
        t.bm25_fields,
        analyzer=t.analyzer,
        section_context=t.section_context,
        section_context_depth=t.section_context_depth,
    )
