"""Pages that fit (issue 30) and explicit versions (issue 26): finding a page by URL or by a path
without its docs root prefix, choosing the version, budgeted windows cut at block boundaries
with a way to read the rest — on real pages of FastAPI's and Laravel's docs."""

from __future__ import annotations

import pytest

from esrag.app import chunk_file, default_version
from esrag.config import Settings
from esrag.errors import ConfigError, PageNotFound
from esrag.pages import (
    Page,
    PageRef,
    Section,
    find_page,
    nearest_paths,
    page_window,
    pick_version,
    reassemble,
    section_count,
)
from esrag.search.budget import block_ends, block_prefix
from esrag.serve.responses import DEFAULT_PAGE_BUDGET, left_out, pack_json, page_json, page_markdown, search_markdown
from esrag.tokens import count_tokens
from paths import DATA, LARAVEL

FASTAPI_DOCS = DATA / "corpora" / "fastapi-docs" / "docs" / "en" / "docs"


def real_page(file, source_path: str) -> Page:
    """A page as get_page builds it, from the chunker's real chunks of ``file`` (no store)."""
    _, chunks = chunk_file(Settings(db=None, es_url=None), file)
    sections = [
        Section(
            c.section_path,
            c.anchor or c.section_path.rsplit(" > ", 1)[-1].lower().replace(" ", "-"),
            "",
            c.start_line,
            c.end_line,
            c.text,
            c.tokens,
        )
        for c in chunks
    ]
    return Page(source_path, "fastapi", "", chunks[0].doc_title, "", sections, reassemble(chunks), [""])


@pytest.fixture(scope="module")
def release_notes() -> Page:
    return real_page(FASTAPI_DOCS / "release-notes.md", "docs/en/docs/release-notes.md")


# -- block boundaries -----------------------------------------------------------------------------
def test_block_ends_never_split_a_fence_or_an_indented_block():
    text = "Para one\nstill one.\n\n```py\nx = 1\n\ny = 2\n```\n\n- item\n\n    indented code\n\nLast."
    ends = block_ends(text)
    cuts = [text[:e] for e in ends]
    assert cuts[0] == "Para one\nstill one."
    assert "```py\nx = 1\n\ny = 2\n```" in cuts[1] and not any(c.endswith("x = 1") for c in cuts)
    assert not any(c.endswith("- item") for c in cuts)  # the indented block belongs to the item
    assert cuts[-1] == text
    assert block_prefix(text, count_tokens(cuts[1])) == cuts[1]
    assert block_prefix(text, count_tokens(cuts[1]) - 1) == cuts[0]
    lines = [text[:e] for e in block_ends(text, every_line=True)]
    assert lines[0] == "Para one" and "Para one\nstill one." in lines  # whole lines, for page windows
    assert not any(c.endswith(("x = 1", "y = 2", "```py")) for c in lines) and any(c.endswith("y = 2\n```") for c in lines)


# -- budgeted windows -----------------------------------------------------------------------------
def test_release_notes_with_the_default_budget_stay_within_it(release_notes):
    assert count_tokens(release_notes.text) > 100_000  # the 1.65 MB page of the issue
    text, window = page_markdown(lambda n: page_window(release_notes, n), DEFAULT_PAGE_BUDGET, None)
    assert count_tokens(text) <= DEFAULT_PAGE_BUDGET
    assert window.text and window.text in release_notes.text and text.count(window.text) == 1  # one copy
    assert window.next_offset is not None and f"offset={window.next_offset}" in text and "list_corpora" not in text
    assert "esrag " not in text  # no CLI command for an agent
    for line in window.text.split("\n"):  # never cut inside a line
        assert line in release_notes.text.split("\n")


def test_following_the_continuations_reads_the_whole_page_once(release_notes):
    """Windows of 3,000 tokens, each from the previous one's next_offset, cover every line once."""
    page = Page(release_notes.source_path, "fastapi", "", release_notes.title, "", release_notes.sections[:60])
    page.text = reassemble(page.sections)
    want = page.text.split("\n")
    got: list[str] = []
    offset = None
    for _ in range(200):
        w = page_window(page, 3000, offset=offset)
        assert count_tokens(w.text) <= 3000 and w.text
        assert w.start_line == (offset or page.sections[0].start_line)
        got += w.text.split("\n")
        if w.next_offset is None:
            break
        assert w.next_offset == w.end_line + 1 or page_window(page, None, offset=w.next_offset).start_line > w.end_line
        got += [""] * (w.next_offset - w.end_line - 1)  # blank lines between chunks
        offset = w.next_offset
    assert got == want


