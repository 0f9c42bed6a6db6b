"""Find source files under a root and decode them safely.

Include/exclude patterns are gitignore-style (``pathspec``): ``*.md`` matches at any depth,
``docs/`` excludes a folder, ``/CHANGELOG.md`` only the root file. Inside a git work tree the
files git ignores are skipped too (``git ls-files --cached --others --exclude-standard``).
"""

from __future__ import annotations

import codecs
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from esrag.errors import EmptySource, SourceError
from esrag.model import Document


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file to ingest: absolute path, its POSIX path relative to the ingested root, and that
    root (the tree its include directives may read from; None: includes are not resolved)."""

    path: Path
    rel: str
    root: Path | None = None


#: the reason a blank file is skipped (:class:`esrag.errors.EmptySource`): a page that shows nothing
EMPTY = "empty"


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file an ingest left out on purpose: its path relative to the root, a ``reason`` code
    and a ``detail`` for people. Reasons: ``external-symlink`` (a symbolic link to a file
    outside the tree; ``detail`` is its target), ``broken-symlink`` (a link to nothing),
    ``draft`` / ``unlisted`` (front matter; :meth:`esrag.sites.Site.prepare`), :data:`EMPTY`."""

    path: str
    reason: str
    detail: str = ""


def discover(
    root: Path, include: list[str], exclude: list[str], follow_external_symlinks: bool = False, skipped: list[SkippedFile] | None = None
) -> list[SourceFile]:
    """Files under ``root`` matching ``include`` and not ``exclude``, sorted by relative path.

    ``root`` may be a single file, which is then returned alone (patterns not applied).
    A matching symbolic link whose target lies outside ``root`` is left out (as include
    directives are confined to the tree) unless ``follow_external_symlinks``; a link to
    nothing is left out too. Each is appended to ``skipped`` (when given) with its reason.
    Symbolic links to folders are not descended into (neither git nor the walk follows them).

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
    out = []
    for rel in _candidates(root):
        if not inc.match_file(rel) or exc.match_file(rel):
            continue
        why = _link_problem(root, rel, follow_external_symlinks)
        if why is not None:
            if skipped is not None:
                skipped.append(SkippedFile(rel, *why))
            continue
        out.append(SourceFile(root / rel, rel, root))
    return sorted(out, key=lambda s: s.rel)


def _link_problem(root: Path, rel: str, follow_external: bool) -> tuple[str, str] | None:
    """``(reason, detail)`` when ``root/rel`` is a broken symbolic link, or resolves outside
    ``root`` (a link, or a file under a linked folder) and ``follow_external`` is off; else None."""
    path = root / rel
    if not path.exists():
        return "broken-symlink", f"symbolic link to {os.readlink(path) if path.is_symlink() else '?'}, which does not exist"
    real = path.resolve()
    if follow_external or real.is_relative_to(root):
        return None
    return "external-symlink", f"symbolic link to {real}, outside the tree (set [ingest] follow_external_symlinks = true to index it)"


_PROJECT_MARKERS = (
    "book.toml",
    "mkdocs.yml",
    "conf.py",
    "hugo.toml",
    "hugo.yaml",
    "hugo.json",
    "docusaurus.config.js",
    "docusaurus.config.ts",
    ".git",
)


def project_root(file: Path) -> Path:
    """The tree a single file's includes may read from: the nearest ancestor directory holding
    ``book.toml``, ``mkdocs.yml``, ``conf.py``, ``hugo.*``, ``docusaurus.config.*`` or ``.git``
    (an mdBook, MkDocs, Sphinx, Hugo, Docusaurus or git root), else the file's own directory."""
    file = file.resolve()
    for d in file.parents:
        if any((d / m).exists() for m in _PROJECT_MARKERS):
            return d
    return file.parent


def tree_files(root: Path) -> list[str]:
    """Every file under the folder ``root`` that :func:`discover` considers before its patterns
    (git-ignored files left out inside a work tree), as sorted relative POSIX paths."""
    return sorted(_candidates(root.resolve()))


def _candidates(root: Path) -> Iterator[str]:
    listed = _git_files(root)
    if listed is not None:
        yield from (rel for rel in listed if (root / rel).is_file() or _broken_link(root / rel))
        return
    for path in root.rglob("*"):
        if path.is_file() or _broken_link(path):
            yield path.relative_to(root).as_posix()


def _broken_link(path: Path) -> bool:
    return path.is_symlink() and not path.exists()


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


#: byte-order marks of the Unicode encodings decoded besides UTF-8, longest first (UTF-32 LE's
#: mark begins with UTF-16 LE's); Python's ``utf-16``/``utf-32`` codecs read the mark and drop it
BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def read_text(path: Path, rel: str, max_bytes: int) -> str:
    """The file's text, decoded as UTF-8 (a byte-order mark is dropped), or as UTF-16 / UTF-32
    when it starts with their byte-order mark (what Windows editors write as "Unicode").

    Raises:
        SourceError: the file is blank (:class:`~esrag.errors.EmptySource`), larger than
            ``max_bytes`` bytes, binary (holds a NUL byte, without a UTF-16/32 byte-order mark)
            or not valid in its encoding; the message names the file and, for bad UTF-8, the
            line and byte offset.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(rel, f"cannot read: {exc.strerror}") from exc
    if size > max_bytes:
        raise SourceError(rel, f"too large ({size:,} bytes > limit {max_bytes:,}); raise ingest.max_file_bytes to index it")
    text = _decode(path.read_bytes(), rel)
    if not text.strip():  # after the decode: a byte-order mark and blank lines are blank too
        raise EmptySource(rel, "empty file; nothing to index")
    return text


def _decode(data: bytes, rel: str) -> str:
    """``data`` decoded as :func:`read_text` says (UTF-16/32 by their byte-order mark, else UTF-8).

    Raises:
        SourceError: binary (a NUL byte without a UTF-16/32 mark) or not valid in its encoding."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return _decode_bom(data, encoding, rel)
    if b"\0" in data[:8192]:
        raise SourceError(rel, "binary file (NUL bytes); not a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(
            rel, f"not valid UTF-8 at line {line} (byte offset {exc.start}); convert it with e.g. `iconv -f latin1 -t utf-8`"
        ) from exc


def _decode_bom(data: bytes, encoding: str, rel: str) -> str:
    """``data`` (starting with its byte-order mark) decoded as ``encoding``.

    Raises:
        SourceError: not valid in that encoding (names the character offset)."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            rel,
            f"starts with a {encoding.upper()} byte-order mark but is not valid {encoding.upper()} "
            f"at byte offset {exc.start}; convert it with e.g. `iconv -f {encoding} -t utf-8`",
        ) from exc


def load_document(src: SourceFile, corpus: str, max_bytes: int) -> Document:
    """A :class:`Document` for ``src`` (text as on disk; chunkers normalise line endings)."""
    return Document(path=src.rel, text=read_text(src.path, src.rel, max_bytes), corpus=corpus)
