"""Strict reading of settings: unknown keys, unknown ``ESRAG_*`` variables and bad values, each
said in one line that names the file (or the variable), the dotted key and the way out.

Works on any pydantic model class (:class:`esrag.config.Settings` in practice) by walking its
fields: a field whose type is a model is a section (``[chunking]``); a ``dict[str, Model]``
field is a table of named sections (``[corpora.NAME]``); every other field is a value (a
``dict[str, float]`` value such as ``search.weights`` takes any keys). The closest known key is
found with :func:`difflib.get_close_matches` (Ratcliff/Obershelp similarity, cutoff 0.6).
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError

#: what each pydantic error type says about the expected value (``got`` follows)
_EXPECTED = {
    "int_parsing": "expected an integer",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "set_type": "expected a list",
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
    "path_type": "expected a path",
    "none_required": "expected nothing",
}
_BOUNDS = {"greater_than_equal": ("ge", ">="), "greater_than": ("gt", ">"), "less_than_equal": ("le", "<="), "less_than": ("lt", "<")}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model class in ``annotation`` (``Model`` or ``Model | None``), else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _child(model: type[BaseModel], key: str) -> tuple[str, type[BaseModel] | None] | None:
    """What ``key`` is inside ``model``: ``("section", Model)``, ``("table", Model)`` (a
    ``dict[str, Model]``: any name, then the model's keys), ``("value", None)``, or None when
    ``model`` has no such field."""
    field = model.model_fields.get(key)
    if field is None:
        return None
    sub = _model_of(field.annotation)
    if sub is not None:
        return "section", sub
    if typing.get_origin(field.annotation) is dict:
        args = typing.get_args(field.annotation)
        sub = _model_of(args[1]) if len(args) == 2 else None
        if sub is not None:
            return "table", sub
    return "value", None


def known_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted key of ``model`` (``chunking.tau_max``…; a table's entries as
    ``corpora.NAME.k``)."""
    out: list[str] = []
    for key in model.model_fields:
        kind = _child(model, key)
        assert kind is not None
        path = f"{prefix}{key}"
        if kind[0] == "section" and kind[1] is not None:
            out += known_keys(kind[1], path + ".")
        elif kind[0] == "table" and kind[1] is not None:
            out += known_keys(kind[1], path + ".NAME.")
        else:
            out.append(path)
    return out


def _closest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def suggest_key(model: type[BaseModel], dotted: str) -> str | None:
    """The known key closest to the unknown ``dotted`` key: a sibling with a similar name
    (``chunking.tau_maxx`` -> ``chunking.tau_max``), else a key anywhere with a similar last
    part (``tau_max`` -> ``chunking.tau_max``), else a similar whole key; None if nothing is close."""
    parts = dotted.split(".")
    parent_keys = [k for k in known_keys(model) if _same_parent(k, parts)]
    sibling = _closest(parts[-1], [k.split(".")[-1] for k in parent_keys])
    if sibling is not None:
        return ".".join([*parts[:-1], sibling])
    everything = known_keys(model)
    by_last = {k.split(".")[-1]: k for k in everything}
    last = _closest(parts[-1], by_last)
    if last is not None:
        return by_last[last]
    return _closest(dotted, everything)


def _same_parent(known: str, parts: list[str]) -> bool:
    kparts = known.split(".")
    if len(kparts) != len(parts):
        return False
    return all(k == p or k == "NAME" for k, p in zip(kparts[:-1], parts[:-1]))


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys of ``data`` (a parsed settings file) that ``model`` does not know, in
    file order."""
    out: list[str] = []
    for key, value in data.items():
        kind = _child(model, key)
        path = f"{prefix}{key}"
        if kind is None:
            out.append(path)
        elif kind[0] == "section" and kind[1] is not None and isinstance(value, Mapping):
            out += unknown_keys(kind[1], value, path + ".")
        elif kind[0] == "table" and kind[1] is not None and isinstance(value, Mapping):
            for name, entry in value.items():
                if isinstance(entry, Mapping):
                    out += unknown_keys(kind[1], entry, f"{path}.{name}.")
    return out


def unknown_keys_message(model: type[BaseModel], file: Path | str, keys: list[str]) -> str:
    """One line: ``esrag.toml: unknown setting chunking.tau_maxx (did you mean chunking.tau_max?)``;
    several unknown keys are joined by ``;``."""
    said = []
    for key in keys:
        hint = suggest_key(model, key)
        said.append(f"unknown setting {key}" + (f" (did you mean {hint}?)" if hint else " (see docs/configuration.md)"))
    return f"{file}: " + "; ".join(said)


def env_name(prefix: str, path: Iterable[str]) -> str:
    """``ESRAG_`` + the dotted key's parts, upper-cased, joined by ``__`` (pydantic-settings'
    ``env_nested_delimiter``): ``chunking.tau_max`` -> ``ESRAG_CHUNKING__TAU_MAX``."""
    return prefix + "__".join(p.upper() for p in path)


def env_known(model: type[BaseModel], name: str, prefix: str) -> bool:
    """Whether the variable ``name`` (``ESRAG_CHUNKING__TAU_MAX``) sets a field of ``model``:
    its parts after ``prefix`` split at ``__`` walk sections and tables down to a value (a
    ``dict`` value takes further parts as its keys, as pydantic-settings does)."""
    parts = name[len(prefix) :].lower().split("__")
    current: type[BaseModel] | None = model
    i = 0
    while i < len(parts):
        if current is None:
            return True  # inside a dict value: any key
        kind = _child(current, parts[i])
        if kind is None:
            return False
        if kind[0] == "value":
            field = current.model_fields[parts[i]]
            return i == len(parts) - 1 or typing.get_origin(field.annotation) is dict
        if kind[0] == "table":
            i += 1  # the table entry's name
        current = kind[1]
        i += 1
    return True


def unknown_env(
    model: type[BaseModel], environ: Mapping[str, str], prefix: str, others: Iterable[str], other_prefixes: Iterable[str] = ()
) -> list[tuple[str, str | None]]:
    """``(variable, closest known name or None)`` for each ``prefix*`` variable in ``environ``
    that neither sets a field of ``model`` nor is one of ``others`` (variables esrag reads
    outside the settings) or starts with one of ``other_prefixes``; sorted by name."""
    others = {o.upper() for o in others}
    starts = tuple(p.upper() for p in other_prefixes)
    out = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(prefix) or upper in others or (starts and upper.startswith(starts)):
            continue
        if upper == prefix.rstrip("_") or not env_known(model, upper, prefix):
            out.append((name, _suggest_env(model, upper, prefix, others)))
    return out


def _suggest_env(model: type[BaseModel], name: str, prefix: str, others: set[str]) -> str | None:
    """The known variable closest to ``name``: the settings key :func:`suggest_key` finds for
    it (a table entry's name kept), or one of ``others``, whichever is more alike."""
    rest = name[len(prefix) :].lower()
    key = suggest_key(model, rest.replace("__", ".")) if rest else None
    candidates = [env_name(prefix, key.split("."))] if key else []
    other = _closest(name, others)
    candidates += [other] if other else []
    if not candidates:
        return None
    return max(candidates, key=lambda c: difflib.SequenceMatcher(None, name, c).ratio())


def _got(value: Any) -> str:
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def describe_error(error: Mapping[str, Any], secret: bool) -> str:
    """What one pydantic error says, as ``expected an integer, got "big"`` (the value is left
    out when ``secret``)."""
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind == "value_error":
        return str(error.get("msg", "")).removeprefix("Value error, ")
    if kind in _BOUNDS:
        name, sign = _BOUNDS[kind]
        said = f"expected a number {sign} {ctx.get(name)}"
    elif kind == "literal_error":
        said = f"expected one of {ctx.get('expected', '?')}"
    elif kind in _EXPECTED:
        said = _EXPECTED[kind]
    else:
        said = str(error.get("msg", kind)).lower()
    return said if secret else f"{said}, got {_got(error.get('input'))}"


def _is_secret(model: type[BaseModel], loc: tuple[Any, ...]) -> bool:
    """Whether the value at ``loc`` is a ``SecretStr`` field (its value is never shown)."""
    current: type[BaseModel] | None = model
    i = 0
    while i < len(loc) and current is not None:
        field = current.model_fields.get(str(loc[i]))
        if field is None:
            return False
        if field.annotation in (SecretStr, SecretStr | None):
            return True
        kind = _child(current, str(loc[i]))
        i += 2 if kind is not None and kind[0] == "table" else 1
        current = kind[1] if kind else None
    return False


def validation_message(
    model: type[BaseModel],
    exc: ValidationError,
    environ: Mapping[str, str],
    prefix: str,
    file: Path | str | None,
    file_data: Mapping[str, Any],
    overrides: Mapping[str, Any],
) -> str:
    """One line for a failed validation: each error as ``WHERE: KEY: expected …, got …``, where
    WHERE is the ``ESRAG_*`` variable that set the value (named instead of the key), the settings
    ``file`` that holds it (or the table a missing key belongs in), or ``setting`` for a value
    passed in code (a CLI flag); several errors are joined by ``;``."""
    upper_env = {k.upper(): k for k in environ}
    said = []
    for error in exc.errors():
        loc = tuple(str(p) for p in error.get("loc", ()))
        key = ".".join(loc)
        what = describe_error(error, _is_secret(model, tuple(error.get("loc", ()))))
        var = next((upper_env[n] for n in (env_name(prefix, loc[:i]) for i in range(len(loc), 0, -1)) if n in upper_env), None)
        if var is not None:
            said.append(f"{var}: {what}")
        elif loc and loc[0] in overrides:
            said.append(f"setting {key}: {what}")
        elif file is not None and (_holds(file_data, loc) or (error.get("type") == "missing" and _holds(file_data, loc[:-1]))):
            said.append(f"{file}: {key}: {what}" if key else f"{file}: {what}")  # a whole-settings rule names its keys itself
        else:
            said.append(f"setting {key}: {what}")
    return "; ".join(dict.fromkeys(said))


def _holds(data: Mapping[str, Any], loc: tuple[str, ...]) -> bool:
    current: Any = data
    for part in loc:
        if not isinstance(current, Mapping) or part not in current:
            return False
        current = current[part]
    return True


def source_error_message(message: str, environ: Mapping[str, str], prefix: str) -> str:
    """One line for pydantic-settings' "error parsing value for field "X" from source
    "EnvSettingsSource"" (an ``ESRAG_*`` value that must be JSON — a list or a table — is not):
    names the variables that set field X."""

    match = re.search(r'field "([^"]+)"', message)
    field = match.group(1) if match else ""
    start = env_name(prefix, [field]) if field else prefix
    names = sorted(n for n in environ if n.upper() == start or n.upper().startswith(start + "__"))
    names = [n for n in names if not _json(environ[n])] or names
    where = ", ".join(names) or start
    return f'{where}: not valid JSON (a list or a table is written as JSON, e.g. ["a", "b"] or {{"k": 1}})'


def _json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
