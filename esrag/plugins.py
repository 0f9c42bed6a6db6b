"""Registries by name, extended through Python entry points.

Groups: ``esrag.chunkers``, ``esrag.embedders``, ``esrag.stores``, ``esrag.llms``,
``esrag.rerankers``, ``esrag.enrichers``, ``esrag.extractors``, ``esrag.sites`` (documentation
generators: :mod:`esrag.sites.generator`). Built-ins register through esrag's own
``pyproject.toml`` exactly as a third-party package would::

    [project.entry-points."esrag.chunkers"]
    mine = "my_pkg.chunking:MyChunker"

``load("esrag.chunkers", "mine")`` returns the object the entry point names (usually a class);
``create(group, spec, settings)`` builds one from a spec string in the one grammar every group
shares, ``name[:argument]`` (:func:`parse`, :func:`create`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from esrag.errors import PluginError

GROUPS = (
    "esrag.chunkers",
    "esrag.embedders",
    "esrag.stores",
    "esrag.llms",
    "esrag.rerankers",
    "esrag.enrichers",
    "esrag.extractors",
    "esrag.sites",
)

#: the plugin a group's bare argument means (a spec without ``name:``): a bare model name is a
#: sentence-transformers model, a bare URL an HTTP ``/rerank`` endpoint
DEFAULTS: dict[str, str] = {"esrag.embedders": "st", "esrag.rerankers": "http"}


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """One registered plugin: group, name, ``module:attr`` target and distribution name."""

    group: str
    name: str
    target: str
    distribution: str


@functools.cache
def _entry_points(group: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for ep in entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def names(group: str) -> list[str]:
    """Sorted plugin names registered in ``group``."""
    return sorted(_entry_points(group))


def load(group: str, name: str) -> Any:
    """The object registered as ``name`` in ``group``.

    Raises:
        PluginError: unknown name (the message lists the valid ones) or a failing import.
    """
    eps = _entry_points(group)
    if name not in eps:
        raise PluginError(f"unknown {_kind(group)} {name!r}; installed: {_valid(group)}")
    try:
        return eps[name].load()
    except Exception as exc:  # a third-party plugin may fail in any way on import
        raise PluginError(f"plugin {name!r} in {group} failed to load ({eps[name].value}): {exc}") from exc


def _kind(group: str) -> str:
    """``esrag.embedders`` -> ``embedder`` (for messages)."""
    return group.split(".")[-1][:-1]


def parse(group: str, spec: str) -> tuple[str, str | None]:
    """A spec string of ``group`` -> ``(name, argument)``; the argument is None when the spec has
    none (``"sqlite"``, ``"caps"``).

    Grammar: ``name[:argument]``. ``name`` is a registered plugin name (matched as registered,
    else lower-cased); everything after the first ``:`` is the argument, passed on verbatim (a
    model name, a path, a URL: ``ollama:qwen2.5:7b`` -> ``("ollama", "qwen2.5:7b")``). In a group
    with a default plugin (:data:`DEFAULTS`) a spec without a name is that plugin's argument:
    no ``:`` at all (``all-MiniLM-L6-v2``), a URL (``http://host/rerank``), or a prefix that is
    no plugin name and no identifier (``BAAI/bge-small:v1``, ``./models/x``) — the rule of
    ``esrag.embedding.parse_spec``, so every embedder spec keeps its meaning.

    Raises:
        PluginError: empty spec (one line, listing the valid names).
    """
    text = (spec or "").strip()
    if not text:
        raise PluginError(f"empty {_kind(group)} spec; installed: {_valid(group)}")
    name, sep, arg = text.partition(":")
    default = DEFAULTS.get(group)
    known = _entry_points(group)
    if default is not None and (not sep or arg.startswith("//") or name not in known and ("/" in name or not name.isidentifier())):
        return default, text
    name = name.strip()
    if name not in known and name.lower() in known:
        name = name.lower()
    return name, (arg.strip() if sep else None)


@runtime_checkable
class FromSettings(Protocol):
    """A plugin class built from the settings: ``cls.from_settings([argument,] settings,
    **options)`` (checked on the class with ``isinstance``)."""

    def from_settings(self, *args: Any, **options: Any) -> Any: ...


def create(group: str, spec: str, settings: Any = None, **options: Any) -> Any:
    """The plugin ``spec`` of ``group``, built: ``name[:argument]`` (:func:`parse`) picks the
    registered class; it is made by ``cls.from_settings(argument, settings, **options)`` when
    ``settings`` is given and the class has ``from_settings``, else ``cls(argument, **options)``.
    Without an argument (``"sqlite"``) the argument is left out of both calls:
    ``cls.from_settings(settings, **options)`` / ``cls(**options)``.

    Examples: ``create("esrag.stores", "sqlite", settings)``, ``create("esrag.embedders",
    "all-MiniLM-L6-v2", settings)`` (= ``st:all-MiniLM-L6-v2``), ``create("esrag.chunkers",
    "header", settings.chunking)``, ``create("esrag.extractors", "spacy:fr_core_news_sm")``.

    Raises:
        PluginError: empty spec or unknown name (one line listing the installed names), or a
            plugin that fails to import. Whatever the plugin's own constructor raises.
    """
    name, arg = parse(group, spec)
    cls = load(group, name)
    args = () if arg is None else (arg,)
    if settings is not None and isinstance(cls, FromSettings):
        return cls.from_settings(*args, settings, **options)
    return cls(*args, **options)


def accepts(group: str, spec: str, option: str) -> bool:
    """Whether the plugin ``spec`` of ``group`` takes the keyword ``option`` where :func:`create`
    passes options (its ``from_settings`` when it has one, else its constructor); False when
    its signature cannot be read.

    Raises:
        PluginError: empty spec, unknown name, or a plugin that fails to import.
    """
    import inspect

    cls = load(group, parse(group, spec)[0])
    factory = cls.from_settings if isinstance(cls, FromSettings) else cls
    try:
        return option in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _valid(group: str) -> str:
    return ", ".join(sorted(_entry_points(group))) or "(none installed)"


def installed() -> list[PluginInfo]:
    """Every plugin in every esrag group, for ``esrag plugins``."""
    out: list[PluginInfo] = []
    for group in GROUPS:
        for name, ep in sorted(_entry_points(group).items()):
            dist = ep.dist.name if getattr(ep, "dist", None) else "?"
            out.append(PluginInfo(group, name, ep.value, dist))
    return out


def clear_cache() -> None:
    """Forget discovered entry points (after installing a plugin in the same process)."""
    _entry_points.cache_clear()
