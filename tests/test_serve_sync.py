"""Syncs while serving (issue 39, "Fresh while serving"): real git repositories made in the test
and served over ``file://``, real Laravel pages, the real embedded store and model.

* While a sync of a large change runs (every chunk of twelve Laravel pages changes: more than one
  ingest window of 1,024 chunks, so an ingest writing as it goes would show part of it for
  seconds), 8 threads searching through the serving process's :class:`SearchService` (its own
  read-only store connection, as ``esrag serve``) never fail and never see a half-synced
  version: a word of the old commit and a word of the new one never come back together.
* ``POST /sync/NAME`` through a real ``esrag serve``: 202 for a key that may sync it, 401
  without a key or with a wrong one, 404 in the same words for an unknown source and for a
  source the key may not sync; requests while one is queued or running coalesce.
* The interval thread (:class:`esrag.serve.sync.SyncRunner`) picks up a pushed commit by itself.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from conftest import es_params
from esrag import gitsync
from esrag.app import open_store
from esrag.cli import main
from esrag.config import load_settings
from esrag.errors import InvalidSettings
from esrag.serve.sync import SyncRunner
from esrag.service import SearchRequest, SearchService
from paths import LARAVEL
from serve_helpers import Server
from test_gitsync import Repo, git

# needs a model and git subprocesses (see tests/conftest.py)
pytestmark = pytest.mark.integration

BIG = sorted(LARAVEL.glob("*.md"), key=lambda p: -p.stat().st_size)[:12]
OLD, NEW = "quokka", "zebracorn"


def _marked(text: str, word: str) -> str:
    """``text`` with ``word`` after every "the ": nearly every chunk holds it."""
    return text.replace("the ", f"the {word} ")


def _configure(tmp_path: Path, monkeypatch, repo: Repo, extra: str = "") -> None:
    config = tmp_path / "esrag.toml"
    config.write_text(f'[sources.big]\ngit = "{repo.url}"\nrefs = ["main"]\npath = "docs"\n' + extra)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ESRAG_CONFIG", str(config))
    monkeypatch.setenv("ESRAG_DB", str(tmp_path / "data" / "esrag.db"))


@pytest.fixture(params=["sqlite", *es_params()])
def store_env(request, monkeypatch):
    """The store of the test: the embedded one, or a fresh alias on each Elasticsearch test node
    (dropped afterwards)."""
    if request.param == "sqlite":
        yield request.param
        return
    import uuid

    from esrag.stores.elastic import ElasticStore

    alias = f"esrag-t-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("ESRAG_ES_URL", request.param)
    monkeypatch.setenv("ESRAG_INDEX", alias)
    try:
        yield request.param
    finally:
        store = ElasticStore(request.param, alias)
        store.drop()
        store.close()


def test_searches_during_a_large_sync_see_the_old_version_or_the_new_one(tmp_path, monkeypatch, store_env):
    repo = Repo(tmp_path)
    for page in BIG:
        (repo.work / "docs" / page.name).write_text(_marked(page.read_text(encoding="utf-8"), OLD), encoding="utf-8")
    repo.commit("old")
    repo.push("main")
    _configure(tmp_path, monkeypatch, repo)
    settings = load_settings()
    with open_store(settings) as store:
        first = gitsync.sync(settings, store)[0]
    assert first.versions["main"]["outcome"] == "indexed", first.to_dict()

    for page in BIG:
        path = repo.work / "docs" / page.name
        path.write_text(path.read_text(encoding="utf-8").replace(OLD, NEW), encoding="utf-8")
    new_commit = repo.commit("new")
    repo.push("main")

    with open_store(settings, read_only=True) as read_store:
        service = SearchService(settings, read_store)
        service.warm()
        done = threading.Event()
        seen: list[tuple[bool, bool]] = []
        failures: list[str] = []
        lock = threading.Lock()

        def searcher(i: int) -> None:
            while True:
                last = done.is_set()
                try:
                    mode = "bm25" if i % 2 else "hybrid"
                    hits = service.search(SearchRequest(f"{OLD} {NEW} queue", k=20, mode=mode)).hits
                    words = (any(OLD in h.chunk.text for h in hits), any(NEW in h.chunk.text for h in hits))
                    with lock:
                        seen.append(words)
                except Exception as exc:  # noqa: BLE001 - any failure is the finding
                    with lock:
                        failures.append(f"{type(exc).__name__}: {exc}")
                if last:
                    return

        threads = [threading.Thread(target=searcher, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(1)
        with open_store(settings) as store:
            t0 = time.monotonic()
            report = gitsync.sync(settings, store, gate=service.swap_gate)[0]
            sync_seconds = time.monotonic() - t0
        done.set()
        for t in threads:
            t.join(120)

    row = report.versions["main"]
    assert row["outcome"] == "indexed" and row["commit"] == new_commit, report.to_dict()
    assert row["summary"]["chunks_changed"] + row["summary"]["chunks_new"] > 1024, row["summary"]  # more than one ingest window
    assert not failures, failures[:3]
    mixed = [w for w in seen if w[0] and w[1]]
    assert not mixed, f"{len(mixed)} of {len(seen)} searches saw both versions"
    assert (True, False) in seen and (False, True) in seen, "searches ran before and after the swap"
    print(f"{store_env}: sync {sync_seconds:.1f} s; {len(seen)} searches meanwhile, none failed, none mixed")


def _keys(tmp_path: Path) -> tuple[str, dict[str, str]]:
    keys = {"hook": "hook-key-" + "h" * 20, "reader": "reader-key-" + "r" * 20}
    block = (
        f'[serve.keys.hook]\nsha256 = "{hashlib.sha256(keys["hook"].encode()).hexdigest()}"\ncorpora = ["big"]\nsync = ["big"]\n'
        f'[serve.keys.reader]\nsha256 = "{hashlib.sha256(keys["reader"].encode()).hexdigest()}"\ncorpora = ["big"]\n'
    )
    return block, keys


def test_sync_webhook_202_401_404_and_coalescing(tmp_path, monkeypatch):
    repo = Repo(tmp_path)
    for name in ("queues.md", "cache.md"):
        shutil.copy(LARAVEL / name, repo.work / "docs" / name)
    repo.commit("one")
    repo.push("main")
    block, keys = _keys(tmp_path)
    _configure(tmp_path, monkeypatch, repo, block)
    settings = load_settings()
    with open_store(settings) as store:
        gitsync.sync(settings, store)
    (repo.work / "docs" / "cache.md").write_text((LARAVEL / "cache.md").read_text() + f"\n## Pushed\n\nThe {NEW} section.\n")
    pushed = repo.commit("two")
    repo.push("main")

    env = {"ESRAG_CONFIG": str(tmp_path / "esrag.toml"), "ESRAG_DB": str(tmp_path / "data" / "esrag.db")}
    server = Server(["serve"], env)
    try:

        def post(source: str, key: str | None) -> httpx.Response:
            return httpx.post(f"{server.url}/sync/{source}", headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=30)

        assert post("big", None).status_code == 401
        assert post("big", "wrong").status_code == 401
        unknown, not_mine = post("nope", keys["hook"]), post("big", keys["reader"])
        assert unknown.status_code == not_mine.status_code == 404
        assert "big" not in unknown.json()["error"]  # an unknown name tells nothing of the others

        answers = [post("big", keys["hook"]) for _ in range(4)]
        assert [a.status_code for a in answers] == [202] * 4
        assert answers[0].json() == {"source": "big", "state": answers[0].json()["state"], "coalesced": False}
        assert all(a.json()["coalesced"] for a in answers[1:]), [a.json() for a in answers]

        headers = {"Authorization": f"Bearer {keys['hook']}"}
        deadline = time.monotonic() + 300
        while True:
            state = httpx.get(f"{server.url}/sync", headers=headers, timeout=30).json()["sources"]["big"]
            if state["state"] == "idle" and state["versions"]["main"]["commit"] == pushed:
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.5)
        assert state["error"] == "" and state["versions"]["main"]["outcome"] in ("indexed", "unchanged")
        hits = httpx.get(f"{server.url}/search", params={"q": NEW, "mode": "bm25"}, headers=headers, timeout=30).json()["hits"]
        assert hits and NEW in hits[0]["text"]
        # one run for the four requests, and at most one more queued while it ran: never two at once
        log = server.output()
        assert log.count("sync big main: indexed") == 1 and log.count("sync big main:") <= 2, log
        assert keys["hook"] not in log and keys["reader"] not in log
        assert httpx.get(f"{server.url}/sync", timeout=30).status_code == 401
        reader = httpx.get(f"{server.url}/sync", headers={"Authorization": f"Bearer {keys['reader']}"}, timeout=30).json()
        assert list(reader["sources"]) == ["big"]  # its corpus: it may see the state, not trigger a sync
    finally:
        server.stop()


def test_the_first_round_at_start_is_logged(tmp_path, monkeypatch):
    """``esrag serve --sync-interval`` syncs at start; that round is logged like every other
    (the log was set up after the thread had started, and a quick round was lost)."""
    repo = Repo(tmp_path)
    shutil.copy(LARAVEL / "queues.md", repo.work / "docs" / "queues.md")
    repo.commit("one")
    repo.push("main")
    _configure(tmp_path, monkeypatch, repo)
    settings = load_settings()
    with open_store(settings) as store:
        gitsync.sync(settings, store)  # so the round at start finds the version unchanged, quickly
    env = {"ESRAG_CONFIG": str(tmp_path / "esrag.toml"), "ESRAG_DB": str(tmp_path / "data" / "esrag.db")}
    server = Server(["serve", "--sync-interval", "600"], env)
    try:
        deadline = time.monotonic() + 120
        while "sync big main: unchanged" not in server.output():
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.3)
    finally:
        server.stop()


def test_the_interval_thread_syncs_a_pushed_commit(tmp_path, monkeypatch):
    repo = Repo(tmp_path)
    shutil.copy(LARAVEL / "queues.md", repo.work / "docs" / "queues.md")
    first = repo.commit("one")
    repo.push("main")
    _configure(tmp_path, monkeypatch, repo, "[serve]\nsync_interval = 10\n")
    settings = load_settings()
    assert settings.serve.sync_interval == 10

    def commit_of() -> str:
        return gitsync.sync_status(settings).get("big", {}).get("main", {}).get("commit", "")

    runner = SyncRunner(settings, interval=1).start()  # (the settings' floor is 10 s; the thread takes any)
    try:
        deadline = time.monotonic() + 300
        while commit_of() != first:  # the first round runs at start
            assert time.monotonic() < deadline
            time.sleep(0.3)
        (repo.work / "docs" / "queues.md").write_text((LARAVEL / "queues.md").read_text() + "\n## More\n\nA pushed change.\n")
        second = repo.commit("two")
        repo.push("main")
        while commit_of() != second:  # no request: the interval finds it
            assert time.monotonic() < deadline
            time.sleep(0.3)
        assert runner.state("big")["error"] == ""
    finally:
        runner.stop()
    git("log", "--oneline", cwd=repo.work)


def test_sync_interval_and_sync_keys_are_checked_settings(tmp_path, monkeypatch):
    config = tmp_path / "esrag.toml"
    monkeypatch.setenv("ESRAG_CONFIG", str(config))
    config.write_text("[serve]\nsync_interval = -5\n")
    with pytest.raises(ValueError, match=r"serve\.sync_interval"):
        load_settings()
    config.write_text("[serve]\nsync_interval = 0.001\n")  # a busy loop of fetches: refused
    with pytest.raises(ValueError, match=r"serve\.sync_interval.*at least 10 seconds"):
        load_settings()
    config.write_text("")
    for flag in ("3", "-1"):
        r = CliRunner().invoke(main, ["serve", "--sync-interval", flag])
        assert r.exit_code == 2 and "'--sync-interval'" in r.stderr and "at least 10 seconds" in r.stderr, r.stderr
    config.write_text(f'[serve.keys.k]\nsha256 = "{"0" * 64}"\ncorpora = ["a"]\nsync = "a"\n')
    with pytest.raises(ValueError, match=r"serve\.keys\.k\.sync"):
        load_settings()


def test_keys_add_sync_writes_the_sources_and_the_ring_grants_only_them(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from esrag.cli import main
    from esrag.serve.security import KeyRing

    config = tmp_path / "esrag.toml"
    config.write_text(f'[sources.big]\ngit = "{(tmp_path / "big.git").as_posix()}"\nrefs = ["main"]\n')
    monkeypatch.setenv("ESRAG_CONFIG", str(config))
    before = config.read_text()
    typo = CliRunner().invoke(main, ["keys", "add", "hook", "--corpus", "big", "--sync", "bgi"])
    assert typo.exit_code != 0 and f"--sync: 'bgi' is not a [sources.NAME] (sources: big) in {config}" in typo.stderr
    assert config.read_text() == before  # nothing written
    made = CliRunner().invoke(main, ["keys", "add", "hook", "--corpus", "big", "--sync", "big", "--json"], catch_exceptions=False)
    assert made.exit_code == 0, made.stderr
    out = json.loads(made.stdout)
    assert out["sync"] == ["big"] and out["key"] not in config.read_text()
    entry = load_settings().serve.keys["hook"]
    assert entry.corpora == ["big"] and entry.sync == ["big"]
    ring = KeyRing(None, {"hook": (entry.sha256, entry.corpora, entry.sync), "reader": (entry.sha256[::-1], ["big"])})
    access = ring.access(out["key"])
    assert access is not None and access.may_sync("big") and not access.may_sync("other") and access.allows("big")
    assert ring.access("wrong") is None


def test_a_key_syncing_an_unknown_source_is_a_settings_error_naming_it(tmp_path, monkeypatch):
    """A hand-written [serve.keys.NAME] sync with a name that is no [sources.NAME] is refused
    at load, in one line naming the file, the key and the known sources."""
    config = tmp_path / "esrag.toml"
    config.write_text(
        f'[sources.docs]\ngit = "{(tmp_path / "d.git").as_posix()}"\nrefs = ["main"]\n\n'
        f'[serve.keys.hook]\nsha256 = "{"ab" * 32}"\ncorpora = ["docs"]\nsync = ["dcos"]\n'
    )
    monkeypatch.setenv("ESRAG_CONFIG", str(config))
    with pytest.raises(InvalidSettings) as err:
        load_settings()
    assert str(err.value) == f"{config}: [serve.keys.hook] sync: 'dcos' is not a [sources.NAME] (sources: docs)"
