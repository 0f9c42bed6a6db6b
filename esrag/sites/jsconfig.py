"""Literal values of a JavaScript / TypeScript configuration file, read without running it.

Docusaurus keeps its configuration in ``docusaurus.config.{js,mjs,cjs,ts}``: code, not data. This
module reads the *literal* parts of such a file the way a JavaScript engine would see them:

* :func:`tokenize` is an ECMAScript lexer for what configuration files hold: ``//`` and ``/* */``
  comments (dropped, so a commented-out ``// routeBasePath: '/'`` never counts), string literals
  with their escapes, template literals (nested ``${…}`` substitutions followed to their closing
  brace), regular-expression literals (told apart from division by the previous token, the
  rule of ECMAScript's lexical goal symbols), numbers, identifiers and punctuators;
* :func:`read_config` finds the exported configuration object (``export default {…}``,
  ``module.exports = {…}``, or ``export default NAME`` / ``module.exports = NAME`` with ``const
  NAME = {…}``; the object a config function returns, ``export default async function
  createConfig() {… return {…};}``, as Docusaurus allows; the object given to a wrapper call —
  TypeScript type annotations, ``satisfies`` and ``as`` are skipped) and
  evaluates it: objects, arrays, strings, numbers, ``true``/``false``/``null``, template
  literals without substitutions, and names bound by a top-level ``const``/``let``/``var`` to
  such a literal. Anything computed at build time (a call, an arithmetic expression, a template
  literal with substitutions, a function) becomes :data:`UNKNOWN`, so a caller can tell "not
  set" (key missing) from "set to something we cannot know";
* :func:`call_arguments` finds the options an integration is called with, where the exported
  object only holds a call: ``integrations: [starlight({…})]`` with ``import starlight from
  '@astrojs/starlight'``; :func:`arguments_of` the object given to a named helper
  (``defineConfig({…})`` inside wrapper calls).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from esrag.errors import ConfigError


class _Unknown:
    """A value computed at build time that a reader cannot know without running the file."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


#: the value of an expression that is not a literal (a call, arithmetic, a function…).
UNKNOWN: Any = _Unknown()


@dataclass(frozen=True, slots=True)
class Token:
    """One ECMAScript token: ``kind`` is ``name``, ``string`` (``value`` decoded), ``template``
    (``value`` decoded when it has no substitution, else None), ``number``, ``regex`` or
    ``punct``; ``line`` is 1-based."""

    kind: str
    value: Any
    line: int


_PUNCT = sorted(
    [
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ";",
        ",",
        "<",
        ">",
        "<=",
        ">=",
        "==",
        "!=",
        "===",
        "!==",
        "+",
        "-",
        "*",
        "/",
        "%",
        "**",
        "++",
        "--",
        "<<",
        ">>",
        ">>>",
        "&",
        "|",
        "^",
        "!",
        "~",
        "&&",
        "||",
        "??",
        "?",
        "?.",
        ":",
        "=",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "=>",
        "...",
        ".",
        "@",
        "#",
    ],
    key=len,
    reverse=True,
)
_NAME = re.compile(r"[A-Za-z_$\u00a0-\uffff][\w$\u00a0-\uffff]*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F_]+n?|0[bB][01_]+n?|0[oO][0-7_]+n?|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?n?")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
# after these a "/" starts a regular expression, not a division (ECMAScript's InputElementRegExp goal)
_REGEX_AFTER_PUNCT = set(_PUNCT) - {")", "]", "}", "++", "--"}
_REGEX_AFTER_NAME = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await"}


