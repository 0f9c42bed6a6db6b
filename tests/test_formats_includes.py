"""Include directives (mdBook, pymdownx.snippets) and MDX: small trees written here, and the real
async book (62 {{#include}} directives with anchors and line ranges)."""

from __future__ import annotations

import re
from pathlib import Path

from esrag.chunking.header import HeaderChunker
from esrag.config import Settings
from esrag.formats import parse
from esrag.formats.mdx import blank_code_lines
from esrag.model import Document
from esrag.sources import discover, load_document

from paths import DATA

ASYNC_BOOK = DATA / "corpora" / "async-book"
RUST = """use std::io;
// ANCHOR: main
fn main() {
    # let hidden = 1;
    #[derive(Debug)]
    println!("visible");
    // ANCHOR: inner
    let x = 2;
    // ANCHOR_END: inner
}
// ANCHOR_END: main
fn tail() {}
"""


def _doc(root: Path, rel: str) -> Document:
    return Document(rel, (root / rel).read_text(), source=str(root / rel), root=str(root))


def _book(tmp_path: Path, chapter: str) -> Path:
    root = tmp_path / "book"
    (root / "src").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "book.toml").write_text("[book]\ntitle = 't'\n")
    (root / "examples" / "lib.rs").write_text(RUST)
    (root / "src" / "ch.md").write_text(chapter)
    return root


def test_mdbook_include_forms_follow_links_rs(tmp_path):
    root = _book(tmp_path, "\n".join([
        "# Ch",
        "```rust",
        "{{#include ../examples/lib.rs:main}}",
        "```",
        "A: {{#include ../examples/lib.rs:1}} B: {{#include ../examples/lib.rs:2:3}}",
        "{{#include ../examples/lib.rs:12:}}",
        "{{#include ../examples/lib.rs::1}}",
        "{{ #include ../examples/lib.rs:inner }}",
        "\\{{#include ../examples/lib.rs}}",
        "tail line",
    ]))
    p = parse(_doc(root, "src/ch.md"))
    text = "\n".join(p.lines)
    # anchored text drops every marker line; a line range shows its lines as they are (take_lines)
    assert 'fn main() {\n    # let hidden = 1;\n    #[derive(Debug)]\n    println!("visible");\n    let x = 2;\n}' in text
    assert "A: use std::io; B: // ANCHOR: main\nfn main() {\n" in text  # :1 is one line, :2:3 lines 2-3
    assert "fn tail() {}" in text and "{{#include ../examples/lib.rs}}" in text  # the escape shows literally
    assert p.problems == [] and p.dependencies == {(root / "examples" / "lib.rs").resolve()}
    # every included line maps to its directive's line; the lines after keep their own numbers
    assert {p.line_map[i] for i, ln in enumerate(p.lines) if "visible" in ln} == {3}
    assert p.line_map[p.lines.index("tail line")] == 10


def test_playground_and_title(tmp_path):
    root = _book(tmp_path, "{{#title A better title}}\n# Ch\n{{#playground ../examples/lib.rs editable}}\n")
    p = parse(_doc(root, "src/ch.md"))
    assert p.lines[0] == "" and p.lines[2] == "```rust" and p.lines[3] == "use std::io;" and p.lines[-2:] == ["```", ""]


def test_rustdoc_include_shows_only_the_selected_visible_lines(tmp_path):
    root = _book(tmp_path, "```rust\n{{#rustdoc_include ../examples/lib.rs:main}}\n```\n")
    text = "\n".join(parse(_doc(root, "src/ch.md")).lines)
    assert 'println!("visible");' in text and "#[derive(Debug)]" in text
    assert "hidden" not in text and "use std::io" not in text and "fn tail" not in text and "ANCHOR" not in text


