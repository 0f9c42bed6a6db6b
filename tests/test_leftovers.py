"""Clean Markdown from every format (issue 38): no markup a reader of the rendered page never
sees is left in the chunk text of any shared corpus (tests/leftovers.py counts it), and the
rules that remove it, one by one: Sphinx roles as their rendered text, object signatures as
code, literal blocks fenced with their language, ``instead.::`` without its stray colon, HTML
anchors gone (still the section's anchor), component tags gone."""

from __future__ import annotations

from collections import Counter

import pytest

from chunk_snapshot import records
from esrag.formats import parse
from esrag.formats.markdown_blocks import drop_anchor_blocks, parse_blocks
from esrag.formats.mdx import drop_component_tags
from esrag.formats.rst import role_title
from esrag.model import BlockKind, Document
from leftovers import counts
from paths import DATA

CORPORA = sorted(p.name for p in (DATA / "corpora").iterdir() if p.is_dir())


def _rst(text: str, options: dict | None = None) -> str:
    doc = Document("page.rst", text)
    doc.format_options = options or {}
    return "\n".join(parse(doc).lines)


@pytest.mark.integration
@pytest.mark.parametrize("corpus", CORPORA)
def test_no_leftover_markup_in_any_shared_corpus(corpus):
    found: Counter = Counter()
    where: dict[str, str] = {}
    for rel, recs in records(corpus).items():
        for rec in recs:
            c = counts(rec[1], rst=rel.endswith((".rst", ".txt")))
            found += c
            for kind in c:
                where.setdefault(kind, rel)
    assert len(CORPORA) == 15 and not found, f"{corpus}: {dict(found)} (first in {where})"


def test_the_counter_finds_each_kind_outside_code_only():
    text = 'See :class:`Flask` and .Request.\n.. note::\nUse it instead.:\n<a name="x"></a>\n{{< new-in 0.1 >}} <Tip>t</Tip>\n```\nx\n```'
    assert counts(text, rst=True) == Counter(role=1, role_dot=1, directive=1, literal_colon=1, anchor=1, shortcode=1, unlabelled_fence=1)
    assert counts(text) == Counter(role=1, directive=1, anchor=1, shortcode=1, component=2)  # .NET / etc.: are Markdown text
    assert counts("`:class:`x`` and\n```html\n<a name=x></a>\n   ```\n") == Counter()  # code is code


def test_role_titles_as_sphinx_shows_them():
    assert role_title("~.UniqueConstraint") == "UniqueConstraint"
    assert role_title(".Flask.config") == "Flask.config" and role_title("~flask.Flask.config") == "config"
    assert role_title("Response <requests.Response>") == "Response" and role_title("!foo") == "foo"


def test_rst_roles_code_where_sphinx_shows_code_text_elsewhere():
    text = _rst(
        "A :class:`~.UniqueConstraint`, :meth:`.Session.get`, :file:`a.cfg`, :ref:`the guide <guide>`, :term:`ORM`, ``x``, **b**.\n"
    )
    assert text == "A `UniqueConstraint`, `Session.get()`, `a.cfg`, the guide, ORM, `x`, **b**."


def test_function_and_method_roles_end_with_parentheses_unless_titled():
    """Sphinx's ``func``/``meth`` roles (``fix_parens=True``) add ``()`` once; an explicit title
    is shown as written; attributes and classes get none."""
    text = _rst(":func:`~markupsafe.escape`, :py:meth:`run()`, :meth:`the route <Flask.route>`, :attr:`Flask.config`.\n")
    assert text == "`escape()`, `run()`, `the route`, `Flask.config`."


def test_rst_signatures_as_code_and_literal_blocks_fenced():
    text = _rst(
        ".. function:: foo(a, b)\n\n   Does foo.\n\n.. class:: Bar(x)\n\n.. autofunction:: pkg.baz\n\n"
        "Use this instead.::\n\n    x = 1\n\n.. highlight:: console\n\n::\n\n    $ run\n\n"
        ".. code-block:: pycon\n\n    >>> 1\n"
    )
    assert "`foo(a, b)`\n\nDoes foo." in text and "`class Bar(x)`" in text and "`pkg.baz`" in text
    assert "Use this instead.\n\n```python\nx = 1\n```" in text  # docutils leaves "instead.:"
    assert "```console\n$ run\n```" in text and "```pycon\n>>> 1\n```" in text
    assert "```toml\nx = 1\n```" in _rst("Example::\n\n    x = 1\n", {"highlight_language": "toml"})


def test_html_anchors_leave_the_text_and_stay_the_anchor():
    text = 'Intro.\n\n<a name="old"></a>\n<a name="install"></a>\n## Install\n\nBody.\n\n### More <a name="more"></a>\n'
    lines, line_map, blocks = drop_anchor_blocks(text.split("\n"), list(range(1, 11)), parse_blocks(text))
    assert "\n".join(lines) == "Intro.\n\n## Install\n\nBody.\n\n### More\n"
    heads = [(b.text, b.anchor, b.alt_anchors, line_map[b.start_line - 1]) for b in blocks if b.kind is BlockKind.HEADER]
    assert heads == [("## Install", "install", ("old",), 5), ("### More", "more", (), 9)]


def test_component_tags_leave_their_text():
    text = '<Steps>\nA <Tooltip tip="t">word</Tooltip> and <Badge type="tip" text="beta" />.\n`<Tabs>` stays, <div> too.\n```\n<Tab>\n```\n    <Code>\n</Steps>'
    assert drop_component_tags(text) == "\nA word and beta.\n`<Tabs>` stays, <div> too.\n```\n<Tab>\n```\n    <Code>\n"
    assert drop_component_tags("    **[<NumberOfRules/> rules](/linter/)**", mdx=True) == "    **[ rules](/linter/)**"
    assert drop_component_tags('<Listing caption="Uses `match`">') == ""
    # a heading keeps no component text: its id is made without it (VitePress: #mpa-mode)
    assert (
        drop_component_tags('## MPA Mode <Badge type="warning" text="experimental" />\nA <Badge text="beta"/>.') == "## MPA Mode\nA beta."
    )
