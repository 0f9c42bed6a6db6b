"""What an ingest did with every text file of the tree: the summary's ``file_report`` block.

A documentation tool that indexes 1 file of 655 and exits 0 is wrong in the worst way (a
silent loss; Hugo, Docusaurus and Sphinx each report what they skipped). So every text file
under the ingested folder is accounted for: indexed, or skipped for a named reason —

* ``suffix not read``: no ``--include`` / ``ingest.include`` pattern selects it;
* ``excluded by --exclude / ingest.exclude``;
* the site's reasons (:meth:`esrag.sites.Site.prepare`): ``draft``, ``unlisted``, outside the
  generator's content folders, excluded by the generator's configuration, not built, a page
  resource…;
* any other reason a caller records with :meth:`FileReport.skip` (one string per reason, so
  new reasons need no new field).

"Text file" means: not empty, no NUL byte and valid UTF-8 in its first 8 KB. Files that fail
to read or chunk are counted under ``failures`` of the summary, not here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from esrag.sources import tree_files

SUFFIX_NOT_READ = "suffix not read"
EXCLUDED_BY_PATTERN = "excluded by --exclude / ingest.exclude"
_SAMPLE = 8192


def is_text_file(path: Path) -> bool:
    """True when ``path`` looks like a text file: not empty, no NUL byte and valid UTF-8 (a
    multi-byte character cut at the sample's end is allowed) in its first 8 KB."""
    try:
        with path.open("rb") as fh:
            data = fh.read(_SAMPLE)
    except OSError:
        return False
    if not data.strip() or b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return len(data) == _SAMPLE and exc.start >= len(data) - 3
    return True


@dataclass
class FileReport:
    """Counts of the tree's text files (see the module docstring).

    Attributes:
        text_files: text files under the ingested folder.
        indexed: files whose chunks are in the index after this ingest.
        skipped: reason -> relative paths, in the order seen.
        docs_roots: folders (relative to the ingested one, '' = itself) that hold the
            generator's pages, for the coverage warning.
    """

    text_files: int = 0
    indexed: int = 0
    skipped: dict[str, list[str]] = field(default_factory=dict)
    docs_roots: list[str] = field(default_factory=list)
    _text: set[str] = field(default_factory=set, repr=False)

    def add_text(self, rels: Iterable[str]) -> None:
        """Count the text files ``rels`` (relative paths; counted once each)."""
        for rel in rels:
            if rel not in self._text:
                self._text.add(rel)
                self.text_files += 1

    def skip(self, reason: str, rel: str) -> None:
        """Record that ``rel`` was left out for ``reason``."""
        self.skipped.setdefault(reason, []).append(rel)

    def relabel(self, rel: str, reason: str) -> None:
        """File ``rel``, which :func:`survey` counted as skipped for another reason (a symbolic
        link the walk left out is ``excluded by a pattern`` to it), under ``reason``; a file
        it did not count as a text file is left alone."""
        for rels in self.skipped.values():
            if rel in rels:
                rels.remove(rel)
                self.skip(reason, rel)
                break
        self.skipped = {k: v for k, v in self.skipped.items() if v}

    def to_dict(self, examples: int = 5) -> dict[str, Any]:
        """``{"text_files", "indexed", "skipped": {reason: {"count", "examples"}}}``, reasons by
        count, largest first, with up to ``examples`` paths each."""
        ordered = sorted(self.skipped.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return {
            "text_files": self.text_files,
            "indexed": self.indexed,
            "skipped": {reason: {"count": len(rels), "examples": rels[:examples]} for reason, rels in ordered},
        }

    def coverage_warning(self) -> str:
        """One line when fewer than half of the text files under the docs roots were indexed
        (naming the largest skipped group there), else ''."""
        if not self.docs_roots:
            return ""

        def under(rel: str) -> bool:
            return any(not r or rel == r or rel.startswith(r.rstrip("/") + "/") for r in self.docs_roots)

        total = sum(1 for rel in self._text if under(rel))
        skipped = {reason: [r for r in rels if under(r)] for reason, rels in self.skipped.items()}
        skipped_n = sum(len(v) for v in skipped.values())
        indexed = total - skipped_n
        if total == 0 or indexed * 2 >= total:
            return ""
        reason, rels = max(skipped.items(), key=lambda kv: len(kv[1]))
        where = ", ".join(r or "." for r in self.docs_roots)
        return (
            f"only {indexed} of {total} text files under the docs root ({where}) were indexed; the largest skipped "
            f"group is {reason!r} ({len(rels)} file{'' if len(rels) == 1 else 's'}, e.g. {', '.join(rels[:3])})"
        )


def survey(root: Path, include: list[str], exclude: list[str], selected: Iterable[str]) -> FileReport:
    """A :class:`FileReport` of the folder ``root`` before any file is read: the ``selected``
    files (relative paths, what :func:`esrag.sources.discover` chose) and every other file of
    the tree (:func:`esrag.sources.tree_files`) that is a text file are counted; the others are
    skipped as ``suffix not read`` (no ``include`` pattern matches) or excluded by ``exclude``."""
    inc = pathspec.PathSpec.from_lines("gitignore", include)
    report = FileReport()
    chosen = set(selected)
    report.add_text(chosen)
    for rel in tree_files(root):
        if rel in chosen or not is_text_file(root / rel):
            continue
        report.add_text([rel])
        report.skip(EXCLUDED_BY_PATTERN if inc.match_file(rel) else SUFFIX_NOT_READ, rel)
    return report