def test_a_section_by_anchor_or_path_and_the_pointer_to_the_next(release_notes):
    page = real_page(FASTAPI_DOCS / "advanced" / "response-cookies.md", "docs/en/docs/advanced/response-cookies.md")
    by_anchor = page_window(page, None, section="#return-a-response-directly")
    by_path = page_window(page, None, section="Response Cookies > Return a `Response` directly")
    by_title = page_window(page, None, section="return a response directly")
    assert by_anchor.text == by_path.text == by_title.text and by_anchor.text.startswith("## Return a `Response` directly")
    assert "### More info" in by_anchor.text and "## Use a `Response`" not in by_anchor.text  # subsections, not siblings
    # every section above it on the page is named (how many depends on how the chunker cut the page)
    above = [sec for sec in page.sections if sec.end_line < by_anchor.start_line]
    assert above and by_anchor.before == above and not by_anchor.after and by_anchor.next_offset is None
    first = page_window(page, None, section="use-a-response-parameter")
    assert "## Use a `Response` parameter" in first.text and "Return a `Response`" not in first.text
    assert len(first.after) == 2  # the rest of the page is named
    whole = page_window(page, None)
    assert whole.complete and whole.text == page.text
    small = page_window(page, 60)
    assert small.next_section is not None and small.next_offset is not None and count_tokens(small.text) <= 60
    with pytest.raises(ConfigError, match="section 'nope': not on page .*use-a-response-parameter"):
        page_window(page, None, section="nope")
    with pytest.raises(ConfigError, match="offset 99999: outside lines"):
        page_window(page, None, offset=99999)


def test_page_json_keeps_the_page_fields_and_adds_what_was_left_out(release_notes):
    import json

    text, body = page_json(lambda n: page_window(release_notes, n), 2000, None, sections=True)
    assert count_tokens(text) <= 2000 and json.loads(text) == body
    assert {"source_path", "corpus", "doc_version", "title", "url", "sections", "text"} <= set(body)
    assert body["complete"] is False and body["left_out"]["next"]["offset"] == body["end_line"] + 1 or body["left_out"]["next"]


def test_left_out_counts_sections_not_chunks():
    """A window in the middle of a page says how many sections it leaves out before and after:
    a section cut into several chunks counts once (it counted chunks: 86 for Laravel's
    authentication page of 40 sections)."""
    page = real_page(LARAVEL / "authentication.md", "authentication.md")
    first = page_window(page, 2000)
    w = page_window(page, 2000, offset=first.next_offset)
    gone = left_out(w)
    runs = [(s.section_path, s.anchor) for s in w.before]
    want_before = sum(1 for i, r in enumerate(runs) if i == 0 or r != runs[i - 1])
    assert gone["before"]["sections"] == want_before == section_count(w.before) >= 1
    assert gone["after"]["sections"] == section_count(w.after) < len(w.after)  # some later sections are in several chunks
    assert section_count(page.sections) == len({(s.section_path, s.anchor) for s in page.sections}) < len(page.sections)


# -- finding the page and its version ------------------------------------------------------------
REFS = [
    PageRef("fastapi", "", "docs/en/docs/release-notes.md", "https://fastapi.tiangolo.com/release-notes/", "2026-01-01"),
    PageRef(
        "fastapi", "", "docs/en/docs/advanced/response-cookies.md", "https://fastapi.tiangolo.com/advanced/response-cookies/", "2026-01-01"
    ),
    PageRef("fastapi", "", "docs/en/docs/index.md", "https://fastapi.tiangolo.com/", "2026-01-01"),
    PageRef("fastapi", "", "docs/en/docs/tutorial/index.md", "https://fastapi.tiangolo.com/tutorial/", "2026-01-01"),
]


