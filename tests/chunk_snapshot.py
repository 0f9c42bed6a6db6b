"""Every chunk the default ingest makes of the real corpora in shared/data/corpora, as
fingerprints per file: what tests/test_chunk_identity.py compares with the snapshot taken before
the chunker was made faster (issue 17: "without changing a single chunk"). Also the chunks of
random documents (tables, code spans, anchors, indented code, fences, oversize lines and blocks,
non-ASCII) under random chunker settings, token counts included (:func:`random_fingerprints`).

    .venv/bin/python tests/chunk_snapshot.py [OUT.json]      # write a new snapshot (full records with --full)
    .venv/bin/python tests/chunk_snapshot.py --random [OUT.json]   # the random documents' snapshot
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

from esrag.app import make_chunker, make_site
from esrag.chunking.header import HeaderChunker
from esrag.config import Settings
from esrag.ingest import Ingester, IngestSummary
from esrag.model import Document
from esrag.sources import discover
from paths import DATA

CORPORA = ("laravel-docs", "pydantic-docs", "async-book", "requests-docs")


def records(corpus: str) -> dict[str, list[list]]:
    """rel path -> [[id, text, section_path, start_line, end_line, anchor, url, content_hash, position], ...]
    as `esrag ingest` makes them with default settings (site from the tree's own config)."""
    settings = Settings(db=None, es_url=None)
    root = DATA / "corpora" / corpus
    ingester = Ingester(
        None,
        "",
        lambda: None,
        make_chunker(settings),
        [],
        {},  # type: ignore[arg-type]
        site=make_site(settings, root, corpus),
    )
    out: dict[str, list[list]] = {}
    for src in discover(root, settings.ingest.include, settings.ingest.exclude):
        loaded = ingester._load(src, corpus, IngestSummary())
        chunks = loaded[1] if loaded else []
        out[src.rel] = [
            [c.id, c.text, list(c.section_path), c.start_line, c.end_line, c.anchor, c.url, c.content_hash, c.position] for c in chunks
        ]
    return out


def fingerprints() -> dict[str, dict[str, str]]:
    """corpus -> rel path -> SHA-256 of the file's chunk records (JSON)."""
    return {
        corpus: {rel: hashlib.sha256(json.dumps(recs, ensure_ascii=False).encode()).hexdigest() for rel, recs in records(corpus).items()}
        for corpus in CORPORA
    }


#: Lines the random documents are made of: every block kind the scanner reads or hands on, and
#: lines long enough for the oversize split at small caps.
RANDOM_LINES = [
    "",
    "",
    "",
    "text here and more words",
    "More text. Another sentence!",
    "# Head",
    "## Sub `code` x",
    "### x #",
    "#no",
    "- item",
    "- [link](#x)",
    "* star",
    "1. one",
    "    code line",
    "\tcode",
    "   three",
    "> quote",
    "```",
    "```php",
    "~~~",
    "---",
    "***",
    "| a | b |",
    "|---|---|",
    "| 1 | 2 |",
    "|:-|-:|",
    "a | b",
    "--|--",
    "<div>",
    "</div>",
    '<a name="x"></a>',
    '<a name="y"></a>',
    "<!-- c -->",
    "[x]: /url",
    "**bold** _em_ `c` d",
    "## `a` and `b`",
    "## A ` b ` c",
    "### `x",
    "word " * 60,
    "long sentence. " * 40,
    "| " + " | ".join(["cell text"] * 8) + " |",
    "    " + "code " * 50,
    "- " + "item words " * 30,
    "café ünïcode 日本語 text",
    "\u00a0nbsp",
    "x  ",
    "## é title",
]
RANDOM_SEED, RANDOM_DOCS = 11, 2000


def random_fingerprints(seed: int = RANDOM_SEED, n: int = RANDOM_DOCS) -> list[str]:
    """SHA-256 (16 hex) per random document of its chunks (id, text, section path, lines, cl100k
    tokens, content hash), headers and title, under random tau_max / tau_min / max_block_tokens."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        text = "\n".join(rng.choice(RANDOM_LINES) for _ in range(rng.randint(1, 80)))
        chunker = HeaderChunker(
            tau_max=rng.choice([200, 800, 1500]), tau_min=rng.choice([0, 100]), max_block_tokens=rng.choice([0, 40, 120, 480])
        )
        doc = Document(f"d{k}.md", text)
        rec: list = [[c.id, c.text, c.section_path, c.start_line, c.end_line, c.tokens, c.content_hash] for c in chunker.chunk(doc)]
        rec.append([[h.level, h.title, h.anchor, h.line, h.section_path] for h in doc.headers])
        rec.append(doc.title)
        out.append(hashlib.sha256(json.dumps(rec, ensure_ascii=False).encode()).hexdigest()[:16])
    return out


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--random" in sys.argv:
        out = Path(args[0]) if args else Path(__file__).parent / "data" / "chunk_random_fingerprints.json"
        out.write_text(json.dumps({"seed": RANDOM_SEED, "docs": RANDOM_DOCS, "fingerprints": random_fingerprints()}) + "\n")
        print(out)
        sys.exit(0)
    out = Path(args[0]) if args else Path(__file__).parent / "data" / "chunk_fingerprints.json"
    if "--full" in sys.argv:
        out.write_text(json.dumps({c: records(c) for c in CORPORA}, ensure_ascii=False))
    else:
        out.write_text(json.dumps(fingerprints(), indent=1, sort_keys=True) + "\n")
    print(out)
