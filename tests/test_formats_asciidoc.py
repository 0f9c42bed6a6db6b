"""The AsciiDoc reader: sections and Asciidoctor ids, delimited blocks, includes with Antora
resource ids, conditionals and attributes, on a small page and on the asciidoctor docs corpus."""

from __future__ import annotations

from pathlib import Path

from esrag.formats import parse
from esrag.formats.asciidoc import section_id
from esrag.model import BlockKind, Document
from paths import DATA

CORPUS = DATA / "corpora" / "antora-asciidoctor"
PAGE = """= Page Title
Author Name
:idprefix:
:idseparator: -
:product: Widget

Intro with xref:other.adoc#x[the other page] and https://example.org[a link^].

== First Section

NOTE: An admonition.

[source,ruby]
----
include::example$ex.rb[tag=main]
----

include::partial$p.adoc[]

[#custom-id]
== Second {product}

* one
* two

== First Section

ifdef::product[]
Defined.
endif::[]
ifndef::product[]
Undefined.
endif::[]

////
comment block
////

|===
|A |B

|1 |2
|===
"""


def _tree(tmp_path: Path) -> Document:
    mod = tmp_path / "docs" / "modules" / "ROOT"
    for sub in ("pages", "partials", "examples"):
        (mod / sub).mkdir(parents=True)
    (mod / "partials" / "p.adoc").write_text("Partial text with {product}.\n")
    (mod / "examples" / "ex.rb").write_text("# tag::main[]\nputs 1\n# end::main[]\nputs 2\n")
    (mod / "pages" / "a.adoc").write_text(PAGE)
    rel = "docs/modules/ROOT/pages/a.adoc"
    return Document(rel, PAGE, source=str(tmp_path / rel), root=str(tmp_path))


def test_page_blocks_ids_includes_and_lines(tmp_path):
    p = parse(_tree(tmp_path))
    heads = [(b.level, b.anchor, b.section_path) for b in p.blocks if b.kind is BlockKind.HEADER]
    assert heads == [
        (1, "", ("Page Title",)),
        (2, "first-section", ("Page Title", "First Section")),  # :idprefix: empty, :idseparator: -
        (2, "custom-id", ("Page Title", "Second Widget")),
        (2, "first-section-2", ("Page Title", "First Section")),
    ]
    text = "\n".join(p.lines)
    assert "Intro with the other page and a link." in text and "Author Name" not in text
    assert "```ruby\nputs 1\n```" in text and "puts 2" not in text  # tag=main of example$ex.rb
    assert "Partial text with Widget." in text  # partial$, attribute from the page
    assert "Defined." in text and "Undefined." not in text and "comment block" not in text
    assert "| A | B |\n|---|---|\n| 1 | 2 |" in text
    code = next(b for b in p.blocks if b.kind is BlockKind.CODE)
    assert p.line_map[code.start_line - 1] == 14  # the ---- line; the included line maps to its include
    assert p.problems == [] and len(p.dependencies) == 2


def test_unresolved_include_is_named(tmp_path):
    doc = _tree(tmp_path)
    doc.text = "= T\n\ninclude::partial$missing.adoc[]\n"
    p = parse(doc)
    assert len(p.problems) == 1 and "include not resolved" in p.problems[0] and "missing.adoc" in p.problems[0]


def test_section_id_rule():
    taken: set[str] = set()
    assert section_id("Start with `require`", {}, taken) == "_start_with_require"
    assert section_id("Start with `require`", {}, taken) == "_start_with_require_2"
    assert section_id("A & B: c.d", {}, set()) == "_a_b_c_d"
    assert section_id("Hello World", {"idprefix": "", "idseparator": "-"}, set()) == "hello-world"
    assert section_id("Hello World", {"idseparator": ""}, set()) == "_helloworld"


def test_sectids_off_gives_no_ids():
    p = parse(Document("a.adoc", "= T\n:sectids!:\n\n== A\n\ntext\n"))
    assert [b.anchor for b in p.blocks if b.kind is BlockKind.HEADER] == ["", ""]


def test_corpus_pages_parse_with_sections():
    n = heads = 0
    for f in sorted(CORPUS.glob("docs/modules/*/pages/**/*.adoc")):
        rel = str(f.relative_to(CORPUS))
        p = parse(Document(rel, f.read_text(), source=str(f), root=str(CORPUS)))
        n += 1
        heads += sum(b.kind is BlockKind.HEADER for b in p.blocks)
        prose = [b.text for b in p.blocks if b.kind is not BlockKind.CODE]
        assert not any(t.startswith(("[source", "----", "ifdef::", "include::", ":leveloffset")) for t in prose), rel
    assert n == 78 and heads > 400