@pytest.mark.parametrize(
    "asked",
    [
        "docs/en/docs/advanced/response-cookies.md",
        "./docs/en/docs/advanced/response-cookies.md",
        "advanced/response-cookies.md",
        "docs/advanced/response-cookies.md".replace("docs/advanced", "en/docs/advanced"),
        "repo/docs/en/docs/advanced/response-cookies.md",
        "https://fastapi.tiangolo.com/advanced/response-cookies/",
        "https://fastapi.tiangolo.com/advanced/response-cookies/#use-a-response-parameter",
        "http://FASTAPI.tiangolo.com/advanced/response-cookies",
        "https://fastapi.tiangolo.com/advanced/response-cookies/index.html",
    ],
)
def test_a_page_is_found_by_path_with_or_without_prefix_or_by_url(asked):
    found, anchor = find_page(REFS, asked)
    assert [r.source_path for r in found] == ["docs/en/docs/advanced/response-cookies.md"]
    assert anchor == ("use-a-response-parameter" if "#" in asked else "")


def test_ambiguous_and_missing_pages_name_the_candidates():
    with pytest.raises(PageNotFound, match="'index.md' matches 2 pages: docs/en/docs/index.md, docs/en/docs/tutorial/index.md"):
        find_page(REFS, "index.md")
    assert find_page(REFS, "https://fastapi.tiangolo.com/nowhere/")[0] == []
    assert nearest_paths(REFS, "advanced/response-cookie.md")[0] == "docs/en/docs/advanced/response-cookies.md"
    assert nearest_paths(REFS, "release_notes.md")[0] == "docs/en/docs/release-notes.md"


def test_the_version_is_the_asked_one_else_the_default_else_the_most_recent():
    copies = [
        PageRef("lv", "", "a.md", "", "2026-01-01T00:00:00"),
        PageRef("lv", "11.x", "a.md", "", "2026-03-01T00:00:00"),
        PageRef("lv", "12.x", "a.md", "", "2026-02-01T00:00:00"),
    ]
    assert pick_version(copies, "12.x", "11.x").doc_version == "12.x"
    assert pick_version(copies, None, "12.x").doc_version == "12.x"
    assert pick_version(copies, None, "13.x").doc_version == "11.x"  # the default lacks the page: the most recent
    assert pick_version(copies, None, None).doc_version == "11.x"
    with pytest.raises(PageNotFound, match="has no version '9.x'; versions holding it: '', '11.x', '12.x'"):
        pick_version(copies, "9.x", None)
    versions = {"11.x": {"indexed_at": "2026-03-01"}, "12.x": {"indexed_at": "2026-02-01"}}
    assert default_version(Settings(db=None, es_url=None), "lv", versions) == "11.x"
    configured = Settings(db=None, es_url=None, corpora={"lv": {"default_version": "12.x"}})
    assert default_version(configured, "lv", versions) == "12.x"
    assert default_version(configured, "other", {}) is None


# -- search responses ------------------------------------------------------------------------------
def laravel_hits() -> list[dict]:
    _, chunks = chunk_file(Settings(db=None, es_url=None), LARAVEL / "scheduling.md")
    return [
        {
            "id": c.id,
            "section_path": c.section_path,
            "source_path": "scheduling.md",
            "start_line": c.start_line,
            "end_line": c.end_line,
            "text": c.text,
            "tokens": c.tokens,
            "corpus": "laravel",
            "doc_title": c.doc_title,
            "url": f"https://laravel.com/docs/12.x/scheduling#{i}",
            "anchor": str(i),
            "doc_version": None,
            "score": 1 / (60 + i),
            "legs": {"bm25": {"rank": i, "score": 1.0}},
        }
        for i, c in enumerate(chunks)
    ]


@pytest.mark.parametrize("budget", [100, 300, 800, 2000, 5000])
def test_search_responses_keep_to_their_budget_and_cut_only_at_block_boundaries(budget):
    hits = laravel_hits()
    lines = {line for h in hits for line in h["text"].split("\n")}
    text, kept = search_markdown(hits, budget, "schedule a task")
    assert count_tokens(text) <= budget and kept
    assert [h["id"] for h in kept] == [h["id"] for h in hits if h["id"] in {k["id"] for k in kept}]  # rank order
    for h in kept:
        assert h["text"] in next(o["text"] for o in hits if o["id"] == h["id"])
        assert all(line in lines for line in h["text"].split("\n"))
        assert f"## {h['section_path']}\n{h['url']}\n" in text
    if sum(h["tokens"] for h in hits) > budget:
        assert "left out" in text
    body = {"hits": hits, "timings_ms": {"total": 1.0}}
    js, sent = pack_json(body, budget)
    assert count_tokens(js) <= budget and sent["timings_ms"] == {"total": 1.0}
    assert all(set(h) >= set(hits[0]) - {"truncated"} for h in sent["hits"])  # every field kept


