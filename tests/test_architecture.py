"""The rules of the house (DESIGN.md), checked on the source: an AST import graph of esrag/
that counts imports inside functions too. Pure and fast: nothing is imported or run.

(a) no import cycle between esrag modules (a package's ``__init__`` importing its own
    submodules is fine); (b) no ``esrag.stores.*`` module imports ``esrag.search``; (c) only
    ``esrag/stores/elastic`` (file or package) imports ``elasticsearch``; (d) no ``hasattr`` /
    ``getattr`` probe of a store outside ``esrag/stores/`` (capabilities are typed protocols
    checked with ``isinstance``); (e) no module in esrag/ over 700 lines; (f) no ``esrag.formats.*``
    module imports ``esrag.chunking`` (formats parse, chunkers build on them); (g) no ``hasattr`` /
    ``getattr(obj, "name", default)`` probe anywhere in esrag except of the third-party objects
    listed with their reasons (rerankers, reformulators, stores, embedders, chunkers, sites and
    plugins are typed protocols checked with ``isinstance``);
    (h) no read of another module's private attribute (``x._name`` where ``_name`` is set as
    ``self._name`` only by a class of another esrag module);
    (i) one fitting rule (issue 38): only ``esrag/search/budget.py`` fits text into a token
    budget — no other module grows or bisects a prefix of a text by its token count, cuts text
    at a token count (imports ``encode``/``decode`` of ``esrag.tokens``) or defines a
    block-cut function of its own (``block_prefix``, ``whole_blocks``, ``shorten``...).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "esrag"
MAX_LINES = 700


def module_name(path: Path) -> str:
    """``esrag/stores/sqlite.py`` -> ``esrag.stores.sqlite``; ``esrag/llm/__init__.py`` -> ``esrag.llm``."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """Every module of the esrag package by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@cache
