"""VitePress (2.0): which Markdown files a site publishes, at which URL, in which language, and
its header anchors — read from the site's ``.vitepress/config.*`` without running it
(:mod:`esrag.sites.jsconfig`), following VitePress's own source (vuejs/vitepress):

* the project root is the folder holding ``.vitepress/``; the configuration is the first of
  ``.vitepress/config/index.{js,ts,mjs,mts}`` / ``.vitepress/config.{js,ts,mjs,mts}``
  (``src/node/config.ts`` ``resolveUserConfig``);
* pages: ``**/*.md`` under ``srcDir`` (default: the project root) minus ``srcExclude``, minus
  ``**/node_modules/**`` and ``**/dist/**`` and dot folders/files (``src/node/utils/glob.ts``,
  tinyglobby without ``dot``); a file whose name holds ``[param]`` is a dynamic-route template
  whose pages its ``.paths.js`` loader computes (``src/node/plugins/dynamicRoutesPlugin.ts``
  ``resolvePages``): left out;
* ``rewrites``: the object form, path-to-regexp 6 patterns tried in order, the first match wins,
  keys starting with ``^`` are regular expressions (``src/node/plugins/rewritesPlugin.ts``
  ``resolveRewrites``; :mod:`esrag.sites.path_to_regexp`). The function form is code: paths are
  kept unrewritten and a note says so;
* page URL: ``base`` + the rewritten path with ``(^|/)index.md`` -> the folder and ``.md`` ->
  ``''`` when ``cleanUrls`` else ``.html`` (``src/node/plugins/localSearchPlugin.ts``
  ``getDocId``; ``src/node/build/generateSitemap.ts``). ``base`` is part of the base URL:
  ``sitemap.hostname`` (when absolute) + ``base``; a ``--base-url`` given by the user must
  include ``base`` too;
* the site's title and description: ``title`` / ``description``, the root locale's own when
  ``locales.root`` sets them (``src/shared/shared.ts`` ``resolveSiteDataByRoute``:
  ``locales[index]?.title ?? title``); ``themeConfig.siteTitle`` (the navbar's text) is not read;
* language: the ``locales`` key other than ``root`` whose ``/key/`` starts the rewritten path
  (``src/shared/shared.ts`` ``getLocaleForPath``), its ``lang``, else the top-level ``lang``;
  the root locale's ``lang``, else the top-level ``lang``, else ``en-US``
  (``generateSitemap.ts``). A site without ``locales`` and ``lang`` has no language;
* anchors: ``@mdit-vue/shared`` ``slugify`` (3.x: NFKD, combining marks U+0300–036F and
  control characters dropped, runs of whitespace and ``~`!@#$%^&*()-_+=[]{}|\\;:"'“”‘’<>,.?/``
  -> ``-``, ``-`` trimmed, ``_`` before a leading digit, lowercase) on the header's text without
  raw HTML and emoji (``src/node/markdown/markdown.ts`` ``getTokensText``); duplicates
  ``-1``, ``-2`` (``@mdit/plugin-anchor``); ``{#id}`` wins (``@mdit/plugin-attrs``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from esrag.errors import ConfigError
from esrag.sites import path_to_regexp
from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.jsconfig import UNKNOWN, JsSyntaxError, arguments_of, read_config
from esrag.sites.layout import EXCLUDED, OUTSIDE, Placement
from esrag.sites.slugs import counter_page_anchors

CONFIG_NAMES = tuple(n for ext in ("js", "ts", "mjs", "mts") for n in (f"config/index.{ext}", f"config.{ext}"))
NOT_MARKDOWN = "not a VitePress page (only **/*.md files are)"
ALWAYS_EXCLUDED = "excluded by VitePress (node_modules, dist or a dot folder)"
DYNAMIC_ROUTE = "a dynamic-route template ([param] in its name): its pages come from a .paths loader"
DEFAULT_LANG = "en-US"

# @mdit-vue/shared src/slugify.ts (3.x); JS \s spelled out (it differs from Python's)
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_CONTROL = re.compile("[\u0000-\u001f]")
_SPECIAL = re.compile("[" + _JS_SPACE + r"~`!@#$%^&*()\-_+=\[\]{}|\\;:\"'“”‘’<>,.?/" + "]+")
_COMBINING = re.compile("[\u0300-\u036f]")
# emoji shortcodes (@mdit/plugin-emoji): emoji tokens are left out of the slug text
_EMOJI = re.compile(r":[a-z0-9_+-]+:")


def slugify(value: str) -> str:
    """``@mdit-vue/shared`` ``slugify`` (3.0.2), checked against the npm package."""
    s = _COMBINING.sub("", unicodedata.normalize("NFKD", value))
    s = _SPECIAL.sub("-", _CONTROL.sub("", s))
    s = re.sub(r"-{2,}", "-", s).strip("-")
    return re.sub(r"^(\d)", r"_\1", s).lower()


def heading_slug(title: str) -> str:
    """The slug VitePress gives a header whose rendered text is ``title``: emoji shortcodes
    (``:tada:``) left out as ``getTokensText`` does, then :func:`slugify`."""
    return slugify(_EMOJI.sub("", title))


#: one page's anchors: explicit ids kept, the rest ``x``, ``x-1``, ``x-2``…
page_anchors = counter_page_anchors(heading_slug)


# -- reading the configuration ------------------------------------------------------------------
def find_config(root: Path) -> Path | None:
    """The configuration file VitePress loads for the project root ``root``, or None."""
    for name in CONFIG_NAMES:
        path = root / ".vitepress" / name
        if path.is_file():
            return path
    return None


def find_project(start: Path) -> Path | None:
    """The VitePress project root at or above ``start`` (a folder holding ``.vitepress/`` with a
    configuration file), or None."""
    for folder in (start, *start.parents):
        if find_config(folder) is not None:
            return folder
    return None


@dataclass(slots=True)
class Rewrite:
    """One ``rewrites`` entry: ``source`` pattern, ``match`` and ``build`` (its destination)."""

    source: str
    match: Callable[[str], path_to_regexp.Params | None]
    build: Callable[[path_to_regexp.Params], str]


def _rewrites(value: Any, config: Path, notes: list[str]) -> list[Rewrite]:
    """``rewrites`` read (``resolveRewrites``); the function form and computed entries noted."""
    if value is None:
        return []
    if not isinstance(value, dict):
        notes.append(f"{config.name}: rewrites is a function (code): page paths are kept unrewritten")
        return []
    out = []
    for source, dest in value.items():
        if not isinstance(dest, str):
            notes.append(f"{config.name}: rewrites[{source!r}] is computed at build time; left out")
            continue
        try:
            pattern: str | re.Pattern[str] = re.compile(re.sub(r"\(\?<(?![=!])", "(?P<", source)) if source.startswith("^") else source
            out.append(Rewrite(source, path_to_regexp.match(pattern), path_to_regexp.compile("/" + dest)))
        except (path_to_regexp.PathPatternError, re.error) as exc:
            raise ConfigError(f"{config}: rewrites[{source!r}]: {exc}") from None
    return out


def _str(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _base_url(cfg: dict[str, Any], base: str) -> str:
    """``sitemap.hostname`` (absolute) + ``base``; '' without an absolute hostname."""
    sitemap = cfg.get("sitemap")
    host = sitemap.get("hostname") if isinstance(sitemap, dict) else None
    if not isinstance(host, str) or not host.startswith(("http://", "https://")):
        return ""
    parts = urlsplit(host)
    path = parts.path.rstrip("/")
    if path and base.rstrip("/").endswith(path):  # the hostname already names the base
        path = ""
    return f"{parts.scheme}://{parts.netloc}{path}{base}"


@dataclass(slots=True)
class Locale:
    """One ``locales`` entry: its key (``root`` or a path prefix) and its ``lang``."""

    key: str
    lang: str


class VitePressLayout:
    """The pages of one VitePress site (see the module docstring); a
    :class:`esrag.sites.layout.Layout`.

    Attributes:
        config: the configuration file read. root: the project root (holding ``.vitepress/``).
        src_dir: ``srcDir`` (absolute). src_exclude: ``srcExclude`` globs (relative to it).
        base: ``base`` (``/`` or ``/x/``). base_url: see :func:`_base_url`.
        clean_urls: ``cleanUrls``. rewrites: the object form's entries, in order.
        locales: the ``locales`` entries (``root`` last); lang: the top-level ``lang``.
        title, description: the site's (module docstring; '' when not a literal string).
        notes: what could not be read (computed at build time), for the report.
    """

    generator = "vitepress"
    anchor_rule = ""

    def __init__(self, config: Path, cfg: dict[str, Any]) -> None:
        self.config = config
        self.root = next(d for d in config.parents if d.name == ".vitepress").parent
        self.notes: list[str] = []
        for key in ("srcDir", "srcExclude", "base", "cleanUrls", "locales", "extends"):
            if cfg.get(key) is UNKNOWN:
                self.notes.append(f"{config.name}: {key} is computed at build time; VitePress's default assumed")
        if "extends" in cfg:
            self.notes.append(f"{config.name}: extends another configuration (not read)")
        self.src_dir = (self.root / _str(cfg.get("srcDir"), ".")).resolve()
        exclude = cfg.get("srcExclude")
        self.src_exclude = [str(p) for p in exclude if isinstance(p, str)] if isinstance(exclude, list) else []
        base = _str(cfg.get("base"), "/") or "/"
        self.base = re.sub(r"([^/])$", r"\1/", base)
        self.base_url = _base_url(cfg, self.base)
        self.clean_urls = cfg.get("cleanUrls") is True
        self.rewrites = _rewrites(cfg.get("rewrites"), config, self.notes)
        self.lang = _str(cfg.get("lang"), "")
        locales = cfg["locales"] if isinstance(cfg.get("locales"), dict) else {}
        self.locales = [Locale(str(k), _str(v.get("lang") if isinstance(v, dict) else None, "")) for k, v in locales.items()]
        root = locales["root"] if isinstance(locales.get("root"), dict) else {}
        self.title, self.description = (
            config_text(root[key]) if root.get(key) is not None else config_text(cfg.get(key)) for key in ("title", "description")
        )

    # -- rules ------------------------------------------------------------------------------------
    def _rel(self, file: Path) -> str | None:
        try:
            return file.resolve().relative_to(self.src_dir).as_posix()
        except ValueError:
            return None

    def rewrite(self, rel: str) -> str:
        """``rel`` (relative to ``srcDir``, with ``.md``) after ``rewrites`` (first match wins)."""
        for rule in self.rewrites:
            params = rule.match(rel)
            if params is not None:
                return rule.build(params)[1:]
        return rel

    def url_path(self, page: str) -> str:
        """The page path under the base URL of the rewritten source path ``page``."""
        page = re.sub(r"(^|/)index\.md$", r"\1", page)
        return re.sub(r"\.md$", "" if self.clean_urls else ".html", page)

    def locale(self, page: str) -> Locale | None:
        """The locale other than ``root`` whose ``/key/`` starts the rewritten page path ``page``
        (``getLocaleForPath``), or None: the root locale, VitePress's default."""
        normal = re.sub(r"(?:(^|/)index)?(?:\.(?:md|html))?$", r"\1", "/" + page, count=1)
        for loc in self.locales:
            if loc.key != "root" and not re.match(r"^(?:[a-z]+:|//)", loc.key, re.I) and _locale_match(loc.key, normal):
                return loc
        return None

    def language(self, page: str) -> str:
        """The ``lang`` of the rewritten page path ``page`` ('' for a site without locales or
        ``lang``)."""
        if not self.locales and not self.lang:
            return ""
        loc = self.locale(page)
        if loc is not None:
            return str(loc.lang or self.lang or DEFAULT_LANG)
        root = next((loc for loc in self.locales if loc.key == "root"), None)
        return (root.lang if root else "") or self.lang or DEFAULT_LANG

    # -- Layout -----------------------------------------------------------------------------------
    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """'' for a page; else why VitePress does not build ``file`` (absolute path)."""
        rel = self._rel(file)
        if rel is None:
            return OUTSIDE
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or "node_modules" in parts[:-1] or "dist" in parts[:-1]:
            return ALWAYS_EXCLUDED
        if not rel.endswith(".md"):
            return NOT_MARKDOWN
        if self.src_exclude and excluded(rel, self.src_exclude):
            return EXCLUDED
        if re.search(r"\[(\w+?)\]", rel):
            return DYNAMIC_ROUTE
        return ""

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """The page of ``file``: its path under the base URL and its language; None when it is
        not a page."""
        if self.skip_reason(file, front):
            return None
        rel = self._rel(file)
        assert rel is not None
        page = self.rewrite(rel)
        # a translation only beside the root locale's pages (the default): with no root, each locale is a site of its own
        translated = self.locale(page) is not None and any(loc.key == "root" for loc in self.locales)
        return Placement(self.url_path(page), language=self.language(page), translation=translated)

    def content_roots(self) -> list[Path]:
        """``[srcDir]``."""
        return [self.src_dir]

    def versions(self) -> list[str]:
        """VitePress has no versions: []."""
        return []

    def describe(self) -> dict[str, Any]:
        """The ingest summary's ``site`` block."""
        langs: list[str] = []
        if self.locales or self.lang:  # as language() gives them: the root's, then each locale with pages
            langs.append(self.language("index.md"))
            for loc in self.locales:  # a locale that only links elsewhere (no folder) has no pages here
                if loc.key != "root" and (self.rewrites or (self.src_dir / loc.key).is_dir()):
                    langs.append(loc.lang or self.lang or DEFAULT_LANG)
        langs = list(dict.fromkeys(langs))
        return {
            "versions": [],
            "languages": langs,
            "suffixes": [".md"],
            "content_dirs": [str(self.src_dir)],
            "clean_urls": self.clean_urls,
            "base": self.base,
            "rewrites": [r.source for r in self.rewrites],
            "src_exclude": self.src_exclude,
        }


