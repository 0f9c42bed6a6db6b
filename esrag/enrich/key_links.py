"""Chunks linked by key or related keys (KX, seed 000 App. N.4) and the adjacency control (AX),
inserted after retrieved chunks by the evaluation's E+KX / E+AX arms, both cut by a token budget
(not :mod:`esrag.search.expand`, the context expansion of `esrag search --expand`).

* :func:`expand_related` (E+KX): after each retrieved chunk, insert the not-yet-included chunks
  of the same document that share its key or are linked to it through related keys (either
  direction), in document order.
* :func:`expand_adjacent` (E+AX): after each retrieved chunk, insert as many not-yet-included
  neighbours from its document (next, previous, next but one, …) as KX would have inserted
  after that chunk, so both arms add approximately the same number of chunks.

The budget counts ``Chunk.tokens`` (cl100k_base tokens of the source ``text``; generated fields
are not counted): chunks are taken in the expanded order until the budget is filled, the chunk
that crosses it included (the evaluation's budget packing truncates it). ``budget_tokens=None``
returns the whole expanded list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from esrag.model import Chunk

DocKey = tuple[str, str]


def doc_key(chunk: Chunk) -> DocKey:
    """``(corpus, source_path)``: which document a chunk belongs to."""
    return (chunk.corpus, chunk.source_path)


def group_by_document(chunks: Iterable[Chunk]) -> dict[DocKey, list[Chunk]]:
    """``{(corpus, source_path): chunks in position order}``."""
    docs: dict[DocKey, list[Chunk]] = {}
    for c in chunks:
        docs.setdefault(doc_key(c), []).append(c)
    for members in docs.values():
        members.sort(key=lambda c: c.position)
    return docs


def linked(a: Chunk, b: Chunk) -> bool:
    """True when ``b`` shares ``a``'s non-empty key, or one lists the other's key among its
    related keys."""
    ea, eb = a.enrichment, b.enrichment
    if ea is None or eb is None:
        return False
    return bool((ea.key and (eb.key == ea.key or ea.key in eb.related_keys)) or (eb.key and eb.key in ea.related_keys))


def _related(hit: Chunk, docs: Mapping[DocKey, list[Chunk]]) -> list[Chunk]:
    return [c for c in docs.get(doc_key(hit), []) if c.id != hit.id and linked(hit, c)]


def _adjacent(hit: Chunk, docs: Mapping[DocKey, list[Chunk]]) -> list[Chunk]:
    members = docs.get(doc_key(hit), [])
    at = next((i for i, c in enumerate(members) if c.id == hit.id), None)
    if at is None:
        return []
    order: list[Chunk] = []
    for step in range(1, len(members)):
        for j in (at + step, at - step):
            if 0 <= j < len(members):
                order.append(members[j])
    return order


class _Packer:
    def __init__(self, budget_tokens: int | None) -> None:
        self.budget, self.used = budget_tokens, 0
        self.out: list[Chunk] = []
        self.ids: set[str] = set()

    @property
    def full(self) -> bool:
        return self.budget is not None and self.used >= self.budget

    def add(self, chunk: Chunk) -> bool:
        """Add ``chunk`` unless included; True if it was added."""
        if chunk.id in self.ids or self.full:
            return False
        self.out.append(chunk)
        self.ids.add(chunk.id)
        self.used += chunk.tokens
        return True


def expand_related(ranked: list[Chunk], docs: Mapping[DocKey, list[Chunk]], budget_tokens: int | None = None) -> list[Chunk]:
    """E+KX: ``ranked`` (best first) with each hit followed by its linked chunks.

    Args:
        ranked: retrieved chunks, best first (with enrichment: key, related_keys).
        docs: every chunk of the retrieved documents, from :func:`group_by_document`.
        budget_tokens: stop once this many cl100k tokens of source text are taken.
    """
    return _expand(ranked, docs, budget_tokens, None)


def related_counts(ranked: list[Chunk], docs: Mapping[DocKey, list[Chunk]]) -> list[int]:
    """How many chunks KX inserts after each hit of ``ranked`` (no budget)."""
    counts: list[int] = []
    _expand(ranked, docs, None, counts)
    return counts


def _expand(ranked: list[Chunk], docs: Mapping[DocKey, list[Chunk]], budget_tokens: int | None, counts: list[int] | None) -> list[Chunk]:
    pack = _Packer(budget_tokens)
    for hit in ranked:
        if pack.full:
            break
        pack.add(hit)
        inserted = sum(pack.add(c) for c in _related(hit, docs))
        if counts is not None:
            counts.append(inserted)
    return pack.out


def expand_adjacent(
    ranked: list[Chunk], docs: Mapping[DocKey, list[Chunk]], budget_tokens: int | None = None, counts: list[int] | None = None
) -> list[Chunk]:
    """E+AX: ``ranked`` with each hit followed by up to ``counts[i]`` of its nearest
    not-yet-included neighbours (next first, then previous, then two away…).

    Args:
        counts: chunks to insert after each hit; default :func:`related_counts` (KX's numbers).
    """
    counts = related_counts(ranked, docs) if counts is None else counts
    pack = _Packer(budget_tokens)
    for hit, m in zip(ranked, counts + [0] * (len(ranked) - len(counts))):
        if pack.full:
            break
        pack.add(hit)
        added = 0
        for c in _adjacent(hit, docs):
            if added >= m or pack.full:
                break
            added += pack.add(c)
    return pack.out