def tree(name: str) -> ast.Module:
    path = modules()[name]
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _resolve(name: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    is_package = modules()[name].name == "__init__.py"
    base = name.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def imports(name: str) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import statement of module ``name``, at any depth
    (inside functions and ``if TYPE_CHECKING`` blocks too). ``from pkg import sub`` counts as
    an import of ``pkg.sub`` when that is a module, else of ``pkg``."""
    known = modules()
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.append((sub if sub in known else base, node.lineno))
    return out


def _owner(target: str) -> str | None:
    """The esrag module an imported name lives in (``esrag.stores.base.Filters`` -> ``esrag.stores.base``)."""
    known = modules()
    parts = target.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


@cache
def graph() -> dict[str, dict[str, int]]:
    """esrag module -> {esrag module it imports: first line}. A package's ``__init__`` importing
    its own submodules is left out (that is how a package exposes its parts)."""
    edges: dict[str, dict[str, int]] = {}
    for name in modules():
        out = edges.setdefault(name, {})
        is_package = modules()[name].name == "__init__.py"
        for target, line in imports(name):
            owner = _owner(target) if target.split(".")[0] == "esrag" else None
            if owner is None or owner == name or (is_package and owner.startswith(name + ".")):
                continue
            out.setdefault(owner, line)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one
    cycle through it, every module named with the line of the import that leads on."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return [_one_cycle(edges, set(c), c[0]) for c in found]


def _one_cycle(edges: dict[str, dict[str, int]], members: set[str], start: str) -> list[str]:
    """A shortest cycle from ``start`` back to itself inside ``members`` (breadth first)."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, {})):
                if w == start:
                    return paths[v] + [start]
                if w in members and w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return [start]


def _where(name: str, line: int) -> str:
    return f"{modules()[name].relative_to(PACKAGE.parent)}:{line}"


def _describe(edges: dict[str, dict[str, int]], cycle: list[str]) -> str:
    return " -> ".join(f"{a} ({_where(a, edges[a][b])})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


# -- the rules -----------------------------------------------------------------------------------
def test_no_import_cycle_between_esrag_modules():
    edges = graph()
    found = [_describe(edges, c) for c in cycles(edges)]
    assert not found, "import cycles (counting imports inside functions):\n" + "\n".join(found)


def upward_imports(lower: str, higher: str) -> list[str]:
    """``file:line imports target`` for every import of package ``higher`` (or a module in it) by
    a module of package ``lower``, sorted."""
    return sorted(
        {
            f"{_where(name, line)} imports {target}"
            for name in modules()
            if name.startswith(lower)
            for target, line in imports(name)
            if target == higher or target.startswith(higher + ".")
        }
    )


def test_stores_never_import_search():
    bad = upward_imports("esrag.stores", "esrag.search")
    assert not bad, "a store imports esrag.search (a lower floor depending on a higher one):\n" + "\n".join(bad)


def test_formats_never_import_chunking():
    bad = upward_imports("esrag.formats", "esrag.chunking")
    assert not bad, "a format imports esrag.chunking (a lower floor depending on a higher one):\n" + "\n".join(bad)


def _is_elastic_home(name: str) -> bool:
    return name == "esrag.stores.elastic" or name.startswith("esrag.stores.elastic.")


def test_only_the_elastic_store_imports_elasticsearch():
    bad = sorted(
        {
            f"{_where(name, line)} imports {target}"
            for name in modules()
            if not _is_elastic_home(name)
            for target, line in imports(name)
            if target.split(".")[0] == "elasticsearch"
        }
    )
    assert not bad, "elasticsearch imported outside esrag/stores/elastic:\n" + "\n".join(bad)


def _mentions_store(node: ast.expr) -> bool:
    """The probed object is a name or attribute whose own name contains "store" (``store``,
    ``self.store``, ``self._store``, ``run.store``)."""
    if isinstance(node, ast.Name):
        return "store" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "store" in node.attr.lower()
    return False


def store_probes(name: str) -> list[int]:
    """Lines of ``hasattr(<store>, ...)`` / ``getattr(<store>, ...)`` calls in module ``name``."""
    return [
        node.lineno
        for node in ast.walk(tree(name))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("hasattr", "getattr")
        and node.args
        and _mentions_store(node.args[0])
    ]


def test_no_duck_typed_store_probe_outside_the_stores():
    bad = [_where(name, line) for name in modules() if not name.startswith("esrag.stores") for line in store_probes(name)]
    assert not bad, "hasattr/getattr probes of a store (use the typed protocols of esrag/stores/base.py with isinstance):\n" + "\n".join(
        bad
    )


THIRD_PARTY_PROBES = {
    # (module, the probed expression): why a probe is the only way to ask
    ("esrag.docgen", "importlib.import_module('click._utils')"): "click's UNSET sentinel exists only in click >= 8.2",
    ("esrag.docgen", "annotation"): "typing annotations (generic aliases) are introspected",
    ("esrag.docgen", "p"): "click parameters: only options have `hidden`",
    ("esrag.embedding.local", "st"): "sentence-transformers renamed get_sentence_embedding_dimension",
    ("esrag.embedding.local", "cpu"): "torch's private CPU probes differ between releases",
    ("esrag.embedding.remote", "exc"): "openai/httpx exceptions carry body/message by type",
    ("esrag.embedding.remote", "m"): "OpenAI-compatible /models entries may lack owned_by",
    ("esrag.eval.report", "obj"): "names any object given as a custom arm (introspection)",
    ("esrag.formats.rst", "nodes"): "docutils.nodes.meta moved between docutils releases",
    ("esrag.formats.rst", "n"): "docutils nodes carry line/source only when the parser set them",
    ("esrag.formats.rst_objects", "settings"): "docutils' settings object, which esrag's directives extend",
    ("esrag.llm.clients", "resp"): "OpenAI-compatible servers omit fields of the reply",
    ("esrag.llm.clients", "usage"): "OpenAI-compatible servers omit usage counts",
    ("esrag.plugins", "ep"): "importlib.metadata entry points without a distribution",
    ("esrag.sites.frontmatter", "exc"): "PyYAML errors carry problem/problem_mark by type",
    ("esrag.sites.mkdocs", "value"): "a YAML !!python/name: tag names any object",
    ("esrag.stores.elastic.connection", "exc"): "elasticsearch client errors differ by type",
    ("esrag.stores.elastic.store", "resp"): "elastic-transport responses carry meta.duration by version",
    ("esrag.stores.elastic.store", "getattr(resp, 'meta', None)"): "as above",
}
"""The only ``hasattr`` / ``getattr(x, "name", default)`` probes in esrag: of third-party objects."""


def attribute_probes(source: ast.Module) -> list[tuple[int, str]]:
    """``(line, probed expression)`` of ``hasattr(x, ...)`` and ``getattr(x, "literal", default)``
    calls: asking an object whether it has something instead of knowing its type. A two-argument
    ``getattr`` (reading an attribute by a computed name) is not a probe."""
    return [
        (node.lineno, ast.unparse(node.args[0]))
        for node in ast.walk(source)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and (node.func.id == "hasattr" or (node.func.id == "getattr" and len(node.args) == 3))
    ]


def test_no_attribute_probe_of_an_esrag_collaborator():
    """Rerankers, reformulators, stores, embedders, chunkers, sites and plugins are typed
    (protocols checked with ``isinstance``, or adapted once where they enter); only third-party
    objects are probed, each named in :data:`THIRD_PARTY_PROBES` with its reason."""
    found = {(name, expr): line for name in modules() for line, expr in attribute_probes(tree(name))}
    bad = [f"{_where(name, line)}: probes {expr}" for (name, expr), line in found.items() if (name, expr) not in THIRD_PARTY_PROBES]
    assert not bad, (
        "hasattr/getattr probes of esrag objects (give the collaborator a Protocol and check it with isinstance, "
        "or adapt it once where it enters):\n" + "\n".join(bad)
    )
    stale = sorted(set(THIRD_PARTY_PROBES) - set(found))
    assert not stale, f"THIRD_PARTY_PROBES lists probes that are gone: {stale}"


def private_attributes_by_module() -> dict[str, set[str]]:
    """For each module, the private attribute names (``_x``, not dunder) its classes set on
    ``self``."""
    out: dict[str, set[str]] = {}
    for name in modules():
        for node in ast.walk(tree(name)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and t.attr.startswith("_")
                    and not t.attr.startswith("__")
                ):
                    out.setdefault(name, set()).add(t.attr)
    return out


def foreign_private_reads(name: str, source: ast.Module, owners: dict[str, set[str]]) -> list[tuple[int, str]]:
    """``(line, expression)`` of reads ``x._attr`` in ``source`` (``x`` not ``self``/``cls``)
    where ``_attr`` is a private attribute set only by classes of modules other than ``name``."""
    own = owners.get(name, set())
    elsewhere = set().union(*(attrs for mod, attrs in owners.items() if mod != name))
    out = []
    for node in ast.walk(source):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in elsewhere
            and node.attr not in own
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            out.append((node.lineno, ast.unparse(node)))
    return out


def test_no_module_reads_another_modules_private_attributes():
    owners = private_attributes_by_module()
    assert "_embedder" in owners["esrag.search.searcher"]
    bad = [f"{_where(name, line)}: {expr}" for name in modules() for line, expr in foreign_private_reads(name, tree(name), owners)]
    assert not bad, "reads of another module's private attributes (give it a public property):\n" + "\n".join(bad)


def test_the_probe_and_private_read_checks_find_what_they_look_for():
    source = ast.parse("hasattr(r, 'n')\ngetattr(r, 'spec', r)\ngetattr(chunk, field)\nx = p.searcher._embedder\n")
    assert attribute_probes(source) == [(1, "r"), (2, "r")]
    owners = {"esrag.search.searcher": {"_embedder"}, "esrag.search.pipeline": set()}
    assert foreign_private_reads("esrag.search.pipeline", source, owners) == [(4, "p.searcher._embedder")]
    assert foreign_private_reads("esrag.search.searcher", source, owners) == []


def test_no_module_over_700_lines():
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in modules().values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


FITTING_MODULE = "esrag.search.budget"
"""The one module that fits text into a token budget (issue 38: "one fitting rule")."""
TOKEN_COUNTERS = frozenset({"count_tokens", "fast_count", "count", "text_count", "token_count"})
"""Names a token count is called by in esrag (:mod:`esrag.tokens` and the ``count`` parameters of its callers)."""
BLOCK_CUT_NAMES = frozenset({"block_ends", "block_prefix", "whole_blocks", "shorten", "_shorten", "cut_text", "fit_text", "_fit"})
"""The names the four copies of the budget logic had (search/budget.py, search/pipeline.py, pages.py, serve/responses.py)."""
COUNTING_MODULES = {
    # module: why it cuts or counts prefixes by tokens without fitting a response
    "esrag.tokens": "counts line ranges of a text by pieces: counting, not fitting",
    "esrag.chunking.baselines": "the fixed-token chunking baseline (a seed arm) cuts documents into token windows at index time",
}


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def prefix_fitters(source: ast.Module) -> list[tuple[int, str]]:
    """``(line, function)`` of every function with a loop that both slices something up to a
    bound (``text[:end]``, ``lines[:n]``) and calls a token count (:data:`TOKEN_COUNTERS`): a
    prefix grown or bisected until it fits a number of tokens — fitting text into a budget."""
    out = []
    for fn in ast.walk(source):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for loop in ast.walk(fn):
            if isinstance(loop, (ast.While, ast.For)):
                nodes = list(ast.walk(loop))
                sliced = any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Slice) and n.slice.upper is not None for n in nodes)
                if sliced and any(isinstance(n, ast.Call) and _callee(n) in TOKEN_COUNTERS for n in nodes):
                    out.append((fn.lineno, fn.name))
                    break
    return out


