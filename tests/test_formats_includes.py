"""Include directives (mdBook, pymdownx.snippets) and MDX: small trees written here, and the real
async book (62 {{#include}} directives with anchors and line ranges)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from esrag.chunking.header import HeaderChunker
from esrag.config import Settings
from esrag.formats import parse
from esrag.formats.base import UNRESOLVED, is_unresolved_include
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
    root = _book(
        tmp_path,
        "\n".join(
            [
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
            ]
        ),
    )
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


def test_missing_cycle_and_outside_targets_are_left_out_and_reported(tmp_path):
    root = _book(tmp_path, "{{#include ../examples/nope.rs}}\n\n{{#include ../../secret.txt}}\n\n{{#include a.md}}\n")
    (tmp_path / "secret.txt").write_text("password\n")
    (root / "src" / "a.md").write_text("from a {{#include b.md}}\n")
    (root / "src" / "b.md").write_text("from b {{#include a.md}}\n")
    p = parse(_doc(root, "src/ch.md"))
    text = "\n".join(p.lines)
    assert "{{#include" not in text and "password" not in text  # never a raw directive in the index
    assert "from a from b " in text  # the cycle stops at the repeated file
    assert len(p.problems) == 3 and all(is_unresolved_include(q) for q in p.problems)
    assert p.problems[0].startswith("line 1: {{#include ../examples/nope.rs}}: no such file")
    assert "line 3:" in p.problems[1] and "outside the ingested tree" in p.problems[1]
    assert "line 5:" in p.problems[2] and "include cycle (ch.md -> a.md -> b.md -> a.md)" in p.problems[2]


def test_includes_are_not_resolved_without_a_tree_or_outside_an_mdbook(tmp_path):
    root = _book(tmp_path, "{{#include ../examples/lib.rs}}\n")
    p = parse(Document("src/ch.md", (root / "src" / "ch.md").read_text()))
    assert p.lines[0] == "{{#include ../examples/lib.rs}}"  # what the page shows, but never silently:
    assert p.problems == [
        "line 1: {{#include ../examples/lib.rs}}: looks like a mdBook include, but the file was not read"
        f" from an ingested tree ({UNRESOLVED}; indexed as text)"
    ]
    (root / "book.toml").unlink()
    p = parse(_doc(root, "src/ch.md"))
    assert p.lines[0] == "{{#include ../examples/lib.rs}}" and "no book.toml governs this file" in p.problems[0]


def _mkdocs(tmp_path: Path, page: str) -> Path:
    root = tmp_path / "site"
    (root / "docs").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: s\nmarkdown_extensions:\n  - pymdownx.snippets:\n      base_path: [docs, .]\n")
    (root / "docs" / "snip.md").write_text("one\ntwo\n--8<-- [start:sec]\nin section\n--8<-- [end:sec]\nfive\n")
    (root / "docs" / "page.md").write_text(page)
    return root


def test_pymdownx_snippets_forms(tmp_path):
    root = _mkdocs(
        tmp_path,
        "\n".join(
            [
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
            ]
        ),
    )
    p = parse(_doc(root, "docs/page.md"))
    whole = ["one", "two", "in section", "five"]  # section markers removed (snippets.py parse_snippets)
    assert p.lines[:9] == ["# Page", *whole, "text", "    one", "    two", "in section"]
    assert p.lines[9:11] == ["five", '--8<-- "snip.md"']  # block form, a ';' comment skipped, the escape shown
    assert p.lines[-1] == '--8<-- "snip.md"' and p.problems == [  # the missing one is left out, and named
        f"line 11: --8<-- 'missing.md': no such file missing.md ({UNRESOLVED}; left out of the indexed text)"
    ]
    assert p.line_map[p.lines.index("in section")] == 2 and p.line_map[p.lines.index("text")] == 3


def test_snippet_section_markers_are_not_on_the_page(tmp_path):
    """The page's own markers and a whole file's go (HTML-comment form too); an escaped marker
    shows without its ';'; headers after them keep their own section path."""
    root = _mkdocs(
        tmp_path,
        "\n".join(
            [
                "# Page",
                "<!-- --8<-- [start:s1] -->",
                "mine",
                "<!-- --8<-- [end:s1] -->",
                '--8<-- "part.md"',
                ";--8<-- [start:shown]",
                "## Outside",
                "text",
            ]
        ),
    )
    (root / "docs" / "part.md").write_text("# --8<-- [start:sec]\nkept\n# --8<-- [end:sec]\n")
    p = parse(_doc(root, "docs/page.md"))
    assert p.lines == ["# Page", "mine", "kept", "--8<-- [start:shown]", "## Outside", "text"]
    assert [b.section_path for b in p.blocks if b.kind.name == "HEADER"] == [("Page",), ("Page", "Outside")]


def test_snippets_need_the_extension_in_mkdocs_yml(tmp_path):
    root = _mkdocs(tmp_path, '--8<-- "snip.md"\n')
    (root / "mkdocs.yml").write_text("site_name: s\n")
    p = parse(_doc(root, "docs/page.md"))
    assert p.lines[0] == '--8<-- "snip.md"' and "mkdocs.yml does not enable pymdownx.snippets" in p.problems[0]


def test_mdx_keeps_prose_and_drops_code_lines():
    src = "\n".join(
        [
            "---",
            "title: Tabs",
            "---",
            "import Tabs from '@theme/Tabs';",
            "import {",
            "  TabItem,",
            "} from '@theme/TabItem';",
            "",
            "# Install",
            "",
            "Pick one:",
            "",
            "<Tabs>",
            '<TabItem value="npm" label="npm">',
            "",
            "```bash",
            "import nothing  # inside a fence",
            "<Tabs>",
            "```",
            "",
            "</TabItem>",
            "<Note",
            '  kind="x"',
            "/>",
            "{/* a comment */}",
            "Text with <b>html</b> stays.",
            "</Tabs>",
            "export const meta = {a: 1};",
        ]
    )
    out = blank_code_lines(src).split("\n")
    assert len(out) == len(src.split("\n"))
    assert out[:3] == ["---", "title: Tabs", "---"]
    assert out[3:7] == [""] * 4 and out[12:14] == ["", ""] and out[20:25] == [""] * 5 and out[26:] == ["", ""]
    assert out[16:18] == ["import nothing  # inside a fence", "<Tabs>"] and "Text with <b>html</b> stays." in out
    chunks = HeaderChunker().chunk(Document("page.mdx", src))
    text = "\n".join(c.text for c in chunks)
    assert "import" not in text.replace("import nothing", "") and "TabItem" not in text and "Pick one:" in text
    assert chunks[0].start_line == 1 and chunks[-1].end_line <= 26


def test_mdx_esm_and_expressions_over_blank_lines():
    """MDX's ESM block ends at a blank line only where the code before it is complete
    (micromark-extension-mdxjs-esm), and a ``{/* … */}`` expression spans lines: the
    commented-out header and the Markdown inside an exported template literal (Nextra's
    ``guide/ssg`` and ``blog-theme/start`` pages) are no headers; the text after each stays."""
    src = "\n".join(
        [
            "# Page",
            "{/*",
            "",
            "### Commented out",
            "",
            "*/}",
            "Kept text.",
            "export async function Demo() {",
            "  const mdx = `",
            "",
            "## Inside a literal",
            "",
            "It's code.`",
            "",
            "  return <p>Don't {mdx}</p>",
            "}",
            "",
            "## After",
            "{ not closed",
        ]
    )
    out = blank_code_lines(src).split("\n")
    assert len(out) == 19 and out[1:6] == [""] * 5 and out[6] == "Kept text." and out[7:16] == [""] * 9
    assert out[17:] == ["## After", "{ not closed"]
    doc = Document("page.mdx", src)
    HeaderChunker().chunk(doc)
    assert [h.title for h in doc.headers] == ["Page", "After"]


def test_mdx_template_literal_props_are_code_not_headers():
    """Starlight's ``<Code code={`…`} />`` (biome's getting-started page): the shell comments in
    the literal are code the page shows, not Markdown headers; a ``>`` inside the literal or a
    quoted prop does not end the tag; a stray ``<Word`` followed by a blank line is text."""
    src = "\n".join(
        [
            "# Getting started",
            "<Tabs>",
            '\t<Code frame="none" showLineNumbers={false} code={`',
            "# Format all files",
            "npx @biomejs/biome format --write <files>",
            "# Lint ${'}'} \\` files",
            '`} lang="shell" title="a > b"/>',
            "</Tabs>",
            "## Next",
            "<Stray words here",
            "",
            "text >",
        ]
    )
    out = blank_code_lines(src).split("\n")
    assert len(out) == 12
    assert out[2] == out[6] == "~~~" and out[3:6] == src.split("\n")[3:6]
    assert out[1] == out[7] == "" and out[9:] == ["<Stray words here", "", "text >"]
    doc = Document("page.mdx", src)
    chunks = HeaderChunker().chunk(doc)
    assert [h.title for h in doc.headers] == ["Getting started", "Next"]
    assert "npx @biomejs/biome format --write <files>" in chunks[0].text


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


@pytest.mark.integration
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
    # FastAPI's pages include ../../docs_src, outside their MkDocs project (docs/en): named, then read with --root
    cookies = DATA / "corpora/fastapi-docs/docs/en/docs/advanced/response-cookies.md"
    alone = run(str(cookies), "--json")
    assert alone.returncode == 0 and "tutorial002_py310.py" in alone.stderr and "outside" in alone.stderr
    assert "set_cookie" not in "".join(c["text"] for c in json.loads(alone.stdout))
    rooted = run(str(cookies), "--json", "--root", str(DATA / "corpora/fastapi-docs"))
    assert rooted.returncode == 0 and "outside" not in rooted.stderr, rooted.stderr
    assert 'response.set_cookie(key="fakesession", value="fake-cookie-session-value")' in "".join(
        c["text"] for c in json.loads(rooted.stdout)
    )
    wrong = run(str(cookies), "--root", str(tmp_path))
    assert wrong.returncode != 0 and f"--root {tmp_path}: not a folder holding" in wrong.stderr


# --- FastAPI: mdx_include and markdown-include-variants --------------------------------------

FASTAPI = DATA / "corpora" / "fastapi-docs"
CODE = "".join(f"line{i} = {i}\n" for i in range(1, 11))


def _fastapi_like(tmp_path: Path, page: str, extensions: str = "  mdx_include: null\n  markdown_include_variants: null\n") -> Path:
    """A FastAPI-shaped tree: docs/en/mkdocs.yml (extensions as a mapping, as FastAPI writes them,
    with a !!python/name tag), docs/en/docs/page.md, docs_src/ex/tutorial001_py310.py."""
    root = tmp_path / "fa"
    (root / "docs" / "en" / "docs").mkdir(parents=True)
    (root / "docs_src" / "ex").mkdir(parents=True)
    (root / "docs" / "en" / "mkdocs.yml").write_text(
        "site_name: s\nmarkdown_extensions:\n  pymdownx.superfences:\n    custom_fences:\n    - name: mermaid\n"
        "      format: !!python/name:pymdownx.superfences.fence_code_format ''\n" + extensions
    )
    (root / "docs_src" / "ex" / "tutorial001_py310.py").write_text(CODE)
    (root / "docs_src" / "ex" / "tutorial001.py").write_text("old = 1\n")
    (root / "docs_src" / "ex" / "page.html").write_text("<p>{{ item }}</p>\n")
    (root / "docs" / "en" / "docs" / "page.md").write_text(page)
    return root


def test_include_variants_show_the_preferred_example_in_a_python_fence(tmp_path):
    """markdown_include_variants/_main.py: the file's code in a python fence (title kept); ln[]
    keeps those ranges with upstream's 'omitted' comment lines; hl[] changes nothing; the other
    variants (collapsed on the page) are left out."""
    root = _fastapi_like(
        tmp_path,
        "\n".join(
            [
                "# Page",
                "",
                "{* ../../docs_src/ex/tutorial001_py310.py hl[1, 8:9] *}",
                "",
                '{* ../../docs_src/ex/tutorial001_py310.py ln[3:4,6] hl[3] title["app/main.py"] *}',
                "",
                "after",
            ]
        ),
    )
    p = parse(_doc(root, "docs/en/docs/page.md"))
    assert p.problems == [] and p.dependencies == {(root / "docs_src/ex/tutorial001_py310.py").resolve()}
    first = p.lines.index("```python")
    assert p.lines[first + 1 : first + 12] == [f"line{i} = {i}" for i in range(1, 11)] + ["```"]
    assert "old = 1" not in p.lines  # the py<3.10 variant is in a collapsed box on the page
    second = p.lines.index('```python title="app/main.py"')
    assert p.lines[second + 1 : second + 12] == [
        "# Code above omitted 👆",
        "",
        "line3 = 3",
        "line4 = 4",
        "",
        "# Code here omitted 👈",
        "",
        "line6 = 6",
        "",
        "# Code below omitted 👇",
        "```",
    ]
    assert {p.line_map[i] for i in range(first, first + 12)} == {3} and p.line_map[p.lines.index("after")] == 7
    code = [b for b in p.blocks if b.kind.name == "CODE"]
    assert len(code) == 2 and "line8 = 8" in "\n".join(p.lines[code[0].start_line - 1 : code[0].end_line])


def test_mdx_include_forms(tmp_path):
    """mdx_include.py: {!path!} anywhere on a line (relative to base_path, default the MkDocs
    root), {!> …!} indents every line, [ln:…] rcslice rows, \\{!…!} escapes; a missing file is
    left out (truncate_on_failure) and named."""
    root = _fastapi_like(
        tmp_path,
        "\n".join(
            [
                "```jinja",
                "{!../../docs_src/ex/page.html!}",
                "```",
                "    {!> ../../docs_src/ex/tutorial001_py310.py [ln:2-3,10-]!}",
                "see \\{!not/included.md!} here",
                "{!../../docs_src/ex/missing.py!}",
                "end",
            ]
        ),
    )
    p = parse(_doc(root, "docs/en/docs/page.md"))
    # mdx_include reads a file as (text + "\n").splitlines(): a final newline gives a last empty line
    assert p.lines[:4] == ["```jinja", "<p>{{ item }}</p>", "", "```"]
    assert p.lines[4:10] == ["    line2 = 2", "    line3 = 3", "    ", "    ", "    line10 = 10", "    "]
    assert "see {!not/included.md!} here" in p.lines and "end" in p.lines
    assert not any("missing.py" in ln for ln in p.lines)
    assert len(p.problems) == 1 and p.problems[0].startswith("line 6: {!../../docs_src/ex/missing.py!}: no such file")
    assert is_unresolved_include(p.problems[0]) and "left out of the indexed text" in p.problems[0]


def test_a_variants_include_that_fails_is_left_out_and_named(tmp_path):
    root = _fastapi_like(
        tmp_path,
        "{* ../../docs_src/ex/nope_py310.py hl[1] *}\n\n{* ../../../outside.py *}\n\n"
        "{* ../../docs_src/ex/tutorial001_py310.py ln[a:b] *}\ntext\n",
    )
    (tmp_path / "outside.py").write_text("secret = 1\n")
    p = parse(_doc(root, "docs/en/docs/page.md"))
    assert p.lines == ["", "", "text", ""]
    assert [q.split(":")[0] for q in p.problems] == ["line 1", "line 3", "line 5"]
    assert "no such file" in p.problems[0] and "outside the ingested tree" in p.problems[1] and "ln[a:b]" in p.problems[2]


def test_lookalikes_of_forms_not_enabled_are_named_not_silent(tmp_path):
    """With neither extension in mkdocs.yml the lines stay (the page shows them) and each is named;
    Blade's {!! $x !!} and prose with braces are not taken for includes."""
    root = _fastapi_like(
        tmp_path,
        "\n".join(
            [
                "{* ../../docs_src/ex/tutorial001_py310.py hl[1] *}",
                "{!../../docs_src/ex/page.html!}",
                "Hello, {!! $name !!}.",
                "    {!! old('name') !!}",
                "A set {*a, b*} and {!x!} in prose.",
                "",
            ]
        ),
        extensions="",
    )
    p = parse(_doc(root, "docs/en/docs/page.md"))
    assert p.lines[0].startswith("{*") and p.lines[1].startswith("{!")
    assert len(p.problems) == 2
    assert "line 1:" in p.problems[0] and "markdown_include_variants include, but mkdocs.yml does not enable" in p.problems[0]
    assert "line 2:" in p.problems[1] and "mdx_include" in p.problems[1] and "indexed as text" in p.problems[1]


