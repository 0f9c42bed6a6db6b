"""MkDocs' ``mkdocs.yml`` read as MkDocs reads it (mkdocs 1.6, ``mkdocs/config/defaults.py`` and
``mkdocs/structure/files.py``), never importing what it names:

* ``INHERIT`` (a parent config merged under this one), ``docs_dir`` (default ``docs``),
  ``site_url``, ``use_directory_urls``, ``site_name`` and ``site_description`` (the site's title
  and description, ``mkdocs/config/defaults.py``);
* which pages are built: ``exclude_docs`` (gitignore patterns, plus MkDocs' own ``.*`` and
  ``/templates/``) and ``draft_docs`` leave a page out; ``not_in_nav`` pages are built (only
  left out of the navigation), so they are indexed; a ``README.md`` beside an ``index.md`` is
  left out ("conflicts with index.md");
* the header slug: the ``toc`` extension's ``slugify`` and ``separator``. A ``!!python/name:``
  or ``!!python/object/apply:`` tag names the function; the rules known here are Python-Markdown's
  ``markdown.extensions.toc.slugify`` / ``slugify_unicode`` and PyMdown Extensions'
  ``pymdownx.slugs.slugify(case=…, percent_encode=…, normalize=…)`` and its named forms
  (``uslugify``, ``uslugify_encoded``, ``uslugify_cased``, ``uslugify_cased_encoded``, ``gfm``,
  ``gfm_encoded``: pymdown-extensions 9.x ``slugs.py``). Another function is not known: the
  default rule is used and :attr:`MkDocsConf.slugify_unknown` names it;
* notebooks: with the ``mkdocs-jupyter`` plugin (``mkdocs_jupyter/plugin.py``) a ``.ipynb`` its
  ``include`` / ``ignore`` globs select is a page (URL as for a ``.md`` page), read by
  :mod:`esrag.formats.notebook`, heading ids nbconvert's (``markdown_cell_processor: jupyter``,
  the default) or the toc rule (``mkdocs``); without it MkDocs copies notebooks as static files.
"""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pathspec
import yaml

from esrag.sites.generator import Detected, Generator, config_text
from esrag.sites.slugs import mkdocs_page_anchors

if TYPE_CHECKING:
    from esrag.sites import Site


@dataclass(frozen=True, slots=True)
class PyName:
    """A ``!!python/name:NAME`` value (never imported)."""

    name: str


@dataclass(frozen=True, slots=True)
class PyApply:
    """A ``!!python/object/apply:NAME`` value: the call's ``args`` and ``kwds`` (never made)."""

    name: str
    args: tuple = ()
    kwds: dict = field(default_factory=dict)


class ConfigLoader(yaml.SafeLoader):
    """SafeLoader keeping ``!!python/name:`` and ``!!python/object/apply:`` as :class:`PyName` /
    :class:`PyApply`; ``!ENV [VAR, default]`` as its default; other custom tags as None."""


