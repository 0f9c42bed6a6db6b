"""Registries by name, extended through Python entry points.

Groups: ``esrag.chunkers``, ``esrag.embedders``, ``esrag.stores``, ``esrag.llms``,
``esrag.rerankers``, ``esrag.enrichers``, ``esrag.extractors``. Built-ins register through esrag's own
``pyproject.toml`` exactly as a third-party package would::

    [project.entry-points."esrag.chunkers"]
    mine = "my_pkg.chunking:MyChunker"

``load("esrag.chunkers", "mine")`` returns the object the entry point names (usually a class).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from esrag.errors import PluginError

GROUPS = (
    "esrag.chunkers",
    "esrag.embedders",
    "esrag.stores",
    "esrag.llms",
    "esrag.rerankers",
    "esrag.enrichers",
    "esrag.extractors",
)


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
        valid = ", ".join(sorted(eps)) or "(none installed)"
        raise PluginError(f"unknown {group.split('.')[-1][:-1]} {name!r}; installed: {valid}")
    try:
        return eps[name].load()
    except Exception as exc:  # a third-party plugin may fail in any way on import
        raise PluginError(f"plugin {name!r} in {group} failed to load ({eps[name].value}): {exc}") from exc


def create(group: str, spec: str, settings: Any = None, **options: Any) -> Any:
    """The plugin a spec ``name[:argument]`` names in ``group``, built: the argument (a model,
    path or URL; everything after the first colon, ``""`` when absent) goes to the plugin's
    ``from_settings(argument, settings, **options)`` when it has one, else to its constructor
    (``cls(argument, **options)``, or ``cls(**options)`` without an argument).

    Raises:
        PluginError: unknown name (lists the installed ones) or a failing import.
    """
    name, _, argument = (spec or "").strip().partition(":")
    obj = load(group, name.strip().lower())
    argument = argument.strip()
    if hasattr(obj, "from_settings"):
        return obj.from_settings(argument, settings, **options)
    return obj(argument, **options) if argument else obj(**options)


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