def _locale_match(key: str, normal: str) -> bool:
    """``isActive(path, '', '^/key/', true)``: the key is a regular expression source."""
    try:
        return re.match(f"^/{key}/", normal) is not None
    except re.error:
        return normal.startswith(f"/{key}/")


# -- globs (tinyglobby / picomatch) ----------------------------------------------------------------
def _expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for alt in m.group(1).split(",") for x in _expand_braces(pattern[: m.start()] + alt + pattern[m.end() :])]


def _glob_regex(pattern: str) -> re.Pattern[str]:
    p = pattern.removeprefix("./").rstrip("/")
    rx = re.escape(p).replace(r"\*\*/", "(?:.*/)?").replace(r"/\*\*", "(?:/.*)?").replace(r"\*\*", ".*")
    return re.compile(rx.replace(r"\*", "[^/]*").replace(r"\?", "[^/]"))


def excluded(rel: str, patterns: Sequence[str]) -> bool:
    """True when ``rel`` or a folder above it matches one of the ``srcExclude`` globs (tinyglobby
    ignores a matched folder with everything in it)."""
    parts = rel.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        for p in _expand_braces(pattern):
            rx = _glob_regex(p)
            if any(rx.fullmatch(c) for c in candidates):
                return True
    return False


# -- the generator --------------------------------------------------------------------------------
def read_vitepress(root: Path) -> VitePressLayout | None:
    """The layout of the VitePress project whose ``.vitepress/`` lies in ``root``, or None.

    Raises:
        ConfigError: an unreadable configuration or an invalid ``rewrites`` pattern (names the file).
    """
    config = find_config(root)
    if config is None:
        return None
    try:
        return VitePressLayout(config, read_config(config))
    except ConfigError:
        cfg = _define_config_argument(config)
        if cfg is None:
            raise
    layout = VitePressLayout(config, cfg)
    layout.notes.insert(
        0, f"{config.name}: the exported configuration is computed by wrapper calls; the object given to defineConfig() was read"
    )
    return layout


