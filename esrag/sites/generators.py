"""Reading a documentation generator's own configuration from the ingested tree.

Looked for in the ingested folder and the folders above it, up to the repository root (the
first folder holding ``.git``) or the filesystem root, nearest first (so ``esrag ingest
repo/docs`` finds ``repo/mkdocs.yml``):

* ``mkdocs.yml`` (:mod:`esrag.sites.mkdocs`): ``docs_dir`` (default ``docs``),
  ``use_directory_urls`` (default true), ``site_url``, ``exclude_docs`` / ``draft_docs``, the
  ``toc`` extension's ``slugify``;
* ``book.toml``: ``[book] src`` (default ``src``), ``[output.html] site-url``; a path-only
  ``site-url`` with a GitHub ``git-repository-url`` gives the GitHub Pages URL
  (``https://OWNER.github.io`` + ``site-url``);
* Sphinx ``conf.py`` (also ``docs/``, ``source/``, ``doc/``), read with :mod:`ast`
  (:mod:`esrag.sites.sphinx`, never executed): ``html_baseurl``, ``html_file_suffix``,
  ``source_suffix`` (the files read, as reStructuredText or Markdown), ``exclude_patterns``,
  ``root_doc``, object types its extensions register; a ``builder: dirhtml`` in ``.readthedocs.y(a)ml`` or a ``dirhtml``
  default in the Makefile picks ``sphinx-dirhtml``;
* ``docusaurus.config.{js,ts,mjs,cjs}``: read as code by :mod:`esrag.sites.docusaurus` (every
  docs plugin instance, versions, locales; ``url`` + ``baseUrl``);
* Hugo ``hugo.{toml,yaml,json}``, ``config/_default/``, or ``config.*`` beside ``content/``:
  read by :mod:`esrag.sites.hugo` (``baseURL``, content mounts, languages).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from esrag.sites.docusaurus import matches as docusaurus_matches
from esrag.sites.docusaurus import read_docusaurus
from esrag.sites.hugo import read_hugo
from esrag.sites.layout import up_to_repository_root
from esrag.sites.mkdocs import read_mkdocs
from esrag.sites.sphinx import read_conf


@dataclass(slots=True)
class Detected:
    """What a generator's config says: ``site`` name, the folder holding its pages, its base
    URL ('' when the config has none), URL options, and for generators that publish several
    folders (Docusaurus, Hugo) their :class:`esrag.sites.layout.Layout`.

    How the generator reads its pages (defaults: by suffix, nothing skipped):

    * ``formats``: ``{suffix: "rst" | "markdown"}`` — files with these suffixes are read in that
      format whatever ``chunking.rst_suffixes`` says (Sphinx ``source_suffix``);
    * ``include``: extra file globs the walk must take in (``*.txt`` for ``source_suffix = ".txt"``);
    * ``skip``: ``skip(rel)`` with ``rel`` relative to ``pages_dir`` gives the reason the
      generator leaves a page out ('' = built);
    * ``format_options``: passed to the format's reader (Sphinx object types registered in
      conf.py: ``{"object_types": {...}, "crossref_types": [...]}``);
    * ``slugify``: the header slug rule the config names (MkDocs ``toc`` ``slugify``), None =
      the generator's default.
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
    slugify: Callable[[str], str] | None = None


class _LenientLoader(yaml.SafeLoader):
    """SafeLoader that reads ``!!python/name:…`` and other custom tags (common in mkdocs.yml) as None."""


_LenientLoader.add_multi_constructor("", lambda loader, suffix, node: None)
_LenientLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _mkdocs(folder: Path) -> Detected | None:
    for name in ("mkdocs.yml", "mkdocs.yaml"):
        path = folder / name
        if path.is_file():
            cfg = read_mkdocs(path)
            return Detected(
                "mkdocs", cfg.docs_dir, cfg.site_url, cfg.use_directory_urls, config=path, skip=cfg.excluded, slugify=cfg.slugify
            )
    return None


def _mdbook(folder: Path) -> Detected | None:
    path = folder / "book.toml"
    if not path.is_file():
        return None
    try:
        cfg = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        cfg = {}
    html = cfg.get("output", {}).get("html", {}) if isinstance(cfg.get("output"), dict) else {}
    site_url = str(html.get("site-url") or "")
    base = site_url if site_url.startswith(("http://", "https://")) else ""
    repo = re.match(r"https?://github\.com/([^/]+)/", str(html.get("git-repository-url") or "") + "/")
    if not base and site_url.startswith("/") and repo:
        base = f"https://{repo.group(1).lower()}.github.io{site_url}"
    src = folder / str(cfg.get("book", {}).get("src") or "src")
    return Detected("mdbook", src, base, config=path, skip=_SummaryChapters(src / "SUMMARY.md"))


