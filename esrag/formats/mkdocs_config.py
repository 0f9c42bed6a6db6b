"""What an ``mkdocs.yml`` enables that changes the text of a page: its Markdown extensions
(with their options) and its plugins, read as MkDocs reads them.

MkDocs (``mkdocs/config/config_options.py``, ``MarkdownExtensions`` and ``Plugins``) accepts
``markdown_extensions`` and ``plugins`` as a list whose items are a name or a one-key mapping
``{name: options}``, or as a mapping ``{name: options}``; options may be null. ``INHERIT: path``
(relative to the file) names a parent configuration that this one is deep-merged over
(``mkdocs/utils/yaml.py``). Custom tags (``!!python/name:…``, ``!ENV``, ``!relative``) are read as
None: only the names and literal options matter here.

This module only reads; :mod:`esrag.formats.includes` decides what the extensions do.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MKDOCS_NAMES = ("mkdocs.yml", "mkdocs.yaml")
_MAX_INHERIT = 10


class _LenientLoader(yaml.SafeLoader):
    """SafeLoader that reads any custom tag (``!!python/name:…``, ``!ENV``, ``!relative``) as None."""


_LenientLoader.add_multi_constructor("", lambda loader, suffix, node: None)
_LenientLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@dataclass(frozen=True)
class MkDocsConfig:
    """The parts of one ``mkdocs.yml`` that decide a page's text.

    Attributes:
        path: the configuration file (absolute).
        extensions: Markdown extension name -> its options (an empty dict when none are given).
        plugins: plugin names, in order.
        error: a one-line reason when the file could not be read as YAML ('' when it could);
            ``extensions`` and ``plugins`` are then empty.
    """

    path: Path
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()
    error: str = ""

    @property
    def root(self) -> Path:
        """The MkDocs project root: the directory of ``mkdocs.yml`` (``mkdocs build`` runs there,
        so the working-directory-relative paths of Python-Markdown extensions start here)."""
        return self.path.parent


def find_mkdocs(start: Path) -> Path | None:
    """The nearest ``mkdocs.yml`` (or ``mkdocs.yaml``) in ``start`` or one of its parents, or None."""
    for d in (start, *start.parents):
        for name in MKDOCS_NAMES:
            if (d / name).is_file():
                return d / name
    return None


def read_mkdocs(path: Path) -> MkDocsConfig:
    """``path`` read as MkDocs reads it (see the module docstring); never raises: a file that is not
    valid YAML gives a config with no extensions and ``error`` set. Cached while the file's size
    and modification time stay the same."""
    try:
        st = path.stat()
    except OSError as exc:
        return MkDocsConfig(path, error=f"{path.name} not read: {exc}")
    return _read_cached(path.resolve(), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _read_cached(path: Path, mtime_ns: int, size: int) -> MkDocsConfig:
    try:
        data = _load(path.resolve(), 0)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return MkDocsConfig(path.resolve(), error=f"{path.name} not read: {first}")
    return MkDocsConfig(path.resolve(), _named(data.get("markdown_extensions")), tuple(_named(data.get("plugins"))))


def _load(path: Path, depth: int) -> dict[str, Any]:
    data = yaml.load(path.read_text(encoding="utf-8-sig"), Loader=_LenientLoader) or {}
    if not isinstance(data, dict):
        return {}
    parent = data.pop("INHERIT", None)
    if isinstance(parent, str) and depth < _MAX_INHERIT:
        base = path.parent / parent
        if base.is_file():
            return _merge(_load(base.resolve(), depth + 1), data)
    return data


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """MkDocs' ``merge`` for INHERIT: mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _named(value: Any) -> dict[str, dict[str, Any]]:
    """A ``markdown_extensions`` / ``plugins`` value as name -> options."""
    items: list[Any] = list(value.items()) if isinstance(value, dict) else list(value) if isinstance(value, list) else []
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if isinstance(item, tuple):
            name, options = item
        elif isinstance(item, dict) and len(item) == 1:
            name, options = next(iter(item.items()))
        elif isinstance(item, str):
            name, options = item, None
        else:
            continue
        out[str(name)] = options if isinstance(options, dict) else {}
    return out
