"""The one protocol a documentation generator implements: :class:`Generator` (what esrag knows of
the generator) and :class:`Detected` (what one site's configuration says).

A generator is one module under ``esrag/sites/`` (or in a user's package) exposing a
:class:`Generator` object, registered in the ``esrag.sites`` entry-point group::

    [project.entry-points."esrag.sites"]
    vitepress = "esrag.sites.vitepress:GENERATOR"

The registry (:mod:`esrag.sites.registry`) loads every registered generator: ``--site`` choices,
the detection order, the manual's table and the settings reference come from it, so adding a
generator touches its module, its test data and the entry point, nothing else.

What a generator answers:

* ``detect(folder)``: the site whose configuration file lies directly in ``folder`` (a
  :class:`Detected`), or None. Called on the ingested folder, the folders above it up to the
  repository root, and the usual documentation folders below it (:data:`SITE_FOLDERS`);
* ``page_path(rel, front, site)``: the page path under the base URL of a source file
  (``rel``: POSIX path relative to :attr:`Detected.pages_dir`; ``front``: its front matter) —
  not used when the detected site carries a :class:`esrag.sites.layout.Layout`, which places
  every file itself (versions, locales, mounts);
* ``anchors(titles, explicit)``: the anchor of every header of one page, in document order
  (explicit ids win; the generator's slug and duplicate rule for the rest);
* ``title_from_front``: the page title is front matter ``title`` rendered as the page's h1
  (Starlight, Mintlify, Docusaurus…): it heads every section path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from esrag.sites import Site

#: ``anchors(titles, explicit_ids) -> anchors``: one page's header anchors in document order.
AnchorRule = Callable[[Sequence[str], Sequence[str]], list[str]]
#: ``page_path(rel, front_matter, site) -> path under the base URL`` (no leading ``/``).
PagePath = Callable[[str, dict[str, Any], "Site"], str]

#: folders below a repository root where documentation sites live, looked into (nearest first)
#: when no configuration is found in the ingested folder or above it.
SITE_FOLDERS = ("docs", "doc", "website", "site", "documentation", "docs/en", "docs/site", "book")


@dataclass(slots=True)
class Detected:
    """What a generator's configuration says about one site.

    Attributes:
        site: the generator's name (a ``--site`` value).
        pages_dir: the folder holding its pages (absolute).
        base_url: the published base URL from the configuration ('' when it has none, or it is
            not absolute).
        directory_urls, suffix: MkDocs ``use_directory_urls``; Sphinx ``html_file_suffix``.
        config: the configuration file read.
        layout: a :class:`esrag.sites.layout.Layout` when the generator publishes several folders
            or rewrites paths (versions, locales, mounts, rewrites), else None.
        formats: ``{suffix: "rst" | "markdown"}`` — files read in that format whatever their
            suffix says (Sphinx ``source_suffix``);
        include: extra file globs the walk must take in (``*.txt`` for ``source_suffix = ".txt"``);
        skip: ``skip(rel)`` with ``rel`` relative to ``pages_dir``: why the generator leaves a page
            out ('' = built);
        format_options: passed to the format's reader (Sphinx object types);
        anchors: this site's anchor rule when its configuration changes the generator's default
            (MkDocs ``toc.slugify``, Hugo ``autoHeadingIDType``), else None;
        notes: what the reader could not evaluate and how esrag proceeded (shown in the ingest
            summary, e.g. "conf.py extensions computed at build time: every .md file read").
        confidence: how sure the detection is (1.0: the generator's own configuration file;
            lower for a guess from a shared file name such as ``conf.py``).
        found_below: the configuration lies below the ingested folder (a repository ingested
            from its root): files outside the site's pages are not its pages and are skipped,
            named in the summary.
        title: the site's title from its configuration (MkDocs/Zensical ``site_name``, mdBook
            ``[book] title``, Sphinx ``project``, Docusaurus / VitePress / Starlight / Hugo /
            Antora / Jupyter Book ``title``, Mintlify ``name``; GitBook's ``.gitbook.yaml`` and
            Nextra's configuration have none); '' = none, or not a plain string
            (:func:`config_text`).
        description: the site's one-line description from its configuration (MkDocs/Zensical
            ``site_description``, mdBook ``[book] description``, Docusaurus ``tagline``,
            VitePress / Starlight / Mintlify / mystmd ``description``, Hugo
            ``params.description``); '' = none, or not a plain string.
    """

    site: str
    pages_dir: Path
    base_url: str = ""
    directory_urls: bool = True
    suffix: str = ".html"
    config: Path | None = None
    layout: Any = None
    formats: dict[str, str] = field(default_factory=dict)
    include: tuple[str, ...] = ()
    skip: Callable[[str], str] | None = None
    format_options: dict[str, Any] = field(default_factory=dict)
    anchors: AnchorRule | None = None
    notes: list[str] = field(default_factory=list)
    confidence: float = 1.0
    found_below: bool = False
    title: str = ""
    description: str = ""


def config_text(value: Any) -> str:
    """A title or description as a configuration states it: a plain string, stripped, on one line
    (runs of whitespace as one space); '' for anything else (a key not set, a number, a value
    computed at build time, JSX), never a guess."""
    return " ".join(value.split()) if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class Generator:
    """One documentation generator (see the module docstring).

    Attributes:
        name: the ``--site`` value (``vitepress``).
        detect: ``detect(folder) -> Detected | None`` (the configuration in ``folder`` itself).
            None for generators without a configuration (``github``, ``plain``).
        anchors: the generator's default header anchor rule.
        page_path: the page path of a file relative to ``pages_dir`` (None: the detected
            layout places pages).
        config_files: the configuration files it reads, as written in the manual's table.
        summary: one line for the manual: URL rule and anchor rule.
        source: where its rules come from (the generator's source files / docs).
        variants: other ``--site`` values that select this generator with a different page
            rule, ``{name: page_path}`` (``sphinx-dirhtml``).
        priority: detection order among generators whose configuration sits in the same
            folder (lower first).
        title_from_front: front matter ``title`` is rendered as the page's h1.
        html_anchor_is_alt: an ``<a id>`` above a header is an old anchor, the header keeps its
            own (mdBook), instead of being the header's anchor.
        front_matter_after_blank_lines: front matter may follow whitespace-only lines (Astro's
            ``frontmatterRE``), not only open the file.
        h1_anchor: the page's h1 gets an id like any header; False (Nextra's
            ``remark-headings.ts`` skips depth 1): it has none, its section URL is the page URL,
            and the slugger never sees its title.
    """

    name: str
    detect: Callable[[Path], Detected | None] | None
    anchors: AnchorRule
    page_path: PagePath | None = None
    config_files: tuple[str, ...] = ()
    summary: str = ""
    source: str = ""
    variants: dict[str, PagePath] = field(default_factory=dict)
    priority: int = 100
    title_from_front: bool = False
    html_anchor_is_alt: bool = False
    front_matter_after_blank_lines: bool = False
    h1_anchor: bool = True
