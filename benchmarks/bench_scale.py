"""Elasticsearch at scale: bulk throughput, index size per chunk, hybrid search latency and kNN
recall@10, per vector index option, on N chunks of real text (default 250,000).

Data: every Markdown/rst file of the shared corpora (laravel-docs, pydantic-docs, async-book,
requests-docs) chunked by esrag's default chunker; the distinct chunks' passages (section path +
text, what ``esrag ingest`` embeds) are embedded ONCE with the default embedder
(all-MiniLM-L6-v2) and cached in ``~/.cache/esrag/bench-scale/`` (reused by later runs). The N
chunks are those chunks repeated: copy ``c`` of a chunk gets the id ``<corpus>-c<c>-<id>`` and the
source path ``copy<c>/<path>``; copy 0 keeps the chunk's own vector, every other copy gets that
vector plus Gaussian noise (seeded per copy, renormalized; cosine about 0.9 to the original), so
near-duplicates are near but distinct and exact top-10s have no ties.

Per topology (the single node ``--url``; the 3-node cluster ``--cluster`` when given):
  1. bulk throughput (chunks/s), each method in a child process of its own (its own peak RSS),
     same batch size (``--batch``), same ``index_options`` (``--bulk-option``), each into its own
     fresh index, in ``--rounds`` interleaved rounds (every method indexes its next N/rounds
     chunks in turn, the order rotated each round, so load drifts fall on all alike):
     esrag's store bulk path (``ElasticStore.write`` in slices of 5,000, what an ingest does),
     raw ``_bulk`` of the same documents (pre-built, serialized and sent with the client's
     ``bulk``: the limit), and langchain-elasticsearch's ``ElasticsearchStore.add_embeddings``
     of the same texts and vectors (through an ``Embeddings`` that returns the precomputed
     vectors; its index pre-created with the same ``index_options``);
  2. per index option (``--options``; esrag indices): index size on disk per chunk
     (``_stats/store`` after refresh and settled merges), kNN recall@10 against exact
     top-10s computed client-side with numpy over the same vectors (the test node has no
     ``script_score``), kNN p50/p95 (``num_candidates`` 100, esrag's default) and hybrid
     p50/p95 (k=10, through esrag's ``Searcher``, query vectors precomputed so the embedder's
     time is left out).
Targets: esrag bulk >= 80% of raw ``_bulk`` and >= the peer, same run, >= 250k chunks.
Writes ``benchmarks/results/scale.json``; deletes its ``bench-scale-*`` indices afterwards.
Run heavy parts under the shared lock::

    flock /tmp/esrag-bench.lock .venv/bin/python benchmarks/bench_scale.py --chunks 250000 \\
        [--cluster http://127.0.0.1:9400,http://127.0.0.1:9401,http://127.0.0.1:9402]
    .venv/bin/python benchmarks/bench_scale.py --prepare     # only embed the base chunks (cached)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _data import default_chunker, shared_data
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "esrag" / "bench-scale"
CORPORA = ("laravel-docs", "pydantic-docs", "async-book", "requests-docs")
EMBED_FIELDS = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}
SLICE = 5000
NOISE_COS = 0.9
console = Console(stderr=True)
SHARD_ARGS: list[str] = []  # --shards/--replicas handed to every child (set in main)


# -- data -------------------------------------------------------------------------------------
def base_chunks() -> list[Any]:
    """Every chunk of the shared corpora (default chunker), in a fixed order."""
    from esrag.model import Document

    chunker = default_chunker()
    out = []
    for corpus in CORPORA:
        root = shared_data() / "corpora" / corpus
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".md", ".rst") and p.is_file()):
            rel = path.relative_to(root).as_posix()
            try:
                chunks = chunker.chunk(Document(rel, path.read_text(encoding="utf-8"), corpus=corpus))
            except Exception as exc:  # one bad file never stops the benchmark
                console.print(f"[yellow]skipped {corpus}/{rel}: {exc}")
                continue
            for c in chunks:
                c.corpus = corpus
            out += chunks
    return out


def prepare() -> tuple[list[Any], np.ndarray, dict[str, Any]]:
    """The base chunks and their vectors [n, 384] float32 (embedded once, cached on disk)."""
    from esrag.indexed_text import embed_text

    chunks = base_chunks()
    texts = [embed_text(c, EMBED_FIELDS) for c in chunks]
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"vectors-{key}.npy"
    info: dict[str, Any] = {"base_chunks": len(chunks), "distinct_texts": len(set(texts)), "cache": str(path)}
    if path.exists():
        vectors = np.load(path)
        info["embed_seconds"] = json.loads(path.with_suffix(".json").read_text())["embed_seconds"]
        info["embedded_now"] = False
        return chunks, vectors, info
    from esrag.embedding import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    console.print(f"embedding {len(set(texts))} distinct passages once with {emb.spec} ({emb.backend}, bf16={emb.bf16}) ...")
    t0 = time.perf_counter()
    vectors = np.asarray(emb.embed_documents(texts), dtype=np.float32)
    info["embed_seconds"] = round(time.perf_counter() - t0, 1)
    info["embedded_now"] = True
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    path.with_suffix(".json").write_text(json.dumps({**info, "model": emb.spec, "loadavg": os.getloadavg()}))
    return chunks, vectors, info


def copy_vectors(vectors: np.ndarray, copy: int) -> np.ndarray:
    """The vectors of copy ``copy`` [n, dims]: the originals for copy 0, else the originals plus
    seeded Gaussian noise, renormalized (cosine ~ ``NOISE_COS`` to the original)."""
    if copy == 0:
        return vectors
    rng = np.random.default_rng(1000 + copy)
    dims = vectors.shape[1]
    sigma = np.sqrt((1 / NOISE_COS**2 - 1) / dims)
    noisy = vectors + rng.normal(0.0, sigma, size=vectors.shape).astype(np.float32)
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def all_vectors(vectors: np.ndarray, n: int) -> np.ndarray:
    """The vectors of the first ``n`` scaled chunks [n, dims] (for the exact top-10s)."""
    base = len(vectors)
    parts = [copy_vectors(vectors, c)[: min(base, n - c * base)] for c in range((n + base - 1) // base)]
    return np.concatenate(parts)


def scaled(chunks: list[Any], vectors: np.ndarray, n: int, start: int, stop: int):
    """Chunks ``start..stop`` of the ``n`` scaled chunks with their vectors [stop-start, dims]."""
    import copy as copymod

    base = len(chunks)
    out, vecs = [], []
    for c in range(start // base, (stop - 1) // base + 1):
        lo, hi = max(start, c * base) - c * base, min(stop, (c + 1) * base) - c * base
        cv = copy_vectors(vectors, c)
        for j in range(lo, hi):
            ch = copymod.copy(chunks[j])
            ch.id = f"{ch.corpus}-c{c}-{ch.id}"
            ch.source_path = f"copy{c:04d}/{ch.source_path}"
            out.append(ch)
        vecs.append(cv[lo:hi])
    return out, np.concatenate(vecs)


# -- one bulk method in a child process --------------------------------------------------------
def child(args: argparse.Namespace) -> None:
    """Index ``args.chunks`` chunks by ``args.child`` (esrag | raw | peer) into ``args.index``;
    prints one JSON line: seconds, chunks/s, peak RSS (MB)."""
    chunks, vectors, _ = prepare()
    scaled(chunks, vectors, args.chunks, 0, min(args.chunks, SLICE))  # warm the slice path before the baseline RSS
    from esrag.stores.elastic import ElasticStore

    urls = args.url
    rss0 = _rss_mb()
    rss_max = rss0
    total, seconds, cpu = 0, 0.0, 0.0
    from esrag.stores.elastic.cluster import ClusterOptions

    store = ElasticStore(
        urls,
        args.index,
        batch_size=args.batch,
        index_options=args.option,
        request_timeout=120,
        rescore_oversample=getattr(args, "oversample", None),
        vector_copy=args.vector_copy,
        cluster=ClusterOptions(shards=args.shards, replicas=args.replicas),
    )
    if args.child in ("esrag", "raw"):
        from esrag.stores.base import IndexMeta

        store.ensure(IndexMeta.build("st:all-MiniLM-L6-v2", vectors.shape[1], _index_text()))
    if args.child == "peer":
        peer, emb = _peer_store(urls, args.index, vectors.shape[1], args.option, args.shards, args.replicas)
    from esrag.stores.elastic.documents import chunk_document

    concrete = store._state()["index"] if args.child == "raw" else None
    per_round = round_size(args.chunks, args.rounds)
    round_s = 0.0
    for start in range(0, args.chunks, SLICE):
        if args.rounds and start % per_round == 0:
            sys.stdin.readline()  # the coordinator's "go": one round at a time, the methods interleaved
        part, vecs = scaled(chunks, vectors, args.chunks, start, min(args.chunks, start + SLICE))
        s0 = seconds
        if args.child == "esrag":
            t0, p0 = time.perf_counter(), time.process_time()
            rep = store.write(part, vecs, ["m"] * len(part))
            seconds += time.perf_counter() - t0
            cpu += time.process_time() - p0
            assert not rep.failed, list(rep.failed.items())[:3]
        elif args.child == "raw":
            copy = store._state()["raw"].get("vectors", {}).get("vector_copy", "stored") == "stored"
            docs = [chunk_document(c, v, "m", "2026-12-01T00:00:00+00:00", copy) for c, v in zip(part, vecs)]
            t0, p0 = time.perf_counter(), time.process_time()
            for b in range(0, len(docs), args.batch):
                ops: list[dict[str, Any]] = []
                for c, d in zip(part[b : b + args.batch], docs[b : b + args.batch]):
                    ops += [{"index": {"_index": concrete, "_id": c.id}}, d]
                resp = store._es.bulk(operations=ops, filter_path="errors,items.*.error")
                assert not resp.body.get("errors"), str(resp.body)[:300]
            seconds += time.perf_counter() - t0
            cpu += time.process_time() - p0
        else:
            texts = [c.text for c in part]
            metas = [{"corpus": c.corpus, "source_path": c.source_path, "section_path": c.section_path} for c in part]
            emb.vectors = vecs
            t0, p0 = time.perf_counter(), time.process_time()
            peer.add_texts(texts, metas, ids=[c.id for c in part], refresh_indices=False, bulk_kwargs={"chunk_size": args.batch})
            seconds += time.perf_counter() - t0
            cpu += time.process_time() - p0
        total += len(part)
        rss_max = max(rss_max, _rss_mb())
        round_s += seconds - s0
        end_of_round = total % per_round == 0 or total == args.chunks
        print(
            json.dumps(
                {
                    "progress": total,
                    **({"round_seconds": round(round_s, 3), "round_chunks": (total - 1) % per_round + 1} if end_of_round else {}),
                }
            ),
            flush=True,
        )
        if end_of_round:
            round_s = 0.0
    store._es.indices.refresh(index=args.index)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "done": True,
                "chunks": total,
                "seconds": round(seconds, 2),
                "chunks_per_s": round(total / seconds, 1),
                "peak_rss_mb": round(rss, 1),
                "rss_before_ingest_mb": round(rss0, 1),
                "ingest_rss_growth_mb": round(rss_max - rss0, 1),
                "client_cpu_us_per_chunk": round(1e6 * cpu / max(total, 1), 1),
            }
        ),
        flush=True,
    )


def round_size(n: int, rounds: int) -> int:
    """Chunks per round of an interleaved bulk comparison: ``n / rounds`` rounded up to whole
    slices (``SLICE``); all of ``n`` when ``rounds`` is 0 (one uninterrupted run)."""
    if rounds <= 1:
        return max(n, 1)
    return max(SLICE, -(-n // rounds // SLICE) * SLICE)


def _rss_mb() -> float:
    """The process's resident set now (MB, ``/proc/self/status`` VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _index_text():
    from esrag.config import Settings

    return Settings(db=None, es_url=None).index_text