def token_cutters(source: ast.Module) -> list[tuple[int, str]]:
    """``(line, name)`` of imports of ``encode``/``decode`` from :mod:`esrag.tokens` (text cut
    at a token count) and of functions named like a block cut (:data:`BLOCK_CUT_NAMES`)."""
    out = [
        (node.lineno, f"imports {alias.name} from esrag.tokens")
        for node in ast.walk(source)
        if isinstance(node, ast.ImportFrom) and node.module == "esrag.tokens"
        for alias in node.names
        if alias.name in ("encode", "decode")
    ]
    out += [
        (node.lineno, f"defines {node.name}")
        for node in ast.walk(source)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in BLOCK_CUT_NAMES
    ]
    return out


def test_one_module_fits_text_into_a_token_budget():
    """Issue 38: the budget logic lived in four places with two block rules, so a budgeted
    response was cut twice; now :mod:`esrag.search.budget` fits text by one block rule and the
    pipeline, pages and the MCP/HTTP responses call it."""
    assert prefix_fitters(tree(FITTING_MODULE)) and token_cutters(tree(FITTING_MODULE))  # the checks see the real one
    bad = [
        f"{_where(name, line)}: {what}"
        for name in modules()
        if name != FITTING_MODULE and name not in COUNTING_MODULES
        for line, what in [
            *((ln, f"fits a prefix by token count in {fn}()") for ln, fn in prefix_fitters(tree(name))),
            *token_cutters(tree(name)),
        ]
    ]
    assert not bad, f"text fitted into a token budget outside {FITTING_MODULE} (call its fit_text / block_prefix):\n" + "\n".join(bad)