class _SummaryChapters:
    """mdBook builds the chapters ``SUMMARY.md`` links to, nothing else (``book::load_book``;
    SUMMARY.md itself is the table of contents). Called with a path relative to ``src``: the
    reason the page is not built, or ''. The links are read with markdown-it-py; a book without
    a readable SUMMARY.md leaves every page in."""

    def __init__(self, summary: Path) -> None:
        self.summary = summary
        self._chapters: set[str] | None = None

    def chapters(self) -> set[str]:
        """The chapter paths (relative to ``src``, POSIX, no ``./``) SUMMARY.md links to."""
        if self._chapters is None:
            from urllib.parse import unquote

            from markdown_it import MarkdownIt

            try:
                text = self.summary.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            found = set()
            for token in MarkdownIt("commonmark").parse(text):
                for child in token.children or ():
                    href = str(child.attrs.get("href") or "") if child.type == "link_open" else ""
                    if href and "://" not in href:
                        found.add(unquote(href.split("#", 1)[0]).removeprefix("./"))
            self._chapters = found
        return self._chapters

    def __call__(self, rel: str) -> str:
        if rel == "SUMMARY.md":
            return "SUMMARY.md is mdBook's table of contents, not a page"
        chapters = self.chapters()
        if chapters and rel.lower().endswith((".md", ".markdown")) and rel not in chapters:
            return "not a chapter of SUMMARY.md"
        return ""


def _sphinx(folder: Path) -> Detected | None:
    for sub in ("", "docs", "source", "doc", "docs/source"):
        conf = folder / sub / "conf.py"
        if conf.is_file():
            cfg = read_conf(conf.resolve())
            site = "sphinx-dirhtml" if _dirhtml_hint(folder, conf.parent) else "sphinx"
            kinds = {"restructuredtext": "rst", "markdown": "markdown"}
            formats = {s: kinds[k] for s, k in cfg.suffixes.items() if k in kinds}
            include = tuple(f"*{s}" for s in cfg.suffixes)
            options = {"object_types": dict(cfg.object_types), "crossref_types": list(cfg.crossref_types)}
            return Detected(
                site,
                conf.parent,
                cfg.base_url,
                suffix=cfg.file_suffix,
                config=conf,
                formats=formats,
                include=include,
                skip=cfg.excluded,
                format_options=options,
            )
    return None


def _dirhtml_hint(*folders: Path) -> bool:
    for folder in folders:
        for name in (".readthedocs.yaml", ".readthedocs.yml"):
            p = folder / name
            if p.is_file() and re.search(r"builder:\s*['\"]?dirhtml", p.read_text(encoding="utf-8", errors="replace")):
                return True
    return False


def _docusaurus(folder: Path) -> Detected | None:
    if not docusaurus_matches(folder):
        return None
    layout = read_docusaurus(folder)
    assert layout is not None
    first = next((v.content_dir for p in layout.plugins for v in p.versions), folder / "docs")
    return Detected("docusaurus", first, layout.base_url, config=layout.config, layout=layout)


def _hugo(folder: Path) -> Detected | None:
    layout = read_hugo(folder)
    if layout is None:
        return None
    return Detected("hugo", layout.mounts[0].source, layout.base_url, config=layout.config, layout=layout)


_DETECTORS = (_mkdocs, _mdbook, _docusaurus, _hugo, _sphinx)


def detect(root: Path, site: str | None = None) -> Detected | None:
    """The generator config governing ``root`` (a folder or a file), or None: the nearest one
    in ``root`` or above it, up to the repository root (:func:`esrag.sites.layout.up_to_repository_root`).

    With ``site`` given only that generator's config is looked for (``sphinx-dirhtml`` reads
    Sphinx's; ``github``/``plain`` have none).

    Raises:
        ConfigError: a Docusaurus or Hugo configuration that cannot be read (names the file).
    """
    root = root.resolve()
    start = root if root.is_dir() else root.parent
    wanted = {"sphinx-dirhtml": "sphinx"}.get(site or "", site)
    for folder in up_to_repository_root(start):
        for fn in _DETECTORS:
            if wanted and fn.__name__ != f"_{wanted}":
                continue
            found = fn(folder)
            if found is not None:
                if site == "sphinx-dirhtml":
                    found.site = site
                elif site == "sphinx":
                    found.site = "sphinx"
                return found
    return None