def _precomputed():
    """A LangChain ``Embeddings`` returning the precomputed vectors of the current slice."""
    from langchain_core.embeddings import Embeddings

    class Precomputed(Embeddings):
        vectors: np.ndarray

        def embed_documents(self, texts):
            assert len(texts) == len(self.vectors)
            return self.vectors.tolist()

        def embed_query(self, text):
            raise NotImplementedError

    return Precomputed()


def _peer_store(url: str, index: str, dims: int, option: str, shards: int = 1, replicas: int | None = None):
    from elasticsearch import Elasticsearch
    from langchain_elasticsearch import ElasticsearchStore

    from esrag.stores.elastic.vector_options import HNSW_EF_CONSTRUCTION, HNSW_M

    es = Elasticsearch(url.split(","), request_timeout=120)
    settings = {
        "number_of_shards": shards,
        **({"number_of_replicas": replicas} if replicas is not None else {"auto_expand_replicas": "0-1"}),
    }
    es.indices.create(
        index=index,
        settings=settings,
        mappings={
            "properties": {
                "text": {"type": "text"},
                "metadata": {"type": "object"},
                "vector": {
                    "type": "dense_vector",
                    "dims": dims,
                    "index": True,
                    "similarity": "cosine",
                    "index_options": {"type": option, "m": HNSW_M, "ef_construction": HNSW_EF_CONSTRUCTION},
                },
            }
        },
    )
    emb = _precomputed()
    return ElasticsearchStore(index, embedding=emb, client=es, vector_query_field="vector", query_field="text"), emb


