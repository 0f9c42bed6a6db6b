"""reStructuredText parsed by docutils (the reference parser) into esrag's blocks.

The doctree is built as Sphinx builds it (Sphinx's ``default_settings``: ``doctitle_xform``
off, so the first title is a section; ``auto_id_prefix = "id"``; ``halt_level`` 5, i.e. never
stop; reports go to a captured stream) and rendered block by block into Markdown-like text a
reader sees: a section title becomes a header block (``#`` × depth + title) whose
``Block.anchor`` is the id Sphinx's HTML writer puts on ``<section id=…>``
(:func:`section_anchor`: docutils' ids — ``make_id(title)``, plus an explicit ``.. _label:``
before the section, as ``references.PropagateTargets`` adds it — reordered as Sphinx's
``MoveModuleTargets`` and ``SortIds`` do, so ``.. _session-objects:`` before "Session Objects"
gives ``session-objects``, not docutils' ``id1``); paragraphs, literal blocks (fenced, with their language), lists, tables (a pipe
table: header row, separator, rows), admonitions and block quotes (``>`` lines) keep their
kinds.

Sphinx directives and roles that docutils does not know are registered as permissive
fallbacks before parsing, so they never fail a file and their text stays: a directive shows
its arguments and parses its content (``versionadded:: 2.0`` -> ``Added in version 2.0``,
``autofunction:: requests.get`` -> ```requests.get``` as code; directives that render nothing visible,
such as ``module`` or ``index``, are dropped), a role shows its title (``:class:`Response
<requests.Response>``` -> ``Response``; ``~a.b.C`` -> ``C``). ``code-block``/``sourcecode`` are
literal blocks; ``literalinclude`` and ``include`` read files relative to the including file,
only inside the ingested tree. Errors (docutils level >= 3) are reported as ``"line N: …"``.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from docutils import nodes
from docutils.core import publish_doctree
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives.misc import Class as _DocutilsClass
from docutils.parsers.rst.directives.misc import Include as _DocutilsInclude

from esrag.formats.base import UNRESOLVED, Parsed
from esrag.formats.rst_objects import (
    AUTODOC,
    PY_OBJECTS,
    STD_OBJECTS,
    _AnyOptions,
    _autodoc_fullname,
    _Context,
    _context,
    _CrossrefTarget,
    _SphinxObject,
    sphinx_make_id,
    sphinx_module_id,
)
from esrag.model import Block, BlockKind

SPHINX_SETTINGS = {
    "doctitle_xform": False,
    "sectsubtitle_xform": False,
    "auto_id_prefix": "id",
    "halt_level": 5,
    "report_level": 5,
    "file_insertion_enabled": True,
    "raw_enabled": False,
    "input_encoding": "utf-8-sig",
    "_disable_config": True,
    "smart_quotes": False,
}
_LABELS = {
    "versionadded": "Added in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
    "seealso": "See also",
}
_DIRECTIVE_NAME = re.compile(r"^\s*\.\.\s+([\w][\w:.+-]*)::", re.MULTILINE)
_ROLE_NAME = re.compile(r":([\w][\w:.+-]*):`")
_SKIP = (
    nodes.comment,
    nodes.target,
    nodes.substitution_definition,
    nodes.system_message,
    nodes.pending,
    nodes.raw,
    nodes.meta if hasattr(nodes, "meta") else nodes.comment,
    nodes.footnote_reference,
)


class _Fallback(Directive):
    """Any directive docutils does not know: its arguments as a paragraph, its content parsed."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        box = nodes.container(classes=["esrag-fallback", self.name])
        box.source, box.line = self.state_machine.get_source_and_line(self.lineno)
        label = _LABELS.get(self.name.split(":")[-1])
        args = " ".join(self.arguments)
        if label:  # Sphinx's VersionChange: the version, then inline text on the following lines
            version, _, rest = args.partition("\n") if "\n" in args else args.partition(" ") if self.name != "seealso" else ("", "", args)
            args = f"{label} {version}".strip() + (":" if rest.strip() else "") + ("\n" + rest if rest.strip() else "")
        kind = self.name.split(":")[-1]
        if kind in AUTODOC and args.strip():  # the object's name, as code (autodoc shows its signature)
            word = PY_OBJECTS.get(kind.removeprefix("auto"), "")
            sig = f"{word} {args.strip()}" if word and word != "@" else f"@{args.strip()}" if word else args.strip()
            para = nodes.paragraph(sig, "", nodes.literal(sig, sig))
            para.source, para.line = box.source, box.line
            box += para
        elif args.strip():
            inline, messages = self.state.inline_text(args, self.lineno)
            para = nodes.paragraph(args, "", *inline)
            para.source, para.line = box.source, box.line
            box += para
            box += messages
        if self.name.split(":")[-1] in AUTODOC and self.arguments and not ("no-index" in self.options or "noindex" in self.options):
            _, state = _context(self)
            taken = state.setdefault("object_ids", set())
            full = _autodoc_fullname(state, self.name.split(":")[-1], self.arguments[0].split("\n")[0])
            ids = [i for i in dict.fromkeys((sphinx_make_id(full), full)) if i and i not in taken] if full else []
            taken.update(ids)
            box["esrag_ids"] = ids
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


