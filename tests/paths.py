"""Where the shared real data lives (../shared/data beside the project root).

A clean clone may sit elsewhere (CI clones into a temporary folder), so the folder is found by:
``ESRAG_SHARED_DIR`` if set, else ``<project>/../shared``, else ``/work/shared``.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def _shared() -> Path:
    candidates = [os.environ.get("ESRAG_SHARED_DIR"), PROJECT.parent / "shared", "/work/shared"]
    for c in candidates:
        if c and (Path(c) / "data").is_dir():
            return Path(c)
    raise RuntimeError(
        "cannot find the shared data folder (shared/data with corpora/, qasper/, xquad/); "
        "set ESRAG_SHARED_DIR to the folder that holds data/"
    )


SHARED = _shared()
DATA = SHARED / "data"
LARAVEL = DATA / "corpora" / "laravel-docs"
QASPER = DATA / "qasper" / "qasper-test-v0.3.slice.json"
XQUAD = DATA / "xquad"
