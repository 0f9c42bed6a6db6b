"""The ``integration`` mark is written at the test, and tests/conftest.py's collection check
fails a run where a test that needs a service, a model or a subprocess is not marked (issue 28)."""

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs pytest in a subprocess

TESTS = Path(__file__).resolve().parent

UNMARKED = """
import subprocess

def test_runs_a_subprocess():
    subprocess.run(["true"], check=True)

def test_pure():
    assert 1 + 1 == 2
"""


@pytest.fixture
def folder() -> Iterator[Path]:
    """A folder inside tests/ (the check reads the source of tests under tests/ only), removed after."""
    path = TESTS / f"_markers_{uuid.uuid4().hex[:8]}"
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _collect(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``pytest --collect-only`` of ``folder`` with tests/conftest.py loaded as a plugin."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(folder),
            "--confcutdir",
            str(folder),
            *args,
            str(folder),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        timeout=300,
    )


def test_an_unmarked_test_that_needs_a_subprocess_fails_the_collection_by_name(folder):
    (folder / "test_sample.py").write_text(UNMARKED)
    got = _collect(folder)
    assert got.returncode == 4, got.stdout + got.stderr  # pytest's usage error
    out = got.stdout + got.stderr
    assert "test_sample.py::test_runs_a_subprocess" in out and "not marked integration" in out
    assert "test_pure" not in out.split("not marked integration", 1)[1]


def test_a_marked_test_is_collected_and_left_out_of_the_pure_run(folder):
    (folder / "test_sample.py").write_text("import pytest\n" + UNMARKED.replace("def test_runs", "@pytest.mark.integration\ndef test_runs"))
    got = _collect(folder, "-m", "not integration")
    assert got.returncode == 0, got.stdout + got.stderr
    assert "test_pure" in got.stdout and "test_runs_a_subprocess" not in got.stdout


def test_a_module_mark_covers_every_test_of_the_module(folder):
    (folder / "test_sample.py").write_text("import pytest\n" + UNMARKED + "\npytestmark = pytest.mark.integration\n")
    got = _collect(folder, "-m", "integration")
    assert got.returncode == 0, got.stdout + got.stderr
    assert "test_pure" in got.stdout and "test_runs_a_subprocess" in got.stdout