class _Invisible(Directive):
    """Sphinx directives that render nothing a reader sees (``module``, ``currentmodule``,
    ``highlight``, ``index``…): parsed and dropped, so no noise enters the text."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return []


class _Module(Directive):
    """Sphinx ``py:module``: renders nothing, but leaves the module's target (id
    ``module-<name>``, Sphinx ``sphinx.util.nodes.make_id`` for ASCII names) after a stand-in for
    its index node, as Sphinx 9's ``PyModule.run`` does (index node, then target), so that
    :func:`section_anchor` can move it onto the section as Sphinx's ``MoveModuleTargets`` does.
    ``:no-index:``/``:noindex:`` leave no target, ``:no-index-entry:`` no index node."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        _, state = _context(self)
        if self.arguments:
            state["py_module"] = self.arguments[0].strip()
        if not self.arguments or "no-index" in self.options or "noindex" in self.options:
            return []
        node_id = sphinx_module_id(self.arguments[0].strip())
        if not node_id or node_id in self.state.document.ids:
            return []
        # docutils' PropagateTargets later hands the ids on to the next block; keep them here
        target = nodes.target("", "", ids=[node_id], ismod=True, module_ids=[node_id])
        self.state.document.note_explicit_target(target)
        return ([] if "no-index-entry" in self.options else [nodes.comment()]) + [target]


def section_anchor(section: nodes.section) -> str:
    """The id Sphinx's HTML writer puts on ``<section id=…>`` (and the title's ``¶`` link) for a
    docutils section, or "" when it has none.

    Sphinx (9.0, ``sphinx/transforms/__init__.py``) reorders docutils' ids before writing:
    ``MoveModuleTargets`` puts the ids of a ``py:module`` target standing first in the section
    (child 2: after the title and the module's index node) in front, and ``SortIds`` moves a
    first id starting with ``id`` (docutils' auto id when a ``.. _label:`` took the title's
    slug, e.g. ``.. _session-objects:`` before "Session Objects" -> ``["id1", "session-objects"]``)
    to the end. The first id left is the section's anchor.
    """
    ids = list(section["ids"])
    if len(section.children) > 2 and isinstance(section[2], nodes.target) and section[2].get("module_ids"):
        ids[0:0] = section[2]["module_ids"]
    if len(ids) > 1 and ids[0].startswith("id"):
        ids = [*ids[1:], ids[0]]
    return ids[0] if ids else ""


