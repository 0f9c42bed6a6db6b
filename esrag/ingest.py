"""Incremental ingest: source tree -> chunks -> (embed) -> store.

Each chunk is classified against the store's manifest of its corpus:
  * new: its id is not in the store;
  * changed: its content hash differs (re-embedded and rewritten), or, with section-context
    vectors on (:mod:`esrag.section_context`), another chunk of its group is new or changed;
  * unchanged: same content hash (no embedding; a metadata-only update if its line span,
    position or labels moved);
and chunks the tree no longer produces are deleted — those of edited files, of files that
vanished, and of files the include/exclude patterns no longer select. The deletion guard
(:class:`DeletionGuard`) counts those deletions before anything is written: an ingest that would
delete more than ``max_delete_fraction`` of the corpus's chunks (of its doc version), or lose
more than that fraction of its stored files (whatever few chunks they held), or any chunk when
the tree yields no file at all, writes and deletes nothing and reports a failure
naming the files, unless ``allow_delete`` (``esrag ingest --allow-delete``). Files that fail to read
keep their old chunks (nothing is lost), are listed in the summary, and make the exit non-zero.
Files indexed with a problem (an include left unresolved, a reStructuredText error) are listed
under ``warnings`` (file, ``"line N: …"``) and leave the exit code alone. A page is re-read with
its includes on every ingest and a chunk's content hash covers its resolved text, so an edit to
an included file re-embeds exactly the chunks of the pages that show it.

Crash safety: new and changed chunks are written before stale ones are deleted, each write is
idempotent by id, and classification is recomputed from the store on the next run, so an
interrupted ingest is finished by running it again, without duplicates.
Memory: chunks wait for embedding in windows of ``window`` chunks, so peak memory does not
grow with the size of the tree.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from esrag import section_context
from esrag.chunking.base import Chunker
from esrag.chunking.records import RecordsChunker
from esrag.embedding import CachedEmbedder, Embedder, ReportsRuntime
from esrag.errors import EmptySource, EsragError
from esrag.filereport import SUFFIX_NOT_READ, FileReport, survey
from esrag.formats.base import is_unresolved_include
from esrag.indexed_text import embed_text
from esrag.model import Chunk, Document, content_hash
from esrag.sites import Site
from esrag.sources import EMPTY, SkippedFile, SourceFile, discover, load_document
from esrag.stores.base import IndexMeta, Store, StoredEntry, check_compatible


@dataclass
class Failure:
    """A file (or chunk batch) that could not be indexed, and why."""

    path: str
    error: str


@dataclass
class DeletionGuard:
    """The deletion guard's verdict (``IngestSummary.deletion_guard``; a ``--json`` contract).

    Modelled on Algolia's crawler, which refuses to publish a run losing more than
    ``maxLostRecordsPercentage`` of an index's records, and rsync's ``--max-delete``.

    Attributes:
        max_fraction: ``[ingest] max_delete_fraction`` (0.0-1.0 of the stored chunks).
        allow_delete: ``--allow-delete`` was given: no check.
        checked: the deletions were counted before any write (False: nothing was stored,
            ``allow_delete``, or a ``max_fraction`` of 1.0 with files in the tree).
        chunks_stored: chunks of the corpus (this doc version) in the store before the ingest.
        would_delete: chunks the ingest would delete (a file that fails to read keeps its chunks).
        files: files that would lose chunks; ``examples``: the first few of them, most chunks
            first, as ``{"path", "chunks", "why"}`` (``why``: ``gone`` = no longer in the tree or
            not selected; ``emptied`` = in the tree but producing no chunk now: blank, a draft,
            unlisted; ``edited`` = the file no longer produces them).
        files_stored: files of the corpus (this doc version) with chunks in the store.
        files_gone: of those, the files that would lose every chunk (``gone`` or ``emptied``); more than
            ``max_fraction`` of ``files_stored`` is refused too, however few chunks they held
            (a tree that lost two of its three files, the small ones).
        refused: the ingest stopped before any write (and failed).
    """

    max_fraction: float = 0.5
    allow_delete: bool = False
    checked: bool = False
    chunks_stored: int = 0
    would_delete: int = 0
    files: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    refused: bool = False
    files_stored: int = 0
    files_gone: int = 0

    @property
    def fraction(self) -> float:
        """``would_delete / chunks_stored`` (0.0 when nothing is stored)."""
        return self.would_delete / self.chunks_stored if self.chunks_stored else 0.0

    @property
    def file_fraction(self) -> float:
        """``files_gone / files_stored`` (0.0 when nothing is stored)."""
        return self.files_gone / self.files_stored if self.files_stored else 0.0

    def over_limit(self) -> bool:
        """More than :attr:`max_fraction` of the stored chunks or of the stored files would go."""
        return self.fraction > self.max_fraction or self.file_fraction > self.max_fraction

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": round(self.fraction, 4), "file_fraction": round(self.file_fraction, 4)}


#: how many files the deletion guard names in its message and in ``examples``
GUARD_EXAMPLES = 5
#: characters of source text whose documents and chunks the deletion guard keeps for the main
#: pass (about 3 bytes of memory each); files beyond are chunked again (ids only in the guard)
GUARD_KEEP_CHARS = 32_000_000


@dataclass
class IngestSummary:
    """What an ingest did. ``--json`` prints this (fields are a scripting contract)."""

    corpus: str = ""
    files: int = 0
    chunks_new: int = 0
    chunks_changed: int = 0
    chunks_unchanged: int = 0
    chunks_deleted: int = 0
    chunks_moved: int = 0
    embeddings_computed: int = 0
    # distinct passages whose vector came from the embedding cache (ingest.cache_embeddings)
    embeddings_cached: int = 0
    failures: list[Failure] = field(default_factory=list)
    # pages left out on purpose (front matter ``draft: true`` / ``unlisted: true``): "path (draft)"
    skipped: list[str] = field(default_factory=list)
    # every file left out on purpose, as {"path", "reason", "detail"} (SkippedFile): drafts and
    # unlisted pages, symbolic links outside the tree or to nothing
    skipped_files: list[SkippedFile] = field(default_factory=list)
    doc_version: str = ""
    # files indexed with a problem: an include left unresolved (missing, outside the tree, a
    # cycle: left out of the text; or a line that looks like an include of a form no enabled
    # extension handles: kept as text) or a reStructuredText error ("line N: …")
    warnings: list[Failure] = field(default_factory=list)
    # how many of ``warnings`` are include directives (or lines that look like one) not resolved
    includes_unresolved: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    # what embedded the passages, e.g. "openvino int8" (st: embedders; docs/performance.md); '' when nothing was embedded
    embedder_runtime: str = ""
    # LLM enrichment (``--enrich``): calls made, cache hits, chunks (or PF fields) left empty
    # after retries, the servers' token counts of the calls made, and their wall seconds.
    enrich: str = ""
    llm_calls: int = 0
    llm_cache_hits: int = 0
    llm_failures: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    llm_seconds: float = 0.0
    # what the deletion guard counted and decided (DeletionGuard)
    deletion_guard: DeletionGuard = field(default_factory=DeletionGuard)
    # the files whose chunks this ingest wrote, updated or deleted (new, edited, gone from the
    # tree; an edit of front matter or line spans only: ``chunks_moved``), relative paths,
    # sorted; [] when nothing changed
    files_changed: list[str] = field(default_factory=list)
    # where the tree is published (esrag.sites.Site.describe): generator, config, base_url,
    # versions, languages, suffixes, content_dirs…; None for records
    site: dict[str, Any] | None = None
    # every text file of the tree: indexed, or skipped by reason (esrag.filereport.FileReport.to_dict)
    file_report: dict[str, Any] = field(default_factory=dict)
    # one line when fewer than half of the text files under the docs root were indexed ('' = none)
    coverage_warning: str = ""
    # pages of a locale other than their site's default (stored with ``translation``: searched
    # only with a language filter), and one line when they are every indexed page ('' = none)
    translated_pages: int = 0
    language_warning: str = ""

    @property
    def chunks(self) -> int:
        return self.chunks_new + self.chunks_changed + self.chunks_unchanged

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        out = asdict(self)
        out["chunks"] = self.chunks
        out["chunks_per_second"] = round(self.chunks_per_second, 2)
        out["seconds"] = round(self.seconds, 3)
        out["embed_seconds"] = round(self.embed_seconds, 3)
        out["llm_seconds"] = round(self.llm_seconds, 3)
        out["deletion_guard"] = self.deletion_guard.to_dict()
        return out


def guard_message(guard: DeletionGuard, corpus: str, doc_version: str = "", files_found: int = 0) -> str:
    """The one-line failure of a refused ingest: how many chunks of which files would go, and
    how to allow it."""
    version = f" (doc version {doc_version!r})" if doc_version else ""
    files = f"; {guard.files_gone} of its {guard.files_stored} files ({guard.file_fraction:.0%}) would go" if guard.files_gone else ""
    why = (
        "the tree yields no file at all (a wrong path, a failed checkout or an include pattern that matches nothing?)"
        if not files_found
        else f"more than [ingest] max_delete_fraction = {guard.max_fraction:g} of its chunks or files"
    )
    named = ", ".join(f"{e['path']} ({e['chunks']}, {e['why']})" for e in guard.examples)
    more = f" and {guard.files - len(guard.examples)} more" if guard.files > len(guard.examples) else ""
    allow = "--allow-delete" if not files_found else "--allow-delete, or raise [ingest] max_delete_fraction"
    return (
        f"refused to delete {guard.would_delete} of the {guard.chunks_stored} chunks ({guard.fraction:.0%}) of corpus "
        f"{corpus!r}{version}{files}: {why}; nothing was written or deleted. Chunks that would go, by file "
        f"({guard.files} files): {named}{more}. To delete them, run the ingest again with {allow}"
    )


class Observer:
    """Progress callbacks; the CLI draws bars from them. All methods are optional no-ops."""

    def files_found(self, n: int) -> None: ...
    def file_done(self, rel: str, n_chunks: int) -> None: ...
    def embed_queued(self, n: int) -> None: ...
    def embedded(self, n: int) -> None: ...
    def failure(self, failure: Failure) -> None: ...
    def warning(self, warning: Failure) -> None: ...


def meta_hash(chunk: Chunk) -> str:
    """Fingerprint of what a chunk stores besides its indexed content (span, position, labels,
    and its published ``url``/``anchor``/``alt_urls`` — which enter only when set, so chunks
    without them keep the fingerprint they always had). A change here is a metadata-only
    update, never a re-embedding."""
    parts = [
        str(chunk.start_line),
        str(chunk.end_line),
        str(chunk.position),
        str(chunk.n_chunks),
        chunk.doc_title,
        json.dumps(chunk.metadata, sort_keys=True, default=str),
    ]
    if chunk.url or chunk.anchor:
        parts += ["url", chunk.url, chunk.anchor]
    if chunk.alt_urls:
        parts += ["alt_urls", *chunk.alt_urls]
    return content_hash(*parts)


@dataclass
class _Pending:
    chunks: list[Chunk] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)


class Ingester:
    """Runs one ingest of a tree into a store.

    Args:
        store: the target store (its index is created on first write).
        embedder_spec: the configured embedder (``st:all-MiniLM-L6-v2``), checked against the
            index before anything is read, so a mismatch fails fast.
        embedder_factory: builds the embedder; called only when a chunk needs embedding.
        chunker: cuts documents into chunks.
        embed_fields, bm25_fields: the indexed-text configuration recorded in the index.
        analyzer: BM25 text analysis of a new index (``english`` or ``standard``).
        site: where the tree is published (:class:`esrag.sites.Site`): front matter, anchors and
            URLs of Markdown pages; None = neither (record sources).
        doc_version: stored on every chunk and part of its id ('' = unversioned); the manifest
            this ingest compares with and prunes holds only chunks of this version.
        section_context, section_context_depth: weight α of the group mean and the section-path
            levels of a group for section-context vectors (:mod:`esrag.section_context`; α 0 =
            off). A group's vectors are computed and written together: an edit rewrites its
            whole group, and the group's unchanged texts come from the embedding cache when the
            embedder has one (:class:`esrag.embedding.CachedEmbedder`, as ``esrag ingest`` builds it).
        window: chunks embedded and written per batch.
        max_file_bytes: larger files are reported as failures.
        max_delete_fraction: the deletion guard's limit (0.0-1.0 of the corpus's stored chunks of
            this doc version; :class:`DeletionGuard`); ``allow_delete`` turns the guard off.
        id_chunker: a chunker giving the same chunk ids as ``chunker`` without its costly labels
            (language, entities), used to count deletions before any write; default ``chunker``.
        follow_external_symlinks: index files whose symbolic links point outside the tree
            (else they are skipped and listed in ``skipped_files``).
        observer: progress callbacks.
        enricher: optional :class:`esrag.enrich.Enricher`; each file's chunks are enriched
            (in document order, several files at once) before they are compared with the store,
            so a chunk whose generated fields changed is re-embedded. LLM failures never abort
            the ingest; they are counted in the summary.
    """

    def __init__(
        self,
        store: Store,
        embedder_spec: str,
        embedder_factory: Callable[[], Embedder],
        chunker: Chunker,
        embed_fields: list[str],
        bm25_fields: dict[str, float],
        window: int = 1024,
        max_file_bytes: int = 5_000_000,
        observer: Observer | None = None,
        enricher: Any | None = None,
        analyzer: str = "english",
        section_context: float = 0.0,
        section_context_depth: int = 2,
        site: Site | None = None,
        doc_version: str = "",
        max_delete_fraction: float = 0.5,
        allow_delete: bool = False,
        id_chunker: Chunker | None = None,
        follow_external_symlinks: bool = False,
    ) -> None:
        self.store = store
        self.embedder_spec = embedder_spec
        self._embedder_factory = embedder_factory
        self._embedder: Embedder | None = None
        self.chunker = chunker
        self.embed_fields = embed_fields
        self.bm25_fields = bm25_fields
        self.window = window
        self.max_file_bytes = max_file_bytes
        self.observer = observer or Observer()
        self.enricher = enricher
        self.analyzer = analyzer
        self.section_context = section_context
        self.section_context_depth = section_context_depth
        self.site = site
        self.doc_version = doc_version
        self.max_delete_fraction = max_delete_fraction
        self.allow_delete = allow_delete
        self.id_chunker = id_chunker or chunker
        self.follow_external_symlinks = follow_external_symlinks
        self._kept: dict[str, tuple[Document, list[Chunk], str]] = {}  # chunked by the guard, for _load
        self._kept_chars = 0
        self._report = FileReport()
        self._loaded: set[str] = set()
        self._translated: set[str] = set()  # pages of a locale other than the site's default

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
            self.store.ensure(self.index_meta())
        return self._embedder

    def index_meta(self) -> IndexMeta:
        """The meta this ingest writes (embedder spec and dims, indexed-text configuration)."""
        emb = self.embedder
        return IndexMeta.build(emb.spec, emb.dims, self)

    def _check_index(self) -> None:
        """Fail before any work if the index was built with another embedder or fields."""
        current = self.store.meta()
        if current is None:
            return
        wanted = IndexMeta.build(self.embedder_spec, current.dims, self)
        check_compatible(current, wanted, self.store.name)

    def run(self, root: Path, corpus: str, include: list[str], exclude: list[str]) -> IngestSummary:
        """Ingest every matching file under ``root`` (or the single file ``root``) as ``corpus``."""
        start = time.perf_counter()
        self._check_index()
        summary = IngestSummary(corpus=corpus, doc_version=self.doc_version)
        self._kept, self._kept_chars = {}, 0
        files = discover(root, include, exclude, self.follow_external_symlinks, summary.skipped_files)
        summary.files = len(files)
        self.observer.files_found(len(files))
        self._report = (
            survey(root.resolve(), include, exclude, [f.rel for f in files])
            if root.resolve().is_dir()
            else FileReport(text_files=len(files))
        )
        self._report.docs_roots = self._docs_roots(root.resolve())
        if self.site is not None:  # a page the generator publishes in a format esrag cannot read says so
            for rel in list(self._report.skipped.get(SUFFIX_NOT_READ, [])):
                reason = self.site.unread_reason(rel)
                if reason:
                    self._report.relabel(rel, reason)
        self._loaded = set()
        self._translated = set()
        # a site whose layout gives each file its version (Docusaurus) defines every version of the
        # corpus: compare with (and prune) all of them, also when versions come or go
        whole = self.site is not None and self.site.layout is not None and not self.doc_version
        manifest = self.store.manifest(corpus, None if whole else self.doc_version)
        summary.deletion_guard = guard = self._guard(root, files, manifest, corpus)
        if guard.refused:
            self._kept, self._kept_chars = {}, 0
            self._fail(summary, Failure(str(root), guard_message(guard, corpus, self.doc_version, len(files))))
            summary.seconds = time.perf_counter() - start
            return summary
        for k in summary.skipped_files:  # issue 25's file report: a skipped link under its own reason
            self._report.relabel(k.path, k.reason)
        pending = _Pending()
        seen_paths: set[str] = set()
        enricher = self.enricher
        before = enricher.llm.ledger.totals() if enricher else None
        step = 2 * enricher.concurrency if enricher else 1
        for start_at in range(0, len(files), step):
            loaded = [(src, self._load(src, corpus, summary)) for src in files[start_at : start_at + step]]
            if enricher:
                self._enrich(enricher, loaded, summary)
            for src, chunks in loaded:
                seen_paths.add(src.rel)
                if chunks is not None:
                    self._classify(src, chunks, manifest.get(src.rel, {}), pending, summary)
                if len(pending.chunks) >= self.window:
                    self._flush(pending, summary)
        if root.resolve().is_dir():
            for path, entries in manifest.items():
                if path not in seen_paths:
                    pending.stale.extend(entries)
                    summary.files_changed.append(path)
        self._flush(pending, summary)
        summary.files_changed.sort()
        self._kept, self._kept_chars = {}, 0
        self.store.refresh()
        if enricher:
            self._llm_summary(enricher, before, summary)
        self._finish_report(summary, include)
        summary.seconds = time.perf_counter() - start
        return summary

    def _guard(self, root: Path, files: list[SourceFile], manifest: dict[str, dict[str, StoredEntry]], corpus: str) -> DeletionGuard:
        """Count the chunks this ingest would delete, reading and chunking (ids only) the files
        that have stored chunks; nothing is written. See :class:`DeletionGuard`."""
        guard = DeletionGuard(
            max_fraction=self.max_delete_fraction,
            allow_delete=self.allow_delete,
            chunks_stored=sum(len(e) for e in manifest.values()),
            files_stored=sum(1 for e in manifest.values() if e),
        )
        if not guard.chunks_stored or self.allow_delete or (files and self.max_delete_fraction >= 1.0):
            return guard
        guard.checked = True
        lost: list[tuple[str, int, str]] = []
        present = {src.rel for src in files}
        if root.resolve().is_dir():
            lost += [(path, len(entries), "gone") for path, entries in manifest.items() if path not in present]
        for src in files:
            stored = manifest.get(src.rel)
            if not stored:
                continue  # a new file deletes nothing
            produced = self._chunk_ids(src, corpus)
            if produced is not None:
                n = sum(1 for cid in stored if cid not in produced)
                if n:
                    lost.append((src.rel, n, "edited" if produced else "emptied"))
        lost.sort(key=lambda x: (-x[1], x[0]))
        guard.would_delete, guard.files = sum(n for _, n, _ in lost), len(lost)
        guard.examples = [{"path": p, "chunks": n, "why": why} for p, n, why in lost[:GUARD_EXAMPLES]]
        guard.files_gone = sum(1 for _, _, why in lost if why in ("gone", "emptied"))
        guard.refused = guard.would_delete > 0 and (not files or guard.over_limit())
        return guard

    def _chunk_ids(self, src: SourceFile, corpus: str) -> set[str] | None:
        """The ids of the chunks ``src`` produces now, or None when it cannot be read or
        chunked (its stored chunks are then kept; the main pass reports it). While the texts
        kept stay under :data:`GUARD_KEEP_CHARS`, the file is chunked as the main pass would
        and kept for it (:meth:`_load`), so no file is chunked twice; beyond, only its ids are
        made (with ``id_chunker``) and the main pass chunks it again."""
        try:
            if self._kept_chars < GUARD_KEEP_CHARS:
                doc, chunks, hidden = self._kept[src.rel] = self._chunked(src, corpus)
                self._kept_chars += len(doc.text)
            else:
                doc, chunks, hidden = self._chunked(src, corpus, self.id_chunker)
            return {c.id for c in chunks}
        except Exception:  # noqa: BLE001 - _load reports it; a file that fails keeps its chunks
            return None

    def _docs_roots(self, root: Path) -> list[str]:
        """The folders of the generator's pages, relative to ``root`` ('' = all of it), when a
        generator's configuration was read; [] otherwise (no coverage warning)."""
        site = self.site
        if site is None or site.config is None or not root.is_dir():
            return []
        layout = site.layout
        dirs = list(layout.content_roots()) if layout is not None else [Path(site.pages_dir)]
        out = []
        for d in dirs:
            try:
                rel = d.resolve().relative_to(root).as_posix()
                out.append("" if rel == "." else rel)
            except ValueError:
                if root.is_relative_to(d.resolve()):
                    out.append("")
        return out

    def _finish_report(self, summary: IngestSummary, include: list[str]) -> None:
        report = self._report
        failed = {f.path for f in summary.failures}
        skipped = {rel for rels in report.skipped.values() for rel in rels}
        report.indexed = sum(1 for rel in self._loaded if rel not in failed and rel not in skipped)
        summary.file_report = report.to_dict()
        summary.coverage_warning = report.coverage_warning()
        summary.translated_pages = len(self._translated - failed)
        if report.indexed and summary.translated_pages >= report.indexed:
            summary.language_warning = (
                f"every indexed page ({report.indexed}) is a translation (a locale other than the site's default): a search "
                "without --lang leaves them out; search with --lang, or ingest the site's root"
            )
        if self.site is not None:
            summary.site = self.site.describe(include)

    def _enrich(self, enricher: Any, loaded: list[tuple[SourceFile, tuple[Document, list[Chunk]] | None]], summary: IngestSummary) -> None:
        """Enrich the loaded files at once; a file whose enrichment raised keeps its old chunks."""
        items = [(i, doc_chunks) for i, (_, doc_chunks) in enumerate(loaded) if doc_chunks is not None]
        errors = enricher.enrich_many([dc for _, dc in items])
        for (i, _), exc in zip(items, errors):
            if exc is not None:
                src = loaded[i][0]
                loaded[i] = (src, None)
                self._fail(summary, Failure(src.rel, f"enrichment failed: {type(exc).__name__}: {exc}"))

    def _llm_summary(self, enricher: Any, before: Any, summary: IngestSummary) -> None:
        t = enricher.llm.ledger.totals().minus(before)
        summary.enrich = enricher.mode
        summary.llm_calls, summary.llm_cache_hits, summary.llm_failures = t.llm_calls, t.llm_cache_hits, t.llm_failures
        summary.tokens_in, summary.tokens_out, summary.llm_seconds = t.tokens_in, t.tokens_out, t.llm_seconds
        if enricher.gave_up:
            self._fail(
                summary,
                Failure(
                    "llm",
                    f"stopped calling {enricher.llm.spec} ({enricher.gave_up}); the "
                    "affected chunks were indexed without generated fields and are enriched "
                    "by the next ingest",
                ),
            )

    def _load(self, src: SourceFile, corpus: str, summary: IngestSummary) -> tuple[Document, list[Chunk]] | None:
        """The file's document and chunks (those the deletion guard kept, else made now), or
        None (failure recorded; its old chunks are kept)."""
        try:
            kept = self._kept.pop(src.rel, None)
            doc, chunks, hidden = kept if kept is not None else self._chunked(src, corpus)
            self._loaded.add(src.rel)
            if doc.metadata.get("translation") and not hidden:
                self._translated.add(src.rel)
            if hidden:
                if hidden != EMPTY:  # ``skipped`` lists the pages left unpublished; a blank page is in skipped_files only
                    summary.skipped.append(f"{src.rel} ({hidden})")
                summary.skipped_files.append(SkippedFile(src.rel, hidden))
                self._report.skip(hidden, src.rel)
                return doc, []  # left out: its chunks from earlier ingests are removed
            for problem in doc.problems:
                summary.includes_unresolved += is_unresolved_include(problem)
                summary.warnings.append(Failure(src.rel, problem))
                self.observer.warning(Failure(src.rel, problem))
            return doc, chunks
        except EsragError as exc:
            self._fail(summary, Failure(src.rel, str(exc).removeprefix(f"{src.rel}: ")))
        except Exception as exc:  # a chunker plugin may fail in any way; one file never aborts the ingest
            self._fail(summary, Failure(src.rel, f"chunking failed: {type(exc).__name__}: {exc}"))
        return None

    def _chunked(self, src: SourceFile, corpus: str, chunker: Chunker | None = None) -> tuple[Document, list[Chunk], str]:
        """Read, prepare (front matter) and chunk ``src`` with ``chunker`` (default: the
        ingest's own, with its labels and the site's URLs): ``(doc, chunks, hidden)``, where
        ``hidden`` is why a page is left out (``draft``…; then no chunk), else ''.

        A blank file is a page that shows nothing: hidden as ``empty`` (skipped, and what it
        held before is removed), not a failure. A blank records file (``--records``) stays a
        failure, its records kept: data that went missing (a failed export), not a page.

        Raises:
            SourceError: unreadable file; whatever the chunker raises."""
        try:
            doc = load_document(src, corpus, self.max_file_bytes)
        except EmptySource:
            if self.chunker.name == RecordsChunker.name:
                raise
            return Document(path=src.rel, text="", corpus=corpus, doc_version=self.doc_version), [], EMPTY
        doc.doc_version = self.doc_version
        hidden = self.site.prepare(doc) if self.site is not None else ""
        if hidden:
            return doc, [], hidden
        if src.root is not None:  # includes may read anything under the site's include root
            root = self.site.include_root if self.site is not None and self.site.include_root is not None else src.root
            doc.source, doc.root = str(src.path), str(root)
        chunks = (chunker or self.chunker).chunk(doc)
        if self.site is not None and chunker is None:
            self.site.apply(doc, chunks)
        return doc, chunks, ""

    def _classify(
        self,
        src: SourceFile,
        doc_chunks: tuple[Document, list[Chunk]],
        stored: dict[str, StoredEntry],
        pending: _Pending,
        summary: IngestSummary,
    ) -> None:
        chunks = self._with_context_hashes(doc_chunks[1])
        entries = [stored.get(c.id) for c in chunks]
        embed = [e is None or e.content_hash != c.content_hash for c, e in zip(chunks, entries)]
        if self.section_context:  # a group's vectors are computed together (see _flush)
            for idx in section_context.groups(chunks, self.section_context_depth):
                if any(embed[i] for i in idx):
                    for i in idx:
                        embed[i] = True
        moved: list[Chunk] = []
        for chunk, entry, changed in zip(chunks, entries, embed):
            if entry is None:
                summary.chunks_new += 1
            elif changed:
                summary.chunks_changed += 1
            else:
                summary.chunks_unchanged += 1
                if entry.meta_hash != meta_hash(chunk):
                    moved.append(chunk)
            if changed:
                pending.chunks.append(chunk)
        if moved:
            self.store.update_meta(moved, [meta_hash(c) for c in moved])
            summary.chunks_moved += len(moved)
        produced = {c.id for c in chunks}
        stale = [cid for cid in stored if cid not in produced]
        pending.stale.extend(stale)
        if stale or moved or any(embed):
            summary.files_changed.append(src.rel)
        self.observer.file_done(src.rel, len(chunks))

    def _with_context_hashes(self, chunks: list[Chunk]) -> list[Chunk]:
        """The file's chunks with content hashes that cover their section-context group (so
        an edit re-embeds the group; unchanged when ``section_context`` is 0)."""
        if not self.section_context:
            return chunks
        hashes = section_context.context_hashes(chunks, self.section_context, self.section_context_depth)
        return [replace(c, content_hash=h) for c, h in zip(chunks, hashes)]

    def _flush(self, pending: _Pending, summary: IngestSummary) -> None:
        if pending.chunks:
            chunks = pending.chunks
            self.observer.embed_queued(len(chunks))
            t0 = time.perf_counter()
            texts = [embed_text(c, self.embed_fields) for c in chunks]
            embedder = self.embedder
            counted = embedder if isinstance(embedder, CachedEmbedder) else None  # a cache counts what it computed
            computed_before = counted.computed if counted is not None else 0
            vectors = embedder.embed_documents(texts, progress=self.observer.embedded)
            if self.section_context:  # pending holds whole groups (_classify)
                vectors = section_context.apply(chunks, vectors, self.section_context, self.section_context_depth)
            summary.embed_seconds += time.perf_counter() - t0
            summary.embedder_runtime = (embedder.runtime if isinstance(embedder, ReportsRuntime) else "") or summary.embedder_runtime
            unique = len(set(texts))
            computed = unique if counted is None else counted.computed - computed_before
            summary.embeddings_computed += computed
            summary.embeddings_cached += unique - computed
            self._write(chunks, vectors, summary)
            pending.chunks = []
        if pending.stale:
            summary.chunks_deleted += self.store.delete(pending.stale)
            pending.stale = []

    def _write(self, chunks: list[Chunk], vectors: np.ndarray, summary: IngestSummary) -> None:
        report = self.store.write(chunks, vectors, [meta_hash(c) for c in chunks])
        by_id = {c.id: c for c in chunks}
        for cid, error in report.failed.items():
            c = by_id.get(cid)
            where = f"{c.source_path}:{c.start_line}-{c.end_line}" if c else cid
            self._fail(summary, Failure(where, f"chunk {cid} not written: {error}"))

    def _fail(self, summary: IngestSummary, failure: Failure) -> None:
        summary.failures.append(failure)
        self.observer.failure(failure)
