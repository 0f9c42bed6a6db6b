"""Ingest speed on the embedded default store, per embedding backend and CPU class, against a
peer baseline measured in the same run.

Measures, on the Laravel docs (../shared/data/corpora/laravel-docs):
  1. chunking throughput (MB/s): markdown-it block parse alone, and the whole header-led chunker;
  2. the peer baseline: LangChain's MarkdownHeaderTextSplitter (+ a 1,500-character
     RecursiveCharacterTextSplitter cap) and sentence-transformers all-MiniLM-L6-v2 at its
     defaults (torch fp32, batch 32) embedding those chunks, model load included — the embedding
     half of a LangChain + langchain-elasticsearch ingest, without its store writes (so the
     baseline is, if anything, flattered);
  3. esrag's first ingest of the tree into a fresh SQLite store (model load included) per
     backend and precision (``--backends``: ``BACKEND[:PRECISION]``, e.g. ``openvino`` = its
     ``auto`` precision, ``openvino:int8``, ``openvino:fp32``, ``openvino:bf16``, ``torch``):
     ``torch`` (sentence-transformers; bf16 autocast where in force) and ``openvino`` (fp32, bf16
     or the NNCF int8 model, :mod:`esrag.embedding.quantize`);
  4. a re-ingest of the unchanged tree;
  5. per backend: peak RSS of its process, and the cosine of its vectors to torch fp32 vectors of
     the same chunk texts (mean and minimum over every ``--fidelity-step``-th Laravel chunk).

Two CPU classes, each with its own baseline run, in one run of this script:
  * ``bf16``: this machine as it is (what ``cpu_has_fast_bf16()`` detects);
  * ``no-bf16``: forced — ``ESRAG_CPU_BF16=0`` (esrag's probe says no, so ``auto`` precision is
    fp32: no torch autocast, OpenVINO inference precision f32) and
    ``ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI`` (oneDNN, in torch and in OpenVINO's CPU plugin, may
    not dispatch AVX512-BF16/AMX kernels) for the baseline and esrag alike. This is what a CPU
    with AVX-512 + VNNI and no bf16 (the issue's Xeon) runs; on a truly older CPU every kernel
    would be the same or slower for both sides.
Every arm runs in its own process (so peak RSS and model load are its own), one after another;
the load average (1 min) at its start and end is printed beside it, since the machine may be
shared: ratios within one run are what count. Prints a table; writes benchmarks/results/ingest.json
(with ``--model M``, another embedder for esrag's arms: ingest-<M's last path part>.json).

    .venv/bin/python benchmarks/bench_ingest.py [--docs DIR] [--classes bf16,no-bf16] [--skip-baseline]
        [--backends openvino,openvino:int8,openvino:fp32,torch]

The one-time OpenVINO export and int8 quantization are done (and timed) before the arms, so
every arm loads cached models, as every ingest after a user's first does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _data import default_chunker, default_ingester, shared_data
from rich.console import Console
from rich.table import Table

from esrag.embedding.base import DEFAULT_MODEL
from esrag.formats.markdown_blocks import _block_parser, normalize
from esrag.indexed_text import embed_text
from esrag.model import Document

HERE = Path(__file__).resolve().parent
DEFAULT_DOCS = shared_data() / "corpora" / "laravel-docs"
EMBED_FIELDS = ["section_path", "text"]
MODEL = DEFAULT_MODEL  # esrag's arms and the fidelity reference (--model); the peer baseline keeps MiniLM
CLASSES = {
    "bf16": {},
    "no-bf16": {"ESRAG_CPU_BF16": "0", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"},
}
BACKENDS = ("torch", "openvino", "openvino:int8", "openvino:fp32")
console = Console()


def load(docs: Path) -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(docs.glob("*.md"))]


def bench_chunking(files: list[tuple[str, str]]) -> dict:
    size_mb = sum(len(t.encode("utf-8")) for _, t in files) / 1e6
    md = _block_parser()
    t0 = time.perf_counter()
    for _ in range(3):
        for _, text in files:
            md.parse(normalize(text))
    parse_s = (time.perf_counter() - t0) / 3
    chunker = default_chunker()
    t0 = time.perf_counter()
    n = 0
    for _ in range(3):
        n = sum(len(chunker.chunk(Document(name, text))) for name, text in files)
    chunk_s = (time.perf_counter() - t0) / 3
    return {"mb": size_mb, "parse_mb_s": size_mb / parse_s, "chunk_mb_s": size_mb / chunk_s, "chunks": n, "chunk_seconds": chunk_s}


def fidelity_texts(files: list[tuple[str, str]], step: int) -> list[str]:
    """Every ``step``-th chunk's embedded text of the default chunker (what esrag embeds)."""
    chunker = default_chunker()
    texts = [embed_text(c, EMBED_FIELDS) for name, text in files for c in chunker.chunk(Document(name, text))]
    return texts[::step]


