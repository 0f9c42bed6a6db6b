"""Reading a documentation generator's own configuration from the ingested tree.

Looked for in the ingested folder and its parent (so ``esrag ingest repo/docs`` finds
``repo/mkdocs.yml``):

* ``mkdocs.yml``: ``docs_dir`` (default ``docs``), ``use_directory_urls`` (default true),
  ``site_url``;
* ``book.toml``: ``[book] src`` (default ``src``), ``[output.html] site-url``; a path-only
  ``site-url`` with a GitHub ``git-repository-url`` gives the GitHub Pages URL
  (``https://OWNER.github.io`` + ``site-url``);
* Sphinx ``conf.py`` (also ``docs/``, ``source/``, ``doc/``): ``html_baseurl``,
  ``html_file_suffix``; a ``builder: dirhtml`` in ``.readthedocs.y(a)ml`` or a ``dirhtml``
  default in the Makefile picks ``sphinx-dirhtml``;
* ``docusaurus.config.{js,ts,mjs}``: ``url`` + ``baseUrl`` + the docs plugin's
  ``routeBasePath`` (default ``docs``; ``"/"`` for docs-only sites);
* Hugo ``hugo.{toml,yaml,json}`` / ``config.toml`` beside ``content/``: ``baseURL``,
  ``contentDir`` (top level, or the default language's).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(slots=True)
class Detected:
    """What a generator's config says: ``site`` name, the folder holding its pages, its base
    URL ('' when the config has none), and URL options."""

    site: str
    pages_dir: Path
    base_url: str = ""
    directory_urls: bool = True
    suffix: str = ".html"
    config: Path | None = None


class _LenientLoader(yaml.SafeLoader):
    """SafeLoader that reads ``!!python/name:…`` and other custom tags (common in mkdocs.yml) as None."""


_LenientLoader.add_multi_constructor("", lambda loader, suffix, node: None)
_LenientLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _mkdocs(folder: Path) -> Detected | None:
    for name in ("mkdocs.yml", "mkdocs.yaml"):
        path = folder / name
        if path.is_file():
            try:
                cfg = yaml.load(path.read_text(encoding="utf-8"), Loader=_LenientLoader) or {}
            except yaml.YAMLError:
                cfg = {}
            cfg = cfg if isinstance(cfg, dict) else {}
            return Detected("mkdocs", folder / str(cfg.get("docs_dir") or "docs"), str(cfg.get("site_url") or ""),
                            cfg.get("use_directory_urls", True) is not False, config=path)
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
    return Detected("mdbook", folder / str(cfg.get("book", {}).get("src") or "src"), base, config=path)


def _conf_value(text: str, name: str) -> str:
    m = re.search(rf"^{name}\s*=\s*['\"]([^'\"]*)['\"]", text, re.MULTILINE)
    return m.group(1) if m else ""


def _sphinx(folder: Path) -> Detected | None:
    for sub in ("", "docs", "source", "doc", "docs/source"):
        conf = folder / sub / "conf.py"
        if conf.is_file():
            text = conf.read_text(encoding="utf-8", errors="replace")
            site = "sphinx-dirhtml" if _dirhtml_hint(folder, conf.parent) else "sphinx"
            return Detected(site, conf.parent, _conf_value(text, "html_baseurl"),
                            suffix=_conf_value(text, "html_file_suffix") or ".html", config=conf)
    return None


def _dirhtml_hint(*folders: Path) -> bool:
    for folder in folders:
        for name in (".readthedocs.yaml", ".readthedocs.yml"):
            p = folder / name
            if p.is_file() and re.search(r"builder:\s*['\"]?dirhtml", p.read_text(encoding="utf-8", errors="replace")):
                return True
    return False


def _docusaurus(folder: Path) -> Detected | None:
    for name in ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs"):
        path = folder / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            url = re.search(r"\burl:\s*['\"]([^'\"]+)['\"]", text)
            base = re.search(r"\bbaseUrl:\s*['\"]([^'\"]+)['\"]", text)
            route = re.search(r"\brouteBasePath:\s*['\"]([^'\"]*)['\"]", text)
            prefix = (route.group(1) if route else "docs").strip("/")
            full = re.sub(r"(?<!:)/{2,}", "/", f"{url.group(1)}/{base.group(1) if base else ''}/{prefix}/") if url else ""
            return Detected("docusaurus", folder / "docs", full, config=path)
    return None


def _hugo(folder: Path) -> Detected | None:
    if not (folder / "content").is_dir():
        return None
    for name in ("hugo.toml", "config.toml", "hugo.yaml", "config.yaml", "hugo.json", "config.json"):
        path = folder / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            try:
                cfg = tomllib.loads(text) if name.endswith(".toml") else json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
            except (tomllib.TOMLDecodeError, json.JSONDecodeError, yaml.YAMLError):
                cfg = {}
            cfg = cfg if isinstance(cfg, dict) else {}
            base = str(cfg.get("baseURL") or cfg.get("baseurl") or "")
            lang = (cfg.get("languages") or {}).get(cfg.get("defaultContentLanguage", "en")) or {}
            content = cfg.get("contentDir") or (lang.get("contentDir") if isinstance(lang, dict) else None) or "content"
            return Detected("hugo", folder / str(content), base, config=path)
    return None


_DETECTORS = (_mkdocs, _mdbook, _docusaurus, _hugo, _sphinx)


def detect(root: Path, site: str | None = None) -> Detected | None:
    """The generator config governing ``root`` (a folder or a file), or None.

    With ``site`` given only that generator's config is looked for (``sphinx-dirhtml`` reads
    Sphinx's; ``github``/``plain`` have none)."""
    root = root.resolve()
    start = root if root.is_dir() else root.parent
    wanted = {"sphinx-dirhtml": "sphinx"}.get(site or "", site)
    for folder in (start, start.parent):
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
