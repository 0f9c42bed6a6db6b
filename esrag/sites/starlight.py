"""Starlight (Astro): which files of ``src/content/docs/`` a site publishes, at which URL, in which
language, and the ids of their headings.

Read from the site's own files, following Starlight 0.35 (``packages/starlight/`` in
withastro/starlight) on Astro 5 (``packages/astro/`` in withastro/astro):

* ``astro.config.{mjs,js,ts,mts,cjs,cts}`` (Astro ``core/config/config.ts`` ``configPaths``) is
  read as code (:mod:`esrag.sites.jsconfig`): ``site``, ``base``, ``srcDir``, ``build.format``,
  ``trailingSlash``, and the options of the ``starlight({...})`` call in ``integrations``
  (``locales``, ``defaultLocale``, and ``title`` / ``description``, the site's title and
  description: ``title`` is a string or an object of titles by BCP-47 tag, of which the default
  locale's language is taken — else ``en``, else the first);
* pages (``loaders.ts`` ``docsLoader``): files under ``<srcDir>/content/docs/`` matching
  ``**/[^_]*.{markdown,mdown,mkdn,mkd,mdwn,md,mdx}`` (``.mdoc`` too when ``@astrojs/markdoc`` is
  an integration); a file *name* starting with ``_`` is skipped (folders starting with ``_`` are
  read: ``**`` matches them); dot files and folders are skipped (tinyglobby ``dot: false``);
* the entry id (Astro ``content/loaders/glob.ts`` ``generateIdDefault``): front matter ``slug``
  as written, else ``content/utils.ts`` ``getContentEntryIdAndSlug``: the path without its
  extension, each segment through github-slugger's ``slug``, a trailing ``/index`` dropped;
  Starlight maps ``index`` to the root (``utils/routing/index.ts`` ``normalizeIndexSlug``,
  ``utils/slugs.ts`` ``slugToParam``);
* ``draft: true`` pages are not built (production builds, ``utils/routing/index.ts``);
* output file (Astro ``core/util.ts`` ``getOutputFilename``): ``<slug>/index.html`` (``build.format``
  ``directory``, the default), ``<slug>.html`` (``file``; ``preserve`` for Starlight's injected
  route), ``404.html`` for the slug ``404``; the page path is ``<slug>/`` (``<slug>`` with
  ``trailingSlash: 'never'``) or ``<slug>.html`` under ``site`` + ``base``;
* locales (``utils/user-config.ts``, ``integrations/shared/slugToLocale.ts``,
  ``utils/slugs.ts`` ``localeToLang``): the slug's first segment is a locale when it is a key of
  ``locales`` (``root``: pages at the top level); a page's language is its locale's ``lang``
  (else the key; the root's ``lang``, else the default locale's, else ``en``). A multilingual
  site also builds *fallback* pages: every page of the default locale that a locale lacks is
  published again under that locale (``getRoutes``); they are the page's ``alt_paths``;
* heading ids (Astro ``packages/markdown/remark/src/rehype-collect-headings.ts``
  ``rehypeHeadingIds``): github-slugger per page (``x``, ``x-1``…), then one trailing ``-``
  dropped; an id written in HTML is kept and not counted by the slugger.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError, SourceError
from esrag.sites.frontmatter import lift_front_matter, parse_front_matter
from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.jsconfig import UNKNOWN, JsSyntaxError, call_arguments, evaluate
from esrag.sites.layout import OUTSIDE, Placement
from esrag.sites.slugs import github_slug, github_unique

#: Astro's configuration files, in the order Astro looks for them (``core/config/config.ts``).
CONFIG_NAMES = ("astro.config.mjs", "astro.config.js", "astro.config.ts", "astro.config.mts", "astro.config.cjs", "astro.config.cts")
STARLIGHT = "@astrojs/starlight"
MARKDOC = "@astrojs/markdoc"
#: suffixes ``docsLoader`` reads (``loaders.ts`` ``docsExtensions``); ``.mdoc`` with Markdoc.
DOCS_SUFFIXES = (".markdown", ".mdown", ".mkdn", ".mkd", ".mdwn", ".md", ".mdx")
FORMATS = ("directory", "file", "preserve")
TRAILING = ("ignore", "always", "never")
#: Astro's status pages (``core/constants.ts`` ``STATUS_CODE_PAGES``): written as ``<name>.html``.
STATUS_PAGES = ("404", "500")

# skip reasons (the ingest summary's keys)
PARTIAL = "file name starts with _ (Starlight's docsLoader skips it)"
NOT_A_PAGE = "not a Starlight page suffix (.md, .mdx, .markdown…; .mdoc with @astrojs/markdoc)"
HIDDEN = "a dot file or in a dot folder (the docs glob skips them)"
DRAFT = "draft: true (Starlight leaves drafts out of production builds)"
NOT_FOUND = "Starlight's 404 page (built as 404.html, not documentation)"


# -- slugs ---------------------------------------------------------------------------------------
def entry_slug(rel: str) -> str:
    """Astro ``getContentEntryIdAndSlug``'s slug of ``rel`` (POSIX, relative to the docs folder):
    the path without its last extension, each segment through github-slugger, ``/index`` at the
    end dropped (``Guides/Getting Started.md`` -> ``guides/getting-started``; the top-level
    ``index.md`` stays ``index``)."""
    stem = rel[: -len(posixpath.splitext(rel)[1])] if posixpath.splitext(rel)[1] else rel
    slug = "/".join(github_slug(seg) for seg in stem.split("/"))
    return slug[: -len("/index")] if slug.endswith("/index") else slug


def page_slug(rel: str, front: dict[str, Any]) -> str:
    """The Starlight slug of the page at ``rel``: front matter ``slug`` as written (a truthy value,
    leading and trailing ``/`` dropped), else :func:`entry_slug`; ``index`` -> '' (the root)."""
    given = front.get("slug")
    slug = str(given).strip("/") if given not in (None, "", False, 0) and not isinstance(given, (dict, list)) else entry_slug(rel)
    return "" if slug == "index" else slug


def slug_to_param(slug: str) -> str | None:
    """Starlight ``slugToParam``: the route parameter of a slug (None: the root page)."""
    if slug in ("index", "", "/"):
        return None
    return slug[: -len("/index")] if slug.endswith("/index") else slug


def astro_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """Astro ``rehypeHeadingIds``: the id of each heading of one page, in document order.

    ``titles``: the headings' rendered texts; ``explicit``: an id written in HTML per heading
    ('' where none), kept as is and not counted by the slugger. Other headings get
    github-slugger's slug (``x``, ``x-1``, ``x-2``…), then one trailing ``-`` is dropped."""
    occurrences: dict[str, int] = {}
    out = []
    for title, given in zip(titles, explicit):
        if given:
            out.append(given)
            continue
        slug = github_unique(github_slug(title), occurrences)
        out.append(slug[:-1] if slug.endswith("-") else slug)
    return out


