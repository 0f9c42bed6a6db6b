"""Every evaluation file kept in eval/ loads, and every arm it uses can be built: a typo in an
arm's keys or a contrast naming an arm the file does not run fails here, not an hour into a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from esrag.config import Settings
from esrag.eval.arms import make_arm
from esrag.eval.config import load_config

EVAL = Path(__file__).resolve().parents[1] / "eval"
# xquad.toml is read by esrag.eval.xquad (`--dataset xquad:FOLDER`), not by the harness's loader
FILES = sorted(p for p in EVAL.glob("*.toml") if p.name != "xquad.toml")


def test_the_files_are_found():
    assert {"levers.toml", "levers_combined.toml", "bge.toml", "docs_bge.toml", "docs.toml"} <= {p.name for p in FILES}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_an_eval_file_loads_and_its_arms_build(path):
    cfg = load_config(path)
    settings = Settings(db=None, es_url=None)
    arms = {a: make_arm(a, settings, cfg.custom_arms) for a in cfg.arms}
    assert arms
    # a contrast may name an arm outside arms.use (run with --arms), but it must be one that builds
    for c in cfg.contrasts:
        for side in (c.a, c.b):
            arm, _, retriever = side.partition("/")
            if arm not in arms:
                make_arm(arm, settings, cfg.custom_arms)  # ConfigError "unknown arm ..." when it names none
            assert retriever in ("bm25", "dense", "hybrid"), f"{path.name}: contrast names retriever {retriever!r}"
