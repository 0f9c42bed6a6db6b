"""The SQL ``WHERE`` clauses of a :class:`~esrag.stores.base.Filters` for the embedded store
(:mod:`esrag.stores.sqlite`; the chunk table is aliased ``c``)."""

from __future__ import annotations

from typing import Any

from esrag.stores.base import Filters


def filter_sql(filters: Filters, translations: bool = True) -> tuple[str, list[Any]]:
    """``("AND <clause> AND ...", params)`` of ``filters`` (``("", [])`` when it filters nothing).
    ``translations`` False (the store holds no translated chunk) leaves out the exclusion of
    translations, which would match every row anyway."""
    clauses: list[str] = []
    params: list[Any] = []
    if filters.corpora:
        clauses.append(f"c.corpus IN ({','.join('?' * len(filters.corpora))})")
        params.extend(filters.corpora)
    if filters.path_prefix:
        clauses.append("substr(c.source_path, 1, ?) = ?")
        params.extend([len(filters.path_prefix), filters.path_prefix])
    if filters.languages:
        clauses.append(f"c.language IN ({','.join('?' * len(filters.languages))})")
        params.extend(filters.languages)
    if filters.exclude_ids:
        clauses.append(f"c.id NOT IN ({','.join('?' * len(filters.exclude_ids))})")
        params.extend(filters.exclude_ids)
    if filters.effective_on:
        clauses.append("(c.effective_date IS NULL OR c.effective_date = '' OR substr(c.effective_date, 1, 10) <= ?)")
        params.append(filters.effective_on[:10])
    if filters.exclude_superseded:
        clauses.append("(c.superseded_by IS NULL OR c.superseded_by = '')")
    if translations and filters.excludes_translations():
        clauses.append("(c.translation IS NULL OR c.translation = '')")
    if filters.doc_version is not None:
        clauses.append("c.doc_version = ?")
        params.append(filters.doc_version)
    if filters.versions:  # each named corpus in its one version; the others whole
        named = filters.versions
        pairs = " OR ".join("(c.corpus = ? AND c.doc_version = ?)" for _ in named)
        clauses.append(f"(c.corpus NOT IN ({','.join('?' * len(named))}) OR {pairs})")
        params.extend(named)
        params.extend(x for pair in named.items() for x in pair)
    return ("AND " + " AND ".join(clauses)) if clauses else "", params
