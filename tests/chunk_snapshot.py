"""Every chunk the default ingest makes of the real corpora in shared/data/corpora, as
fingerprints per file: what tests/test_chunk_identity.py compares with the snapshot taken before
the chunker was made faster (issue 17: "without changing a single chunk").

    .venv/bin/python tests/chunk_snapshot.py [OUT.json]      # write a new snapshot (full records with --full)
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from paths import DATA

from esrag.app import make_chunker, make_site
from esrag.config import Settings
from esrag.ingest import Ingester, IngestSummary
from esrag.sources import discover

CORPORA = ("laravel-docs", "pydantic-docs", "async-book", "requests-docs")


def records(corpus: str) -> dict[str, list[list]]:
    """rel path -> [[id, text, section_path, start_line, end_line, anchor, url, content_hash, position], ...]
    as `esrag ingest` makes them with default settings (site from the tree's own config)."""
    settings = Settings(db=None, es_url=None)
    root = DATA / "corpora" / corpus
    ingester = Ingester(None, "", lambda: None, make_chunker(settings), [], {},  # type: ignore[arg-type]
                        site=make_site(settings, root, corpus))
    out: dict[str, list[list]] = {}
    for src in discover(root, settings.ingest.include, settings.ingest.exclude):
        loaded = ingester._load(src, corpus, IngestSummary())
        chunks = loaded[1] if loaded else []
        out[src.rel] = [[c.id, c.text, list(c.section_path), c.start_line, c.end_line, c.anchor, c.url, c.content_hash, c.position]
                        for c in chunks]
    return out


def fingerprints() -> dict[str, dict[str, str]]:
    """corpus -> rel path -> SHA-256 of the file's chunk records (JSON)."""
    return {corpus: {rel: hashlib.sha256(json.dumps(recs, ensure_ascii=False).encode()).hexdigest()
                     for rel, recs in records(corpus).items()} for corpus in CORPORA}


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data" / "chunk_fingerprints.json"
    if "--full" in sys.argv:
        out.write_text(json.dumps({c: records(c) for c in CORPORA}, ensure_ascii=False))
    else:
        out.write_text(json.dumps(fingerprints(), indent=1, sort_keys=True) + "\n")
    print(out)
