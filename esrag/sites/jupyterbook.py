"""Jupyter Book 2 / MyST (mystmd): ``myst.yml`` read as mystmd reads it, the pages its
``project.toc`` lists, and mystmd's page URL and heading id rules.

Rules, read from mystmd 1.8 (``packages/myst-cli/src/project/fromTOC.ts`` ``projectFromTOC`` /
``pagesFromEntries``, ``src/utils/fileInfo.ts`` ``fileInfo`` / ``createSlug``,
``packages/myst-common/src/utils.ts`` ``slugToUrl``, ``normalizeLabel`` / ``createHtmlId``,
``packages/myst-transforms/src/targets.ts`` ``headingLabelTransform``):

* with ``project.toc`` only the files it lists are pages (``file`` entries, ``pattern`` globs
  relative to the project without the explicit files and ``project.exclude``; ``url`` and
  ``title``-only entries are no pages); the first entry is the index page, URL ``/``. Without a
  toc every ``.md`` / ``.ipynb`` of the project is a page (index: ``index.md``, ``README.md``,
  else the first file), minus ``project.exclude``;
* a page's slug is its file name (no extension, a leading enumeration such as ``01_`` removed)
  lower-cased with runs of characters outside ``[a-z0-9-]`` as one ``-``, at most 50
  characters; with ``site.options.folders`` its folders (each slugged the same way) come first,
  joined by ``.``. A repeated slug gets ``-1``, ``-2`` (``index`` is taken by the project index).
  URL: ``/`` + the slug with a trailing ``.index`` dropped and ``.`` as ``/`` (no suffix, no
  trailing slash);
* heading ids: an explicit ``(label)=`` target right before the heading wins (normalised the
  same way); else the heading's text, normalised
  (whitespace runs as one space, quotes removed, lower case), then ``createHtmlId``: characters
  outside ``[a-z0-9-]`` as ``-``, a leading digit or ``-`` prefixed ``id-``, runs of ``-`` as one,
  no ``-`` at either end. Repeats are not numbered (mystmd keeps the first target, later
  headings keep the same id);
* the page title is front matter ``title``, else the first h1, lifted out of the body as the
  title (no id; its section URL is the page URL).

Site title and description (mystmd ``myst-frontmatter``, mystmd.org/guide/frontmatter):
``site.title``, else ``project.title``; ``project.description``. Jupyter Book 1: ``_config.yml``
``title`` (it has no description key).

``myst.yml`` holds no published URL (the site's ``BASE_URL`` is set at build time): give it
with ``--base-url``. Markdown is MyST (directives and roles read as their text).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from esrag.errors import ConfigError
from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.slugs import sphinx_page_anchors
from esrag.sites.sphinx import matches

if TYPE_CHECKING:
    from collections.abc import Sequence

    from esrag.sites import Site

#: the page files mystmd reads (``fileInfo``'s VALID_FILE_EXTENSIONS, the text ones esrag reads)
PAGE_SUFFIXES = (".md", ".ipynb")
#: the longest slug (``title2name``: ``.slice(0, 50)``)
SLUG_LIMIT = 50


def _slug_name(value: str) -> str:
    """mystmd ``title2name``: lower case, ``&`` as ``and``, runs of characters outside
    ``[a-z0-9-]`` as one ``-``, runs of ``-`` as one, none at either end, cut at 50."""
    value = value.replace("&", " and ").lower()
    value = re.sub(r"[^a-z0-9-]+", "-", value)
    value = re.sub(r"-+", "-", value).strip("-")
    return value[:SLUG_LIMIT]


def _remove_enumeration(value: str) -> str:
    """mystmd ``removeLeadingEnumeration``: ``01_intro`` -> ``intro``; a year (``2024-…``),
    five digits or a name that is only an enumeration stay."""
    if re.match(r"^[12][0-9]{3}(?:[^0-9]|$)", value) or re.match(r"^[0-9]{5}", value):
        return value
    return re.sub(r"^[0-9_.-]+", "", value) or value


def create_slug(value: str) -> str:
    """mystmd ``createSlug`` of a file or folder name (no extension)."""
    return _slug_name(_remove_enumeration(value))


def create_html_id(label: str) -> str:
    """mystmd ``normalizeLabel`` then ``createHtmlId``: the id of a heading or target."""
    ident = re.sub(r"['‘’\"“”]+", "", re.sub(r"[\t\n\r ]+", " ", label)).strip().lower()
    ident = re.sub(r"[^a-z0-9-]", "-", ident)
    ident = re.sub(r"^([0-9-])", r"id-\1", ident)
    return re.sub(r"-{2,}", "-", ident).strip("-")


def page_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """Heading ids of one page (module docstring): explicit targets win, repeats not numbered."""
    return [create_html_id(e) if e else create_html_id(t) for t, e in zip(titles, explicit)]


@dataclass
class MystProject:
    """The pages of one mystmd project: ``slugs`` maps a page (POSIX path relative to the
    project folder) to its slug, in toc order; ``has_toc``: pages are the toc's only. Called as
    the site's ``skip``: why a file is not a page ('' = a page)."""

    folder: Path
    slugs: dict[str, str] = field(default_factory=dict)
    has_toc: bool = False

    def __call__(self, rel: str) -> str:
        if rel in self.slugs or not rel.lower().endswith(PAGE_SUFFIXES):
            return ""
        return "not in myst.yml project.toc" if self.has_toc else "excluded by myst.yml project.exclude"

    def url_path(self, rel: str) -> str:
        """The page path under the base URL (no leading ``/``): ``''`` for the index page."""
        slug = self.slugs.get(rel) or create_slug(posixpath.splitext(posixpath.basename(rel))[0])
        return "" if slug == "index" else re.sub(r"\.index$", "", slug).replace(".", "/")


