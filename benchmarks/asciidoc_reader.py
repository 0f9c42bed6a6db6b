"""AsciiDoc reader throughput against the Markdown path, same process and machine:
:func:`esrag.formats.parse` over the asciidoctor docs (corpus ``antora-asciidoctor``, the pages
with includes resolved) and over the Laravel docs (Markdown: includes, markdown-it blocks).
Each side is timed ``--rounds`` times after a warm-up; the best round's MB/s (source bytes) is
printed for both, and the ratio AsciiDoc / Markdown.

    .venv/bin/python benchmarks/asciidoc_reader.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _data import shared_data

from esrag.formats import parse
from esrag.model import Document


def _docs(root: Path, pattern: str) -> list[Document]:
    return [
        Document(str(f.relative_to(root)), f.read_text(encoding="utf-8"), source=str(f), root=str(root)) for f in sorted(root.glob(pattern))
    ]


def _rate(docs: list[Document], rounds: int) -> float:
    """Best MB/s of ``rounds`` passes of :func:`parse` over ``docs``."""
    size = sum(len(d.text.encode()) for d in docs) / 1e6
    for d in docs[:5]:
        parse(d)
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for d in docs:
            parse(d)
        best = min(best, time.perf_counter() - t)
    return size / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = shared_data() / "corpora"
    adoc = _rate(_docs(data / "antora-asciidoctor", "docs/modules/*/pages/**/*.adoc"), args.rounds)
    md = _rate(_docs(data / "laravel-docs", "**/*.md"), args.rounds)
    print(f"asciidoc {adoc:.2f} MB/s  markdown {md:.2f} MB/s  ratio {adoc / md:.2f}")


if __name__ == "__main__":
    main()