# ---- arms, each run in a child process (``--arm``) -------------------------------------------


def arm_baseline(docs: Path) -> dict:
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter
    from sentence_transformers import SentenceTransformer

    from esrag.embedding import resolve_model_path

    files = load(docs)
    t0 = time.perf_counter()
    header = MarkdownHeaderTextSplitter([("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")])
    cap = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=0)
    texts = [d.page_content for _, text in files for d in cap.split_documents(header.split_text(text))]
    split_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.encode(texts)  # the peer's defaults: fp32, batch_size 32
    embed_s = time.perf_counter() - t0
    return {
        "chunks": len(texts),
        "split_seconds": split_s,
        "load_seconds": load_s,
        "embed_seconds": embed_s,
        "seconds": split_s + load_s + embed_s,
        "peak_rss_mb": peak_rss_mb(),
    }


def arm_esrag(docs: Path, backend: str, precision: str, sample: list[str], vectors_out: Path) -> dict:
    from esrag.embedding import SentenceTransformerEmbedder, cpu_has_fast_bf16, cpu_has_vnni
    from esrag.stores.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "esrag.db")
        t0 = time.perf_counter()
        embedder = SentenceTransformerEmbedder(MODEL, backend=backend, precision=precision)
        load_s = time.perf_counter() - t0
        cache = Path(tmp) / "embedding_cache.db"  # fresh: the first ingest embeds every passage
        first = default_ingester(store, embedder, cache).run(docs, "laravel", ["*.md"], [])
        rss_mb = peak_rss_mb()
        again = default_ingester(store, embedder, cache).run(docs, "laravel", ["*.md"], [])
        store.close()
    np.save(vectors_out, embedder.embed_documents(sample))
    return {
        "backend": embedder.backend,
        "precision": embedder.precision,
        "bf16": embedder.bf16,
        "asked": f"{backend}:{precision}",
        "cpu_fast_bf16": cpu_has_fast_bf16(),
        "cpu_vnni": cpu_has_vnni(),
        "embed_batch_size": embedder.batch_size,
        "model_load_seconds": load_s,
        "seconds": first.seconds + load_s,
        "embed_seconds": first.embed_seconds,
        "chunks": first.chunks,
        "embeddings": first.embeddings_computed,
        "peak_rss_mb": rss_mb,
        "reingest_seconds": again.seconds,
        "reingest_embeddings": again.embeddings_computed,
    }


def arm_reference(sample: list[str], vectors_out: Path) -> dict:
    from esrag.embedding import SentenceTransformerEmbedder

    np.save(vectors_out, SentenceTransformerEmbedder(MODEL, backend="torch", precision="fp32").embed_documents(sample))
    return {}


