"""The store contract as a reusable test class: every store backend runs all of it.

A backend's test module subclasses :class:`StoreContract` and provides a ``store`` fixture
returning a fresh, empty store (see ``tests/test_store_sqlite.py`` and
``tests/test_store_elastic.py``). Vectors here are small hand-made ones so that the expected
kNN order is known exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from esrag.errors import EmbedderMismatch
from esrag.model import Chunk, Enrichment, content_hash
from esrag.stores.base import Filters, IndexMeta

DIMS = 8
FIELDS = {"text": 1.0, "section_path": 1.0}


def make_chunk(i: int, text: str, corpus: str = "docs", path: str = "a.md", section: str = "Intro", **kw) -> Chunk:
    return Chunk(
        id=f"{corpus}-{path}-{i}",
        text=text,
        corpus=corpus,
        source_path=path,
        section_path=section,
        start_line=i * 10 + 1,
        end_line=i * 10 + 5,
        position=i + 1,
        n_chunks=kw.pop("n_chunks", 1),
        tokens=len(text.split()),
        content_hash=content_hash(text),
        doc_title="Doc",
        **kw,
    )


def unit(*hot: int, dims: int = DIMS) -> np.ndarray:
    v = np.zeros(dims, dtype=np.float32)
    for h in hot:
        v[h] = 1.0
    return v / np.linalg.norm(v)


def meta() -> IndexMeta:
    return IndexMeta(embedder="test:unit-vectors", dims=DIMS, embed_fields=["text"], bm25_fields=FIELDS)


class StoreContract:
    """Tests every store must pass. Subclasses supply a ``store`` fixture (empty, ensured)."""

    def write(self, store, chunks, vectors):
        report = store.write(chunks, np.stack(vectors), ["m"] * len(chunks))
        store.refresh()
        assert not report.failed, report.failed
        return report

    # -- lifecycle ----------------------------------------------------------------------
    def test_meta_round_trip(self, store):
        got = store.meta()
        assert got is not None
        assert (got.embedder, got.dims, got.embed_fields) == ("test:unit-vectors", DIMS, ["text"])

    def test_ensure_same_meta_is_idempotent(self, store):
        store.ensure(meta())
        assert store.meta().dims == DIMS

    def test_ensure_other_model_names_both(self, store):
        other = IndexMeta(embedder="st:other-model", dims=16, embed_fields=["text"])
        with pytest.raises(EmbedderMismatch, match=r"test:unit-vectors \(8 dims\).*st:other-model \(16 dims\)"):
            store.ensure(other)

    # -- writes -------------------------------------------------------------------------
    def test_write_get_round_trip_keeps_every_field(self, store):
        c = make_chunk(
            0,
            "Schedules run every minute.",
            section="Scheduling > Frequency",
            n_chunks=3,
            parent_id="p1",
            context="This chunk is about cron.",
            metadata={"authority": "official", "language": "en", "effective_date": "2024-01-01", "team": "core"},
        )
        c.enrichment = Enrichment(
            title="T",
            summary="S",
            keywords=["a", "b"],
            questions=["q1?", "q2?"],
            entities=["Laravel"],
            key="k",
            related_keys=["r1"],
            model="m",
            prompt_sha256="abc",
        )
        self.write(store, [c], [unit(0)])
        [got] = store.get([c.id])
        assert got.text == c.text and got.section_path == c.section_path
        assert (got.start_line, got.end_line, got.position, got.n_chunks, got.tokens) == (1, 5, 1, 3, c.tokens)
        assert got.content_hash == c.content_hash and got.doc_title == "Doc" and got.parent_id == "p1"
        assert got.context == c.context
        assert got.metadata["authority"] == "official" and got.metadata["language"] == "en"
        assert got.metadata["team"] == "core" and str(got.metadata["effective_date"]).startswith("2024-01-01")
        e = got.enrichment
        assert e is not None and (e.title, e.summary, e.key, e.model, e.prompt_sha256) == ("T", "S", "k", "m", "abc")
        assert sorted(e.keywords) == ["a", "b"] and sorted(e.questions) == ["q1?", "q2?"]
        assert e.entities == ["Laravel"] and e.related_keys == ["r1"]

    def test_rewrite_same_id_replaces_without_duplicate(self, store):
        self.write(store, [make_chunk(0, "old words here")], [unit(0)])
        self.write(store, [make_chunk(0, "new words here")], [unit(1)])
        assert [c.text for c in store.get(["docs-a.md-0"])] == ["new words here"]
        assert store.stats()["chunks"] == 1
        assert store.bm25("old", 5, Filters(), FIELDS) == []
        assert store.knn(unit(1), 1, Filters(), 10)[0][0] == "docs-a.md-0"

    def test_delete_by_id(self, store):
        self.write(store, [make_chunk(i, f"word{i} shared") for i in range(3)], [unit(i) for i in range(3)])
        assert store.delete(["docs-a.md-1", "missing-id"]) == 1
        store.refresh()
        assert [c.id for c in store.get(["docs-a.md-0", "docs-a.md-1", "docs-a.md-2"])] == ["docs-a.md-0", "docs-a.md-2"]
        assert "docs-a.md-1" not in {i for i, _ in store.bm25("shared", 10, Filters(), FIELDS)}
        assert "docs-a.md-1" not in {i for i, _ in store.knn(unit(1), 10, Filters(), 10)}

    def test_update_meta_keeps_vector_and_text(self, store):
        self.write(store, [make_chunk(0, "alpha beta")], [unit(2)])
        moved = make_chunk(0, "alpha beta")
        moved.start_line, moved.end_line, moved.position = 100, 120, 7
        store.update_meta([moved], ["m2"])
        store.refresh()
        [got] = store.get([moved.id])
        assert (got.start_line, got.end_line, got.position) == (100, 120, 7)
        assert store.knn(unit(2), 1, Filters(), 10)[0][0] == moved.id
        assert store.manifest("docs")["a.md"][moved.id].meta_hash == "m2"

    def test_manifest_groups_by_source(self, store):
        chunks = [make_chunk(0, "one", path="a.md"), make_chunk(1, "two", path="b/c.md"), make_chunk(2, "three", corpus="other")]
        self.write(store, chunks, [unit(0), unit(1), unit(2)])
        m = store.manifest("docs")
        assert set(m) == {"a.md", "b/c.md"}
        assert m["a.md"]["docs-a.md-0"].content_hash == content_hash("one")
        assert m["a.md"]["docs-a.md-0"].meta_hash == "m"
        assert set(store.manifest("other")) == {"a.md"}
        assert store.manifest("nothing") == {}

    def test_get_keeps_order_and_skips_unknown(self, store):
        self.write(store, [make_chunk(i, f"t{i}") for i in range(3)], [unit(i) for i in range(3)])
        assert [c.id for c in store.get(["docs-a.md-2", "nope", "docs-a.md-0"])] == ["docs-a.md-2", "docs-a.md-0"]

    def test_neighbours_by_position(self, store):
        chunks = [make_chunk(i, f"t{i}", n_chunks=5) for i in range(5)] + [make_chunk(0, "x", path="z.md")]
        self.write(store, chunks, [unit(i % DIMS) for i in range(6)])
        got = store.neighbours("docs", "a.md", [2, 4, 9])
        assert [c.position for c in got] == [2, 4]

    # -- BM25 ---------------------------------------------------------------------------
    def test_bm25_ranks_matching_text_first(self, store):
        chunks = [
            make_chunk(0, "Queues let you defer time consuming tasks."),
            make_chunk(1, "The scheduler runs a task every minute with cron."),
            make_chunk(2, "Blade templates render views."),
        ]
        self.write(store, chunks, [unit(0), unit(1), unit(2)])
        hits = store.bm25("schedule a task every minute", 3, Filters(), FIELDS)
        assert hits[0][0] == "docs-a.md-1"
        assert "docs-a.md-2" not in [h[0] for h in hits]
        assert all(s > 0 for _, s in hits) and [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)

    def test_bm25_english_analyzer_ignores_stop_words(self, store):
        # the index's analyzer is ``english`` (IndexMeta's default): question words match nothing
        chunks = [
            make_chunk(0, "What is it? What is it that they do? What is this?"),
            make_chunk(1, "Failed queue jobs are retried by the worker."),
        ]
        self.write(store, chunks, [unit(0), unit(1)])
        assert [i for i, _ in store.bm25("what is it that they do with failed jobs", 5, Filters(), FIELDS)] == ["docs-a.md-1"]

    def test_bm25_field_weights_decide_which_fields_match(self, store):
        self.write(store, [make_chunk(0, "plain body text", section="Broadcasting")], [unit(0)])
        assert [i for i, _ in store.bm25("broadcasting", 5, Filters(), {"text": 1.0, "section_path": 1.0})] == ["docs-a.md-0"]
        assert store.bm25("broadcasting", 5, Filters(), {"text": 1.0}) == []

    def test_bm25_query_syntax_is_inert(self, store):
        self.write(store, [make_chunk(0, "route caching with artisan")], [unit(0)])
        for q in ['"unbalanced', "a AND OR NOT", "title:(x", "*", "route -caching", "NEAR(", "{}[]^~"]:
            store.bm25(q, 5, Filters(), FIELDS)  # must not raise
        assert store.bm25("", 5, Filters(), FIELDS) == []
        assert store.bm25("route -caching", 5, Filters(), FIELDS)[0][0] == "docs-a.md-0"

    def test_bm25_filters_apply_inside_the_search(self, store):
        # 30 strong matches in corpus "docs", 2 weak ones in "other": a filter applied after
        # taking the top 2 would return nothing.
        chunks = [make_chunk(i, "cache cache cache driver") for i in range(30)]
        chunks += [make_chunk(i, "a cache note among many other words here", corpus="other", path=f"o{i}.md") for i in range(2)]
        self.write(store, chunks, [unit(i % DIMS) for i in range(32)])
        got = store.bm25("cache", 2, Filters(corpora=["other"]), FIELDS)
        assert sorted(i for i, _ in got) == ["other-o0.md-0", "other-o1.md-1"]

    def test_bm25_path_prefix_language_and_exclude(self, store):
        chunks = [
            make_chunk(0, "token guard", path="auth/guards.md", metadata={"language": "en"}),
            make_chunk(1, "token guard", path="auth/tokens.md", metadata={"language": "de"}),
            make_chunk(2, "token guard", path="other.md", metadata={"language": "en"}),
        ]
        self.write(store, chunks, [unit(0), unit(1), unit(2)])
        assert {i for i, _ in store.bm25("token", 10, Filters(path_prefix="auth/"), FIELDS)} == {
            "docs-auth/guards.md-0",
            "docs-auth/tokens.md-1",
        }
        assert {i for i, _ in store.bm25("token", 10, Filters(languages=["en"]), FIELDS)} == {"docs-auth/guards.md-0", "docs-other.md-2"}
        assert {i for i, _ in store.bm25("token", 10, Filters(exclude_ids=["docs-other.md-2"]), FIELDS)} == {
            "docs-auth/guards.md-0",
            "docs-auth/tokens.md-1",
        }

    # -- kNN ----------------------------------------------------------------------------
    def test_knn_orders_by_cosine(self, store):
        chunks = [make_chunk(i, f"t{i}") for i in range(3)]
        self.write(store, chunks, [unit(0), unit(0, 1), unit(2)])
        hits = store.knn(unit(0), 3, Filters(), 10)
        assert [i for i, _ in hits] == ["docs-a.md-0", "docs-a.md-1", "docs-a.md-2"]
        assert hits[0][1] > hits[1][1] > hits[2][1]

    def test_knn_filters_apply_inside_the_search(self, store):
        chunks = [make_chunk(i, f"d{i}") for i in range(30)]
        chunks += [make_chunk(i, f"o{i}", corpus="other", path=f"o{i}.md") for i in range(3)]
        vectors = [unit(0) for _ in range(30)] + [unit(5), unit(6), unit(7)]
        self.write(store, chunks, vectors)
        got = store.knn(unit(0), 3, Filters(corpora=["other"]), 10)
        assert sorted(i for i, _ in got) == ["other-o0.md-0", "other-o1.md-1", "other-o2.md-2"]
        got = store.knn(unit(0), 2, Filters(path_prefix="o1"), 10)
        assert [i for i, _ in got] == ["other-o1.md-1"]

    def test_stats_counts(self, store):
        chunks = [make_chunk(0, "a", path="x.md"), make_chunk(1, "b", path="x.md"), make_chunk(2, "c", path="y.md", corpus="c2")]
        self.write(store, chunks, [unit(0), unit(1), unit(2)])
        s = store.stats()
        assert s["chunks"] == 3 and s["sources"] == 2
        assert {k: v for k, v in s["corpora"]["docs"].items() if k != "versions"} == {"chunks": 2, "sources": 1}
        assert {k: v for k, v in s["corpora"]["c2"].items() if k != "versions"} == {"chunks": 1, "sources": 1}

    def test_stats_list_each_corpus_versions_and_pages_list_every_copy(self, store):
        """Issue 26: versions per corpus (with when they were last written) and the page listing
        that get_page resolves URLs and prefix-less paths against."""
        chunks = [
            make_chunk(0, "a", path="docs/x.md", url="https://d.example/x/#intro"),
            make_chunk(1, "b", path="docs/x.md", url="https://d.example/x/#more"),
            make_chunk(2, "c", path="docs/x.md", doc_version="2.0", url="https://d.example/2.0/x/#intro"),
            make_chunk(3, "d", path="y.md", corpus="c2", doc_version="1.0"),
        ]
        self.write(store, chunks, [unit(0), unit(1), unit(2), unit(3)])
        s = store.stats()
        docs = s["corpora"]["docs"]["versions"]
        assert set(docs) == {"", "2.0"} and docs[""]["chunks"] == 2 and docs["2.0"]["chunks"] == 1
        assert docs[""]["sources"] == 1 and docs["2.0"]["indexed_at"] and str(docs["2.0"]["indexed_at"]).startswith("20")
        assert set(s["corpora"]["c2"]["versions"]) == {"1.0"}
        pages = store.pages()
        assert [(p.corpus, p.doc_version, p.source_path, p.url) for p in pages] == [
            ("c2", "1.0", "y.md", ""),
            ("docs", "", "docs/x.md", "https://d.example/x/"),
            ("docs", "2.0", "docs/x.md", "https://d.example/2.0/x/"),
        ]
        assert all(p.indexed_at for p in pages)
        assert [p.source_path for p in store.pages("c2")] == ["y.md"] and store.pages("nope") == []

    def test_get_page_by_url_or_short_path_of_the_default_version(self, store):
        """Issue 26/30 through the real store: get_page resolves a hit's URL and a path without
        the docs root prefix, returns the default version unless asked, and names it."""
        from esrag.errors import PageNotFound
        from esrag.pages import get_page

        chunks = [
            make_chunk(0, "one", path="docs/en/x.md", url="https://d.example/x/#intro"),
            make_chunk(1, "two", path="docs/en/x.md", url="https://d.example/x/#more", section="Intro > More"),
            make_chunk(2, "new one", path="docs/en/x.md", doc_version="2.0", url="https://d.example/2.0/x/#intro"),
        ]
        self.write(store, chunks, [unit(0), unit(1), unit(2)])
        by_url = get_page(store, "https://d.example/x/#more", default_versions={"docs": ""})
        assert by_url.source_path == "docs/en/x.md" and by_url.doc_version == "" and by_url.versions == ["", "2.0"]
        assert by_url.text.startswith("one") and [s.section_path for s in by_url.sections] == ["Intro", "Intro > More"]
        assert get_page(store, "x.md", default_versions={"docs": "2.0"}).text == "new one"
        assert get_page(store, "en/x.md", doc_version="").doc_version == ""
        assert get_page(store, "https://d.example/2.0/x/").doc_version == "2.0"
        with pytest.raises(PageNotFound, match="no indexed page 'docs/en/y.md'; nearest: docs/en/x.md"):
            get_page(store, "docs/en/y.md")
        with pytest.raises(PageNotFound, match="has no version '3.0'"):
            get_page(store, "x.md", doc_version="3.0")

    def test_versions_filter_keeps_each_named_corpus_in_its_one_version(self, store):
        """Issue 38: ``Filters.versions`` keeps a named corpus's chunks of its version only (''
        = unversioned), leaves corpora it does not name whole, applies inside both legs (k=1
        still finds the wanted version's chunk) and combines with ``corpora``."""
        chunks = [
            make_chunk(0, "schedule the cron task", corpus="lv", doc_version="11.x"),
            make_chunk(1, "schedule the cron task", corpus="lv", doc_version="12.x"),
            make_chunk(2, "schedule the cron task", corpus="mixed"),
            make_chunk(3, "schedule the cron task", corpus="mixed", doc_version="2.0"),
            make_chunk(4, "schedule the cron task", corpus="plain"),
        ]
        self.write(store, chunks, [unit(0, 1), unit(0), unit(0, 2), unit(0), unit(0, 3)])
        both = Filters(versions={"lv": "12.x", "mixed": ""})
        want = {"lv-a.md-1", "mixed-a.md-2", "plain-a.md-4"}
        assert {i for i, _ in store.bm25("cron task", 10, both, FIELDS)} == want
        assert {i for i, _ in store.knn(unit(0), 10, both, 20)} == want
        assert {i for i, _ in store.knn(unit(0), 10, Filters(versions={"mixed": "2.0"}), 20)} == {
            "lv-a.md-0",
            "lv-a.md-1",
            "mixed-a.md-3",
            "plain-a.md-4",
        }
        # inside the search: the top 1 of lv is its 11.x chunk (unit(0, 1) is nearer to unit(0, 1))
        assert [i for i, _ in store.knn(unit(0, 1), 1, Filters(corpora=["lv"], versions={"lv": "12.x"}), 20)] == ["lv-a.md-1"]
        assert {i for i, _ in store.bm25("cron", 10, Filters(corpora=["lv", "plain"], versions={"lv": "11.x"}), FIELDS)} == {
            "lv-a.md-0",
            "plain-a.md-4",
        }
        assert len(store.bm25("cron", 10, Filters(), FIELDS)) == 5  # no filter: every version

    # -- issue 7: date / superseded filters, vectors, fan-out branches ------------------------
    def _dated(self, store):
        chunks = [
            make_chunk(0, "deploy checklist current", metadata={"effective_date": "2024-01-01"}),
            make_chunk(1, "deploy checklist future", metadata={"effective_date": "2099-01-01"}),
            make_chunk(2, "deploy checklist undated"),
            make_chunk(3, "deploy checklist replaced", metadata={"effective_date": "2023-01-01", "superseded_by": "x"}),
            make_chunk(4, "deploy checklist same day", metadata={"effective_date": "2026-11-29T18:30:00"}),
        ]
        self.write(store, chunks, [unit(0), unit(0, 1), unit(0, 2), unit(0, 3), unit(0, 4)])

    def test_date_and_superseded_filters_apply_inside_both_legs(self, store):
        self._dated(store)
        both = Filters(effective_on="2026-11-29", exclude_superseded=True)
        want = {"docs-a.md-0", "docs-a.md-2", "docs-a.md-4"}
        assert {i for i, _ in store.bm25("deploy checklist", 10, both, FIELDS)} == want
        assert {i for i, _ in store.knn(unit(0), 10, both, 20)} == want
        assert {i for i, _ in store.knn(unit(0), 10, Filters(effective_on="2026-11-28"), 20)} == {
            "docs-a.md-0",
            "docs-a.md-2",
            "docs-a.md-3",
        }
        assert {i for i, _ in store.bm25("deploy", 10, Filters(exclude_superseded=True), FIELDS)} == {
            f"docs-a.md-{i}" for i in (0, 1, 2, 4)
        }
        # a filter applied after taking the top 1 would return nothing
        assert [i for i, _ in store.knn(unit(0, 3), 1, Filters(exclude_superseded=True, effective_on="2024-06-01"), 20)] != ["docs-a.md-3"]

    def test_translations_are_searched_only_when_a_language_is_asked(self, store):
        """A site's translated pages (``translation`` set at ingest) stay out of a search without
        a language filter, in both legs and inside the search (k=1 still finds the default
        locale's page); ``languages`` or ``translations=True`` bring them back; the field
        round-trips and a metadata-only update can clear it."""
        chunks = [
            make_chunk(0, "configure the formatter", path="guides/format.md", metadata={"language": "en"}),
            make_chunk(1, "configure the formatter", path="ja/guides/format.md", metadata={"language": "ja", "translation": "ja"}),
            make_chunk(2, "configure the formatter", path="pt-br/guides/format.md", metadata={"language": "pt", "translation": "pt-BR"}),
            make_chunk(3, "configure the formatter", corpus="notes", path="n.md"),  # no site, no locale
        ]
        self.write(store, chunks, [unit(0, 1), unit(0), unit(0), unit(0, 2)])
        default = {"docs-guides/format.md-0", "notes-n.md-3"}
        no_translations = Filters(translations=False)  # what the service asks when no language is given
        assert {i for i, _ in store.bm25("formatter", 10, no_translations, FIELDS)} == default
        assert {i for i, _ in store.knn(unit(0), 10, no_translations, 20)} == default
        assert [i for i, _ in store.knn(unit(0), 1, Filters(corpora=["docs"], translations=False), 20)] == ["docs-guides/format.md-0"]
        ja = Filters(languages=["ja"], translations=False)
        assert {i for i, _ in store.bm25("formatter", 10, ja, FIELDS)} == {"docs-ja/guides/format.md-1"}
        assert len(store.knn(unit(0), 10, Filters(), 20)) == 4
        assert store.get(["docs-ja/guides/format.md-1"])[0].metadata["translation"] == "ja"
        assert "translation" not in store.get(["docs-guides/format.md-0"])[0].metadata
        moved = make_chunk(1, "configure the formatter", path="ja/guides/format.md", metadata={"language": "ja"})
        store.update_meta([moved], ["m2"])
        store.refresh()
        assert "docs-ja/guides/format.md-1" in {i for i, _ in store.bm25("formatter", 10, no_translations, FIELDS)}

    def test_vectors_by_id(self, store):
        self.write(store, [make_chunk(0, "a"), make_chunk(1, "b")], [unit(0), unit(1, 2)])
        got = store.vectors(["docs-a.md-1", "nope", "docs-a.md-0"])
        assert set(got) == {"docs-a.md-0", "docs-a.md-1"}
        assert np.allclose(got["docs-a.md-1"], unit(1, 2), atol=1e-6) and got["docs-a.md-1"].dtype == np.float32

    def test_fan_out_branches_equal_rrf_of_each_branch_legs(self, store):
        from esrag.search.fanout import run_branches
        from esrag.search.fusion import rrf
        from esrag.stores.base import BranchQuery

        chunks = [make_chunk(i, f"cache queue {'cache' * (i % 3)}", corpus="c1" if i % 2 else "c2", path=f"p{i}.md") for i in range(12)]
        self.write(store, chunks, [unit(i % DIMS, (i + 1) % DIMS) for i in range(12)])
        branches = [
            BranchQuery("cache", unit(0), 5, Filters(corpora=["c1"]), 20),
            BranchQuery("cache", unit(1), 4, Filters(corpora=["c2"]), 20),
            BranchQuery("", unit(2), 3, Filters(corpora=["c2"]), 20),
        ]
        got = run_branches(store, branches, FIELDS, rrf_k=60)
        assert len(got) == 3
        for b, fused in zip(branches, got):
            legs = {}
            if b.query:
                legs["bm25"] = store.bm25(b.query, b.window, b.filters, FIELDS)
            legs["dense"] = store.knn(b.vector, b.window, b.filters, 20)
            expected = rrf(legs, k=60, rank_window_size=b.window)
            assert [(f.id, round(f.score, 9)) for f in fused] == [(f.id, round(f.score, 9)) for f in expected]
            assert {store.get([f.id])[0].corpus for f in fused} == set(b.filters.corpora)