class _Highlight(Directive):
    """Sphinx ``highlight``: renders nothing; the language of later literal blocks of the page
    (``::`` blocks, ``code-block``/``literalinclude`` without one) until the next ``highlight``
    (Sphinx ``Highlight`` directive). Left as a marker (a comment node the renderer reads in
    document order)."""

    required_arguments = 1
    has_content = False
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        return [nodes.comment("", "", esrag_highlight=self.arguments[0].strip())]


_INVISIBLE = ("index", "default-role", "sectionauthor", "codeauthor", "tabularcolumns")
_CONTEXT = ("currentmodule", "py:currentmodule", "program", "std:program")
_MODULE = ("module", "py:module")


class _CodeBlock(Directive):
    """Sphinx ``code-block`` / ``sourcecode``: a literal block with its language."""

    optional_arguments = 1
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        text = "\n".join(self.content)
        node = nodes.literal_block(text, text, language=(self.arguments or [""])[0])
        node.source, node.line = self.state_machine.get_source_and_line(self.lineno)
        return [node]


def _abs(source: str | None) -> str | None:
    """A docutils node or state-machine source as an absolute path: docutils' ``include`` names
    the included file relative to the working directory (``utils.relative_path``) whenever the
    two share a leading folder, so the same file can come back relative or absolute."""
    return str(Path(source).resolve()) if source else source


def _target_path(directive: Directive, name: str) -> Path:
    """``name`` relative to the directive's own file, checked to be inside the ingested tree."""
    allowed, _ = _context(directive)
    source, _ = directive.state_machine.get_source_and_line(directive.lineno)
    base = Path(_abs(source) or ".").parent if source else Path(".")
    target = (base / name).resolve()
    if allowed is None:
        raise ValueError(f"{name}: includes are resolved only inside an ingested tree")
    try:
        target.relative_to(allowed)
    except ValueError:
        raise ValueError(f"{name} is outside the ingested tree ({allowed}); not read") from None
    if not target.is_file():
        raise ValueError(f"no such file {name}")
    return target


def _left_out(directive: Directive, problem: str) -> list[nodes.Node]:
    """An include or literalinclude that could not be resolved: reported (the problem holds
    :data:`~esrag.formats.base.UNRESOLVED`) and left out of the text, never indexed as raw
    directive text (Sphinx itself warns and shows nothing for it)."""
    _, state = _context(directive)
    line = _main_line(directive)
    state.setdefault("problems", []).append(
        f"line {line}: .. {directive.name}:: {' '.join(directive.arguments)}: {problem} ({UNRESOLVED}; left out of the indexed text)"
    )
    return []


def _main_line(directive: Directive) -> int:
    """The directive's line in the main document (a nested include maps to its include line)."""
    _, state = _context(directive)
    source, line = directive.state_machine.get_source_and_line(directive.lineno)
    return state.get("include_lines", {}).get(_abs(source), line or 0)


class _Include(_DocutilsInclude):
    """docutils ``include`` limited to the ingested tree; the included lines map to this line."""

    def run(self) -> list[nodes.Node]:
        try:
            target = _target_path(self, directives.path(self.arguments[0]))
        except ValueError as exc:
            return _left_out(self, str(exc))
        _, state = _context(self)
        if target in state.setdefault("stack", set()):
            return _left_out(self, "include cycle")
        state.setdefault("include_lines", {})[str(target)] = _main_line(self)
        state.setdefault("dependencies", set()).add(target)
        self.arguments[0] = str(target)
        state["stack"].add(target)
        try:
            return list(super().run())  # docutils types it as a Sequence
        finally:
            state["stack"].discard(target)