def test_missing_cycle_and_outside_targets_are_kept_as_text_and_reported(tmp_path):
    root = _book(tmp_path, "{{#include ../examples/nope.rs}}\n\n{{#include ../../secret.txt}}\n\n{{#include a.md}}\n")
    (tmp_path / "secret.txt").write_text("password\n")
    (root / "src" / "a.md").write_text("from a {{#include b.md}}\n")
    (root / "src" / "b.md").write_text("from b {{#include a.md}}\n")
    p = parse(_doc(root, "src/ch.md"))
    text = "\n".join(p.lines)
    assert "{{#include ../examples/nope.rs}}" in text and "password" not in text
    assert "from a from b {{#include a.md}}" in text  # the cycle stops at the repeated file
    assert len(p.problems) == 3
    assert p.problems[0].startswith("line 1: {{#include ../examples/nope.rs}}: no such file")
    assert "line 3:" in p.problems[1] and "outside the ingested tree" in p.problems[1]
    assert "line 5:" in p.problems[2] and "include cycle (ch.md -> a.md -> b.md -> a.md)" in p.problems[2]


def test_includes_are_not_resolved_without_a_tree_or_outside_an_mdbook(tmp_path):
    root = _book(tmp_path, "{{#include ../examples/lib.rs}}\n")
    assert parse(Document("src/ch.md", (root / "src" / "ch.md").read_text())).lines[0] == "{{#include ../examples/lib.rs}}"
    (root / "book.toml").unlink()
    assert parse(_doc(root, "src/ch.md")).lines[0] == "{{#include ../examples/lib.rs}}"


def _mkdocs(tmp_path: Path, page: str) -> Path:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: s\nmarkdown_extensions:\n  - pymdownx.snippets:\n      base_path: [docs, .]\n")
    (root / "docs" / "snip.md").write_text("one\ntwo\n--8<-- [start:sec]\nin section\n--8<-- [end:sec]\nfive\n")
    (root / "docs" / "page.md").write_text(page)
    return root


def test_pymdownx_snippets_forms(tmp_path):
    root = _mkdocs(tmp_path, "\n".join([
        "# Page",
        '--8<-- "snip.md"',
        "text",
        "    --8<-- 'snip.md:1:2'",
        '--8<-- "snip.md:sec"',
        "-8<-",
        "snip.md:6",
        "; snip.md",
        "-8<-",
        ';--8<-- "snip.md"',
        '--8<-- "missing.md"',
    ]))
    p = parse(_doc(root, "docs/page.md"))
    whole = ["one", "two", "in section", "five"]  # section markers removed (snippets.py parse_snippets)
    assert p.lines[:9] == ["# Page", *whole, "text", "    one", "    two", "in section"]
    assert p.lines[9:11] == ["five", '--8<-- "snip.md"']  # block form, a ';' comment skipped, the escape shown
    assert p.lines[-1] == '--8<-- "missing.md"' and p.problems == ["line 11: --8<-- 'missing.md': no such file missing.md"]
    assert p.line_map[p.lines.index("in section")] == 2 and p.line_map[p.lines.index("text")] == 3


def test_snippet_section_markers_are_not_on_the_page(tmp_path):
    """The page's own markers and a whole file's go (HTML-comment form too); an escaped marker
    shows without its ';'; headers after them keep their own section path."""
    root = _mkdocs(tmp_path, "\n".join([
        "# Page", "<!-- --8<-- [start:s1] -->", "mine", "<!-- --8<-- [end:s1] -->", '--8<-- "part.md"',
        ";--8<-- [start:shown]", "## Outside", "text",
    ]))
    (root / "docs" / "part.md").write_text("# --8<-- [start:sec]\nkept\n# --8<-- [end:sec]\n")
    p = parse(_doc(root, "docs/page.md"))
    assert p.lines == ["# Page", "mine", "kept", "--8<-- [start:shown]", "## Outside", "text"]
    assert [b.section_path for b in p.blocks if b.kind.name == "HEADER"] == [("Page",), ("Page", "Outside")]


def test_snippets_need_the_extension_in_mkdocs_yml(tmp_path):
    root = _mkdocs(tmp_path, '--8<-- "snip.md"\n')
    (root / "mkdocs.yml").write_text("site_name: s\n")
    assert parse(_doc(root, "docs/page.md")).lines[0] == '--8<-- "snip.md"'


