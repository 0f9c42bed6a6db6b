"""Sphinx's ``conf.py`` read as data: literal assignments through :mod:`ast`, never executed.

What is read (Sphinx 8/9, ``sphinx/config.py`` and ``sphinx/project.py``):

* ``source_suffix``: a string, a list of strings or a dict ``{suffix: filetype}`` (the default
  is ``{".rst": "restructuredtext"}``; a string or list maps each suffix to
  ``restructuredtext``, as ``Config.convert_source_suffix`` does);
* ``root_doc`` / ``master_doc`` (default ``index``), ``exclude_patterns``, ``templates_path``,
  ``html_extra_path``, ``html_baseurl``, ``html_file_suffix``, ``extensions``, ``project`` (the
  site's title; Sphinx has no description setting, and ``html_title`` is a page-title template,
  "<project> <release> documentation" by default, not read);
* object types an extension registers in its ``setup(app)`` with literal arguments:
  ``app.add_object_type(directivename, rolename, …)`` and ``app.add_crossref_type(…)``, from
  ``conf.py``'s own ``setup`` and from local extensions (``extensions`` entries found as
  ``NAME.py`` in ``conf.py``'s folder or in a folder ``conf.py`` adds to ``sys.path`` with
  literal path parts, e.g. Django's ``sys.path.append(abspath(join(dirname(__file__), "_ext")))``).

Anything else (computed values, f-strings, names) is left out: the value falls back to Sphinx's
default, and :attr:`SphinxConf.skipped` names the setting.

Files Sphinx reads (``Project.discover``): every file under the source folder whose name ends
with a ``source_suffix``, minus ``exclude_patterns`` + ``templates_path`` + ``html_extra_path``
+ ``**/_sources``, ``.#*``, ``**/.#*``, ``*.lproj/**`` (``sphinx.util.matching.Matcher``: ``*``
and ``?`` stay inside one path segment, ``**`` crosses them).
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.slugs import sphinx_page_anchors

if TYPE_CHECKING:
    from esrag.sites import Site

#: Sphinx's ``Config.source_suffix`` default.
DEFAULT_SUFFIXES = {".rst": "restructuredtext"}
#: source suffixes Sphinx extensions register in their ``setup(app)`` with
#: ``app.add_source_suffix`` (merged under ``conf.py``'s own ``source_suffix`` at
#: ``config-inited``: an explicit entry wins, as ``sphinx.registry.merge_source_suffix`` does).
#: Sources: ``myst_parser/sphinx_ext/main.py`` (``setup_sphinx``), ``myst_nb/sphinx_ext.py``
#: (``.md`` and ``.ipynb``), ``recommonmark/__init__.py`` (0.5+), ``nbsphinx/__init__.py``.
EXTENSION_SUFFIXES: dict[str, dict[str, str]] = {
    "myst_parser": {".md": "markdown"},
    "myst_nb": {".md": "markdown", ".ipynb": "notebook"},
    "recommonmark": {".md": "markdown"},
    "nbsphinx": {".ipynb": "notebook"},
}
#: extensions whose ``.md`` pages are MyST Markdown (directives in colon fences hold no section).
MYST_EXTENSIONS = frozenset({"myst_parser", "myst_nb"})
#: what ``Project.discover`` always leaves out (``sphinx/builders/__init__.py``, ``EXCLUDE_PATHS``).
ALWAYS_EXCLUDED = ("**/_sources", ".#*", "**/.#*", "*.lproj/**")


@dataclass(slots=True)
class SphinxConf:
    """What a ``conf.py`` says (see the module docstring).

    Attributes:
        path: the ``conf.py`` read.
        suffixes: ``{suffix: filetype}`` (``restructuredtext``, ``markdown``…), in order.
        root_doc: the root document's name (no suffix).
        exclude: patterns relative to the source folder (``exclude_patterns``,
            ``templates_path``, ``html_extra_path``, :data:`ALWAYS_EXCLUDED`).
        base_url, file_suffix: ``html_baseurl`` ('' = none), ``html_file_suffix``.
        extensions: the ``extensions`` list.
        project: ``project`` as :func:`esrag.sites.generator.config_text` reads it ('' = none).
        object_types: directive name -> id prefix of every ``add_object_type`` /
            ``add_crossref_type`` registration found (the prefix is the directive name, as
            ``GenericObject`` / ``Target`` make ids ``<directive>-<name>``; '' when a
            ``parse_node`` function names the object in code, so its id is unknown), and which
            of them are crossref types (targets only, no visible signature) in ``crossref_types``.
        skipped: settings present but not literal (left at Sphinx's default).
        notes: how esrag proceeded where the configuration could not be evaluated.
    """

    path: Path
    suffixes: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_SUFFIXES))
    root_doc: str = "index"
    exclude: tuple[str, ...] = ALWAYS_EXCLUDED
    base_url: str = ""
    file_suffix: str = ".html"
    extensions: tuple[str, ...] = ()
    object_types: dict[str, str] = field(default_factory=dict)
    crossref_types: tuple[str, ...] = ()
    project: str = ""
    skipped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def excluded(self, rel: str) -> str:
        """The reason Sphinx does not build ``rel`` (a path relative to the source folder), or ''.

        Reasons: ``"suffix not in conf.py source_suffix"`` and ``"excluded by conf.py
        exclude_patterns"`` (also templates_path, html_extra_path and Sphinx's own exclusions)."""
        if not any(rel.endswith(s) for s in self.suffixes):
            return "suffix not in conf.py source_suffix"
        if matches(rel, self.exclude):
            return "excluded by conf.py exclude_patterns"
        return ""

    def filetype(self, rel: str) -> str:
        """The filetype Sphinx reads ``rel`` as (``restructuredtext``, ``markdown``…), '' if none."""
        for suffix, kind in sorted(self.suffixes.items(), key=lambda kv: -len(kv[0])):
            if rel.endswith(suffix):
                return kind
        return ""


def literal_assignments(tree: ast.Module) -> tuple[dict[str, Any], set[str]]:
    """Top-level ``NAME = literal`` / ``NAME: T = literal`` of a module: ``(values, names
    assigned something that is not a literal)``. A later assignment replaces an earlier one."""
    values: dict[str, Any] = {}
    other: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        try:
            values[name] = ast.literal_eval(value)
            other.discard(name)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            values.pop(name, None)
            other.add(name)
    return values, other


def extension_changes(tree: ast.Module) -> tuple[tuple[str, ...], bool]:
    """What conf.py does to ``extensions`` besides a top-level literal assignment: the literal
    names it adds (``extensions.append('myst_parser')``, ``.extend([...])``, ``.insert(0, 'x')``,
    ``extensions += [...]``, an assignment inside ``if``/``try``/a function — every branch
    counted, since which runs is unknown) and whether any change is not a literal (then which
    parsers Sphinx gets cannot be known: :func:`_with_extension_suffixes` reads ``.md``)."""
    top = {id(node) for node in tree.body}
    added: list[str] = []
    computed = False

    def take(value: ast.expr) -> None:
        nonlocal computed
        try:
            found = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            computed = True
            return
        names = [found] if isinstance(found, str) else list(found) if isinstance(found, (list, tuple)) else None
        if names is None or not all(isinstance(n, str) for n in names):
            computed = True
            return
        added.extend(names)

    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "extensions":
            take(node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and id(node) not in top and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(x, ast.Name) and x.id == "extensions" for x in targets):
                take(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "extensions"
            and node.func.attr in ("append", "extend", "insert")
            and node.args
        ):
            take(node.args[-1])
    return tuple(dict.fromkeys(added)), computed


def _suffixes(value: Any) -> dict[str, str] | None:
    if isinstance(value, str):
        return {value: "restructuredtext"}
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return {v: "restructuredtext" for v in value}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: str(v) if isinstance(v, str) else "restructuredtext" for k, v in value.items()}
    return None


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _arg(node: ast.Call, index: int, keyword: str) -> str:
    value: ast.expr | None = node.args[index] if len(node.args) > index else None
    for kw in node.keywords:
        if kw.arg == keyword:
            value = kw.value
    return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else ""