def _define_config_argument(config: Path) -> dict[str, Any] | None:
    """The object literal passed to ``defineConfig(…)`` in ``config`` (the VitePress helper,
    often wrapped: ``withPwa(extendConfig(defineConfig({…})))``), read with
    :mod:`esrag.sites.jsconfig`'s evaluator; None when there is none."""
    try:
        found = arguments_of(config.read_text(encoding="utf-8-sig"), "defineConfig")
    except (OSError, UnicodeDecodeError, JsSyntaxError):
        return None
    return next((v for v in found if isinstance(v, dict)), None)


def detect(folder: Path) -> Detected | None:
    """The VitePress site whose ``.vitepress/config.*`` lies in ``folder``, or None."""
    layout = read_vitepress(folder)
    if layout is None:
        return None
    return Detected(
        "vitepress",
        layout.src_dir,
        layout.base_url,
        config=layout.config,
        layout=layout,
        notes=list(layout.notes),
        title=layout.title,
        description=layout.description,
    )


GENERATOR = Generator(
    name="vitepress",
    detect=detect,
    anchors=page_anchors,
    page_path=None,
    config_files=(".vitepress/config.{js,ts,mjs,mts}",),
    summary=(
        "`**/*.md` under `srcDir` minus `srcExclude`, `rewrites`; URL `base` + path with `index.md` -> folder, "
        "`.md` -> `.html` (or '' with `cleanUrls`); locales by path prefix; anchors `@mdit-vue/shared` slugify, "
        "duplicates `-1`, `{#id}` wins"
    ),
    source=(
        "vuejs/vitepress src/node/config.ts, src/node/plugins/dynamicRoutesPlugin.ts, rewritesPlugin.ts, "
        "localSearchPlugin.ts, src/node/build/generateSitemap.ts, src/shared/shared.ts, src/node/markdown/markdown.ts; "
        "@mdit-vue/shared src/slugify.ts"
    ),
    priority=40,
)