# -- the site's configuration --------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Locales:
    """Starlight's resolved i18n (``utils/user-config.ts``): ``keys`` -> ``lang`` of each configured
    locale (empty for a monolingual site), ``default`` (the default locale's key; None: root),
    ``default_lang``, ``multilingual`` (more than one locale)."""

    langs: dict[str, str]
    default: str | None
    default_lang: str
    multilingual: bool

    def of(self, slug: str) -> str | None:
        """``slugToLocale``: the locale key serving ``slug`` (None: the root locale)."""
        first = slug.split("/")[0]
        if first and first in self.langs:
            return first
        return None if "root" in self.langs or not self.langs else self.default

    def lang(self, locale: str | None) -> str:
        """``localeToLang``: the BCP-47 tag of ``locale`` (None: root)."""
        return self.langs.get(locale if locale else "root", "") or self.default_lang

    def localized(self, slug: str, locale: str | None) -> str:
        """``localizedSlug``: ``slug`` moved to ``locale`` (None: root)."""
        current = self.of(slug)
        if current == locale:
            return slug
        target = locale or ""
        if current == slug:
            return target
        if current:
            return slug.replace(current + "/", target + "/" if target else "", 1).rstrip("/")
        return target + "/" + slug if slug else target

    def in_locale(self, slug: str, locale: str | None) -> bool:
        """``filterByLocale``'s test: ``slug`` belongs to ``locale`` (None: root)."""
        if not self.langs:
            return True
        if locale and locale in self.langs:
            return slug == locale or slug.startswith(locale + "/")
        if "root" in self.langs:
            return self.of(slug) is None
        return True


