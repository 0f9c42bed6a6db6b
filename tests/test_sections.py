"""Sections, not fragments (esrag.search.sections), packing that never cuts mid-line, and the
down-weighting of release notes and generated API stubs (esrag.search.demote): on the real
SQLite store, and through the Pipeline over FastAPI's real docs."""

from __future__ import annotations

import numpy as np
import pytest

from esrag.config import CorpusSettings, DemoteSettings, load_settings
from esrag.errors import InvalidSettings
from esrag.model import Chunk, Hit, content_hash
from esrag.search.budget import block_prefix
from esrag.search.demote import apply_demotion, demoted, is_api_stub
from esrag.search.pipeline import pack
from esrag.search.sections import members_of, shape_hits
from esrag.stores.base import IndexMeta
from esrag.stores.sqlite import SQLiteStore
from esrag.tokens import count_tokens

PAGE = [  # (section path, text) of one page, in order
    ("Cookies", "# Cookies\n\nYou can set cookies in a response. " + "Cookies carry state between requests. " * 6),
    ("Cookies > Use a Response parameter", "## Use a Response parameter { #use }"),  # a header chunk alone: tiny
    (
        "Cookies > Use a Response parameter",
        "Declare a parameter of type Response.\n\n```python\nresponse.set_cookie(key='k', value='v')\n```"
        + "\n\nThen set cookies on it. " * 5,
    ),
    ("Cookies > Use a Response parameter", "And you can still return any object you need. " * 8),
    ("Cookies > Return a Response directly", "## Return a Response directly\n\n" + "Create a response and set cookies on it. " * 8),
]


@pytest.fixture
def page_store(tmp_path):
    store = SQLiteStore(tmp_path / "p.db")
    store.ensure(IndexMeta("test:unit", 4, ["text"], {"text": 1.0}))
    chunks, line = [], 1
    for i, (path, text) in enumerate(PAGE, 1):
        n = text.count("\n") + 1
        chunks.append(
            Chunk(
                id=f"c{i}",
                text=text,
                corpus="docs",
                source_path="cookies.md",
                section_path=path,
                start_line=line,
                end_line=line + n - 1,
                position=i,
                n_chunks=len(PAGE),
                tokens=count_tokens(text),
                content_hash=content_hash(text),
                doc_title="Cookies",
                url=f"https://x/cookies/#c{i}",
                anchor=f"c{i}",
            )
        )
        line += n + 1
    store.write(chunks, np.eye(4, dtype=np.float32)[[i % 4 for i in range(len(chunks))]], ["m"] * len(chunks))
    yield store, {c.id: c for c in chunks}
    store.close()


def _hits(chunks, *ids):
    return [Hit(chunks[i], 1.0 / n) for n, i in enumerate(ids, 1)]


def test_adjacent_hits_of_one_section_are_one_hit(page_store):
    store, c = page_store
    out = shape_hits(_hits(c, "c4", "c1", "c3"), store, min_tokens=0)
    assert [h.chunk.id for h in out][1] == "c1" and len(out) == 2  # c3 + c4 adjacent, same section: one hit at c4's rank
    merged = out[0]
    assert [m[0] for m in merged.chunk.metadata["chunks"]] == ["c3", "c4"] and merged.expanded_from == ["c4", "c3"]
    assert merged.chunk.text == c["c3"].text + "\n\n" + c["c4"].text and merged.chunk.tokens == count_tokens(merged.chunk.text)
    assert (merged.chunk.start_line, merged.chunk.end_line) == (c["c3"].start_line, c["c4"].end_line)
    assert merged.chunk.section_path == "Cookies > Use a Response parameter" and merged.chunk.anchor == "c3"
    assert merged.score == 1.0  # the better rank's score
    # siblings (two ## sections) stay apart even when adjacent; so do hits of other pages
    apart = shape_hits(_hits(c, "c4", "c5"), store, min_tokens=0)
    assert [h.chunk.id for h in apart] == ["c4", "c5"]
    # a section's text and the subsection that follows it are one section
    assert len(shape_hits(_hits(c, "c1", "c2"), store, min_tokens=0)) == 1
    # merging off: as ranked
    assert [h.chunk.id for h in shape_hits(_hits(c, "c4", "c3"), store, min_tokens=0, merge=False)] == ["c4", "c3"]


def test_a_small_hit_comes_with_its_section(page_store):
    store, c = page_store
    assert c["c2"].tokens < 40
    [grown] = shape_hits(_hits(c, "c2"), store, min_tokens=40, merge=False)
    ids = [m.id for m in members_of(grown)]
    assert ids[:2] == ["c2", "c3"] and grown.chunk.tokens >= 40  # the following chunk first: the header's content
    assert grown.expanded_from == ["c2"] and "response.set_cookie" in grown.chunk.text
    # a later hit that the grown one already holds folds into it
    out = shape_hits(_hits(c, "c2", "c3"), store, min_tokens=40)
    assert len(out) == 1 and out[0].expanded_from == ["c2", "c3"]
    # min_tokens 0: the small hit is returned as it is
    assert shape_hits(_hits(c, "c2"), store, min_tokens=0)[0].chunk.id == "c2"


def test_no_chunk_is_in_two_hits_when_a_small_hit_neighbours_a_better_one(page_store):
    """The small header chunk c2 would grow into c3, which ranks above it: it grows the other way
    instead, and the two meet as one hit (issue 38: no block twice in a response)."""
    store, c = page_store
    out = shape_hits(_hits(c, "c3", "c2"), store, min_tokens=40)
    ids = [m.id for h in out for m in members_of(h)]
    assert len(ids) == len(set(ids)) and {"c2", "c3"} <= set(ids)


