"""Context expansion after ranking (and after reranking): neighbours, parent section, auto-merge.

Seed 001: regulations need the subsection that scopes a clause ("keep the numbered subsection as
the parent, and merge upward when several clauses of one subsection match"), tickets need no
expansion at all. Specs (``--expand``, ``search.expand``, ``[corpora.NAME] expand``):

``neighbours:W``  each hit grows to the chunks at positions ``p-W .. p+W`` of its source
                  (``1 <= W <= 50``).
``parent``        each hit grows to its **parent section**: the chunks of its source whose
                  section path equals, or lies under, the hit's section path with its last
                  title removed ("A > B > C" -> every chunk in "A > B"; a top-level path's
                  parent is the whole document). Only the contiguous run of such chunks around
                  the hit is used.
``auto-merge:M``  when ``M`` or more hits fall in one section (same source; a hit falls in
                  section S when its path is S or lies under S), they are replaced by that whole
                  section, placed at the best-ranked hit's rank. Candidate sections are the
                  hits' own sections (a long section cut into several chunks) and their
                  parents; the deepest (most specific) qualifying section merges
                  first, and merging repeats upward until nothing qualifies.
``none``          no expansion (a corpus setting that wins over the search's spec).

Token limits (cl100k tokens of source text, :mod:`esrag.tokens`): an expanded hit's text is its
member chunks' texts in document order joined by a blank line (``\\n\\n``); its ``tokens`` is
the exact cl100k count of that text. With ``max_tokens`` (``search.expand_max_tokens``, default
1,024) a neighbour or parent expansion grows outward from the hit's own chunk — the preceding
chunk first, then the following one, alternately, each side stopping at the first chunk that
would pass the cap — so ``tokens <= max(max_tokens, tokens of the hit's own chunk)`` holds
exactly; an auto-merge whose section would pass the cap does not happen (the hits stay). A
chunk is never cut here; cutting is the budget's job (:func:`esrag.search.budget.take_budget`).

Record chunks (metadata ``record_id``: one record, one chunk, :mod:`esrag.chunking.records`) are never
expanded. Overlaps are removed in rank order: a later hit loses the chunks an earlier expanded
hit already holds, and a hit whose own chunk is already held disappears into that hit (its id
joins ``expanded_from``). Every expanded hit keeps a section path (the longest common prefix of
its members' paths) and a line span (first member's start to last member's end); its
``expanded_from`` lists the ids of the retrieved hits it covers, best first, and
``chunk.metadata["chunks"]`` lists its members as ``[id, start_line, end_line, characters]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esrag.errors import ConfigError
from esrag.model import SECTION_SEPARATOR, Chunk, Hit, content_hash
from esrag.tokens import fast_count

if TYPE_CHECKING:
    from esrag.stores.base import Store

JOINER = "\n\n"
KINDS = ("neighbours", "parent", "auto-merge", "none")


@dataclass(frozen=True, slots=True)
class ExpandSpec:
    """A parsed expansion spec: ``kind`` (one of :data:`KINDS`) and its number (W or M)."""

    kind: str
    n: int = 0

    def __str__(self) -> str:
        return f"{self.kind}:{self.n}" if self.kind in ("neighbours", "auto-merge") else self.kind


#: The widest ``neighbours:W``: each hit fetches its 2W + 1 positions from the store (one request
#: or statement per hit), and an expanded hit stops at ``expand_max_tokens`` (1,024 by default),
#: which 50 chunks on each side pass in any real corpus.
MAX_NEIGHBOURS = 50


def parse_expand(spec: str | None) -> ExpandSpec | None:
    """``"neighbours:2"``, ``"parent"``, ``"auto-merge:3"``, ``"none"`` (None/'' -> None).

    Raises:
        ConfigError: an unknown kind or a bad number (names the valid forms; ``W`` at most
            :data:`MAX_NEIGHBOURS`).
    """
    if spec is None or not str(spec).strip():
        return None
    text = str(spec).strip().lower().replace("neighbors", "neighbours").replace("automerge", "auto-merge")
    m = re.fullmatch(r"(neighbours|auto-merge)\s*:\s*(\d+)|(parent|none)", text)
    if not m:
        raise ConfigError(f"unknown expansion {spec!r}; valid: neighbours:W (W >= 1), parent, auto-merge:M (M >= 2), none")
    if m.group(3):
        return ExpandSpec(m.group(3))
    n = int(m.group(2)) if len(m.group(2)) <= 6 else MAX_NEIGHBOURS + 1
    if (m.group(1) == "neighbours" and not 1 <= n <= MAX_NEIGHBOURS) or (m.group(1) == "auto-merge" and n < 2):
        raise ConfigError(f"expansion {spec!r}: use neighbours:W with 1 <= W <= {MAX_NEIGHBOURS} or auto-merge:M with M >= 2")
    return ExpandSpec(m.group(1), n)


def parent_path(section_path: str) -> str:
    """The section path with its last title removed ('' for a top-level or empty path)."""
    parts = section_path.split(SECTION_SEPARATOR) if section_path else []
    return SECTION_SEPARATOR.join(parts[:-1])


def within(section_path: str, section: str) -> bool:
    """Whether ``section_path`` is ``section`` or lies under it ('' contains everything)."""
    return not section or section_path == section or section_path.startswith(section + SECTION_SEPARATOR)


def common_path(paths: Sequence[str]) -> str:
    """Longest common prefix of section paths, by whole titles."""
    split = [p.split(SECTION_SEPARATOR) if p else [] for p in paths]
    out: list[str] = []
    for titles in zip(*split):
        if any(t != titles[0] for t in titles):
            break
        out.append(titles[0])
    return SECTION_SEPARATOR.join(out)


def is_record(chunk: Chunk) -> bool:
    """Record chunks (one record, one chunk) are never expanded."""
    return "record_id" in chunk.metadata


def joined_tokens(chunks: Sequence[Chunk]) -> int:
    """cl100k tokens of the members' texts joined as an expanded hit joins them."""
    return fast_count(JOINER.join(c.text for c in chunks))