def read_locales(options: dict[str, Any], notes: list[str]) -> Locales:
    """Starlight's ``locales`` / ``defaultLocale`` options resolved as ``StarlightConfigSchema``
    does: ``lang`` defaults to the key; a monolingual site (no locales, or only ``root``) keeps no
    locale keys.

    Raises:
        ConfigError: ``defaultLocale`` names no configured locale (Starlight refuses it too).
    """
    raw = options.get("locales")
    if raw is UNKNOWN or options.get("defaultLocale") is UNKNOWN:
        notes.append("Starlight locales are computed at build time; one language assumed")
    raw = raw if isinstance(raw, dict) else {}
    langs = {
        str(k): (str(v.get("lang")) if isinstance(v, dict) and isinstance(v.get("lang"), str) else ("" if k == "root" else str(k)))
        for k, v in raw.items()
    }
    default = options.get("defaultLocale")
    default = str(default) if isinstance(default, str) and default != "root" else None
    if len(langs) > 1 or (len(langs) == 1 and "root" not in langs):
        key = default or "root"
        if key not in langs:
            raise ConfigError(f"Starlight defaultLocale {key!r} is not one of the locales {', '.join(langs)}")
        return Locales(langs, default, langs[key] or key, len(langs) > 1)
    return Locales({}, None, langs.get("root") or "en", False)


@dataclass(slots=True)
class _Page:
    slug: str
    draft: bool