class _LiteralInclude(Directive):
    """Sphinx ``literalinclude``: a file (or ``:lines:``, ``:start-after:``/``:end-before:``,
    ``:start-at:``/``:end-at:`` parts of it) as a literal block with its ``:language:``."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        try:
            target = _target_path(self, self.arguments[0])
            text = target.read_text(encoding="utf-8-sig").replace("\r\n", "\n")
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            return _left_out(self, str(exc))
        _, state = _context(self)
        state.setdefault("dependencies", set()).add(target)
        text = _select(text, self.options)
        node = nodes.literal_block(text, text, language=self.options.get("language", ""))
        node.source, node.line = self.state_machine.get_source_and_line(self.lineno)
        return [node]


def _select(text: str, options: dict) -> str:
    lines = text.split("\n")
    if options.get("lines"):
        keep: list[str] = []
        for part in str(options["lines"]).split(","):
            a, _, b = part.strip().partition("-")
            lo = int(a) if a.strip() else 1
            hi = (int(b) if b.strip() else len(lines)) if _ else lo
            keep.extend(lines[lo - 1 : hi])
        lines = keep
    for key, after in (("start-after", True), ("start-at", False)):
        if options.get(key):
            idx = next((i for i, ln in enumerate(lines) if options[key] in ln), None)
            if idx is not None:
                lines = lines[idx + 1 if after else idx :]
    for key, before in (("end-before", True), ("end-at", False)):
        if options.get(key):
            idx = next((i for i, ln in enumerate(lines) if options[key] in ln), None)
            if idx is not None:
                lines = lines[: idx if before else idx + 1]
    return "\n".join(lines).strip("\n")


def role_title(text: str) -> str:
    """The text Sphinx shows for a cross-reference role's content: the title of ``title
    <target>``; else the target with a leading ``!`` dropped, leading ``.`` dropped and ``~a.b``
    shown as ``b`` (``sphinx.domains.python.PyXRefRole.process_link``: ``title.lstrip('.')``,
    then ``~`` keeps what follows the last dot), so ``~.UniqueConstraint`` -> ``UniqueConstraint``
    and ``.Flask.config`` -> ``Flask.config``."""
    m = re.match(r"^(.*?)\s*<([^<>]+)>$", text, re.DOTALL)
    if m and m.group(1):
        return m.group(1)
    shown = text.lstrip("!").lstrip(".")
    if shown.startswith("~"):
        shown = shown[1:].rsplit(".", 1)[-1]
    return shown


def _fallback_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """Any role docutils does not know: its title (:func:`role_title`), as inline code for the
    roles Sphinx shows as code (:data:`_CODE_ROLES`), else as text. A function or method role
    without an explicit title shows ``()`` after the name, as Sphinx does by default
    (``XRefRole(fix_parens=True)`` for ``func``/``meth``, ``add_function_parentheses = True``):
    ``:func:`~markupsafe.escape``` -> ``escape()``."""
    shown = role_title(text)
    if name.split(":")[-1] in _PAREN_ROLES and not re.search(r"<[^<>]+>$", text):
        shown = shown.removesuffix("()") + "()"
    return [nodes.literal(rawtext, shown) if name.split(":")[-1] in _CODE_ROLES else nodes.Text(shown)], []


#: Roles Sphinx renders as code (``<code class="xref …">`` / ``<code class="file">``, ``<kbd>``):
#: the Python domain's object roles, ``any``, the std domain's ``envvar``/``option``/``program``
#: and ``command``/``file``/``samp``/``kbd`` (Sphinx "Roles" documentation); ``ref``, ``doc``,
#: ``term``, ``abbr``… show plain text.
_CODE_ROLES = frozenset(
    "any class func meth attr exc obj data const mod function method envvar option command file program samp kbd".split()
)
#: Roles whose title Sphinx ends with ``()`` (the Python, C, C++ and JavaScript domains' ``func`` and ``meth``,
#: registered with ``fix_parens=True``).
_PAREN_ROLES = {"func", "meth"}
_REGISTERED: set[str] = set()


def _register(text: str) -> None:
    """Register the Sphinx directives and any unknown directive or role ``text`` uses."""
    if not _REGISTERED:
        for name in ("code-block", "sourcecode"):
            directives.register_directive(name, _CodeBlock)
        directives.register_directive("highlight", _Highlight)
        directives.register_directive("literalinclude", _LiteralInclude)
        directives.register_directive("include", _Include)
        for name in _INVISIBLE:
            directives.register_directive(name, _Invisible)
        for name in _MODULE:
            directives.register_directive(name, _Module)
        for name in _CONTEXT:
            directives.register_directive(name, _Context)
        objects = [*PY_OBJECTS, *(f"py:{n}" for n in PY_OBJECTS), *STD_OBJECTS, *(f"std:{n}" for n in STD_OBJECTS)]
        for name in objects:  # Sphinx's default domain (py) owns ``class``; docutils' is ``rst-class``
            directives.register_directive(name, _SphinxObject)
        directives.register_directive("rst-class", _DocutilsClass)
        _REGISTERED.update(("", "highlight", *_INVISIBLE, *_MODULE, *_CONTEXT, *objects, "rst-class"))
    from docutils.parsers.rst.languages import en

    for name in set(_DIRECTIVE_NAME.findall(text)):
        # docutils' own registries (private, stable since 0.x; no public lookup without side effects)
        known = name in directives._directives or name in directives._directive_registry or name in en.directives  # type: ignore[attr-defined]
        if not known and name not in _REGISTERED:
            directives.register_directive(name, _Fallback)
            _REGISTERED.add(name)
    for name in set(_ROLE_NAME.findall(text)):
        key = "role:" + name
        known = name in roles._roles or name in roles._role_registry or name in en.roles  # type: ignore[attr-defined]  # as above
        if not known and key not in _REGISTERED:
            roles.register_local_role(name, _fallback_role)
            _REGISTERED.add(key)


def _custom_objects(options: dict | None) -> dict[str, type[Directive]]:
    """The directives of the object types conf.py registers (``format_options``):
    ``add_crossref_type`` ones as targets, ``add_object_type`` ones as object descriptions."""
    options = options or {}
    crossref = set(options.get("crossref_types") or ())
    return {name: (_CrossrefTarget if name in crossref else _SphinxObject) for name in options.get("object_types") or {}}


def parse_rst(text: str, rel: str, file: Path | None, root: Path | None, options: dict | None = None) -> Parsed:
    """Parse reStructuredText into a :class:`~esrag.formats.Parsed` (see the module docstring).

    Args:
        text: normalised source text.
        rel: the path shown in messages.
        file: the file on disk (includes resolve relative to it), or None.
        root: the ingested tree includes must stay inside, or None (no includes).
        options: the generator's reading options (``Document.format_options``):
            ``object_types`` / ``crossref_types`` registered in Sphinx's conf.py, whose
            directives are read as object descriptions / targets for this document only.
    """
    custom = _custom_objects(options)
    before = {name: directives._directives.get(name) for name in custom}  # type: ignore[attr-defined]
    for name, cls in custom.items():
        directives.register_directive(name, cls)
    try:
        return _parse_rst(text, rel, file, root, options)
    finally:
        for name, old in before.items():  # other trees do not share this conf.py's types
            if old is None:
                directives._directives.pop(name, None)  # type: ignore[attr-defined]
                _REGISTERED.discard(name)
            else:
                directives.register_directive(name, old)


def _parse_rst(text: str, rel: str, file: Path | None, root: Path | None, options: dict | None = None) -> Parsed:
    _register(text)
    state: dict = {"object_types": dict((options or {}).get("object_types") or {})}
    stream = io.StringIO()
    messages: list[tuple[int, int, str]] = []
    source_path = str(file.resolve()) if file is not None else rel
    overrides = dict(SPHINX_SETTINGS, warning_stream=stream, esrag_state=state, esrag_allowed=root.resolve() if root is not None else None)
    doctree = publish_doctree(text, source_path=source_path, settings_overrides=overrides)
    for msg in doctree.findall(nodes.system_message):
        if msg["level"] >= 3:
            messages.append((msg.get("line") or 0, msg["level"], _one_line(msg.astext())))
    language = str((options or {}).get("highlight_language") or "python")
    renderer = _Renderer(text.split("\n"), source_path, state.get("include_lines", {}), language)
    renderer.walk(doctree, 0, ())
    problems = list(state.get("problems", []))
    problems += [f"line {line}: {'SEVERE' if level >= 4 else 'ERROR'}: {_strip_prefix(m)}" for line, level, m in messages]
    parsed = renderer.finish()
    parsed.problems = problems
    parsed.dependencies = set(state.get("dependencies", set()))
    return parsed


def _one_line(message: str) -> str:
    """A docutils report on one line: its first line, and when that ends with ``:`` (``Error in
    "code-block" directive:``) the rest of its first paragraph, which says what is wrong."""
    para = message.split("\n\n", 1)[0].split("\n")
    return " ".join(s.strip() for s in para) if para[0].rstrip().endswith(":") else para[0]


def _strip_prefix(message: str) -> str:
    return re.sub(r"^.*?\((?:ERROR|SEVERE)/\d\)\s*", "", message)


#: a paragraph before a literal block ending in sentence punctuation + ``:``: what docutils leaves
#: of ``instead.::`` (one colon of the ``::`` marker); the reader needs neither colon.
_LITERAL_COLON = re.compile(r"([.?!]):\s*$")


def code_span(text: str) -> str:
    """``text`` as a Markdown code span (CommonMark 6.1): fenced by one backtick more than its
    longest backtick run, padded with a space when it starts or ends with a backtick; line
    breaks as spaces."""
    text = " ".join(text.split("\n"))
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return "`" * (run + 1) + pad + text + pad + "`" * (run + 1) if text.strip() else text


_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")
_AUTO_ID = re.compile(r"^id\d+$")  # docutils' auto ids (Sphinx's auto_id_prefix "id")


class _Renderer:
    """Walks a doctree, writing each block's text into ``lines`` with source lines."""

    def __init__(self, source: list[str], source_path: str, include_lines: dict[str, int], language: str = "python") -> None:
        self.language = language  # the current highlight language (Sphinx: highlight_language, `.. highlight::`)
        self.source = source
        self.source_path = source_path
        self.include_lines = include_lines
        self.items: list[tuple[BlockKind, list[str], int, tuple[str, ...], int, str]] = []
        self.title_ends: dict[int, int] = {}
        self.alts: dict[int, list[str]] = {}  # header item -> the section's other ids
        self.current: int | None = None  # the header item of the section being walked

    def walk(self, node: nodes.Element, depth: int, path: tuple[str, ...]) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                title = child[0].astext() if child.children and isinstance(child[0], nodes.title) else ""
                title = " ".join(title.split())
                first = child[0]
                line = self._title_start(first) if title and isinstance(first, nodes.title) else self._line(child)
                sub = (*path, title) if title else path
                anchor = section_anchor(child)
                self.items.append((BlockKind.HEADER, ["#" * min(depth + 1, 6) + " " + title], line, sub, depth + 1, anchor))
                index = len(self.items) - 1
                self.alts[index] = [i for i in child["ids"] if i != anchor and not _AUTO_ID.match(i)]
                if title:  # a title ends at its underline
                    self.title_ends[index] = self._line(child[0])
                outer, self.current = self.current, index
                self.walk(child, depth + 1, sub)
                self.current = outer
                continue
            self._collect_ids(child)
            if isinstance(child, nodes.comment) and child.get("esrag_highlight"):
                self.language = child["esrag_highlight"]
            elif isinstance(child, nodes.system_message):
                kept = [n for n in child.findall(nodes.literal_block)] if child["level"] >= 3 else []
                for lit in kept:  # the source docutils could not parse stays as text
                    self.items.append((BlockKind.PARAGRAPH, lit.astext().rstrip("\n").split("\n"), self._line(child), path, 0, ""))
            elif isinstance(child, nodes.title) or isinstance(child, _SKIP) or isinstance(child, nodes.Invisible):
                continue
            elif isinstance(child, (nodes.container, nodes.compound, nodes.topic, nodes.sidebar)) and not isinstance(
                child, nodes.Admonition
            ):
                self.walk(child, depth, path)
            else:
                kind, lines = self.render(child)
                if lines:
                    self.items.append((kind, lines, self._line(child), path, 0, ""))

    def _collect_ids(self, node: nodes.Node) -> None:
        """Add the ids ``node`` and its descendants carry on the page (explicit targets handed on
        to a block, object signatures' ``esrag_ids``; not docutils' ``idN`` auto ids nor external
        link targets, which Sphinx writes no element for) to the current section's alternatives."""
        if self.current is None or not isinstance(node, nodes.Element):
            return
        found = self.alts[self.current]
        for el in node.findall(nodes.Element):
            if isinstance(el, nodes.target) and (el.get("refuri") or el.get("refid") or el.get("refname")):
                continue
            found.extend(i for i in (*el["ids"], *el.get("esrag_ids", ())) if not _AUTO_ID.match(i))

    def render(self, node: nodes.Node) -> tuple[BlockKind, list[str]]:
        if isinstance(node, (nodes.literal_block, nodes.doctest_block)):
            return BlockKind.CODE, self._fence(node)
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            return BlockKind.LIST, self._list(node)
        if isinstance(node, nodes.table):
            return BlockKind.TABLE, self._table(node)
        if isinstance(node, (nodes.Admonition, nodes.block_quote)):
            inner: list[str] = []
            if isinstance(node, nodes.Admonition) and not isinstance(node, nodes.admonition):
                inner.append(f"**{type(node).__name__.capitalize()}:**")
            for child in node.children:
                if isinstance(child, nodes.title):
                    inner.append(f"**{child.astext()}:**")
                elif not isinstance(child, _SKIP):
                    inner.extend(self.render(child)[1] + [""])
            while inner and not inner[-1]:
                inner.pop()
            return BlockKind.BLOCKQUOTE, [("> " + ln).rstrip() for ln in inner]
        if isinstance(node, (nodes.container, nodes.compound, nodes.topic, nodes.sidebar)):
            out: list[str] = []
            for child in node.children:
                if not isinstance(child, _SKIP):
                    out.extend(self.render(child)[1] + [""])
            return BlockKind.PARAGRAPH, out[:-1]
        if isinstance(node, _SKIP):
            return BlockKind.PARAGRAPH, []
        text = self._inline(node).strip("\n")
        if isinstance(node, nodes.paragraph) and isinstance(node.next_node(descend=False, siblings=True), nodes.literal_block):
            text = _LITERAL_COLON.sub(r"\1", text)
        return BlockKind.PARAGRAPH, [ln.rstrip() for ln in text.split("\n")] if text.strip() else []

    def _fence(self, node: nodes.Element) -> list[str]:
        """A literal block fenced with its language: its own (``code-block:: pycon``,
        ``literalinclude``'s ``:language:``), ``pycon`` for a doctest block, else the page's
        highlight language (``::`` blocks; Sphinx's ``highlight_language``, default ``python``)."""
        lang = node.get("language", "") or ("pycon" if isinstance(node, nodes.doctest_block) else self.language)
        return ["```" + lang, *node.astext().split("\n"), "```"]

    def _inline(self, node: nodes.Node) -> str:
        """``node``'s text as Markdown (:meth:`docutils.nodes.Node.astext`'s text and
        separators): inline literals (````code````, code roles, object signatures) as code spans,
        ``**strong**``, ``*emphasis*``, nested literal blocks fenced."""
        if isinstance(node, nodes.Text):
            return node.astext()
        if not isinstance(node, nodes.Element):
            return ""
        if isinstance(node, (nodes.literal_block, nodes.doctest_block)):
            return "\n".join(self._fence(node))
        if isinstance(node, nodes.literal):
            return code_span(node.astext())
        inner = node.child_text_separator.join(self._inline(c) for c in node.children) if node.children else node.astext()
        if isinstance(node, (nodes.strong, nodes.emphasis)) and inner.strip() and inner == inner.strip() and "\n" not in inner:
            mark = "**" if isinstance(node, nodes.strong) else "*"
            return f"{mark}{inner}{mark}"
        return inner

    def _list(self, node: nodes.Element) -> list[str]:
        out: list[str] = []
        start = int(node.get("start", 1))
        for i, item in enumerate(c for c in node.children if isinstance(c, nodes.list_item)):
            marker = f"{start + i}. " if isinstance(node, nodes.enumerated_list) else "- "
            body: list[str] = []
            for child in item.children:
                if not isinstance(child, _SKIP):
                    body.extend(self.render(child)[1])
            for j, ln in enumerate(body or [""]):
                out.append((marker if j == 0 else " " * len(marker)) + ln if ln else "")
        return out

    def _table(self, node: nodes.table) -> list[str]:
        rows: list[list[str]] = []
        n_head = 0
        for part in node.findall(lambda n: isinstance(n, (nodes.thead, nodes.tbody))):
            part_rows = [
                [" ".join(e.astext().split()).replace("|", "\\|") for e in row.children]
                for row in part.children
                if isinstance(row, nodes.row)
            ]
            if isinstance(part, nodes.thead):
                n_head += len(part_rows)
            rows.extend(part_rows)
        if not rows:
            return []
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        head = rows[0] if n_head else [""] * width
        body = rows[1:] if n_head else rows
        return ["| " + " | ".join(head) + " |", "|" + "---|" * width, *("| " + " | ".join(r) + " |" for r in body)]

    def _line(self, node: nodes.Node) -> int:
        """The node's 1-based line in the main file (included content: the include's line)."""
        for n in (node, *node.findall(nodes.Element)) if isinstance(node, nodes.Element) else (node,):
            line = getattr(n, "line", None)
            src = _abs(getattr(n, "source", None))
            if src and src != self.source_path and src in self.include_lines:
                return self.include_lines[src]
            if line:
                return line
        return 0

    def _title_start(self, title: nodes.title) -> int:
        """First source line of a section title: its text line (underline below), or the
        overline above it."""
        line = self._line(title)
        if title.source and _abs(title.source) != _abs(self.source_path):
            return line
        text_line = line - 1 if line >= 2 else line
        if text_line >= 2 and _ADORNMENT.match(self.source[text_line - 2] if text_line - 2 < len(self.source) else ""):
            return text_line - 1
        return text_line

    def finish(self) -> Parsed:
        """The blocks in source order with spans: each ends before the next one starts."""
        lines: list[str] = []
        line_map: list[int] = []
        end_map: list[int] = []
        blocks: list[Block] = []
        starts = [max(1, it[2]) for it in self.items]
        for i, (kind, text_lines, _, path, level, anchor) in enumerate(self.items):
            start = starts[i]
            nxt = next((s for s in starts[i + 1 :] if s > start), len(self.source) + 1)
            end = max(start, min(nxt - 1, self.title_ends.get(i, nxt - 1)))
            while end > start and end - 1 < len(self.source) and not self.source[end - 1].strip():
                end -= 1
            if lines:
                lines.append("")
                line_map.append(end_map[-1])
                end_map.append(end_map[-1])
            first = len(lines) + 1
            last = len(text_lines) - 1
            for j, ln in enumerate(text_lines):
                lines.append(ln)
                line_map.append(min(start + j, end))
                end_map.append(end if j == last else min(start + j, end))
            alts = tuple(a for a in dict.fromkeys(self.alts.get(i, ())) if a != anchor)
            blocks.append(Block(kind, "\n".join(text_lines), first, len(lines), path, level, anchor, alts))
        return Parsed(lines, blocks, line_map, end_map)