def _slugger(folders: bool) -> tuple[dict[str, int], Any]:
    """``fileInfo``'s slug with ``pageSlugs`` counting repeats (``index`` taken by the root)."""
    taken = {"index": 1}

    def slug(rel: str) -> str:
        folder, name = posixpath.split(rel)
        value = create_slug(posixpath.splitext(name)[0])
        if folders and folder:
            value = ".".join([*(create_slug(f) for f in folder.split("/")), value])
        index = value.endswith(".index")
        key = value[:-6] if index else value
        if key in taken:
            taken[key] += 1
            return f"{key}-{taken[key] - 1}{'.index' if index else ''}"
        taken[key] = 1
        return value

    return taken, slug


def _resolve(folder: Path, file: str) -> str | None:
    """A toc ``file`` as a path relative to ``folder`` (mystmd ``resolveExtension``: a name
    without its extension tries ``.md`` then ``.ipynb``); None when no such file exists."""
    rel = posixpath.normpath(file.replace("\\", "/")).removeprefix("./")
    for cand in (rel, *(rel + s for s in PAGE_SUFFIXES)) if not rel.lower().endswith(PAGE_SUFFIXES) else (rel,):
        if (folder / cand).is_file():
            return cand
    return None


def _glob(folder: Path, patterns: Sequence[str]) -> set[str]:
    return {p.relative_to(folder).as_posix() for pat in patterns for p in folder.glob(pat) if p.is_file()}


def _toc_files(entries: Any, folder: Path, ignore: set[str], out: list[str], config: Path) -> None:
    """The page files of toc ``entries`` in order (``file``, ``pattern``; ``children`` walked)."""
    if not isinstance(entries, list):
        raise ConfigError(f"{config}: project.toc must be a list of entries")
    for entry in entries:
        if not isinstance(entry, dict):
            raise ConfigError(f"{config}: project.toc entry {entry!r} is not a mapping")
        if isinstance(entry.get("file"), str):
            found = _resolve(folder, entry["file"])
            if found is not None:
                out.append(found)
        elif isinstance(entry.get("pattern"), str):
            out.extend(sorted(f for f in _glob(folder, [entry["pattern"]]) if f.lower().endswith(PAGE_SUFFIXES) and f not in ignore))
        _toc_files(entry.get("children") or [], folder, ignore, out, config)


def _explicit(entries: Any) -> list[str]:
    files = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            if isinstance(entry.get("file"), str):
                files.append(entry["file"])
            files.extend(_explicit(entry.get("children")))
    return files


def _table(cfg: dict[str, Any], key: str) -> dict[str, Any]:
    value = cfg.get(key)
    return value if isinstance(value, dict) else {}


