"""Sphinx object descriptions read as the reader sees them, with the ids Sphinx gives them.

``.. class::``, ``.. method::``, ``.. function::``, ``.. attribute::``, ``.. data::``,
``.. exception::`` (Python domain, ``sphinx/domains/python``), ``.. option::``, ``.. envvar::``
(standard domain, ``sphinx/domains/std``), autodoc's ``auto*`` directives and the object types a
conf.py registers (``add_object_type`` / ``add_crossref_type``): each signature is a line of
text, the body is parsed, and the ids Sphinx puts on the signature (``sphinx.util.nodes.make_id``)
are kept on the node (``esrag_ids``) for :mod:`esrag.formats.rst` to make alternative anchors of
the section. ``currentmodule`` / ``module`` / ``program`` set the context ids are made in.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive, directives

from esrag.sites.slugs import NON_ID_TRANSLATE, NON_ID_TRANSLATE_DIGRAPHS


class _AnyOptions(dict):
    """An option spec that accepts every option (its value kept as text). Never empty: docutils
    refuses all options when a directive's spec is falsy."""

    def __init__(self) -> None:
        super().__init__(name=directives.unchanged)

    def __missing__(self, key: str):
        return directives.unchanged


def _context(directive: Directive) -> tuple[Path | None, dict]:
    settings = directive.state.document.settings
    return getattr(settings, "esrag_allowed", None), getattr(settings, "esrag_state", {})


_SPHINX_NON_ID = re.compile(r"[^a-zA-Z0-9._]+")  # sphinx.util.nodes._non_id_chars
_SPHINX_NON_ID_AT_ENDS = re.compile(r"^[-0-9._]+|-+$")  # sphinx.util.nodes._non_id_at_ends


def sphinx_module_id(name: str) -> str:
    """The id of ``py:module`` NAME's target (``sphinx.util.nodes.make_id`` for ASCII names):
    ``module-<name>`` with runs outside ``[a-zA-Z0-9._]`` as ``-``."""
    return _SPHINX_NON_ID_AT_ENDS.sub("", _SPHINX_NON_ID.sub("-", " ".join(f"module-{name}".split())))


def sphinx_make_id(term: str, prefix: str = "") -> str:
    """``sphinx.util.nodes._make_id(prefix + "-" + term)`` (or of ``term`` alone): case kept,
    runs of characters outside ``[a-zA-Z0-9._]`` -> ``-``, leading ``-0-9._`` and trailing ``-``
    dropped; non-ASCII letters folded as docutils does. '' when nothing is left."""
    text = f"{prefix}-{term}" if prefix else term
    text = text.translate(NON_ID_TRANSLATE_DIGRAPHS).translate(NON_ID_TRANSLATE)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    node_id = _SPHINX_NON_ID_AT_ENDS.sub("", _SPHINX_NON_ID.sub("-", " ".join(text.split())))
    return "" if prefix and node_id == prefix else node_id


#: Python-domain object directives (``sphinx/domains/python``) -> the word Sphinx shows before
#: the signature ('' = none); the ``py:`` forms too.
PY_OBJECTS = {
    "function": "",
    "class": "class",
    "exception": "exception",
    "method": "",
    "classmethod": "classmethod",
    "staticmethod": "staticmethod",
    "attribute": "",
    "property": "property",
    "data": "",
    "decorator": "@",
    "decoratormethod": "@",
    "type": "type",
}
#: autodoc directives: their argument names a Python object (ids as the Python domain's).
AUTODOC = ("autoclass", "autofunction", "automethod", "autoattribute", "autodata", "autoexception", "autodecorator", "autoproperty")
#: standard-domain object directives (``sphinx/domains/std``): id prefix per directive.
STD_OBJECTS = {"option": "cmdoption", "envvar": "envvar", "describe": "", "object": ""}
_PY_SIG = re.compile(r"^([\w.]*\.)?(\w+)\s*(?:\[\s*(.*)\s*])?(?:\(\s*(.*)\s*\)(?:\s*->\s*(.*))?)?$")  # py_sig_re
_OPTION = re.compile(r"((?:/|--|-|\+)?[^\s=]+)(=?\s*.*)")  # std option_desc_re


def _py_fullname(state: dict, sig: str, module_option: str | None) -> str:
    """The full name Sphinx's ``PyObject.handle_signature`` gives ``sig`` (module + class +
    name), '' when the signature does not parse."""
    m = _PY_SIG.match(sig.strip())
    if not m:
        return ""
    prefix, name = m.group(1) or "", m.group(2)
    classes = state.get("py_class") or []
    classname = classes[-1] if classes else ""
    if classname:
        if prefix and (prefix == classname or prefix.startswith(classname + ".")):
            full = prefix + name
        else:
            full = f"{classname}.{prefix}{name}"
    else:
        full = prefix + name
    module = module_option if module_option is not None else state.get("py_module") or ""
    return f"{module}.{full}" if module else full


_CLASS_LEVEL = ("automethod", "autoattribute", "autoproperty")


def _autodoc_fullname(state: dict, kind: str, arg: str) -> str:
    """The full name autodoc documents for ``.. KIND:: ARG`` (``Documenter.resolve_name``): a
    module-level object's dotted path is its module (else the current module); a class-level
    one's path is ``[module.]Class`` (the module else the current one). '' if unparsable."""
    arg = arg.strip().split("(", 1)[0].strip()
    if "::" in arg:  # explicit "module::object"
        mod, _, obj = arg.partition("::")
        return f"{mod}.{obj}" if mod and obj else ""
    path, _, base = arg.rpartition(".")
    if not re.fullmatch(r"[\w.]+", arg or "-"):
        return ""
    current = state.get("py_module") or ""
    if kind in _CLASS_LEVEL:
        modname, _, cls = path.rpartition(".")
        cls = cls or ((state.get("py_class") or [""])[-1])
        return ".".join(x for x in (modname or current, cls, base) if x)
    return ".".join(x for x in (path or current, base) if x)