def test_a_hit_cut_by_the_pipeline_is_cut_once():
    """The pipeline's budget cut and the response's are one rule (issue 38): a hit the pipeline
    cut ends at a block boundary of its text, and the response keeps it as cut (not shortened
    again for a partial block); a response that must shorten it cuts at the same boundaries."""
    from esrag.model import Chunk, Hit
    from esrag.search.pipeline import pack
    from esrag.service import hit_json

    hits = laravel_hits()
    long = max((h for h in hits if len(block_ends(h["text"])) > 3), key=lambda h: h["tokens"])
    chunk = Chunk(long["id"], long["text"], source_path="scheduling.md", start_line=long["start_line"], end_line=long["end_line"])
    chunk.tokens = long["tokens"]
    [cut_hit] = pack([Hit(chunk, 1.0)], long["tokens"] - 1)
    cut = {**long, **hit_json(cut_hit)}
    assert cut["truncated"] and len(cut["text"]) < len(long["text"]) and len(cut["text"]) in block_ends(long["text"])
    text, kept = search_markdown([cut], 5000, "q")
    assert kept[0]["text"] == cut["text"] and kept[0]["truncated"] and "the section goes on: get_page(" in text
    shorter = block_ends(cut["text"])[-2]  # room for all but the last block: whole blocks again
    room = count_tokens(search_markdown([{**cut, "text": cut["text"][:shorter]}], 5000, "q")[0]) + 25  # + pack's reserve for a note
    assert count_tokens(cut["text"]) - count_tokens(cut["text"][:shorter]) > 25
    text, kept = search_markdown([cut], room, "q")
    assert count_tokens(text) <= room and kept[0]["text"] == cut["text"][:shorter] and shorter in block_ends(long["text"])


# -- the CLI: versions listed, the default one read and named ------------------------------------
def test_cli_status_lists_versions_and_page_reads_the_default(tmp_path):
    import json
    import shutil
    import time

    from test_cli import run

    for version in ("11.x", "12.x"):
        (tmp_path / version).mkdir()
        shutil.copy(LARAVEL / "scheduling.md", tmp_path / version / "scheduling.md")
    env = {"ESRAG_DB": str(tmp_path / "x.db")}
    run(["ingest", "12.x", "--corpus", "lv", "--site", "plain", "--doc-version", "12.x"], cwd=tmp_path, env=env)
    time.sleep(1.1)  # indexed_at has a resolution of one second
    run(["ingest", "11.x", "--corpus", "lv", "--site", "plain", "--doc-version", "11.x"], cwd=tmp_path, env=env)
    status = json.loads(run(["status", "--json"], cwd=tmp_path, env=env).stdout)["corpora"]["lv"]
    assert set(status["versions"]) == {"11.x", "12.x"} and status["default_version"] == "11.x"  # the latest ingested
    assert (
        status["versions"]["12.x"]["sources"] == 1 and status["versions"]["11.x"]["indexed_at"] > status["versions"]["12.x"]["indexed_at"]
    )
    human = run(["status"], cwd=tmp_path, env=env).stdout
    assert "11.x, 12.x" in human
    page = json.loads(run(["page", "scheduling.md", "--json"], cwd=tmp_path, env=env).stdout)
    assert page["doc_version"] == "11.x" and page["versions"] == ["11.x", "12.x"]
    (tmp_path / "esrag.toml").write_text('[corpora.lv]\ndefault_version = "12.x"\n')
    text = run(["page", "scheduling.md"], cwd=tmp_path, env=env).stdout
    assert "version 12.x" in text and "also indexed: 11.x" in text
    assert json.loads(run(["status", "--json"], cwd=tmp_path, env=env).stdout)["corpora"]["lv"]["default_version"] == "12.x"


def test_a_release_is_found_by_its_version_heading(release_notes):
    import re

    source = (FASTAPI_DOCS / "release-notes.md").read_text()
    versions = re.findall(r"(?m)^## (\d+\.\d+\.\d+)\b", source)
    version = versions[len(versions) // 2]
    w = page_window(release_notes, 1500, section=version)
    assert w.text.lstrip().startswith(f"## {version}") and count_tokens(w.text) <= 1500
    following = versions[versions.index(version) + 1]
    assert f"## {following} " not in w.text and w.before and w.after
    assert all(s.section_path.split(" > ")[1].startswith(version + " ") for s in w.sections)