def registered_object_types(tree: ast.Module) -> tuple[dict[str, str], list[str]]:
    """``add_object_type`` / ``add_crossref_type`` calls with a literal directive name anywhere
    in a module (in practice its ``setup(app)``): ``({directive: id prefix}, [crossref directives])``
    (prefix '' for an object type with a ``parse_node`` function: its id is made in code)."""
    found: dict[str, str] = {}
    crossref: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in ("add_object_type", "add_crossref_type"):
            name = _arg(node, 0, "directivename")
            if name:
                # a parse_node function decides the object's name (and so its id) in code: no id then
                custom_parse = len(node.args) > 3 or any(kw.arg == "parse_node" for kw in node.keywords)
                found[name] = "" if custom_parse and _call_name(node) == "add_object_type" else name
                if _call_name(node) == "add_crossref_type":
                    crossref.append(name)
    return found, crossref


def _path_dirs(tree: ast.Module, folder: Path) -> list[Path]:
    """Folders a ``sys.path.insert/append(…)`` call names with literal parts (joined to
    ``folder``), when they exist."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) in ("insert", "append"):
            func = node.func
            owner = func.value if isinstance(func, ast.Attribute) else None
            if not (isinstance(owner, ast.Attribute) and owner.attr == "path"):
                continue
            parts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            for part in parts:
                candidate = (folder / part).resolve()
                if part not in (".", "") and candidate.is_dir():
                    out.append(candidate)
    return out


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
    except (SyntaxError, ValueError, OSError):
        return None


@lru_cache(maxsize=32)
def read_conf(path: Path) -> SphinxConf:
    """``conf.py`` at ``path`` as a :class:`SphinxConf` (defaults where it is unreadable or a
    setting is not a literal; never executes it). Cached per path."""
    conf = SphinxConf(path)
    tree = _parse(path)
    if tree is None:
        conf.skipped = ("conf.py (not valid Python)",)
        return conf
    values, other = literal_assignments(tree)
    suffixes = _suffixes(values.get("source_suffix")) if "source_suffix" in values else None
    conf.suffixes = suffixes or dict(DEFAULT_SUFFIXES)
    root = values.get("root_doc", values.get("master_doc"))
    conf.root_doc = root if isinstance(root, str) and root else "index"
    conf.exclude = (
        *_strings(values.get("exclude_patterns")),
        *_strings(values.get("templates_path")),
        *_strings(values.get("html_extra_path")),
        *ALWAYS_EXCLUDED,
    )
    base = values.get("html_baseurl")
    conf.base_url = base if isinstance(base, str) else ""
    suffix = values.get("html_file_suffix")
    conf.file_suffix = suffix if isinstance(suffix, str) and suffix else ".html"
    conf.project = config_text(values.get("project"))
    added, computed = extension_changes(tree)
    conf.extensions = tuple(dict.fromkeys((*_strings(values.get("extensions")), *added)))
    conf.suffixes, conf.notes = _with_extension_suffixes(conf.suffixes, conf.extensions, "extensions" in other or computed)
    types, crossref = registered_object_types(tree)
    dirs = [path.parent, *_path_dirs(tree, path.parent)]
    for ext in conf.extensions:
        for folder in dirs:
            module = folder / (ext.replace(".", "/") + ".py")
            sub = _parse(module) if module.is_file() else None
            if sub is not None:
                more, more_crossref = registered_object_types(sub)
                types.update(more)
                crossref.extend(more_crossref)
                break
    conf.object_types, conf.crossref_types = types, tuple(dict.fromkeys(crossref))
    wanted = (
        "source_suffix",
        "root_doc",
        "master_doc",
        "exclude_patterns",
        "html_baseurl",
        "html_file_suffix",
        "extensions",
        "templates_path",
        "html_extra_path",
    )
    conf.skipped = tuple(n for n in wanted if n in other)
    return conf


def _with_extension_suffixes(
    suffixes: dict[str, str], extensions: tuple[str, ...], unknown: bool
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``suffixes`` plus those the ``extensions`` register (:data:`EXTENSION_SUFFIXES`; conf.py's
    own entries win), and the notes to show. ``unknown``: ``extensions`` is computed in conf.py,
    so which parsers it adds cannot be known — ``.md`` is read as Markdown rather than dropped on
    a guess, and a note says so."""
    out, notes = dict(suffixes), []
    for ext in extensions:
        for suffix, kind in EXTENSION_SUFFIXES.get(ext, {}).items():
            out.setdefault(suffix, kind)
    if unknown and ".md" not in out:
        out[".md"] = "markdown"
        notes.append("conf.py computes `extensions`, so the parsers they add are unknown: .md files are read as Markdown")
    return out, tuple(notes)


