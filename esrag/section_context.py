"""Section-context vectors: each chunk's vector is pulled toward the mean vector of its section.

A header-led chunk is often one of several cut from the same section, and a question about the
section matches the section as a whole better than any one piece of it. With ``alpha`` = α > 0 a
chunk's indexed vector becomes::

    normalize(v̂ + α · mean(v̂ of the chunks in its group))

where ``v̂`` are the unit-normalised passage embeddings and a *group* is the chunks of one file
whose section paths agree on their first ``depth`` levels (``depth`` 2 with a ``# Title`` on top
of a Markdown file: the chunks under one ``##`` section). Chunks with no section path, and
groups of one, keep their own vector. No text is embedded twice and the query side is
unchanged; the cost is that an edit inside a group rewrites the whole group's vectors, which
:func:`context_hashes` arranges by folding the group into every member's content hash (the
unchanged members' passage vectors come from the ingest's embedding cache).

Chosen by measurement, not taken from a paper: on the Qasper slice (``esrag eval``,
all-MiniLM-L6-v2, rec@512t) grouping at depth 2 with α 1.0 lifted hybrid by +1.4 to +2.5 points
at every chunk size tried (tau_max 400/600/800), and α 0.5–1.5 form a plateau (docs/evaluation.md,
"Evaluation, and how the defaults were chosen"). It is a cheap cousin of late chunking (Günther et al., 2024,
arXiv:2409.04701), which conditions each chunk's embedding on its surrounding text.

The index stores the mixed vectors, so what reads stored vectors sees them too: MMR in fan-out
branches, and ``esrag diagnose``'s self-retrieval on the index's own vectors (members of one
group sit closer together than their plain embeddings do).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from esrag.embedding import l2_normalise
from esrag.model import Chunk, content_hash

#: How :attr:`Chunk.section_path` separates levels.
PATH_SEPARATOR = " > "


def group_key(chunk: Chunk, depth: int) -> tuple[str, str] | None:
    """The group of ``chunk``: (source path, first ``depth`` levels of its section path), or
    None when the chunk has no section path (it then forms no group).

    Raises:
        ValueError: ``depth`` < 1.
    """
    if depth < 1:
        raise ValueError(f"section_context_depth must be at least 1 section-path level, got {depth}")
    if not chunk.section_path:
        return None
    levels = chunk.section_path.split(PATH_SEPARATOR)[:depth]
    return chunk.source_path, PATH_SEPARATOR.join(levels)


def groups(chunks: Sequence[Chunk], depth: int) -> list[list[int]]:
    """Indices of ``chunks`` grouped by :func:`group_key`, in first-seen order; a chunk without
    a section path is a group of its own."""
    by_key: dict[object, list[int]] = {}
    for i, chunk in enumerate(chunks):
        key = group_key(chunk, depth)
        by_key.setdefault(key if key is not None else ("", i), []).append(i)
    return list(by_key.values())


def apply(chunks: Sequence[Chunk], vectors: np.ndarray, alpha: float, depth: int) -> np.ndarray:
    """Section-context vectors for ``chunks`` (see the module docstring).

    Args:
        chunks: the chunks, holding every member of each group they touch (a group's mean is
            taken over the chunks given, so pass whole files).
        vectors: array of shape [len(chunks), dims], their passage embeddings (any norm).
        alpha: weight α of the group mean (>= 0; 0 returns the unit-normalised input).
        depth: section-path levels that define a group (>= 1).

    Returns:
        float32 array of shape [len(chunks), dims], unit rows (zero rows stay zero).

    Raises:
        ValueError: negative ``alpha``, ``depth`` < 1, or ``vectors`` not one row per chunk.
    """
    if alpha < 0:
        raise ValueError(f"section_context must be >= 0 (the weight of the section's mean vector), got {alpha}")
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) != len(chunks):
        raise ValueError(f"expected one vector per chunk ({len(chunks)}), got an array of shape {vectors.shape}")
    unit = l2_normalise(vectors)
    if alpha == 0:
        return unit
    out = unit.copy()
    for idx in groups(chunks, depth):
        if len(idx) > 1:
            out[idx] += alpha * unit[idx].mean(axis=0)
    return l2_normalise(out)


def context_hashes(chunks: Sequence[Chunk], alpha: float, depth: int) -> list[str]:
    """Content hashes that also cover each chunk's group, one per chunk.

    A chunk's indexed vector depends on every member of its group, so its hash folds in the
    setting and the members' own content hashes in order: adding, editing or removing any
    member changes the hash of all of them (and ingest re-embeds the group), while an untouched
    group keeps its hashes. With ``alpha`` 0 the chunks' own hashes are returned unchanged.
    """
    if alpha == 0:
        return [c.content_hash for c in chunks]
    out = [""] * len(chunks)
    setting = f"section-context:{float(alpha)!r}:{depth}"
    for idx in groups(chunks, depth):
        members = content_hash(setting, *(chunks[i].content_hash for i in idx))
        for i in idx:
            out[i] = content_hash(chunks[i].content_hash, members)
    return out
