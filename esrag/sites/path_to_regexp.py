"""path-to-regexp 6.3 (``src/index.ts`` of pillarjs/path-to-regexp, the version VitePress bundles
for ``rewrites``): :func:`match` and :func:`compile` with their default options.

* ``match(pattern)(path)``: the params of ``path`` (``{name: str | list[str]}``; repeated
  params ``:x*`` / ``:x+`` split at their prefix) or None; case-insensitive (``sensitive:
  false``), a trailing delimiter allowed (``strict: false``), anchored at both ends.
* ``compile(pattern)(params)``: the path with ``params`` filled in (``validate: false``, as
  VitePress's ``resolveRewrites`` calls it).

Tokens: ``:name`` (``[A-Za-z0-9_]``), ``(regex)``, ``{prefix:name(regex)suffix}`` groups,
modifiers ``?``, ``*``, ``+``, ``\\`` escapes; ``/`` and ``.`` are prefixes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_DELIMITER = "/#?"
_PREFIXES = "./"

Params = dict[str | int, "str | list[str]"]


class PathPatternError(ValueError):
    """An invalid path-to-regexp pattern (the message gives the position, as upstream's)."""


@dataclass(slots=True)
class Key:
    """One parameter: ``name`` (a string, or an int for an unnamed ``(regex)``), ``prefix``,
    ``suffix``, ``pattern`` (a regex source), ``modifier`` ('', ``?``, ``*``, ``+``)."""

    name: str | int
    prefix: str
    suffix: str
    pattern: str
    modifier: str


def _escape(s: str) -> str:
    return re.sub(r"([.+*?=^!:${}()\[\]|/\\])", r"\\\1", s)


def _lex(s: str) -> list[tuple[str, int, str]]:
    """upstream ``lexer``: ``(type, index, value)`` tokens ending with ``END``."""
    out: list[tuple[str, int, str]] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c in "*+?":
            out.append(("MODIFIER", i, c))
            i += 1
        elif c == "\\":
            out.append(("ESCAPED_CHAR", i, s[i + 1 : i + 2]))
            i += 2
        elif c in "{}":
            out.append(("OPEN" if c == "{" else "CLOSE", i, c))
            i += 1
        elif c == ":":
            m = re.match(r"[A-Za-z0-9_]+", s[i + 1 :])
            if not m:
                raise PathPatternError(f"Missing parameter name at {i}")
            out.append(("NAME", i, m.group(0)))
            i += 1 + len(m.group(0))
        elif c == "(":
            pattern, i = _lex_pattern(s, i)
            out.append(("PATTERN", i, pattern))
        else:
            out.append(("CHAR", i, c))
            i += 1
    out.append(("END", i, ""))
    return out


def _lex_pattern(s: str, i: int) -> tuple[str, int]:
    count, pattern, j = 1, "", i + 1
    if s[j : j + 1] == "?":
        raise PathPatternError(f'Pattern cannot start with "?" at {j}')
    while j < len(s):
        if s[j] == "\\":
            pattern += s[j : j + 2]
            j += 2
            continue
        if s[j] == ")":
            count -= 1
            if count == 0:
                j += 1
                break
        elif s[j] == "(":
            count += 1
            if s[j + 1 : j + 2] != "?":
                raise PathPatternError(f"Capturing groups are not allowed at {j}")
        pattern += s[j]
        j += 1
    if count:
        raise PathPatternError(f"Unbalanced pattern at {i}")
    if not pattern:
        raise PathPatternError(f"Missing pattern at {i}")
    return pattern, j


class _Parser:
    def __init__(self, s: str) -> None:
        self.t = _lex(s)
        self.i = 0
        self.result: list[str | Key] = []
        self.key = 0

    def take(self, kind: str) -> str | None:
        if self.i < len(self.t) and self.t[self.i][0] == kind:
            self.i += 1
            return self.t[self.i - 1][2]
        return None

    def must(self, kind: str) -> str:
        value = self.take(kind)
        if value is None:
            kind_at, index, _ = self.t[self.i]
            raise PathPatternError(f"Unexpected {kind_at} at {index}, expected {kind}")
        return value

    def text(self) -> str:
        out = ""
        while (v := self.take("CHAR")) is not None or (v := self.take("ESCAPED_CHAR")) is not None:
            out += v
        return out

    def safe_pattern(self, prefix: str) -> str:
        prev = self.result[-1] if self.result else None
        prev_text = prefix or (prev if isinstance(prev, str) else "")
        if prev is not None and not prev_text:
            name = prev.name if isinstance(prev, Key) else prev
            raise PathPatternError(f'Must have text between two parameters, missing text after "{name}"')
        if not prev_text or any(c in prev_text for c in _DELIMITER):
            return f"[^{_escape(_DELIMITER)}]+?"
        return f"(?:(?!{_escape(prev_text)})[^{_escape(_DELIMITER)}])+?"

    def next_key(self) -> int:
        self.key += 1
        return self.key - 1

    def parse(self) -> list[str | Key]:
        path = ""
        while self.i < len(self.t):
            char, name, pattern = self.take("CHAR"), self.take("NAME"), self.take("PATTERN")
            if name or pattern:
                prefix = char or ""
                if prefix not in _PREFIXES:
                    path, prefix = path + prefix, ""
                if path:
                    self.result.append(path)
                    path = ""
                key_name: str | int = name if name else self.next_key()
                pat = pattern or self.safe_pattern(prefix)
                self.result.append(Key(key_name, prefix, "", pat, self.take("MODIFIER") or ""))
                continue
            value = char or self.take("ESCAPED_CHAR")
            if value:
                path += value
                continue
            if path:
                self.result.append(path)
                path = ""
            if self.take("OPEN") is not None:
                self._group()
                continue
            self.must("END")
        return self.result

    def _group(self) -> None:
        prefix = self.text()
        name = self.take("NAME") or ""
        pattern = self.take("PATTERN") or ""
        suffix = self.text()
        self.must("CLOSE")
        key_name: str | int = name or (self.next_key() if pattern else "")
        pat = self.safe_pattern(prefix) if name and not pattern else pattern
        self.result.append(Key(key_name, prefix, suffix, pat, self.take("MODIFIER") or ""))


def parse(pattern: str) -> list[str | Key]:
    """upstream ``parse``: the pattern's literal strings and :class:`Key` parameters.

    Raises:
        PathPatternError: an invalid pattern.
    """
    return _Parser(pattern).parse()


def _regexp(tokens: list[str | Key]) -> tuple[re.Pattern[str], list[Key]]:
    """upstream ``tokensToRegexp`` with its defaults (``strict: false``, ``end: true``)."""
    route, keys = "^", []
    for tok in tokens:
        if isinstance(tok, str):
            route += _escape(tok)
            continue
        prefix, suffix = _escape(tok.prefix), _escape(tok.suffix)
        if not tok.pattern:
            route += f"(?:{prefix}{suffix}){tok.modifier}"
            continue
        keys.append(tok)
        if prefix or suffix:
            if tok.modifier in ("+", "*"):
                mod = "?" if tok.modifier == "*" else ""
                route += f"(?:{prefix}((?:{tok.pattern})(?:{suffix}{prefix}(?:{tok.pattern}))*){suffix}){mod}"
            else:
                route += f"(?:{prefix}({tok.pattern}){suffix}){tok.modifier}"
        else:
            if tok.modifier in ("+", "*"):
                raise PathPatternError(f'Can not repeat "{tok.name}" without a prefix and suffix')
            route += f"({tok.pattern}){tok.modifier}"
    route += f"[{_escape(_DELIMITER)}]?$"
    return re.compile(route, re.IGNORECASE), keys


def match(pattern: str | re.Pattern[str]) -> Callable[[str], Params | None]:
    """upstream ``match(pattern)``: a function from a path to its params, or None.

    A compiled regular expression (VitePress: a ``rewrites`` key starting with ``^``) gives its
    groups as params (named groups by name, the others numbered from 0).

    Raises:
        PathPatternError: an invalid pattern.
    """
    if isinstance(pattern, re.Pattern):
        rx = pattern
        names = {v: k for k, v in rx.groupindex.items()}
        unnamed = iter(range(rx.groups))
        keys = [Key(names[g] if g in names else next(unnamed), "", "", "", "") for g in range(1, rx.groups + 1)]
    else:
        rx, keys = _regexp(parse(pattern))

    def matcher(path: str) -> Params | None:
        m = rx.search(path)
        if m is None:
            return None
        params: Params = {}
        for key, value in zip(keys, m.groups()):
            if value is None:
                continue
            params[key.name] = value.split(key.prefix + key.suffix) if key.modifier in ("*", "+") else value
        return params

    return matcher


def compile(pattern: str) -> Callable[[Params], str]:  # noqa: A001 - upstream's name
    """upstream ``compile(pattern, {validate: false})``: a function from params to a path
    (a missing optional param is left out; a missing required one is left out too, where
    upstream throws).

    Raises:
        PathPatternError: an invalid pattern.
    """
    tokens = parse(pattern)

    def build(params: Params) -> str:
        out = ""
        for tok in tokens:
            if isinstance(tok, str):
                out += tok
                continue
            value = params.get(tok.name)
            values = value if isinstance(value, list) else [value] if isinstance(value, str) else []
            out += "".join(tok.prefix + v + tok.suffix for v in values)
        return out

    return build
