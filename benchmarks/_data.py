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
