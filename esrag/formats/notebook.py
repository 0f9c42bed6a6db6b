"""Jupyter notebooks (``.ipynb``, nbformat 4 JSON) -> the text a reader sees, as Markdown blocks.

The notebook is rendered to Markdown cell by cell, then read as any Markdown page
(:func:`esrag.formats.markdown_blocks.parse_blocks`), so a Markdown cell's headings open sections:

* Markdown cells: their source, as written (MyST targets and directives as on a MyST page when
  ``myst`` is set);
* code cells: fenced code in the kernel's language (``metadata.kernelspec.language``, else
  ``metadata.language_info.name``; none: a bare fence), the fence longer than any backtick run
  inside the code;
* raw cells: left out (they are passed through to one output format, e.g. LaTeX or
  reStructuredText, not shown as text on an HTML page);
* outputs: left out, unless ``outputs`` (``[ingest] notebook_outputs``): then the text outputs
  only — ``stream`` text and the ``text/plain`` of ``execute_result`` — each in a fenced
  ``text`` block after its cell's code, cut at :data:`OUTPUT_LIMIT` characters with
  :data:`TRUNCATED` appended. Images, HTML and errors are never indexed.

Line spans are cell numbers: ``line_map`` maps every rendered line to the 1-based number of the
cell it comes from (a notebook has no source lines a reader could open).

The format is nbformat 4 (``nbformat/v4/nbformat.v4.schema.json``): ``cells`` of
``{cell_type, source, metadata, outputs?}`` where ``source`` (and output ``text``) is a string or
a list of strings; ``metadata.kernelspec`` / ``metadata.language_info``. nbformat 3 and older
(``worksheets``) are refused with a :class:`esrag.errors.SourceError`, as is anything that is not
such JSON (the error names the file; nothing else of the ingest is lost).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from esrag.errors import SourceError
from esrag.formats.base import Parsed
from esrag.formats.markdown_blocks import normalize, parse_blocks

#: the most characters of one output indexed when ``notebook_outputs`` is on
OUTPUT_LIMIT = 2_000
#: appended (on its own line) to an output cut at :data:`OUTPUT_LIMIT`
TRUNCATED = f"… (output truncated at {OUTPUT_LIMIT:,} characters)"

_BACKTICKS = re.compile(r"`{3,}")


@dataclass
class _Rendered:
    """The Markdown text being built: ``lines`` and the cell number of each (``cells``)."""

    lines: list[str] = field(default_factory=list)
    cells: list[int] = field(default_factory=list)

    def add(self, text_lines: list[str], cell: int) -> None:
        """Append ``text_lines`` and a blank separator line, all from cell ``cell``."""
        self.lines.extend([*text_lines, ""])
        self.cells.extend([cell] * (len(text_lines) + 1))


def parse_notebook(text: str, path: str, outputs: bool = False, myst: bool = False, targets: bool = False) -> Parsed:
    """``text`` (the ``.ipynb`` file's JSON) as :class:`Parsed` Markdown (module docstring).

    Args:
        text: the notebook's JSON text.
        path: the file's path, for errors.
        outputs: index text outputs (``[ingest] notebook_outputs``).
        myst: Markdown cells are MyST (Jupyter Book, myst-nb).
        targets: a MyST ``(label)=`` line names the next header (mystmd; :func:`parse_blocks`).

    Raises:
        SourceError: not JSON, not an nbformat 4 notebook, or a cell of the wrong shape (names
            the file and the cell).
    """
    cells, language = _read(text, path)
    out = _Rendered()
    for number, cell in enumerate(cells, 1):
        kind = cell.get("cell_type")
        if kind == "markdown":
            out.add(normalize(_text(cell.get("source"), path, number)).split("\n"), number)
        elif kind == "code":
            code = _text(cell.get("source"), path, number)
            if code.strip():
                out.add(fenced(normalize(code), language), number)
            if outputs:
                for shown in cell_outputs(cell, path, number):
                    out.add(fenced(shown, "text"), number)
        # raw cells (and unknown types) are left out: they are no HTML page's text
    if not out.lines:
        out.add([], 1)
    blocks = parse_blocks("\n".join(out.lines), lines=out.lines, myst=myst, targets=targets)
    return Parsed(out.lines, blocks, out.cells)


def _read(text: str, path: str) -> tuple[list[dict[str, Any]], str]:
    """The cells and kernel language of an nbformat 4 notebook.

    Raises:
        SourceError: see :func:`parse_notebook`."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(path, f"not a Jupyter notebook: invalid JSON ({exc})") from None
    if not isinstance(nb, dict):
        raise SourceError(path, "not a Jupyter notebook: the JSON is not an object")
    major = nb.get("nbformat")
    if isinstance(major, int) and major < 4 or "worksheets" in nb:
        raise SourceError(path, f"nbformat {major} notebook: only nbformat 4 is read (convert with `jupyter nbconvert --to notebook`)")
    cells = nb.get("cells")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise SourceError(path, "not a Jupyter notebook: no list of cells (nbformat 4 'cells')")
    meta = nb.get("metadata")
    return cells, kernel_language(meta if isinstance(meta, dict) else {})


def kernel_language(metadata: dict[str, Any]) -> str:
    """The notebook's language: ``kernelspec.language``, else ``language_info.name``, else ''."""
    for key, name in (("kernelspec", "language"), ("language_info", "name")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(name), str) and value[name].strip():
            return str(value[name]).strip().lower()
    return ""


def _text(source: Any, path: str, cell: int) -> str:
    """A multiline string of nbformat: a string or a list of strings (joined as they are).

    Raises:
        SourceError: anything else (names the file and the cell)."""
    if source is None:
        return ""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    raise SourceError(path, f"cell {cell}: source is not a string or a list of strings")


def fenced(text: str, language: str) -> list[str]:
    """``text`` as the lines of a fenced code block in ``language``, the fence one backtick
    longer than the longest run of three or more inside (CommonMark: a shorter run cannot close it)."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    return [fence + language, *text.rstrip("\n").split("\n"), fence]


def cell_outputs(cell: dict[str, Any], path: str, number: int) -> list[str]:
    """The text outputs of a code cell (``stream`` text, ``execute_result`` ``text/plain``),
    each cut at :data:`OUTPUT_LIMIT` characters with :data:`TRUNCATED` after it; others left out."""
    found = []
    for output in cell.get("outputs") or []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            shown = _text(output.get("text"), path, number)
        elif kind == "execute_result" and isinstance(output.get("data"), dict):
            shown = _text(output["data"].get("text/plain"), path, number)
        else:
            continue
        shown = normalize(shown).rstrip("\n")
        if len(shown) > OUTPUT_LIMIT:
            shown = shown[:OUTPUT_LIMIT].rstrip("\n") + "\n" + TRUNCATED
        if shown.strip():
            found.append(shown)
    return found
