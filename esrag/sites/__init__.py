"""Where every chunk is published: page URLs and section anchors per documentation generator.

``Site`` is resolved once per ingest (:func:`resolve_site`) from the flags / ``[corpora.NAME]``
settings and the generator's own config in the tree (:mod:`esrag.sites.generators`), then
applied to each document: :meth:`Site.prepare` reads its front matter (title, description,
tags, URL keys, draft/unlisted) before chunking, :meth:`Site.apply` gives every chunk its
``anchor`` (explicit id, else the generator's slug, :mod:`esrag.sites.slugs`) and ``url``
(base URL + page path, :mod:`esrag.sites.urls`, + ``#anchor``) after chunking.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from esrag.errors import ConfigError
from esrag.model import Chunk, Document
from esrag.sites.frontmatter import is_hidden, parse_front_matter
from esrag.sites.generators import detect
from esrag.sites.slugs import page_anchors
from esrag.sites.urls import page_path, plain_path

#: the ``--site`` values.
SITES = ("mkdocs", "mdbook", "sphinx", "sphinx-dirhtml", "docusaurus", "hugo", "github", "plain")
#: which slug rule a site's headers get when they have no explicit id.
ANCHOR_RULES = {"mkdocs": "mkdocs", "mdbook": "mdbook", "sphinx": "sphinx", "sphinx-dirhtml": "sphinx",
                "docusaurus": "docusaurus", "hugo": "hugo", "github": "github", "plain": "github"}
_MARKDOWN = (".md", ".markdown", ".mdx", ".mdown")


def check_base_url(value: str, where: str = "--base-url") -> str:
    """``value`` if it is an absolute http(s) URL (a ``/`` is appended), else ConfigError."""
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where} must be an absolute http(s) URL such as https://docs.example.com/, got {value!r}")
    return value if value.endswith("/") else value + "/"


def check_site(value: str, where: str = "--site") -> str:
    """``value`` if it is a known site, else ConfigError listing the valid ones."""
    if value not in SITES:
        raise ConfigError(f"{where}: unknown site {value!r}; valid: {', '.join(SITES)}")
    return value


@dataclass(slots=True)
class Site:
    """How one ingested tree is published.

    Attributes:
        site: one of :data:`SITES`.
        root: the ingested folder (source paths are relative to it).
        pages_dir: the generator's source folder (pages outside it get no URL).
        base_url: absolute base URL ending in ``/`` ('' = no URLs, anchors only).
        url_template: a ``str.format`` template overriding the site's rule, with ``{base_url}``,
            ``{page}`` (the site rule's page path), ``{path}`` (file path without extension),
            ``{file}``, ``{stem}``, ``{anchor}``, ``{doc_version}``; ``#anchor`` is appended
            unless the template uses ``{anchor}``.
        doc_version: replaces ``{doc_version}`` in ``base_url``.
        directory_urls, suffix: MkDocs ``use_directory_urls``; Sphinx ``html_file_suffix``.
        ref: the git ref of ``github`` URLs.
    """

    site: str
    root: Path
    pages_dir: Path
    base_url: str = ""
    url_template: str = ""
    doc_version: str = ""
    directory_urls: bool = True
    suffix: str = ".html"
    ref: str = "HEAD"

    def prepare(self, doc: Document) -> str:
        """Read ``doc``'s front matter into it (title, ``description``/``tags`` metadata).

        Returns:
            ``"draft"``/``"unlisted"`` when the page is hidden and must be left out, else ''.
        Raises:
            SourceError: invalid front matter (names the file and line).
        """
        if not doc.path.lower().endswith(_MARKDOWN):
            return ""
        front = parse_front_matter(doc.text, doc.path)
        doc.front_matter = front
        if isinstance(front.get("title"), (str, int, float)) and str(front["title"]).strip():
            doc.title = str(front["title"]).strip()
        if isinstance(front.get("description"), str) and front["description"].strip():
            doc.metadata["description"] = front["description"].strip()
        tags = front.get("tags")
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        if isinstance(tags, list) and tags:
            doc.metadata["tags"] = [str(t) for t in tags]
        return is_hidden(front)

    def page_url(self, doc: Document) -> str:
        """The page's absolute URL without anchor ('' when there is no base URL or the file
        lies outside the generator's source folder)."""
        return self.chunk_url(doc, "")

    def chunk_url(self, doc: Document, anchor: str) -> str:
        """The URL of one section of ``doc``: base URL + page path (or ``url_template``) +
        ``#anchor`` ('' as :meth:`page_url`).

        Raises:
            ConfigError: ``url_template`` names an unknown placeholder.
        """
        rel = self._page_rel(doc.path)
        if rel is None or not (self.base_url or self.url_template):
            return ""
        page = page_path(self.site, rel, doc.front_matter, self.directory_urls, self.suffix, self.ref)
        base = self.base_url.replace("{doc_version}", self.doc_version)
        if not self.url_template:
            return f"{base}{page}#{anchor}" if anchor else f"{base}{page}"
        values = {"base_url": base, "page": page, "path": plain_path(rel), "file": rel, "stem": Path(rel).stem,
                  "anchor": anchor, "doc_version": self.doc_version}
        try:
            url = self.url_template.format(**values)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(f"url_template {self.url_template!r}: unknown placeholder {exc}; use "
                              + ", ".join("{" + k + "}" for k in values)) from None
        return url if "{anchor}" in self.url_template or not anchor else f"{url}#{anchor}"

    def apply(self, doc: Document, chunks: list[Chunk]) -> None:
        """Give each chunk the anchor of its section and its URL (in place)."""
        titles = [h.title for h in doc.headers]
        anchors = page_anchors(ANCHOR_RULES[self.site], titles, [h.anchor for h in doc.headers]) if titles else []
        by_path: dict[str, list[tuple[int, str]]] = {}
        for h, a in zip(doc.headers, anchors):
            by_path.setdefault(h.section_path, []).append((h.line, a))
        for c in chunks:
            anchor = ""
            for line, a in by_path.get(c.section_path, []) if c.section_path else []:
                if line <= c.end_line:
                    anchor = a
            c.anchor = anchor
            c.url = self.chunk_url(doc, anchor)

    def _page_rel(self, rel: str) -> str | None:
        path = (self.root / rel).resolve()
        try:
            return path.relative_to(self.pages_dir.resolve()).as_posix()
        except ValueError:
            return None


def _git_ref(root: Path) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "HEAD"
    ref = proc.stdout.strip()
    return ref if proc.returncode == 0 and ref and ref != "HEAD" else "HEAD"


def _git_toplevel(root: Path) -> Path | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None


def resolve_site(root: Path, site: str | None = None, base_url: str | None = None, url_template: str | None = None,
                 doc_version: str = "", where: str = "--site") -> Site:
    """The :class:`Site` of an ingest of ``root``.

    ``site`` None: the generator whose config is found in ``root`` or its parent
    (:func:`esrag.sites.generators.detect`), else ``plain``. ``base_url`` None: the config's
    (MkDocs ``site_url``, mdBook ``site-url``, Sphinx ``html_baseurl``, Docusaurus
    ``url``+``baseUrl``, Hugo ``baseURL``) when absolute, else none (anchors only).

    Raises:
        ConfigError: unknown site, or a base URL that is not absolute http(s) (names ``where``
            / ``--base-url``).
    """
    if site is not None:
        check_site(site, where)
    if base_url:
        base_url = check_base_url(base_url, "--base-url" if where == "--site" else where.replace("site", "base_url"))
    root = root.resolve()
    folder = root if root.is_dir() else root.parent
    found = detect(root, site) if site not in ("github", "plain") else None
    chosen = site or (found.site if found else "plain")
    base = base_url or ""
    if not base and found is not None and found.base_url.startswith(("http://", "https://")):
        base = check_base_url(found.base_url, str(found.config))
    pages = found.pages_dir if found is not None and found.site.split("-")[0] == chosen.split("-")[0] else folder
    ref = "HEAD"
    if chosen == "github":
        pages = _git_toplevel(folder) or folder
        ref = _git_ref(folder)
        if base and ("/blob/" in base or "/tree/" in base):  # the base already names the ref
            base, url_template = base.replace("/tree/", "/blob/"), url_template or "{base_url}{file}"
    return Site(chosen, folder, pages, base, url_template or "", doc_version,
                found.directory_urls if found else True, found.suffix if found else ".html", ref)

