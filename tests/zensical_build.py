"""A Zensical site built with the real ``zensical`` from PyPI, for :mod:`test_sites_zensical`.

Zensical is installed once per machine into its own venv under
``~/.cache/esrag-tests/zensical-<version>`` (``python -m venv`` + ``pip install zensical==<version>``;
never into the project's venv). Pinned: 0.0.73, the newest release whose dependencies install
from the package index here (0.1.x needs ``zensical-ui``, not published there).

A build works on a copy of the site. Plugins the copy cannot run are removed from the copy's
configuration (``mkdocstrings``: it imports the documented package, which the fixture does not
hold; its ``::: name`` lines then stay text, and no heading id of the Markdown changes).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

VERSION = "0.0.73"
ROOT = Path.home() / ".cache" / "esrag-tests" / f"zensical-{VERSION}"
_TABLE = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(#.*)?$")


def _run(cmd: list[str], cwd: Path, timeout: float) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout + proc.stderr


def install() -> Path:
    """The ``zensical`` command of the pinned release (venv + pip install once, ~1 minute)."""
    exe = ROOT / "bin" / "zensical"
    if not exe.exists():
        _run([sys.executable, "-m", "venv", str(ROOT)], cwd=Path.home(), timeout=300)
        _run([str(ROOT / "bin" / "python"), "-m", "pip", "install", "-q", f"zensical=={VERSION}"], cwd=ROOT, timeout=900)
    assert exe.exists(), f"zensical {VERSION} did not install into {ROOT}"
    return exe


def drop_tables(toml: str, prefix: str) -> str:
    """``toml`` without the tables whose name starts with ``prefix`` (``project.plugins.mkdocstrings``)."""
    keep, out = True, []
    for line in toml.splitlines(keepends=True):
        m = _TABLE.match(line)
        if m:
            keep = not m.group("name").replace('"', "").startswith(prefix)
        if keep:
            out.append(line)
    return "".join(out)


def zensical_build(site: Path, out: Path, config: str = "zensical.toml") -> tuple[Path, str]:
    """``zensical build`` of a copy of ``site`` (the folder holding ``config``); returns the built
    site folder (``site_dir``, default ``site``) and the build's log."""
    exe = install()
    work = out / "src"
    shutil.copytree(site, work)
    conf = work / config
    conf.write_text(drop_tables(conf.read_text(encoding="utf-8"), "project.plugins.mkdocstrings"), encoding="utf-8")
    log = _run([str(exe), "build", "--clean", "-f", config], cwd=work, timeout=1200)
    return work / "site", log
