"""The chunker was made faster without changing a single chunk (issue 17): every chunk of the
four real corpora — id, text, section path, line span, anchor, url, content hash, position —
fingerprinted per file before the change (tests/data/chunk_fingerprints.json, written by
tests/chunk_snapshot.py at commit "chunk snapshot before the faster chunker") must come out the same
— except async-book's ``src/SUMMARY.md``, left out since issue 25 (mdBook's table of contents,
not a page: no chunks), and requests-docs' ``docs/community/updates.rst`` and
``docs/dev/authors.rst``, whose ``.. include::`` of files outside the corpus (HISTORY.md,
AUTHORS.rst) is no longer indexed as raw directive text since issue 30 (an include that cannot
be resolved is left out and named; their fingerprints were rewritten then).
So must the chunks (token counts included) of 2,000 random documents under random settings
(tests/data/chunk_random_fingerprints.json, written by ``chunk_snapshot.py --random`` with the
chunker of commit b605bb0f, before the session that added the table scanner and spliced counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunk_snapshot import CORPORA, fingerprints, random_fingerprints

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


def test_random_documents_chunk_as_they_did_before():
    before = json.loads((Path(__file__).parent / "data" / "chunk_random_fingerprints.json").read_text())
    after = random_fingerprints(before["seed"], before["docs"])
    changed = [k for k, (b, a) in enumerate(zip(before["fingerprints"], after)) if a != b]
    assert len(after) == len(before["fingerprints"]) == 2000 and changed == [], f"random documents changed: {changed[:10]}"
