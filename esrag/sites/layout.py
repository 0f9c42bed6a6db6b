"""What a generator that publishes files from several folders (versions, languages, mounts) tells
esrag about one source file: :class:`Placement` (where the page is published, its version and
language) or a skip reason, and the ``site`` block of the ingest summary.

A :class:`Layout` is built from the generator's own configuration by its module
(:mod:`esrag.sites.docusaurus`, :mod:`esrag.sites.hugo`, :mod:`esrag.sites.vitepress`,
:mod:`esrag.sites.starlight`) and carried by :class:`esrag.sites.Site`; generators without one
keep the single ``pages_dir`` rule (:attr:`esrag.sites.generator.Generator.page_path`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: skip reasons (keys of the ingest summary's ``file_report.skipped``) a layout may give.
OUTSIDE = "outside the generator's content folders"
EXCLUDED = "excluded by the generator's configuration"
NOT_BUILT = "not built by the generator (headless or render: never)"


def up_to_repository_root(start: Path) -> list[Path]:
    """``start`` and the folders above it, up to and including the first that holds ``.git``
    (a folder, or a file in a worktree or submodule) or the filesystem root."""
    out = []
    for folder in (start, *start.parents):
        out.append(folder)
        if (folder / ".git").exists():
            break
    return out


@dataclass(slots=True)
class Placement:
    """Where one source file is published.

    Attributes:
        path: the page path under the site's base URL, without a leading ``/`` ('' = the base
            URL itself), as the generator writes it (e.g. ``docs/next/guides/intro``).
        doc_version: the documentation version the file belongs to ('' = unversioned).
        language: the page's language or locale ('' = the site's only one).
        alt_paths: other page paths that show the same page (Hugo ``aliases``), same form.
        translation: the page belongs to a locale other than the site's default one (what a
            reader gets without choosing a language): a search without a language filter leaves
            it out (:class:`esrag.stores.base.Filters`).
    """

    path: str
    doc_version: str = ""
    language: str = ""
    alt_paths: list[str] = field(default_factory=list)
    translation: bool = False


@runtime_checkable
class Layout(Protocol):
    """A generator's map from source files to published pages (see the module docstring)."""

    generator: str
    config: Path

    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """Why the generator does not publish ``file`` (absolute path; ``front``: its front
        matter, {} when unread): a short reason, or '' when it is published."""
        ...

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """Where ``file`` is published; None when it is not."""
        ...

    def content_roots(self) -> list[Path]:
        """The absolute folders the generator reads pages from (for the coverage warning)."""
        ...

    def versions(self) -> list[str]:
        """The documentation versions the layout assigns (empty: the site is unversioned)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The ingest summary's ``site`` block: ``versions``, ``languages``, ``suffixes``,
        ``content_dirs`` and generator-specific keys."""
        ...