def test_the_fitting_check_finds_the_copies_it_replaced():
    """The two block_prefix copies and the token cut that pages.py and serve/responses.py had."""
    pipeline_copy = ast.parse(
        "def block_prefix(text, max_tokens):\n"
        "    lo, hi, best = 0, len(ends) - 1, ''\n"
        "    while lo <= hi:\n"
        "        mid = (lo + hi) // 2\n"
        "        cand = '\\n'.join(lines[: ends[mid]])\n"
        "        if count_tokens(cand) <= max_tokens:\n"
        "            best, lo = cand, mid + 1\n"
    )
    pages_copy = ast.parse(
        "from esrag.tokens import count_tokens, decode, encode\n"
        "def grow(text, budget, count):\n"
        "    for end in ends:\n"
        "        if count(text[:end]) > budget:\n"
        "            break\n"
        "def _shorten(hit, room, count):\n"
        "    return hit\n"
    )
    assert prefix_fitters(pipeline_copy) == [(1, "block_prefix")] and prefix_fitters(pages_copy) == [(2, "grow")]
    assert [what for _, what in token_cutters(pages_copy)] == [
        "imports decode from esrag.tokens",
        "imports encode from esrag.tokens",
        "defines _shorten",
    ]
    assert (
        prefix_fitters(ast.parse("def f(hits):\n    for h in hits:\n        n = count_tokens(h.text)\n")) == []
    )  # counting whole texts is not fitting


# -- the checker itself --------------------------------------------------------------------------
def test_the_checker_sees_imports_inside_functions_and_finds_a_cycle():
    """The rules above rest on these: an import inside a function is an edge, relative imports
    resolve, and a two-module cycle is reported with both files and lines."""
    edges = graph()
    assert "esrag.stores.base" in edges["esrag.stores.sqlite"]  # a top-level import
    # esrag.app imports esrag.enrich only inside a function (the ingester's builder)
    assert any(target.startswith("esrag.enrich") for target, _ in imports("esrag.app"))
    fake = {"esrag.a": {"esrag.b": 3}, "esrag.b": {"esrag.c": 5}, "esrag.c": {"esrag.a": 7}, "esrag.d": {"esrag.a": 1}}
    assert cycles(fake) == [["esrag.a", "esrag.b", "esrag.c", "esrag.a"]]
    assert cycles({"esrag.a": {"esrag.b": 1}, "esrag.b": {}}) == []
    probe = ast.parse("hasattr(self.store, 'x')\ngetattr(store, 'y', None)\nhasattr(cls, 'from_settings')\n")
    calls = [n for n in ast.walk(probe) if isinstance(n, ast.Call)]
    assert [_mentions_store(c.args[0]) for c in sorted(calls, key=lambda c: c.lineno)] == [True, True, False]
