"""Section-context vectors (esrag.section_context): the arithmetic, the hashes that make ingest
re-embed a whole group, and incremental ingest with the real embedder, the real SQLite store
and real Laravel docs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from esrag import section_context
from esrag.app import make_chunker, make_ingester
from esrag.chunking.header import HeaderChunker
from esrag.config import Settings
from esrag.embedding import CachedEmbedder, SentenceTransformerEmbedder
from esrag.errors import ConfigError
from esrag.eval.arms import make_arm
from esrag.indexed_text import embed_text
from esrag.ingest import Ingester
from esrag.model import Chunk, Document
from esrag.stores.sqlite import SQLiteStore
from paths import LARAVEL
from test_ingest import BM25, EMBED, CountingEmbedder


def chunk(i: int, section: str, path: str = "a.md", text: str | None = None) -> Chunk:
    return Chunk(id=f"c{i}", text=text or f"text {i}", source_path=path, section_path=section, content_hash=f"h{i}")


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


# --- the arithmetic ---------------------------------------------------------------------------


def test_groups_follow_file_and_first_levels_of_the_section_path():
    cs = [
        chunk(0, "Doc > A > x"),
        chunk(1, "Doc > A > y"),
        chunk(2, "Doc > A"),
        chunk(3, "Doc > B"),
        chunk(4, "Doc > A > x", path="b.md"),
        chunk(5, ""),
        chunk(6, ""),
    ]
    assert section_context.groups(cs, 2) == [[0, 1, 2], [3], [4], [5], [6]]
    assert section_context.groups(cs, 3) == [[0], [1], [2], [3], [4], [5], [6]]
    assert section_context.groups(cs, 1) == [[0, 1, 2, 3], [4], [5], [6]]
    with pytest.raises(ValueError, match="at least 1"):
        section_context.groups(cs, 0)


def test_vectors_move_toward_their_group_mean_and_singletons_keep_their_own():
    cs = [chunk(0, "D > A > x"), chunk(1, "D > A > y"), chunk(2, "D > B"), chunk(3, "")]
    v = np.array([[3, 0, 0], [0, 2, 0], [0, 0, 5], [1, 1, 0]], dtype=np.float32)
    out = section_context.apply(cs, v, 1.0, 2)
    mean = (unit([1, 0, 0]) + unit([0, 1, 0])) / 2
    np.testing.assert_allclose(out[0], unit(unit([1, 0, 0]) + mean), atol=1e-6)
    np.testing.assert_allclose(out[1], unit(unit([0, 1, 0]) + mean), atol=1e-6)
    np.testing.assert_allclose(out[2], [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(out[3], unit([1, 1, 0]), atol=1e-6)
    assert out.dtype == np.float32 and out.shape == v.shape
    # members of one group come closer to each other; alpha 0 only normalises
    assert out[0] @ out[1] > 0.5 > unit(v[0]) @ unit(v[1])
    np.testing.assert_allclose(section_context.apply(cs, v, 0.0, 2), v / np.linalg.norm(v, axis=1, keepdims=True), atol=1e-6)


def test_apply_rejects_bad_arguments():
    cs = [chunk(0, "D > A"), chunk(1, "D > A")]
    with pytest.raises(ValueError, match="one vector per chunk"):
        section_context.apply(cs, np.ones((3, 4)), 1.0, 2)
    with pytest.raises(ValueError, match=">= 0"):
        section_context.apply(cs, np.ones((2, 4)), -0.5, 2)


def test_hashes_change_for_the_whole_group_and_only_for_it():
    cs = [chunk(0, "D > A > x"), chunk(1, "D > A > y"), chunk(2, "D > B")]
    before = section_context.context_hashes(cs, 1.0, 2)
    assert len(set(before)) == 3 and before != [c.content_hash for c in cs]
    edited = [cs[0], Chunk(id="c1", text="new", source_path="a.md", section_path="D > A > y", content_hash="h1-edited"), cs[2]]
    after = section_context.context_hashes(edited, 1.0, 2)
    assert after[0] != before[0] and after[1] != before[1] and after[2] == before[2]
    removed = section_context.context_hashes([cs[0], cs[2]], 1.0, 2)
    assert removed[0] != before[0] and removed[1] == before[2]
    assert section_context.context_hashes(cs, 0.5, 2) != before  # the setting is part of the hash
    assert section_context.context_hashes(cs, 1.0, 3)[0] != before[0]
    assert section_context.context_hashes(cs, 0.0, 2) == [c.content_hash for c in cs]


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.integration
def test_settings_default_reaches_ingest_and_the_eval_default_arm(tmp_path):
    settings = Settings()
    assert (settings.index_text.section_context, settings.index_text.section_context_depth) == (1.0, 2)
    store = SQLiteStore(tmp_path / "esrag.db")
    try:
        ing = make_ingester(settings, store, HeaderChunker())
        assert (ing.section_context, ing.section_context_depth) == (1.0, 2)
    finally:
        store.close()
    arm = make_arm("default", settings)
    assert (arm.section_context, arm.section_context_depth) == (1.0, 2)
    assert "section context 1 (depth 2)" in arm.description
    off = Settings(index_text={"section_context": 0})
    assert make_arm("default", off).section_context == 0
    assert make_arm("S+T", settings).section_context == 0  # the seed's arms run its protocol


def test_config_arms_take_section_context_and_reject_bad_values():
    arm = make_arm("ctx", Settings(), {"ctx": {"section_context": 0.5, "section_context_depth": 3}})
    assert (arm.section_context, arm.section_context_depth) == (0.5, 3)
    assert make_arm("plain", Settings(), {"plain": {}}).section_context == 0
    with pytest.raises(ConfigError, match="arm 'bad': section_context must be >= 0"):
        make_arm("bad", Settings(), {"bad": {"section_context": -1}})
    with pytest.raises(ValueError):
        Settings(index_text={"section_context_depth": 0})


# --- incremental ingest (real embedder, real SQLite store) ------------------------------------


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name in ("scheduling.md", "cache.md"):
        shutil.copy(LARAVEL / name, root / name)
    return root


@pytest.fixture
def store(sqlite_store):
    return sqlite_store


def ingest(store, emb, root, alpha=1.0):
    return Ingester(store, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25, section_context=alpha, section_context_depth=2).run(
        root, "laravel", ["*.md"], []
    )


def file_chunks(root, name, chunker=None):
    return (chunker or HeaderChunker()).chunk(Document(name, (root / name).read_text(), corpus="laravel"))


def expected_vectors(embedder, chunks):
    raw = embedder.embed_documents([embed_text(c, EMBED) for c in chunks])
    return section_context.apply(chunks, raw, 1.0, 2)


def big_group(chunks):
    """Indices of the largest group of ``chunks`` with at least three members."""
    best = max(section_context.groups(chunks, 2), key=len)
    assert len(best) >= 3
    return best


@pytest.mark.integration
def test_stored_vectors_are_the_section_context_vectors(tree, store, embedder):
    s = ingest(store, CountingEmbedder(embedder), tree)
    assert s.failures == [] and s.chunks_new > 0
    chunks = file_chunks(tree, "scheduling.md")
    stored = store.vectors([c.id for c in chunks])
    want = expected_vectors(embedder, chunks)
    np.testing.assert_allclose(np.stack([stored[c.id] for c in chunks]), want, atol=2e-3)
    # the vectors really differ from the plain passage embeddings inside groups
    plain = embedder.embed_documents([embed_text(chunks[i], EMBED) for i in big_group(chunks)])
    assert np.abs(plain - want[big_group(chunks)]).max() > 0.05


@pytest.mark.integration
def test_editing_one_chunk_reembeds_exactly_its_group(tree, store, embedder):
    ingest(store, CountingEmbedder(embedder), tree)
    chunks = file_chunks(tree, "scheduling.md")
    idx = big_group(chunks)
    target = chunks[idx[1]]
    lines = (tree / "scheduling.md").read_text().split("\n")
    line = next(i for i in range(target.start_line - 1, target.end_line) if len(lines[i].split()) > 6)
    lines[line] = lines[line] + " Edited for the test."
    (tree / "scheduling.md").write_text("\n".join(lines))
    emb = CountingEmbedder(embedder)
    s = ingest(store, emb, tree)
    assert (s.chunks_new, s.chunks_changed, s.chunks_deleted) == (0, len(idx), 0)
    assert emb.texts == len(idx) == s.embeddings_computed
    assert s.chunks_unchanged == s.chunks - len(idx)
    chunks = file_chunks(tree, "scheduling.md")
    stored = store.vectors([c.id for c in chunks])
    np.testing.assert_allclose(np.stack([stored[c.id] for c in chunks]), expected_vectors(embedder, chunks), atol=2e-3)
    again = CountingEmbedder(embedder)
    assert ingest(store, again, tree).chunks_changed == 0 and again.texts == 0


@pytest.mark.integration
def test_a_member_missing_from_the_store_reembeds_its_whole_group(tree, store, embedder):
    """A chunk lost between runs (a failed bulk item, a manual delete) comes back with vectors
    computed over its whole group, not over itself alone."""
    ingest(store, CountingEmbedder(embedder), tree)
    chunks = file_chunks(tree, "cache.md")
    idx = big_group(chunks)
    assert store.delete([chunks[idx[0]].id]) == 1
    emb = CountingEmbedder(embedder)
    s = ingest(store, emb, tree)
    assert (s.chunks_new, s.chunks_changed) == (1, len(idx) - 1) and emb.texts == len(idx)
    stored = store.vectors([chunks[i].id for i in idx])
    want = expected_vectors(embedder, chunks)[idx]
    np.testing.assert_allclose(np.stack([stored[chunks[i].id] for i in idx]), want, atol=2e-3)


@pytest.mark.integration
def test_turning_section_context_off_reembeds_grouped_chunks_back_to_plain_vectors(tree, store, embedder):
    first = ingest(store, CountingEmbedder(embedder), tree)
    emb = CountingEmbedder(embedder)
    s = ingest(store, emb, tree, alpha=0.0)
    assert s.chunks_changed == first.chunks_new and s.chunks_new == 0  # every hash covered the setting
    chunks = file_chunks(tree, "scheduling.md")
    stored = store.vectors([c.id for c in chunks])
    plain = embedder.embed_documents([embed_text(c, EMBED) for c in chunks])
    np.testing.assert_allclose(np.stack([stored[c.id] for c in chunks]), plain, atol=2e-3)


def cli_ingest(root, db):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    env["ESRAG_DB"] = str(db)
    esrag = str(Path(sys.executable).with_name("esrag"))
    out = subprocess.run(
        [esrag, "ingest", str(root), "--corpus", "laravel", "--json"], capture_output=True, text=True, env=env, cwd=root.parent, timeout=600
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.integration
def test_esrag_ingest_embeds_only_the_edited_text_and_takes_its_group_from_the_cache(tree, embedder, tmp_path):
    """Out of the box, `esrag ingest` keeps passage vectors in the embedding cache beside the
    index: an edit embeds the edited text alone, and its unchanged group members get their new
    section-context vectors from cached passage vectors."""
    db = tmp_path / "db" / "esrag.db"
    first = cli_ingest(tree, db)
    assert first["embeddings_computed"] == first["chunks_new"] > 0 and first["embeddings_cached"] == 0
    assert (db.parent / "embedding_cache.db").exists()
    chunks = file_chunks(tree, "cache.md", make_chunker(Settings()))
    idx = big_group(chunks)
    path = tree / "cache.md"
    lines = path.read_text().split("\n")
    target = chunks[idx[-1]]
    line = next(i for i in range(target.start_line - 1, target.end_line) if len(lines[i].split()) > 6)
    lines[line] += " Edited for the test."
    path.write_text("\n".join(lines))
    second = cli_ingest(tree, db)
    assert (second["chunks_changed"], second["embeddings_computed"], second["embeddings_cached"]) == (len(idx), 1, len(idx) - 1)
    store = SQLiteStore(db)
    try:
        chunks = file_chunks(tree, "cache.md", make_chunker(Settings()))
        stored = store.vectors([c.id for c in chunks])
        np.testing.assert_allclose(np.stack([stored[c.id] for c in chunks]), expected_vectors(embedder, chunks), atol=2e-3)
    finally:
        store.close()


@pytest.mark.integration
def test_cache_embeddings_setting_decides_whether_ingest_reads_the_cache(tmp_path):
    on = make_ingester(Settings(db=tmp_path / "a.db"), None, HeaderChunker())
    off = make_ingester(Settings(db=tmp_path / "a.db", ingest={"cache_embeddings": False}), None, HeaderChunker())
    assert isinstance(on._embedder_factory(), CachedEmbedder)
    assert not isinstance(off._embedder_factory(), CachedEmbedder)
    assert Settings(db=tmp_path / "a.db").embedding_cache_path == tmp_path / "embedding_cache.db"
    assert Settings(embedding_cache=tmp_path / "x.db").embedding_cache_path == tmp_path / "x.db"
