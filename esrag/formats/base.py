"""What every source format produces: :class:`Parsed` (see :mod:`esrag.formats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from esrag.model import Block

RST_SUFFIXES = (".rst", ".rest")

# Every problem about an include directive that was not resolved holds this phrase (the ingest
# summary counts them: ``includes_unresolved``).
UNRESOLVED = "include not resolved"


def is_unresolved_include(problem: str) -> bool:
    """True when ``problem`` (one of :attr:`Parsed.problems`) is about an include directive that
    was not resolved (a failed one, left out of the text, or a line that looks like one of a
    form no enabled extension handles, kept as text)."""
    return UNRESOLVED in problem


@dataclass
class Parsed:
    """One document as a reader sees it.

    Attributes:
        lines: the resolved text, one string per line (no newlines).
        blocks: blocks in document order; ``start_line``/``end_line`` are 1-based inclusive
            indices into ``lines``.
        line_map: ``line_map[i]`` is the 1-based source line of ``lines[i]`` (included or
            rendered lines map to the line of the directive or construct they came from).
        end_map: ``end_map[i]`` is the last source line ``lines[i]`` stands for (a rendered
            reStructuredText title covers its text and underline lines); None: ``line_map``.
        problems: one-line messages (``"line N: …"``) about includes left unresolved or
            reStructuredText errors; the document is indexed anyway.
        dependencies: absolute paths of included files.
    """

    lines: list[str]
    blocks: list[Block]
    line_map: list[int]
    end_map: list[int] | None = None
    problems: list[str] = field(default_factory=list)
    dependencies: set[Path] = field(default_factory=set)
