"""Links, versions and whole pages end to end: real Laravel files, the real default embedder,
the real SQLite store and both real Elasticsearch nodes."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
import warnings

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.embedding import SentenceTransformerEmbedder
from esrag.ingest import Ingester
from esrag.model import Hit, chunk_id
from esrag.pages import PageNotFound, get_page
from esrag.sites import resolve_site
from esrag.stores.base import Filters
from esrag.stores.elastic import ElasticStore
from paths import LARAVEL
from test_cli import run

EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}
BASE = "https://laravel.com/docs/{doc_version}/"


#: a line of HTML anchors only (Laravel's ``<a name="x"></a>``): the indexed text leaves it
#: blank, since the reader never sees it (issue 38, clean Markdown); the anchor stays the section's
_ANCHOR_LINE = re.compile(r'^[ \t]*(?:<a (?:name|id)="[^"]*"[ \t]*>[ \t]*</a>[ \t]*)+$', re.M)


def without_anchors(text: str) -> str:
    """``text`` as the index holds it: anchor-only lines blank."""
    return _ANCHOR_LINE.sub("", text)


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


class Counting:
    def __init__(self, inner):
        self.inner, self.spec, self.dims, self.texts = inner, inner.spec, inner.dims, 0

    def embed_documents(self, texts, progress=None):
        self.texts += len(texts)
        return self.inner.embed_documents(texts, progress)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def trees(tmp_path):
    """11.x: scheduling + cache; 12.x: scheduling with an edit + cache."""
    out = {}
    for version in ("11.x", "12.x"):
        root = tmp_path / version
        root.mkdir()
        for name in ("scheduling.md", "cache.md"):
            shutil.copy(LARAVEL / name, root / name)
        out[version] = root
    sched = out["12.x"] / "scheduling.md"
    sched.write_text(sched.read_text().replace("## Running the Scheduler", "## Running the Scheduler\n\nNew in 12.x: run it.\n", 1))
    return out


def ingest(store, emb, root, version, base=BASE, site="plain", allow_delete=False):
    where = resolve_site(root, site, base, doc_version=version)
    ing = Ingester(store, emb.spec, lambda: emb, HeaderChunker(), EMBED, BM25, site=where, doc_version=version, allow_delete=allow_delete)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ing.run(root, "laravel", ["*.md"], [])


def check_versions_links_and_pages(store, embedder, tmp_path):
    roots = trees(tmp_path)
    emb = Counting(embedder)
    s11, s12 = ingest(store, emb, roots["11.x"], "11.x"), ingest(store, emb, roots["12.x"], "12.x")
    assert not s11.failures and not s12.failures and s11.chunks_new > 20 and s12.chunks_new >= s11.chunks_new
    m11, m12 = store.manifest("laravel", "11.x"), store.manifest("laravel", "12.x")
    ids11 = {cid for e in m11.values() for cid in e}
    ids12 = {cid for e in m12.values() for cid in e}
    assert set(m11) == set(m12) == {"scheduling.md", "cache.md"} and not ids11 & ids12
    assert len(store.manifest("laravel")) == 2 and sum(len(e) for e in store.manifest("laravel").values()) == len(ids11) + len(ids12)

    # the version filter works inside both legs
    q = "run the scheduler every minute with cron"
    vec = embedder.embed_query(q)
    for version, ids in (("11.x", ids11), ("12.x", ids12)):
        lexical = store.bm25(q, 50, Filters(doc_version=version), BM25)
        dense = store.knn(vec, 50, Filters(doc_version=version), 100)
        assert lexical and dense and {i for i, _ in lexical} <= ids and {i for i, _ in dense} <= ids
    both = {i for i, _ in store.knn(vec, 200, Filters(), 400)}
    assert both & ids11 and both & ids12
    assert store.bm25(q, 10, Filters(doc_version="9.x"), BM25) == [] and store.knn(vec, 10, Filters(doc_version="9.x"), 100) == []

    # every chunk links to its published section
    chunks = store.get(sorted(ids12))
    assert all(c.url.startswith("https://laravel.com/docs/12.x/") and c.doc_version == "12.x" for c in chunks)
    by_path = {(c.source_path, c.section_path): c for c in chunks}
    hit = by_path[("scheduling.md", "Task Scheduling > Running the Scheduler")]
    assert (hit.anchor, hit.url) == ("running-the-scheduler", "https://laravel.com/docs/12.x/scheduling#running-the-scheduler")
    d = next(iter(store.get([hit.id])))
    out = Hit(d, 1.0).to_dict()
    assert (out["url"], out["anchor"], out["doc_version"]) == (hit.url, "running-the-scheduler", "12.x")

    # a whole page, every section in order, the source reassembled
    page = get_page(store, "scheduling.md", "laravel", "12.x")
    own = sorted((c for c in chunks if c.source_path == "scheduling.md"), key=lambda c: c.position)
    assert [s.section_path for s in page.sections] == [c.section_path for c in own]
    assert [s.anchor for s in page.sections] == [c.anchor for c in own]
    assert page.url == "https://laravel.com/docs/12.x/scheduling" and page.title == "Task Scheduling"
    assert page.text == without_anchors((roots["12.x"] / "scheduling.md").read_text().strip("\n"))
    d = page.to_dict()
    assert list(d) == ["source_path", "corpus", "doc_version", "title", "url", "sections", "text"]
    assert list(d["sections"][0]) == ["section_path", "anchor", "url", "alt_urls", "start_line", "end_line", "text"]
    assert get_page(store, "scheduling.md", doc_version="11.x").doc_version == "11.x"
    with pytest.raises(PageNotFound, match="no indexed page 'nope.md'"):
        get_page(store, "nope.md")

    # re-ingest 11.x elsewhere: new URLs, nothing re-embedded, 12.x untouched
    before = emb.texts
    again = ingest(store, emb, roots["11.x"], "11.x", base="https://mirror.example.org/laravel/{doc_version}/")
    assert (again.embeddings_computed, emb.texts - before, again.chunks_moved, again.chunks_new) == (0, 0, len(ids11), 0)
    assert all(c.url.startswith("https://mirror.example.org/laravel/11.x/") for c in store.get(sorted(ids11)))
    # dropping a file from 12.x removes only its 12.x chunks
    (roots["12.x"] / "cache.md").unlink()
    refused = ingest(store, emb, roots["12.x"], "12.x")  # most of 12.x's chunks: the deletion guard (per version) refuses
    assert refused.deletion_guard.refused and refused.deletion_guard.chunks_stored == len(ids12) and not refused.chunks_deleted
    pruned = ingest(store, emb, roots["12.x"], "12.x", allow_delete=True)
    assert pruned.chunks_deleted == len(m12["cache.md"]) and store.manifest("laravel", "11.x").keys() == m11.keys()


@pytest.mark.integration
def test_versions_links_and_pages_on_sqlite(sqlite_store, embedder, tmp_path):
    check_versions_links_and_pages(sqlite_store, embedder, tmp_path)


@pytest.mark.integration
def test_versions_links_and_pages_on_elasticsearch(es_url, embedder, tmp_path):
    store = ElasticStore(es_url, f"esrag-t-{uuid.uuid4().hex[:12]}")
    try:
        check_versions_links_and_pages(store, embedder, tmp_path)
    finally:
        store.drop()
        store.close()


def test_unversioned_chunk_ids_are_unchanged():
    key = "\x1f".join(("laravel", "scheduling.md", "Task Scheduling", "0"))
    assert chunk_id("laravel", "scheduling.md", "Task Scheduling", 0) == hashlib.sha256(key.encode()).hexdigest()[:32]
    assert chunk_id("laravel", "scheduling.md", "Task Scheduling", 0, "12.x") != chunk_id("laravel", "scheduling.md", "Task Scheduling", 0)


@pytest.mark.integration
def test_cli_links_versions_page_and_errors(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(LARAVEL / "scheduling.md", docs / "scheduling.md")
    (docs / "draft.md").write_text("---\ntitle: Soon\ndraft: true\n---\n# Soon\n\nNot yet.\n")
    (docs / "broken.md").write_text("---\ntitle: [unclosed\n---\n# Broken\n\nText.\n")
    env = {"ESRAG_DB": str(tmp_path / "x.db")}
    proc = run(
        ["ingest", "docs", "--site", "plain", "--base-url", "https://laravel.com/docs/12.x/", "--doc-version", "12.x", "--json"],
        cwd=tmp_path,
        env=env,
        check=False,
    )
    summary = json.loads(proc.stdout)
    assert proc.returncode == 1 and summary["skipped"] == ["draft.md (draft)"] and summary["doc_version"] == "12.x"
    assert [f["path"] for f in summary["failures"]] == ["broken.md"]
    assert "front matter is not valid YAML at line 2" in summary["failures"][0]["error"] and summary["chunks_new"] > 10
    hits = json.loads(run(["search", "run the scheduler with cron", "--doc-version", "12.x", "--json"], cwd=tmp_path, env=env).stdout)
    assert hits and all(h["url"].startswith("https://laravel.com/docs/12.x/scheduling") and h["doc_version"] == "12.x" for h in hits)
    assert all(h["anchor"] and h["url"].endswith("#" + h["anchor"]) for h in hits if h["section_path"])
    assert json.loads(run(["search", "scheduler", "--doc-version", "11.x", "--json"], cwd=tmp_path, env=env).stdout) == []
    human = run(["search", "run the scheduler with cron", "-k", "2"], cwd=tmp_path, env=env).stdout
    assert "https://laravel.com/docs/12.x/scheduling#" in human
    page = json.loads(run(["page", "scheduling.md", "--json"], cwd=tmp_path, env=env).stdout)
    assert page["doc_version"] == "12.x" and page["sections"][0]["section_path"] == "Task Scheduling"
    # the page as indexed: every source line in order; an oversize table split into pieces
    # (issue 15) repeats only its own header and separator rows
    source = without_anchors((docs / "scheduling.md").read_text().strip("\n")).split("\n")
    shown = page["text"].split("\n")
    it = iter(shown)
    assert all(line in it for line in source) and set(shown) <= set(source)
    assert len(shown) - len(source) < 20
    text = run(["page", "scheduling.md"], cwd=tmp_path, env=env).stdout
    assert "https://laravel.com/docs/12.x/scheduling" in text and "#running-the-scheduler" in text
    for args, flag in ((["--site", "jekyll"], "--site"), (["--base-url", "laravel.com/docs"], "--base-url")):
        bad = run(["ingest", "docs", *args], cwd=tmp_path, env=env, check=False)
        lines = [ln for ln in bad.stderr.strip().splitlines() if ln.strip()]
        assert bad.returncode != 0 and len(lines) == 1 and flag in lines[0], bad.stderr
    missing = run(["page", "nope.md"], cwd=tmp_path, env=env, check=False)
    assert missing.returncode == 1 and "no indexed page 'nope.md'" in missing.stderr


@pytest.mark.integration
def test_cli_ingest_failure_and_warning_lines_are_one_line_each(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nA page that is fine.\n")
    (docs / "broken.md").write_text("---\ntitle: [unclosed\nfoo: : bar\n---\n# Broken\n\nText.\n")
    (docs / "odd.rst").write_text("Odd\n===\n\n.. code-block:: python\n   :bogus-option\n\nAfter.\n")
    proc = run(["ingest", "docs", "--site", "plain"], cwd=tmp_path, env={"ESRAG_DB": str(tmp_path / "x.db"), "COLUMNS": "80"}, check=False)
    assert proc.returncode == 1
    failed = {ln for ln in proc.stderr.splitlines() if ln.startswith("failed ")}  # as it happens, and in the summary
    assert len(failed) == 1 and next(iter(failed)).startswith("failed broken.md: front matter is not valid YAML at line 3")
    assert next(iter(failed)).endswith("fix it or remove the --- block")  # not wrapped at 80 columns
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning ")]
    # docutils' report ends its first line with ":"; the reason on its next line is kept
    assert warned == [
        'warning odd.rst: line 4: ERROR: Error in "code-block" directive: maximum 1 argument(s) allowed, 2 supplied. (file indexed)'
    ]
