"""Zensical (Material for MkDocs' successor): ``zensical.toml`` read as Zensical reads it, with
MkDocs' page and anchor rules (:mod:`esrag.sites.mkdocs`, imported, not copied).

Sources: zensical 0.0.73 ``zensical/main.py`` (``execute_build``: the configuration is the first of
``zensical.toml``, ``mkdocs.yml``, ``mkdocs.yaml`` in the folder) and ``zensical/config.py``
(``parse_zensical_config``: the settings are the ``[project]`` table when there is one, else the
whole file; ``_apply_defaults``: ``docs_dir`` default ``docs``, ``site_url``, ``use_directory_urls``
default true, ``exclude_docs`` / ``draft_docs`` / ``not_in_nav`` as MkDocs' multi-line gitignore
patterns; ``_convert_markdown_extensions``: ``markdown_extensions`` as a table or a list, the
``toc`` extension always on; ``site_name`` / ``site_description``: the title and description; ``_resolve_toc``: a ``toc`` ``slugify`` table ``{object, kwds}`` is
``object(**kwds)``, ``object`` defaulting to ``pymdownx.slugs.slugify``; ``_apply_offline_plugin``:
the ``offline`` plugin, enabled when listed, turns ``use_directory_urls`` off); the Rust
``crates/zensical/src/structure/page.rs`` (``Page::new``: ``a/b.md`` -> ``a/b/`` or ``a/b.html``,
``index.md`` and ``README.md`` are the folder's page, as MkDocs ``File.url``).

Telling Zensical from MkDocs: a folder holding ``zensical.toml`` is Zensical's (its CLI reads that
file first, even with a ``mkdocs.yml`` beside it), detected before MkDocs (priority 5 < 10). A
folder with only ``mkdocs.yml`` stays the ``mkdocs`` generator: Zensical builds it unchanged with
the same page, skip and anchor rules, so the URLs are the same whichever builds it.
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

from esrag.sites.generator import Detected, Generator
from esrag.sites.mkdocs import PyApply, conf_from
from esrag.sites.mkdocs import page_path as mkdocs_page_path
from esrag.sites.slugs import mkdocs_page_anchors

CONFIG = "zensical.toml"


class ZensicalConfigError(ValueError):
    """``zensical.toml`` cannot be read (the message names the file)."""


def load_toml(path: Path) -> dict[str, Any]:
    """The project settings of ``zensical.toml`` at ``path``: its ``[project]`` table, or the
    whole file when it has none (``parse_zensical_config``).

    Raises:
        ZensicalConfigError: the file is unreadable or not TOML (message: file and TOML error).
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ZensicalConfigError(f"{path}: not readable as TOML ({exc})") from exc
    project = data.get("project")
    return project if isinstance(project, dict) else data


def _toc_table(extensions: Any) -> dict[str, Any] | None:
    """The ``toc`` settings in a ``markdown_extensions`` table or list, or None."""
    if isinstance(extensions, dict):
        value = extensions.get("toc")
        return value if isinstance(value, dict) else None
    for item in extensions if isinstance(extensions, list) else ():
        if isinstance(item, dict) and isinstance(item.get("toc"), dict):
            return item["toc"]
    return None


def as_mkdocs(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` (``[project]``) with what Zensical resolves itself put as MkDocs would hold it:

    * a ``toc`` ``slugify`` table ``{object = NAME, kwds = {...}}`` -> the call it makes
      (:class:`esrag.sites.mkdocs.PyApply`, ``object`` defaulting to ``pymdownx.slugs.slugify``);
    * the ``offline`` plugin listed and not ``enabled = false`` -> ``use_directory_urls = false``.
    """
    out = dict(cfg)
    toc = _toc_table(cfg.get("markdown_extensions"))
    if toc is not None and isinstance(toc.get("slugify"), dict):
        slug = toc["slugify"]
        resolved = PyApply(str(slug.get("object", "pymdownx.slugs.slugify")), (), dict(slug.get("kwds") or {}))
        out["markdown_extensions"] = [{"toc": {**toc, "slugify": resolved}}]
    if _offline(cfg.get("plugins")):
        out["use_directory_urls"] = False
    return out


def _offline(plugins: Any) -> bool:
    """The ``offline`` plugin is on: listed (a table key or a list item, as ``_convert_plugins``
    reads ``plugins``) and not ``enabled = false``."""
    table: dict[str, Any] = {}
    if isinstance(plugins, dict):
        table = plugins
    elif isinstance(plugins, list):
        for item in plugins:
            table.update({item: {}} if isinstance(item, str) else item if isinstance(item, dict) else {})
    settings = table.get("offline")
    return "offline" in table and not (isinstance(settings, dict) and settings.get("enabled") is False)


def detect(folder: Path) -> Detected | None:
    """The Zensical site whose ``zensical.toml`` lies in ``folder`` (see the module docstring).
    An unreadable file is still Zensical's: MkDocs' defaults, and a note naming the file."""
    path = folder / CONFIG
    if not path.is_file():
        return None
    notes: list[str] = []
    try:
        cfg = as_mkdocs(load_toml(path))
    except ZensicalConfigError as exc:
        cfg, notes = {}, [f"{exc}: Zensical's defaults used (docs_dir 'docs')"]
    if not isinstance(cfg.get("docs_dir", "docs"), str) or not cfg.get("docs_dir", "docs"):
        notes.append(f"{path}: docs_dir must be a non-empty string: 'docs' used")
        cfg["docs_dir"] = "docs"
    conf = conf_from(path, cfg)
    if conf.slugify_unknown:
        notes.append(f"{path}: toc slugify {conf.slugify_unknown} is not known: Python-Markdown's default slug is used")
    return Detected(
        "zensical",
        conf.docs_dir,
        conf.site_url,
        conf.use_directory_urls,
        config=path,
        skip=conf.excluded,
        anchors=functools.partial(mkdocs_page_anchors, slug=conf.slugify) if conf.slugify is not None else None,
        notes=notes,
        title=conf.site_name,
        description=conf.site_description,
    )


GENERATOR = Generator(
    name="zensical",
    detect=detect,
    anchors=mkdocs_page_anchors,
    page_path=mkdocs_page_path,
    config_files=(CONFIG,),
    summary="as MkDocs: `a/b.md` -> `a/b/` (`use_directory_urls`, off with the `offline` plugin) or `a/b.html`; "
    "anchors Python-Markdown `toc` slugify (or `toc.slugify = {object, kwds}`), duplicates `_1`",
    source="zensical/main.py, zensical/config.py (0.0.73); crates/zensical/src/structure/page.rs; markdown/extensions/toc.py",
    priority=5,
)
