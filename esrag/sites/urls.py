"""Page paths of a source file on the published site, per generator.

Each rule maps a file's path *relative to the generator's source folder* (MkDocs ``docs_dir``,
mdBook ``src``, the Sphinx source folder, Docusaurus ``docs/``, Hugo ``content/``) to its path
under the site's base URL:

=================  ====================================  ==========================
site               ``a/b.md``                            ``a/index.md`` / README
=================  ====================================  ==========================
mkdocs             ``a/b/`` (``use_directory_urls``)      ``a/``
                   or ``a/b.html``                        (``a/index.html``)
mdbook             ``a/b.html``                           ``a/index.html`` (README)
sphinx             ``a/b.html`` (``html_file_suffix``)    ``a/index.html``
sphinx-dirhtml     ``a/b/``                               ``a/``
docusaurus         ``a/b`` (number prefixes dropped;      ``a``
                   front matter ``id`` / ``slug``)
hugo               ``a/b/`` (lowercased; front matter     ``a/`` (``_index.md``)
                   ``slug`` / ``url``)
github             ``blob/<ref>/a/b.md``                  same
plain              ``a/b``                                ``a/index``
=================  ====================================  ==========================

A front-matter ``permalink`` replaces the path on every site (relative to the base URL).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

_INDEX_STEMS = ("index", "readme")
_NUMBER_PREFIX = re.compile(r"^\d+[-_.]\s*")


def _split(rel: str) -> tuple[str, str, str]:
    """``("a", "b", ".md")`` for ``a/b.md``."""
    folder, name = posixpath.split(rel)
    stem, ext = posixpath.splitext(name)
    return folder, stem, ext


def _dir(folder: str) -> str:
    return f"{folder}/" if folder else ""


def mkdocs_path(rel: str, directory_urls: bool = True) -> str:
    """MkDocs ``File.url``: ``index.md``/``README.md`` are the folder's page."""
    folder, stem, _ = _split(rel)
    if stem.lower() in _INDEX_STEMS:
        return _dir(folder) if directory_urls else f"{_dir(folder)}index.html"
    return f"{_dir(folder)}{stem}/" if directory_urls else f"{_dir(folder)}{stem}.html"


def mdbook_path(rel: str) -> str:
    """mdBook: ``.md`` -> ``.html``; ``README.md`` -> ``index.html`` (the index preprocessor)."""
    folder, stem, _ = _split(rel)
    return f"{_dir(folder)}{'index' if stem.lower() == 'readme' else stem}.html"


def sphinx_path(rel: str, suffix: str = ".html") -> str:
    """Sphinx ``html`` builder: the document name plus ``html_file_suffix``."""
    folder, stem, _ = _split(rel)
    return f"{_dir(folder)}{stem}{suffix}"


def sphinx_dirhtml_path(rel: str) -> str:
    """Sphinx ``dirhtml`` builder: ``a/b`` -> ``a/b/``, ``a/index`` -> ``a/``."""
    folder, stem, _ = _split(rel)
    return _dir(folder) if stem == "index" else f"{_dir(folder)}{stem}/"


def docusaurus_path(rel: str, front: dict[str, Any]) -> str:
    """Docusaurus docs plugin: number prefixes (``01-intro``) dropped from every segment,
    ``index``/``README`` (or a file named like its folder) is the folder's page, front matter
    ``id`` replaces the file name and ``slug`` (absolute ``/x`` or relative) the whole path."""
    folder, stem, _ = _split(rel)
    parts = [_NUMBER_PREFIX.sub("", p) for p in folder.split("/") if p]
    name = str(front.get("id") or _NUMBER_PREFIX.sub("", stem))
    slug = front.get("slug")
    if isinstance(slug, str) and slug:
        return slug.lstrip("/") if slug.startswith("/") else "/".join([*parts, slug])
    if name.lower() in _INDEX_STEMS or (parts and name == parts[-1] and "id" not in front):
        return "/".join(parts)
    return "/".join([*parts, name])


def hugo_path(rel: str, front: dict[str, Any]) -> str:
    """Hugo (default permalinks, ``disablePathToLower = false``): ``a/b.md`` -> ``a/b/``,
    ``a/_index.md`` and the leaf bundle ``a/index.md`` -> ``a/``; front matter ``url``
    replaces the path, ``slug`` the last segment."""
    url = front.get("url")
    if isinstance(url, str) and url:
        return url.lstrip("/")
    folder, stem, _ = _split(rel)
    slug = front.get("slug")
    if stem in ("_index", "index"):
        path = _dir(folder)
    else:
        path = f"{_dir(folder)}{slug if isinstance(slug, str) and slug else stem}/"
    return path.lower()


def plain_path(rel: str) -> str:
    """The path without its extension (``a/b.md`` -> ``a/b``)."""
    folder, stem, _ = _split(rel)
    return f"{_dir(folder)}{stem}"


def page_path(site: str, rel: str, front: dict[str, Any], directory_urls: bool = True, suffix: str = ".html", ref: str = "HEAD") -> str:
    """The page path of ``rel`` (relative to the generator's source folder) under the base URL.

    Raises:
        KeyError: unknown site.
    """
    permalink = front.get("permalink")
    if isinstance(permalink, str) and permalink:
        return permalink.lstrip("/")
    rules = {
        "mkdocs": lambda: mkdocs_path(rel, directory_urls),
        "mdbook": lambda: mdbook_path(rel),
        "sphinx": lambda: sphinx_path(rel, suffix),
        "sphinx-dirhtml": lambda: sphinx_dirhtml_path(rel),
        "docusaurus": lambda: docusaurus_path(rel, front),
        "hugo": lambda: hugo_path(rel, front),
        "github": lambda: f"blob/{ref}/{rel}",
        "plain": lambda: plain_path(rel),
    }
    return rules[site]()