def _py_ids(state: dict, sig: str, module_option: str | None, taken: set[str]) -> tuple[list[str], str]:
    """(ids, full name) of one Python object: ``make_id(fullname)`` and the full name itself
    when they differ (``PyObject.add_target_and_index``)."""
    full = _py_fullname(state, sig, module_option)
    if not full:
        return [], ""
    node_id = sphinx_make_id(full)
    ids = [i for i in dict.fromkeys((node_id, full)) if i and i not in taken]
    return ids, full


def _std_ids(state: dict, kind: str, sig: str, taken: set[str]) -> list[str]:
    """Ids of a standard-domain object (``Cmdoption``/``EnvVar``/``GenericObject``)."""
    if kind == "option":
        out = []
        program = state.get("std_program") or ""
        for part in sig.split(", "):
            m = _OPTION.match(part.strip())
            if not m:
                continue
            name = m.group(1)
            if name.endswith("[") and m.group(2).endswith("]"):
                name = name[:-1]
            prefixes = ["cmdoption", *([program] if program else []), *([] if name.startswith(("-", "/")) else ["arg"])]
            out.append(sphinx_make_id(name, "-".join(prefixes)))
        return [i for i in out if i and i not in taken]
    prefix = STD_OBJECTS.get(kind, "")
    node_id = sphinx_make_id(" ".join(sig.split()), prefix) if prefix else ""
    return [node_id] if node_id and node_id not in taken else []


class _SphinxObject(Directive):
    """A Sphinx object description (``.. class::``, ``.. method::``, ``.. option::``, ``.. envvar::``,
    an ``add_object_type`` of conf.py…): each signature as a line the reader sees, as inline code
    (``.. function:: foo(a, b)`` -> ```foo(a, b)```; Sphinx's word before it for classes and
    exceptions: ```class Foo(x)```), then its body; the ids Sphinx gives the signature
    (Python domain: the full dotted name; std: ``cmdoption-…``, ``envvar-…``, ``<type>-<name>``)
    are kept on the block (``esrag_ids``) and become alternative anchors of its section.
    ``:no-index:``/``:noindex:`` objects get no id."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        _, state = _context(self)
        kind = self.name.split(":")[-1]
        box = nodes.container(classes=["esrag-object", kind])
        box.source, box.line = self.state_machine.get_source_and_line(self.lineno)
        sigs = [" ".join(s.split()) for s in (self.arguments[0] if self.arguments else "").split("\n") if s.strip()]
        taken = state.setdefault("object_ids", set())
        ids: list[str] = []
        noindex = "no-index" in self.options or "noindex" in self.options
        word = PY_OBJECTS.get(kind, "") if not self.name.startswith("std:") and kind in PY_OBJECTS else ""
        full = ""
        for sig in sigs:
            text = f"{word} {sig}" if word and word != "@" else f"@{sig}" if word == "@" else sig
            para = nodes.paragraph(text, "", nodes.literal(text, text))  # Sphinx's desc_signature: code
            para.source, para.line = box.source, box.line
            box += para
            if noindex:
                continue
            if kind in PY_OBJECTS and not self.name.startswith("std:"):
                new, name = _py_ids(state, sig, self.options.get("module"), taken)
                full = full or name
            elif kind in STD_OBJECTS or self.name.startswith("std:"):
                new = _std_ids(state, kind, sig, taken)
            else:  # a conf.py object type: <prefix>-<name>, unknown ('') when a parse_node names it
                prefix = state.get("object_types", {}).get(self.name, "")
                new = [i for i in [sphinx_make_id(sig, prefix)] if prefix and i and i not in taken]
            taken.update(new)
            ids.extend(new)
        box["esrag_ids"] = ids
        if self.content:
            nested = kind in ("class", "exception") and not self.name.startswith("std:")
            if nested:
                m = _PY_SIG.match(sigs[0]) if sigs else None
                state.setdefault("py_class", []).append(_py_fullname({**state, "py_module": ""}, sigs[0], "") if m else "")
            try:
                self.state.nested_parse(self.content, self.content_offset, box)
            finally:
                if nested:
                    state["py_class"].pop()
        return [box]


class _CrossrefTarget(Directive):
    """An ``add_crossref_type`` directive of conf.py (Django's ``.. setting:: DEBUG``): Sphinx's
    ``Target`` shows nothing and leaves a target with id ``<directive>-<name>``, which docutils
    hands on to the next block or section (an alternative anchor of it)."""

    required_arguments = 1
    final_argument_whitespace = True
    has_content = False
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        _, state = _context(self)
        taken = state.setdefault("object_ids", set())
        node_id = sphinx_make_id(" ".join(self.arguments[0].split()), self.name.split(":")[-1])
        if not node_id or node_id in taken or node_id in self.state.document.ids:
            return []
        taken.add(node_id)
        target = nodes.target("", "", ids=[node_id])
        self.state.document.note_explicit_target(target)
        return [nodes.comment(), target]


class _Context(Directive):
    """``currentmodule`` / ``py:currentmodule`` (and ``program``): render nothing, set the module
    (program) later object ids are made in; ``None`` clears it."""

    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        _, state = _context(self)
        value = self.arguments[0].strip() if self.arguments else ""
        if self.name.endswith("program"):
            state["std_program"] = "-".join(value.split()) if value != "None" else ""
        else:
            state["py_module"] = "" if value in ("", "None") else value
        return []
