"""Docusaurus: which docs pages a site publishes, at which URL, in which version and locale.

Read from the site's own configuration and files, following Docusaurus 3's
``@docusaurus/plugin-content-docs`` (``src/options.ts``, ``src/versions/``, ``src/docs.ts``,
``src/slug.ts``, ``src/numberPrefix.ts``, ``src/sidebars/generator.ts``) and
``@docusaurus/utils`` (``normalizeUrl``, ``applyTrailingSlash``):

* ``docusaurus.config.{js,mjs,cjs,ts,mts}`` read as code (:mod:`esrag.sites.jsconfig`, comments
  and template literals understood): ``title``, ``tagline`` (the site's title and description),
  ``url``, ``baseUrl``, ``trailingSlash``, ``i18n``
  (``defaultLocale``, ``locales``, ``path``), and every docs plugin instance — the preset's
  ``docs`` options (``classic``, ``@docusaurus/preset-classic``) and each
  ``@docusaurus/plugin-content-docs`` / ``content-docs`` plugin — with ``id``, ``path``,
  ``routeBasePath``, ``include``, ``exclude``, ``lastVersion``, ``onlyIncludeVersions``,
  ``includeCurrentVersion``, ``disableVersioning``, ``versions.NAME.path`` / ``label`` and
  ``numberPrefixParser: false``;
* versions: ``versions.json`` (``<id>_versions.json`` for another plugin id) lists the released
  versions, newest first, whose docs are in ``versioned_docs/version-NAME/``
  (``<id>_versioned_docs/``). The last version (``lastVersion``, default the newest released
  one) is served at ``/<routeBasePath>/…``, the current docs at ``/<routeBasePath>/next/…``
  once released versions exist, any other at ``/<routeBasePath>/NAME/…``; each chunk's
  ``doc_version`` is the version's name (``current`` for the current docs);
* locales: translations in ``i18n/<locale>/docusaurus-plugin-content-docs[-<id>]/current/``
  (``version-NAME/`` per version) are published under ``/<locale>/``;
* page slugs (``getSlug``): number prefixes dropped from file and folder names (``01-intro``
  -> ``intro``, not date- or version-like names such as ``2021-01-01`` or ``1.2``), front
  matter ``id`` / ``slug`` (absolute ``/x`` or resolved against the folder), ``index`` /
  ``README`` / a file named like its folder as the folder's page (``isCategoryIndex``), then
  ``trailingSlash``;
* files the plugin does not read: outside ``include`` (``**/*.{md,mdx}``) or inside
  ``exclude`` (partials ``_x.mdx`` and ``_folder/``, tests).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.jsconfig import UNKNOWN, read_config
from esrag.sites.layout import OUTSIDE, Placement
from esrag.sites.slugs import github_page_anchors

CONFIG_NAMES = (
    "docusaurus.config.js",
    "docusaurus.config.ts",
    "docusaurus.config.mjs",
    "docusaurus.config.cjs",
    "docusaurus.config.mts",
    "docusaurus.config.cts",
)
CURRENT = "current"
#: skip reason of files in a docs folder that the plugin's ``include`` / ``exclude`` globs leave out
DOCS_GLOBS = "excluded by the docs plugin's include/exclude (e.g. a _partial)"
_DOCS_PLUGIN_NAMES = ("@docusaurus/plugin-content-docs", "content-docs", "docusaurus-plugin-content-docs")
_CLASSIC_PRESET_NAMES = ("classic", "@docusaurus/preset-classic", "docusaurus-preset-classic")
_DEFAULT_INCLUDE = ["**/*.{md,mdx}"]
_DEFAULT_EXCLUDE = ["**/_*.{js,jsx,ts,tsx,md,mdx}", "**/_*/**", "**/*.test.{js,jsx,ts,tsx}", "**/__tests__/**"]

# numberPrefix.ts: date-like and version-like names keep their digits
_IGNORED_PREFIX = re.compile(r"^((\d{2}|\d{4})[-_.]\d{2}([-_.](\d{2}|\d{4}))?)(.*)$|^(\d+[-_.]\d+)(.*)$")
_NUMBER_PREFIX = re.compile(r"^(?P<number>\d+)(?P<sep>\s*[-_.]+\s*)(?P<suffix>.*)$")


def strip_number_prefix(name: str) -> str:
    """Docusaurus ``DefaultNumberPrefixParser``: ``01-intro`` -> ``intro``, ``003 - x`` -> ``x``;
    date-like (``2021-01-01-x``) and version-like (``1.2-x``) names are kept."""
    if _IGNORED_PREFIX.match(name):
        return name
    m = _NUMBER_PREFIX.match(name)
    return m.group("suffix") if m else name


def _strip_path_prefixes(path: str) -> str:
    return "/".join(strip_number_prefix(seg) for seg in path.split("/"))


def resolve_pathname(to: str, base: str) -> str:
    """The ``resolve-pathname`` package (what ``getSlug`` calls): ``to`` resolved against the
    directory path ``base`` like a relative URL (``.``/``..`` segments applied)."""
    if to.startswith("/"):
        joined = to
    else:
        joined = base[: base.rfind("/") + 1] + to
    trailing = joined.endswith(("/", "/.", "/..")) or to in (".", "..")
    out: list[str] = []
    for seg in joined.split("/"):
        if seg == "..":
            if out:
                out.pop()
        elif seg not in (".", ""):
            out.append(seg)
    return "/" + "/".join(out) + ("/" if trailing and out else "")


def _normalize_url(parts: list[str]) -> str:
    """``normalizeUrl`` of @docusaurus/utils for path parts: joined by ``/``, duplicate slashes
    collapsed, the last part's trailing slash kept."""
    joined = "/".join(p for p in parts if p != "")
    out = re.sub(r"/{2,}", "/", joined)
    return out if out.startswith("/") else "/" + out


