"""Source formats -> the text a reader sees, as blocks with a map back to source lines.

:func:`parse` turns one :class:`~esrag.model.Document` into a :class:`Parsed`:

* Markdown (``.md``, ``.markdown``) and MDX (``.mdx``, :mod:`esrag.formats.mdx`, imported
  Markdown/MDX partials inlined where they are used) with include
  directives resolved first (:mod:`esrag.formats.includes`: mdBook ``{{#include}}`` /
  ``{{#rustdoc_include}}``, pymdownx.snippets ``--8<--``), then markdown-it-py blocks
  (:func:`esrag.formats.markdown_blocks.parse_blocks`);
* Jupyter notebooks (``.ipynb``, or ``Document.format`` ``notebook``; :mod:`esrag.formats.notebook`):
  cells rendered as Markdown, code cells fenced, line spans as cell numbers;
* reStructuredText (``.rst`` and the configured suffixes, or any file whose ``Document.format``
  the site set to ``rst``, e.g. Sphinx ``source_suffix = ".txt"``; :mod:`esrag.formats.rst`)
  parsed by docutils and rendered block by block;
* AsciiDoc (``.adoc``, ``.asciidoc``, or ``Document.format`` ``asciidoc``; :mod:`esrag.formats.asciidoc`):
  esrag's block scanner (includes, conditionals, attributes, Asciidoctor section ids).

Blocks' line spans index :attr:`Parsed.lines` (the resolved text); :attr:`Parsed.line_map`
takes a resolved line back to its source line, so chunks keep the including page's line span.
"""

from __future__ import annotations

from pathlib import Path

from esrag.formats.asciidoc import parse_asciidoc
from esrag.formats.base import RST_SUFFIXES, Parsed
from esrag.formats.gitbook_blocks import rewrite as gitbook_rewrite
from esrag.formats.includes import context_for, resolve
from esrag.formats.markdown_blocks import drop_anchor_blocks, normalize, parse_blocks
from esrag.formats.mdx import blank_code_lines, drop_component_tags, expand_partials
from esrag.formats.notebook import parse_notebook
from esrag.formats.rst import parse_rst
from esrag.model import Document

__all__ = ["RST_SUFFIXES", "Parsed", "is_rst", "parse", "source_file"]


def source_file(doc: Document) -> Path | None:
    """The file a document was read from, when it knows it and its tree (``doc.source`` and
    ``doc.root``); None otherwise (nothing is included)."""
    return Path(doc.source) if doc.source and doc.root else None


def is_rst(path: str, rst_suffixes: tuple[str, ...] = RST_SUFFIXES) -> bool:
    """True when ``path`` is parsed as reStructuredText (by suffix, case-insensitive)."""
    return path.lower().endswith(tuple(s.lower() for s in rst_suffixes))


def parse(doc: Document, rst_suffixes: tuple[str, ...] = RST_SUFFIXES) -> Parsed:
    """``doc`` parsed by its format (see the module docstring).

    Includes are resolved only when ``doc.source`` and ``doc.root`` are set (the ingested tree, which bounds every
    include); ``doc.text`` may use any line endings.
    """
    if doc.format == "notebook" or doc.path.lower().endswith(".ipynb"):  # esrag.formats.notebook
        opts = doc.format_options
        return parse_notebook(
            doc.text, doc.path, bool(opts.get("notebook_outputs")), bool(opts.get("myst")), bool(opts.get("myst_targets"))
        )
    text = normalize(doc.text)
    if doc.format == "asciidoc" or (not doc.format and doc.path.lower().endswith((".adoc", ".asciidoc"))):
        return parse_asciidoc(
            text, doc.path, source_file(doc), Path(doc.root) if doc.root else None, doc.format_options.get("asciidoc_attributes")
        )
    if doc.format == "rst" or (doc.format != "markdown" and is_rst(doc.path, rst_suffixes)):
        return parse_rst(text, doc.path, source_file(doc), Path(doc.root) if doc.root else None, doc.format_options)
    return _parse_markdown(text, doc)


def _parse_markdown(text: str, doc: Document) -> Parsed:
    file = source_file(doc)
    partials = None
    if doc.path.lower().endswith(".mdx"):
        if file is not None and doc.root:
            absolute = doc.format_options.get("mdx_root")  # where `/snippets/…` imports start (Mintlify's docs root)
            partials = expand_partials(text, file.resolve(), Path(doc.root).resolve(), absolute_root=Path(absolute) if absolute else None)
            text = "\n".join(partials.lines)
        text = blank_code_lines(text, doc.format_options.get("mdx_components"))  # a site's components (Mintlify)
    text = drop_component_tags(
        text, doc.path.lower().endswith(".mdx")
    )  # tags no renderer shows as text (MDX components, Vue/mdBook ones in .md)
    if doc.format_options.get("gitbook_blocks"):  # a GitBook space's {% hint %}… tags (esrag.formats.gitbook_blocks)
        text = gitbook_rewrite(text)
    ctx = context_for(file, Path(doc.root)) if file is not None and doc.root else None  # source_file: both set
    res = resolve(text, ctx)
    if partials is not None:
        res.line_map = [partials.line_map[n - 1] for n in res.line_map]
        res.problems = partials.problems + res.problems
        res.dependencies |= partials.dependencies
    joined = "\n".join(res.lines)
    same = joined.count("\n") == len(res.lines) - 1  # no resolved line holds a line break: they are its split
    blocks = parse_blocks(
        joined,
        autorefs=ctx.autorefs if ctx is not None else False,
        icons=ctx.icons if ctx is not None else False,
        lines=res.lines if same else None,
        myst=bool(doc.format_options.get("myst")),
        targets=bool(doc.format_options.get("myst_targets")),  # Jupyter Book 2: (label)= names the next header
    )
    lines, line_map, blocks = drop_anchor_blocks(res.lines, res.line_map, blocks)  # invisible on the page
    return Parsed(lines, blocks, line_map, problems=res.problems, dependencies=res.dependencies)
