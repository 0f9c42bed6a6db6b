"""Embedding models from Maven Central (esrag.embedding.maven_models): the real jar downloaded over
HTTPS from Maven Central (once per run, into a session cache), converted, and run by
sentence-transformers and by esrag's embedder, checked against the jar's own ONNX graph run by
OpenVINO; the failure paths against a real HTTP mirror on a free port."""

from __future__ import annotations

import os
import stat
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


@pytest.fixture(scope="session")
def maven_cache(tmp_path_factory):
    """One model cache for the session: each jar is downloaded once per run."""
    return tmp_path_factory.mktemp("maven-cache")


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
def test_fetched_and_converted_model_matches_the_jar_graph(name, maven_cache, monkeypatch):
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(maven_cache))
    m = maven_models.find(name)
    old = os.umask(0o022)
    try:
        folder = maven_models.model_dir(m)
    finally:
        os.umask(old)
    jar_path = maven_cache / "maven" / f"{m.artifact}-{m.version}.jar"
    assert jar_path.is_file() and folder.parent == maven_cache and (folder / "model.safetensors").is_file()
    # a shared cache: modes follow the umask, not the private ones of temporary files
    assert stat.S_IMODE(jar_path.stat().st_mode) == 0o644 and stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert stat.S_IMODE((folder / "model.safetensors").stat().st_mode) == 0o644
    st = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, normalize_embeddings=True)
    ref = onnx_vectors(jar_path, m, TEXTS)
    cos = (st * ref).sum(1)
    assert cos.min() >= 0.9999, cos
    # a second call reuses the folder: no new download, no new conversion
    stamps = {p: p.stat().st_mtime_ns for p in [jar_path, *folder.rglob("*")]}
    assert maven_models.model_dir(m) == folder
    assert {p: p.stat().st_mtime_ns for p in [jar_path, *folder.rglob("*")]} == stamps


def test_esrag_embedder_runs_bge_with_its_query_prompt(maven_cache, monkeypatch):
    from esrag.embedding import SentenceTransformerEmbedder, prompts_for

    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(maven_cache))
    m = maven_models.find("bge-small-en-v1.5")
    emb = SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5", backend="openvino", precision="fp32")
    prompt = prompts_for("BAAI/bge-small-en-v1.5").query
    assert prompt.startswith("Represent this sentence")
    ref = onnx_vectors(maven_models.jar(m), m, [prompt + TEXTS[0], TEXTS[0]])
    q = np.asarray(emb.embed_query(TEXTS[0]))
    p = np.asarray(emb.embed_documents([TEXTS[0]])[0])
    assert float(q @ ref[0]) >= 0.999 and float(p @ ref[1]) >= 0.999  # the query with the prompt, the passage without
    assert float(q @ p) < 0.99


def test_a_cached_jar_that_is_not_the_pinned_file_is_not_trusted(tmp_path, maven_mirror):
    m = maven_models.find("e5-small-v2")
    cached = tmp_path / "cache" / "maven" / m.file_name
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"truncated")
    (cached.parent / (m.file_name + ".x1y2")).write_bytes(b"a download killed midway")
    with pytest.raises(ModelLoadError, match=r"answered HTTP 404"):  # it asked the mirror again
        maven_models.jar(m, root=tmp_path / "cache")
    assert [p.name for p in cached.parent.iterdir()] == [m.file_name]  # the leftover is gone


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


@pytest.mark.parametrize(
    "damage, missing",
    [
        (
            lambda g: [setattr(n, "name", n.name.replace("/query/", "/q/")) for n in g.node],
            r"encoder\.layer\.0\.attention\.self\.query\.weight",
        ),
        (
            lambda g: [setattr(t, "name", "x") for t in g.initializer if t.name == "encoder.layer.3.output.LayerNorm.bias"],
            r"encoder\.layer\.3\.output\.LayerNorm\.bias",
        ),
    ],
    ids=["linear layers renamed", "a LayerNorm bias missing"],
)
def test_a_graph_that_is_not_bert_is_refused(damage, missing, tmp_path, maven_cache, monkeypatch):
    """The real jar, damaged: the rule names the first parameter it cannot find."""
    import onnx

    monkeypatch.setenv("ESRAG_MODEL_CACHE", str(maven_cache))
    m = maven_models.find("e5-small-v2")
    with zipfile.ZipFile(maven_models.jar(m)) as z:
        model = onnx.load_from_string(z.read(m.onnx))
        tok = z.read(m.tokenizer)
    damage(model.graph)
    bad = tmp_path / "damaged.jar"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr(m.onnx, model.SerializeToString())
        z.writestr(m.tokenizer, tok)
    with pytest.raises(ModelLoadError, match=r"not a BERT encoder esrag can read \(no " + missing):
        maven_models.convert(bad, m, tmp_path / "out")


def test_a_graph_that_does_not_parse_is_one_clear_error(tmp_path):
    m = maven_models.find("e5-small-v2")
    bad = tmp_path / "garbage.jar"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr(m.onnx, b"\x08\x07garbage")
        z.writestr(m.tokenizer, b"{}")
    with pytest.raises(ModelLoadError, match=r"garbage\.jar: e5-small-v2\.onnx does not parse as an ONNX graph"):
        maven_models.convert(bad, m, tmp_path / "out")


def test_bert_parameters_are_what_transformers_names():
    from transformers import BertConfig, BertModel

    model = BertModel(
        BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128), add_pooling_layer=False
    )
    assert sorted(maven_models.bert_parameters(2)) == sorted(model.state_dict())
