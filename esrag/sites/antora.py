"""Antora (3.x): one component version's ``antora.yml`` and the playbook's URL settings, read as
Antora reads them; pages are AsciiDoc (:mod:`esrag.formats.asciidoc`).

Rules and their sources (antora/antora, ``packages/content-aggregator/lib/aggregate-content.js``,
``packages/content-classifier/lib/content-classifier.js`` and ``lib/util/compute-out.js``,
``packages/playbook-builder/lib/config/schema.js``; docs.antora.org "Component version
descriptor", "Pages", "Hidden files", "URLs"):

* ``antora.yml``: ``name`` (required), ``title`` (the component's title, taken as the site's; a
  descriptor has no description key), ``version`` (required key; ``~``/``null``/``false``: an
  unversioned component, no version segment), ``prerelease``, ``start_page``, ``nav``,
  ``asciidoc.attributes`` (a trailing ``@`` only marks the value soft-set; ``false``/``null``
  unsets) passed to every page;
* files under ``modules/<module>/<family>/``: only the ``pages`` family is published; partials,
  examples, attachments and images are resources, nav files are navigation; a file or folder whose
  name starts with ``_`` (or ``.``) is hidden; only ``.adoc`` pages are converted;
* ``modules/<module>/pages/<path>.adoc`` -> ``<component>/<version>/<module>/<path>.html``, the
  ``ROOT`` module's segment omitted, the version segment omitted when unversioned;
  ``urls.html_extension_style``: ``default`` (``.html``), ``drop`` (no ``.html``, ``index`` ->
  folder), ``indexify`` (``<path>/`` from ``<path>/index.html``);
* ``urls.latest_version_segment`` replaces the version segment of the component's latest version unless
  ``latest_version_segment_strategy`` is ``redirect:to``: a checkout holds one version, so it is
  taken as the latest; the playbook's ``asciidoc.attributes`` come before the descriptor's (a
  hard-set playbook attribute wins); ``site.url`` is the base URL; the playbook
  (``antora-playbook.yml``) is looked for in the component's folder and above, up to the
  repository root;
* anchors: Asciidoctor's section ids, computed by the reader (page attributes ``idprefix``,
  ``idseparator``, ``sectids`` honoured; explicit ids win); the page title ``= Title`` is the h1,
  which has no id;
* ``:page-aliases:`` in a page's header: Antora writes a redirect page at each alias (same
  component version), kept as the page's other URLs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from esrag.errors import ConfigError
from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.layout import Placement, up_to_repository_root

DESCRIPTOR = "antora.yml"
PLAYBOOKS = ("antora-playbook.yml", "antora-playbook.yaml", "antora-playbook.json")
RESOURCE = "an Antora resource (partials, examples, attachments, images), not a page"
NAV = "an Antora navigation file, not a page"
HIDDEN = "hidden by Antora (a name starting with _ or .)"
NOT_ADOC = "not an AsciiDoc page (Antora converts only .adoc pages)"


@dataclass
class AntoraLayout:
    """One component version: where each file of ``modules/`` is published (see the module docstring).

    Attributes:
        config: the ``antora.yml``.
        folder: the folder holding it (the component version's root).
        component, version: ``name`` and the version segment ('' = unversioned; the playbook's
            latest segment when it sets one).
        extension_style: ``default``, ``drop`` or ``indexify``.
        nav: the nav files (relative to ``folder``).
        attributes: the component's AsciiDoc attributes (soft-set ``@`` removed).
    """

    config: Path
    folder: Path
    component: str
    version: str
    extension_style: str = "default"
    nav: tuple[str, ...] = ()
    attributes: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    generator: str = "antora"

    def _parts(self, file: Path) -> tuple[str, ...] | None:
        try:
            return (file.resolve() if not file.is_absolute() else file).relative_to(self.folder / "modules").parts
        except ValueError:
            return None

    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """Why ``file`` is not a published page ('' when it is)."""
        rel = file.relative_to(self.folder).as_posix() if file.is_relative_to(self.folder) else ""
        if rel in self.nav:
            return NAV
        parts = self._parts(file)
        if parts is None:
            return "outside the component's modules/ folder"
        if any(p.startswith(("_", ".")) for p in parts):
            return HIDDEN
        if len(parts) < 3 or parts[1] != "pages":
            return NAV if len(parts) == 2 and parts[1].endswith(".adoc") else RESOURCE
        return "" if file.suffix == ".adoc" else NOT_ADOC

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """``<component>/<version>/<module>/<page>.html`` (see the module docstring)."""
        parts = self._parts(file)
        if parts is None or self.skip_reason(file, front):
            return None
        module, page = parts[0], "/".join(parts[2:]).removesuffix(".adoc")
        aliases = [self._path(*alias) for alias in page_aliases(file, module)]
        return Placement(self._path(module, page), doc_version=self.version, alt_paths=aliases)

    def _path(self, module: str, page: str) -> str:
        """The published path of ``page`` (no ``.adoc``) of ``module``."""
        segments = [self.component, self.version, "" if module == "ROOT" else module]
        prefix = "/".join(s for s in segments if s)
        return f"{prefix}/{page_file(page, self.extension_style)}"

    def content_roots(self) -> list[Path]:
        """The ``pages`` folders of the component's modules."""
        return sorted(p for p in (self.folder / "modules").glob("*/pages") if p.is_dir())

    def versions(self) -> list[str]:
        """The component version's segment, when versioned."""
        return [self.version] if self.version else []

    def describe(self) -> dict[str, Any]:
        """The ingest summary's ``site`` block."""
        return {
            "versions": self.versions(),
            "languages": [],
            "suffixes": [".adoc"],
            "content_dirs": [str(d) for d in self.content_roots()],
            "component": self.component,
            "html_extension_style": self.extension_style,
            "notes": list(self.notes),
        }


def page_aliases(file: Path, module: str) -> list[tuple[str, str]]:
    """``(module, page)`` of each ``:page-aliases:`` entry in the page's header (the lines up to
    the first blank line): Antora publishes a redirect page there. Aliases in this component
    version only (``[module:]path.adoc``); ones naming another version or component
    (``v@…``, ``c:m:…``) are left out."""
    try:
        head = file.read_text(encoding="utf-8").split("\n\n", 1)[0]
    except (OSError, UnicodeDecodeError):
        return []
    m = re.search(r"^:page-aliases:[ \t]*(.*)$", head, re.MULTILINE)
    out = []
    for alias in (a.strip() for a in (m.group(1).split(",") if m else [])):
        parts = alias.split(":")
        if not alias or "@" in alias or len(parts) > 2:
            continue
        where, page = (module, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
        out.append((where, page.removesuffix(".adoc")))
    return out


def page_file(page: str, style: str) -> str:
    """A page's output path (``page`` without ``.adoc``) under ``html_extension_style``
    (``compute-out.js``): ``default`` -> ``page.html``; ``drop`` -> ``page`` (``index`` -> its
    folder, ``''``); ``indexify`` -> ``page/`` (``index`` -> its folder)."""
    folder, _, name = page.rpartition("/")
    base = folder + "/" if folder else ""
    if style == "drop":
        return base if name == "index" else f"{base}{name}"
    if style == "indexify":
        return base if name == "index" else f"{base}{name}/"
    return f"{page}.html"


def _load(path: Path) -> dict[str, Any]:
    """A YAML mapping.

    Raises:
        ConfigError: not readable YAML or not a mapping (names the file).
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not readable YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a YAML mapping")
    return data


def attributes(playbook: Any, component: Any) -> dict[str, str]:
    """The AsciiDoc attributes a page starts with: the playbook's ``asciidoc.attributes``, then
    the component descriptor's, which cannot override a playbook attribute that is hard set (its
    value without a trailing ``@``; Antora ``asciidoc-loader`` ``resolveAsciiDocConfig``).
    Values as strings, the soft-set ``@`` removed, ``true`` -> '', ``false``/``null`` unset."""
    out: dict[str, str] = {}
    hard: set[str] = set()
    for layer in (playbook, component):
        for k, v in (layer if isinstance(layer, dict) else {}).items():
            name = str(k).lower()
            if name in hard:
                continue
            text = "" if v is True else "" if v is None or v is False else str(v)
            if layer is playbook and not text.endswith("@") and v is not None:
                hard.add(name)
            if v is None or v is False:
                out.pop(name, None)
            else:
                out[name] = text.removesuffix("@")
    return out


def _mapping(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is a mapping, else {} (the key absent or of another type)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _playbook(folder: Path) -> tuple[dict[str, Any], Path | None]:
    for up in up_to_repository_root(folder):
        for name in PLAYBOOKS:
            if (up / name).is_file():
                return _load(up / name), up / name
    return {}, None


def _version(desc: dict[str, Any], urls: dict[str, Any]) -> str:
    """The version segment (content-classifier ``computeVersionSegment``): '' when unversioned;
    the playbook's ``latest_version_segment`` when set and ``latest_version_segment_strategy`` is
    ``replace`` (default) or ``redirect:from``; under ``redirect:to`` the pages keep their version
    (the latest segment only redirects to them). The checkout holds one version, which Antora
    takes as the component's latest even when it is a prerelease (a component whose versions are
    all prereleases has its newest as ``latest``), so ``latest_prerelease_version_segment``, which
    names a prerelease newer than the latest stable version, does not apply."""
    raw = desc.get("version")
    if raw is None or raw is False or str(raw) in ("~", ""):
        return ""
    if str(urls.get("latest_version_segment_strategy") or "replace") == "redirect:to":
        return str(raw)
    latest = urls.get("latest_version_segment")
    return str(latest) if latest else str(raw)


def detect(folder: Path) -> Detected | None:
    """The component version whose ``antora.yml`` lies in ``folder`` (with a ``modules/`` folder).

    Raises:
        ConfigError: unreadable ``antora.yml`` or one without ``name`` (names the file).
    """
    path = folder / DESCRIPTOR
    if not path.is_file() or not (folder / "modules").is_dir():
        return None
    desc = _load(path)
    if not desc.get("name"):
        raise ConfigError(f"{path}: no component name (Antora requires `name`)")
    book, playbook = _playbook(folder)
    site, urls = _mapping(book, "site"), _mapping(book, "urls")
    style = str(urls.get("html_extension_style") or "default")
    notes = [] if playbook else [f"{path}: no antora-playbook.yml found; version segment '{desc.get('version')}' and .html URLs used"]
    if style not in ("default", "drop", "indexify"):
        notes.append(f"{playbook}: html_extension_style {style!r} is not default/drop/indexify; default used")
        style = "default"
    asciidoc = _mapping(desc, "asciidoc")
    nav = desc.get("nav")
    nav = nav if isinstance(nav, list) else []
    layout = AntoraLayout(
        path,
        folder.resolve(),
        str(desc["name"]),
        _version(desc, urls),
        style,
        tuple(str(n) for n in nav),
        attributes(_mapping(book, "asciidoc").get("attributes"), asciidoc.get("attributes")),
        notes,
    )
    version = "" if desc.get("version") in (None, False, "~") else str(desc["version"])
    page_attrs = {  # what Antora's asciidoc-loader sets on every page (the per-page ones, page-module…, left out)
        "env": "site",
        "env-site": "",
        "site-gen": "antora",
        "site-gen-antora": "",
        "page-component-name": layout.component,
        "page-component-version": version,
        "page-version": version,
        "page-component-title": str(desc.get("title") or layout.component),
    }
    url = str(site.get("url") or "")
    return Detected(
        "antora",
        folder / "modules",
        url.rstrip("/") + "/" if url.startswith(("http://", "https://")) else "",
        config=path,
        layout=layout,
        formats={".adoc": "asciidoc"},
        include=("*.adoc",),
        format_options={"asciidoc_attributes": page_attrs | layout.attributes},
        notes=notes,
        title=config_text(desc.get("title")),
    )


def reader_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """The ids the AsciiDoc reader gave (Asciidoctor's rule, page attributes honoured)."""
    return list(explicit)


GENERATOR = Generator(
    name="antora",
    detect=detect,
    anchors=reader_anchors,
    page_path=None,
    config_files=("antora.yml", "antora-playbook.yml"),
    summary="`modules/<m>/pages/p.adoc` -> `<component>/<version>/<m>/p.html` (ROOT omitted); anchors Asciidoctor `_section_title`",
    source="antora content-classifier.js, compute-out.js, playbook schema.js; asciidoctor section.rb (generate_id)",
    priority=30,
    h1_anchor=False,
)