class StarlightLayout:
    """The docs pages of a Starlight site (see the module docstring); a
    :class:`esrag.sites.layout.Layout`.

    Attributes:
        config: the Astro configuration file read. site_dir: its folder.
        docs_dir: ``<srcDir>/content/docs`` (absolute).
        base_path: Astro ``base`` as ``/…/``; base_url: ``site`` + base_path ('' when ``site`` is
            not an absolute literal URL).
        build_format: ``directory`` | ``file`` | ``preserve``; trailing_slash: ``ignore`` |
            ``always`` | ``never``.
        locales: the resolved :class:`Locales`. suffixes: the page suffixes read.
        title, description: the ``starlight()`` options' (module docstring; '' when not literal).
        notes: what could not be read (values computed at build time), for the report.
    """

    generator = "starlight"
    anchor_rule = ""  # Astro's rehypeHeadingIds (GENERATOR.anchors)

    def __init__(self, config: Path, astro: dict[str, Any], options: dict[str, Any], markdoc: bool = False) -> None:
        self.config = config
        self.site_dir = config.parent
        self.notes: list[str] = []
        src = astro.get("srcDir")
        self.docs_dir = (self.site_dir / (src if isinstance(src, str) else "src") / "content" / "docs").resolve()
        base = astro.get("base")
        base = base.strip("/") if isinstance(base, str) else ""
        self.base_path = f"/{base}/" if base else "/"
        site = astro.get("site")
        absolute = isinstance(site, str) and site.startswith(("http://", "https://"))
        self.base_url = site.rstrip("/") + self.base_path if absolute and isinstance(site, str) else ""
        build = astro["build"] if isinstance(astro.get("build"), dict) else {}
        self.build_format = _choice(build.get("format"), FORMATS, "build.format", self.notes)
        self.trailing_slash = _choice(astro.get("trailingSlash"), TRAILING, "trailingSlash", self.notes)
        for key in ("site", "base", "srcDir"):
            if astro.get(key) is UNKNOWN:
                self.notes.append(f"Astro {key} is computed at build time: pass --base-url")
        if astro.get("i18n") not in (None, UNKNOWN) and not options.get("locales"):
            self.notes.append("Astro's i18n option (instead of Starlight's locales) is not read; one language assumed")
        self.locales = read_locales(options, self.notes)
        self.title = _localized_title(options.get("title"), self.locales.default_lang)
        self.description = config_text(options.get("description"))
        self.suffixes = DOCS_SUFFIXES + ((".mdoc",) if markdoc else ())
        self._pages: dict[str, _Page] | None = None
        self._built: set[str] | None = None

    # -- which files are pages -------------------------------------------------------------------
    def _rel(self, file: Path) -> str | None:
        try:
            return file.resolve().relative_to(self.docs_dir).as_posix()
        except ValueError:
            return None

    def _glob_reason(self, rel: str) -> str:
        """Why ``docsLoader``'s glob does not match ``rel`` ('' when it does)."""
        name = posixpath.basename(rel)
        if any(part.startswith(".") for part in rel.split("/")):
            return HIDDEN
        if not name.lower().endswith(self.suffixes):
            return NOT_A_PAGE
        return PARTIAL if name.startswith("_") else ""

    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """'' for a page Starlight builds; else why it does not (outside the docs folder, not a
        page suffix, a ``_`` file, a draft, the 404 page)."""
        rel = self._rel(file)
        if rel is None:
            return OUTSIDE
        reason = self._glob_reason(rel)
        if reason:
            return reason
        if front.get("draft") is True:
            return DRAFT
        return NOT_FOUND if slug_to_param(page_slug(rel, front)) == "404" else ""

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """The page of ``file``: its path under the base URL, its language (a locale's ``lang``;
        '' for a site without locales) and its fallback pages in the other locales."""
        rel = self._rel(file)
        if rel is None or self._glob_reason(rel):
            return None
        slug = page_slug(rel, front)
        locale = self.locales.of(slug)
        language = self.locales.lang(locale) if self.locales.langs else ""
        alts = [self.page_path(s) for s in self.fallbacks(slug)]
        translation = self.locales.multilingual and locale != self.locales.default
        return Placement(self.page_path(slug), language=language, alt_paths=alts, translation=translation)

    def page_path(self, slug: str) -> str:
        """The published path of ``slug`` under the base URL (no leading ``/``; '' = the base)."""
        param = slug_to_param(slug)
        if param is None:
            return ""
        if self.build_format != "directory" or param in STATUS_PAGES:
            return param + ".html"
        return param if self.trailing_slash == "never" else param + "/"

    # -- fallback pages of a multilingual site ---------------------------------------------------
    def pages(self) -> dict[str, _Page]:
        """Every page under the docs folder by POSIX path: its slug and draft flag (front matter
        read once; unreadable front matter counts as none)."""
        if self._pages is None:
            found: dict[str, _Page] = {}
            for path in sorted(self.docs_dir.rglob("*")) if self.docs_dir.is_dir() else []:
                rel = path.relative_to(self.docs_dir).as_posix()
                if path.is_file() and not self._glob_reason(rel):
                    front = _front(path)
                    found[rel] = _Page(page_slug(rel, front), front.get("draft") is True)
            self._pages = found
        return self._pages

    def fallbacks(self, slug: str) -> list[str]:
        """The slugs under which Starlight republishes the default locale's page ``slug`` in the
        locales that lack it (``getRoutes``); [] for other pages and monolingual sites."""
        loc = self.locales
        if not loc.multilingual or not loc.in_locale(slug, loc.default):
            return []
        if self._built is None:
            self._built = {p.slug for p in self.pages().values() if not p.draft}
        out = []
        for key in loc.langs:
            locale = None if key == "root" else key
            target = loc.localized(slug, locale)
            if locale != loc.default and target != slug and not (target in self._built and loc.in_locale(target, locale)):
                out.append(target)
        return out

    # -- the rest of the Layout protocol ----------------------------------------------------------
    def content_roots(self) -> list[Path]:
        """The docs folder, when it exists."""
        return [self.docs_dir] if self.docs_dir.is_dir() else []

    def versions(self) -> list[str]:
        """[]: Starlight sites are not versioned by the generator."""
        return []

    def describe(self) -> dict[str, Any]:
        """The ingest summary's ``site`` block."""
        return {
            "versions": [],
            "languages": sorted(set(self.locales.langs.values()) - {""}) or [self.locales.default_lang],
            "suffixes": list(self.suffixes),
            "content_dirs": [str(d) for d in self.content_roots()],
            "base_path": self.base_path,
            "build_format": self.build_format,
            "trailing_slash": self.trailing_slash,
            "default_locale": self.locales.default or "root",
            "notes": list(self.notes),
        }