def run_child(
    kind: str, url: str, index: str, n: int, batch: int, option: str, progress: Progress, vector_copy: str = "auto"
) -> dict[str, Any]:
    cmd = child_cmd(kind, url, index, n, batch, option, vector_copy)
    task = progress.add_task(f"{kind} bulk -> {index}", total=n)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=HERE)
    load0 = os.getloadavg()[0]
    result: dict[str, Any] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        msg = json.loads(line)
        if "progress" in msg:
            progress.update(task, completed=msg["progress"])
        else:
            result = msg
    if proc.wait() != 0 or not result:
        raise SystemExit(f"the {kind} bulk child failed (exit {proc.returncode})")
    result["loadavg_start"], result["loadavg_end"] = round(load0, 2), round(os.getloadavg()[0], 2)
    return result


def child_cmd(kind: str, url: str, index: str, n: int, batch: int, option: str, vector_copy: str = "auto", rounds: int = 0) -> list[str]:
    """The command line of one bulk child (``--rounds R``: wait for a line on stdin before each round)."""
    return [
        sys.executable,
        str(Path(__file__)),
        "--child",
        kind,
        "--url",
        url,
        "--index",
        index,
        "--chunks",
        str(n),
        "--batch",
        str(batch),
        "--option",
        option,
        "--vector-copy",
        vector_copy,
        "--rounds",
        str(rounds),
        *SHARD_ARGS,
    ]


