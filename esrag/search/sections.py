"""Sections, not fragments: the hits a reader (or an agent) is handed after ranking.

Two rules, applied after reranking and expansion and before the token budget
(:meth:`esrag.search.pipeline.Pipeline.search`; on by default, ``search.merge_sections`` and
``search.min_hit_tokens``):

* **Small hits come with their neighbours.** A hit whose text has fewer than ``min_tokens``
  cl100k tokens (a header with one line under it, a one-line chunk) grows by the chunks next
  to it in its page — the following chunk first (a short header chunk's content follows it),
  then the preceding one, alternately — taking only chunks that lie in the hit's parent
  section (the hit's own section and its subsections, and its siblings under the same parent),
  until it holds ``min_tokens`` or no such chunk is left. A page that is that small stays as
  it is.
* **Adjacent hits of one section are one hit.** Hits of one page (same corpus, source path and
  version) whose chunks are next to each other (consecutive positions) and lie in one section
  (the same section path, or one lies under the other: a section's text and the subsection
  that follows it) become one hit at the better rank: its text is the members' texts in page
  order joined by a blank line, its line span runs from the first member's start to the last
  member's end, its section path is the members' common path, its ``expanded_from`` lists the
  retrieved hits it covers, best first, and ``chunk.metadata["chunks"]`` lists its members as
  :mod:`esrag.search.expand` does (``[id, start_line, end_line, characters]``). Sibling
  sections (two ``##`` sections of one page) stay separate hits.
* **One section reads in order.** Hits of one section that are not next to each other (a chunk
  between them was not retrieved) come together at the best one's rank, in page order; no
  chunk is in two hits (a small hit never grows into a chunk that is itself a hit).

Neither rule applies to record chunks (one record, one chunk). A hit that grew here is never
larger than ``max(max_tokens, its own tokens)``, and two hits merge only when the joined text
holds at most ``max_tokens`` (``search.expand_max_tokens``, 1,024 by default). The evaluation
(:meth:`Pipeline.ranked_pool`) scores chunks as ranked and does not apply these rules, so the
budgeted metrics keep measuring the retriever (seed 000 §4.7).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from esrag.model import Chunk, Hit
from esrag.search.expand import JOINER, SourceCache, common_path, is_record, joined_chunk, joined_tokens, parent_path, within

if TYPE_CHECKING:
    from esrag.stores.base import Store

#: Default of ``search.min_hit_tokens``: a hit with fewer cl100k tokens is not returned alone.
MIN_HIT_TOKENS = 40
#: How far (in chunk positions) a small hit looks for neighbours on each side.
_REACH = 4


def members_of(hit: Hit) -> list[Chunk]:
    """The chunks a hit stands for, by position: its own chunk, or the members an expansion or a
    merge recorded (``metadata["chunks"]``, rebuilt as light chunks: id, span, position, text)."""
    c = hit.chunk
    rows = c.metadata.get("chunks")
    if not rows:
        return [c]
    out: list[Chunk] = []
    at = 0
    for i, (cid, start, end, chars) in enumerate(rows):
        out.append(
            Chunk(
                id=cid,
                text=c.text[at : at + chars],
                corpus=c.corpus,
                source_path=c.source_path,
                section_path=c.section_path,
                start_line=start,
                end_line=end,
                position=c.position + i,
                n_chunks=c.n_chunks,
                doc_title=c.doc_title,
                doc_version=c.doc_version,
                url=c.url,
                anchor=c.anchor,
                alt_urls=list(c.alt_urls) if i == 0 else [],
            )
        )
        at += chars + len(JOINER)
    return out


def shape_hits(
    hits: list[Hit], store: Store, min_tokens: int = MIN_HIT_TOKENS, merge: bool = True, max_tokens: int | None = 1024
) -> list[Hit]:
    """``hits`` (best first) with small hits grown and adjacent hits of one section merged (see
    the module docstring). ``min_tokens`` 0 leaves small hits alone; ``merge`` False keeps
    adjacent hits apart. Reads neighbours from ``store`` (``Store.neighbours``) only for small
    hits.

    Returns:
        Hits, best first; never more than given.
    """
    if not hits:
        return hits
    if min_tokens > 0:
        cache = SourceCache(store)
        ranked = {m.id for h in hits for m in members_of(h)}
        hits = [_grow_small(h, cache, min_tokens, max_tokens, ranked) for h in hits]
        hits = _drop_held(hits)
    return _in_page_order(_drop_held(_merge_adjacent(hits, max_tokens))) if merge else hits


def _in_page_order(hits: list[Hit]) -> list[Hit]:
    """Hits of one section (same corpus, page, version and section path) together at the rank of
    the best of them, in page order: a section that came back in pieces reads in order, with no
    other section between its pieces (issue 38). Record hits stay where they are."""
    groups: dict[tuple[str, str, str, str], list[Hit]] = {}
    order: list[list[Hit]] = []
    for h in hits:
        if is_record(h.chunk):
            order.append([h])
            continue
        key = (*_key(h.chunk), h.chunk.section_path)
        if key in groups:
            groups[key].append(h)
        else:
            groups[key] = [h]
            order.append(groups[key])
    return [h for group in order for h in sorted(group, key=lambda h: _span(h)[0])]


def _grow_small(hit: Hit, cache: SourceCache, min_tokens: int, max_tokens: int | None, ranked: AbstractSet[str] = frozenset()) -> Hit:
    """``hit`` grown by neighbours of its parent section to ``min_tokens``; a neighbour that is
    itself among the ranked hits (``ranked``: their member chunk ids) is never taken, so no chunk
    ends up in two hits — that neighbour and this hit meet again, whole, when adjacent hits of
    one section merge."""
    c = hit.chunk
    if c.tokens >= min_tokens or is_record(c) or c.n_chunks == 1 or c.metadata.get("chunks"):
        return hit
    parent = parent_path(c.section_path)
    around = [x for x in cache.around(c, _REACH) if (within(x.section_path, parent) and x.id not in ranked) or x.id == c.id]
    by_pos = {x.position: x for x in around}
    by_pos[c.position] = c
    lo = hi = c.position
    cap = max(max_tokens or 0, c.tokens) if max_tokens is not None else None
    while joined_tokens([by_pos[p] for p in range(lo, hi + 1)]) < min_tokens:
        for p in (hi + 1, lo - 1):
            if p in by_pos and (cap is None or joined_tokens([by_pos[q] for q in range(min(lo, p), max(hi, p) + 1)]) <= cap):
                lo, hi = min(lo, p), max(hi, p)
                break
        else:
            break
    if lo == hi:
        return hit
    return _joined(hit, [by_pos[p] for p in range(lo, hi + 1)], [hit.chunk.id], "min-size")


def _drop_held(hits: list[Hit]) -> list[Hit]:
    """Later hits whose chunks an earlier (grown) hit already holds fold into it."""
    held: dict[str, Hit] = {}
    out: list[Hit] = []
    for h in hits:
        ids = [m.id for m in members_of(h)]
        owner = next((held[i] for i in ids if i in held), None)
        if owner is not None and all(i in held for i in ids):
            owner.expanded_from = [*(owner.expanded_from or [owner.chunk.id]), *(h.expanded_from or [h.chunk.id])]
            continue
        for i in ids:
            held.setdefault(i, h)
        out.append(h)
    return out


def _key(c: Chunk) -> tuple[str, str, str]:
    return c.corpus, c.source_path, c.doc_version


def _span(h: Hit) -> tuple[int, int]:
    m = members_of(h)
    return m[0].position, m[-1].position


def _one_section(a: Hit, b: Hit) -> bool:
    pa, pb = a.chunk.section_path, b.chunk.section_path
    return pa == pb or (bool(pa) and within(pb, pa)) or (bool(pb) and within(pa, pb))


def _merge_adjacent(hits: list[Hit], max_tokens: int | None) -> list[Hit]:
    """Repeatedly join the best-ranked pair of adjacent hits of one section until none is left;
    a pair whose joined text would pass ``max_tokens`` (cl100k) stays apart. Each hit's members
    (:func:`members_of`) are read once and carried along as hits merge."""
    items = list(hits)
    members = [members_of(h) for h in items]

    def page_of(h: Hit) -> tuple[str, str, str] | None:
        return None if is_record(h.chunk) else _key(h.chunk)  # a record is never merged

    pages = [page_of(h) for h in items]  # kept in step with items
    changed = True
    while changed:
        changed = False
        for i, a in enumerate(items):
            if pages[i] is None:
                continue
            alo, ahi = members[i][0].position, members[i][-1].position
            for j in range(i + 1, len(items)):
                if pages[j] != pages[i]:
                    continue
                blo, bhi = members[j][0].position, members[j][-1].position
                if ahi + 1 != blo and bhi + 1 != alo:
                    continue
                b = items[j]
                if not _one_section(a, b):
                    continue
                joined = sorted(members[i] + members[j], key=lambda m: m.position)
                if max_tokens is not None and joined_tokens(joined) > max_tokens:
                    continue
                covered = [*(a.expanded_from or [a.chunk.id]), *(b.expanded_from or [b.chunk.id])]
                merged = _joined(a, joined, covered, "merge")
                merged.chunk.section_path = common_path([a.chunk.section_path, b.chunk.section_path])
                items[i], members[i] = merged, joined
                pages[i] = page_of(merged)
                del items[j], members[j], pages[j]
                changed = True
                break
            if changed:
                break
    return items


def _joined(hit: Hit, members: Sequence[Chunk], covered: list[str], kind: str) -> Hit:
    """One hit standing for ``members`` (consecutive chunks of one page), at ``hit``'s rank and score."""
    seed = hit.chunk
    metadata = {k: v for k, v in seed.metadata.items() if k not in ("chunks", "truncated")}
    grown = kind if "expansion" not in seed.metadata else f"{seed.metadata['expansion']}+{kind}"
    chunk = joined_chunk(seed, members, common_path([m.section_path for m in members]) or seed.section_path, metadata, grown)
    return Hit(chunk, hit.score, dict(hit.legs), list(dict.fromkeys(covered)))
