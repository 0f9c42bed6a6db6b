"""Mintlify: which files of a ``docs.json`` (or older ``mint.json``) site are pages, at which URL,
in which version and language, and the ids of their headings.

Mintlify's builder is not public, so the rules are Mintlify's documentation (mintlify/docs, the
``mintlify-docs`` corpus): ``organize/settings.mdx`` (``docs.json``: required ``theme``, ``name``,
``colors``, ``navigation``; ``$ref`` to other JSON files, relative to the referring file,
sibling keys merged on top), ``organize/navigation.mdx`` (``pages``, ``groups`` with a ``root``
page, ``tabs``, ``anchors``, ``dropdowns``, ``products``, ``menu`` items, ``versions`` and
``languages`` — the first, or the one with ``default: true``, is the default; OpenAPI endpoints
such as ``"GET /users"`` are generated pages, not files), ``organize/pages.mdx`` (a page is
``path/to/page`` without extension, published at ``<base>/path/to/page``; ``index`` is its
folder), ``organize/hidden-pages.mdx`` (a page left out of the navigation is still served at
its URL: esrag indexes it, counted as ``hidden_pages``), ``organize/mintignore.mdx``
(``.mintignore`` gitignore patterns and the default ignored folders and files are not
published), ``create/reusable-snippets.mdx`` (every file under ``/snippets/`` and every file
imported into another is a snippet, not a page; absolute imports start at the docs root),
``create/text.mdx`` (heading ids: :func:`mintlify_slug`, duplicates ``-2``, ``-3``; ``{#id}``
wins) and ``components/*.mdx`` (what each component shows: :data:`COMPONENTS`).

Site title and description: ``name`` and ``description`` (``organize/settings-reference.mdx``).
Page title: front matter ``title`` is the page's h1 (``title_from_front``). Base URL: the
``seo.metatags.canonical`` URL when it is absolute (else pass ``--base-url``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from esrag.errors import ConfigError
from esrag.formats.mdx import Shown, imported_files
from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.layout import OUTSIDE, Placement

CONFIG_NAMES = ("docs.json", "mint.json")
SUFFIXES = (".mdx", ".md")
#: Mintlify's default ignored folders and files (``organize/mintignore.mdx``)
IGNORED_DIRS = frozenset(
    {".git", ".github", ".claude", ".agents", ".idea", ".vscode", "node_modules", "build", "dist", "coverage", ".cache", "tmp", "temp"}
)
IGNORED_FILES = frozenset({"README.md", "LICENSE.md", "CHANGELOG.md", "CONTRIBUTING.md"})
#: navigation keys whose values hold more navigation (``organize/navigation.mdx``)
NAV_KEYS = ("navigation", "pages", "groups", "tabs", "anchors", "dropdowns", "products", "menu", "versions", "languages", "global")
_ENDPOINT = re.compile(r"^(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|TRACE|WEBHOOK)\s", re.IGNORECASE)

# skip reasons (the ingest summary's keys)
NOT_A_PAGE = "not a Mintlify page suffix (.mdx, .md)"
IGNORED = "ignored by Mintlify by default (organize/mintignore.mdx)"
MINTIGNORED = "matched by .mintignore (not published)"
DOT_FOLDER = "in a dot folder (Mintlify configuration such as .mintlify/, not published)"
SNIPPET = "in snippets/ (a Mintlify snippet, not a page)"
IMPORTED = "imported by another page (a Mintlify snippet, not a page)"

#: what Mintlify components show of their attributes (``components/*.mdx``): titles of steps,
#: accordions, tabs, cards, expandables and updates, frame captions, API field names and types.
COMPONENTS: dict[str, Shown] = {
    "Step": Shown(label=("title",)),
    "Accordion": Shown(label=("title",)),
    "Tab": Shown(label=("title",)),
    "Card": Shown(label=("title",)),
    "Expandable": Shown(label=("title",)),
    "Update": Shown(label=("label",)),
    "Frame": Shown(label=("caption",)),
    "ParamField": Shown(field=("path", "query", "body", "header", "param")),
    "ResponseField": Shown(field=("name",)),
}


# -- heading ids ---------------------------------------------------------------------------------
def mintlify_slug(title: str) -> str:
    """Mintlify's generated heading id (``create/text.mdx`` "Automatic anchor IDs"): lowercase;
    each whitespace character -> ``-``; ``'`` -> ``’``; ``.`` -> ``-``; parentheses dropped, and
    commas (the site's own links: ``#search-seo-and-ai-indexing``); every other character kept
    (slashes and ampersands as documented; ``$`` and ``:`` as the site's own links show:
    ``#split-configuration-with-%24ref``, ``#example%3A-connect-to…``)
    (``Rate limits (per minute)`` -> ``rate-limits-per-minute``, ``Fees & billing`` ->
    ``fees-&-billing``)."""
    out = []
    for ch in title.strip().lower():
        if ch.isspace() or ch == ".":
            out.append("-")
        elif ch == "'":
            out.append("’")
        elif ch not in "(),":
            out.append(ch)
    return "".join(out)


def mintlify_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """The id of each heading of one page in order: ``{#id}`` as written, else
    :func:`mintlify_slug`; a repeated id gets ``-2``, ``-3``… across the whole page."""
    used: dict[str, int] = {}
    out = []
    for title, given in zip(titles, explicit):
        base = given or mintlify_slug(title)
        count = used.get(base, 0) + 1
        used[base] = count
        out.append(base if count == 1 or given else f"{base}-{count}")
    return out


# -- the configuration -----------------------------------------------------------------------------
def load_json(path: Path, root: Path, notes: list[str], seen: tuple[Path, ...] = ()) -> Any:
    """``path`` as JSON with every ``$ref`` resolved (relative to the file holding it, inside
    ``root``; sibling keys of an object reference merged on top). A reference to a missing file
    is left out with a note in ``notes`` (naming the file), so the rest of the site is read.

    Raises:
        ConfigError: unreadable or invalid JSON, an outside or circular reference (names the file).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not readable JSON: {exc}") from None
    return _refs(data, path, root, notes, (*seen, path.resolve()))


def _refs(value: Any, path: Path, root: Path, notes: list[str], seen: tuple[Path, ...]) -> Any:
    if isinstance(value, list):
        return [_refs(v, path, root, notes, seen) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _refs(v, path, root, notes, seen) for k, v in value.items() if k != "$ref"}
    ref = value.get("$ref")
    if not isinstance(ref, str):
        return out
    target = (path.parent / ref).resolve()
    if target in seen or not target.is_relative_to(root.resolve()):
        raise ConfigError(f"{path}: $ref {ref!r} is circular or outside {root}")
    if not target.is_file():
        notes.append(f"{path}: $ref {ref!r}: no such file; that part of the navigation is left out")
        return out
    found = load_json(target, root, notes, seen)
    return {**found, **out} if isinstance(found, dict) else found


def is_mintlify(data: Any, name: str) -> bool:
    """True when ``data`` (a parsed ``docs.json`` / ``mint.json``) is Mintlify's: a ``$schema``
    naming mintlify, else the required keys (``name`` and ``navigation``; ``theme`` too in
    ``docs.json``)."""
    if not isinstance(data, dict):
        return False
    if "mintlify" in str(data.get("$schema", "")):
        return True
    required = ("name", "navigation", "theme") if name == "docs.json" else ("name", "navigation")
    return all(k in data for k in required)


@dataclass(frozen=True, slots=True)
class NavPage:
    """One page of the navigation: ``path`` (no extension, no leading ``/``), its ``version`` and
    ``language`` ('' outside any)."""

    path: str
    version: str = ""
    language: str = ""


def nav_pages(node: Any, version: str = "", language: str = "") -> Iterator[NavPage]:
    """Every page the navigation ``node`` lists, in order, with the version and language of the
    ``versions`` / ``languages`` entry it lies under (``mint.json`` groups carry ``version``);
    a group's ``root`` counts; OpenAPI endpoints (``"GET /x"``) and external ``href`` are not pages."""
    if isinstance(node, str):
        page = node.strip().lstrip("/")
        if page and not _ENDPOINT.match(page) and "://" not in page:
            yield NavPage(re.sub(r"\.mdx?$", "", page), version, language)
        return
    if isinstance(node, list):
        for item in node:
            yield from nav_pages(item, version, language)
        return
    if not isinstance(node, dict):
        return
    version = str(node["version"]) if isinstance(node.get("version"), str) else version
    language = str(node["language"]) if isinstance(node.get("language"), str) else language
    if isinstance(node.get("root"), str):
        yield from nav_pages(node["root"], version, language)
    for key in NAV_KEYS:
        if key in node:
            yield from nav_pages(node[key], version, language)


def _default(entries: Any, key: str) -> str:
    """The default of a ``versions`` / ``languages`` list: the entry with ``default: true``, else the first."""
    items = [e for e in entries if isinstance(e, dict) and isinstance(e.get(key), str)] if isinstance(entries, list) else []
    chosen = next((e for e in items if e.get("default") is True), items[0] if items else None)
    return str(chosen[key]) if chosen else ""


def _find(node: Any, key: str) -> list[Any]:
    """Every ``key`` list in the navigation ``node`` (``versions`` / ``languages`` may be nested)."""
    if isinstance(node, list):
        return [x for item in node for x in _find(item, key)]
    if not isinstance(node, dict):
        return []
    own = [node[key]] if isinstance(node.get(key), list) else []
    return own + [x for k in NAV_KEYS if k in node and k != key for x in _find(node[k], key)]


# -- the layout ------------------------------------------------------------------------------------
@dataclass(slots=True)
class MintlifyLayout:
    """The pages of a Mintlify site (see the module docstring); a :class:`esrag.sites.layout.Layout`.

    Attributes:
        config: the ``docs.json`` / ``mint.json`` read; site_dir: its folder (the docs root).
        nav: the navigation's pages by path (first listing wins).
        default_version, default_language: the defaults ('' when unversioned / one language).
        languages: the language codes the navigation lists.
        title, description: ``name`` and ``description`` ('' when absent or not a string).
        notes: what could not be read, for the report.
    """

    config: Path
    site_dir: Path
    nav: dict[str, NavPage]
    default_version: str = ""
    default_language: str = ""
    languages: tuple[str, ...] = ()
    title: str = ""
    description: str = ""
    notes: list[str] = field(default_factory=list)
    generator: str = "mintlify"
    _ignore: pathspec.PathSpec | None = None
    _imported: set[Path] | None = None

    def _rel(self, file: Path) -> str | None:
        """``file``'s path under the docs root as written (a symlink keeps its own name), else resolved."""
        for path in (Path(os.path.abspath(file)), file.resolve()):
            if path.is_relative_to(self.site_dir):
                return path.relative_to(self.site_dir).as_posix()
        return None

    def _mintignore(self) -> pathspec.PathSpec:
        if self._ignore is None:
            path = self.site_dir / ".mintignore"
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []
            self._ignore = pathspec.PathSpec.from_lines("gitwildmatch", lines)
        return self._ignore

    def imported(self) -> set[Path]:
        """Every Markdown/MDX file a page of the site imports (snippets, ``create/reusable-snippets.mdx``)."""
        if self._imported is None:
            found: set[Path] = set()
            for path in self.site_dir.rglob("*.md*"):
                if path.suffix in SUFFIXES and path.is_file() and not self._path_reason(path.relative_to(self.site_dir).as_posix()):
                    try:
                        found |= imported_files(path.read_text(encoding="utf-8", errors="replace"), path, self.site_dir)
                    except OSError:
                        continue  # unreadable: the ingest names it when it reads the page
            self._imported = found
        return self._imported

    def _path_reason(self, rel: str) -> str:
        """Why the path alone keeps ``rel`` from being a page ('' when it does not)."""
        parts = rel.split("/")
        if not rel.lower().endswith(SUFFIXES):
            return NOT_A_PAGE
        if any(p in IGNORED_DIRS for p in parts[:-1]) or parts[-1] in IGNORED_FILES:
            return IGNORED
        if any(p.startswith(".") for p in parts[:-1]):
            return DOT_FOLDER
        if parts[0] == "snippets":
            return SNIPPET
        return MINTIGNORED if self._mintignore().match_file(rel) else ""

    def skip_reason(self, file: Path, front: dict[str, Any]) -> str:
        """'' for a page Mintlify serves (in the navigation or hidden); else why not."""
        rel = self._rel(file)
        if rel is None:
            return OUTSIDE
        return self._path_reason(rel) or (IMPORTED if file.resolve() in self.imported() else "")

    def place(self, file: Path, front: dict[str, Any]) -> Placement | None:
        """The page of ``file``: ``path/to/page`` (``index`` -> its folder), the version and language
        of its navigation entry (a page outside the navigation: the language its first folder names)."""
        rel = self._rel(file)
        if rel is None or self._path_reason(rel):
            return None
        page = re.sub(r"\.mdx?$", "", rel)
        entry = self.nav.get(page)
        language = entry.language if entry else (page.split("/")[0] if page.split("/")[0] in self.languages else "")
        version = entry.version if entry else ""
        path = page[: -len("index")].rstrip("/") if page == "index" or page.endswith("/index") else page
        translation = bool(language) and len(self.languages) > 1 and language != self.default_language
        return Placement(path, doc_version=version, language=language, translation=translation)

    def hidden_pages(self) -> list[str]:
        """The pages served but not in the navigation (``organize/hidden-pages.mdx``), as paths."""
        out = []
        for path in sorted(self.site_dir.rglob("*")):
            rel = path.relative_to(self.site_dir).as_posix()
            if path.is_file() and not self.skip_reason(path, {}) and re.sub(r"\.mdx?$", "", rel) not in self.nav:
                out.append(rel)
        return out

    def content_roots(self) -> list[Path]:
        return [self.site_dir]

    def versions(self) -> list[str]:
        return sorted({p.version for p in self.nav.values() if p.version})

    def describe(self) -> dict[str, Any]:
        """The ingest summary's ``site`` block."""
        return {
            "versions": [{"name": v} for v in self.versions()],
            "languages": list(self.languages),
            "suffixes": list(SUFFIXES),
            "content_dirs": [str(self.site_dir)],
            "navigation_pages": len(self.nav),
            "notes": list(self.notes),
        }


def read_mintlify(folder: Path) -> tuple[MintlifyLayout, str] | None:
    """The layout and base URL of the Mintlify site configured in ``folder``, or None.

    Raises:
        ConfigError: a Mintlify configuration that cannot be read (names the file).
    """
    for name in CONFIG_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            raw = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            if name == "mint.json":
                raise ConfigError(f"{path}: not readable JSON") from None
            continue  # a docs.json of something else
        if not is_mintlify(raw, name):
            continue
        notes: list[str] = []
        data = load_json(path, folder, notes)
        layout = _layout(path, data)
        layout.notes[:0] = notes
        return layout, _base_url(data)
    return None


def _layout(path: Path, data: dict[str, Any]) -> MintlifyLayout:
    nav_root = data.get("navigation")
    if name_is_mint(path):  # mint.json: versions at the top, groups may carry "version"
        nav_root = {"groups": nav_root, "tabs": data.get("tabs"), "anchors": data.get("anchors")}
    nav: dict[str, NavPage] = {}
    for page in nav_pages(nav_root):
        nav.setdefault(page.path, page)
    langs = _find(nav_root, "languages")
    languages = tuple(
        dict.fromkeys(str(e["language"]) for lst in langs for e in lst if isinstance(e, dict) and isinstance(e.get("language"), str))
    )
    versions = _find(nav_root, "versions") or (
        [[{"version": v} for v in data["versions"] if isinstance(v, str)]] if isinstance(data.get("versions"), list) else []
    )
    layout = MintlifyLayout(
        config=path,
        site_dir=path.parent.resolve(),
        nav=nav,
        default_version=_default(versions[0], "version") if versions else "",
        default_language=_default(langs[0], "language") if langs else "",
        languages=languages,
        title=config_text(data.get("name")),
        description=config_text(data.get("description")),
    )
    if not nav:
        layout.notes.append(f"{path}: no pages in the navigation; every page indexed as a hidden page")
    return layout


def name_is_mint(path: Path) -> bool:
    """True for the older ``mint.json`` (navigation is a list of groups)."""
    return path.name == "mint.json"


def _base_url(data: dict[str, Any]) -> str:
    """``seo.metatags.canonical`` when it is an absolute URL, ending in ``/``; else ''."""
    seo = data.get("seo") if isinstance(data.get("seo"), dict) else {}
    tags = seo.get("metatags") if isinstance(seo, dict) and isinstance(seo.get("metatags"), dict) else {}
    canonical = tags.get("canonical", "") if isinstance(tags, dict) else ""
    return canonical.rstrip("/") + "/" if isinstance(canonical, str) and canonical.startswith(("http://", "https://")) else ""


def detect(folder: Path) -> Detected | None:
    """The Mintlify site whose ``docs.json`` / ``mint.json`` lies in ``folder`` (a JSON file of
    another tool with the same name is not taken), or None.

    Raises:
        ConfigError: an unreadable Mintlify configuration (names the file).
    """
    found = read_mintlify(folder)
    if found is None:
        return None
    layout, base = found
    return Detected(
        "mintlify",
        layout.site_dir,
        base,
        config=layout.config,
        layout=layout,
        formats={s: "markdown" for s in SUFFIXES},
        format_options={"mdx_components": COMPONENTS, "mdx_root": str(layout.site_dir)},
        notes=list(layout.notes),
        title=layout.title,
        description=layout.description,
    )


GENERATOR = Generator(
    name="mintlify",
    detect=detect,
    anchors=mintlify_anchors,
    page_path=None,
    config_files=("docs.json", "mint.json"),
    summary=(
        "docs.json navigation (groups, tabs, anchors, dropdowns, versions, languages) plus hidden pages; "
        "`a/b.mdx` -> `/a/b`, `index` -> folder; snippets/ and imported files are not pages; anchors Mintlify's own slug, duplicates -2"
    ),
    source="mintlify/docs organize/settings.mdx, organize/navigation.mdx, organize/hidden-pages.mdx, organize/mintignore.mdx, create/reusable-snippets.mdx, create/text.mdx",
    title_from_front=True,
)

__all__ = [
    "COMPONENTS",
    "GENERATOR",
    "MintlifyLayout",
    "detect",
    "is_mintlify",
    "load_json",
    "mintlify_anchors",
    "mintlify_slug",
    "nav_pages",
    "read_mintlify",
]
