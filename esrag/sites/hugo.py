"""Hugo: which content files a site publishes, at which URL, in which language.

Read from the project's own configuration, following Hugo (0.123+, ``config/allconfig``,
``modules/config.go``, ``resources/page/pagepaths``, ``helpers/path.go``):

* configuration: ``hugo.{toml,yaml,yml,json}`` (or ``config.*``) in the project folder, and
  ``config/_default/`` merged with ``config/production/`` (what ``hugo`` builds; a file
  ``X.toml`` there is the key ``X``); keys are case-insensitive. Read: ``baseURL``,
  ``contentDir``, ``defaultContentLanguage``, ``defaultContentLanguageInSubdir``,
  ``languages`` (per-language ``contentDir``, ``disabled``), ``disableLanguages``,
  ``disablePathToLower``, ``uglyURLs``, ``buildDrafts``/``buildFuture``/``buildExpired``,
  ``title`` and ``params.description`` (the site's title and description; the default
  language's own ``languages.LANG.title`` / ``languages.LANG.params.description`` win);
* the content tree: ``[[module.mounts]]`` with target ``content`` or ``content/…`` (``source``,
  ``lang`` or ``sites.matrix.languages``, ``includeFiles``, ``excludeFiles``); when the project
  mounts no content, ``contentDir`` and each language's ``contentDir`` are mounted, as Hugo
  does by default. A file's language is its mount's, else a ``.LANG.md`` suffix, else the
  default language;
* pages (default permalinks): ``a/b.md`` -> ``/a/b/``, a section ``a/_index.md`` and a leaf
  bundle ``a/index.md`` -> ``/a/``; other files inside a leaf bundle are its resources, not
  pages; front matter ``url`` (from the site root when it starts with ``/``, else after the
  language prefix) and ``slug`` (the last segment); every segment sanitised as
  ``PathSpec.MakePathSanitized`` (spaces -> ``-``, characters outside letters, digits, marks
  and ``._~-#+@`` dropped, lower case unless ``disablePathToLower``); the language in the path
  for other languages, and for the default one with ``defaultContentLanguageInSubdir``;
* ``aliases`` (other addresses of a page: absolute, or relative to the page's folder) become
  alternative URLs;
* left out as Hugo leaves them out: ``draft: true``, a future ``publishDate``/``date`` or a
  past ``expiryDate`` (unless ``buildDrafts``/``buildFuture``/``buildExpired``), and pages
  that are not rendered (``build.render: never``/``false``, ``_build``, ``headless: true``),
  also through ``cascade`` in a section's ``_index.md`` front matter (with its ``target`` /
  ``_target`` ``path`` glob) or the site configuration.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import posixpath
import re
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from esrag.errors import ConfigError
from esrag.sites.frontmatter import parse_front_matter
from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.layout import EXCLUDED, NOT_BUILT, OUTSIDE, Placement, up_to_repository_root
from esrag.sites.slugs import blackfriday_slug, hugo_ascii_slug, hugo_page_anchors, hugo_slug

CONFIG_BASENAMES = ("hugo", "config")
CONFIG_EXTS = (".toml", ".yaml", ".yml", ".json")
CONTENT_SUFFIXES = (".md", ".markdown", ".mdown", ".html", ".htm", ".adoc", ".pandoc", ".pdc", ".org", ".rst")
DRAFT = "draft"
FUTURE = "future publish date"
EXPIRED = "expired"
RESOURCE = "page resource of a leaf bundle (not a page)"
LANGUAGE_DISABLED = "language disabled"


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower(): _lower_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower_keys(v) for v in value]
    return value


def _load(path: Path) -> dict[str, Any]:
    """One configuration file as a dict with lower-case keys.

    Raises:
        ConfigError: not valid TOML/YAML/JSON or not a mapping (names the file).
    """
    text = path.read_text(encoding="utf-8-sig")
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: not valid {path.suffix[1:].upper()}: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the configuration is not a mapping of keys to values")
    out: dict[str, Any] = _lower_keys(data)
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def config_files(folder: Path) -> list[Path]:
    """The configuration files Hugo reads for a production build of the project in ``folder``:
    the first of ``hugo.*`` / ``config.*``, then ``config/_default/*`` and
    ``config/production/*`` (empty: not a Hugo project)."""
    out: list[Path] = []
    for base in CONFIG_BASENAMES:
        found = [folder / f"{base}{ext}" for ext in CONFIG_EXTS if (folder / f"{base}{ext}").is_file()]
        if found:
            out.append(found[0])
            break
    for env in ("_default", "production"):
        d = folder / "config" / env
        if d.is_dir():
            out += sorted(p for p in d.iterdir() if p.is_file() and p.suffix in CONFIG_EXTS)
    return out


def read_config(folder: Path) -> tuple[dict[str, Any], list[Path]]:
    """The merged configuration of the Hugo project in ``folder`` and the files read.

    Raises:
        ConfigError: a configuration file is invalid.
    """
    files = config_files(folder)
    cfg: dict[str, Any] = {}
    for path in files:
        data = _load(path)
        name = path.stem.lower()
        if path.parent.parent.name == "config" and name not in CONFIG_BASENAMES:
            if "." in name:  # menus.en.toml: a language's key; not needed for URLs
                continue
            data = {name: data}
        cfg = _merge(cfg, data)
    return cfg, files


def sanitize_path(path: str, lower: bool = True) -> str:
    """Hugo ``PathSpec.MakePathSanitized`` / ``UnicodeSanitize``: keep letters, digits, marks and
    ``./\\_#+~-@`` (and ``%XX`` escapes); a run of spaces or hyphens between kept characters
    becomes one ``-``; lower-cased unless ``disablePathToLower``."""
    out: list[str] = []
    hyphen = False
    for i, ch in enumerate(path):
        cat = unicodedata.category(ch)
        allowed = ch in "./\\_#+~-@" or cat[0] in ("L", "M") or cat == "Nd"
        allowed = allowed or (ch == "%" and re.fullmatch(r"[0-9A-Fa-f]{2}", path[i + 1 : i + 3] or "") is not None)
        if allowed and ch != "-":
            if hyphen:
                out.append("-")
                hyphen = False
            out.append(ch)
        elif ch == "-" or ch.isspace():
            if out:
                hyphen = True
    if hyphen and path.endswith("-"):
        out.append("-")
    text = "".join(out)
    return text.lower() if lower else text


@dataclass(slots=True)
class Mount:
    """A content mount: absolute ``source`` folder, ``target`` path inside the content tree
    ('' = its root), its language ('' = any), include / exclude globs."""

    source: Path
    target: str = ""
    lang: str = ""
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)


def _expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [x for alt in m.group(1).split(",") for x in _expand_braces(pattern[: m.start()] + alt + pattern[m.end() :])]


def _glob(rel: str, patterns: list[str]) -> bool:
    """Hugo's ``hglob`` patterns (``includeFiles``/``excludeFiles``, cascade ``target.path``):
    ``**`` crosses folders, ``*`` does not, ``{a,b}`` alternatives; case-insensitive."""
    for pattern in patterns:
        for p in _expand_braces(pattern):
            rx = re.escape(p.lstrip("/")).replace(r"\*\*/", "(?:.*/)?").replace(r"/\*\*", "(?:/.*)?")
            rx = rx.replace(r"\*\*", ".*").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
            if re.fullmatch(rx, rel.lstrip("/"), re.IGNORECASE):
                return True
    return False