class SourceCache:
    """Chunks of one source by position, read from the store once per search."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._all: dict[tuple[str, str, str], list[Chunk]] = {}

    def all(self, seed: Chunk) -> list[Chunk]:
        """Every chunk of ``seed``'s source, by position."""
        key = (seed.corpus, seed.source_path, seed.doc_version)
        if key not in self._all:
            self._all[key] = self.store.neighbours(
                seed.corpus, seed.source_path, list(range(1, max(seed.n_chunks, seed.position) + 1)), **_version(seed)
            )
        return self._all[key]

    def around(self, seed: Chunk, w: int) -> list[Chunk]:
        """The chunks at positions ``p-w .. p+w`` of ``seed``'s source, by position."""
        key = (seed.corpus, seed.source_path, seed.doc_version)
        if key in self._all:
            return [c for c in self._all[key] if abs(c.position - seed.position) <= w]
        positions = [p for p in range(seed.position - w, seed.position + w + 1) if p >= 1]
        return self.store.neighbours(seed.corpus, seed.source_path, positions, **_version(seed))


def _version(seed: Chunk) -> dict[str, str]:
    """``{"doc_version": v}`` for a versioned seed (its neighbours are of the same version)."""
    return {"doc_version": seed.doc_version} if seed.doc_version else {}


def _run_around(chunks: list[Chunk], seed: Chunk, keep: Callable[[Chunk], bool]) -> list[Chunk]:
    """The contiguous run (consecutive positions, each kept) of ``chunks`` containing ``seed``."""
    by_pos = {c.position: c for c in chunks if keep(c) or c.id == seed.id}
    by_pos[seed.position] = seed
    lo = hi = seed.position
    while lo - 1 in by_pos:
        lo -= 1
    while hi + 1 in by_pos:
        hi += 1
    return [by_pos[p] for p in range(lo, hi + 1)]


