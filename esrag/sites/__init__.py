"""Where every chunk is published: page URLs and section anchors per documentation generator.

``Site`` is resolved once per ingest (:func:`resolve_site`) from the flags / ``[corpora.NAME]``
settings and the generator's own config in the tree (:mod:`esrag.sites.generators`), then
applied to each document: :meth:`Site.prepare` reads its front matter (title, description,
tags, URL keys, draft/unlisted) before chunking, :meth:`Site.apply` gives every chunk its
``anchor`` (explicit id, else the generator's slug, :mod:`esrag.sites.slugs`) and ``url``
(base URL + page path, :mod:`esrag.sites.urls`, + ``#anchor``) after chunking.

Docusaurus and Hugo sites carry a :class:`esrag.sites.layout.Layout` read from their own
configuration (:mod:`esrag.sites.docusaurus`, :mod:`esrag.sites.hugo`): it says which files
the generator publishes (:meth:`Site.prepare` returns the reason for the others), at which page
path, in which documentation version and language.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError
from esrag.model import Chunk, Document
from esrag.sites.frontmatter import is_hidden, parse_front_matter
from esrag.sites.generators import detect
from esrag.sites.layout import Layout
from esrag.sites.slugs import mkdocs_page_anchors, page_anchors
from esrag.sites.urls import page_path, plain_path

#: the ``--site`` values.
SITES = ("mkdocs", "mdbook", "sphinx", "sphinx-dirhtml", "docusaurus", "hugo", "github", "plain")
#: which slug rule a site's headers get when they have no explicit id.
ANCHOR_RULES = {
    "mkdocs": "mkdocs",
    "mdbook": "mdbook",
    "sphinx": "sphinx",
    "sphinx-dirhtml": "sphinx",
    "docusaurus": "docusaurus",
    "hugo": "hugo",
    "github": "github",
    "plain": "github",
}
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


#: the placeholders of a ``url_template`` (:attr:`Site.url_template`)
URL_PLACEHOLDERS = ("base_url", "page", "path", "file", "stem", "anchor", "doc_version")


def check_url_template(template: str, where: str = "--url-template") -> str:
    """``template`` if it formats with :data:`URL_PLACEHOLDERS` (checked once, before any file
    is read), else ConfigError naming ``where``, the fault and the valid placeholders."""
    try:
        template.format(**{k: "x" for k in URL_PLACEHOLDERS})
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        fault = f"unknown placeholder {exc}" if isinstance(exc, (KeyError, IndexError)) else str(exc)
        raise ConfigError(
            f"{where}: url_template {template!r}: {fault}; use "
            + ", ".join("{" + k + "}" for k in URL_PLACEHOLDERS)
            + " (write {{ and }} for braces)"
        ) from None
    return template


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
        layout: the generator's :class:`esrag.sites.layout.Layout` (Docusaurus, Hugo), or None.
        config: the generator's configuration file that was read (None: none).
        formats, include, skip, format_options, slugify: how the generator reads its pages and
            makes header ids (:class:`esrag.sites.generators.Detected`).
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
    layout: Layout | None = None
    config: Path | None = None
    formats: dict[str, str] = field(default_factory=dict)
    include: tuple[str, ...] = ()
    skip: Callable[[str], str] | None = None
    format_options: dict[str, Any] = field(default_factory=dict)
    slugify: Callable[[str], str] | None = None

    def read_as(self, doc: Document) -> None:
        """Set ``doc.format`` / ``doc.format_options`` as the generator reads the file (Sphinx
        ``source_suffix``: ``.txt`` pages are reStructuredText); files outside the generator's
        source folder are left to their suffix."""
        rel = self._page_rel(doc.path)
        if rel is None:
            return
        for suffix, kind in sorted(self.formats.items(), key=lambda kv: -len(kv[0])):
            if rel.endswith(suffix):
                doc.format = kind
                if kind == "rst":
                    doc.format_options = self.format_options
                return

    def prepare(self, doc: Document) -> str:
        """Read ``doc``'s front matter into it (title, ``description``/``tags`` metadata), set its
        format (:meth:`read_as`), and with a layout its documentation version and language.

        Returns:
            ``"draft"``/``"unlisted"`` when the page is hidden and must be left out, the
            generator's reason when its configuration leaves the page out (``skip``, or the
            layout's: outside its content folders, excluded by its configuration, not built…),
            else ''.
        Raises:
            SourceError: invalid front matter (names the file and line).
        """
        file = self.root / doc.path
        if self.layout is not None:
            reason = self.layout.skip_reason(file, {})
            if reason:
                return str(reason)
        rel = self._page_rel(doc.path)
        if rel is not None and self.skip is not None:
            reason = self.skip(rel)
            if reason:
                return reason
        if rel is None and self._only_by_site(doc.path):
            return "outside the generator's source folder"
        self.read_as(doc)
        if doc.format == "rst" or not doc.path.lower().endswith(_MARKDOWN):
            return self._place(doc, file)
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
        hidden = is_hidden(front)
        if hidden or self.layout is None:
            return hidden
        return str(self.layout.skip_reason(file, front)) or self._place(doc, file)

    def _place(self, doc: Document, file: Path) -> str:
        """Give ``doc`` the version (unless one was given) and language its layout says."""
        if self.layout is None:
            return ""
        placed = self.layout.place(file, doc.front_matter)
        if placed is not None:
            if placed.doc_version and not self.doc_version:
                doc.doc_version = placed.doc_version
            if placed.language:
                doc.metadata["language"] = placed.language
        return ""

    def doc_versions(self) -> list[str]:
        """The documentation versions the site's layout assigns per file (empty: one version,
        :attr:`doc_version`, for the whole tree)."""
        return [] if self.doc_version or self.layout is None else list(self.layout.versions())

    def describe(self, include: Sequence[str] = ()) -> dict[str, Any]:
        """The ingest summary's ``site`` block: ``generator``, ``config`` (the file read, or
        None), ``base_url``, ``versions`` (``[{"name", "label"?, "path"?…}]``), ``languages``, ``suffixes`` (the layout's, else
        those of the ``include`` patterns, e.g. ``*.md`` -> ``.md``), and the layout's details
        (``content_dirs``…)."""
        suffixes = sorted({"." + p.rsplit(".", 1)[1] for p in include if "." in p and "/" not in p.rsplit(".", 1)[1]})
        out: dict[str, Any] = {
            "generator": self.site,
            "config": str(self.config) if self.config else None,
            "base_url": self.base_url or None,
            "versions": [{"name": self.doc_version}] if self.doc_version else [],
            "languages": [],
            "suffixes": suffixes,
        }
        if self.layout is not None:
            out.update(self.layout.describe())
            if self.doc_version:
                out["versions"] = [{"name": self.doc_version}]
        return out

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
        if not (self.base_url or self.url_template):
            return ""
        if self.layout is not None:
            placed = self.layout.place(self.root / doc.path, doc.front_matter)
            if placed is None:
                return ""
            rel, page = doc.path, placed.path
        else:
            found = self._page_rel(doc.path)
            if found is None:
                return ""
            rel = found
            page = page_path(self.site, rel, doc.front_matter, self.directory_urls, self.suffix, self.ref)
        base = self.base_url.replace("{doc_version}", self.doc_version)
        if not self.url_template:
            return f"{base}{page}#{anchor}" if anchor else f"{base}{page}"
        values = {
            "base_url": base,
            "page": page,
            "path": plain_path(rel),
            "file": rel,
            "stem": Path(rel).stem,
            "anchor": anchor,
            "doc_version": self.doc_version,
        }
        try:
            url = self.url_template.format(**values)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"url_template {self.url_template!r}: unknown placeholder {exc}; use " + ", ".join("{" + k + "}" for k in values)
            ) from None
        return url if "{anchor}" in self.url_template or not anchor else f"{url}#{anchor}"

    def section_anchors(self, doc: Document) -> list[tuple[str, tuple[str, ...]]]:
        """The anchor and the other ids (:attr:`esrag.model.Heading.alt_anchors`) of each of
        ``doc``'s headers, in order.

        mdBook gives every header its own id (``normalize_id`` of its text, or ``{#id}``): an
        ``<a id>`` kept above it (an old anchor of a renamed header) is an alternative there;
        the other generators keep the ``<a name|id>`` as the anchor, as before.
        """
        headers = doc.headers
        if not headers:
            return []
        own = self.site == "mdbook"
        explicit = ["" if own and h.html_anchor else h.anchor for h in headers]
        titles = [h.title for h in headers]
        if self.site == "mkdocs" and self.slugify is not None:  # mkdocs.yml's toc slugify
            anchors = mkdocs_page_anchors(titles, explicit, self.slugify)
        else:
            rule = (self.layout.anchor_rule if self.layout is not None else "") or ANCHOR_RULES[self.site]  # Hugo's autoHeadingIDType
            anchors = page_anchors(rule, titles, explicit)
        out = []
        for h, a in zip(headers, anchors):
            alts = (h.anchor, *h.alt_anchors) if own and h.html_anchor else h.alt_anchors
            out.append((a, tuple(x for x in dict.fromkeys(alts) if x and x != a)))
        return out

    def apply(self, doc: Document, chunks: list[Chunk]) -> None:
        """Give each chunk the anchor of its section, its URL and its section's other URLs
        (``alt_urls``, from :meth:`section_anchors`; [] without a base URL) in place."""
        by_path: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
        for h, (a, alts) in zip(doc.headers, self.section_anchors(doc)):
            by_path.setdefault(h.section_path, []).append((h.line, a, alts))
        for c in chunks:
            anchor, alts = "", ()
            for line, a, others in by_path.get(c.section_path, []) if c.section_path else []:
                if line <= c.end_line:
                    anchor, alts = a, others
            c.anchor = anchor
            c.url = self.chunk_url(doc, anchor)
            c.alt_urls = [u for u in (self.chunk_url(doc, x) for x in alts) if u] + self.alias_urls(doc, anchor) if c.url else []

    def alias_urls(self, doc: Document, anchor: str) -> list[str]:
        """The section's URLs on the page's other addresses (Hugo ``aliases``, from the layout):
        base URL + alias path + ``#anchor``; [] without a layout, aliases or base URL."""
        placed = self.layout.place(self.root / doc.path, doc.front_matter) if self.layout is not None else None
        if placed is None or not placed.alt_paths or not self.base_url:
            return []
        base = self.base_url.replace("{doc_version}", self.doc_version)
        return [f"{base}{p}#{anchor}" if anchor else f"{base}{p}" for p in placed.alt_paths]

    def _only_by_site(self, path: str) -> bool:
        """True when ``path`` was walked only because of the generator's own suffixes
        (``include``, e.g. ``*.txt``), not because it is Markdown or reStructuredText."""
        low = path.lower()
        return not low.endswith((*_MARKDOWN, ".rst", ".rest")) and any(low.endswith(g.lstrip("*").lower()) for g in self.include)

    def _page_rel(self, rel: str) -> str | None:
        path = (self.root / rel).resolve()
        try:
            return path.relative_to(self.pages_dir.resolve()).as_posix()
        except ValueError:
            return None


def _git_ref(root: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "HEAD"
    ref = proc.stdout.strip()
    return ref if proc.returncode == 0 and ref and ref != "HEAD" else "HEAD"


def _git_toplevel(root: Path) -> Path | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None


def resolve_site(
    root: Path,
    site: str | None = None,
    base_url: str | None = None,
    url_template: str | None = None,
    doc_version: str = "",
    where: str = "--site",
) -> Site:
    """The :class:`Site` of an ingest of ``root``.

    ``site`` None: the generator whose config is found in ``root`` or above it, up to the
    repository root (:func:`esrag.sites.generators.detect`), else ``plain``. ``base_url`` None: the config's
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
    same = found is not None and found.site.split("-")[0] == chosen.split("-")[0]
    out = Site(
        chosen,
        folder,
        pages,
        base,
        url_template or "",
        doc_version,
        found.directory_urls if found else True,
        found.suffix if found else ".html",
        ref,
        found.layout if same and found is not None else None,
        found.config if same and found is not None else None,
    )
    if same and found is not None:  # how the generator reads its pages
        out.formats, out.include, out.skip, out.format_options = found.formats, found.include, found.skip, found.format_options
        out.slugify = found.slugify
    return out
