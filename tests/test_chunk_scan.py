"""The line scanner's top-level blocks are markdown-it-py's, exactly (issue 17: the fast path
must not change a single block): on every Markdown file of the four real corpora, on tricky
CommonMark cases written out, and on random documents made of lines that start every kind of
block (lists, lazy continuation, setext underlines, tables, HTML blocks 1-7, fences in lists,
tabs, link reference definitions)."""

from __future__ import annotations

import random

import pytest

from esrag.formats.markdown_blocks import _block_parser, _region_parser, normalize
from esrag.formats.markdown_scan import markdown_it_blocks, top_level_blocks
from paths import DATA

MD = _block_parser()
FILES = sorted(p for p in (DATA / "corpora").rglob("*") if p.suffix.lower() in (".md", ".mdx", ".markdown"))


def _both(text: str) -> tuple[tuple[list, dict], tuple[list, dict]]:
    ref_env: dict = {}
    fast_env: dict = {}
    ref = markdown_it_blocks(MD, text, ref_env)
    fast = top_level_blocks(MD, text, fast_env, _region_parser())
    return (ref, ref_env), (fast, fast_env)


def test_the_corpora_are_there():
    assert len(FILES) > 200 and any("laravel-docs" in str(p) for p in FILES)


@pytest.mark.parametrize("corpus", ["laravel-docs", "pydantic-docs", "async-book", "requests-docs"])
def test_same_blocks_and_references_on_every_corpus_file(corpus):
    files = [p for p in FILES if f"/{corpus}/" in str(p)]
    for path in files:
        text = normalize(path.read_text(encoding="utf-8"))
        ref, fast = _both(text)
        assert fast == ref, path
    if corpus == "laravel-docs":
        assert len(files) == 98


CASES = [
    "",
    "\n",
    "   ",
    "a",
    "a\n",
    "# h",
    "#h",
    "####### h",
    "# h #",
    "# h#",
    "#\th",
    "# ##",
    "###",
    "para\n# h\npara",
    "para\n=== \nx",
    "para\n---\nx",
    "para\n  ---\nx",
    "para\n    ---",
    "a\n-b\n",
    "a\n*b*",
    "a\n**b**\n",
    "a\n* b",
    "a\n+ b",
    "a\n- b",
    "a\n-\n",
    "a\n1. b",
    "a\n2) b",
    "a\n12345678901. b",
    "2024 was\n",
    "1.5 million\n",
    "a\n> q",
    "> q\nlazy\n\nx",
    "> q\n\n> r",
    "> [x]: /u\n",
    ">q\n>\n\nz",
    "- a\n- b\n\nx",
    "- a\n\n  b\n\nx",
    "- a\n  - b\n- c\n\n# h",
    "- a\nlazy\n\nx",
    "- a\n\n- b\n\nx",
    "- a\n* b\n\nx",
    "- - -\n",
    "* * *\n",
    "___\n",
    "_a_\n",
    "- a\n\n    code\n\nx",
    "- ```\n  code\n\nx\n```\n",
    "```\ncode\n\nx\n",
    "```\ncode\n```\n",
    "``` a`b\n",
    "~~~ a`b\nx\n~~~",
    "````\n```\n````\n",
    "```\n  ```\nx",
    "```\n    ```\nx\n```",
    "~~~\n~~~~\n",
    "``\nx",
    "    code\n\n    more\nx",
    "    code\n  \n\tmore\n",
    "\tcode\n",
    "  a\n",
    "   # h\n",
    "para\n    lazy\nmore",
    "<div>\nx\n\ny",
    "<div>\nx\n</div>\n\ny",
    '<a name="x"></a>\n## H',
    '<a name="x"></a>\npara',
    "<!-- c\n\nstill\n-->\nafter",
    "<!-- c -->\nx",
    "<script>\n\n</script>\nx",
    "<pre>\n\nx",
    "<?php\n\n?>\n",
    "<!DOCTYPE html>\nx",
    "<![CDATA[\n\n]]>\n",
    "<x-alert>\nx\n\ny",
    "para\n<div>\nx",
    "para\n<span>\nx",
    "para\n<!-- c -->\n",
    "</div>\n\nx",
    "<b>bold</b> text\nmore",
    "a | b\n--|--\n1 | 2\n\nx",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "a|b\n-|-\n",
    "para\na | b\n--|--\n",
    "| a |\n| - |\n\n| b |",
    "a\n:--\n",
    "a\n|\n",
    "[x]: /url\n\npara [x]",
    "[x]:\n/url\n",
    "[x]: /url 'title\n\nno'\n",
    "[a\nb]: /u\n",
    "[not a ref] text\n",
    "[x](y) text\n",
    "para\n[x]: /u\n",
    "---\ntitle: x\n---\nbody",
    "---\na: 1\n\nb: 2\n---\n",
    "-- x",
    "=== x",
    "= x",
    "==\n",
    "a\n==\n",
    "a\n= =\n",
    "a\n\n===\n",
    "\ta\n",
    "a\n\tb",
    "a\n\t# b",
    "# a\n\tcode",
    "x\u00a0\n",
    "\u00a0# no",
    "a\x0cb\n",
    "a\r\nb",
    "a\x00b",
    "## [x][y]\n\n[y]: /u",
    "- a\n\n  ```\n  x\n\n  y\n  ```\n\nz",
    "1. a\n\n2. b\n\nz",
    "- a\n\n\n\nz",
    "> a\n```\nx\n```",
    "- a\n```\nx\n```",
    "text\n```\ncode",
    "text\n~~~\n",
    "`code` span\n",
    "```js\nx\n```\n\n<div>\n\nz",
]


