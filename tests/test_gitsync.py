"""``esrag sync`` (issue 39, "Sources in configuration"): real git repositories made in the test,
served as bare repositories over ``file://``, real Laravel pages, the real embedded store and
the ``esrag`` command in process. Two tags and a branch become three searchable versions; a
commit changing one file re-ingests only that file; a deleted tag's version is removed; a missing
ref and a force-push are one-line errors that change nothing; a re-sync without change is a
no-op; the state shows in ``esrag status``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import es_test_urls
from esrag.cli import main
from esrag.config import Settings, SourceSettings, load_settings
from esrag.errors import ConfigError
from esrag.gitsync import SyncState, VersionState, age, select_refs, state_path, sync_status, token_variable, version_key
from esrag.service import open_service
from esrag.sync_state import site_titles
from paths import LARAVEL

# needs a model and git subprocesses (see tests/conftest.py)
pytestmark = pytest.mark.integration

FILES = ["scheduling.md", "queues.md", "cache.md"]
GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


class Repo:
    """A work repository pushing to a bare one (the source esrag mirrors over file://)."""

    def __init__(self, base: Path) -> None:
        self.bare, self.work = base / "origin.git", base / "work"
        git("init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        git("init", "--quiet", "--initial-branch=main", str(self.work))
        git("remote", "add", "origin", str(self.bare), cwd=self.work)
        (self.work / "docs").mkdir()
        (self.work / "README.md").write_text("# not the docs\n\nOutside the docs path.\n")

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def commit(self, message: str) -> str:
        git("add", "-A", cwd=self.work)
        git("commit", "--quiet", "-m", message, cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work).strip()

    def push(self, *refs: str, force: bool = False) -> None:
        git("push", "--quiet", *(["--force"] if force else []), "origin", *refs, cwd=self.work)


def cli(args: list[str], env: dict, cwd: Path) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, args, env=env, catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A source repository with tags v1.0, v1.1 and branch main; an esrag.toml naming it with the
    pattern v1.* and main; the environment of the commands."""
    repo = Repo(tmp_path)
    for name in FILES[:2]:
        shutil.copy(LARAVEL / name, repo.work / "docs" / name)
    repo.commit("v1.0")
    git("tag", "v1.0", cwd=repo.work)
    shutil.copy(LARAVEL / FILES[2], repo.work / "docs" / FILES[2])
    repo.commit("v1.1")
    git("tag", "-a", "v1.1", "-m", "annotated", cwd=repo.work)
    (repo.work / "docs" / "queues.md").write_text((LARAVEL / "queues.md").read_text() + "\n## Main only\n\nUnreleased queue notes.\n")
    repo.commit("main")
    repo.push("main", "--tags")
    config = tmp_path / "esrag.toml"
    config.write_text(
        f'[sources.laravel]\ngit = "{repo.url}"\nrefs = ["v1.*", "main"]\npath = "docs"\nbase_url = "https://laravel.com/docs/"\n'
    )
    monkeypatch.chdir(tmp_path)
    env = {"ESRAG_CONFIG": str(config), "ESRAG_DB": str(tmp_path / "data" / "esrag.db"), "ESRAG_SOURCE_LARAVEL_TOKEN": None}
    return repo, config, env


def synced(env: dict, cwd: Path, *extra: str) -> dict:
    code, stdout, stderr = cli(["sync", *extra, "--json"], env, cwd)
    assert code == 0, stdout + stderr
    return json.loads(stdout)["sources"][0]


def versions(env: dict, cwd: Path) -> dict:
    code, stdout, stderr = cli(["status", "--json"], env, cwd)
    assert code == 0, stderr
    return json.loads(stdout)


def test_two_tags_and_a_branch_then_one_changed_file_then_nothing(hub, tmp_path):
    repo, _, env = hub
    first = synced(env, tmp_path)
    assert set(first["versions"]) == {"v1.0", "v1.1", "main"}
    assert all(v["outcome"] == "indexed" for v in first["versions"].values())
    assert first["versions"]["v1.0"]["summary"]["files"] == 2 and first["versions"]["v1.1"]["summary"]["files"] == 3
    status = versions(env, tmp_path)
    assert set(status["corpora"]["laravel"]["versions"]) == {"v1.0", "v1.1", "main"}  # README.md outside docs/: not indexed
    assert [status["corpora"]["laravel"]["versions"][v]["sources"] for v in ("v1.0", "v1.1", "main")] == [2, 3, 3]
    assert status["sync"]["laravel"]["main"]["age"] == "synced just now"
    assert status["sync"]["laravel"]["v1.1"]["commit"] == git("rev-parse", "v1.1^{commit}", cwd=repo.work).strip()
    for version in ("v1.0", "v1.1", "main"):
        code, stdout, _ = cli(["search", "schedule a task", "--corpus", "laravel", "--doc-version", version, "--json"], env, tmp_path)
        assert code == 0 and json.loads(stdout), version
    code, stdout, _ = cli(["search", "Unreleased queue notes", "--doc-version", "main", "--json", "-k", "3"], env, tmp_path)
    assert any("Unreleased queue notes" in h["text"] for h in json.loads(stdout))

    # no change: a no-op
    again = synced(env, tmp_path)
    assert {v["outcome"] for v in again["versions"].values()} == {"unchanged"} and not again["removed"]
    assert all("summary" not in v for v in again["versions"].values())

    # one file changed on main: only its chunks are re-embedded, the other files' chunks kept
    cache = repo.work / "docs" / "cache.md"
    cache.write_text(cache.read_text() + "\n## Cache sync note\n\nA paragraph added on main only.\n")
    new_head = repo.commit("edit cache")
    repo.push("main")
    third = synced(env, tmp_path)
    assert third["versions"]["v1.0"]["outcome"] == third["versions"]["v1.1"]["outcome"] == "unchanged"
    main_row = third["versions"]["main"]
    assert main_row["outcome"] == "indexed" and main_row["commit"] == new_head
    s = main_row["summary"]
    before = first["versions"]["main"]["summary"]
    assert s["files"] == 3 and s["chunks_deleted"] == 0
    assert 1 <= s["chunks_new"] + s["chunks_changed"] <= 3  # the edited section (and the chunk it split from)
    assert s["chunks_unchanged"] >= before["chunks_new"] - 2
    assert s["embeddings_computed"] <= 3
    assert s["files_changed"] == ["cache.md"]  # named, relative to the source's path

    # the table names them too (one more edit, a sync without --json)
    cache.write_text(cache.read_text() + "\nOne more line.\n")
    repo.commit("edit cache again")
    repo.push("main")
    code, _, stderr = cli(["sync"], env, tmp_path)
    assert code == 0 and "files changed" in stderr and "cache.md" in stderr and "queues.md" not in stderr


def test_deleted_tag_is_removed_and_missing_ref_changes_nothing(hub, tmp_path):
    repo, config, env = hub
    synced(env, tmp_path)
    chunks_before = versions(env, tmp_path)["corpora"]["laravel"]["versions"]
    git("push", "--quiet", "origin", ":refs/tags/v1.0", cwd=repo.work)
    report = synced(env, tmp_path)
    assert report["removed"] == {"v1.0": chunks_before["v1.0"]["chunks"]}
    status = versions(env, tmp_path)
    assert set(status["corpora"]["laravel"]["versions"]) == {"v1.1", "main"} and "v1.0" not in status["sync"]["laravel"]

    # a ref named in refs that the repository lacks: one line, exit 1, nothing changed
    config.write_text(config.read_text().replace('"main"]', '"main", "release-9"]'))
    code, stdout, stderr = cli(["sync"], env, tmp_path)
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error")]
    assert code == 1 and len(errors) == 1 and "release-9" in errors[0] and "[sources.laravel] refs" in errors[0], stderr
    after = versions(env, tmp_path)
    assert after["corpora"]["laravel"]["versions"] == status["corpora"]["laravel"]["versions"]
    assert after["sync"]["laravel"]["release-9"]["outcome"] == "error"

    # a version removed behind sync's back (esrag remove) is indexed again, not taken as unchanged
    cli(["remove", "--corpus", "laravel", "--doc-version", "main", "--yes"], env, tmp_path)
    config.write_text(config.read_text().replace(', "release-9"]', "]"))
    report = synced(env, tmp_path)
    assert report["versions"]["main"]["outcome"] == "indexed" and report["versions"]["v1.1"]["outcome"] == "unchanged"
    assert report["removed"] == {"release-9": 0}
    assert (
        versions(env, tmp_path)["corpora"]["laravel"]["versions"]["main"]["chunks"]
        == status["corpora"]["laravel"]["versions"]["main"]["chunks"]
    )


def test_a_force_push_is_refused_unless_allowed(hub, tmp_path):
    repo, config, env = hub
    synced(env, tmp_path)
    before = versions(env, tmp_path)["corpora"]["laravel"]["versions"]["main"]
    old = versions(env, tmp_path)["sync"]["laravel"]["main"]["commit"]
    git("reset", "--quiet", "--hard", "HEAD~1", cwd=repo.work)
    (repo.work / "docs" / "cache.md").write_text("# Rewritten\n\nHistory rewritten on main.\n")
    repo.commit("rewrite")
    repo.push("main", force=True)
    code, stdout, stderr = cli(["sync", "--json"], env, tmp_path)
    row = json.loads(stdout)["sources"][0]["versions"]["main"]
    assert code == 1 and row["outcome"] == "error" and "allow_force_push" in row["error"] and row["commit"] == old
    assert [ln for ln in stderr.splitlines() if ln.startswith("error")] == [f"error: {row['error']}"]
    assert versions(env, tmp_path)["corpora"]["laravel"]["versions"]["main"] == before
    config.write_text(config.read_text() + "allow_force_push = true\n")
    assert synced(env, tmp_path)["versions"]["main"]["outcome"] == "indexed"


def test_last_n_keeps_the_highest_versions_and_settings_errors_name_the_field(tmp_path, monkeypatch):
    available = {"v5.9": "a", "v5.10": "b", "v5.2": "c", "v4.0": "d", "main": "e"}
    chosen, missing = select_refs(["v5.*", "main", "nope"], 2, available)
    assert chosen == {"v5.10": "b", "v5.9": "a", "main": "e"} and missing == ["nope"]
    assert sorted(["v1.10", "v1.9", "v1.0"], key=version_key) == ["v1.0", "v1.9", "v1.10"]
    assert token_variable("docs-hub.v2") == "ESRAG_SOURCE_DOCS_HUB_V2_TOKEN"
    assert SourceSettings(git="x", refs=["main"], path="/docs/".strip("/")).path == "docs"
    monkeypatch.chdir(tmp_path)
    settings = Settings(db=tmp_path / "data" / "esrag.db")
    state = SyncState(state_path(settings))
    state.sources["docs"] = {"v2": VersionState("v2", "abc", synced_at=1000.0), "v3": VersionState("v3", outcome="error")}
    state.save()
    shown = sync_status(settings, now=1000.0 + 180)["docs"]
    assert shown["v2"]["age"] == "synced 3 min ago" and shown["v2"]["age_seconds"] == 180
    assert shown["v3"]["age"] == "never" and shown["v3"]["age_seconds"] is None
    assert [age(s) for s in (5, 7300, 3 * 86400)] == ["just now", "2 h ago", "3 days ago"]
    for body, field in (
        ('git = "x"\nrefs = []', "sources.bad.refs"),
        ('git = "x"\nrefs = ["main"]\npath = "../up"', "sources.bad.path"),
        ('refs = ["main"]', "sources.bad.git"),
        ('git = "x"\nrefs = ["main"]\nlast = 0', "sources.bad.last"),
        ('git = "x"\nrefs = ["main"]\n[corpora.bad]\nk = 3', "[corpora.bad] both set"),
        ('git = "--upload-pack=touch /tmp/x"\nrefs = ["main"]', "sources.bad.git"),
        ('git = "x"\nrefs = ["main", "a..b"]', "sources.bad.refs"),
        ('git = "x"\nrefs = ["main"]\ndoc_version = "1.x"', "sources.bad.doc_version"),  # the ref is the version
    ):
        (tmp_path / "esrag.toml").write_text(f"[sources.bad]\n{body}\n")
        code, stdout, stderr = cli(["sync"], {"ESRAG_CONFIG": str(tmp_path / "esrag.toml")}, tmp_path)
        assert code == 1 and field in stderr and len(stderr.strip().splitlines()) == 1, stderr
    (tmp_path / "esrag.toml").write_text('[sources."a/b"]\ngit = "x"\nrefs = ["main"]\n')
    code, _, stderr = cli(["sync"], {"ESRAG_CONFIG": str(tmp_path / "esrag.toml")}, tmp_path)
    assert code == 1 and "[sources.a/b]: a source name is" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    (tmp_path / "esrag.toml").write_text('[sources.bad]\ngit = "no/such/folder"\nrefs = ["main"]\n')
    code, _, stderr = cli(["sync"], {"ESRAG_CONFIG": str(tmp_path / "esrag.toml")}, tmp_path)
    assert code == 1 and "[sources.bad] git" in stderr and len(stderr.strip().splitlines()) == 1


class GitHttp:
    """``git http-backend`` (smart HTTP) behind a loopback CGI server that answers 401 unless the
    request carries ``Authorization: Basic base64(x-access-token:TOKEN)``; counts 401s."""

    BACKEND = "/usr/lib/git-core/git-http-backend"

    def __init__(self, root: Path, token: str) -> None:
        import base64
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from serve_helpers import free_port

        wanted = "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()
        self.denied = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _cgi(self) -> None:
                if self.headers.get("Authorization") != wanted:
                    outer.denied += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {
                    "PATH": "/usr/bin:/bin",
                    "GIT_PROJECT_ROOT": str(root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "REMOTE_ADDR": "127.0.0.1",
                }
                out = subprocess.run([GitHttp.BACKEND], input=body, env=env, capture_output=True).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                headers = [h.split(":", 1) for h in head.decode().split("\r\n") if ":" in h]
                status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
                self.send_response(status)
                for k, v in headers:
                    if k.lower() != "status":
                        self.send_header(k, v.strip())
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _cgi

        self.port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_private_repository_over_http_with_a_token_that_never_shows(tmp_path, monkeypatch):
    repo = Repo(tmp_path)
    for name in FILES[:2]:
        shutil.copy(LARAVEL / name, repo.work / "docs" / name)
    repo.commit("one")
    repo.push("main")
    git("config", "--file", str(repo.bare / "config"), "uploadpack.allowFilter", "true")  # a partial clone, as on GitHub
    token = "tok_" + "9f3c1a7e5b2d4c6e8a0b1d3f5e7a9c2b"
    server = GitHttp(tmp_path, token)
    try:
        url = f"http://hub-user:url-secret-pw@127.0.0.1:{server.port}/origin.git"
        config = tmp_path / "esrag.toml"
        config.write_text(f'[sources.private-docs]\ngit = "{url}"\nrefs = ["main"]\npath = "docs"\n')
        monkeypatch.chdir(tmp_path)
        # git on PATH is a shim logging each command line esrag runs, then the real git
        shim, argv_log = tmp_path / "bin", tmp_path / "git-argv.log"
        shim.mkdir()
        real_git = shutil.which("git")
        (shim / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{argv_log}"\nexec "{real_git}" "$@"\n')
        (shim / "git").chmod(0o755)
        env = {
            "ESRAG_CONFIG": str(config),
            "ESRAG_DB": str(tmp_path / "data" / "esrag.db"),
            "PATH": f"{shim}:{os.environ['PATH']}",
            "GIT_TRACE_CURL": "1",  # dropped by esrag: it would print the Authorization header
        }
        secrets = (token, "url-secret-pw")

        # no token, then a wrong one: refused by the server, one line, nothing indexed, no secret
        for given in (None, "wrong-token-value"):
            code, stdout, stderr = cli(["sync", "--json"], {**env, "ESRAG_SOURCE_PRIVATE_DOCS_TOKEN": given}, tmp_path)
            report = json.loads(stdout)["sources"][0]
            assert code == 1 and report["error"].startswith("[sources.private-docs]: git clone failed"), report
            assert "\n" not in report["error"] and len([ln for ln in stderr.splitlines() if ln.startswith("error")]) == 1
            assert not any(s in stdout + stderr for s in (*secrets, "wrong-token-value")), stdout + stderr
        assert server.denied >= 2

        code, stdout, stderr = cli(["sync", "--json"], {**env, "ESRAG_SOURCE_PRIVATE_DOCS_TOKEN": token}, tmp_path)
        assert code == 0, stdout + stderr
        assert json.loads(stdout)["sources"][0]["versions"]["main"]["outcome"] == "indexed"
        code, status_out, status_err = cli(["status"], env, tmp_path)
        assert code == 0 and "private-docs" in status_out and "synced just now" in status_out
        assert "sync: {" not in status_out  # the table, not the raw state
        # a second sync fetches (over HTTP, with the token) and finds nothing new
        code, again, again_err = cli(["sync", "--json"], {**env, "ESRAG_SOURCE_PRIVATE_DOCS_TOKEN": token}, tmp_path)
        assert code == 0 and json.loads(again)["sources"][0]["versions"]["main"]["outcome"] == "unchanged"
        written = "".join(p.read_text(errors="replace") for p in (tmp_path / "data").glob("sync-state-*.json"))
        mirror_config = (tmp_path / "data" / "sources" / "private-docs.git" / "config").read_text()
        for text in (stdout, stderr, status_out, status_err, again, again_err, written, mirror_config):
            assert token not in text
        for text in (stdout, stderr, status_out, status_err, again, again_err, written):
            assert "url-secret-pw" not in text
        # the mirror is partial: the blob outside path = "docs" (README.md) was never downloaded
        mirror = tmp_path / "data" / "sources" / "private-docs.git"
        readme = git("rev-parse", "main:README.md", cwd=repo.work).strip()
        missing = subprocess.run(
            ["git", "-C", str(mirror), "rev-list", "--objects", "--missing=print", "main"], capture_output=True, text=True, check=True
        ).stdout
        assert f"?{readme}" in missing.split()
        argv = argv_log.read_text()
        assert "clone" in argv and "fetch" in argv and token not in argv  # never on a command line
    finally:
        server.stop()


def test_the_manuals_docs_hub_example_runs(tmp_path, monkeypatch):
    """docs/hub.md's first ``[sources.laravel]`` example, its git URL pointed at a repository made
    here with branches 12.x, 11.x, master and tags 11.0, 11.1: ``11.*`` with ``last = 2`` takes
    11.x and 11.1; ``default_version`` and ``base_url`` apply."""
    import tomllib

    manual = (Path(__file__).resolve().parents[1] / "docs" / "hub.md").read_text()
    example = tomllib.loads(manual.split("```toml\n", 1)[1].split("```", 1)[0])["sources"]["laravel"]
    repo = Repo(tmp_path)
    shutil.copy(LARAVEL / "queues.md", repo.work / "queues.md")
    repo.commit("11.0")
    git("tag", "11.0", cwd=repo.work)
    shutil.copy(LARAVEL / "cache.md", repo.work / "cache.md")
    repo.commit("11.1")
    git("tag", "11.1", cwd=repo.work)
    for branch in ("11.x", "12.x", "master"):
        git("branch", branch, cwd=repo.work)
    repo.push("--all")
    repo.push("--tags")
    example["git"] = repo.url
    lines = [f"{k} = {json.dumps(v)}" for k, v in example.items()]
    (tmp_path / "esrag.toml").write_text("[sources.laravel]\n" + "\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    env = {"ESRAG_CONFIG": str(tmp_path / "esrag.toml"), "ESRAG_DB": str(tmp_path / "data" / "esrag.db")}
    report = synced(env, tmp_path)
    assert set(report["versions"]) == {"12.x", "11.x", "11.1", "master"}
    row = versions(env, tmp_path)["corpora"]["laravel"]
    assert row["default_version"] == "12.x" and set(row["versions"]) == {"12.x", "11.x", "11.1", "master"}
    code, stdout, _ = cli(["search", "retry failed jobs", "--doc-version", "11.1", "--json", "-k", "1"], env, tmp_path)
    assert code == 0 and json.loads(stdout)[0]["url"].startswith("https://laravel.com/docs/")


def test_removing_most_of_a_corpus_is_refused_without_allow_delete(hub, tmp_path):
    """Both tags deleted: removing v1.0 and v1.1 would take 5 of the 8 version files (and most
    chunks), over max_delete_fraction 0.5: refused in one line, every version kept; then
    ``--allow-delete`` removes them."""
    repo, _, env = hub
    synced(env, tmp_path)
    before = versions(env, tmp_path)["corpora"]["laravel"]
    git("push", "--quiet", "origin", ":refs/tags/v1.0", ":refs/tags/v1.1", cwd=repo.work)
    code, stdout, stderr = cli(["sync", "--json"], env, tmp_path)
    report = json.loads(stdout)["sources"][0]
    assert code == 1 and "refused to remove versions v1.0, v1.1" in report["error"] and "--allow-delete" in report["error"]
    assert not report["removed"] and versions(env, tmp_path)["corpora"]["laravel"] == before
    report = synced(env, tmp_path, "--allow-delete")
    assert set(report["removed"]) == {"v1.0", "v1.1"}
    assert set(versions(env, tmp_path)["corpora"]["laravel"]["versions"]) == {"main"}


def test_one_unreadable_file_does_not_keep_the_others_out(hub, tmp_path):
    """A page that is not valid UTF-8 on main (as `esrag ingest` reports it: one line naming the
    file) leaves the version's other files indexed and searchable; the version's outcome stays
    ``error``, naming the file, and the exit status is 1 until the file is fixed. A blank page
    beside it is no error: skipped (``empty``), as a page that shows nothing."""
    repo, _, env = hub
    (repo.work / "docs" / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve\n".encode("latin-1"))
    (repo.work / "docs" / "empty.md").write_text("\n")
    head = repo.commit("a latin-1 page and an empty one")
    repo.push("main")
    code, stdout, _ = cli(["sync", "--json"], env, tmp_path)
    row = json.loads(stdout)["sources"][0]["versions"]["main"]
    assert code == 1 and row["outcome"] == "error" and row["commit"] == head
    assert "1 files not indexed" in row["error"] and "latin1.md" in row["error"] and "not valid UTF-8" in row["error"]
    assert "empty.md" not in row["error"] and "\n" not in row["error"]
    assert versions(env, tmp_path)["corpora"]["laravel"]["versions"]["main"]["sources"] == 3
    code, stdout, _ = cli(["search", "Unreleased queue notes", "--doc-version", "main", "--json", "-k", "3"], env, tmp_path)
    assert any("Unreleased queue notes" in h["text"] for h in json.loads(stdout))
    (repo.work / "docs" / "latin1.md").unlink()
    repo.commit("no latin-1 page")
    repo.push("main")
    assert synced(env, tmp_path)["versions"]["main"]["outcome"] == "indexed"


@pytest.mark.parametrize("es_url", es_test_urls(), ids=lambda u: "es" + u.rsplit(":", 1)[1])
def test_sync_on_elasticsearch(hub, tmp_path, es_url, es_nodes):
    """The same sync on each Elasticsearch test node: three versions, a deleted tag removed, a
    re-sync a no-op; the state is the alias's own."""
    import uuid
    import warnings

    from esrag.stores.elastic import ElasticStore

    repo, _, env = hub
    alias = f"esrag-t-{uuid.uuid4().hex[:12]}"
    env = {**env, "ESRAG_ES_URL": es_url, "ESRAG_INDEX": alias}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the 8.15.5 node has no ingest processors (a ClusterWarning)
            assert {v["outcome"] for v in synced(env, tmp_path)["versions"].values()} == {"indexed"}
            held = versions(env, tmp_path)["corpora"]["laravel"]["versions"]
            assert set(held) == {"v1.0", "v1.1", "main"}
            git("push", "--quiet", "origin", ":refs/tags/v1.0", cwd=repo.work)
            report = synced(env, tmp_path)
            assert report["removed"] == {"v1.0": held["v1.0"]["chunks"]}
            assert {v["outcome"] for v in report["versions"].values()} == {"unchanged"}
            assert set(versions(env, tmp_path)["corpora"]["laravel"]["versions"]) == {"v1.1", "main"}
            assert (tmp_path / "data" / f"sync-state-es-{alias}.json").is_file()
    finally:
        store = ElasticStore(es_url, alias)
        store.drop()
        store.close()


def test_media_files_are_not_checked_out(hub, tmp_path):
    """A docs folder's images, video and PDFs are left out of the sparse checkout (their blobs
    are never fetched into the partial mirror); its pages and an SVG stay."""
    repo, _, env = hub
    for name in ("shot.png", "demo.webm", "paper.pdf", "diagram.svg"):
        (repo.work / "docs" / name).write_bytes(b"\x89PNG\x00binary" if name != "diagram.svg" else b"<svg/>")
    repo.commit("media")
    repo.push("main")
    synced(env, tmp_path)
    trees = list((tmp_path / "data" / "sources" / "laravel").glob("main-*"))
    assert len(trees) == 1
    present = {p.name for p in (trees[0] / "docs").iterdir()}
    assert {"queues.md", "cache.md", "diagram.svg"} <= present and not present & {"shot.png", "demo.webm", "paper.pdf"}


def test_sync_in_the_default_layout_without_esrag_db(hub, tmp_path):
    """No ``ESRAG_DB``: mirrors, work trees and the state go to ``.esrag/`` under the working
    directory (as the store does), and git, which runs in other folders, still finds them (a
    relative path failed every source with "git -C failed: cannot change to '.esrag/sources/…'")."""
    _, _, env = hub
    env = {**env, "ESRAG_DB": None}
    first = synced(env, tmp_path)
    assert {v["outcome"] for v in first["versions"].values()} == {"indexed"}, first
    assert (tmp_path / ".esrag" / "esrag.db").is_file() and (tmp_path / ".esrag" / "sources").is_dir()
    again = synced(env, tmp_path)
    assert {v["outcome"] for v in again["versions"].values()} == {"unchanged"}


def test_a_refs_pattern_matching_nothing_is_named_and_the_others_are_indexed(hub, tmp_path):
    """A pattern that matches no branch or tag (a typo, or a series not tagged yet) is a warning
    line naming it, not a silent no-op and not a failure."""
    repo, config, env = hub
    config.write_text(config.read_text().replace('refs = ["v1.*", "main"]', 'refs = ["v1.*", "release-*"]'))
    code, stdout, stderr = cli(["sync", "--json"], env, tmp_path)
    assert code == 0, stdout + stderr
    report = json.loads(stdout)["sources"][0]
    assert set(report["versions"]) == {"v1.0", "v1.1"} and {v["outcome"] for v in report["versions"].values()} == {"indexed"}
    assert report["ref_warnings"] == [f"[sources.laravel] refs: pattern 'release-*' matches no branch or tag in {repo.url}"]
    assert "warning: [sources.laravel] refs: pattern 'release-*' matches no branch or tag" in " ".join(stderr.split())


def test_a_changed_path_indexes_the_version_again_though_its_commit_did_not_move(hub, tmp_path):
    """The commit alone does not decide 'unchanged': the settings it was indexed with do too
    (a new path that does not exist is an error, as on a first sync; back to the old one, the
    version is indexed again and its chunks kept)."""
    _, config, env = hub
    first = synced(env, tmp_path)
    assert {v["outcome"] for v in first["versions"].values()} == {"indexed"}
    config.write_text(config.read_text().replace('path = "docs"', 'path = "nodocs"'))
    code, stdout, _ = cli(["sync", "--json"], env, tmp_path)
    moved = json.loads(stdout)["sources"][0]["versions"]
    assert code == 1 and {v["outcome"] for v in moved.values()} == {"error"}
    assert "path 'nodocs': no such folder in 'main'" in moved["main"]["error"]
    config.write_text(config.read_text().replace('path = "nodocs"', 'path = "docs"'))
    back = synced(env, tmp_path)["versions"]
    assert {v["outcome"] for v in back.values()} == {"indexed"}
    assert all(v["summary"]["chunks_new"] == 0 and v["summary"]["embeddings_computed"] == 0 for v in back.values())
    assert {v["outcome"] for v in synced(env, tmp_path)["versions"].values()} == {"unchanged"}


def test_a_search_of_a_version_no_corpus_holds_says_which_versions_there_are(hub, tmp_path):
    _, _, env = hub
    synced(env, tmp_path)
    code, stdout, stderr = cli(["search", "schedule a task", "--doc-version", "v9.9", "--json"], env, tmp_path)
    assert code == 0 and json.loads(stdout) == []  # the --json shape is kept
    assert "no corpus searched holds version 'v9.9' (laravel: main, v1.0, v1.1)" in " ".join(stderr.split())
    code, stdout, stderr = cli(["search", "zzqxv unmatched words", "--doc-version", "v1.0", "--json"], env, tmp_path)
    assert "holds version" not in stderr  # the version exists: nothing matched, no note


def test_a_sources_site_title_finds_it_and_heads_its_llms_txt(hub, tmp_path, monkeypatch):
    """A synced version records what its site configuration says of itself (VitePress
    ``title`` / ``description`` here); ``resolve_library`` finds the corpus by that title, shows
    it and its description, and ``llms.txt`` is headed by it; a version whose site says nothing
    keeps the corpus name."""
    repo, _, env = hub
    (repo.work / "docs" / ".vitepress").mkdir()
    (repo.work / "docs" / ".vitepress" / "config.mjs").write_text(
        'export default {\n  title: "Artisan Handbook",\n  description: "Queues, caches and scheduled tasks for PHP apps",\n}\n'
    )
    repo.commit("a VitePress site")
    repo.push("main")
    synced(env, tmp_path)
    sync_rows = versions(env, tmp_path)["sync"]["laravel"]
    assert (sync_rows["main"]["title"], sync_rows["v1.0"]["title"]) == ("Artisan Handbook", "")
    assert sync_rows["main"]["description"] == "Queues, caches and scheduled tasks for PHP apps"
    # a version synced before titles were kept gets its title at the next sync, though unchanged
    path = state_path(Settings(db=Path(env["ESRAG_DB"])))
    state = json.loads(path.read_text())
    state["sources"]["laravel"]["main"].update(title="", description="")
    path.write_text(json.dumps(state))
    again = synced(env, tmp_path)["versions"]["main"]
    assert again["outcome"] == "unchanged" and again["title"] == "Artisan Handbook"

    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    with open_service(load_settings()) as service:
        found = service.libraries("artisan handbook")
        assert found and found[0]["corpus"] == "laravel" and found[0]["matched"] == "Artisan Handbook"
        assert found[0]["title"] == "Artisan Handbook" and found[0]["description"].startswith("Queues, caches")
        assert service.libraries("scheduled tasks")[0]["matched"] == "description"

    for version, heading in (("main", "# Artisan Handbook"), ("v1.0", "# laravel")):
        out = tmp_path / f"llms-{version}"
        code, _, stderr = cli(["export", "llms-txt", "--corpus", "laravel", "--doc-version", version, "--out", str(out)], env, tmp_path)
        assert code == 0, stderr
        assert (out / "llms.txt").read_text().splitlines()[0] == heading


def test_site_titles_come_from_configured_sources_and_a_bad_state_is_one_line(tmp_path):
    """``site_titles``: the wanted version's record when there is one (even when its site says
    nothing), else the latest that says something; a source no longer configured gives none (a
    corpus by that name is someone else's); a state file of the wrong shape is a one-line error
    for ``esrag sync`` / ``status`` and no titles for a search."""
    sources = {"docs": SourceSettings(git="x", refs=["v*"])}
    settings = Settings(db=tmp_path / "data" / "esrag.db", sources=sources)
    state = SyncState(state_path(settings))
    state.sources["docs"] = {
        "v1": VersionState("v1", indexed_at=1.0, title="Docs One"),
        "v2": VersionState("v2", indexed_at=2.0, title="Docs Two", description="The second"),
        "v3": VersionState("v3", indexed_at=3.0),
    }
    state.sources["gone"] = {"v1": VersionState("v1", indexed_at=1.0, title="Gone")}
    state.save()
    assert site_titles(settings) == {"docs": {"title": "Docs Two", "description": "The second"}}
    assert site_titles(settings, {"docs": "v1"}) == {"docs": {"title": "Docs One", "description": ""}}
    assert site_titles(settings, {"docs": "v3"}) == {}
    state_path(settings).write_text('["not", "a", "state"]')
    with pytest.raises(ConfigError, match="unreadable sync state") as err:
        SyncState(state_path(settings))
    assert "\n" not in str(err.value)
    assert site_titles(settings) == {}