def run_interleaved(
    kinds: list[str], url: str, tag: str, n: int, batch: int, option: str, rounds: int, progress: Progress
) -> dict[str, dict[str, Any]]:
    """The bulk comparison as interleaved rounds: one child per method (``kinds``), each with its
    own index (``<tag>-<kind>``); round r lets every method index its next ``n / rounds`` chunks,
    one after the other, in an order rotated each round (r=0: raw, esrag, peer; r=1: esrag,
    peer, raw; ...). Drifts of the machine's load and the node's background merges of the
    growing indices then fall on every method alike (a run of one method after the other puts
    them all on whichever ran in the worst minutes). Per method: chunks/s over all its rounds
    (summed timed seconds), each round's chunks/s, and the child's final report."""
    procs: dict[str, subprocess.Popen[str]] = {}
    for kind in kinds:
        procs[kind] = subprocess.Popen(
            child_cmd(kind, url, f"{tag}-{kind}", n, batch, option, rounds=rounds),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=HERE,
        )
    tasks = {k: progress.add_task(f"{k} bulk -> {tag}-{k} ({rounds} rounds, interleaved)", total=n) for k in kinds}
    per_round: dict[str, list[float]] = {k: [] for k in kinds}
    loads: dict[str, list[float]] = {k: [] for k in kinds}
    done: dict[str, dict[str, Any]] = {}
    n_rounds = -(-n // round_size(n, rounds))
    for r in range(n_rounds):
        for kind in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
            proc = procs[kind]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
            loads[kind].append(os.getloadavg()[0])
            for line in proc.stdout:
                msg = json.loads(line)
                progress.update(tasks[kind], completed=msg.get("progress", n))
                if "round_seconds" in msg:
                    per_round[kind].append(round(msg["round_chunks"] / msg["round_seconds"], 1))
                if "done" in msg:
                    done[kind] = msg
                if "round_seconds" in msg and r < n_rounds - 1:
                    break  # the last round reads on to the child's final report
    for kind, proc in procs.items():
        if proc.wait() != 0 or kind not in done:
            raise SystemExit(f"the {kind} bulk child failed (exit {proc.returncode})")
        done[kind]["round_chunks_per_s"] = per_round[kind]
        done[kind]["loadavg_start"], done[kind]["loadavg_end"] = round(loads[kind][0], 2), round(os.getloadavg()[0], 2)
        done[kind]["loadavg_mean"] = round(sum(loads[kind]) / len(loads[kind]), 2)
    return done


# -- measurements -----------------------------------------------------------------------------
def settle(es, index: str, limit_s: float = 600.0) -> float:
    t0 = time.perf_counter()
    es.indices.refresh(index=index)
    while time.perf_counter() - t0 < limit_s:
        if es.indices.stats(index=index, metric="merge").body["_all"]["total"]["merges"]["current"] == 0:
            break
        time.sleep(1.0)
    return round(time.perf_counter() - t0, 1)


def size_per_chunk(es, index: str) -> dict[str, float]:
    stats = es.indices.stats(index=index, metric="store,docs").body["_all"]
    docs = stats["primaries"]["docs"]["count"]
    return {
        "docs": docs,
        "primary_bytes": stats["primaries"]["store"]["size_in_bytes"],
        "total_bytes": stats["total"]["store"]["size_in_bytes"],
        "bytes_per_chunk": round(stats["primaries"]["store"]["size_in_bytes"] / max(docs, 1), 1),
    }


def vector_disk_usage(es, index: str) -> dict[str, Any]:
    """Bytes per chunk of the ``vector`` field (``_disk_usage``: float vectors, quantized copy and
    HNSW graph together, the ``knn_vectors`` part) and of every stored field."""
    body = es.perform_request(
        "POST",
        f"/{index}/_disk_usage",
        params={"run_expensive_tasks": "true"},
        headers={"accept": "application/json", "content-type": "application/json"},
    ).body[index]
    docs = max(1, es.count(index=index).body["count"])
    fields = body["fields"]
    stored = sum(f.get("stored_fields_in_bytes", 0) for f in fields.values())
    return {
        "vector_bytes_per_chunk": round(fields.get("vector", {}).get("total_in_bytes", 0) / docs, 1),
        "stored_fields_bytes_per_chunk": round(stored / docs, 1),
        "recovery_source_bytes_per_chunk": round(fields.get("_recovery_source", {}).get("total_in_bytes", 0) / docs, 1),
    }


def query_set(chunks: list[Any], vectors: np.ndarray, n_queries: int) -> tuple[list[str], np.ndarray]:
    """Queries: section titles of random base chunks (text) and, as their vectors, the MiniLM
    query embeddings of those texts."""
    from esrag.embedding import SentenceTransformerEmbedder

    rng = np.random.default_rng(7)
    picks = rng.choice(len(chunks), size=n_queries, replace=False)
    texts = [(chunks[i].section_path.split(" > ")[-1] or chunks[i].text[:80]).strip() for i in picks]
    emb = SentenceTransformerEmbedder()
    qv = np.asarray([emb.embed_query(t) for t in texts], dtype=np.float32)
    return texts, qv


def exact_top10(all_vecs: np.ndarray, qv: np.ndarray) -> list[list[int]]:
    out = []
    for start in range(0, len(qv), 50):
        sims = qv[start : start + 50] @ all_vecs.T
        top = np.argpartition(-sims, 10, axis=1)[:, :10]
        for row, idx in zip(sims, top):
            out.append([int(i) for i in idx[np.argsort(-row[idx])]])
    return out


def measure_search(url: str, alias: str, texts: list[str], qv: np.ndarray, truth_ids: list[set[str]]) -> dict[str, Any]:
    from esrag.config import SearchSettings
    from esrag.search.searcher import Searcher
    from esrag.stores.base import Filters
    from esrag.stores.elastic import ElasticStore

    store = ElasticStore(url, alias, request_timeout=120)
    qmap = {t: v for t, v in zip(texts, qv)}

    class _Fixed:  # query vectors precomputed: the embedder's time is not the store's
        spec, dims = "st:all-MiniLM-L6-v2", qv.shape[1]

        def embed_query(self, text):
            return qmap[text]

        def embed_documents(self, ts, progress=None):
            return np.asarray([qmap[t] for t in ts])

    searcher = Searcher(store, lambda: _Fixed(), SearchSettings(), BM25)
    for t in texts[:30]:
        searcher.search(t, k=10)
    knn_ms, hyb_ms, recalls = [], [], []
    for _t, v, truth in zip(texts, qv, truth_ids):
        t0 = time.perf_counter()
        hits = store.knn(v, 10, Filters(), 100)
        knn_ms.append((time.perf_counter() - t0) * 1000)
        recalls.append(len({i for i, _ in hits} & truth) / 10)
    for t in texts:
        t0 = time.perf_counter()
        searcher.search(t, k=10)
        hyb_ms.append((time.perf_counter() - t0) * 1000)
    store.close()
    return {
        "recall_at_10": round(float(np.mean(recalls)), 4),
        "knn_p50_ms": round(float(np.percentile(knn_ms, 50)), 1),
        "knn_p95_ms": round(float(np.percentile(knn_ms, 95)), 1),
        "hybrid_p50_ms": round(float(np.percentile(hyb_ms, 50)), 1),
        "hybrid_p95_ms": round(float(np.percentile(hyb_ms, 95)), 1),
        "loadavg": round(os.getloadavg()[0], 2),
    }


def drop(url: str, pattern: str) -> None:
    from elasticsearch import Elasticsearch

    es = Elasticsearch(url.split(","), request_timeout=120)
    for name in es.indices.get(index=pattern, ignore_unavailable=True, allow_no_indices=True).body:
        es.indices.delete(index=name)
    for t in es.indices.get_index_template(name=pattern).body.get("index_templates", []) if _has_templates(es, pattern) else []:
        es.indices.delete_index_template(name=t["name"])
    comps = es.cluster.get_component_template(name=pattern).body.get("component_templates", []) if _has_comps(es, pattern) else []
    for c in comps:
        es.cluster.delete_component_template(name=c["name"])


def _has_templates(es, pattern: str) -> bool:
    from elasticsearch import NotFoundError

    try:
        es.indices.get_index_template(name=pattern)
        return True
    except NotFoundError:
        return False


def _has_comps(es, pattern: str) -> bool:
    from elasticsearch import NotFoundError

    try:
        es.cluster.get_component_template(name=pattern)
        return True
    except NotFoundError:
        return False


def topology(name: str, url: str, args: argparse.Namespace, chunks, vectors, queries, progress: Progress) -> dict[str, Any]:
    from elasticsearch import Elasticsearch

    es = Elasticsearch(url.split(","), request_timeout=300)
    n, tag = args.chunks, f"bench-scale-{name}"
    drop(url, f"{tag}-*")
    out: dict[str, Any] = {
        "url": url,
        "chunks": n,
        "batch": args.batch,
        "bulk_option": args.bulk_option,
        "nodes": es.cluster.health().body["number_of_nodes"],
        "shards": args.shards,
        "replicas": args.replicas,
    }
    bulk: dict[str, Any] = {}
    run_child("raw", url, f"{tag}-warmup", min(n, 20_000), args.batch, args.bulk_option, progress)  # a warm node for everyone
    drop(url, f"{tag}-warmup*")
    kinds = ["raw", "esrag", "peer"] if not args.skip_peer else ["raw", "esrag"]
    bulk = run_interleaved(kinds, url, tag, n, args.batch, args.bulk_option, args.rounds, progress)
    for kind in kinds:
        target = f"{tag}-{kind}" if kind == "peer" else f"{tag}-{kind}-000001"
        bulk[kind]["settle_s"] = settle(es, target)
        bulk[kind].update(size_per_chunk(es, target))
    for kind in kinds:
        if kind != "esrag":
            drop(url, f"{tag}-{kind}*")
    out["rounds"] = args.rounds
    out["raw_runs_chunks_per_s"] = bulk["raw"]["round_chunks_per_s"]
    out["bulk"] = bulk
    out["esrag_vs_raw_by_round"] = [round(e / r, 3) for e, r in zip(bulk["esrag"]["round_chunks_per_s"], bulk["raw"]["round_chunks_per_s"])]
    out["esrag_vs_raw"] = round(bulk["esrag"]["chunks_per_s"] / bulk["raw"]["chunks_per_s"], 3)
    if "peer" in bulk:
        out["esrag_vs_peer"] = round(bulk["esrag"]["chunks_per_s"] / bulk["peer"]["chunks_per_s"], 3)
    texts, qv, truth = queries
    per: dict[str, Any] = {}
    for opt in [o for o in args.options.split(",") if o]:  # --options "": the bulk comparison only
        kind, _, over = opt.partition("+")
        alias = f"{tag}-esrag" if (kind == args.bulk_option and not over) else f"{tag}-{kind}{'-r' + over if over else ''}"
        if alias != f"{tag}-esrag":
            r = run_child("esrag", url, alias, n, args.batch, opt, progress)
            settle(es, f"{alias}-000001")
        else:
            r = bulk["esrag"]
        row = {
            "ingest_chunks_per_s": r["chunks_per_s"],
            **size_per_chunk(es, f"{alias}-000001"),
            **vector_disk_usage(es, f"{alias}-000001"),
        }
        row["mapping"] = es.indices.get_mapping(index=f"{alias}-000001").body[f"{alias}-000001"]["mappings"]["properties"]["vector"][
            "index_options"
        ]
        row.update(measure_search(url, alias, texts, qv, truth))
        per[opt] = row
        console.print(f"  {name} {opt}: {row}")
        if alias != f"{tag}-esrag":
            drop(url, f"{alias}*")
    out["options"] = per
    drop(url, f"{tag}-*")
    return out


def storage(url: str, args: argparse.Namespace, progress: Progress) -> dict[str, Any]:
    """Index size per chunk with the ``vector_bin`` copy (``vector_copy=stored``, every index
    before this change) against synthetic vectors (9.2+ ``auto``): the same chunks, the same
    option, each force-merged to one segment so the sizes compare."""
    from elasticsearch import Elasticsearch

    es = Elasticsearch(url.split(","), request_timeout=600)
    out: dict[str, Any] = {"chunks": args.storage_chunks, "option": args.bulk_option}
    for copy in ("stored", "auto"):
        alias = f"bench-scale-storage-{copy}"
        drop(url, f"{alias}*")
        r = run_child("esrag", url, alias, args.storage_chunks, args.batch, args.bulk_option, progress, copy)
        es.indices.forcemerge(index=f"{alias}-000001", max_num_segments=1)
        settle(es, f"{alias}-000001")
        out["synthetic" if copy == "auto" else "vector_bin"] = {
            "chunks_per_s": r["chunks_per_s"],
            **size_per_chunk(es, f"{alias}-000001"),
            **vector_disk_usage(es, f"{alias}-000001"),
        }
        drop(url, f"{alias}*")
    out["saved_bytes_per_chunk"] = round(out["vector_bin"]["bytes_per_chunk"] - out["synthetic"]["bytes_per_chunk"], 1)
    console.print(
        f"storage per chunk at {args.storage_chunks:,} chunks ({args.bulk_option}, one segment): vector_bin "
        f"{out['vector_bin']['bytes_per_chunk']:,.0f} B, synthetic {out['synthetic']['bytes_per_chunk']:,.0f} B, "
        f"saved {out['saved_bytes_per_chunk']:,.0f} B"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=250_000)
    ap.add_argument("--cluster-chunks", type=int, default=None, help="chunks on the cluster (default: --chunks)")
    ap.add_argument("--url", default="http://127.0.0.1:9200")
    ap.add_argument("--cluster", default=None, help="comma-separated node URLs of the 3-node cluster")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--bulk-option", default="int8_hnsw", help="index_options of the three bulk runs")
    ap.add_argument("--options", default="hnsw,int8_hnsw,bbq_hnsw+0,bbq_hnsw+3", help='index options to measure search on ("" = bulk only)')
    ap.add_argument("--shards", type=int, default=1, help="primary shards of every index (esrag, raw, peer alike)")
    ap.add_argument("--replicas", type=int, default=None, help="replicas of every index (default: the template's auto_expand_replicas 0-1)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="the bulk comparison in this many interleaved rounds (each method's share of a round in turn)",
    )
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--skip-single", action="store_true")
    ap.add_argument("--merge", action="store_true", help="keep the other topologies' results already in scale.json")
    ap.add_argument("--prepare", action="store_true", help="only embed and cache the base chunks")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--index", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--option", default="int8_hnsw", help=argparse.SUPPRESS)
    ap.add_argument("--vector-copy", default="auto", help=argparse.SUPPRESS)
    ap.add_argument(
        "--storage-chunks",
        type=int,
        default=50_000,
        help="chunks of the vector_bin-vs-synthetic size comparison on the single node (0: skip)",
    )
    args = ap.parse_args()
    SHARD_ARGS[:] = ["--shards", str(args.shards), *(["--replicas", str(args.replicas)] if args.replicas is not None else [])]
    if args.child:
        kind, _, over = args.option.partition("+")
        args.option = kind
        if over:
            args.oversample = float(over)
        return child(args)
    from esrag.embedding import cpu_features

    chunks, vectors, info = prepare()
    console.print(f"base: {info}")
    if args.prepare:
        return
    results: dict[str, Any] = {
        "data": {**info, "noise_cosine": NOISE_COS, "corpora": CORPORA},
        "cpu": cpu_features() if callable(cpu_features) else str(cpu_features),
        "loadavg_start": os.getloadavg(),
    }
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console) as progress:
        topologies = [] if args.skip_single else [("single", args.url, args.chunks)]
        if args.cluster:
            topologies.append(("cluster", args.cluster, args.cluster_chunks or args.chunks))
        if args.storage_chunks and not args.skip_single:
            results["storage"] = storage(args.url, args, progress)
        for name, url, n in topologies:
            args.chunks = n
            texts, qv = query_set(chunks, vectors, args.queries)
            allv = all_vectors(vectors, n)
            ids = [c.id for c in scaled(chunks, vectors, n, 0, n)[0]]
            truth = [{ids[i] for i in row} for row in exact_top10(allv, qv)]
            del allv
            results[name] = topology(name, url, args, chunks, vectors, (texts, qv, truth), progress)
            print_table(name, results[name])
    results["loadavg_end"] = os.getloadavg()
    out = HERE / "results" / "scale.json"
    out.parent.mkdir(exist_ok=True)
    old = json.loads(out.read_text()) if out.exists() and args.merge else {}
    out.write_text(json.dumps({**old, **results}, indent=2, default=str) + "\n")
    console.print(f"wrote {out}")


