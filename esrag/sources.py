"""Find source files under a root and decode them safely.

Include/exclude patterns are gitignore-style (``pathspec``): ``*.md`` matches at any depth,
``docs/`` excludes a folder, ``/CHANGELOG.md`` only the root file. Inside a git work tree the
files git ignores are skipped too (``git ls-files --cached --others --exclude-standard``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from esrag.errors import SourceError
from esrag.model import Document


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to ingest: absolute path, its POSIX path relative to the ingested root, and that
    root (the tree its include directives may read from; None: includes are not resolved)."""

    path: Path
    rel: str
    root: Path | None = None


def discover(root: Path, include: list[str], exclude: list[str]) -> list[SourceFile]:
    """Files under ``root`` matching ``include`` and not ``exclude``, sorted by relative path.

    ``root`` may be a single file, which is then returned alone (patterns not applied).

    Raises:
        SourceError: ``root`` does not exist.
    """
    root = root.resolve()
    if root.is_file():
        return [SourceFile(root, root.name, project_root(root))]
    if not root.is_dir():
        raise SourceError(str(root), "no such file or directory")
    inc = pathspec.PathSpec.from_lines("gitignore", include)
    exc = pathspec.PathSpec.from_lines("gitignore", exclude)
    out = [
        SourceFile(root / rel, rel, root)
        for rel in _candidates(root)
        if inc.match_file(rel) and not exc.match_file(rel)
    ]
    return sorted(out, key=lambda s: s.rel)


_PROJECT_MARKERS = ("book.toml", "mkdocs.yml", "conf.py", ".git")


def project_root(file: Path) -> Path:
    """The tree a single file's includes may read from: the nearest ancestor directory holding
    ``book.toml``, ``mkdocs.yml``, ``conf.py`` or ``.git`` (an mdBook, MkDocs, Sphinx or git
    root), else the file's own directory."""
    file = file.resolve()
    for d in file.parents:
        if any((d / m).exists() for m in _PROJECT_MARKERS):
            return d
    return file.parent


def _candidates(root: Path) -> Iterator[str]:
    listed = _git_files(root)
    if listed is not None:
        yield from (rel for rel in listed if (root / rel).is_file())
        return
    for path in root.rglob("*"):
        if path.is_file():
            yield path.relative_to(root).as_posix()


def _git_files(root: Path) -> list[str] | None:
    """Files git tracks or would track under ``root``; None outside a git work tree."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def read_text(path: Path, rel: str, max_bytes: int) -> str:
    """The file's text, decoded as UTF-8 (a byte-order mark is dropped).

    Raises:
        SourceError: the file is empty, larger than ``max_bytes`` bytes, binary (holds a NUL
            byte) or not valid UTF-8; the message names the file and, for bad UTF-8, the line
            and byte offset.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(rel, f"cannot read: {exc.strerror}") from exc
    if size > max_bytes:
        raise SourceError(rel, f"too large ({size:,} bytes > limit {max_bytes:,}); raise ingest.max_file_bytes to index it")
    data = path.read_bytes()
    if not data.strip():
        raise SourceError(rel, "empty file; nothing to index")
    if b"\0" in data[:8192]:
        raise SourceError(rel, "binary file (NUL bytes); not a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(
            rel, f"not valid UTF-8 at line {line} (byte offset {exc.start}); convert it with e.g. `iconv -f latin1 -t utf-8`"
        ) from exc


def load_document(src: SourceFile, corpus: str, max_bytes: int) -> Document:
    """A :class:`Document` for ``src`` (text as on disk; chunkers normalise line endings)."""
    return Document(path=src.rel, text=read_text(src.path, src.rel, max_bytes), corpus=corpus)
