"""``llms.txt`` (issue 38): ``esrag export llms-txt`` on a real mdBook (the shared async-book,
ingested by the real CLI into a SQLite index), read back as the llmstxt.org format says (H1
first, one blockquote, H2 sections of ``- [title](url): description`` lines with the book's
published URLs), ``llms-full.txt`` holding every page, and the same text from a real
``esrag serve`` on a free port (per corpus, at the root, each page at its URL + ``.md``), with
404s for unknown corpora, versions and pages and the API key rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from esrag.llms_txt import LlmsSite, arrange, description, llms_txt, markdown_path
from esrag.pages import Page
from paths import DATA
from serve_helpers import Server, run_cli

# the tests that run esrag need a subprocess (see tests/conftest.py)
integration = pytest.mark.integration

BOOK = DATA / "corpora" / "async-book"
REQUESTS = DATA / "corpora" / "requests-docs"
SITE = "https://rust-lang.github.io/async-book/"
LINK = re.compile(r"^- \[((?:[^\]\\]|\\.)+)\]\((\S+)\)(?:: (.+))?$")


def parse_llms_txt(text: str) -> tuple[str, str, list[tuple[str, list[tuple[str, str, str]]]]]:
    """``(title, summary, [(section, [(title, url, description), ...]), ...])`` of an llms.txt,
    failing on anything the llmstxt.org format does not allow where it stands."""
    lines = [x for x in text.split("\n") if x.strip()]
    assert lines[0].startswith("# ") and not lines[0].startswith("## "), lines[0]
    assert lines[1].startswith("> "), lines[1]
    sections: list[tuple[str, list[tuple[str, str, str]]]] = []
    for line in lines[2:]:
        if line.startswith("## "):
            sections.append((line[3:], []))
            continue
        m = LINK.match(line)
        assert m and sections, f"not a file-list line under an H2: {line!r}"
        sections[-1][1].append((m.group(1), m.group(2), m.group(3) or ""))
    return lines[0][2:], lines[1][2:], sections


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    base = tmp_path_factory.mktemp("llms")
    env = {"ESRAG_DB": str(base / "index.db")}
    run_cli(["ingest", str(BOOK), "--corpus", "async-book", "--json"], env)
    out = base / "out"
    report = json.loads(run_cli(["export", "llms-txt", "--corpus", "async-book", "--out", str(out), "--json"], env).stdout)
    status = json.loads(run_cli(["status", "--json"], env).stdout)
    return env, out, report, status


@integration
def test_export_writes_llms_txt_in_the_llmstxt_format_with_published_urls(book):
    env, out, report, status = book
    text = (out / "llms.txt").read_text(encoding="utf-8")
    title, summary, sections = parse_llms_txt(text)
    assert title == "async-book" and "47 pages" in summary and SITE in summary
    links = [link for _, members in sections for link in members]
    # every page of the corpus once, as `esrag status` counts them
    assert len(links) == report["pages"] == status["corpora"]["async-book"]["sources"] == 47
    assert len(sections) == report["sections"] and len({u for _, u, _ in links}) == len(links)
    published = [u for _, u, _ in links if u.startswith("https://")]
    assert len(published) == 46 and all(u.startswith(SITE) and u.endswith(".html") for u in published)
    assert [u for _, u, _ in links if not u.startswith("https://")] == ["README.md"]  # outside src/: mdBook publishes no URL for it
    names = [name for name, _ in sections]
    assert names[:3] == ["Docs", "Getting started", "Execution"] and "Part guide" in names  # top-level folders, path order
    getting_started = dict(sections)["Getting started"]
    assert all("/01_getting_started/" in u for _, u, _ in getting_started)
    assert getting_started[0] == (
        "Getting Started",
        SITE + "01_getting_started/01_chapter.html",
        "Welcome to Asynchronous Programming in Rust!",
    )
    future = next(link for link in links if link[1] == SITE + "02_execution/02_future.html")
    assert future[0] == "The Future Trait" and future[2] == "The `Future` trait is at the center of asynchronous programming in Rust."


@integration
def test_llms_full_txt_holds_every_page_under_its_title_and_url_in_order(book):
    _, out, _, _ = book
    _, _, sections = parse_llms_txt((out / "llms.txt").read_text(encoding="utf-8"))
    full = (out / "llms-full.txt").read_text(encoding="utf-8")
    at = -1
    for _, members in sections:
        for title, url, _ in members:
            head = f"# {title}\n\nSource: {url}\n"
            found = full.find(head)
            assert found > at, f"{title} ({url}) missing or out of order"
            at = found
    # the pages' own text, with the code mdBook includes from examples/
    chapter = (BOOK / "src" / "02_execution" / "04_executor.md").read_text(encoding="utf-8")
    assert chapter.split("\n\n")[1].strip() in full
    assert "fn spawn(&self, future: impl Future<Output = ()> + 'static + Send)" in full
    assert "{{#include" not in full


@integration
def test_serve_answers_the_same_text_per_corpus_at_the_root_and_per_page(book):
    env, out, _, _ = book
    index, full = (out / "llms.txt").read_text(encoding="utf-8"), (out / "llms-full.txt").read_text(encoding="utf-8")
    server = Server(["serve"], env)
    try:
        for path, want in (("/corpora/async-book/llms.txt", index), ("/corpora/async-book/llms-full.txt", full), ("/llms.txt", index)):
            r = httpx.get(server.url + path, timeout=60)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/markdown"), (path, r.text[:200])
            assert r.text == want, path
        assert httpx.get(server.url + "/llms-full.txt", timeout=60).text == full  # one corpus: its file
        schema = httpx.get(server.url + "/openapi.json", timeout=60).json()["paths"]
        assert {"/llms.txt", "/corpora/{corpus}/llms.txt", "/corpora/{corpus}/{path}"} <= set(schema)
        page = httpx.get(server.url + "/corpora/async-book/02_execution/02_future.html.md", timeout=60)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/markdown")
        assert page.text.startswith(f"# The Future Trait\n\nSource: {SITE}02_execution/02_future.html\n\n")
        assert page.text in full
        for path, words in (
            ("/corpora/nope/llms.txt", ["'nope'", "async-book"]),
            ("/corpora/nope/llms-full.txt", ["'nope'"]),
            ("/corpora/async-book/llms.txt?doc_version=9.9", ["'9.9'"]),
            ("/corpora/async-book/02_execution/nope.html.md", ["nope.html.md", "llms.txt"]),
            ("/corpora/async-book/02_execution/02_future.html", [".md"]),
        ):
            r = httpx.get(server.url + path, timeout=60)
            assert r.status_code == 404, (path, r.status_code)
            message = r.json()["error"]
            assert "\n" not in message and all(w in message for w in words), (path, message)
        # a second corpus: /llms.txt lists both, each link answers; /llms-full.txt names them
        run_cli(["ingest", str(REQUESTS), "--corpus", "requests-docs", "--json"], env)
        root = httpx.get(server.url + "/llms.txt", timeout=60)
        title, _, sections = parse_llms_txt(root.text)
        assert root.status_code == 200 and title == "esrag" and [n for n, _ in sections] == ["Corpora"]
        listed = {t: u for t, u, _ in sections[0][1]}
        assert set(listed) == {"async-book", "requests-docs"}
        assert httpx.get(listed["async-book"], timeout=60).text == index
        other = httpx.get(listed["requests-docs"], timeout=60)
        title, _, sections = parse_llms_txt(other.text)
        # no base URL known: links are source paths, sections the folders below docs/
        assert other.status_code == 200 and title == "requests-docs" and [n for n, _ in sections] == ["Docs", "Community", "Dev", "User"]
        assert ("Quickstart", "docs/user/quickstart.rst", "Eager to get started?") in dict(sections)["User"]
        quick = httpx.get(server.url + "/corpora/requests-docs/user/quickstart.md", timeout=60)
        assert quick.status_code == 200 and quick.text.startswith("# Quickstart\n\nSource: docs/user/quickstart.rst\n\n")
        several = httpx.get(server.url + "/llms-full.txt", timeout=60)
        assert several.status_code == 404 and "async-book, requests-docs" in several.json()["error"]
    finally:
        server.stop()


@integration
def test_the_api_key_guards_the_llms_routes(book, tmp_path):
    env, _, _, _ = book
    server = Server(["serve", "--api-key", "s3cret-llms-key"], env)
    try:
        for path in ("/llms.txt", "/corpora/async-book/llms.txt", "/corpora/async-book/02_execution/02_future.html.md"):
            denied = httpx.get(server.url + path, timeout=60)
            assert denied.status_code == 401 and "s3cret" not in denied.text
            allowed = httpx.get(server.url + path, headers={"x-api-key": "s3cret-llms-key"}, timeout=60)
            assert allowed.status_code == 200 and "s3cret" not in allowed.text
    finally:
        server.stop()
    assert "s3cret" not in server.output()


@integration
def test_export_names_an_unknown_corpus_and_an_unwritable_folder(book, tmp_path):
    env, _, _, _ = book
    proc = run_cli(["export", "llms-txt", "--corpus", "nope", "--out", str(tmp_path)], env, check=False)
    assert proc.returncode == 1 and proc.stderr.strip().count("\n") == 0
    assert "unknown corpus 'nope'" in proc.stderr and "async-book" in proc.stderr
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = run_cli(["export", "llms-txt", "--corpus", "async-book", "--out", str(blocker / "sub")], env, check=False)
    assert proc.returncode != 0 and "--out" in proc.stderr and str(blocker / "sub") in proc.stderr
    assert not list(Path(tmp_path).glob("llms*.txt"))


def _page(source_path: str, url: str, text: str, **metadata: str) -> Page:
    title = text.split("\n", 1)[0].removeprefix("# ")
    return Page(source_path, "site", "", title, url, [], text, [""], dict(metadata))


def test_folder_urls_make_sections_and_md_paths_as_the_convention_says():
    """A site with directory URLs (MkDocs, Sphinx dirhtml): ``concepts/`` is the Concepts
    folder's page and comes first in it; a folder URL is served at ``index.html.md``; front
    matter ``description`` wins over the first sentence; links in a first sentence keep their text."""
    base = "https://docs.example.com/latest/"
    pages = [
        _page("docs/concepts/models.md", base + "concepts/models/", "# Models\n\nSee [fields](fields.md) first. Then more."),
        _page(
            "docs/index.md",
            base,
            '# Home\n\n```python\nx = 1\n```\n\n![logo](logo.png)\n\n=== "Tab"\n\n[ref]: https://x.org\n\n**Example** is a *library*.',
        ),
        _page("docs/concepts/index.md", base + "concepts/", "# Concepts\n\nIgnored.", description="All the concepts."),
        _page("docs/why.md", base + "why/", "# Why\n\n- a list only\n"),
    ]
    ordered, sections, paths = arrange(pages)
    assert [p.title for p in ordered] == ["Home", "Why", "Concepts", "Models"]
    assert sections == [("Docs", [0, 1]), ("Concepts", [2, 3])] and paths == ["", "why/", "concepts/", "concepts/models/"]
    assert [markdown_path(p, path) for p, path in zip(ordered, paths, strict=True)] == [
        "index.html.md",
        "why/index.html.md",
        "concepts/index.html.md",
        "concepts/models/index.html.md",
    ]
    assert [description(p) for p in ordered] == ["Example is a library.", "", "All the concepts.", "See fields first."]
    site = LlmsSite("site", "site", "A site.", "", ordered, sections, paths)
    assert llms_txt(site) == (
        "# site\n\n> A site.\n\n## Docs\n\n"
        f"- [Home]({base}): Example is a library.\n- [Why]({base}why/)\n\n## Concepts\n\n"
        f"- [Concepts]({base}concepts/): All the concepts.\n- [Models]({base}concepts/models/): See fields first.\n"
    )
    assert site.page_at("/concepts/models/index.html.md") is pages[0] and site.page_at("concepts/models.md") is None
    spaced = _page("docs/a b.md", base + "a%20b.html", "# A b\n\nText.")
    assert LlmsSite("site", "site", "", "", *arrange([spaced])).page_at("a b.html.md") is spaced


@integration
def test_export_on_a_missing_index_creates_nothing_and_says_where(tmp_path):
    db, out = tmp_path / "missing" / "x.db", tmp_path / "out"
    proc = run_cli(["export", "llms-txt", "--corpus", "async-book", "--out", str(out)], {"ESRAG_DB": str(db)}, check=False)
    said = f"nothing is indexed in {db} (ESRAG_DB) yet; `esrag ingest PATH` creates it"
    assert proc.returncode == 1 and proc.stderr.splitlines() == [f"Error: {said}"], proc.stderr
    assert not (tmp_path / "missing").exists() and not out.exists()


@integration
def test_one_version_the_default_unless_asked(tmp_path):
    """Two versions of one corpus: llms.txt lists each page once, of the default version (the
    most recently ingested), or of --doc-version; an unknown version names the held ones."""
    env = {"ESRAG_DB": str(tmp_path / "index.db")}
    for version in ("2.31", "2.32"):
        run_cli(["ingest", str(REQUESTS), "--corpus", "requests", "--doc-version", version, "--json"], env)
    out = tmp_path / "out"
    report = json.loads(run_cli(["export", "llms-txt", "--corpus", "requests", "--out", str(out), "--json"], env).stdout)
    _, summary, sections = parse_llms_txt((out / "llms.txt").read_text(encoding="utf-8"))
    links = [u for _, members in sections for _, u, _ in members]
    assert report["doc_version"] == "2.32" and "of version 2.32" in summary and len(links) == len(set(links)) == 15
    full = (out / "llms-full.txt").read_text(encoding="utf-8")
    assert full.count("# Quickstart\n\nSource: docs/user/quickstart.rst\n") == 1
    older = json.loads(
        run_cli(["export", "llms-txt", "--corpus", "requests", "--out", str(out), "--doc-version", "2.31", "--json"], env).stdout
    )
    assert older["doc_version"] == "2.31" and older["pages"] == 15
    assert "of version 2.31" in (out / "llms.txt").read_text(encoding="utf-8")
    proc = run_cli(["export", "llms-txt", "--corpus", "requests", "--out", str(out), "--doc-version", "9"], env, check=False)
    assert proc.returncode == 1 and "no version '9'" in proc.stderr and "'2.31', '2.32'" in proc.stderr