def grow(run: list[Chunk], seed: Chunk, max_tokens: int | None) -> list[Chunk]:
    """The members taken from ``run`` (contiguous, by position) around ``seed``: all of it when
    it fits ``max_tokens``, else grown outward from the seed, preceding chunk first, each side
    stopping at the first chunk that would pass the cap."""
    if max_tokens is None or joined_tokens(run) <= max_tokens:
        return run
    i = next(k for k, c in enumerate(run) if c.id == seed.id)
    lo, hi = i, i
    left_open, right_open = True, True
    while left_open or right_open:
        if left_open:
            if lo > 0 and joined_tokens(run[lo - 1 : hi + 1]) <= max_tokens:
                lo -= 1
            else:
                left_open = False
        if right_open:
            if hi + 1 < len(run) and joined_tokens(run[lo : hi + 2]) <= max_tokens:
                hi += 1
            else:
                right_open = False
    return run[lo : hi + 1]


@dataclass
class _Unit:
    rank: int  # rank (0-based) of the best hit it covers
    hit: Hit  # that best hit
    members: list[Chunk]
    covered: list[tuple[int, str]] = field(default_factory=list)  # (rank, hit id)
    section: str | None = None  # for auto-merge: the section it stands for
    kind: str = ""

    @property
    def key(self) -> tuple[str, str]:
        c = self.hit.chunk
        return c.corpus, c.source_path

    @property
    def path(self) -> str:
        return self.section if self.section is not None else self.hit.chunk.section_path


def expand_hits(
    hits: list[Hit],
    store: Store,
    spec_for: Callable[[Hit], ExpandSpec | None],
    max_tokens: int | None = 1024,
) -> list[Hit]:
    """``hits`` (best first) expanded by each hit's spec (``spec_for(hit)``; None or ``none``
    leaves a hit as it is). See the module docstring for the rules and limits.

    Raises:
        ConfigError: ``max_tokens`` < 1.
    """
    if max_tokens is not None and max_tokens < 1:
        raise ConfigError(f"expand_max_tokens must be >= 1 cl100k token, got {max_tokens}")
    specs = [None if is_record(h.chunk) else spec_for(h) for h in hits]
    if all(s is None or s.kind == "none" for s in specs):
        return hits
    cache = SourceCache(store)
    units = [_Unit(i, h, [h.chunk], [(i, h.chunk.id)]) for i, h in enumerate(hits)]
    merging = [u for u, s in zip(units, specs) if s is not None and s.kind == "auto-merge"]
    if merging:
        merged = _auto_merge(merging, {id(u): s for u, s in zip(units, specs) if s is not None}, cache, max_tokens)
        units = [u for u, s in zip(units, specs) if not (s is not None and s.kind == "auto-merge")] + merged
    for u in units:
        s = specs[u.rank] if u.section is None else None
        if s is None or s.kind in ("none", "auto-merge"):
            continue
        seed = u.hit.chunk
        if s.kind == "neighbours":
            run = _run_around(cache.around(seed, s.n), seed, _anywhere)
        else:
            run = _run_around(cache.all(seed), seed, _in_section(parent_path(seed.section_path)))
        u.members, u.kind = grow(run, seed, max_tokens), s.kind
    return _dedupe(sorted(units, key=lambda u: u.rank))


def _candidate_sections(u: _Unit) -> list[str]:
    """Sections a unit may merge into: a retrieved chunk's own section (when a long section was
    cut into several chunks, its sibling chunks share that path) and the parent of its path."""
    own = [u.path] if u.section is None and u.path else []
    return own + [parent_path(u.path)]