def test_mdx_keeps_prose_and_drops_code_lines():
    src = "\n".join([
        "---", "title: Tabs", "---", "import Tabs from '@theme/Tabs';", "import {", "  TabItem,", "} from '@theme/TabItem';",
        "", "# Install", "", "Pick one:", "", "<Tabs>", '<TabItem value="npm" label="npm">', "", "```bash",
        "import nothing  # inside a fence", "<Tabs>", "```", "", "</TabItem>", "<Note", '  kind="x"', "/>", "{/* a comment */}",
        "Text with <b>html</b> stays.", "</Tabs>", "export const meta = {a: 1};",
    ])
    out = blank_code_lines(src).split("\n")
    assert len(out) == len(src.split("\n"))
    assert out[:3] == ["---", "title: Tabs", "---"]
    assert out[3:7] == [""] * 4 and out[12:14] == ["", ""] and out[20:25] == [""] * 5 and out[26:] == ["", ""]
    assert out[16:18] == ["import nothing  # inside a fence", "<Tabs>"] and "Text with <b>html</b> stays." in out
    chunks = HeaderChunker().chunk(Document("page.mdx", src))
    text = "\n".join(c.text for c in chunks)
    assert "import" not in text.replace("import nothing", "") and "TabItem" not in text and "Pick one:" in text
    assert chunks[0].start_line == 1 and chunks[-1].end_line <= 26


def test_async_book_every_include_resolves_and_spans_stay_on_the_page():
    settings = Settings()
    files = discover(ASYNC_BOOK, settings.ingest.include, settings.ingest.exclude)
    chunker = HeaderChunker.from_settings(settings.chunking)
    directives = resolved = 0
    for src in files:
        doc = load_document(src, "async", 5_000_000)
        raw = doc.text
        directives += len(re.findall(r"\{\{#(?:rustdoc_)?include", raw))
        doc.source, doc.root = str(src.path), str(src.root)
        chunks = chunker.chunk(doc)
        assert doc.problems == [], (src.rel, doc.problems)
        n_lines = raw.count("\n") + 1
        for c in chunks:
            assert "{{#include" not in c.text and "{{#rustdoc_include" not in c.text and "ANCHOR" not in c.text
            assert 1 <= c.start_line <= c.end_line <= n_lines
        resolved += len(parse(doc).dependencies) > 0
    assert directives == 62 and resolved == 19  # 62 directives in 19 chapters
    # a line that exists only in an included file is in its chapter's chunk, at the directive's line
    doc = _doc(ASYNC_BOOK, "src/01_getting_started/04_async_await_primer.md")
    hit = [c for c in chunker.chunk(doc) if "block_on(future); // `future` is run" in c.text]
    assert len(hit) == 1 and hit[0].start_line <= 26 <= hit[0].end_line
    assert "block_on(future)" not in doc.text


def test_esrag_chunk_shows_the_resolved_text_of_a_chapter_and_an_rst_page(tmp_path):
    import json
    import os
    import subprocess
    import sys

    esrag = str(Path(sys.executable).with_name("esrag"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESRAG_")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([esrag, "chunk", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    chapter = ASYNC_BOOK / "src/01_getting_started/04_async_await_primer.md"
    chunks = json.loads(run(str(chapter), "--json").stdout)
    text = "\n".join(c["text"] for c in chunks)
    assert "block_on(future); // `future` is run" in text and "{{#include" not in text
    shown = run(str(chapter), "--text")
    assert shown.returncode == 0 and "fn main() {" in shown.stdout and "lines 25-27" in shown.stdout
    rst = json.loads(run(str(DATA / "corpora/requests-docs/docs/user/quickstart.rst"), "--json").stdout)
    assert rst[0]["section_path"] == "Quickstart" and rst[0]["start_line"] == 3  # after the `.. _quickstart:` label
    assert any(c["section_path"] == "Quickstart > Make a Request" for c in rst)
    broken = tmp_path / "page.md"
    (tmp_path / "book.toml").write_text("[book]\n")
    broken.write_text("# P\n\n{{#include missing.rs}}\n")
    proc = run(str(broken))
    assert proc.returncode == 0 and "page.md: line 3: {{#include missing.rs}}: no such file missing.rs" in proc.stderr
