"""Nextra 4 (Next.js app router): which files of a site are pages, at which URL, in which
language, and the ids of their headings.

Read from the site's own files, following Nextra 4 (shuding/nextra ``packages/nextra``) on the
Next.js app router (Next.js docs "Project structure and organization", "Route groups",
"Private folders", "Dynamic routes", ``basePath``, ``i18n``):

* the site: ``package.json`` depending on ``nextra``, or ``next.config.{js,mjs,ts,cjs,mts}``
  importing ``nextra`` (read as code with :mod:`esrag.sites.jsconfig`: Next's ``basePath`` and
  ``i18n`` from the object given to the ``nextra(...)``-made wrapper, ``contentDirBasePath``
  from the ``nextra({...})`` options). A tree holding ``app/**/page.mdx`` without either file
  and without ``package.json`` and ``next.config.*`` (a docs folder copied out of its project) is
  taken as Nextra with lower confidence, named in a note; a Next.js project of another kind is not;
* app router pages (Next.js file conventions; Nextra docs ``file-conventions/page-file``):
  ``{src/,}app/**/page.{md,mdx}``; the URL is the folder path with route groups ``(group)``
  dropped; folders starting with ``_`` are private (not routed); ``[param]``, ``[...x]``,
  ``[[...x]]`` folders are dynamic routes (their pages come from code: skipped, named) and
  ``@slot`` folders parallel routes (not a URL segment: skipped, named); any other file under
  ``app/`` is not a page;
* content-directory mode (Nextra docs ``file-conventions/content-directory``): with a
  ``[[...mdxPath]]/page.{jsx,tsx,js,ts}`` anywhere under ``app/`` (``app/docs/[[...mdxPath]]``,
  ``app/[lang]/[[...mdxPath]]`` in Nextra's own examples) the files ``{src/,}content/**/*.{md,mdx}`` are
  pages at ``contentDirBasePath`` + their path without extension, ``index`` dropped; ``_meta.*``
  files are code, not pages (also under ``app/``);
* i18n: the route's first segment is a locale when Next's ``i18n.locales`` lists it; the
  ``defaultLocale`` is no translation;
* heading ids (``server/remark-plugins/remark-headings.ts``, ``remark-custom-heading-id.ts``):
  github-slugger per page on the heading text, or on a custom ``[#id]`` written at the end of
  the heading (that id goes through the slugger too). Nextra gives the page's h1 no id
  (``h1_anchor=False``): its section URL is the page URL;
* title: the page's first h1, else front matter ``title`` (``remark-mdx-title.ts``); the h1 is in
  the text, so section paths start from it.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError
from esrag.sites.generator import Detected, Generator
from esrag.sites.jsconfig import UNKNOWN, JsSyntaxError, arguments_of, call_arguments, evaluate, tokenize
from esrag.sites.layout import OUTSIDE, Placement
from esrag.sites.slugs import github_slug, github_unique

CONFIG_NAMES = ("next.config.js", "next.config.mjs", "next.config.ts", "next.config.cjs", "next.config.mts")
PAGE_NAMES = ("page.md", "page.mdx")
SUFFIXES = (".md", ".mdx")
CATCH_ALL = "[[...mdxPath]]"

# skip reasons (the ingest summary's keys)
NOT_A_PAGE = "not a page file (the app router serves app/**/page.{md,mdx} only)"
PRIVATE = "in a private folder (_name: not routed by Next.js)"
DYNAMIC = "in a dynamic route folder ([param]: its pages come from code)"
SLOT = "in a parallel route slot (@name: rendered inside a layout, not a page of its own)"
META = "a _meta file (Nextra's navigation code, not a page)"
NOT_CONTENT = "not a Markdown page of the content directory (.md, .mdx)"

_CUSTOM_ID = re.compile(r"\s*\[#([^\]]+?)]\s*$")


def nextra_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """Nextra's ``remarkHeadings``: github-slugger (``x``, ``x-1``…) per page on an explicit id,
    a custom ``[#id]`` at the end of the title, else the title."""
    occurrences: dict[str, int] = {}
    out = []
    for title, given in zip(titles, explicit):
        custom = _CUSTOM_ID.search(title)
        out.append(github_unique(github_slug(given or (custom.group(1) if custom else title)), occurrences))
    return out


def route_of(folders: Sequence[str]) -> tuple[str, str]:
    """The URL path of an app-router page in ``folders`` (segments below ``app/``) and '' — or
    '' and the reason it is not routed (private, dynamic, slot)."""
    out = []
    for seg in folders:
        if seg.startswith("_"):
            return "", PRIVATE
        if seg.startswith("[") and seg.endswith("]"):
            return "", DYNAMIC
        if seg.startswith("@"):
            return "", SLOT
        if not (seg.startswith("(") and seg.endswith(")")):
            out.append(seg)
    return "/".join(out), ""


@dataclass(slots=True)
class NextraLayout:
    """The pages of a Nextra site (see the module docstring); a :class:`esrag.sites.layout.Layout`.

    Attributes:
        config: the ``next.config.*`` read (else ``package.json``, else the ``app`` folder).
        site_dir: the project folder; app_dir: ``{src/,}app``; content_dir: ``{src/,}content``
            when the content-directory catch-all page exists, else None.
        base_path: Next's ``basePath`` without slashes; content_base: ``contentDirBasePath`` the same.
        locales, default_locale: Next's ``i18n``.
    """

    config: Path
    site_dir: Path
    app_dir: Path
    content_dir: Path | None = None
    base_path: str = ""
    content_base: str = ""
    locales: tuple[str, ...] = ()
    default_locale: str = ""
    notes: list[str] = field(default_factory=list)
    generator: str = "nextra"

    def _under(self, file: Path, folder: Path | None) -> list[str] | None:
        if folder is None:
            return None
        try:
            return file.resolve().relative_to(folder).as_posix().split("/")
        except ValueError:
            return None

    def _route(self, file: Path) -> tuple[str | None, str]:
        """``(route, '')`` for a page, ``(None, reason)`` otherwise."""
        parts = self._under(file, self.app_dir)
        if parts is not None:
            if parts[-1].startswith("_meta."):
                return None, META
            if parts[-1] not in PAGE_NAMES:
                return None, NOT_A_PAGE
            route, reason = route_of(parts[:-1])
            return (None, reason) if reason else (route, "")
        parts = self._under(file, self.content_dir)
        if parts is None:
            return None, OUTSIDE
        if parts[-1].startswith("_meta."):
            return None, META
        if not parts[-1].endswith(SUFFIXES):
            return None, NOT_CONTENT
        stem = posixpath.splitext("/".join(parts))[0]
        stem = "" if stem == "index" else stem.removesuffix("/index")
        return "/".join(p for p in (self.content_base, stem) if p), ""

    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """'' for a page Nextra serves; else why not."""
        return self._route(file)[1]

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """The page of ``file``: ``basePath`` + route, its locale (the route's first segment when
        ``i18n.locales`` lists it)."""
        route, _ = self._route(file)
        if route is None:
            return None
        first = route.split("/")[0]
        language = first if first in self.locales else ""
        path = "/".join(p for p in (self.base_path, route) if p)
        return Placement(path, language=language, translation=bool(language) and language != self.default_locale)

    def content_roots(self) -> list[Path]:
        return [d for d in (self.app_dir, self.content_dir) if d is not None]

    def versions(self) -> list[str]:
        return []

    def describe(self) -> dict[str, Any]:
        """The ingest summary's ``site`` block."""
        return {
            "versions": [],
            "languages": list(self.locales),
            "suffixes": list(SUFFIXES),
            "content_dirs": [str(d) for d in self.content_roots()],
            "base_path": "/" + self.base_path,
            "content_dir_base_path": "/" + self.content_base,
            "notes": list(self.notes),
        }


def _depends_on_nextra(folder: Path) -> bool:
    """True when ``folder/package.json`` lists ``nextra`` in its dependencies.

    Raises:
        ConfigError: an unreadable ``package.json`` (names the file)."""
    path = folder / "package.json"
    if not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not readable JSON: {exc}") from None
    deps = [data.get(k) for k in ("dependencies", "devDependencies", "peerDependencies")] if isinstance(data, dict) else []
    return any(isinstance(d, dict) and "nextra" in d for d in deps)


def _wrappers(text: str, nextra: str) -> list[str]:
    """Names bound to a call of the ``nextra`` import (``const withNextra = nextra({...})``)."""
    toks = tokenize(text)
    return [
        str(toks[i + 1].value)
        for i in range(len(toks) - 4)
        if toks[i].value in ("const", "let", "var")
        and toks[i + 2].value == "="
        and toks[i + 3].value == nextra
        and toks[i + 4].value == "("
    ]


def read_next_config(path: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(next options, nextra options)`` of the Next configuration at ``path``; None when it does
    not import ``nextra``. Values computed at build time are :data:`UNKNOWN`.

    Raises:
        ConfigError: a file that cannot be read as JavaScript (names the file and line).
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
        calls = call_arguments(text, "nextra")
        if calls is None:
            return None
        options = calls[0] if calls and isinstance(calls[0], dict) else {}
        match = re.search(r"import\s+(\w+)\s+from\s+['\"]nextra['\"]", text)
        names = _wrappers(text, match.group(1) if match else "nextra")
        wrapped = [a for n in names for a in arguments_of(text, n) if isinstance(a, dict)]
        if wrapped:
            return wrapped[0], options
        try:
            return evaluate(text), options
        except JsSyntaxError:
            return {}, options
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except JsSyntaxError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _strip(value: Any, key: str, notes: list[str]) -> str:
    if value is UNKNOWN:
        notes.append(f"{key} is computed at build time; '' assumed")
    return value.strip("/") if isinstance(value, str) else ""


def _app_dir(folder: Path) -> Path | None:
    return next((d for d in (folder / "app", folder / "src" / "app") if d.is_dir()), None)


def read_nextra(folder: Path) -> NextraLayout | None:
    """The layout of the Nextra site whose project is ``folder``, or None (see the module docstring).

    Raises:
        ConfigError: an unreadable ``package.json`` or Next configuration (names the file).
    """
    app = _app_dir(folder)
    if app is None:
        return None
    config = next((folder / n for n in CONFIG_NAMES if (folder / n).is_file()), None)
    read = read_next_config(config) if config is not None else None
    notes: list[str] = []
    if read is None and not _depends_on_nextra(folder):
        if config is not None or (folder / "package.json").is_file() or not any(app.rglob("page.md*")):
            return None  # a Next.js project of another kind (@next/mdx, fumadocs…)
        notes.append(f"{folder}: no package.json or next.config importing nextra; Nextra assumed from app/**/page.mdx")
    nxt, options = read or ({}, {})
    raw = nxt.get("i18n")
    i18n: dict[str, Any] = raw if isinstance(raw, dict) else {}
    locales = tuple(str(x) for x in i18n.get("locales", []) if isinstance(x, str)) if isinstance(i18n.get("locales"), list) else ()
    catch_all = any(p.parent.name == CATCH_ALL and p.suffix in (".jsx", ".tsx", ".js", ".ts") for p in app.rglob("page.*"))
    content = next((d for d in (folder / "content", folder / "src" / "content") if d.is_dir()), None) if catch_all else None
    layout = NextraLayout(
        config=config or (folder / "package.json" if (folder / "package.json").is_file() else app),
        site_dir=folder.resolve(),
        app_dir=app.resolve(),
        content_dir=content.resolve() if content else None,
        base_path=_strip(nxt.get("basePath"), "basePath", notes),
        content_base=_strip(options.get("contentDirBasePath"), "contentDirBasePath", notes),
        locales=locales,
        default_locale=str(i18n.get("defaultLocale") or ""),
        notes=notes,
    )
    return layout


def detect(folder: Path) -> Detected | None:
    """The Nextra site whose project is ``folder`` (an ``app/`` or ``src/app/`` there), or None.

    Raises:
        ConfigError: an unreadable ``package.json`` or Next configuration (names the file).
    """
    layout = read_nextra(folder)
    if layout is None:
        return None
    return Detected(
        "nextra",
        layout.site_dir,
        config=layout.config,
        layout=layout,
        notes=list(layout.notes),
        confidence=0.5 if layout.notes and "assumed from app" in layout.notes[0] else 1.0,
    )


GENERATOR = Generator(
    name="nextra",
    detect=detect,
    anchors=nextra_anchors,
    page_path=None,
    config_files=("next.config.{js,mjs,ts}", "package.json"),
    summary=(
        "app/**/page.{md,mdx} at the folder path ((groups) dropped, _private and [dynamic] skipped) or content/**/*.mdx "
        "under contentDirBasePath; basePath, i18n locales by first segment; anchors github-slugger per page, [#id] slugged"
    ),
    source="shuding/nextra packages/nextra/src/server (remark-plugins/remark-headings.ts, remark-custom-heading-id.ts); Nextra docs file-conventions; Next.js app router routing docs",
    priority=90,
    h1_anchor=False,
)

__all__ = ["GENERATOR", "NextraLayout", "detect", "nextra_anchors", "read_next_config", "read_nextra", "route_of"]