def test_fastapi_docs_every_example_is_in_its_pages_chunks():
    """The real FastAPI docs: 440 {* … *} and 6 {!…!} lines in 90 pages. Every one resolves but
    the include of FastAPI's own source (fastapi/openapi/docs.py, not in the corpus), which is named;
    no chunk holds a raw include line; a page's example code is in its chunks."""
    settings = Settings()
    root = FASTAPI
    files = discover(root, settings.ingest.include, settings.ingest.exclude)
    chunker = HeaderChunker.from_settings(settings.chunking)
    variants = mdx = pages = 0
    problems: list[tuple[str, str]] = []
    for src in files:
        if not src.rel.endswith(".md"):
            continue
        doc = load_document(src, "fastapi", 5_000_000)
        raw_lines = doc.text.split("\n")
        n_variants = sum(bool(re.match(r"^\{\*.*\*\}$", ln)) for ln in raw_lines)
        variants += n_variants
        mdx += sum(ln.count("{!") for ln in raw_lines)
        pages += n_variants > 0
        doc.source, doc.root = str(src.path), str(src.root)
        chunks = chunker.chunk(doc)
        problems += [(src.rel, q) for q in doc.problems]
        for c in chunks:
            assert not re.search(r"^\{\*.*\*\}$|\{!.*!\}", c.text, re.MULTILINE), (src.rel, c.text[:200])
    assert (variants, mdx, pages) == (440, 6, 90)
    assert problems == [
        (
            "docs/en/docs/how-to/configure-swagger-ui.md",
            "line 43: {* ../../fastapi/openapi/docs.py ln[9:24] hl[18:24] *}: no such file "
            f"../../fastapi/openapi/docs.py ({UNRESOLVED}; left out of the indexed text)",
        )
    ]
    page = FASTAPI / "docs/en/docs/advanced/response-cookies.md"
    chunks = chunker.chunk(_doc(FASTAPI, str(page.relative_to(FASTAPI))))
    assert any("response.set_cookie(" in c.text and "```python" in c.text for c in chunks)