class JsSyntaxError(ValueError):
    """The file is not lexically valid JavaScript (an unterminated string, comment or template)."""


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u" and body[i + 2 : i + 3] == "{":
            end = body.index("}", i)
            out.append(chr(int(body[i + 3 : end], 16)))
            i = end + 1
        elif nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "x":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        elif nxt == "\n":  # line continuation
            i += 2
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


class _Lexer:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.line = 1
        self.tokens: list[Token] = []
        self.braces: list[str] = []  # "{" of a block/object, "${" of a template substitution

    def _advance(self, n: int) -> str:
        part = self.s[self.i : self.i + n]
        self.line += part.count("\n")
        self.i += n
        return part

    def _regex_allowed(self) -> bool:
        if not self.tokens:
            return True
        last = self.tokens[-1]
        if last.kind == "punct":
            return last.value in _REGEX_AFTER_PUNCT
        return last.kind == "name" and last.value in _REGEX_AFTER_NAME

    def run(self) -> list[Token]:
        s = self.s
        while self.i < len(s):
            ch = s[self.i]
            if ch in " \t\r\n\ufeff\u2028\u2029\xa0":
                self._advance(1)
            elif s.startswith("//", self.i) or (self.i == 0 and s.startswith("#!")):
                end = s.find("\n", self.i)
                self._advance((end if end >= 0 else len(s)) - self.i)
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                if end < 0:
                    raise JsSyntaxError(f"line {self.line}: unterminated /* comment")
                self._advance(end + 2 - self.i)
            elif ch in "'\"":
                self._string(ch)
            elif ch == "`":
                self._template()
            elif ch == "}" and self.braces and self.braces[-1] == "${":
                self.braces.pop()
                self._template(continued=True)
            elif ch == "/" and self._regex_allowed():
                self._regex()
            elif ch.isdigit() or (ch == "." and s[self.i + 1 : self.i + 2].isdigit()):
                m = _NUMBER.match(s, self.i)
                assert m is not None
                self.tokens.append(Token("number", self._number(m.group(0)), self.line))
                self._advance(len(m.group(0)))
            elif (m := _NAME.match(s, self.i)) is not None:
                self.tokens.append(Token("name", m.group(0), self.line))
                self._advance(len(m.group(0)))
            else:
                self._punct()
        return self.tokens

    @staticmethod
    def _number(raw: str) -> Any:
        raw = raw.replace("_", "").rstrip("n")
        try:
            return int(raw, 0) if raw[:2].lower() in ("0x", "0b", "0o") else (float(raw) if any(c in raw for c in ".eE") else int(raw))
        except ValueError:
            return UNKNOWN

    def _punct(self) -> None:
        for p in _PUNCT:
            if self.s.startswith(p, self.i):
                if p == "{":
                    self.braces.append("{")
                elif p == "}" and self.braces:
                    self.braces.pop()
                self.tokens.append(Token("punct", p, self.line))
                self._advance(len(p))
                return
        self.tokens.append(Token("punct", self.s[self.i], self.line))  # a stray character: kept, never fatal
        self._advance(1)

    def _string(self, quote: str) -> None:
        line, j = self.line, self.i + 1
        while j < len(self.s) and self.s[j] != quote:
            if self.s[j] == "\n":
                raise JsSyntaxError(f"line {line}: unterminated string")
            j += 2 if self.s[j] == "\\" else 1
        if j >= len(self.s):
            raise JsSyntaxError(f"line {line}: unterminated string")
        body = self._advance(j + 1 - self.i)[1:-1]
        self.tokens.append(Token("string", _unescape(body), line))

    def _template(self, continued: bool = False) -> None:
        """A template literal from its opening backtick (or, ``continued``, from the ``}`` closing
        a substitution) to its end or its next ``${``; one ``template`` token per literal."""
        line, j = self.line, self.i + 1
        while j < len(self.s):
            if self.s[j] == "\\":
                j += 2
            elif self.s[j] == "`":
                break
            elif self.s.startswith("${", j):
                break
            else:
                j += 1
        if j >= len(self.s):
            raise JsSyntaxError(f"line {line}: unterminated template literal")
        body = self._advance(j - self.i)[1:]
        if self.s[j] == "`":
            self._advance(1)
            if continued:
                self._close_template()
            else:
                self.tokens.append(Token("template", _unescape(body), line))
            return
        self._advance(2)  # "${"
        self.braces.append("${")
        if not continued:
            self.tokens.append(Token("template", None, line))
            self.tokens.append(Token("punct", "${", line))

    def _close_template(self) -> None:
        self.tokens.append(Token("punct", "`}", self.line))

    def _regex(self) -> None:
        line, j, in_class = self.line, self.i + 1, False
        while j < len(self.s):
            c = self.s[j]
            if c == "\\":
                j += 2
                continue
            if c == "\n":
                raise JsSyntaxError(f"line {line}: unterminated regular expression")
            if c == "[":
                in_class = True
            elif c == "]":
                in_class = False
            elif c == "/" and not in_class:
                break
            j += 1
        j += 1
        while j < len(self.s) and (self.s[j].isalnum() or self.s[j] == "_"):
            j += 1
        self.tokens.append(Token("regex", self._advance(j - self.i), line))


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text`` (JavaScript or TypeScript), comments dropped.

    A template literal with substitutions becomes ``template`` (value None), ``${`` and the
    tokens of its substitutions, then a ``punct`` token ``"`}"`` where it ends.

    Raises:
        JsSyntaxError: an unterminated comment, string, template or regular expression
            (the message names the line).
    """
    return _Lexer(text).run()


class _Parser:
    """Evaluates literal expressions over a token list (see the module docstring)."""

    def __init__(self, tokens: list[Token], consts: dict[str, int]) -> None:
        self.t = tokens
        self.consts = consts  # top-level const name -> index of its initialiser
        self.resolving: set[str] = set()

    def value(self, i: int) -> tuple[Any, int]:
        """The value of the expression starting at token ``i`` and the index after it."""
        val, j = self._primary(i)
        j = self._skip_ts_suffix(j)
        if j < len(self.t) and not self._ends(j):  # a binary expression, call, member access…
            return UNKNOWN, self._skip_expression(j)
        return val, j

    def _ends(self, j: int) -> bool:
        tok = self.t[j]
        return tok.kind == "punct" and tok.value in (",", "}", "]", ")", ";")

    def _skip_ts_suffix(self, j: int) -> int:
        """Skip TypeScript ``as T`` / ``satisfies T`` / ``!`` after an expression."""
        while j < len(self.t):
            tok = self.t[j]
            if tok.kind == "name" and tok.value in ("as", "satisfies"):
                j = self._skip_expression(j + 1)
            elif tok.kind == "punct" and tok.value == "!" and (j + 1 >= len(self.t) or self._ends(j + 1)):
                j += 1
            else:
                break
        return j

    def _skip_expression(self, j: int) -> int:
        """Index of the ``,`` / closing bracket / ``;`` that ends the expression at ``j``."""
        depth = 0
        while j < len(self.t):
            tok = self.t[j]
            if tok.kind == "punct":
                if tok.value in ("{", "[", "(", "${"):
                    depth += 1
                elif tok.value in ("}", "]", ")", "`}"):
                    if depth == 0:
                        return j
                    depth -= 1
                elif tok.value in (",", ";") and depth == 0:
                    return j
            j += 1
        return j

    def _primary(self, i: int) -> tuple[Any, int]:
        tok = self.t[i]
        if tok.kind in ("string", "number"):
            return tok.value, i + 1
        if tok.kind == "template":
            if tok.value is None:  # with substitutions: computed
                return UNKNOWN, self._skip_template(i + 1)
            return tok.value, i + 1
        if tok.kind == "punct" and tok.value == "{":
            return self._object(i + 1)
        if tok.kind == "punct" and tok.value == "[":
            return self._array(i + 1)
        if tok.kind == "punct" and tok.value == "(":  # a parenthesised expression, unless an arrow function
            close = self._skip_expression(i + 1)
            while close < len(self.t) and self.t[close].value == ",":
                close = self._skip_expression(close + 1)
            after = self.t[close + 1] if close + 1 < len(self.t) else None
            if after is not None and after.kind == "punct" and after.value in ("=>", ":"):
                return UNKNOWN, self._skip_expression(i)
            val, j = self.value(i + 1)
            if j < len(self.t) and self.t[j].value == ")":
                return val, j + 1
            return UNKNOWN, self._skip_expression(i)
        if tok.kind == "punct" and tok.value == "-" and i + 1 < len(self.t) and self.t[i + 1].kind == "number":
            return -self.t[i + 1].value, i + 2
        if tok.kind == "name":
            lit = {"true": True, "false": False, "null": None, "undefined": None}
            if tok.value in lit:
                return lit[tok.value], i + 1
            if tok.value in self.consts and tok.value not in self.resolving and (i + 1 >= len(self.t) or self._ends(i + 1)):
                self.resolving.add(tok.value)
                try:
                    return self.value(self.consts[tok.value])[0], i + 1
                finally:
                    self.resolving.discard(tok.value)
        return UNKNOWN, self._skip_expression(i)

    def _skip_template(self, j: int) -> int:
        depth = 0
        while j < len(self.t):
            tok = self.t[j]
            if tok.kind == "template" and tok.value is None:
                depth += 1
            elif tok.kind == "punct" and tok.value == "`}":
                if depth == 0:
                    return j + 1
                depth -= 1
            j += 1
        return j

    def _object(self, i: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        while i < len(self.t):
            tok = self.t[i]
            if tok.kind == "punct" and tok.value == "}":
                return out, i + 1
            if tok.kind == "punct" and tok.value == ",":
                i += 1
                continue
            if tok.kind == "punct" and tok.value == "...":  # a spread: its keys are not known
                i = self._skip_expression(i + 1)
                continue
            key: Any
            if tok.kind in ("name", "string", "number"):
                key, i = str(tok.value), i + 1
            elif tok.kind == "punct" and tok.value == "[":  # computed key
                i = self._skip_expression(i + 1) + 1
                key = None
            else:
                i = self._skip_expression(i)
                continue
            if key in ("get", "set", "async") and i < len(self.t) and self.t[i].kind in ("name", "string"):
                key, i = None, i + 1  # accessor / async method: skipped below
            nxt = self.t[i] if i < len(self.t) else None
            if nxt is not None and nxt.kind == "punct" and nxt.value == ":":
                val, i = self.value(i + 1)
                if key is not None:
                    out[key] = val
            elif nxt is not None and nxt.kind == "punct" and nxt.value == "(":  # a method
                i = self._skip_expression(self._skip_expression(i + 1) + 1)
                if key is not None:
                    out[key] = UNKNOWN
            else:  # shorthand {name}
                if key is not None:
                    out[key] = self._primary(i - 1)[0] if tok.kind == "name" else UNKNOWN
        return out, i

    def _array(self, i: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        while i < len(self.t):
            tok = self.t[i]
            if tok.kind == "punct" and tok.value == "]":
                return out, i + 1
            if tok.kind == "punct" and tok.value == ",":
                i += 1
                continue
            if tok.kind == "punct" and tok.value == "...":
                i = self._skip_expression(i + 1)
                out.append(UNKNOWN)
                continue
            val, i = self.value(i)
            out.append(val)
        return out, i


def _top_level_bindings(tokens: list[Token]) -> dict[str, int]:
    """``const|let|var NAME [: Type] = …`` at brace depth 0: name -> index of the initialiser."""
    out: dict[str, int] = {}
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.kind == "punct" and tok.value in ("{", "(", "[", "${"):
            depth += 1
        elif tok.kind == "punct" and tok.value in ("}", ")", "]", "`}"):
            depth -= 1
        elif depth == 0 and tok.kind == "name" and tok.value in ("const", "let", "var") and i + 1 < len(tokens):
            name = tokens[i + 1]
            if name.kind != "name":
                continue
            j = i + 2
            if j < len(tokens) and tokens[j].kind == "punct" and tokens[j].value == ":":  # a type annotation
                angle = 0
                j += 1
                while j < len(tokens) and not (tokens[j].kind == "punct" and tokens[j].value == "=" and angle == 0):
                    angle += {"<": 1, ">": -1}.get(tokens[j].value, 0) if tokens[j].kind == "punct" else 0
                    j += 1
            if j < len(tokens) and tokens[j].kind == "punct" and tokens[j].value == "=":
                out.setdefault(name.value, j + 1)
    return out


def _export_index(tokens: list[Token]) -> int | None:
    """Index of the exported configuration expression (``export default X`` or
    ``module.exports = X``), or None."""
    for i, tok in enumerate(tokens):
        if tok.kind != "name":
            continue
        if tok.value == "export" and i + 1 < len(tokens) and tokens[i + 1].value == "default":
            return i + 2
        if (
            tok.value == "module"
            and i + 3 < len(tokens)
            and tokens[i + 1].value == "."
            and tokens[i + 2].value == "exports"
            and tokens[i + 3].value == "="
        ):
            return i + 4
    return None


def evaluate(text: str) -> dict[str, Any]:
    """The exported configuration object of a JS/TS configuration file's ``text`` (see the
    module docstring); values that are computed at build time are :data:`UNKNOWN`.

    Raises:
        JsSyntaxError: lexically invalid JavaScript, or no exported object literal found.
    """
    tokens = tokenize(text)
    consts = _top_level_bindings(tokens)
    parser = _Parser(tokens, consts)
    start = _export_index(tokens)
    if start is None:
        raise JsSyntaxError("no `export default` or `module.exports =` found")
    val = _exported_value(tokens, start, parser)
    if not isinstance(val, dict):
        tok = tokens[start] if start < len(tokens) else None
        raise JsSyntaxError(f"line {tok.line if tok else 0}: the exported value is not an object literal")
    return val


def _exported_value(tokens: list[Token], i: int, parser: _Parser) -> Any:
    """The value of the exported expression at ``i``: an object literal (or a name bound to
    one), the object a config function returns (``export default async function create() {
    … return {…}; }``, an arrow function, or a name bound to either), or the object passed to a
    wrapper call (``defineConfig({…})``)."""
    tok = tokens[i] if i < len(tokens) else None
    if tok is None:
        return UNKNOWN
    if tok.kind == "name" and tok.value in ("async", "function"):
        return _returned(tokens, i, parser)
    if tok.kind == "name" and i + 1 < len(tokens) and tokens[i + 1].value == "(" and tok.value not in parser.consts:
        return parser.value(i + 2)[0]  # defineConfig({...})
    if tok.kind == "name" and tok.value in parser.consts:
        j = parser.consts[tok.value]
        if tokens[j].kind == "name" and tokens[j].value in ("async", "function") or _is_arrow(tokens, j):
            return _returned(tokens, j, parser)
    for j in range(len(tokens) - 1):  # export default NAME; … function NAME() {…}
        if tok.kind == "name" and tokens[j].value == "function" and tokens[j + 1].value == tok.value:
            return _returned(tokens, j, parser)
    if _is_arrow(tokens, i):
        return _returned(tokens, i, parser)
    return parser.value(i)[0]


def _is_arrow(tokens: list[Token], i: int) -> bool:
    j = i + 1 if tokens[i].value == "async" else i
    if j < len(tokens) and tokens[j].value == "(":
        depth = 0
        for k in range(j, len(tokens)):
            if tokens[k].value == "(":
                depth += 1
            elif tokens[k].value == ")":
                depth -= 1
                if depth == 0:
                    return k + 1 < len(tokens) and tokens[k + 1].value in ("=>", ":")
    return False


def _returned(tokens: list[Token], i: int, parser: _Parser) -> Any:
    """The value a function starting at ``i`` returns: its last ``return`` at the body's own
    level, or an arrow function's expression body."""
    j = i
    while j < len(tokens) and not (tokens[j].kind == "punct" and tokens[j].value in ("{", "=>")):
        j += 1
    if j < len(tokens) and tokens[j].value == "=>":
        if j + 1 < len(tokens) and tokens[j + 1].value != "{":
            return parser.value(j + 1)[0]
        j += 1
    if j >= len(tokens):
        return UNKNOWN
    depth, found = 0, None
    for k in range(j, len(tokens)):
        t = tokens[k]
        if t.kind == "punct" and t.value in ("{", "${"):
            depth += 1
        elif t.kind == "punct" and t.value in ("}", "`}"):
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and t.kind == "name" and t.value == "return":
            found = k
    return parser.value(found + 1)[0] if found is not None else UNKNOWN


def _default_import(tokens: list[Token], module: str) -> str | None:
    """The name bound to ``module``'s default export: ``import NAME from 'module'`` (also
    ``import NAME, {…} from``) or ``const NAME = require('module')``; None when not imported."""
    for i, tok in enumerate(tokens[:-3]):
        nxt = tokens[i + 1]
        if tok.kind != "name" or nxt.kind != "name":
            continue
        if tok.value == "import" and nxt.value not in ("type", "*"):
            j = i + 2
            while j < len(tokens) and tokens[j].kind != "string" and tokens[j].value != ";":
                j += 1
            if j < len(tokens) and tokens[j].kind == "string" and tokens[j].value == module and tokens[j - 1].value == "from":
                return str(nxt.value)
        if tok.value in ("const", "let", "var") and tokens[i + 2].value == "=" and tokens[i + 3].value == "require":
            arg = tokens[i + 5] if i + 5 < len(tokens) else None
            if arg is not None and arg.kind == "string" and arg.value == module:
                return str(nxt.value)
    return None


def call_arguments(text: str, module: str) -> list[Any] | None:
    """The first argument of every call of ``module``'s default import in ``text``
    (``starlight({...})`` inside ``integrations: [...]`` after ``import starlight from
    '@astrojs/starlight'``), evaluated as :func:`evaluate` does (``{}`` for a call without
    arguments, :data:`UNKNOWN` when computed); None when ``text`` does not import ``module``.

    Raises:
        JsSyntaxError: lexically invalid JavaScript.
    """
    tokens = tokenize(text)
    name = _default_import(tokens, module)
    return None if name is None else _first_arguments(tokens, name)


def arguments_of(text: str, callee: str) -> list[Any]:
    """The first argument of every call ``callee(…)`` in ``text`` (a helper such as VitePress's
    ``defineConfig({…})``, however it is wrapped: ``withPwa(defineConfig({…}))``), evaluated as
    :func:`evaluate` does; [] when there is none.

    Raises:
        JsSyntaxError: lexically invalid JavaScript.
    """
    return _first_arguments(tokenize(text), callee)


def _first_arguments(tokens: list[Token], name: str) -> list[Any]:
    """The evaluated first argument of every call of ``name`` in ``tokens`` (not its
    declaration, import or a method of that name)."""
    parser = _Parser(tokens, _top_level_bindings(tokens))
    out: list[Any] = []
    for i in range(1, len(tokens) - 2):
        tok, prev = tokens[i], tokens[i - 1]
        if tok.kind == "name" and tok.value == name and tokens[i + 1].value == "(" and prev.value not in ("import", "function", "."):
            out.append({} if tokens[i + 2].value == ")" else parser.value(i + 2)[0])
    return out


def read_config(path: Path) -> dict[str, Any]:
    """:func:`evaluate` on the file at ``path``.

    Raises:
        ConfigError: unreadable or lexically invalid file, or no exported object literal (the
            message names the file and line).
    """
    try:
        return evaluate(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except JsSyntaxError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def plain(value: Any) -> Any:
    """``value`` with :data:`UNKNOWN` written as the string ``"<computed>"`` (for reports and JSON)."""
    return json.loads(json.dumps(value, default=lambda v: "<computed>"))