def _python_name(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> PyName:
    return PyName(suffix)


def _python_apply(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> PyApply:
    if isinstance(node, yaml.SequenceNode):
        return PyApply(suffix, tuple(loader.construct_sequence(node, deep=True)))
    if isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
        return PyApply(suffix, tuple(value.get("args") or ()), dict(value.get("kwds") or {}))
    return PyApply(suffix)


def _env(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        values = loader.construct_sequence(node, deep=True)
        return values[-1] if len(values) > 1 else None
    return None


ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/object/apply:", _python_apply)
ConfigLoader.add_constructor("!ENV", _env)
ConfigLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def load_yaml(path: Path) -> dict[str, Any]:
    """``path`` read with :class:`ConfigLoader`, ``INHERIT`` merged (the child wins, nested
    mappings merged key by key, as ``mkdocs.utils.yaml.yaml_load``); {} when unreadable."""
    try:
        cfg = yaml.load(path.read_text(encoding="utf-8"), Loader=ConfigLoader) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    if not isinstance(cfg, dict):
        return {}
    parent = cfg.pop("INHERIT", None)
    if isinstance(parent, str) and parent:
        base = load_yaml((path.parent / parent).resolve())
        cfg = _merge(base, cfg)
    return cfg


def _merge(base: dict, child: dict) -> dict:
    out = dict(base)
    for key, value in child.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# -- slug rules -----------------------------------------------------------------------------
def toc_slugify(value: str, separator: str = "-", unicode: bool = False) -> str:
    """Python-Markdown ``markdown.extensions.toc.slugify`` (3.x); ``unicode`` keeps non-ASCII
    letters (``slugify_unicode``)."""
    if not unicode:
        value = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(rf"[{separator}\s]+", separator, value)


_TAGS = re.compile(r"</?[^>]*>")
_INVALID = re.compile(r"[^\w\- ]")
_ASCII_UPPER = re.compile(r"[A-Z]")


def pymdownx_slugify(text: str, separator: str = "-", case: str = "none", percent_encode: bool = False, normalize: str = "NFC") -> str:
    """PyMdown Extensions ``pymdownx.slugs._uslugify``: Unicode-normalise, drop HTML tags, strip,
    apply ``case`` (``lower``, ``lower-ascii``, ``fold``, ``none``), drop characters other than
    word characters, ``-`` and space, each space -> ``separator``; percent-encode if asked."""
    slug = _TAGS.sub("", unicodedata.normalize(normalize, text)).strip()  # type: ignore[arg-type]
    if case == "lower":
        slug = slug.lower()
    elif case == "lower-ascii":
        slug = _ASCII_UPPER.sub(lambda m: m.group(0).lower(), slug)
    elif case == "fold":
        slug = slug.casefold()
    slug = _INVALID.sub("", slug).replace(" ", separator)
    return quote(slug.encode("utf-8")) if percent_encode else slug


#: slug functions by the dotted name mkdocs.yml gives them (``!!python/name:``).
NAMED_SLUGS: dict[str, Callable[..., str]] = {
    "markdown.extensions.toc.slugify": toc_slugify,
    "markdown.extensions.toc.slugify_unicode": functools.partial(toc_slugify, unicode=True),
    "pymdownx.slugs.uslugify": functools.partial(pymdownx_slugify, case="lower"),
    "pymdownx.slugs.uslugify_encoded": functools.partial(pymdownx_slugify, case="lower", percent_encode=True),
    "pymdownx.slugs.uslugify_cased": pymdownx_slugify,
    "pymdownx.slugs.uslugify_cased_encoded": functools.partial(pymdownx_slugify, percent_encode=True),
    "pymdownx.slugs.gfm": functools.partial(pymdownx_slugify, case="lower-ascii"),
    "pymdownx.slugs.gfm_encoded": functools.partial(pymdownx_slugify, case="lower-ascii", percent_encode=True),
}


def slug_rule(value: Any) -> Callable[..., str] | None:
    """The slug function ``value`` (a ``toc`` ``slugify`` setting) names, or None when unknown."""
    if isinstance(value, PyName):
        return NAMED_SLUGS.get(value.name)
    if isinstance(value, PyApply) and value.name == "pymdownx.slugs.slugify" and not value.args:
        kw = {k: value.kwds[k] for k in ("case", "percent_encode", "normalize") if k in value.kwds}
        return functools.partial(pymdownx_slugify, **kw)
    return None


def _toc_config(extensions: Any) -> dict[str, Any] | None:
    """The ``toc`` extension's settings in ``markdown_extensions`` (a list of names or one-key
    mappings, or a mapping), or None when it is not configured."""
    items: list[tuple[str, Any]] = []
    if isinstance(extensions, dict):
        items = list(extensions.items())
    elif isinstance(extensions, list):
        for item in extensions:
            if isinstance(item, str):
                items.append((item, None))
            elif isinstance(item, dict):
                items.extend(item.items())
    for name, value in items:
        if name in ("toc", "markdown.extensions.toc"):
            return value if isinstance(value, dict) else {}
    return None


@dataclass(slots=True)
class MkDocsConf:
    """What a ``mkdocs.yml`` says (see the module docstring). ``slugify(title)`` is the header
    slug rule (separator bound), None for Python-Markdown's default; ``site_name`` /
    ``site_description`` as :func:`esrag.sites.generator.config_text` reads them."""

    path: Path
    docs_dir: Path
    site_url: str = ""
    use_directory_urls: bool = True
    exclude: pathspec.PathSpec | None = None
    drafts: pathspec.PathSpec | None = None
    not_in_nav: pathspec.PathSpec | None = None
    slugify: Callable[[str], str] | None = None
    slugify_unknown: str = ""
    jupyter: dict[str, Any] | None = None
    site_name: str = ""
    site_description: str = ""

    def excluded(self, rel: str) -> str:
        """Why MkDocs does not build ``rel`` (relative to ``docs_dir``), or '' (built)."""
        if rel.lower().endswith(".ipynb") and (why := self._notebook(rel)):
            return why
        if self.exclude is not None and self.exclude.match_file(rel):
            return f"excluded by {self.path.name} exclude_docs"
        if self.drafts is not None and self.drafts.match_file(rel):
            return f"draft ({self.path.name} draft_docs)"
        folder, _, name = rel.rpartition("/")
        if name.lower().endswith(".md") and name[:-3] == "README":
            index = self.docs_dir / folder / "index.md"
            if index.is_file() and not self.excluded(f"{folder}/index.md" if folder else "index.md"):
                return "conflicts with index.md (MkDocs builds index.md)"
        return ""

    def _notebook(self, rel: str) -> str:
        """Why the notebook ``rel`` is no page: without the mkdocs-jupyter plugin MkDocs copies it
        as a static file; with it, a page unless its ``include`` globs miss it or ``ignore``
        matches (``mkdocs_jupyter/plugin.py`` ``should_include``: ``PurePath.match`` of each
        pattern; defaults ``["*.py", "*.ipynb"]`` and ``[]``)."""
        if self.jupyter is None:
            return "a notebook MkDocs copies as a static file (no mkdocs-jupyter plugin in mkdocs.yml)"
        path = PurePosixPath(rel)
        include, ignore = self.jupyter.get("include", ["*.py", "*.ipynb"]), self.jupyter.get("ignore", [])
        if not any(path.match(str(p)) for p in include or []) or any(path.match(str(p)) for p in ignore or []):
            return "not a page of mkdocs-jupyter (its include / ignore in mkdocs.yml)"
        return ""


def _jupyter(plugins: Any) -> dict[str, Any] | None:
    """The mkdocs-jupyter plugin's options from ``plugins`` (a list of names or one-key
    mappings), None when it is not enabled."""
    for item in plugins if isinstance(plugins, list) else []:
        name, options = next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, None)
        if name == "mkdocs-jupyter":
            return options if isinstance(options, dict) else {}
    return None


def _spec(value: Any) -> pathspec.PathSpec | None:
    lines = value.splitlines() if isinstance(value, str) else [str(v) for v in value] if isinstance(value, list) else []
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


_DEFAULT_EXCLUDE = (".*", "/templates/")  # mkdocs.structure.files._default_exclude


def read_mkdocs(path: Path) -> MkDocsConf:
    """``mkdocs.yml`` at ``path`` as a :class:`MkDocsConf` (defaults where it is unreadable)."""
    return conf_from(path, load_yaml(path))


def conf_from(path: Path, cfg: dict[str, Any]) -> MkDocsConf:
    """The :class:`MkDocsConf` of the settings ``cfg`` read from ``path`` (MkDocs' keys, also
    what Zensical reads from ``zensical.toml`` ``[project]``)."""
    excluded = cfg.get("exclude_docs")
    extra = excluded.splitlines() if isinstance(excluded, str) else []
    conf = MkDocsConf(
        path,
        path.parent / str(cfg.get("docs_dir") or "docs"),
        str(cfg.get("site_url") or ""),
        cfg.get("use_directory_urls", True) is not False,
        pathspec.GitIgnoreSpec.from_lines([*_DEFAULT_EXCLUDE, *extra]),
        _spec(cfg.get("draft_docs")),
        _spec(cfg.get("not_in_nav")),
        jupyter=_jupyter(cfg.get("plugins")),
        site_name=config_text(cfg.get("site_name")),
        site_description=config_text(cfg.get("site_description")),
    )
    toc = _toc_config(cfg.get("markdown_extensions")) or {}
    separator = str(toc.get("separator") or "-")
    if "slugify" in toc and toc["slugify"] is not None:
        rule = slug_rule(toc["slugify"])
        if rule is None:
            value = toc["slugify"]
            conf.slugify_unknown = getattr(value, "name", repr(value))
        else:
            conf.slugify = functools.partial(rule, separator=separator)
    elif separator != "-":
        conf.slugify = functools.partial(toc_slugify, separator=separator)
    return conf


# -- the generator ---------------------------------------------------------------------------
def detect(folder: Path) -> Detected | None:
    """The MkDocs site whose ``mkdocs.yml`` (or ``mkdocs.yaml``) lies in ``folder``."""
    for name in ("mkdocs.yml", "mkdocs.yaml"):
        path = folder / name
        if path.is_file():
            cfg = read_mkdocs(path)
            notes = [f"mkdocs.yml toc slugify {cfg.slugify_unknown} is not known: Python-Markdown's default slug is used"]
            return Detected(
                "mkdocs",
                cfg.docs_dir,
                cfg.site_url,
                cfg.use_directory_urls,
                config=path,
                skip=cfg.excluded,
                anchors=functools.partial(mkdocs_page_anchors, slug=cfg.slugify) if cfg.slugify is not None else None,
                notes=notes if cfg.slugify_unknown else [],
                title=cfg.site_name,
                description=cfg.site_description,
                **_notebook_reading(cfg),
            )
    return None


def _notebook_reading(cfg: MkDocsConf) -> dict[str, Any]:
    """With mkdocs-jupyter, notebooks are pages read as notebooks; their heading ids are
    nbconvert's unless ``markdown_cell_processor: mkdocs`` (then the site's toc rule)."""
    if cfg.jupyter is None:
        return {}
    nbconvert = cfg.jupyter.get("markdown_cell_processor", "jupyter") != "mkdocs"
    return {"formats": {".ipynb": "notebook"}, "format_options": {"notebook_anchors": "nbconvert"} if nbconvert else {}}


def page_path(rel: str, front: dict[str, Any], site: Site) -> str:
    """MkDocs ``File.url``: ``a/b.md`` -> ``a/b/`` (``use_directory_urls``) or ``a/b.html``;
    ``index.md``/``README.md`` are the folder's page."""
    folder, name = posixpath.split(rel)
    stem = posixpath.splitext(name)[0]
    prefix = f"{folder}/" if folder else ""
    if stem.lower() in ("index", "readme"):
        return prefix if site.directory_urls else f"{prefix}index.html"
    return f"{prefix}{stem}/" if site.directory_urls else f"{prefix}{stem}.html"


GENERATOR = Generator(
    name="mkdocs",
    detect=detect,
    anchors=mkdocs_page_anchors,
    page_path=page_path,
    config_files=("mkdocs.yml",),
    summary="`a/b.md` -> `a/b/` (`use_directory_urls`) or `a/b.html`; anchors Python-Markdown `toc` slugify (or the one mkdocs.yml names), duplicates `_1`",
    source="mkdocs/config/defaults.py, mkdocs/structure/files.py; markdown/extensions/toc.py",
    priority=10,
)
