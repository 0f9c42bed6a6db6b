"""A third-party chunker: one chunk per ``size`` source lines (blank lines included)."""

from esrag.chunking.base import Piece, finalize
from esrag.model import Document


class LinesChunker:
    name = "lines"

    def __init__(self, size: int = 3) -> None:
        self.size = size

    def chunk(self, doc: Document):
        lines = doc.text.split("\n")
        pieces = [
            Piece("\n".join(lines[i : i + self.size]), ("lines",), i + 1, min(i + self.size, len(lines)))
            for i in range(0, len(lines), self.size)
        ]
        return finalize(doc, pieces)