def peak_rss_mb() -> float:
    """This process's peak resident set (``VmHWM`` of /proc/self/status; ``ru_maxrss`` would carry
    the parent's peak across fork + exec), MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_arm(args: list[str], env: dict[str, str]) -> dict:
    """Run ``bench_ingest.py --arm ...`` in a child with ``env`` added; its JSON + load averages."""
    load0 = os.getloadavg()[0]
    out = subprocess.run([sys.executable, __file__, *args], env={**os.environ, **env}, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"arm {args} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["load_avg"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    return result


def cosine(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    c = np.sum(a * b, axis=1)
    return float(c.mean()), float(c.min())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=DEFAULT_DOCS)
    ap.add_argument("--classes", default="bf16,no-bf16", help="CPU classes to measure (bf16, no-bf16)")
    ap.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help="BACKEND[:PRECISION] arms, comma-separated; CLASS/BACKEND[:PRECISION] runs in that class only",
    )
    ap.add_argument("--skip-baseline", action="store_true", help="skip the LangChain + sentence-transformers baseline")
    ap.add_argument("--fidelity-step", type=int, default=4, help="cosine over every N-th chunk (1 = all)")
    ap.add_argument("--model", default=None, help="esrag's embedding model (default: esrag's default); the baseline keeps all-MiniLM-L6-v2")
    ap.add_argument("--arm", help=argparse.SUPPRESS)
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--sample", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    global MODEL
    MODEL = args.model or MODEL
    if args.arm:  # a child: one measurement, JSON on the last line of stdout
        sample = json.loads(args.sample.read_text()) if args.sample else []
        result = (
            arm_baseline(args.docs)
            if args.arm == "baseline"
            else arm_reference(sample, args.vectors)
            if args.arm == "reference"
            else arm_esrag(args.docs, *(args.backend.split(":") + ["auto"])[:2], sample, args.vectors)
        )
        print(json.dumps(result))
        return
    from esrag.embedding import cpu_features, cpu_has_fast_bf16, quantize, resolve_model_path
    from esrag.embedding.openvino_backend import cache_dir_for, exported_model

    files = load(args.docs)
    chunking = bench_chunking(files)
    model_dir = Path(resolve_model_path(MODEL))
    fresh = not (cache_dir_for(model_dir) / "model.xml").is_file()
    t0 = time.perf_counter()
    exported_model(model_dir)  # one-time export; every arm then loads the cached IR
    export_s = time.perf_counter() - t0 if fresh else None
    quantize_s = None
    if any(b.endswith((":int8", "openvino")) for b in args.backends.split(",")) and quantize.available():
        fresh = not (quantize.int8_dir_for(model_dir) / "model.xml").is_file()
        t0 = time.perf_counter()
        quantize.quantized_model(model_dir)  # one-time NNCF quantization, cached like the export
        quantize_s = time.perf_counter() - t0 if fresh else None
    with tempfile.TemporaryDirectory() as tmp:
        sample_path = Path(tmp) / "sample.json"
        sample_path.write_text(json.dumps(fidelity_texts(files, args.fidelity_step)))
        common = ["--docs", str(args.docs), "--sample", str(sample_path), "--model", MODEL]
        ref = Path(tmp) / "ref.npy"
        run_arm(["--arm", "reference", *common, "--vectors", str(ref)], {})
        print("reference vectors done", file=sys.stderr, flush=True)
        reference = np.load(ref)
        results: dict[str, dict] = {}
        for cls in args.classes.split(","):
            env = CLASSES[cls]
            res: dict[str, dict] = {}
            for entry in args.backends.split(","):
                only, _, backend = entry.rpartition("/")  # "no-bf16/openvino:fp32": that class only
                if only and only != cls:
                    continue
                vec = Path(tmp) / f"{cls}-{backend.replace(':', '-')}.npy"
                r = run_arm(["--arm", "esrag", "--backend", backend, *common, "--vectors", str(vec)], env)
                r["cosine_mean"], r["cosine_min"] = cosine(np.load(vec), reference)
                res[backend] = r
                print(f"[{cls}] esrag {backend}: {json.dumps(r)}", file=sys.stderr, flush=True)
            if not args.skip_baseline:
                res["baseline"] = run_arm(["--arm", "baseline", *common], env)
                print(f"[{cls}] baseline: {json.dumps(res['baseline'])}", file=sys.stderr, flush=True)
            results[cls] = res
    report(args, files, chunking, export_s, quantize_s, results, cpu_features(), cpu_has_fast_bf16(), len(reference))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    name = "ingest.json" if MODEL == DEFAULT_MODEL else f"ingest-{MODEL.rsplit('/', 1)[-1]}.json"  # another model: its own file
    (out / name).write_text(
        json.dumps(
            {
                "cpu_features": cpu_features(),
                "cpu_fast_bf16": cpu_has_fast_bf16(),
                "classes": CLASSES,
                "backends": args.backends,
                "chunking": chunking,
                "model": MODEL,
                "export_seconds": export_s,
                "quantize_seconds": quantize_s,
                "fidelity_sample": len(reference),
                "results": results,
            },
            indent=2,
        )
    )


def report(args, files, chunking, export_s, quantize_s, results, features, bf16, n_sample) -> None:
    from esrag.embedding import cpu_has_vnni

    console.print(
        f"CPU features detected: {' '.join(features) or '(none read)'}; native bf16: {bf16}; "
        f"int8 dot products (VNNI): {cpu_has_vnni()}; load average at the end {os.getloadavg()}"
    )
    console.print(
        f"markdown-it block parse {chunking['parse_mb_s']:.2f} MB/s; header-led chunking {chunking['chunk_mb_s']:.2f} MB/s "
        f"({chunking['chunks']} chunks)"
        + (f"; one-time OpenVINO export {export_s:.1f} s" if export_s else "")
        + (f"; one-time int8 quantization {quantize_s:.1f} s" if quantize_s else "")
    )
    table = Table(
        title=f"first ingest of {args.docs.name} ({chunking['mb']:.2f} MB, {len(files)} files), embedded store; esrag embeds with {MODEL}"
    )
    for col in ("CPU class", "arm", "seconds", "chunks", "chunks/s", "speed-up", "peak RSS", "cos mean / min", "re-ingest", "load avg"):
        table.add_column(col, justify="left" if col in ("CPU class", "arm") else "right")
    for cls, res in results.items():
        base = res.get("baseline")
        if base:
            table.add_row(
                cls,
                "baseline (LangChain + ST fp32)",
                f"{base['seconds']:.1f}",
                str(base["chunks"]),
                f"{base['chunks'] / base['seconds']:.1f}",
                "1.00x",
                f"{base['peak_rss_mb']:.0f} MB",
                "",
                "",
                _load(base),
            )
        for name, r in res.items():
            if name == "baseline":
                continue
            precision = r.get("precision") or ("bf16" if r["bf16"] else "fp32")
            ratio = f"{base['seconds'] / r['seconds']:.2f}x" if base else "-"
            table.add_row(
                cls,
                f"esrag {r['backend']} {precision}" + (" (auto)" if r.get("asked", "").endswith(":auto") else ""),
                f"{r['seconds']:.1f}",
                str(r["chunks"]),
                f"{r['chunks'] / r['seconds']:.1f}",
                ratio,
                f"{r['peak_rss_mb']:.0f} MB",
                f"{r['cosine_mean']:.5f} / {r['cosine_min']:.5f}",
                f"{r['reingest_seconds']:.2f} s",
                _load(r),
            )
    console.print(table)
    console.print(
        f"cosine: to torch fp32 vectors of the same texts, {n_sample} Laravel chunks (every {args.fidelity_step}th); "
        "no-bf16 is forced here: " + " ".join(f"{k}={v}" for k, v in CLASSES["no-bf16"].items())
    )


def _load(r: dict) -> str:
    return f"{r['load_avg'][0]:.1f} -> {r['load_avg'][1]:.1f}"


if __name__ == "__main__":
    main()
