"""The chunker was made faster without changing a single chunk (issue 17): every chunk of the
four real corpora — id, text, section path, line span, anchor, url, content hash, position —
fingerprinted per file before the change (tests/data/chunk_fingerprints.json, written by
tests/chunk_snapshot.py at commit "chunk snapshot before the faster chunker") must come out the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chunk_snapshot import CORPORA, fingerprints

SNAPSHOT = json.loads((Path(__file__).parent / "data" / "chunk_fingerprints.json").read_text())


@pytest.fixture(scope="module")
def now() -> dict[str, dict[str, str]]:
    return fingerprints()


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_chunk_is_what_it_was_before(now, corpus):
    before, after = SNAPSHOT[corpus], now[corpus]
    assert sorted(after) == sorted(before)  # the same files
    changed = [rel for rel in before if after[rel] != before[rel]]
    assert changed == [], f"{corpus}: chunks changed in {changed[:10]}"