@dataclass(slots=True)
class _Where:
    logical: str  # path inside the content tree (target + path inside the mount)
    lang: str


class HugoLayout:
    """The pages of a Hugo project (see the module docstring); a :class:`esrag.sites.layout.Layout`.

    Attributes:
        config: the main configuration file (or the first of ``config/_default/``).
        base_url: ``baseURL`` ('' when not absolute).
        languages: enabled language codes, default first. mounts: content mounts.
        title, description: the site's (module docstring; '' when absent or not a string).
    """

    generator = "hugo"

    def __init__(self, folder: Path, cfg: dict[str, Any], files: list[Path]) -> None:
        self.folder = folder
        self.files = files
        self.config = files[0]
        base = str(cfg.get("baseurl") or "")
        self.base_url = base if base.startswith(("http://", "https://")) else ""
        self.default_lang = str(cfg.get("defaultcontentlanguage") or "en").lower()
        self.in_subdir = cfg.get("defaultcontentlanguageinsubdir") is True
        self.lower = cfg.get("disablepathtolower") is not True
        self.ugly = cfg.get("uglyurls") is True
        self.build_drafts = cfg.get("builddrafts") is True
        self.build_future = cfg.get("buildfuture") is True
        self.build_expired = cfg.get("buildexpired") is True
        langs = _dict(cfg.get("languages"))
        disabled = {str(x).lower() for x in cfg.get("disablelanguages") or [] if isinstance(x, str)}
        disabled |= {k for k, v in langs.items() if isinstance(v, dict) and v.get("disabled") is True}
        self.all_languages = [self.default_lang] + sorted(k for k in langs if k != self.default_lang)
        self.languages = [k for k in self.all_languages if k not in disabled]
        own = _dict(langs.get(self.default_lang))
        self.title = config_text(own.get("title", cfg.get("title")))
        self.description = config_text(_dict(own.get("params")).get("description", _dict(cfg.get("params")).get("description")))
        self.mounts = self._mounts(cfg, langs)
        self.cascades = _config_cascades(cfg)
        parser = _dict(_dict(_dict(cfg.get("markup")).get("goldmark")).get("parser"))
        id_type = str(parser.get("autoheadingidtype") or "github").lower()
        #: the slug of headings for autoHeadingIDType (``github``, ``github-ascii``, ``blackfriday``)
        self.heading_slug = {"github-ascii": hugo_ascii_slug, "blackfriday": blackfriday_slug}.get(id_type, hugo_slug)
        perma = _dict(cfg.get("permalinks"))
        self.permalinks = {"page": {k: v for k, v in perma.items() if isinstance(v, str)}, "section": {}}
        for kind in ("page", "section"):
            self.permalinks[kind].update({k: v for k, v in _dict(perma.get(kind)).items() if isinstance(v, str)})
        self._front_cache: dict[Path, dict[str, Any]] = {}

    def _mounts(self, cfg: dict[str, Any], langs: dict[str, Any]) -> list[Mount]:
        module = _dict(cfg.get("module"))
        out: list[Mount] = []
        for m in module.get("mounts") or []:
            if not isinstance(m, dict) or not isinstance(m.get("source"), str):
                continue
            target = str(m.get("target") or "").strip("/")
            if target != "content" and not target.startswith("content/"):
                continue
            lang = str(m.get("lang") or "").lower()
            matrix = _dict(_dict(m.get("sites")).get("matrix"))
            mlangs = matrix.get("languages")
            if not lang and isinstance(mlangs, list) and len(mlangs) == 1 and isinstance(mlangs[0], str):
                lang = mlangs[0].lower()
            inc, exc = m.get("includefiles") or [], m.get("excludefiles") or []
            out.append(
                Mount(
                    (self.folder / m["source"]).resolve(),
                    target[len("content") :].strip("/"),
                    lang,
                    [inc] if isinstance(inc, str) else list(inc),
                    [exc] if isinstance(exc, str) else list(exc),
                )
            )
        if out:
            return out
        for code, lc in langs.items():
            if isinstance(lc, dict) and isinstance(lc.get("contentdir"), str):
                out.append(Mount((self.folder / lc["contentdir"]).resolve(), "", str(code).lower()))
        out.append(Mount((self.folder / str(cfg.get("contentdir") or "content")).resolve()))
        return out

    # -- where a file lies -----------------------------------------------------------------------
    def _where(self, file: Path) -> _Where | None:
        file = file.resolve()
        for m in self.mounts:
            try:
                rel = file.relative_to(m.source).as_posix()
            except ValueError:
                continue
            if (m.include and not _glob(rel, m.include)) or _glob(rel, m.exclude):
                continue
            logical = f"{m.target}/{rel}" if m.target else rel
            lang = m.lang
            if not lang:
                parts = posixpath.basename(logical).split(".")
                lang = parts[-2].lower() if len(parts) > 2 and parts[-2].lower() in self.all_languages else self.default_lang
            return _Where(logical, lang)
        return None

    def _front(self, file: Path) -> dict[str, Any]:
        if file not in self._front_cache:
            try:
                self._front_cache[file] = parse_front_matter(file.read_text(encoding="utf-8-sig"), str(file))
            except Exception:  # an unreadable section file: no cascade from it
                self._front_cache[file] = {}
        return self._front_cache[file]

    def _is_resource(self, file: Path) -> bool:
        """True when ``file`` lies inside a leaf bundle (a folder above it holds ``index.*``) and is
        not that bundle's index."""
        for m in self.mounts:
            try:
                file.resolve().relative_to(m.source)
            except ValueError:
                continue
            d = file.resolve().parent
            first = True
            while True:
                for sfx in CONTENT_SUFFIXES:
                    idx = d / f"index{sfx}"
                    if idx.is_file() and (not first or idx != file.resolve()):
                        return not (first and file.stem.split(".")[0] == "index")
                if d == m.source or d.parent == d:
                    break
                d, first = d.parent, False
        return False

    def _cascaded(self, file: Path, logical: str) -> dict[str, Any]:
        """Values cascaded to ``file`` from ``_index.*`` front matter above it and the site's
        ``cascade`` (nearest wins), for the keys that decide whether it is built."""
        out: dict[str, Any] = {}
        parts = logical.split("/")[:-1]
        folders = ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]
        for sub in folders:
            for m in self.mounts:
                base = m.source if not m.target else None
                if m.target and (sub + "/").startswith(m.target + "/"):
                    base = m.source / sub[len(m.target) :].strip("/")
                elif base is not None:
                    base = base / sub
                if base is None:
                    continue
                for sfx in CONTENT_SUFFIXES:
                    idx = base / f"_index{sfx}"
                    if idx.is_file():  # a cascade applies to its own page too (a headless branch)
                        for c in _cascades(self._front(idx).get("cascade")):
                            _apply_cascade(out, c, "/" + posixpath.splitext(logical)[0])
        for c in self.cascades:
            _apply_cascade(out, c, "/" + posixpath.splitext(logical)[0])
        return out

    # -- Layout ----------------------------------------------------------------------------------
    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """'' for a page Hugo builds; else why it is left out (see the module docstring)."""
        where = self._where(file)
        if where is None:
            return OUTSIDE
        if where.lang not in self.languages:
            return LANGUAGE_DISABLED
        if not file.name.lower().endswith(CONTENT_SUFFIXES):
            return EXCLUDED
        if self._is_resource(file):
            return RESOURCE
        merged = {**self._cascaded(file, where.logical), **front}
        build = merged.get("build", merged.get("_build"))
        if isinstance(build, dict) and (
            build.get("render") in ("never", False, "false") or str(build.get("render", "")).lower() == "never"
        ):
            return NOT_BUILT
        if merged.get("headless") is True and posixpath.basename(where.logical).split(".")[0] == "index":
            return NOT_BUILT
        return self._dates(merged)

    def _dates(self, front: dict[str, Any]) -> str:
        if front.get("draft") is True and not self.build_drafts:
            return DRAFT
        now = dt.datetime.now(dt.UTC)
        pub = _date(front.get("publishdate") or front.get("publishDate") or front.get("pubdate") or front.get("date"))
        if pub is not None and pub > now and not self.build_future:
            return FUTURE
        exp = _date(front.get("expirydate") or front.get("expiryDate") or front.get("unpublishdate"))
        if exp is not None and exp < now and not self.build_expired:
            return EXPIRED
        return ""

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """The page of ``file``: its path under the base URL, language and aliases."""
        where = self._where(file)
        if where is None:
            return None
        prefix = f"{where.lang}/" if where.lang != self.default_lang or self.in_subdir else ""
        path = self._page_path(where.logical, front)
        url = front.get("url")
        if isinstance(url, str) and url.strip():
            path = url.lstrip("/") if url.startswith("/") else prefix + url.lstrip("./")
        else:
            path = prefix + path
        aliases = front.get("aliases")
        alts = []
        page_dir = posixpath.dirname(where.logical)
        for a in aliases if isinstance(aliases, list) else [aliases] if isinstance(aliases, str) else []:
            if isinstance(a, str) and a.strip():
                alt = a.lstrip("/") if a.startswith("/") else prefix + posixpath.normpath(posixpath.join(page_dir, a)).lstrip("./")
                alts.append(alt)
        language = where.lang if len(self.languages) > 1 else ""
        return Placement(path, "", language, alts, translation=bool(language) and where.lang != self.default_lang)

    def _page_path(self, logical: str, front: dict[str, Any]) -> str:
        folder, name = posixpath.split(logical)
        stem = posixpath.splitext(name)[0]
        if "." in stem and stem.rsplit(".", 1)[1].lower() in self.all_languages:  # about.fr.md
            stem = stem.rsplit(".", 1)[0]
        slug = front.get("slug")
        slug = str(slug).strip() if isinstance(slug, (str, int)) and str(slug).strip() else ""
        pattern = self._permalink(folder, stem)
        if pattern:
            return sanitize_path(_expand_permalink(pattern, folder, stem, slug, front), self.lower).lstrip("/")
        return _default_path(folder, stem, slug, self.ugly, self.lower)

    def content_roots(self) -> list[Path]:
        """The content mounts' source folders that exist."""
        return [m.source for m in self.mounts if m.source.is_dir()]

    def _permalink(self, folder: str, stem: str) -> str:
        """The ``[permalinks]`` pattern of a page (by its top-level section; ``page`` kind, or
        ``section`` for ``_index``), '' when none applies."""
        kind = "section" if stem == "_index" else "page"
        section = folder.split("/")[0] if folder else ""
        if not section or (kind == "page" and stem == "index" and "/" not in folder):
            return ""
        return self.permalinks[kind].get(section.lower(), "")

    def versions(self) -> list[str]:
        """Hugo sites are unversioned here (versions are separate sites): []."""
        return []

    def describe(self) -> dict[str, Any]:
        """The summary's ``site`` block details (languages, mounts, suffixes)."""
        return {
            "languages": self.languages,
            "versions": [],
            "suffixes": list(CONTENT_SUFFIXES[:3]),
            "content_dirs": [
                _rel(m.source, self.folder)
                + (f" -> content/{m.target}" if m.target else " -> content")
                + (f" ({m.lang})" if m.lang else "")
                for m in self.mounts
            ],
            "config_files": [_rel(p, self.folder) for p in self.files],
            "default_language_in_subdir": self.in_subdir,
        }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _rel(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


_PERMALINK_TOKEN = re.compile(
    r":(year|monthname|month|day|weekdayname|weekday|yearday|sections|section|"
    r"slugorcontentbasename|slugorfilename|slug|title|filename|contentbasename)"
)


def _expand_permalink(pattern: str, folder: str, stem: str, slug: str, front: dict[str, Any]) -> str:
    """Hugo's permalink tokens (``resources/page/permalinks.go``) for one page: dates from front
    matter ``date``, ``:section(s)``, ``:title``, ``:slug`` (or the title), ``:filename`` (a
    bundle's folder name), ``:contentbasename``; unknown tokens are kept as written."""
    date = _date(front.get("date"))
    base = posixpath.basename(folder) if stem in ("index", "_index") else stem
    title = str(front.get("title") or "")

    def value(m: re.Match[str]) -> str:
        token = m.group(1)
        if token in ("year", "month", "monthname", "day", "weekday", "weekdayname", "yearday"):
            if date is None:
                return m.group(0)
            return {
                "year": f"{date.year:04d}",
                "month": f"{date.month:02d}",
                "monthname": date.strftime("%B").lower(),
                "day": f"{date.day:02d}",
                "weekday": str((date.weekday() + 1) % 7),
                "weekdayname": date.strftime("%A").lower(),
                "yearday": date.strftime("%j"),
            }[token]
        return {
            "section": folder.split("/")[0],
            "sections": folder,
            "title": title or base,
            "slug": slug or title or base,
            "slugorfilename": slug or base,
            "slugorcontentbasename": slug or base,
            "filename": base,
            "contentbasename": base,
        }[token]

    return _PERMALINK_TOKEN.sub(value, pattern)


def _date(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    if isinstance(value, str) and value.strip():
        try:
            parsed = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return None


def _cascades(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [_lower_keys(value)]
    if isinstance(value, list):
        return [_lower_keys(v) for v in value if isinstance(v, dict)]
    return []


def _config_cascades(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return _cascades(cfg.get("cascade"))


def _apply_cascade(out: dict[str, Any], cascade: dict[str, Any], page_path: str) -> None:
    """Copy the build-deciding keys of one ``cascade`` entry into ``out`` (nearest first wins)
    when its ``target``/``_target`` path glob (if any) matches ``page_path``."""
    target = cascade.get("target", cascade.get("_target"))
    if isinstance(target, dict):
        kind = target.get("kind")
        if isinstance(kind, str) and "page" not in kind:
            return
        pattern = target.get("path")
        if isinstance(pattern, str) and pattern and not _glob(page_path, [pattern]):
            return
    for key in ("build", "_build", "draft", "headless"):
        if key in cascade and key not in out:
            out[key] = cascade[key]


def matches(folder: Path) -> bool:
    """True when ``folder`` is a Hugo project: a ``hugo.*`` file, ``config/_default/``, or a
    ``config.*`` beside a ``content/`` folder."""
    if any((folder / f"hugo{ext}").is_file() for ext in CONFIG_EXTS) or (folder / "config" / "_default").is_dir():
        return True
    return (folder / "content").is_dir() and any((folder / f"config{ext}").is_file() for ext in CONFIG_EXTS)


def project_of(start: Path) -> Path | None:
    """The nearest Hugo project folder at or above ``start`` (up to the repository root), or None."""
    for folder in up_to_repository_root(start.resolve()):
        if matches(folder):
            return folder
    return None


def read_hugo(folder: Path) -> HugoLayout | None:
    """The layout of the Hugo project in ``folder``, or None when it is not one.

    Raises:
        ConfigError: a configuration file is invalid (names it).
    """
    if not matches(folder):
        return None
    cfg, files = read_config(folder)
    if not files:
        return None
    return HugoLayout(folder.resolve(), cfg, files)


def detect(folder: Path) -> Detected | None:
    """The Hugo project whose configuration (``hugo.*``, ``config/_default/``, or ``config.*``
    beside ``content/``) lies in ``folder``; its layout places pages by mounts and languages.

    Raises:
        ConfigError: a configuration that cannot be read (names the file).
    """
    layout = read_hugo(folder)
    if layout is None:
        return None
    anchors = functools.partial(hugo_page_anchors, slug=layout.heading_slug)
    return Detected(
        "hugo",
        layout.mounts[0].source,
        layout.base_url,
        config=layout.config,
        layout=layout,
        anchors=anchors,
        title=layout.title,
        description=layout.description,
    )


def _default_path(folder: str, stem: str, slug: str, ugly: bool = False, lower: bool = True) -> str:
    """Hugo's page path without a permalink pattern: ``_index`` and a leaf bundle's ``index`` are
    their folder's page (``slug`` renames a bundle), other pages ``folder/stem/`` (``slug``
    replaces the stem; ``.html`` with ``uglyURLs``), through ``sanitize_path``."""
    if stem == "_index":
        path = f"{folder}/" if folder else ""
    elif stem == "index":  # a leaf bundle: the folder is the page
        head, bundle = posixpath.split(folder)
        last = slug or bundle
        path = f"{head}/{last}/" if head else (f"{last}/" if last else "")
    elif ugly:
        path = f"{folder}/{slug or stem}.html" if folder else f"{slug or stem}.html"
    else:
        path = f"{folder}/{slug or stem}/" if folder else f"{slug or stem}/"
    return sanitize_path(path, lower)


def page_path(rel: str, front: dict[str, Any], site: Any = None) -> str:
    """The page path of ``rel`` under Hugo's defaults, for a content tree ingested with
    ``--site hugo`` and no Hugo configuration found (a site found carries its layout): front
    matter ``url`` wins, else :func:`_default_path` (lower-cased, ``slug``)."""
    url = front.get("url")
    if isinstance(url, str) and url.strip():
        return url.strip().lstrip("/")
    folder, name = posixpath.split(rel)
    slug = front.get("slug")
    slug = str(slug).strip() if isinstance(slug, (str, int)) and str(slug).strip() else ""
    return _default_path(folder, posixpath.splitext(name)[0], slug)


GENERATOR = Generator(
    name="hugo",
    detect=detect,
    anchors=hugo_page_anchors,
    page_path=page_path,
    config_files=("hugo.{toml,yaml,json}", "config/_default/", "config.{toml,yaml,json}"),
    summary="content mounts and languages; `a/b.md` -> `a/b/` (lowercased), `_index.md`, permalinks, `slug`/`url`; anchors goldmark `autoHeadingIDType`",
    source="hugo: config/allconfig, hugolib/filesystems, resources/page/permalinks.go, markup/goldmark/autoid.go",
    priority=40,
)