def print_table(name: str, r: dict[str, Any]) -> None:
    t = Table(
        title=f"{name}: {r['chunks']:,} chunks, {r['nodes']} node(s), batch {r['batch']}, {r['bulk_option']} (CPU avx512_bf16, 2 cores)"
    )
    for col in ("bulk", "chunks/s", "peak RSS MB (ingest growth)", "bytes/chunk", "load"):
        t.add_column(col)
    for kind, b in r["bulk"].items():
        t.add_row(
            kind,
            f"{b['chunks_per_s']:,.0f}",
            f"{b['peak_rss_mb']:,.0f} (+{b['ingest_rss_growth_mb']:,.0f})",
            f"{b['bytes_per_chunk']:,.0f}",
            f"{b['loadavg_start']}->{b['loadavg_end']}",
        )
    console.print(t)
    console.print(
        f"esrag / raw _bulk = {r['esrag_vs_raw']:.2f} (target >= 0.80); esrag / peer = {r.get('esrag_vs_peer', float('nan')):.2f} (target >= 1)"
    )
    t2 = Table(title=f"{name}: per index option")
    for col in ("option", "recall@10", "kNN p50/p95 ms", "hybrid p50/p95 ms", "bytes/chunk", "vector B/chunk", "ingest/s", "load"):
        t2.add_column(col)
    for opt, o in r["options"].items():
        t2.add_row(
            opt,
            f"{o['recall_at_10']:.3f}",
            f"{o['knn_p50_ms']}/{o['knn_p95_ms']}",
            f"{o['hybrid_p50_ms']}/{o['hybrid_p95_ms']}",
            f"{o['bytes_per_chunk']:,.0f}",
            f"{o['vector_bytes_per_chunk']:,.0f}",
            f"{o['ingest_chunks_per_s']:,.0f}",
            str(o["loadavg"]),
        )
    console.print(t2)


if __name__ == "__main__":
    main()
