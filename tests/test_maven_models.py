"""Embedding models from Maven Central (esrag.embedding.maven_models): the real jar fetched by the
real `mvn`, converted, and run by sentence-transformers and by esrag's embedder, checked against
the jar's own ONNX graph run by OpenVINO."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from esrag.embedding import maven_models
from esrag.errors import ModelLoadError

pytestmark = pytest.mark.integration

TEXTS = [
    "How do I set a timeout on a request?",
    "BERT is pretrained with masked language modelling and next sentence prediction. " * 12,
    "Élan vital — naïve café",
]


def onnx_vectors(jar_path, m: maven_models.MavenModel, texts: list[str]) -> np.ndarray:
    """The jar's ONNX graph run as it is (OpenVINO reads ONNX), pooled by the model card's rule."""
    import openvino as ov
    from tokenizers import Tokenizer

    with zipfile.ZipFile(jar_path) as z:
        graph = z.read(m.onnx)
        tok = Tokenizer.from_str(z.read(m.tokenizer).decode())
    tok.enable_truncation(m.max_seq_length)
    model = ov.Core().compile_model(ov.Core().read_model(graph), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    out = []
    for t in texts:
        ids = np.array([tok.encode(t).ids])
        h = model({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})[0][0]
        v = h[0] if m.pooling == "cls" else h.mean(0)
        out.append(v / np.linalg.norm(v))
    return np.array(out)


def test_find_names_and_aliases():
    assert maven_models.find("BAAI/bge-small-en-v1.5").name == "bge-small-en-v1.5"
    assert maven_models.find("bge-small-en-v1.5").pooling == "cls"
    assert maven_models.find("intfloat/E5-small-v2").pooling == "mean"
    assert maven_models.find("all-MiniLM-L6-v2") is None
    assert maven_models.find("BAAI/bge-base-en-v1.5") is None


@pytest.mark.parametrize("name", ["BAAI/bge-small-en-v1.5", "intfloat/e5-small-v2"])
def test_fetched_and_converted_model_matches_the_jar_graph(name, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(tmp_path))
    m = maven_models.find(name)
    folder = maven_models.model_dir(m)
    assert (tmp_path / "maven" / f"{m.artifact}-{m.version}.jar").is_file()
    assert folder.parent == tmp_path and (folder / "model.safetensors").is_file()
    st = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, normalize_embeddings=True)
    ref = onnx_vectors(maven_models.jar(m), m, TEXTS)
    cos = (st * ref).sum(1)
    assert cos.min() >= 0.9999, cos
    # a second call reuses the folder (no new fetch, no new conversion)
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert maven_models.model_dir(m) == folder and (folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_esrag_embedder_runs_bge_with_its_query_prompt(tmp_path, monkeypatch):
    from esrag.embedding import SentenceTransformerEmbedder, prompts_for

    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(tmp_path))
    m = maven_models.find("bge-small-en-v1.5")
    emb = SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5", backend="openvino", precision="fp32")
    ref = onnx_vectors(maven_models.jar(m), m, [prompts_for("BAAI/bge-small-en-v1.5").query + TEXTS[0], TEXTS[1]])
    q = np.asarray(emb.embed_query(TEXTS[0]))
    p = np.asarray(emb.embed_documents([TEXTS[1]])[0])
    assert float(q @ ref[0]) >= 0.999 and float(p @ ref[1]) >= 0.999
    assert float(q @ p) < 0.9  # the prompt is on the query only


@pytest.fixture
def maven_mirror(tmp_path, monkeypatch):
    """A real HTTP server on a free port serving ``tmp_path/repo`` in the Maven layout, set as
    ESRAG_MAVEN_REPO; yields the repo folder."""
    import functools
    import http.server
    import threading

    repo = tmp_path / "repo"
    repo.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("ESRAG_MAVEN_REPO", f"http://127.0.0.1:{server.server_port}/")
    yield repo
    server.shutdown()


def test_a_mirror_without_the_jar_is_one_clear_error(tmp_path, maven_mirror):
    m = maven_models.find("e5-small-v2")
    with pytest.raises(
        ModelLoadError, match=r"e5-small-v2: http://127\.0\.0\.1:\d+/dev/langchain4j/.*\.jar answered HTTP 404.*ESRAG_MAVEN_REPO"
    ):
        maven_models.jar(m, root=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "maven").iterdir())  # nothing half-written is left


def test_a_jar_with_another_digest_is_refused_and_not_kept(tmp_path, maven_mirror):
    m = maven_models.find("bge-small-en-v1.5")
    served = maven_mirror / m.repo_path
    served.parent.mkdir(parents=True)
    served.write_bytes(b"not the jar")
    with pytest.raises(ModelLoadError, match=r"SHA-256 is [0-9a-f]{64}, not " + m.sha256):
        maven_models.jar(m, root=tmp_path / "cache")
    assert not list((tmp_path / "cache" / "maven").iterdir())


def test_an_unreachable_repository_is_one_clear_error(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ESRAG_MAVEN_REPO", f"http://127.0.0.1:{port}")
    with pytest.raises(ModelLoadError, match=r"cannot download http://127\.0\.0\.1:\d+/.*ConnectError.*st:all-MiniLM-L6-v2"):
        maven_models.jar(maven_models.find("e5-small-v2"), root=tmp_path)


def test_a_jar_without_the_graph_is_refused(tmp_path):
    m = maven_models.find("e5-small-v2")
    bad = tmp_path / "x.jar"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("README", "no model here")
    with pytest.raises(ModelLoadError, match=r"x\.jar: not the e5-small-v2 jar"):
        maven_models.convert(bad, m, tmp_path / "out")


def test_a_graph_that_is_not_bert_is_refused(tmp_path, monkeypatch):
    """The real jar with its linear layers renamed: the rule finds no query weights and says so."""
    import onnx

    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(tmp_path / "cache"))
    m = maven_models.find("e5-small-v2")
    source = maven_models.jar(m)
    with zipfile.ZipFile(source) as z:
        model = onnx.load_from_string(z.read(m.onnx))
        tok = z.read(m.tokenizer)
    for node in model.graph.node:
        node.name = node.name.replace("/query/", "/q/")
    bad = tmp_path / "renamed.jar"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr(m.onnx, model.SerializeToString())
        z.writestr(m.tokenizer, tok)
    with pytest.raises(ModelLoadError, match=r"not a BERT encoder esrag can read \(no encoder\.layer\.0\.attention\.self\.query\.weight"):
        maven_models.convert(bad, m, tmp_path / "out")