def read_project(config: Path) -> tuple[MystProject, dict[str, Any]]:
    """The project of ``config`` (a ``myst.yml``) and its ``site`` table.

    Raises:
        ConfigError: not YAML, or a toc of the wrong shape (names the file)."""
    try:
        cfg = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{config}: not valid YAML ({str(exc).splitlines()[0]})") from None
    project, site = (_table(cfg, "project"), _table(cfg, "site")) if isinstance(cfg, dict) else ({}, {})
    options = _table(site, "options")
    folder = config.parent
    exclude = project.get("exclude") or []
    excluded = _glob(folder, [exclude] if isinstance(exclude, str) else [str(e) for e in exclude])
    toc = project.get("toc")
    if toc is not None:
        files: list[str] = []
        ignore = excluded | {f for f in (_resolve(folder, e) for e in _explicit(toc)) if f}
        _toc_files(toc, folder, ignore, files, config)
    else:
        found = sorted(f for f in _glob(folder, ["**/*"]) if f.lower().endswith(PAGE_SUFFIXES) and f not in excluded)
        files = [f for f in found if not any(part.startswith((".", "_")) or part == "node_modules" for part in f.split("/")[:-1])]
        root = next((f for f in files if f.lower() in ("index.md", "readme.md", "index.ipynb")), files[0] if files else None)
        files = [root, *(f for f in files if f != root)] if root else []
    return _slugs(folder, files, bool(options.get("folders")), toc is not None), site


def _slugs(folder: Path, files: list[str], folders: bool, has_toc: bool) -> MystProject:
    """The first file is the index (slug ``index``); the rest slugged in order."""
    project = MystProject(folder, has_toc=has_toc)
    _, slug = _slugger(folders)
    for n, rel in enumerate(dict.fromkeys(files)):
        project.slugs[rel] = "index" if n == 0 else slug(rel)
    return project


#: Jupyter Book 1's own ``exclude_patterns`` (``jupyter_book/config_schema.json`` default),
#: the ``_config.yml`` ones are added to them
JB1_EXCLUDE = ("_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints")
#: the suffixes Jupyter Book 1 builds (Sphinx with ``myst_nb``: ``.md`` and ``.ipynb``; ``.rst``)
JB1_FORMATS = {".md": "markdown", ".ipynb": "notebook", ".rst": "rst"}


@dataclass
class JupyterBook1:
    """A Jupyter Book 1 project (``_config.yml`` + ``_toc.yml``; Sphinx underneath): called as
    the site's ``skip``. ``toc``: the documents ``_toc.yml`` names (no suffix), used only with
    ``only_build_toc_files``; ``exclude``: Sphinx ``exclude_patterns``."""

    exclude: tuple[str, ...]
    toc: set[str] = field(default_factory=set)
    toc_only: bool = False

    def __call__(self, rel: str) -> str:
        if rel in ("_config.yml", "_toc.yml") or not rel.lower().endswith(tuple(JB1_FORMATS)):
            return ""
        if matches(rel, self.exclude):
            return "excluded by _config.yml exclude_patterns"
        if self.toc_only and posixpath.splitext(rel)[0] not in self.toc:
            return "not in _toc.yml (only_build_toc_files)"
        return ""

    @staticmethod
    def url_path(rel: str) -> str:
        """Sphinx's ``html`` builder: the document name + ``.html`` (``intro.md`` -> ``intro.html``)."""
        return posixpath.splitext(rel)[0] + ".html"


def _jb1_toc(node: Any, out: set[str]) -> None:
    """The documents of a sphinx-external-toc ``_toc.yml`` (``root``, ``file`` at any depth of
    ``parts`` / ``chapters`` / ``sections`` / ``subtrees`` / ``entries``), without suffix."""
    if isinstance(node, dict):
        for key in ("root", "file"):
            if isinstance(node.get(key), str):
                out.add(
                    posixpath.splitext(posixpath.normpath(node[key]))[0]
                    if node[key].endswith(tuple(JB1_FORMATS))
                    else posixpath.normpath(node[key])
                )
        for value in node.values():
            _jb1_toc(value, out)
    elif isinstance(node, list):
        for value in node:
            _jb1_toc(value, out)


#: Jupyter Book 1's default ``parse.myst_enable_extensions`` (``jupyter_book/default_config.yml``);
#: a ``_config.yml`` list replaces it
JB1_MYST_EXTENSIONS = ("colon_fence", "dollarmath", "linkify", "substitution", "tasklist")


