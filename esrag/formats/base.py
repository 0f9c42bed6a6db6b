"""What every source format produces: :class:`Parsed` (see :mod:`esrag.formats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from esrag.model import Block

RST_SUFFIXES = (".rst", ".rest")


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

