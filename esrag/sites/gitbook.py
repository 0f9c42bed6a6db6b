"""GitBook (Git Sync): ``.gitbook.yaml`` read as GitBook's Git Sync reads it, the pages
``SUMMARY.md`` lists, their URLs and anchors, and GitBook's ``{% … %}`` blocks as text.

Rules, from GitBook's documentation (docs.gitbook.com, "Git Sync > Content configuration",
``docs-as-code/git-sync/content-configuration.md`` of ``GitbookIO/public-docs``):

* ``.gitbook.yaml`` (optional) lies in the synced folder: ``root`` (default ``./``) is where the
  documentation lives; ``structure.readme`` (default ``README.md``, the space's first page) and
  ``structure.summary`` (default ``SUMMARY.md``, its table of contents) are relative to
  ``root``; ``redirects`` maps old paths to files, relative to ``root``. A folder without the
  file but with ``SUMMARY.md`` and GitBook's own ``.gitbook/`` folder (assets, includes,
  ``tags.yaml`` — what Git Sync writes) is a synced space too (confidence 0.9);
* ``SUMMARY.md`` is the table of contents: GitBook publishes the pages it links to (one URL
  per file — "it is not possible to reference the same Markdown file twice"); its ``##``
  headings are page groups, not pages. Without a ``SUMMARY.md`` GitBook infers the table from
  the folders and Markdown files: every Markdown file is a page;
* page URLs: the first page (``structure.readme``) is the space root; every other page's path
  is its place in ``SUMMARY.md``, not its place on disk: ``<group>/[<ancestor>/]*<page>``, the
  group being the ``##`` heading above the entry (none before the first heading or after a
  ``***`` rule), ancestors the list nesting (an item without a link is an empty page named by
  its text), each segment the slug of a file name (a ``README.md``: of its folder). This is the model BrighterCommand/Docs ``tools/urlmap.py``
  verified 110/110 against GitBook's live sitemap; on GitBook's own docs (which Git Sync lays
  out as the tree) it equals the folder path for all 182 pages. Without a ``SUMMARY.md`` the
  tree is the folders: ``a/README.md`` -> ``a``, ``a/b.md`` -> ``a/b`` (no suffix).
  Spaces are hosted: the configuration names no base URL (use ``--base-url``);
* anchors: GitBook writes a heading's id into the synced Markdown when it is not the default
  (``## Title <a href="#id" id="id"></a>``, kept as the explicit id). The default
  (:func:`heading_slug`) is not published: it is read from the links GitBook's editor writes
  to headings (``[x](page.md#id-1.-create-an-app-registration)``, ``#.net-c`` for
  ``.NET (C#)``, ``#node.js``) on GitBook's own docs and other synced spaces: github-slugger
  with ``.`` kept, and ``id-`` before an id that starts with a digit; repeats ``-1``, ``-2``;
* blocks (``{% hint %}``, ``{% tabs %}``, ``{% code %}``…): :mod:`esrag.formats.gitbook_blocks`,
  switched on through the format option ``gitbook_blocks``.

GitBook itself is a hosted service with no installable builder: conformance is these rules,
checked on real synced spaces (``tests/data/gitbook-nats``, ``tests/data/gitbook-brighter``)
and on the published URLs their pages link to (nats-io/nats.docs, 0xn3va/cheat-sheets).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import yaml

from esrag.sites.generator import Detected, Generator
from esrag.sites.slugs import counter_page_anchors, github_slug

if TYPE_CHECKING:
    from esrag.sites import Site

CONFIG = ".gitbook.yaml"
NOT_IN_SUMMARY = "not linked from SUMMARY.md (GitBook publishes the pages its table of contents lists)"
SUMMARY_ITSELF = "SUMMARY.md is GitBook's table of contents, not a page"
INCLUDE_BLOCK = "a reusable content block (.gitbook/includes), shown only where a page includes it"
MARKDOWN = (".md", ".markdown")


class Space:
    """The pages of one GitBook space and their paths: called with a path relative to ``root``,
    the reason GitBook does not publish it, or ''. ``readme`` and ``summary`` are relative to
    ``root``."""

    def __init__(self, root: Path, readme: str, summary: str) -> None:
        self.root, self.readme, self.summary = root, readme, summary
        self._paths: dict[str, str] | None = None

    def paths(self) -> dict[str, str] | None:
        """``{file relative to root: page path}`` of every page ``SUMMARY.md`` lists
        (:func:`summary_paths`), or None without a summary (every Markdown file is a page)."""
        if self._paths is None:
            try:
                text = (self.root / self.summary).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            self._paths = summary_paths(text, posixpath.dirname(self.summary))
        return self._paths

    def page_path(self, rel: str) -> str | None:
        """The page path of ``rel`` from the summary's tree; '' for the first page; None when
        the summary does not list it (or there is none)."""
        if rel == self.readme:
            return ""
        paths = self.paths()
        return paths.get(rel) if paths is not None else None

    def __call__(self, rel: str) -> str:
        if rel == self.summary:
            return SUMMARY_ITSELF
        if rel.startswith(".gitbook/includes/"):
            return INCLUDE_BLOCK
        paths = self.paths()
        if paths is not None and rel.lower().endswith(MARKDOWN) and rel not in paths and rel != self.readme:
            return NOT_IN_SUMMARY
        return ""


def heading_slug(title: str) -> str:
    """GitBook's default heading id (see the module docstring): github-slugger on each part
    between dots, the dots kept; ``id-`` prepended when the id starts with a digit."""
    slug = ".".join(github_slug(part) for part in title.split("."))
    return f"id-{slug}" if slug[:1].isdigit() else slug


def page_slug(name: str) -> str:
    """GitBook's slug of a file name or group title: lowercase, runs of characters outside
    ``[a-z0-9._]`` -> ``-``, trimmed (BrighterCommand/Docs ``tools/urlmap.py`` ``slug``, measured
    on 110 published pages; the ``.`` kept as in 0xn3va/cheat-sheets' published
    ``web-application/oauth-2.0-vulnerabilities``, the ``_`` as in nats-io/nats.docs' published
    ``running-a-nats-service/nats_admin/lame_duck_mode``; ASCII names only)."""
    return re.sub(r"[^a-z0-9._]+", "-", name.lower()).strip("-")


def summary_paths(text: str, folder: str) -> dict[str, str]:
    """``{file: page path}`` for every page a ``SUMMARY.md`` links to, the first link of each
    list item: ``<group>/[<ancestor>/]*<page>`` (an item without a link is an empty page: its
    text's slug is an ancestor segment) — the group is the ``##`` heading the entry sits
    under (its ``<a id>`` when the heading has one, else :func:`page_slug` of its text; none
    before the first heading or after a ``***`` rule), ancestors the list nesting, each page :func:`page_slug` of its
    file name (a ``README.md``: of its folder). Links starting with ``/`` are relative to the
    root, others to ``folder`` (the summary's folder). A file listed twice keeps its first place
    (GitBook: one URL per file)."""
    from markdown_it import MarkdownIt

    out: dict[str, str] = {}
    group: list[str] = []
    stack: list[tuple[int, str]] = []  # (list item level, slug) of the entries above
    tokens = MarkdownIt("commonmark").parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag != "h1":
            title = tokens[i + 1].content
            explicit = _ANCHOR_ID.search(title)
            group = [explicit.group(1) if explicit else page_slug(_HTML.sub("", title))]
            stack = []
        elif tok.type == "hr":  # a `***` / `---` line closes the group: the entries below have none
            group, stack = [], []
        elif tok.type == "inline" and tok.level >= 3:
            level = tok.level - 2
            while stack and stack[-1][0] >= level:
                stack.pop()
            target = _first_link(tok)
            if target is None:  # an entry without a file: an empty page titled by its text
                stack.append((level, page_slug(_HTML.sub("", tok.content))))
                continue
            rel = posixpath.normpath(target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target))
            slug = page_slug(_page_name(rel))
            out.setdefault(rel, "/".join([*group, *(s for _, s in stack), slug]))
            stack.append((level, slug))
    return out


_ANCHOR_ID = re.compile(r"""<a\s[^>]*\bid\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_HTML = re.compile(r"<[^>]*>")


def _first_link(tok: Any) -> str | None:
    """The local target of the first link of an inline token (unquoted, no ``#…``), or None."""
    for child in tok.children or ():
        if child.type == "link_open":
            href = str(child.attrs.get("href") or "")
            if not href or "://" in href or href.startswith(("#", "mailto:")):
                return None
            return unquote(href.split("#", 1)[0]).removeprefix("./") or None
    return None


def _page_name(rel: str) -> str:
    """The name a page's slug comes from: its file stem, a ``README``'s folder."""
    folder, name = posixpath.split(rel)
    stem = posixpath.splitext(name)[0]
    return posixpath.basename(folder) if stem.lower() == "readme" and folder else stem


def _read_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """``.gitbook.yaml`` as a mapping, and notes (an unreadable file: GitBook's defaults)."""
    try:
        cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, [f"{path}: not valid YAML ({first}); GitBook's defaults used"]
    if cfg is None:
        return {}, []
    if not isinstance(cfg, dict):
        return {}, [f"{path}: not a mapping; GitBook's defaults used"]
    return cfg, []


def _rel_option(value: object, default: str) -> str:
    """A path option (``./product/SUMMARY.md``) relative to ``root``, POSIX, no ``./``."""
    text = value if isinstance(value, str) and value.strip() else default
    return posixpath.normpath(text.strip().lstrip("/"))


def detect(folder: Path) -> Detected | None:
    """The space configured in ``folder``: its ``.gitbook.yaml``, or ``SUMMARY.md`` beside a
    ``.gitbook/`` folder (confidence 0.9). Bad configuration: GitBook's defaults and a note."""
    path = folder / CONFIG
    if not path.is_file():
        if (folder / "SUMMARY.md").is_file() and (folder / ".gitbook").is_dir():
            return _detected(folder, {}, [], None, 0.9)
        return None
    cfg, notes = _read_config(path)
    return _detected(folder, cfg, notes, path, 1.0)


def _detected(folder: Path, cfg: dict[str, Any], notes: list[str], path: Path | None, confidence: float) -> Detected:
    root = (folder / _rel_option(cfg.get("root"), "./")).resolve()
    raw = cfg.get("structure")
    structure: dict[str, Any] = raw if isinstance(raw, dict) else {}
    readme = _rel_option(structure.get("readme"), "README.md")
    summary = _rel_option(structure.get("summary"), "SUMMARY.md")
    notes += _redirect_notes(cfg.get("redirects"), root, path)
    if not (root / summary).is_file():
        notes.append(f"{root / summary}: no table of contents; GitBook infers it from the folders: every Markdown file is a page")
    space = Space(root, readme, summary)
    return Detected(
        "gitbook",
        root,
        config=path or folder / "SUMMARY.md",
        skip=space,
        formats={".md": "markdown", ".markdown": "markdown"},
        format_options={"gitbook_blocks": True, "gitbook_readme": readme},
        notes=notes,
        confidence=confidence,
    )


def _redirect_notes(redirects: object, root: Path, path: Path | None) -> list[str]:
    """One note per ``redirects`` entry whose target file is missing (GitBook cannot serve it)."""
    if redirects is None:
        return []
    if not isinstance(redirects, dict):
        return [f"{path}: redirects is not a mapping; ignored"]
    return [
        f"{path}: redirect {old!r} -> {new!r}: no such file under {root}"
        for old, new in redirects.items()
        if not isinstance(new, str) or not (root / new.lstrip("/")).is_file()
    ]


def page_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """GitBook: the first page (``structure.readme``) -> '' (the space root); a page of
    ``SUMMARY.md`` -> its path in the summary's tree (:func:`summary_paths`); without a summary
    (GitBook infers the tree from the folders) ``a/README.md`` -> ``a``, ``a/b.md`` -> ``a/b``."""
    space = site.skip if isinstance(site.skip, Space) else None
    found = space.page_path(rel) if space is not None else None
    if found is not None:
        return found
    folder, name = posixpath.split(rel)
    stem = posixpath.splitext(name)[0]
    if stem.lower() == "readme":
        return folder
    return f"{folder}/{stem}" if folder else stem


GENERATOR = Generator(
    name="gitbook",
    detect=detect,
    anchors=counter_page_anchors(heading_slug),
    page_path=page_path,
    config_files=(".gitbook.yaml", "SUMMARY.md"),
    summary="pages of `SUMMARY.md`; readme -> space root, `a/README.md` -> `a`, `a/b.md` -> `a/b`; anchors github-slugger keeping `.`, `id-` before a digit; `<a id>` in a heading wins",
    source="GitBook docs: Git Sync > Content configuration (.gitbook.yaml root/structure/redirects, SUMMARY.md)",
    priority=30,
)