@pytest.mark.parametrize("text", CASES)
def test_same_blocks_on_tricky_cases(text):
    ref, fast = _both(text)
    assert fast == ref


LINES = [
    "",
    "",
    "",
    "text here",
    "More text.",
    "# Head",
    "## Sub",
    "### x #",
    "#no",
    "- item",
    "- [link](#x)",
    "* star",
    "+ plus",
    "1. one",
    "2) two",
    "    - nested",
    "  cont",
    "    code",
    "\tcode",
    "   three",
    "> quote",
    "> [!NOTE]",
    ">",
    "```",
    "```php",
    "~~~",
    "````",
    "  ```",
    "---",
    "===",
    "***",
    "___",
    "| a | b |",
    "|---|---|",
    "a | b",
    "--|--",
    ":-:",
    "<div>",
    "</div>",
    '<a name="x"></a>',
    "<!-- c",
    "-->",
    "<script>",
    "</script>",
    "<x-card>",
    "<?php",
    "?>",
    "[x]: /url",
    "[y]:",
    "/url",
    "[x] text",
    "**bold**",
    "_em_",
    "-x",
    "=x",
    "2024 here",
    "1.5 x",
    "{{ $x }}",
    "@if",
    "\u00a0nbsp",
    "x\ty",
    "text  ",
    "# h {#id}",
    "## `code`",
    "[a\\]: b",
]


def test_same_blocks_on_random_documents():
    rng = random.Random(17)
    for _ in range(4000):
        text = "\n".join(rng.choice(LINES) for _ in range(rng.randint(1, 14)))
        if rng.random() < 0.3:
            text += "\n"
        ref, fast = _both(text)
        assert fast == ref, repr(text)


TABLE_LINES = [
    "",
    "",
    "| a | b |",
    "| a | b |",
    "|---|---|",
    "|:--|--:|",
    "| :-: | - |",
    "| x |",
    "|---|",
    "| - |",
    "|",
    "||",
    "| a | b | c |",
    "|---|---|---|",
    "a | b",
    "a|b",
    "--|--",
    "-|-",
    "- | -",
    ":-",
    "| a \\| b |",
    "| `a|b` | c |",
    "|--- | ---|  ",
    "| a |  ",
    "   |---|---|",
    "    |---|---|",
    "\t|---|",
    " | a | b |",
    "|-x-|",
    "| --- |--- ",
    "-- | --",
    "# h | x",
    "> | q",
    "- | item",
    "text",
    "<div>",
    "```",
    "    code",
    "|\u00a0",
    "\u00a0",
    "| a |\t",
    "|---||---|",
    "|:-:|:-:|",
]


def test_same_blocks_on_random_tables():
    """Header rows, delimiter rows (valid, short, indented, with other characters) and body rows
    with and without a leading pipe, escaped pipes, terminators after the rows."""
    import esrag.formats.markdown_scan as scan

    rng = random.Random(23)
    taken = 0
    for _ in range(4000):
        text = "\n".join(rng.choice(TABLE_LINES) for _ in range(rng.randint(2, 10)))
        ref, fast = _both(text)
        assert fast == ref, repr(text)
        scanner = scan._Scanner(MD, _region_parser(), text, {})
        taken += sum(scanner._table(i) > 0 for i in range(scanner.n - 1) if scanner._delim_after(i))
    assert taken > 300  # the fast path read many of them


def test_the_fast_path_does_most_of_the_laravel_docs(monkeypatch):
    """Not a correctness test: the line scanner, not markdown-it, reads > 99 % of the lines."""
    import esrag.formats.markdown_scan as scan

    handed: list[int] = []
    original = scan._Scanner._fallback

    def counting(self, a, i):
        b = original(self, a, i)
        handed.append(b - a)
        return b

    monkeypatch.setattr(scan._Scanner, "_fallback", counting)
    total = 0
    for path in FILES:
        if "/laravel-docs/" in str(path):
            text = normalize(path.read_text(encoding="utf-8"))
            total += text.count("\n") + 1
            top_level_blocks(MD, text, {}, _region_parser())
    assert sum(handed) < 0.01 * total
