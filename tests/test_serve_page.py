"""The search page at ``/`` in a real headless Chromium (Debian's ``chromium``), driven over the
Chrome DevTools protocol (``websockets``): type a question, press Enter, read the rendered hits,
tick "explain", and check that hostile indexed text is shown as text and never runs. Screenshots
are kept in the test's tmp folder and in ``test-artifacts/`` of the project."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from esrag.eval.metrics import words
from serve_helpers import Server, indexed_env

# needs a service, a model or a subprocess (see tests/conftest.py)
pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Chrome:
    """Headless Chromium with a DevTools websocket to its first page."""

    def __init__(self, url: str, profile: Path) -> None:
        assert CHROMIUM, "chromium is not installed (scripts/test installs Debian's chromium package)"
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--window-size=1100,900",
                url,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else None
        assert port, "chromium did not open its DevTools port"
        pages = []
        while not pages and time.monotonic() < deadline:
            pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page"]
            time.sleep(0.1)
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(pages[0]["webSocketDebuggerUrl"], max_size=50_000_000, open_timeout=30))
        self._ids = itertools.count(1)

    def send(self, method: str, **params) -> dict:
        i = next(self._ids)
        self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == i:
                assert "error" not in msg, msg
                return msg.get("result", {})

    def js(self, expression: str):
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.js(expression):
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            time.sleep(0.1)

    def key(self, key: str, code: int, text: str = "") -> None:
        self.send("Input.dispatchKeyEvent", type="keyDown", key=key, code=key, windowsVirtualKeyCode=code, text=text)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code)

    def click(self, selector: str) -> None:
        box = self.js(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, *paths: Path) -> None:
        data = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        for p in paths:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()


HITS_JS = """[...document.querySelectorAll('#results li.hit')].map(li => ({
  crumb: [...li.querySelectorAll('.crumb span')].map(s => s.textContent),
  title: li.querySelector('.title').textContent, link: (li.querySelector('.title a') || {}).href || null,
  src: li.querySelector('.src').textContent, snippet: li.querySelector('.snippet').textContent,
  explain: (li.querySelector('.explain') || {}).textContent || null}))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(["serve"], indexed_env(tmp_path_factory.mktemp("page")))
    yield s
    s.stop()


def test_type_a_question_and_see_hits_then_explain(server, tmp_path):
    chrome = Chrome(server.url + "/", tmp_path / "profile")
    try:
        chrome.send("Page.enable")
        chrome.wait("document.readyState === 'complete' && document.querySelectorAll('#corpus option').length === 3")
        chrome.js("document.getElementById('q').focus()")
        chrome.send("Input.insertText", text="schedule a task every minute")
        chrome.key("Enter", 13, "\r")
        chrome.wait("document.body.dataset.state === 'done'")
        hits = chrome.js(HITS_JS)
        api = httpx.get(server.url + "/search", params={"q": "schedule a task every minute"}).json()["hits"]
        assert len(hits) == len(api) == 10
        assert hits[0]["crumb"] == api[0]["section_path"].split(" > ") and hits[0]["crumb"][0] == "Task Scheduling"
        assert hits[0]["title"] == api[0]["section_path"].split(" > ")[-1]  # the section is the hit's title
        assert hits[0]["src"].startswith(f"laravel · scheduling.md:{api[0]['start_line']}-{api[0]['end_line']}")
        shown = words(hits[0]["snippet"])[:8]  # a window of the hit's own text, as text (no Markdown syntax)
        assert " ".join(shown) in " ".join(words(api[0]["text"])) and not re.search(r"(^|\s)#{1,6}\s|```|\*\*", hits[0]["snippet"])
        assert all(h["explain"] is None for h in hits) and "10 hits" in chrome.js("document.getElementById('status').textContent")
        assert chrome.js("location.search") == "?q=schedule+a+task+every+minute"
        chrome.click("#explain")
        chrome.wait("document.querySelectorAll('#results .explain').length === 10")
        explained = chrome.js(HITS_JS)
        legs = api[0]["legs"]
        assert f"fused score {api[0]['score']:.4f}" in explained[0]["explain"]
        assert all(f"{name} rank {leg['rank']}" in explained[0]["explain"] for name, leg in legs.items())
        assert chrome.js("document.getElementById('fusion').textContent").startswith("fusion: rrf")
        chrome.screenshot(tmp_path / "search-page.png", ARTIFACTS / "search-page.png")
        assert (tmp_path / "search-page.png").stat().st_size > 10_000
    finally:
        chrome.close()


