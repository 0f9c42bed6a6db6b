"""The library's front door: ``esrag.__all__`` (each name importable and documented, loaded
lazily so ``import esrag`` stays light), ``py.typed`` in the wheel, and docs/python.md's "Use from
Python" example run as written on a real tree."""

from __future__ import annotations

import ast
import inspect
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import esrag
from paths import LARAVEL, PROJECT
from serve_helpers import clean_env

PYTHON_PAGE = PROJECT / "docs" / "python.md"  # the manual's "Use from Python" (moved there from README)


def test_every_exported_name_is_importable_and_documented():
    names = [n for n in esrag.__all__ if n != "__version__"]
    assert len(names) >= 15 and len(set(esrag.__all__)) == len(esrag.__all__)
    assert set(names) == set(esrag._EXPORTS)  # every lazy name is public, every public name loads
    for name in names:
        obj = getattr(esrag, name)
        ns: dict = {}
        exec(f"from esrag import {name} as imported", ns)
        assert ns["imported"] is obj
        doc = inspect.getdoc(obj) or ""
        # a real docstring, not the signature a dataclass gets when it has none
        assert len(doc) > 20 and not doc.startswith(f"{name}("), name
        assert obj.__module__.startswith("esrag."), name
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", esrag.__version__)
    assert set(esrag.__all__) <= set(dir(esrag))


def test_unknown_names_and_submodules_still_behave():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        esrag.nope  # noqa: B018
    from esrag import plugins  # a submodule, not an export: the import system's fallback still works

    assert plugins.__name__ == "esrag.plugins"


@pytest.mark.integration
def test_import_esrag_loads_nothing_heavy():
    """``import esrag`` defines names only: no submodule, numpy, pydantic or torch until a name
    is used (the CLI's ``--version`` must not pay for the front door)."""
    code = (
        "import sys, esrag; heavy = [m for m in sys.modules if m.startswith(('esrag.', 'numpy', 'pydantic', 'torch'))];"
        "print(heavy); esrag.SearchRequest; print('esrag.service' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["[]", "True"]


def test_the_wheel_ships_py_typed(tmp_path):
    """hatchling puts ``esrag/py.typed`` (PEP 561) into the wheel beside the modules."""
    assert (PROJECT / "esrag" / "py.typed").is_file()
    from hatchling.builders.wheel import WheelBuilder

    wheel = next(iter(WheelBuilder(str(PROJECT)).build(directory=str(tmp_path), versions=["standard"])))
    names = zipfile.ZipFile(wheel).namelist()
    assert "esrag/py.typed" in names and "esrag/integrations/langchain.py" in names


def readme_example(title: str = "# Use from Python") -> str:
    """The first ```python block of docs/python.md's section ``title``."""
    text = PYTHON_PAGE.read_text(encoding="utf-8")
    section = text.split(title + "\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python example under {title!r}"
    return match.group(1)


@pytest.mark.integration
@pytest.mark.integration
def test_readme_example_runs_as_written(tmp_path):
    """docs/python.md's example, unchanged, in a folder holding ``docs/`` (two real Laravel pages): it
    indexes them into ``index/esrag.db``, finds the cache page for a cache question, reads the
    page back."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("cache.md", "scheduling.md"):
        shutil.copy(LARAVEL / name, docs / name)
    script = tmp_path / "example.py"
    script.write_text(readme_example(), encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=clean_env({}), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    new, corpora = lines[0].split(" new chunks; ")
    listed = ast.literal_eval(corpora)
    versions = listed["docs"].pop("versions")  # issue 26: each corpus lists its versions ('' = unversioned)
    assert int(new) > 20 and listed == {"docs": {"chunks": int(new), "sources": 2}} and set(versions) == {""}
    hits = lines[1:4]
    assert len(hits) == 3 and "cache.md > Cache" in hits[0]
    assert re.fullmatch(r"Cache - \d+ sections", lines[4]) and (tmp_path / "index" / "esrag.db").is_file()