def smartquote_anchors(titles: Sequence[str], explicit: Sequence[str]) -> list[str]:
    """Sphinx ids of MyST headings with myst-parser's ``smartquotes`` extension: markdown-it's
    typographer turns ``'`` and ``"`` into curly quotes while parsing, before docutils
    ``make_id``, which drops them (non-ASCII): ``Book's`` -> ``books``, not ``book-s``."""
    return sphinx_page_anchors([t.replace("'", "’").replace('"', "”") for t in titles], explicit)


def _yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping file. Raises ConfigError naming the file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a YAML mapping")
    return data


def detect_jb1(folder: Path) -> Detected | None:
    """Jupyter Book 1: ``_config.yml`` with ``_toc.yml`` beside it (``_config.yml`` alone is
    Jekyll's). Read from jupyter-book 1.0 ``jupyter_book/config.py`` (``html.baseurl`` ->
    ``html_baseurl``, ``exclude_patterns``, ``only_build_toc_files``) and sphinx-external-toc."""
    config, toc_file = folder / "_config.yml", folder / "_toc.yml"
    if not (config.is_file() and toc_file.is_file()):
        return None
    cfg = _yaml(config)
    html = _table(cfg, "html")
    base = str(html.get("baseurl") or "")
    patterns = cfg.get("exclude_patterns") or []
    exclude = (*JB1_EXCLUDE, *(str(p) for p in (patterns if isinstance(patterns, list) else [patterns])))
    toc: set[str] = set()
    _jb1_toc(_yaml(toc_file), toc)
    skip = JupyterBook1(exclude, toc, bool(cfg.get("only_build_toc_files")))
    extensions = _table(cfg, "parse").get("myst_enable_extensions", JB1_MYST_EXTENSIONS)
    return Detected(
        "jupyterbook",
        folder,
        base if base.startswith(("http://", "https://")) else "",
        config=config,
        skip=skip,
        formats=dict(JB1_FORMATS),
        include=("*.ipynb",),
        anchors=smartquote_anchors if isinstance(extensions, list) and "smartquotes" in extensions else sphinx_page_anchors,
        format_options={"myst": True, "object_types": {}, "crossref_types": []},
        title=config_text(cfg.get("title")),
    )


def detect(folder: Path) -> Detected | None:
    """The mystmd project whose ``myst.yml`` (with a ``project`` table) lies in ``folder``, else
    a Jupyter Book 1 project (:func:`detect_jb1`)."""
    config = folder / "myst.yml"
    if not config.is_file():
        return detect_jb1(folder)
    try:
        head = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        head = {"project": {}}  # read_project names the error
    if not isinstance(head, dict) or "project" not in head:
        return None  # a site-only myst.yml (several projects): not read
    project, site = read_project(config)
    table = head["project"] if isinstance(head["project"], dict) else {}
    return Detected(
        "jupyterbook",
        folder,
        config=config,
        skip=project,
        formats={".md": "markdown", ".ipynb": "notebook"},
        format_options={"myst": True, "myst_targets": True},
        title=config_text(site.get("title")) or config_text(table.get("title")),
        description=config_text(table.get("description")),
    )


def page_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """mystmd: the page's slug as a path (module docstring); the index page is ``''``."""
    if isinstance(site.skip, (MystProject, JupyterBook1)):
        return site.skip.url_path(rel)
    return create_slug(posixpath.splitext(posixpath.basename(rel))[0])


GENERATOR = Generator(
    name="jupyterbook",
    detect=detect,
    anchors=page_anchors,
    page_path=page_path,
    config_files=("myst.yml", "_config.yml + _toc.yml"),
    summary="pages of `myst.yml` `project.toc`; `a/b.md` -> `/b` (`/a/b` with `site.options.folders`), first page `/`; "
    "ids `createHtmlId`, `(label)=` wins; Jupyter Book 1 (`_config.yml` + `_toc.yml`): Sphinx `a/b.html`, docutils ids",
    source="mystmd packages/myst-cli/src/project/fromTOC.ts, src/utils/fileInfo.ts; myst-common utils.ts (createHtmlId, slugToUrl); "
    "jupyter-book 1.0 jupyter_book/config.py, sphinx-external-toc",
    priority=85,  # before Sphinx (90): a Jupyter Book 1 folder may also hold a generated conf.py
    title_from_front=True,
    h1_anchor=False,  # the page's first h1 becomes its title (no front matter title): no id
)
