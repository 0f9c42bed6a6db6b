"""Where every chunk is published: page URLs and section anchors per documentation generator.

Each generator is one module behind one protocol (:mod:`esrag.sites.generator`), registered in
the ``esrag.sites`` entry-point group (:mod:`esrag.sites.registry`).
``Site`` is resolved once per ingest (:func:`resolve_site`) from the flags / ``[corpora.NAME]``
settings and the generator's own config in the tree (:func:`esrag.sites.registry.detect`), then
applied to each document: :meth:`Site.prepare` reads its front matter (title, description,
tags, URL keys, draft/unlisted) before chunking, :meth:`Site.apply` gives every chunk its
``anchor`` (explicit id, else the generator's slug, :mod:`esrag.sites.slugs`) and ``url``
(base URL + the generator's page path + ``#anchor``) after chunking.

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
from esrag.model import Chunk, Document, Heading
from esrag.sites.built import BuiltSite
from esrag.sites.frontmatter import is_hidden, lift_front_matter, parse_front_matter
from esrag.sites.generator import AnchorRule, Detected, Generator
from esrag.sites.layout import Layout, up_to_repository_root
from esrag.sites.plain import plain_path
from esrag.sites.registry import detect, generator_of, page_rule, site_names
from esrag.sites.slugs import nbconvert_page_anchors

_MARKDOWN = (".md", ".markdown", ".mdx", ".mdown")


def check_base_url(value: str, where: str = "--base-url") -> str:
    """``value`` if it is an absolute http(s) URL (a ``/`` is appended), else ConfigError."""
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{where} must be an absolute http(s) URL such as https://docs.example.com/, got {value!r}")
    return value if value.endswith("/") else value + "/"


def check_site(value: str, where: str = "--site") -> str:
    """``value`` if it is a registered site (:func:`esrag.sites.registry.site_names`), else
    ConfigError listing the valid ones."""
    if value not in site_names():
        raise ConfigError(f"{where}: unknown site {value!r}; valid: {', '.join(site_names())}")
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


#: the formats :func:`esrag.formats.parse` reads; a generator may publish others.
READ_FORMATS = ("markdown", "rst", "notebook", "asciidoc")


@dataclass(slots=True)
class Site:
    """How one ingested tree is published.

    Attributes:
        site: a ``--site`` value (:func:`esrag.sites.registry.site_names`).
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
        title, description: what that configuration says of the site (MkDocs ``site_name`` /
            ``site_description``, Docusaurus ``title`` / ``tagline``…; '' = nothing): a synced
            source's signals for ``resolve_library`` and its ``llms.txt`` H1.
        formats, include, skip, format_options, anchors, notes: how the generator reads its
            pages and makes header ids (:class:`esrag.sites.generator.Detected`).
        include_root: the folder include directives may read from (``--root``, else the
            repository root holding ``.git``, else :attr:`root`); never outside it.
        pages_only: files outside the generator's source folder are skipped (the site was
            found below the ingested folder: its other files are not pages of the site).
        built, built_source: the published site (``--built-site`` / ``--sitemap``,
            :mod:`esrag.sites.built`) whose page URLs and heading ids win over the rules, and
            where it came from; ``built_differs`` ``{source: (computed, built)}`` and
            ``built_missing`` ``{source: computed}`` and ``built_anchors`` ``{source: headings
            whose built id differs from the rule's}`` are filled as pages are placed, for the summary.
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
    title: str = ""
    description: str = ""
    formats: dict[str, str] = field(default_factory=dict)
    include: tuple[str, ...] = ()
    skip: Callable[[str], str] | None = None
    format_options: dict[str, Any] = field(default_factory=dict)
    anchors: AnchorRule | None = None
    notes: list[str] = field(default_factory=list)
    include_root: Path | None = None
    pages_only: bool = False
    built: BuiltSite | None = None
    built_source: str = ""
    built_differs: dict[str, tuple[str, str]] = field(default_factory=dict)
    built_missing: dict[str, str] = field(default_factory=dict)
    built_anchors: dict[str, int] = field(default_factory=dict)
    notebook_outputs: bool = False  # [ingest] notebook_outputs: text outputs of notebook cells indexed (esrag.formats.notebook)

    @property
    def generator(self) -> Generator:
        """The registered generator :attr:`site` selects."""
        return generator_of(self.site)

    def unread_reason(self, rel: str) -> str:
        """Why the page at ``rel`` (relative to the ingested folder), which the generator publishes,
        is not indexed: its format is one esrag has no reader for (:data:`READ_FORMATS`); '' for
        any other file (notebooks, which Sphinx builds with ``nbsphinx`` or ``myst_nb``, are read)."""
        page = self._page_rel(rel)
        if page is None:
            return ""
        for suffix, kind in self.formats.items():
            if page.endswith(suffix) and kind not in READ_FORMATS:
                return f"a {kind} page {self.generator.name} publishes (esrag does not read {kind}s yet)"
        return ""

    def read_as(self, doc: Document) -> None:
        """Set ``doc.format`` / ``doc.format_options`` as the generator reads the file (Sphinx
        ``source_suffix``: ``.txt`` pages are reStructuredText); files outside the generator's
        source folder are left to their suffix. A notebook (``.ipynb``) also gets
        ``notebook_outputs`` (:attr:`notebook_outputs`) in its format options."""
        rel = self._page_rel(doc.path)
        for suffix, kind in sorted(self.formats.items(), key=lambda kv: -len(kv[0])):
            if rel is not None and rel.endswith(suffix):
                if kind in READ_FORMATS:  # a format esrag cannot read stays what its suffix says (unread_reason)
                    doc.format = kind
                    doc.format_options = self.format_options
                break
        if doc.path.lower().endswith(".ipynb"):
            doc.format_options = {**doc.format_options, "notebook_outputs": self.notebook_outputs}

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
        if rel is None and self.layout is None and (self._only_by_site(doc.path) or self.pages_only):  # a layout decided above
            return "outside the generator's source folder"
        self.read_as(doc)
        if doc.format == "rst" or not doc.path.lower().endswith(_MARKDOWN):
            return self._place(doc, file)
        if self.generator.front_matter_after_blank_lines:
            doc.text = lift_front_matter(doc.text)
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
            if placed.language:  # a locale's BCP 47 tag: its primary language, as detection stores it
                doc.metadata["language"] = placed.language.split("-")[0].lower()
                doc.metadata["locale"] = placed.language
            if placed.translation:  # searched only when its language is asked for
                doc.metadata["translation"] = placed.language or "yes"
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
        if self.notes:
            out["notes"] = list(dict.fromkeys([*out.get("notes", []), *self.notes]))
        if self.built is not None:
            out["built"] = {
                "source": self.built_source,
                "pages": len(self.built.pages),
                "outside_base_url": len(self.built.outside),
                "differs": [{"path": p, "computed": c, "built": b} for p, (c, b) in sorted(self.built_differs.items())],
                "missing": [{"path": p, "computed": c} for p, c in sorted(self.built_missing.items())],
                "anchors_differ": [{"path": p, "headings": n} for p, n in sorted(self.built_anchors.items())],
            }
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
            page = self.page_path(rel, doc.front_matter)
        base = self.base_url.replace("{doc_version}", self.doc_version)
        if not self.url_template:
            url = self._built_page(doc.path, f"{base}{page}")
            return f"{url}#{anchor}" if anchor else url
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

    def attach_built(self, folder: Path | None, sitemap: str | None) -> None:
        """Take page URLs and heading ids from the published site: the generator's output
        ``folder`` (``--built-site``; page URLs and heading ids) or its ``sitemap`` (a file or
        http(s) URL; page URLs only).

        Raises:
            ConfigError: no base URL to place the pages under; an unreadable folder or sitemap
                (names it); a sitemap most of whose URLs lie outside the base URL."""
        from esrag.sites.built import BuiltSite, read_built_site, read_sitemap

        flag = "--built-site" if folder is not None else "--sitemap"
        if not self.base_url:
            raise ConfigError(f"{flag} needs the site's base URL: pass --base-url (or set it in the generator's configuration)")
        if folder is not None:
            self.built, self.built_source = read_built_site(folder, self.base_url), str(folder)
        else:
            assert sitemap is not None
            self.built, self.built_source = BuiltSite.from_urls(read_sitemap(sitemap), self.base_url), sitemap
            outside, kept = self.built.outside, len(self.built.pages)
            if outside and len(outside) > kept:  # www. vs apex, http vs https: nothing would match
                raise ConfigError(
                    f"--sitemap {sitemap}: {len(outside)} of {len(outside) + kept} URLs are not under the base URL "
                    f"{self.base_url} (e.g. {outside[0]}); pass the base URL the sitemap uses with --base-url"
                )

    def _built_page(self, source: str, computed: str) -> str:
        """``computed`` (a page URL), or the built site's URL of that page when one is attached
        and it differs; the difference, or the page's absence from the build, is recorded."""
        if self.built is None:
            return computed
        found = self.built.page_url(computed)
        if found is None:
            self.built_missing.setdefault(source, computed)
            return computed
        if found != computed:
            self.built_differs.setdefault(source, (computed, found))
        return found

    def page_path(self, rel: str, front: dict[str, Any]) -> str:
        """The page path under the base URL of ``rel`` (relative to :attr:`pages_dir`): a
        front-matter ``permalink`` (relative to the base URL) wins on every site, else the
        generator's rule (:func:`esrag.sites.registry.page_rule`; ``plain``'s when it has none)."""
        permalink = front.get("permalink")
        if isinstance(permalink, str) and permalink:
            return permalink.lstrip("/")
        rule = page_rule(self.site) or plain_path
        return rule(rel, front, self)

    def section_anchors(self, doc: Document) -> list[tuple[str, tuple[str, ...]]]:
        """The anchor and the other ids (:attr:`esrag.model.Heading.alt_anchors`) of each of
        ``doc``'s headers, in order.

        The rule is the site's (:attr:`anchors`, from its configuration) or its generator's.
        mdBook gives every header its own id (``normalize_id`` of its text, or ``{#id}``): an
        ``<a id>`` kept above it (an old anchor of a renamed header) is an alternative there
        (:attr:`Generator.html_anchor_is_alt`); the other generators keep the ``<a name|id>``
        as the anchor.
        """
        headers = doc.headers
        if not headers:
            return []
        gen = self.generator
        own = gen.html_anchor_is_alt
        explicit = ["" if own and h.html_anchor else h.anchor for h in headers]
        if doc.format == "notebook" and self.format_options.get("notebook_anchors") == "nbconvert":  # mkdocs-jupyter
            anchors = nbconvert_page_anchors([h.title for h in headers], explicit)
        else:
            anchors = self._anchor_rule(headers, explicit)
        if self.built is not None:
            anchors = self._built_anchors(doc, anchors)
        out = []
        for h, a in zip(headers, anchors):
            alts = (h.anchor, *h.alt_anchors) if own and h.html_anchor else h.alt_anchors
            out.append((a, tuple(x for x in dict.fromkeys(alts) if x and x != a)))
        return out

    def _anchor_rule(self, headers: list[Heading], explicit: list[str]) -> list[str]:
        """The anchor rule (the site's or its generator's) over ``headers``; where the generator
        gives the h1 no id (:attr:`Generator.h1_anchor`), each h1 keeps only its explicit id and
        is not shown to the rule (a slugger counting repeats never sees it)."""
        rule = self.anchors or self.generator.anchors
        if self.generator.h1_anchor:
            return rule([h.title for h in headers], explicit)
        kept = [i for i, h in enumerate(headers) if h.level != 1]
        ruled = iter(rule([headers[i].title for i in kept], [explicit[i] for i in kept]))
        return [next(ruled) if h.level != 1 else explicit[i] for i, h in enumerate(headers)]

    def _built_anchors(self, doc: Document, anchors: list[str]) -> list[str]:
        """``anchors`` of ``doc``'s headers, each replaced by the built page's id of the same
        heading where the page lacks the computed one (:meth:`esrag.sites.built.BuiltSite.anchor`;
        repeated titles matched in order)."""
        page = self.page_url(doc)
        if not page or self.built is None:
            return anchors
        seen: dict[str, int] = {}
        out = []
        for h, a in zip(doc.headers, anchors):
            ordinal = seen.get(h.title, 0)
            seen[h.title] = ordinal + 1
            out.append(self.built.anchor(page, h.title, ordinal, a))
        changed = sum(1 for a, b in zip(anchors, out) if a != b)
        if changed:
            self.built_anchors[doc.path] = changed
        return out

    def page_heading(self, doc: Document) -> str:
        """The page's h1 when the generator renders front matter ``title`` as it
        (:attr:`esrag.sites.generator.Generator.title_from_front`) and the page has no level-1
        header of its own, else ''."""
        title = doc.front_matter.get("title")
        if not self.generator.title_from_front or not isinstance(title, (str, int, float)) or not str(title).strip():
            return ""
        return "" if any(h.level == 1 for h in doc.headers) else str(title).strip()

    def apply(self, doc: Document, chunks: list[Chunk]) -> None:
        """Give each chunk the anchor of its section, its URL and its other URLs in place
        (``alt_urls``: its section's other ids, from :meth:`section_anchors`, the URLs of the
        headers of shorter sections merged into it, and its page's aliases; [] without a base
        URL); where the page's h1 is its front matter title (:meth:`page_heading`), it heads
        each section path."""
        by_path: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
        every: list[tuple[int, str, tuple[str, ...]]] = []
        for h, (a, alts) in zip(doc.headers, self.section_anchors(doc)):
            by_path.setdefault(h.section_path, []).append((h.line, a, alts))
            every.append((h.line, a, alts))
        own: list[tuple[str, ...]] = []
        for c in chunks:
            anchor, alts = "", ()
            for line, a, others in by_path.get(c.section_path, []) if c.section_path else []:
                if line <= c.end_line:
                    anchor, alts = a, others
            c.anchor = anchor
            c.url = self.chunk_url(doc, anchor)
            own.append(alts)
        primary = {c.anchor for c in chunks if c.anchor}
        for c, alts in zip(chunks, own):
            if not c.url:
                c.alt_urls = []
                continue
            # the chunk's other addresses: its section's, its page aliases', and those of the short
            # sections the chunker merged into it (a link to one of them lands on this chunk) —
            # never a section that is a chunk of its own (included headers share one line)
            merged = [x for line, a, others in every if c.start_line <= line <= c.end_line and a not in primary for x in (a, *others)]
            urls = [self.chunk_url(doc, x) for x in (*alts, *merged) if x]
            c.alt_urls = list(dict.fromkeys(u for u in (*urls, *self.alias_urls(doc, c.anchor)) if u and u != c.url))
        heading = self.page_heading(doc)
        if heading:
            for c in chunks:
                c.section_path = f"{heading} > {c.section_path}" if c.section_path else heading
                # in the metadata, so the meta hash (esrag.ingest.meta_hash) changes with it and a
                # re-ingest rewrites the stored section path (the content hash never saw it)
                c.metadata["page_heading"] = heading

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
    include_root: Path | None = None,
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
    found = detect(root, site)
    chosen = site or (found.site if found else "plain")
    base = base_url or ""
    if not base and found is not None and found.base_url.startswith(("http://", "https://")):
        base = check_base_url(found.base_url, str(found.config))
    out = Site(chosen, folder, folder, base, url_template or "", doc_version)
    out.include_root = _include_root(folder, include_root)
    if found is not None:
        _take(out, found)
    if chosen == "github":
        out.pages_dir = _git_toplevel(folder) or folder
        out.ref = _git_ref(folder)
        if base and ("/blob/" in base or "/tree/" in base):  # the base already names the ref
            out.base_url, out.url_template = base.replace("/tree/", "/blob/"), url_template or "{base_url}{file}"
    return out


def _include_root(folder: Path, given: Path | None) -> Path:
    """``given`` (``--root``; it must hold ``folder``), else the repository root above
    ``folder`` (the first folder holding ``.git``), else ``folder``.

    Raises:
        ConfigError: ``given`` is not a folder holding ``folder``."""
    if given is not None:
        given = given.resolve()
        if not given.is_dir() or not folder.is_relative_to(given):
            raise ConfigError(f"--root {given}: must be a folder that holds the ingested folder {folder}")
        return given
    top = up_to_repository_root(folder)[-1]
    return top if (top / ".git").exists() else folder


def _take(site: Site, found: Detected) -> None:
    """Copy what the detected configuration says into ``site``."""
    site.pages_dir, site.directory_urls, site.suffix = found.pages_dir, found.directory_urls, found.suffix
    site.layout, site.config = found.layout, found.config
    site.title, site.description = found.title, found.description
    site.formats, site.include, site.skip, site.format_options = found.formats, found.include, found.skip, found.format_options
    site.anchors, site.notes = found.anchors, list(found.notes)
    site.pages_only = found.found_below
