"""Strict settings (issue 26): an unknown key in the settings file, a missing ``ESRAG_CONFIG`` file
and a bad value each end the command with ONE error line naming the file (or the variable) and
the dotted key; an unknown ``ESRAG_*`` variable is one warning line with the closest known name;
a bad ``url_template`` fails once, before any file is read.

The CLI runs as a real subprocess (the installed console script) in a temporary folder, so what
is asserted is exactly what a user reads on stderr."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from esrag import config_check
from esrag.config import OTHER_ENV, OTHER_ENV_PREFIXES, Settings, load_settings
from esrag.errors import ConfigError, InvalidSettings

ROOT = Path(__file__).resolve().parents[1]
ESRAG = str(Path(sys.executable).with_name("esrag"))


def run(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}
    full.update(env or {})
    return subprocess.run([ESRAG, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.integration
@pytest.mark.parametrize(
    "toml, key, closest",
    [
        ("[chunking]\ntau_maxx = 900\n", "chunking.tau_maxx", "chunking.tau_max"),
        ('embeder = "st:all-MiniLM-L6-v2"\n', "embeder", "embedder"),
        ("[corpora.laravel]\nkk = 3\n", "corpora.laravel.kk", "corpora.laravel.k"),
        ("tau_max = 900\n", "tau_max", "chunking.tau_max"),
    ],
)
def test_misspelled_key_is_one_error_line_naming_file_key_and_closest(tmp_path, toml, key, closest):
    (tmp_path / "esrag.toml").write_text(toml)
    proc = run(["status"], tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert lines(proc.stderr) == [f"Error: esrag.toml: unknown setting {key} (did you mean {closest}?)"], proc.stderr
    assert not (tmp_path / ".esrag").exists()


@pytest.mark.integration
def test_bad_value_is_one_error_line_naming_file_and_key(tmp_path):
    (tmp_path / "esrag.toml").write_text('[chunking]\ntau_max = "big"\n')
    proc = run(["search", "queues"], tmp_path)
    assert proc.returncode == 1
    assert lines(proc.stderr) == ['Error: esrag.toml: chunking.tau_max: expected an integer, got "big"'], proc.stderr
    # the same value from the environment names the variable instead
    (tmp_path / "esrag.toml").unlink()
    proc = run(["status"], tmp_path, {"ESRAG_CHUNKING__TAU_MAX": "big"})
    assert lines(proc.stderr) == ['Error: ESRAG_CHUNKING__TAU_MAX: expected an integer, got "big"'] and proc.returncode == 1


def test_other_bad_values_say_what_was_expected(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("ESRAG_")]:
        monkeypatch.delenv(name)
    cases = {
        '[search]\nmode = "fuzzy"\n': "esrag.toml: search.mode: unknown search mode 'fuzzy'; valid: hybrid, bm25, dense",
        "[elasticsearch]\nshards = 0\n": "esrag.toml: elasticsearch.shards: expected a number >= 1, got 0",
        '[ingest]\ncache_embeddings = "maybe"\n': 'esrag.toml: ingest.cache_embeddings: expected true or false, got "maybe"',
        '[elasticsearch]\nindex_options = "flat"\n': "esrag.toml: elasticsearch.index_options: expected one of 'auto', 'hnsw', "
        "'int8_hnsw', 'int4_hnsw' or 'bbq_hnsw', got \"flat\"",
        "[chunking\n": "esrag.toml: not valid TOML: Expected ']' at the end of a table declaration (at line 1, column 10)",
    }
    for toml, said in cases.items():
        (tmp_path / "esrag.toml").write_text(toml)
        with pytest.raises(InvalidSettings) as info:
            load_settings()
        assert str(info.value) == said
    (tmp_path / "esrag.toml").write_text("es_password = 12345\n")  # a secret's value is never shown
    with pytest.raises(InvalidSettings) as info:
        load_settings()
    assert str(info.value) == "esrag.toml: es_password: expected a string" and "12345" not in str(info.value)
    with pytest.raises(ValueError):  # still a ValueError, as pydantic's ValidationError was
        load_settings()


@pytest.mark.integration
def test_esrag_config_naming_a_missing_file_is_an_error(tmp_path):
    proc = run(["status"], tmp_path, {"ESRAG_CONFIG": str(tmp_path / "nope.toml")})
    assert proc.returncode == 1
    assert lines(proc.stderr) == [f"Error: ESRAG_CONFIG='{tmp_path / 'nope.toml'}': no such file; point it at an esrag.toml or unset it"]
    (tmp_path / "other.toml").write_text("[search]\nk = 7\n")
    ok = run(["status", "--json"], tmp_path, {"ESRAG_CONFIG": str(tmp_path / "other.toml")})
    assert ok.returncode == 0, ok.stderr


@pytest.mark.integration
def test_unknown_environment_variables_warn_once_each_with_the_closest_name(tmp_path):
    env = {
        "ESRAG_CHUNKNG__TAU_MAX": "300",
        "ESRAG_EMBEDER": "st:x",
        "ESRAG_CORPORA__LV__KK": "3",
        "ESRAG_SERVE_APIKEY": "k",
        "ESRAG_CORPORA__LV__K": "3",
        "ESRAG_SEARCH__WEIGHTS__BM25": "2",
        **{name: "0" for name in OTHER_ENV if name != "ESRAG_CONFIG"},
        "ESRAG_TEST_ANYTHING": "1",
    }
    proc = run(["status", "--json"], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in lines(proc.stderr) if line.startswith("warning:")]
    assert warned == [
        "warning: unknown environment variable ESRAG_CHUNKNG__TAU_MAX (ignored); did you mean ESRAG_CHUNKING__TAU_MAX?",
        "warning: unknown environment variable ESRAG_CORPORA__LV__KK (ignored); did you mean ESRAG_CORPORA__LV__K?",
        "warning: unknown environment variable ESRAG_EMBEDER (ignored); did you mean ESRAG_EMBEDDER?",
        "warning: unknown environment variable ESRAG_SERVE_APIKEY (ignored); did you mean ESRAG_SERVE_API_KEY?",
    ]


def test_every_esrag_variable_the_project_names_is_known():
    """Each ``ESRAG_*`` name written anywhere in the project (code, tests, benchmarks, README,
    docker, scripts; this file aside) is a setting or one of OTHER_ENV: none would be warned about."""
    names: set[str] = set()
    for path in ROOT.rglob("*"):
        if (
            path.is_file()
            and path.suffix in (".py", ".md", ".toml", ".yml", ".yaml", ".sh", "")
            and not {".venv", ".git", "node_modules"} & set(path.relative_to(ROOT).parts)
            and path.resolve() != Path(__file__).resolve()
        ):  # (this file misspells names on purpose)
            try:
                names |= set(re.findall(r"\bESRAG_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
            except (UnicodeDecodeError, OSError):
                continue
    assert "ESRAG_CPU_BF16" in names and "ESRAG_DB" in names
    unknown = config_check.unknown_env(Settings, {n: "1" for n in names}, "ESRAG_", OTHER_ENV, OTHER_ENV_PREFIXES)
    assert unknown == []


def test_closest_key_rules():
    assert config_check.suggest_key(Settings, "search.rrfk") == "search.rrf_k"
    assert config_check.suggest_key(Settings, "corpora.x.records.txt") == "corpora.x.records.text"
    assert config_check.suggest_key(Settings, "zzzz") is None
    assert config_check.unknown_keys(Settings, {"search": {"weights": {"anything": 1.0}}, "corpora": {"a": {"k": 1}}}) == []
    assert config_check.env_known(Settings, "ESRAG_CORPORA__LV__RECORDS__TEXT", "ESRAG_")
    assert not config_check.env_known(Settings, "ESRAG_DB__X", "ESRAG_")


@pytest.mark.integration
def test_bad_url_template_fails_once_before_any_file(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"p{i}.md").write_text(f"# Page {i}\n\nText {i}.\n")
    proc = run(["ingest", "docs", "--base-url", "https://x.test/", "--url-template", "{base_url}{nope}"], tmp_path)
    assert proc.returncode == 1
    assert lines(proc.stderr) == [
        "Error: --url-template: url_template '{base_url}{nope}': unknown placeholder 'nope'; use {base_url}, "
        "{page}, {path}, {file}, {stem}, {anchor}, {doc_version} (write {{ and }} for braces)"
    ], proc.stderr
    assert not (tmp_path / ".esrag").exists()  # failed before the store was opened
    (tmp_path / "esrag.toml").write_text('[corpora.docs]\nbase_url = "https://x.test/"\nurl_template = "{page"\n')
    proc = run(["ingest", "docs"], tmp_path)
    assert proc.returncode == 1 and len(lines(proc.stderr)) == 1
    assert lines(proc.stderr)[0].startswith("Error: [corpora.docs] url_template: url_template '{page'"), proc.stderr


def test_config_error_is_an_esrag_error():
    assert issubclass(InvalidSettings, ConfigError)
