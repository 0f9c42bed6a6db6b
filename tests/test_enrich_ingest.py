"""``esrag ingest --enrich`` end to end on real Laravel files against the stand-in LLM server
(real ``ollama``/``openai`` clients, real HTTP), with the real default embedder and real stores:
generated fields land in their own store fields (never in ``text``), feed BM25 and the embedded
text by configuration, a second run makes zero LLM calls, an edit costs only the calls whose
prompts changed, and LLM failures never abort an ingest."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import pytest

from esrag.app import make_ingester, make_searcher
from esrag.chunking.header import HeaderChunker
from esrag.config import Settings
from esrag.embedding import SentenceTransformerEmbedder
from esrag.enrich.enrichment import ARM_INDEX_TEXT, Enricher
from esrag.ingest import Ingester
from esrag.llm.cache import CachedLLM, LLMCache
from esrag.llm.clients import OllamaLLM, OpenAILLM
from esrag.model import Document
from esrag.stores.base import Filters
from esrag.stores.sqlite import SQLiteStore
from esrag.tokens import count_tokens
from llm_standin import Reply, StandIn, laravel_dir

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

FILES = ["concurrency.md", "encryption.md", "redirects.md", "rate-limiting.md"]
ESRAG = str(Path(sys.executable).with_name("esrag"))


@pytest.fixture(scope="module")
def embedder():
    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture
def standin():
    with StandIn() as s:
        yield s


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    for name in FILES:
        shutil.copy(laravel_dir() / name, root / name)
    return root


def n_chunks(root: Path, cli: bool = False) -> int:
    """Chunks of ``root``: as ``HeaderChunker()`` cuts them, or (``cli``) as the CLI does with
    the default settings (tau from ``Settings``)."""
    chunker = HeaderChunker.from_settings(Settings().chunking) if cli else HeaderChunker()
    return sum(len(chunker.chunk(Document(p.name, p.read_text()))) for p in sorted(root.glob("*.md")))


def enricher(standin: StandIn, cache_path: Path, mode: str = "e", provider: str = "ollama", **kw) -> Enricher:
    llm = (
        OllamaLLM("qwen2.5:7b", standin.url, timeout=5, retries=0, **kw)
        if provider == "ollama"
        else OpenAILLM("standin-model", standin.url + "/v1", timeout=5, retries=0, **kw)
    )
    return Enricher(CachedLLM(llm, LLMCache(cache_path)), mode)


def ingester(store, emb, enr: Enricher | None) -> Ingester:
    embed, bm25 = ARM_INDEX_TEXT[enr.mode if enr else "e"]
    return Ingester(store, emb.spec, lambda: emb, HeaderChunker(), embed, bm25, enricher=enr)


# -- library level, embedded store --------------------------------------------------------------------------
def test_enriched_ingest_stores_seven_fields_separately_and_second_run_makes_no_call(tree, tmp_path, standin, embedder):
    store = SQLiteStore(tmp_path / "db" / "esrag.db")
    n = n_chunks(tree)
    first = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
    assert (first.chunks_new, first.llm_calls, first.llm_cache_hits, first.llm_failures) == (n, n, 0, 0)
    assert first.enrich == "e" and first.tokens_in == sum(count_tokens(r.prompt) for r in standin.requests)
    assert first.tokens_out > 0 and first.llm_seconds > 0 and first.embeddings_computed == n

    rows = store._db.execute(
        "SELECT text, title, summary, keywords, questions, entities, key, related_keys, "
        "enrich_model, prompt_sha256, source_path, position FROM chunks"
    ).fetchall()
    assert len(rows) == n
    originals = {
        (c.source_path, c.position): c.text
        for p in sorted(tree.glob("*.md"))
        for c in HeaderChunker().chunk(Document(p.name, p.read_text(), corpus="laravel"))
    }
    for text, title, summary, keywords, questions, _entities, key, _related, model, sha, path, pos in rows:
        assert text == originals[(path, pos)]  # generated text never goes into `text`
        assert title and summary and keywords and questions and key and model == "ollama:qwen2.5:7b" and len(sha) == 64
        assert title not in text and "Explains" not in text
    assert any(r[7] for r in rows)  # some related keys
    assert store.meta().embed_fields == ARM_INDEX_TEXT["e"][0]

    # BM25 reads the generated fields: a word that only the generated questions hold finds the chunk
    hits = store.bm25("How does work", 5, Filters(), {"questions": 1.0})
    assert hits and all(h[1] > 0 for h in hits)

    standin.reset()
    second = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
    assert (second.llm_calls, second.llm_cache_hits, second.embeddings_computed, second.chunks_unchanged) == (0, n, 0, n)
    assert standin.requests == []
    store.close()


def test_an_edit_costs_only_the_calls_whose_prompts_changed(tree, tmp_path, standin, embedder):
    store = SQLiteStore(tmp_path / "esrag.db")
    ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
    doc = tree / "encryption.md"
    text = doc.read_text()
    marker = "## Configuration"
    assert marker in text
    doc.write_text(text.replace(marker, marker + "\n\nAn added first sentence changes this chunk's summary.", 1))
    standin.reset()
    again = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
    assert {r.prompt.split("<<<\n")[1][:30] for r in standin.requests}  # calls were made …
    assert all("encryption" in r.prompt.lower() for r in standin.requests)  # … for the edited document only
    assert again.llm_calls == len(standin.requests) == 2  # the edited chunk and the next (its previous summary)
    # the next chunk's new call returned the same fields (this stand-in ignores the previous
    # summary), so its indexed content is unchanged: only the edited chunk is re-embedded
    assert again.chunks_changed == 1 and again.embeddings_computed == 1
    assert again.llm_cache_hits == n_chunks(tree) - 2
    store.close()


def test_llm_failures_never_abort_and_are_retried_next_time(tree, tmp_path, standin, embedder):
    store = SQLiteStore(tmp_path / "esrag.db")
    standin.route("<<<\n## Redirecting To Named Routes", {None: Reply(status=500)})  # the chunk's text: its <a name> line is not in it
    first = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
    assert first.llm_failures == 1 and not first.failures and first.chunks_new == n_chunks(tree)
    empty = store._db.execute("SELECT count(*) FROM chunks WHERE title = '' AND enrich_model IS NOT NULL").fetchone()[0]
    assert empty == 1
    standin.reset()
    second = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
    assert second.llm_failures == 0 and second.llm_calls >= 1 and second.chunks_changed >= 1
    assert store._db.execute("SELECT count(*) FROM chunks WHERE title = ''").fetchone()[0] == 0
    store.close()


def test_a_dead_server_stops_calling_and_reports_one_failure(tree, tmp_path, embedder):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OllamaLLM("qwen2.5:7b", f"http://127.0.0.1:{port}", timeout=2, retries=0)
    enr = Enricher(CachedLLM(llm, LLMCache(tmp_path / "llm.db"), max_consecutive_errors=3), "e")
    store = SQLiteStore(tmp_path / "esrag.db")
    summary = ingester(store, embedder, enr).run(tree, "laravel", ["*.md"], [])
    n = n_chunks(tree)
    assert summary.chunks_new == n and summary.llm_calls == 0 and summary.llm_failures == n
    assert [f.path for f in summary.failures] == ["llm"] and "3 errors in a row" in summary.failures[0].error
    called = sum(r.error is not None and not r.error.startswith("not called") for r in enr.llm.ledger.records)
    assert 3 <= called <= 3 + enr.concurrency - 1  # calls already in flight when the breaker opened
    store.close()


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_contextual_retrieval_ingest_fills_context_only(tree, tmp_path, standin, embedder, provider):
    store = SQLiteStore(tmp_path / "esrag.db")
    summary = ingester(store, embedder, enricher(standin, tmp_path / "llm.db", "cr", provider)).run(tree, "laravel", ["*.md"], [])
    n = n_chunks(tree)
    assert summary.llm_calls == n and summary.enrich == "cr"
    rows = store._db.execute("SELECT context, title, key, enrich_model FROM chunks").fetchall()
    assert all(
        ctx.startswith("This chunk is from ") and title == "" and key == "" and model.startswith(provider)
        for ctx, title, key, model in rows
    )
    assert store.meta().embed_fields == ["context", "text"]
    store.close()


def test_documents_are_enriched_concurrently(tree, tmp_path, standin, embedder):
    import time

    inner = standin.responder
    standin.responder = lambda req: (time.sleep(0.05), inner(req))[1]
    store = SQLiteStore(tmp_path / "esrag.db")
    ingester(store, embedder, enricher(standin, tmp_path / "llm.db", concurrency=4)).run(tree, "laravel", ["*.md"], [])
    assert 1 < standin.max_in_flight <= 4
    store.close()


# -- settings wiring (app.make_ingester) ------------------------------------------------------------------
def test_make_ingester_uses_the_arm_fields_unless_configured(tmp_path, standin):
    store = SQLiteStore(tmp_path / "esrag.db")
    s = Settings(enrich="e", llm="ollama:qwen2.5:7b", llm_url=standin.url, db=tmp_path / "esrag.db")
    ing = make_ingester(s, store, HeaderChunker())
    assert ing.enricher.mode == "e" and ing.embed_fields == ARM_INDEX_TEXT["e"][0] and ing.bm25_fields == ARM_INDEX_TEXT["e"][1]
    assert ing.enricher.llm.cache.path == tmp_path / "llm_cache.db"
    s2 = Settings(
        enrich="cr",
        llm_url=standin.url,
        db=tmp_path / "esrag.db",
        index_text={"embed_fields": ["section_path", "text"]},
        llm_cache=tmp_path / "c.db",
    )
    ing2 = make_ingester(s2, store, HeaderChunker())
    assert ing2.embed_fields == ["section_path", "text"] and ing2.bm25_fields == {"context": 1.0, "text": 1.0}
    assert make_ingester(Settings(db=tmp_path / "x.db"), store, HeaderChunker()).enricher is None
    store.close()


# -- the CLI, as a user runs it ----------------------------------------------------------------------------
def run(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    full_env.update(env or {})
    proc = subprocess.run([ESRAG, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise AssertionError(f"esrag {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_cli_ingest_enrich_e_twice_then_search(tree, standin):
    base = tree.parent
    args = ["ingest", "docs", "--enrich", "e", "--llm", "ollama:qwen2.5:7b", "--llm-url", standin.url, "--json"]
    first = json.loads(run(args, base).stdout)
    n = n_chunks(tree, cli=True)
    for key in (
        "files",
        "chunks_new",
        "chunks_changed",
        "chunks_unchanged",
        "chunks_deleted",
        "embeddings_computed",
        "failures",
        "seconds",
        "llm_calls",
        "llm_cache_hits",
        "llm_failures",
        "tokens_in",
        "tokens_out",
    ):
        assert key in first
    assert (first["llm_calls"], first["llm_cache_hits"], first["llm_failures"]) == (n, 0, 0) and first["tokens_in"] > 0
    assert (base / ".esrag" / "llm_cache.db").exists()
    second = json.loads(run(args, base).stdout)
    assert (second["llm_calls"], second["llm_cache_hits"], second["embeddings_computed"]) == (0, n, 0)
    table = run(["ingest", "docs", "--enrich", "e", "--llm-url", standin.url], base).stderr
    assert "llm calls" in table and "llm cache hits" in table
    db = sqlite3.connect(base / ".esrag" / "esrag.db")
    assert (
        db.execute(
            "SELECT count(*) FROM chunks WHERE title != '' AND keywords != '' AND questions != '' AND summary != '' AND key != ''"
        ).fetchone()[0]
        == n
    )
    hits = json.loads(run(["search", "encrypt a value", "--json", "-k", "3"], base).stdout)
    assert hits and hits[0]["source_path"] == "encryption.md"


def test_cli_openai_provider_from_environment_and_secret_not_printed(tree, standin):
    base = tree.parent
    env = {
        "ESRAG_LLM": "openai:standin-model",
        "ESRAG_LLM_URL": standin.url + "/v1",
        "ESRAG_LLM_API_KEY": "sk-VERY-SECRET",
        "ESRAG_ENRICH": "pf",
    }
    out = run(["ingest", "docs", "--json"], base, env)
    summary = json.loads(out.stdout)
    assert summary["enrich"] == "pf" and summary["llm_calls"] == 4 * n_chunks(tree, cli=True)
    assert "VERY-SECRET" not in out.stdout + out.stderr
    assert all(r.path == "/v1/chat/completions" for r in standin.requests)


# -- the Elasticsearch store ----------------------------------------------------------------------------------
def test_enriched_ingest_into_elasticsearch_keeps_fields_separate(es_url, tree, tmp_path, standin, embedder):
    from esrag.stores.elastic import ClusterWarning, ElasticStore

    alias = f"esrag-t-{uuid.uuid4().hex[:12]}"
    store = ElasticStore(es_url, alias)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClusterWarning)
            first = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
        n = n_chunks(tree)
        assert first.llm_calls == n and not first.failures
        docs = store._es.search(index=alias, size=100, query={"match_all": {}})["hits"]["hits"]
        assert len(docs) == n
        for d in docs:
            src = d["_source"]
            assert src["title"] and src["summary"] and src["key"] and src["enrich_model"] == "ollama:qwen2.5:7b"
            assert isinstance(src["keywords"], list) and isinstance(src["questions"], list)
            assert src["title"] not in src["text"]
        standin.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClusterWarning)
            second = ingester(store, embedder, enricher(standin, tmp_path / "llm.db")).run(tree, "laravel", ["*.md"], [])
        assert (second.llm_calls, second.llm_cache_hits, second.embeddings_computed) == (0, n, 0)
        searcher = make_searcher(Settings(), store)
        assert searcher.bm25_fields == ARM_INDEX_TEXT["e"][1]
        hits = searcher.search("How does encryption work?", k=3, mode="bm25").hits
        assert hits and hits[0].chunk.enrichment and hits[0].chunk.enrichment.questions
    finally:
        cleaner = ElasticStore(es_url, alias)
        cleaner.drop()
        cleaner.close()
        store.close()
