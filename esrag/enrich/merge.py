"""Key-based merging M (seed 000, App. N.3), its LLM-free controls RM and SM, and the
TopicGPT-style key consolidation call (M−TP, H7).

All functions take **one document's** chunks in document order (enriched: ``enrichment.key``
set by arm E or E−K) and return new chunks; the inputs are never modified. Sizes are
characters (``len(text)``), the cap ``tau_merge`` is 3,000, the orphan threshold 200.

* :func:`merge_by_keys` (M): group by exact key (groups in order of their first chunk, members in
  document order, whatever their distance or section), pack each group next-fit into bins of at
  most ``tau_merge`` characters (a chunk joins the current bin if bin size + its length + 2 ≤
  cap, else opens a new bin; earlier bins are not revisited; a chunk longer than the cap stays
  alone). A bin of two or more becomes one chunk: texts joined by a blank line, the first
  fragment's section path, title, summary and key, unions of keywords, questions, entities and
  related keys. Keyless chunks are never merged; those shorter than ``tau_orphan`` get
  ``[Section: …]``, ``[Previous: …]``, ``[Next: …]`` lines (section path, neighbours' summaries)
  in their indexed ``context`` field — never in ``text``, which stays the evidence. Output is
  sorted by start line (a merged chunk sits at its first fragment) and renumbered 1…m.
* :func:`random_merges` (RM): the same number of merges, each joining a random adjacent pair
  that fits the cap (seeded).
* :func:`similarity_merges` (SM): the same number of merges, each joining the adjacent pair
  whose mean member embeddings are most similar (cosine) among pairs that fit the cap.
* :func:`consolidate_keys`: one call per document mapping its keys to canonical keys from the
  same list; :func:`apply_key_mapping` then rewrites the keys (M−TP = M on the mapped keys).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np

from esrag.enrich.enrichment import NO_SECTION, call_json, normalize_key
from esrag.llm.cache import CachedLLM
from esrag.llm.clients import LLMOptions
from esrag.llm.prompts import CONSOLIDATE, Prompt, load_prompt
from esrag.model import Chunk, Enrichment, content_hash
from esrag.tokens import count_tokens

TAU_MERGE = 3000
TAU_ORPHAN = 200
SEPARATOR = "\n\n"


def _key(chunk: Chunk) -> str:
    return chunk.enrichment.key if chunk.enrichment else ""


def _union(lists: list[list[str]]) -> list[str]:
    seen: dict[str, None] = {}
    for items in lists:
        for item in items:
            seen.setdefault(item, None)
    return list(seen)


def combine(fragments: list[Chunk]) -> Chunk:
    """One chunk from ``fragments`` (document order): texts joined by a blank line; id, section
    path, title, summary, key and model of the first; unions of the list fields; lines from the
    first start to the last end; ``metadata["merged_from"]`` lists the fragment ids."""
    if len(fragments) == 1:
        return fragments[0]
    first = fragments[0]
    es = [f.enrichment or Enrichment() for f in fragments]
    e0 = es[0]
    enrichment = Enrichment(
        title=e0.title,
        summary=e0.summary,
        keywords=_union([e.keywords for e in es]),
        questions=_union([e.questions for e in es]),
        entities=_union([e.entities for e in es]),
        key=e0.key,
        related_keys=_union([e.related_keys for e in es]),
        model=e0.model,
        prompt_sha256=e0.prompt_sha256,
    )
    text = SEPARATOR.join(f.text for f in fragments)
    return replace(
        first,
        text=text,
        end_line=max(f.end_line for f in fragments),
        tokens=count_tokens(text),
        content_hash=content_hash(*(f.content_hash for f in fragments)),
        enrichment=enrichment,
        metadata={**first.metadata, "merged_from": [f.id for f in fragments]},
    )


def _renumbered(chunks: list[Chunk]) -> list[Chunk]:
    ordered = sorted(chunks, key=lambda c: (c.start_line, c.position))
    return [replace(c, position=i, n_chunks=len(ordered)) for i, c in enumerate(ordered, start=1)]


def key_bins(chunks: list[Chunk], tau_merge: int = TAU_MERGE) -> list[list[int]]:
    """Next-fit bins of chunk indices for the keyed chunks (Algorithm 2); keyless chunks are
    left out. Groups are visited in order of their first chunk."""
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        if k := _key(c):
            groups.setdefault(k, []).append(i)
    bins: list[list[int]] = []
    for members in groups.values():
        current: list[int] = []
        size = 0
        for i in members:
            length = len(chunks[i].text)
            if current and size + length + len(SEPARATOR) <= tau_merge:
                current.append(i)
                size += length + len(SEPARATOR)
            else:
                if current:
                    bins.append(current)
                current, size = [i], length
        bins.append(current)
    return bins


def orphan_context(chunks: list[Chunk], i: int) -> str:
    """The ``[Section: …]``/``[Previous: …]``/``[Next: …]`` lines of chunk ``i`` (lines whose
    neighbour is missing or has no summary are left out)."""
    lines = [f"[Section: {chunks[i].section_path or NO_SECTION}]"]
    for label, j in (("Previous", i - 1), ("Next", i + 1)):
        e = chunks[j].enrichment if 0 <= j < len(chunks) else None
        if e is not None and e.summary:
            lines.append(f"[{label}: {e.summary}]")
    return "\n".join(lines)


def merge_by_keys(chunks: list[Chunk], tau_merge: int = TAU_MERGE, tau_orphan: int = TAU_ORPHAN) -> list[Chunk]:
    """Arm M over one document (see the module docstring). Returns the new chunk list."""
    out: list[Chunk] = []
    for members in key_bins(chunks, tau_merge):
        out.append(combine([chunks[i] for i in members]))
    for i, c in enumerate(chunks):
        if _key(c):
            continue
        if len(c.text) < tau_orphan:
            ctx = orphan_context(chunks, i)
            context = f"{ctx}\n{c.context}" if c.context else ctx
            c = replace(c, context=context, content_hash=content_hash(c.content_hash, ctx))
        out.append(c)
    return _renumbered(out)


def merge_count(before: list[Chunk], after: list[Chunk]) -> int:
    """How many pairwise merges turned ``before`` into ``after`` (chunks lost)."""
    return len(before) - len(after)


def _size(group: list[Chunk]) -> int:
    return sum(len(c.text) for c in group) + len(SEPARATOR) * (len(group) - 1)


def _fits(a: list[Chunk], b: list[Chunk], tau_merge: int) -> bool:
    return _size(a) + _size(b) + len(SEPARATOR) <= tau_merge


def random_merges(chunks: list[Chunk], n_merges: int, seed: int | str = 0, tau_merge: int = TAU_MERGE) -> list[Chunk]:
    """Arm RM over one document: ``n_merges`` merges of random adjacent pairs that fit the cap
    (fewer when no pair fits). ``seed`` (an int, or a string such as ``"0:docs/a.md"`` for a
    per-document stream) makes it reproducible."""
    groups = [[c] for c in chunks]
    rng = random.Random(seed)
    for _ in range(n_merges):
        eligible = [j for j in range(len(groups) - 1) if _fits(groups[j], groups[j + 1], tau_merge)]
        if not eligible:
            break
        j = rng.choice(eligible)
        groups[j : j + 2] = [groups[j] + groups[j + 1]]
    return _renumbered([combine(g) for g in groups])


def similarity_merges(chunks: list[Chunk], vectors: np.ndarray, n_merges: int, tau_merge: int = TAU_MERGE) -> list[Chunk]:
    """Arm SM over one document: ``n_merges`` greedy merges, each of the adjacent pair whose
    mean member embeddings have the highest cosine similarity among pairs that fit the cap.

    Args:
        vectors: array of shape [len(chunks), dims], one embedding per chunk (any scale).
    """
    vecs = np.asarray(vectors, dtype=np.float64)
    if len(vecs) != len(chunks):
        raise ValueError(f"{len(chunks)} chunks but {len(vecs)} vectors")
    groups = [[c] for c in chunks]
    sums = [v.copy() for v in vecs]
    for _ in range(n_merges):
        best, best_sim = -1, -np.inf
        for j in range(len(groups) - 1):
            if not _fits(groups[j], groups[j + 1], tau_merge):
                continue
            sim = _cosine(sums[j], sums[j + 1])
            if sim > best_sim:
                best, best_sim = j, sim
        if best < 0:
            break
        groups[best : best + 2] = [groups[best] + groups[best + 1]]
        sums[best : best + 2] = [sums[best] + sums[best + 1]]
    return _renumbered([combine(g) for g in groups])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two member-vector sums (= cosine of the means)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(a @ b) / (na * nb) if na > 0 and nb > 0 else 0.0


def consolidate_keys(keys: list[str], llm: CachedLLM, *, prompt: Prompt | None = None, options: LLMOptions | None = None) -> dict[str, str]:
    """One call mapping a document's keys to canonical keys from the same list (TopicGPT's
    merge pass, Pham et al. 2024). With fewer than two distinct keys no call is made.

    Returns:
        ``{key: canonical}`` for every distinct non-empty key (normalised). A mapping to a key
        not in the list, a missing entry, or an unusable reply (counted in the ledger after
        seeds 0–3) maps the key to itself.
    """
    distinct = list(dict.fromkeys(normalize_key(k) for k in keys if k and normalize_key(k)))
    identity = {k: k for k in distinct}
    if len(distinct) < 2:
        return identity
    prompt = prompt or load_prompt(CONSOLIDATE)
    options = options or LLMOptions(max_tokens=1000)
    obj = call_json(
        llm, prompt.render(keys="\n".join(distinct)), prompt.sha256, options, "consolidate", lambda o: isinstance(o.get("mapping"), dict)
    )
    if obj is None:
        return identity
    mapping: dict[str, Any] = obj["mapping"]
    for raw, target in mapping.items():
        k = normalize_key(str(raw))
        t = normalize_key(target) if isinstance(target, str) else ""
        if k in identity and t in identity:
            identity[k] = t
    return identity


def apply_key_mapping(chunks: list[Chunk], mapping: dict[str, str]) -> list[Chunk]:
    """Copies of ``chunks`` with ``key`` and ``related_keys`` mapped (unknown keys unchanged)."""
    out = []
    for c in chunks:
        e = c.enrichment
        if e is None:
            out.append(c)
            continue
        related = list(dict.fromkeys(mapping.get(k, k) for k in e.related_keys))
        out.append(replace(c, enrichment=replace(e, key=mapping.get(e.key, e.key), related_keys=related)))
    return out