def _apply_trailing_slash(path: str, trailing: bool | None) -> str:
    """``applyTrailingSlash``: true adds a ``/``, false removes it (never from ``/``), unset keeps."""
    if trailing is None or path == "/":
        return path
    if trailing:
        return path if path.endswith("/") else path + "/"
    return path.rstrip("/") or "/"


def _expand_braces(pattern: str) -> list[str]:
    """Globby brace expansion: ``**/*.{md,mdx}`` -> ``**/*.md``, ``**/*.mdx``."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for alt in m.group(1).split(",") for x in _expand_braces(pattern[: m.start()] + alt + pattern[m.end() :])]


def _glob_match(rel: str, patterns: list[str]) -> bool:
    """Globby/micromatch semantics for the patterns the docs plugin uses: ``**/`` matches any
    (also no) folders, ``*`` does not cross ``/``."""
    for pattern in patterns:
        for p in _expand_braces(pattern):
            rx = re.escape(p).replace(r"\*\*/", "(?:.*/)?").replace(r"/\*\*", "(?:/.*)?").replace(r"\*\*", ".*")
            rx = rx.replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
            if re.fullmatch(rx, rel):
                return True
    return False


@dataclass(slots=True)
class DocsVersion:
    """One version of a docs plugin instance: ``name`` (``current`` or the versions.json
    entry), ``label``, its content folder, its route (``/docs/next/``-like, starting and
    ending with ``/``, without baseUrl or locale) and its translated folders by locale."""

    name: str
    label: str
    content_dir: Path
    route: str
    localized: dict[str, Path] = field(default_factory=dict)


@dataclass(slots=True)
class DocsPlugin:
    """One ``plugin-content-docs`` instance (``id``, ``routeBasePath``, globs, versions)."""

    id: str
    route_base_path: str
    include: list[str]
    exclude: list[str]
    versions: list[DocsVersion]
    number_prefixes: bool = True
    unknown: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Where:
    plugin: DocsPlugin
    version: DocsVersion
    locale: str
    rel: str


class DocusaurusLayout:
    """The docs pages of a Docusaurus site (see the module docstring); a
    :class:`esrag.sites.layout.Layout`.

    Attributes:
        config: the configuration file read. site_dir: its folder.
        title, tagline: ``title`` and ``tagline`` ('' when absent or not a literal string).
        base_url: ``url`` + ``baseUrl`` ('' when ``url`` is not a literal).
        plugins: the docs plugin instances. locales / default_locale: from ``i18n``.
        trailing_slash: ``trailingSlash`` (None = unset).
        notes: what could not be read (values computed at build time), for the report.
    """

    generator = "docusaurus"

    def __init__(self, config: Path, cfg: dict[str, Any]) -> None:
        self.config = config
        self.site_dir = config.parent
        self.notes: list[str] = []
        self.title, self.tagline = config_text(cfg.get("title")), config_text(cfg.get("tagline"))
        url, base = cfg.get("url"), cfg.get("baseUrl", "/")
        base = base if isinstance(base, str) else "/"
        self.base_path = "/" + base.strip("/") + "/" if base.strip("/") else "/"
        self.base_url = (url.rstrip("/") + self.base_path) if isinstance(url, str) and url.startswith(("http://", "https://")) else ""
        if url is UNKNOWN:
            self.notes.append("url is computed at build time: pass --base-url")
        for key, default in (("baseUrl", "/"), ("trailingSlash", "unset"), ("i18n", "one locale")):
            if cfg.get(key) is UNKNOWN:
                self.notes.append(f"{key} is computed at build time; {default} assumed")
        trailing = cfg.get("trailingSlash")
        self.trailing_slash: bool | None = trailing if isinstance(trailing, bool) else None
        i18n = _dict(cfg.get("i18n"))
        self.default_locale = str(i18n.get("defaultLocale") or "en")
        locales = i18n.get("locales")
        self.locales = [str(x) for x in locales if isinstance(x, str)] if isinstance(locales, list) else [self.default_locale]
        self.i18n_dir = self.site_dir / str(i18n.get("path") or "i18n")
        self.plugins = [self._plugin(opts) for opts in _docs_options(cfg, self.notes)]

    # -- reading the configuration ---------------------------------------------------------------
    def _plugin(self, opts: dict[str, Any]) -> DocsPlugin:
        pid = _str(opts.get("id"), "default")
        path = _str(opts.get("path"), "docs")
        route = _str(opts.get("routeBasePath"), "docs")
        include = [str(x) for x in opts["include"] if isinstance(x, str)] if isinstance(opts.get("include"), list) else _DEFAULT_INCLUDE
        exclude = [str(x) for x in opts["exclude"] if isinstance(x, str)] if isinstance(opts.get("exclude"), list) else _DEFAULT_EXCLUDE
        plugin = DocsPlugin(pid, route, include, exclude, [], opts.get("numberPrefixParser") is not False)
        for key in ("routeBasePath", "path", "lastVersion", "onlyIncludeVersions"):
            if opts.get(key) is UNKNOWN:
                self.notes.append(f"docs plugin {pid!r}: {key} is computed at build time; its default is assumed")
        plugin.versions = self._versions(plugin, opts, path)
        return plugin

    def _versions(self, plugin: DocsPlugin, opts: dict[str, Any], path: str) -> list[DocsVersion]:
        """versions/files.ts ``readVersionNames`` + versions/version.ts ``createVersionMetadata``."""
        pid = plugin.id
        released: list[str] = []
        if opts.get("disableVersioning") is not True:
            vfile = self.site_dir / ("versions.json" if pid == "default" else f"{pid}_versions.json")
            try:
                data = json.loads(vfile.read_text(encoding="utf-8")) if vfile.is_file() else []
            except (OSError, ValueError):
                self.notes.append(f"{vfile.name} is not valid JSON; versions ignored")
                data = []
            released = [str(v) for v in data if isinstance(v, (str, int, float))] if isinstance(data, list) else []
        names = ([CURRENT] if opts.get("includeCurrentVersion", True) is not False else []) + released
        last = opts.get("lastVersion")
        last = last if isinstance(last, str) and last in names else (released[0] if released else CURRENT)
        only = opts.get("onlyIncludeVersions")
        if isinstance(only, list) and all(isinstance(v, str) for v in only):
            names = [n for n in names if n in only]
        custom = _dict(opts.get("versions"))
        versioned_dir = self.site_dir / ("versioned_docs" if pid == "default" else f"{pid}_versioned_docs")
        i18n_plugin = "docusaurus-plugin-content-docs" + ("" if pid == "default" else f"-{pid}")
        out = []
        for name in names:
            vopts = _dict(custom.get(name))
            if isinstance(vopts.get("path"), str):
                part = str(vopts["path"])
            elif name == last:
                part = ""
            elif name == CURRENT:
                part = "next"
            else:
                part = name
            label = _str(vopts.get("label"), "Next" if name == CURRENT else name)
            folder = CURRENT if name == CURRENT else f"version-{name}"
            content = self.site_dir / path if name == CURRENT else versioned_dir / folder
            localized = {loc: self.i18n_dir / loc / i18n_plugin / folder for loc in self.locales if loc != self.default_locale}
            route = _normalize_url(["/", plugin.route_base_path, part, "/"])
            out.append(DocsVersion(name, label, content, route, localized))
        return out

    # -- Layout ----------------------------------------------------------------------------------
    def _where(self, file: Path) -> _Where | None:
        file = file.resolve()
        for plugin in self.plugins:
            for version in plugin.versions:
                for locale, folder in [(self.default_locale, version.content_dir), *version.localized.items()]:
                    try:
                        rel = file.relative_to(folder.resolve()).as_posix()
                    except ValueError:
                        continue
                    return _Where(plugin, version, locale, rel)
        return None

    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """'' for a docs page; else why the docs plugins do not publish ``file``."""
        where = self._where(file)
        if where is None:
            return OUTSIDE
        if not _glob_match(where.rel, where.plugin.include) or _glob_match(where.rel, where.plugin.exclude):
            return DOCS_GLOBS
        return ""

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """The page of ``file``: its permalink (without the leading ``/``), version, locale."""
        where = self._where(file)
        if where is None:
            return None
        slug = doc_slug(where.rel, front, where.plugin.number_prefixes)
        base = self.base_path if where.locale == self.default_locale else f"{self.base_path}{where.locale}/"
        permalink = _apply_trailing_slash(_normalize_url([base, where.version.route, slug]), self.trailing_slash)
        site_root_rel = permalink[len(self.base_path) :] if permalink.startswith(self.base_path) else permalink.lstrip("/")
        versioned = any(len(p.versions) > 1 or p.versions[0].name != CURRENT for p in self.plugins if p.versions)
        language = where.locale if len(self.locales) > 1 else ""
        translation = bool(language) and where.locale != self.default_locale
        return Placement(site_root_rel, where.version.name if versioned else "", language, translation=translation)

    def content_roots(self) -> list[Path]:
        """Every version's folder and its translations' folders that exist."""
        dirs = [d for p in self.plugins for v in p.versions for d in (v.content_dir, *v.localized.values())]
        return [d for d in dict.fromkeys(dirs) if d.is_dir()]

    def versions(self) -> list[str]:
        """Version names (``current``, ``3.8.1``…) when a plugin has released versions, else []."""
        names = [v.name for p in self.plugins for v in p.versions]
        return list(dict.fromkeys(names)) if any(n != CURRENT for n in names) else []

    def describe(self) -> dict[str, Any]:
        """The summary's ``site`` block details (versions with label and URL path, locales…)."""
        missing = [_rel(v.content_dir, self.site_dir) for p in self.plugins for v in p.versions if not v.content_dir.is_dir()]
        notes = self.notes + [f"configured docs folder {m} does not exist" for m in missing]
        return {
            "versions": [
                {"name": v.name, "label": v.label, "path": v.route, "plugin": p.id, "folder": _rel(v.content_dir, self.site_dir)}
                for p in self.plugins
                for v in p.versions
                if v.content_dir.is_dir()
            ],
            "languages": self.locales,
            "suffixes": sorted({"." + s.rsplit(".", 1)[-1] for p in self.plugins for pat in p.include for s in _expand_braces(pat)}),
            "content_dirs": sorted({_rel(d, self.site_dir) for d in self.content_roots()}),
            "trailing_slash": self.trailing_slash,
            "notes": notes,
        }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _rel(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _entry(item: Any) -> tuple[Any, Any]:
    """(name, options) of a preset / plugin entry: ``'name'`` or ``['name', {options}]``."""
    if isinstance(item, str):
        return item, {}
    if isinstance(item, list) and item:
        return item[0], item[1] if len(item) > 1 else {}
    return None, None


def _docs_options(cfg: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """The options of every docs plugin instance: the classic preset's ``docs`` (unless
    ``docs: false``) and each ``plugin-content-docs`` entry of ``plugins``."""
    out: list[dict[str, Any]] = []
    for preset in _list(cfg.get("presets")):
        name, opts = _entry(preset)
        if name in _CLASSIC_PRESET_NAMES:
            docs = opts.get("docs", {}) if isinstance(opts, dict) else UNKNOWN
            if docs is False:
                continue
            if docs is UNKNOWN:
                notes.append("the classic preset's docs options are computed at build time; defaults assumed")
            out.append(docs if isinstance(docs, dict) else {})
        elif name is None or name is UNKNOWN:
            notes.append("a preset is computed at build time; not read")
    for plugin in _list(cfg.get("plugins")):
        name, opts = _entry(plugin)
        if isinstance(name, str) and (name in _DOCS_PLUGIN_NAMES or name.endswith("/plugin-content-docs")):
            out.append(opts if isinstance(opts, dict) else {})
    return out


def doc_slug(rel: str, front: dict[str, Any], number_prefixes: bool = True) -> str:
    """The slug of the doc at ``rel`` (relative to its version's folder), as ``docs.ts`` +
    ``slug.ts`` compute it: ``/guides/intro``, ``/guides/`` for a category index, front
    matter ``slug`` (absolute, or relative to the folder) and ``id`` respected;
    ``parse_number_prefixes: false`` in front matter keeps the prefixes."""
    folder, name = posixpath.split(rel)
    stem = posixpath.splitext(name)[0]
    strip = number_prefixes and front.get("parse_number_prefixes", True) is not False
    unprefixed = strip_number_prefix(stem) if strip else stem
    base_id = str(front["id"]) if isinstance(front.get("id"), (str, int)) and str(front["id"]) else unprefixed
    fm_slug = front.get("slug") if isinstance(front.get("slug"), (str, int)) else None
    fm_slug = str(fm_slug) if fm_slug is not None and str(fm_slug) else None
    if fm_slug is not None and fm_slug.startswith("/"):
        return fm_slug
    dir_slug = "/" if not folder else "/" + (_strip_path_prefixes(folder) if strip else folder) + "/"
    directories = folder.split("/")[::-1] if folder else []
    if fm_slug is None and stem.lower() in ("index", "readme", (directories[0].lower() if directories else None)):
        return dir_slug
    return resolve_pathname(fm_slug if fm_slug is not None else base_id, dir_slug)


def read_docusaurus(folder: Path) -> DocusaurusLayout | None:
    """The layout of the Docusaurus site whose configuration is in ``folder``, or None.

    Raises:
        ConfigError: the configuration file cannot be read as JavaScript (names file and line).
    """
    for name in CONFIG_NAMES:
        path = folder / name
        if path.is_file():
            return DocusaurusLayout(path, read_config(path))
    return None


def matches(folder: Path) -> bool:
    """True when ``folder`` holds a Docusaurus configuration file."""
    return any((folder / n).is_file() for n in CONFIG_NAMES)


def detect(folder: Path) -> Detected | None:
    """The Docusaurus site whose configuration file lies in ``folder`` (its layout places every
    docs plugin instance, version and locale).

    Raises:
        ConfigError: the configuration cannot be read as JavaScript (names file and line).
    """
    layout = read_docusaurus(folder)
    if layout is None:
        return None
    first = next((v.content_dir for p in layout.plugins for v in p.versions), folder / "docs")
    return Detected(
        "docusaurus",
        first,
        layout.base_url,
        config=layout.config,
        layout=layout,
        notes=list(layout.notes),
        title=layout.title,
        description=layout.tagline,
    )


def page_path(rel: str, front: dict[str, Any], site: Any = None) -> str:
    """The page path of ``rel`` under the docs plugin's defaults (:func:`doc_slug`, no route base
    path), for a docs tree ingested with ``--site docusaurus`` and no configuration found (a
    site found carries its layout, with its plugins, versions and locales)."""
    return doc_slug(rel, front).lstrip("/")


GENERATOR = Generator(
    name="docusaurus",
    detect=detect,
    anchors=github_page_anchors,
    page_path=page_path,
    config_files=("docusaurus.config.{js,ts,mjs,cjs}",),
    summary="every docs plugin, version and locale; number prefixes dropped, front matter `id`/`slug`; anchors github-slugger, `{#id}`",
    source="@docusaurus/plugin-content-docs (docs.ts, slug.ts, numberPrefix.ts), @docusaurus/utils; github-slugger",
    priority=30,
)

__all__ = [
    "GENERATOR",
    "CONFIG_NAMES",
    "DocsPlugin",
    "DocsVersion",
    "DocusaurusLayout",
    "doc_slug",
    "matches",
    "read_docusaurus",
    "resolve_pathname",
    "strip_number_prefix",
]