@lru_cache(maxsize=256)
def _pattern(pattern: str) -> re.Pattern[str]:
    """``sphinx.util.matching._translate_pattern``: ``**`` any path, ``*`` / ``?`` within one
    segment, ``[...]`` a class not matching ``/``."""
    i, n, res = 0, len(pattern), ""
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if i < n and pattern[i] == "*":
                i += 1
                res += ".*"
            else:
                res += "[^/]*"
        elif c == "?":
            res += "[^/]"
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                res += "\\["
            else:
                stuff = pattern[i:j].replace("\\", "\\\\")
                i = j + 1
                if stuff[0] == "!":
                    stuff = "^/" + stuff[1:]
                elif stuff[0] == "^":
                    stuff = "\\" + stuff
                res += f"[{stuff}]"
        else:
            res += re.escape(c)
    return re.compile(res + "$")


def matches(rel: str, patterns: tuple[str, ...]) -> bool:
    """True when Sphinx's ``Matcher`` (``sphinx.util.matching``, with ``get_matching_files``'s
    folder pruning) excludes ``rel``: a pattern matches the document path or
    one of its parent folders (a pattern naming a folder excludes everything in it, as
    ``Project.discover`` walks with the excluded folders pruned)."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    expanded = [*patterns, *(p[3:] for p in patterns if p.startswith("**/"))]  # Matcher: "**/x" also matches "x"
    return any(_pattern(p.rstrip("/")).match(prefix) for p in expanded if p for prefix in prefixes)


# -- the generator ---------------------------------------------------------------------------
def _dirhtml_hint(*folders: Path) -> bool:
    """A ``builder: dirhtml`` in ``.readthedocs.y(a)ml`` (Read the Docs builds with it)."""
    for folder in folders:
        for name in (".readthedocs.yaml", ".readthedocs.yml"):
            p = folder / name
            if p.is_file() and re.search(r"builder:\s*['\"]?dirhtml", p.read_text(encoding="utf-8", errors="replace")):
                return True
    return False


def detect(folder: Path) -> Detected | None:
    """The Sphinx project whose ``conf.py`` lies in ``folder`` (or its ``docs/``, ``source/``,
    ``doc/``, ``docs/source/``), read by :func:`read_conf`; ``sphinx-dirhtml`` when Read the
    Docs builds it with ``dirhtml``. Confidence 0.5: ``conf.py`` is a common file name."""
    for sub in ("", "docs", "source", "doc", "docs/source"):
        conf = folder / sub / "conf.py"
        if not conf.is_file():
            continue
        cfg = read_conf(conf.resolve())
        kinds = {"restructuredtext": "rst", "markdown": "markdown"}
        # every suffix Sphinx reads; notebooks (myst_nb, nbsphinx) are read by esrag.formats.notebook
        formats = {s: kinds.get(k, k) for s, k in cfg.suffixes.items()}
        options = {
            "object_types": dict(cfg.object_types),
            "crossref_types": list(cfg.crossref_types),
            "myst": bool(MYST_EXTENSIONS & set(cfg.extensions)) or bool(cfg.notes),
        }
        return Detected(
            "sphinx-dirhtml" if _dirhtml_hint(folder, conf.parent) else "sphinx",
            conf.parent,
            cfg.base_url,
            suffix=cfg.file_suffix,
            config=conf,
            formats=formats,
            include=tuple(f"*{s}" for s, kind in formats.items() if kind in (*kinds.values(), "notebook")),
            skip=cfg.excluded,
            format_options=options,
            notes=list(cfg.notes),
            confidence=0.5 if sub else 0.6,
            title=cfg.project,
        )
    return None


def _html_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """Sphinx ``html`` builder: the document name plus ``html_file_suffix``."""
    return posixpath.splitext(rel)[0] + site.suffix


def _dirhtml_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """Sphinx ``dirhtml`` builder: ``a/b`` -> ``a/b/``, ``a/index`` -> ``a/``."""
    folder, name = posixpath.split(posixpath.splitext(rel)[0])
    prefix = f"{folder}/" if folder else ""
    return prefix if name == "index" else f"{prefix}{name}/"


GENERATOR = Generator(
    name="sphinx",
    detect=detect,
    anchors=sphinx_page_anchors,
    page_path=_html_path,
    config_files=("conf.py",),
    summary="`a/b.rst` -> `a/b.html` (`html_file_suffix`); `sphinx-dirhtml`: `a/b/`; anchors docutils `make_id`, duplicates `id1`…",
    source="sphinx/config.py, sphinx/project.py, sphinx/builders/html, sphinx/builders/dirhtml.py; docutils nodes.make_id",
    variants={"sphinx-dirhtml": _dirhtml_path},
    priority=90,
)