def test_hits_grouped_by_page_terms_highlighted_and_keyboard_navigation(server, tmp_path):
    """Hits come grouped by page (pages in the order of their best hit, hits in rank order), the
    query's terms are <mark>ed in the snippets, and the keyboard moves over the hits (issue 38)."""
    q = "queue worker retry failed jobs"
    chrome = Chrome(server.url + "/?q=" + q.replace(" ", "+"), tmp_path / "profile")
    try:
        chrome.wait("document.body && document.body.dataset.state === 'done'")
        api = httpx.get(server.url + "/search", params={"q": q}).json()["hits"]
        pages = chrome.js(
            "[...document.querySelectorAll('#results li.page')].map(p => [...p.querySelectorAll('li.hit')]"
            ".map(li => [Number(li.dataset.rank), li.querySelector('.src').textContent]))"
        )
        ranks = [r for page in pages for r, _ in page]
        assert sorted(ranks) == list(range(1, len(api) + 1))  # every hit shown once
        first_seen = list(dict.fromkeys((h["corpus"], h["source_path"]) for h in api))
        assert len(pages) == len(first_seen) < len(api)  # grouped: fewer pages than hits on this query
        for page, (corpus, path) in zip(pages, first_seen):
            assert all(src.startswith(f"{corpus} · {path}:") for _, src in page)
            assert [r for r, _ in page] == sorted(r for r, _ in page)
        marks = chrome.js("[...document.querySelectorAll('#results .snippet mark')].map(m => m.textContent.toLowerCase())")
        assert marks and set(marks) <= {"queue", "worker", "retry", "failed", "jobs"}
        chrome.js("document.activeElement.blur()")
        chrome.key("ArrowDown", 40)
        assert chrome.js("document.activeElement.closest('li.hit').dataset.rank") == "1"
        chrome.key("ArrowDown", 40)
        second = chrome.js("document.activeElement.closest('li.hit').dataset.rank")
        assert second == str(pages[0][1][0] if len(pages[0]) > 1 else pages[1][0][0])  # the next hit on the page
        assert chrome.js("document.querySelectorAll('#results li.hit.selected').length") == 1
        chrome.key("/", 191, "/")
        assert chrome.js("document.activeElement.id") == "q"
        chrome.screenshot(tmp_path / "grouped.png", ARTIFACTS / "search-page-grouped.png")
    finally:
        chrome.close()


def test_api_docs_work_with_no_internet(server, tmp_path):
    """/docs (Swagger UI) loads its script and style from this server (fastapi-offline), never a
    CDN: in the browser (this machine has no internet) the routes of /openapi.json render (issue 38)."""
    page = httpx.get(server.url + "/docs")
    assert page.status_code == 200 and "cdn." not in page.text and "/docs-assets/swagger-ui-bundle.js" in page.text
    js = httpx.get(server.url + "/docs-assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"] and len(js.content) > 100_000
    redoc = httpx.get(server.url + "/redoc")
    assert redoc.status_code == 200 and "cdn." not in redoc.text and "/docs-assets/redoc.standalone.js" in redoc.text
    chrome = Chrome(server.url + "/docs", tmp_path / "profile")
    try:
        chrome.wait("document.querySelectorAll('.swagger-ui .opblock').length > 0")
        paths = chrome.js("[...document.querySelectorAll('.swagger-ui .opblock-summary-path')].map(e => e.textContent.trim())")
        assert "/search" in paths and "/corpora" in paths
        chrome.screenshot(tmp_path / "docs.png", ARTIFACTS / "api-docs.png")
    finally:
        chrome.close()


def test_hostile_indexed_text_is_shown_as_text_and_never_runs(server, tmp_path):
    chrome = Chrome(server.url + "/?q=pwned+payloads&corpus=evil&explain=1", tmp_path / "profile")
    try:
        chrome.wait("document.body && document.body.dataset.state === 'done'")
        hits = chrome.js(HITS_JS)
        assert hits and all("evil" in h["src"] for h in hits)
        text = " ".join(h["snippet"] + " ".join(h["crumb"]) for h in hits)
        assert "<img src=x onerror=" in text  # shown literally (the page's <script> is in a heading line: the crumb shows headings)
        assert chrome.js("window.__pwned === undefined")
        assert chrome.js("document.querySelectorAll('#results img, #results script, #results b, #results a').length") == 0
        chrome.screenshot(tmp_path / "hostile.png", ARTIFACTS / "search-page-hostile.png")
    finally:
        chrome.close()
