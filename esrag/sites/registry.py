"""Every documentation generator esrag knows, from the ``esrag.sites`` entry-point group, and the
detection of the site that governs an ingested folder.

Built-ins register through esrag's own ``pyproject.toml`` exactly as a user's package would
(:mod:`esrag.sites.generator`)::

    [project.entry-points."esrag.sites"]
    mine = "my_pkg.sites:GENERATOR"

Detection (:func:`detect`) looks for a configuration file, nearest first:

1. in the ingested folder and the folders above it, up to the repository root (the first
   folder holding ``.git``) — so ``esrag ingest repo/docs`` finds ``repo/mkdocs.yml``;
2. else below the ingested folder, in the usual documentation folders
   (:data:`esrag.sites.generator.SITE_FOLDERS`: ``docs/``, ``website/``, ``docs/en/``…) — so
   ``esrag ingest repo`` finds ``repo/docs/en/mkdocs.yml``. Several sites below one folder are
   a :class:`esrag.errors.ConfigError` naming each (ingest one of them).

In one folder, generators are tried in ``priority`` order; a detection with lower
``confidence`` (a shared file name such as ``conf.py``) loses to a sure one in the same folder.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from esrag import plugins
from esrag.errors import ConfigError, PluginError
from esrag.sites.generator import SITE_FOLDERS, Detected, Generator, PagePath
from esrag.sites.layout import up_to_repository_root

GROUP = "esrag.sites"


#: generators whose entry point failed to load: name -> the one-line error (said once, as a warning)
_BROKEN: dict[str, str] = {}


@functools.cache
def generators() -> dict[str, Generator]:
    """Every registered generator that loads, by name, in detection order (``priority``, then
    name). A third-party entry point that fails to import or names no :class:`Generator` is
    left out with one warning (every other command keeps working); selecting it with ``--site``
    raises its error (:func:`generator_of`)."""
    found = []
    for name in plugins.names(GROUP):
        try:
            gen = plugins.load(GROUP, name)
            if not isinstance(gen, Generator):
                raise PluginError(f"plugin {name!r} in {GROUP} is not an esrag.sites.generator.Generator: {gen!r}")
        except PluginError as exc:
            if name not in _BROKEN:
                warnings.warn(f"{exc} (the site generator is left out)", RuntimeWarning, stacklevel=2)
            _BROKEN[name] = str(exc)
            continue
        found.append(gen)
    return {g.name: g for g in sorted(found, key=lambda g: (g.priority, g.name))}


def site_names() -> tuple[str, ...]:
    """Every ``--site`` value: each generator's name and its variants, in detection order."""
    return tuple(n for g in generators().values() for n in (g.name, *g.variants))


def generator_of(site: str) -> Generator:
    """The generator a ``--site`` value selects (``sphinx-dirhtml`` -> Sphinx).

    Raises:
        ConfigError: unknown site (lists the valid ones). PluginError: its entry point fails to load.
    """
    for gen in generators().values():
        if site == gen.name or site in gen.variants:
            return gen
    if site in _BROKEN:
        raise PluginError(_BROKEN[site])
    raise ConfigError(f"unknown site {site!r}; valid: {', '.join(site_names())}")


def page_rule(site: str) -> PagePath | None:
    """The page-path rule of a ``--site`` value (a variant's own, else its generator's)."""
    gen = generator_of(site)
    return gen.variants.get(site, gen.page_path)


def page_anchors(site: str, titles: Sequence[str], explicit: Sequence[str] | None = None) -> list[str]:
    """The anchor of every header of one page, in document order, by the default rule of the
    generator ``site`` selects.

    Args:
        site: a ``--site`` value.
        titles: the headers' rendered texts, in document order.
        explicit: explicit ids per header ('' where none), same length as ``titles``.

    Raises:
        ConfigError: unknown site.
    """
    return generator_of(site).anchors(titles, list(explicit or [""] * len(titles)))


def _in_folder(folder: Path, wanted: Generator | None) -> Detected | None:
    """The surest detection among the generators whose configuration lies in ``folder``."""
    best: Detected | None = None
    for gen in generators().values():
        if gen.detect is None or (wanted is not None and gen is not wanted):
            continue
        found = gen.detect(folder)
        if found is not None and (best is None or found.confidence > best.confidence):
            best = found
            if found.confidence >= 1.0:
                break
    return best


def _below(root: Path, wanted: Generator | None) -> list[Detected]:
    """Sites configured in the documentation folders below ``root`` (:data:`SITE_FOLDERS`),
    one per configuration file."""
    out: list[Detected] = []
    for sub in SITE_FOLDERS:
        folder = root / sub
        if folder.is_dir():
            found = _in_folder(folder, wanted)
            if found is not None and all(found.config != d.config for d in out):
                out.append(found)
    return out


def detect(root: Path, site: str | None = None) -> Detected | None:
    """The generator configuration governing ``root`` (a folder or a file), or None (see the
    module docstring for where it is looked for).

    With ``site`` given only that generator's configuration is looked for, and the result
    carries ``site`` (a variant such as ``sphinx-dirhtml`` stays); generators without a
    configuration (``github``, ``plain``) give None.

    Raises:
        ConfigError: unknown ``site``; several sites below ``root`` (names each); a
            configuration that cannot be read (names the file).
    """
    wanted = generator_of(site) if site else None
    if wanted is not None and wanted.detect is None:
        return None
    root = root.resolve()
    start = root if root.is_dir() else root.parent
    found = next((d for f in up_to_repository_root(start) if (d := _in_folder(f, wanted)) is not None), None)
    if found is None and root.is_dir():
        below = _below(root, wanted)
        if len(below) > 1:
            names = "; ".join(f"{d.site} ({d.config})" for d in below)
            raise ConfigError(f"{root}: several documentation sites found: {names}; ingest one of their folders")
        found = below[0] if below else None
        if found is not None:
            found.found_below = True
    if found is not None and site:
        found.site = site
    return found


def describe_generators() -> list[dict[str, Any]]:
    """One row per generator for the manual: ``name``, ``variants``, ``config_files``,
    ``summary``, ``source``."""
    return [
        {"name": g.name, "variants": list(g.variants), "config_files": list(g.config_files), "summary": g.summary, "source": g.source}
        for g in generators().values()
    ]