def _auto_merge(units: list[_Unit], spec_of: dict[int, ExpandSpec], cache: SourceCache, max_tokens: int | None) -> list[_Unit]:
    """Merge upward: repeatedly replace the items of the deepest qualifying section by one unit."""
    items = list(units)
    need = {id(u): spec_of[id(u)].n for u in units}
    refused: set[tuple[str, str, str]] = set()
    while True:
        best: tuple[int, int, tuple[str, str, str], list[_Unit]] | None = None
        for u, section in ((w, sec) for w in items for sec in _candidate_sections(w)):
            key = (*u.key, section)
            if key in refused:
                continue
            inside = [v for v in items if v.key == u.key and within(v.path, section)]
            hits = sum(len(v.covered) for v in inside)
            threshold = min(need.get(id(v), 2) for v in inside)
            if hits >= threshold and len(inside) >= 2:
                depth = len(section.split(SECTION_SEPARATOR)) if section else 0
                rank = min(v.rank for v in inside)
                if best is None or (depth, -rank) > (best[0], best[1]):
                    best = (depth, -rank, key, inside)
        if best is None:
            return items
        _, _, key, inside = best
        top = min(inside, key=lambda v: v.rank)
        section = key[2]
        chunks = cache.all(top.hit.chunk)
        run = [c for c in chunks if within(c.section_path, section)]
        if not run or (max_tokens is not None and joined_tokens(run) > max_tokens):
            refused.add(key)
            continue
        covered = sorted(x for v in inside for x in v.covered)
        unit = _Unit(top.rank, top.hit, run, covered, section, "auto-merge")
        need[id(unit)] = min(need.get(id(v), 2) for v in inside)
        items = [v for v in items if v not in inside] + [unit]


def _dedupe(units: list[_Unit]) -> list[Hit]:
    """Units in rank order, later ones trimmed to chunks not yet held; a unit whose own hit's
    chunk is already held joins the holder's ``expanded_from``."""
    held: dict[str, _Unit] = {}
    kept: list[_Unit] = []
    for u in units:
        seed = u.hit.chunk
        if seed.id in held:
            held[seed.id].covered.extend(u.covered)
            continue
        free = [c for c in u.members if c.id not in held]
        positions = {c.position for c in free}
        lo = hi = seed.position
        while lo - 1 in positions:
            lo -= 1
        while hi + 1 in positions:
            hi += 1
        u.members = [c for c in free if lo <= c.position <= hi] if seed.position in positions else [seed]
        for c in u.members:
            held[c.id] = u
        kept.append(u)
    return [_to_hit(u) for u in kept]


def _to_hit(u: _Unit) -> Hit:
    hit = u.hit
    if len(u.members) == 1 and len(u.covered) == 1 and u.members[0].id == hit.chunk.id:
        return hit
    members = sorted(u.members, key=lambda c: c.position)
    seed = hit.chunk
    path = u.section if u.section is not None and len(members) > 1 else common_path([c.section_path for c in members])
    chunk = joined_chunk(seed, members, path, dict(seed.metadata), u.kind)
    covered = [cid for _, cid in sorted(dict.fromkeys(u.covered))]
    return Hit(chunk, hit.score, dict(hit.legs), covered)


def joined_chunk(seed: Chunk, members: Sequence[Chunk], section_path: str, metadata: dict[str, Any], expansion: str) -> Chunk:
    """One chunk standing for ``members`` (consecutive chunks of one page, by position) that
    ``seed`` (a hit's chunk) grew into: their texts joined by :data:`JOINER`, the line span of
    all, ``metadata`` with ``"chunks"`` (``[id, start_line, end_line, chars]`` per member) and
    ``"expansion"`` (how it grew) set, an id derived from the members' ids, and the link of the
    first member (its url, anchor and alt_urls; the seed's when the first has no url)."""
    text = JOINER.join(m.text for m in members)
    first = members[0]
    metadata = {**metadata, "chunks": [[m.id, m.start_line, m.end_line, len(m.text)] for m in members], "expansion": expansion}
    return Chunk(
        id="x" + content_hash(*(m.id for m in members))[:31],
        text=text,
        corpus=seed.corpus,
        source_path=seed.source_path,
        section_path=section_path,
        start_line=first.start_line,
        end_line=members[-1].end_line,
        position=first.position,
        n_chunks=seed.n_chunks,
        tokens=fast_count(text),
        content_hash=content_hash(text),
        doc_title=seed.doc_title,
        parent_id=seed.parent_id,
        metadata=metadata,
        doc_version=seed.doc_version,
        url=first.url or seed.url,
        anchor=first.anchor or seed.anchor,
        alt_urls=list(first.alt_urls if first.url else seed.alt_urls),
    )


def _anywhere(chunk: Chunk) -> bool:
    return True


def _in_section(section: str) -> Callable[[Chunk], bool]:
    """A test of whether a chunk lies within ``section`` (a section path)."""
    return lambda chunk: within(chunk.section_path, section)