def _choice(value: Any, allowed: tuple[str, ...], key: str, notes: list[str]) -> str:
    """``value`` when it is one of ``allowed``, else the first (Astro's default), with a note when set."""
    if value in allowed:
        return str(value)
    if value is not None:
        notes.append(f"Astro {key} {value!r} is not one of {', '.join(allowed)}: {allowed[0]!r} assumed")
    return allowed[0]


def _localized_title(value: Any, lang: str) -> str:
    """``title`` as one string: a plain string as it is; of an object of titles by language tag,
    the default locale's language's (``lang``), else ``en``'s, else the first plain one; ''
    when there is none."""
    if not isinstance(value, dict):
        return config_text(value)
    for key in (lang, "en", *value):
        if config_text(value.get(key)):
            return config_text(value[key])
    return ""


def _front(path: Path) -> dict[str, Any]:
    try:
        return parse_front_matter(lift_front_matter(path.read_text(encoding="utf-8", errors="replace")), str(path))
    except SourceError:
        return {}


# -- detection -----------------------------------------------------------------------------------
def read_starlight(folder: Path) -> StarlightLayout | None:
    """The layout of the Starlight site whose Astro configuration is in ``folder``, or None when
    there is none, or it neither imports ``@astrojs/starlight`` nor has ``src/content/docs/``.

    Raises:
        ConfigError: the configuration file cannot be read as JavaScript (names the file and line).
    """
    config = next((folder / n for n in CONFIG_NAMES if (folder / n).is_file()), None)
    if config is None:
        return None
    try:
        text = config.read_text(encoding="utf-8-sig")
        astro = evaluate(text)
        calls = call_arguments(text, STARLIGHT)
        markdoc = bool(call_arguments(text, MARKDOC))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{config}: cannot read: {exc}") from None
    except JsSyntaxError as exc:
        raise ConfigError(f"{config}: {exc}") from None
    if calls is None and not (folder / "src" / "content" / "docs").is_dir():
        return None
    options = calls[0] if calls and isinstance(calls[0], dict) else {}
    layout = StarlightLayout(config, astro, options, markdoc)
    if calls is None:
        layout.notes.append(f"{config.name} does not import {STARLIGHT}: Starlight assumed from src/content/docs/")
    elif not calls or not isinstance(calls[0], dict):
        layout.notes.append("the starlight() options are computed at build time; defaults assumed")
    return layout


def detect(folder: Path) -> Detected | None:
    """The Starlight site configured in ``folder`` (``astro.config.*`` there), or None.

    Raises:
        ConfigError: unreadable configuration (names the file).
    """
    layout = read_starlight(folder)
    if layout is None:
        return None
    sure = not any(STARLIGHT in n for n in layout.notes)
    extra = tuple(f"*{s}" for s in layout.suffixes if s not in (".md", ".mdx", ".markdown"))
    return Detected(
        "starlight",
        layout.docs_dir,
        layout.base_url,
        config=layout.config,
        layout=layout,
        formats={s: "markdown" for s in layout.suffixes if s not in (".md", ".mdx", ".markdown")},
        include=extra,
        notes=list(layout.notes),
        confidence=1.0 if sure else 0.6,
        title=layout.title,
        description=layout.description,
    )


GENERATOR = Generator(
    name="starlight",
    detect=detect,
    anchors=astro_anchors,
    page_path=None,
    config_files=("astro.config.{mjs,js,ts,mts}",),
    summary=(
        "src/content/docs/**/*.{md,mdx} (not _files) at /<slug>/: github-slugger per path segment, "
        "index dropped, front matter slug wins; locales by first segment; anchors github-slugger per page"
    ),
    source="withastro/starlight packages/starlight (loaders.ts, utils/routing, utils/slugs.ts); withastro/astro (content/utils.ts, rehype-collect-headings.ts)",
    title_from_front=True,
    front_matter_after_blank_lines=True,
)

__all__ = [
    "CONFIG_NAMES",
    "GENERATOR",
    "Locales",
    "StarlightLayout",
    "astro_anchors",
    "detect",
    "entry_slug",
    "page_slug",
    "read_locales",
    "read_starlight",
    "slug_to_param",
]
