"""Locate the shared real data for benchmarks (same rule as tests/paths.py)."""

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