def test_pieces_of_one_section_come_together_in_page_order(page_store):
    """c4 and c2 (one section, c3 between them not retrieved) with another section's hit between
    them in rank: they come back together at c4's rank, c2 first (page order)."""
    store, c = page_store
    out = shape_hits(_hits(c, "c4", "c5", "c2"), store, min_tokens=0)
    assert [h.chunk.id for h in out] == ["c2", "c4", "c5"]
    assert [h.chunk.id for h in shape_hits(_hits(c, "c4", "c5", "c2"), store, min_tokens=0, merge=False)] == ["c4", "c5", "c2"]


def test_block_prefix_ends_at_a_blank_line_outside_fences():
    text = "para one line\nsecond line\n\n```python\nx = 1\n\ny = 2\n```\n\nlast para " + "word " * 50
    assert block_prefix(text, 6) == block_prefix(text, 20) == "para one line\nsecond line"
    assert block_prefix(text, 21) == "para one line\nsecond line\n\n```python\nx = 1\n\ny = 2\n```"  # never inside the fence
    assert block_prefix(text, 5) == ""
    assert block_prefix("one paragraph only " * 20, 10) == ""


def test_pack_shortens_at_a_block_or_leaves_the_hit_out(page_store):
    store, c = page_store
    long = shape_hits(_hits(c, "c3", "c4"), store, min_tokens=0)[0]  # c3 + c4: several blocks
    small = Hit(c["c5"], 0.1)
    budget = c["c3"].tokens + 5
    out = pack([long, small], budget)
    assert sum(h.chunk.tokens for h in out) <= budget
    first = out[0]
    assert first.chunk.metadata["truncated"] and long.chunk.text.startswith(first.chunk.text)
    assert long.chunk.text[len(first.chunk.text) :].startswith("\n\n") and first.chunk.end_line < long.chunk.end_line
    # a hit with no boundary that fits is left out; a later hit that fits whole is still taken
    one_block = Hit(Chunk("b", "x " * 400, tokens=count_tokens("x " * 400)), 1.0)
    taken = pack([one_block, small], small.chunk.tokens + 3)
    assert [h.chunk.id for h in taken] == ["c5"]


def test_demotion_by_path_and_api_stub():
    assert is_api_stub("# Response class\n\n::: fastapi.Response\n    options:\n      members: [x]\n")
    assert not is_api_stub("::: fastapi\n")  # a dotted path only: Docusaurus writes :::tip
    assert not is_api_stub("Use `:::` in prose, or a colon: like this ::: nothing")
    assert not is_api_stub(":::tip\n\nA Docusaurus admonition.\n\n:::\n\n:::note Title\n:::")
    pats = tuple(DemoteSettings().patterns)
    for path in ("docs/en/docs/release-notes.md", "CHANGES.rst", "docs/changes.rst", "docs/CHANGELOG.md", "HISTORY.md"):
        assert demoted(path, "", pats, False), path
    for path in (
        "docs/release-process.rst",
        "src/ch14-01-release-profiles.md",
        "docs/history-design-future.md",
        "docs/advanced/response-change-status-code.md",
    ):
        assert not demoted(path, "", pats, False), path

    def h(cid, path, score, text="prose"):
        return Hit(Chunk(cid, text, source_path=path), score)

    hits = [
        h("notes", "release-notes.md", 0.032),
        h("tut", "tutorial/cookies.md", 0.030),
        h("ref", "reference/response.md", 0.029, "::: fastapi.Response"),
        h("t2", "a.md", 0.01),
    ]
    out = apply_demotion(hits, lambda hit: (pats, True, 0.5))
    assert [x.chunk.id for x in out] == ["tut", "notes", "ref", "t2"] and out[1].score == pytest.approx(0.016)
    assert out[1].chunk.metadata["demoted"] == 0.5 and "demoted" not in out[0].chunk.metadata
    assert [x.chunk.id for x in apply_demotion(hits, lambda hit: None)] == [x.chunk.id for x in hits]


def test_corpus_demote_setting_from_toml(tmp_path, monkeypatch):
    (tmp_path / "esrag.toml").write_text(
        '[corpora.fastapi]\ndemote = {patterns = ["reference/"], weight = 0.25}\n[corpora.plain]\ndemote = {weight = 1.0}\n'
    )
    monkeypatch.setenv("ESRAG_CONFIG", str(tmp_path / "esrag.toml"))
    s = load_settings()
    assert s.corpora["fastapi"].demote.patterns == ["reference/"] and s.corpora["fastapi"].demote.weight == 0.25
    assert s.corpora["plain"].demote.weight == 1.0 and CorpusSettings().demote.weight == 0.5
    (tmp_path / "esrag.toml").write_text("[corpora.x]\ndemote = {weight = 0}\n")
    with pytest.raises(InvalidSettings, match=r"esrag\.toml: corpora\.x\.demote\.weight: expected a number > 0"):
        load_settings()  # strict settings: one line naming the file and the key


def test_pack_keeps_a_hit_whole_when_its_text_fits_though_its_stored_count_is_over():
    """A merged hit's stored count (a sum over its members) can exceed its joined text's own count:
    when the text fits, it is taken whole with that count, not marked truncated."""
    text = "First paragraph of a section.\n\nSecond paragraph, still short."
    n = count_tokens(text)
    hit = Hit(Chunk("m", text, tokens=n + 10, start_line=1, end_line=3), 1.0)
    [got] = pack([hit], n + 2)
    assert got.chunk.text == text and got.chunk.tokens == n and "truncated" not in got.chunk.metadata
