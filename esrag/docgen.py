"""The generated parts of the manual: the CLI reference (``docs/cli.md``), the settings table
(``docs/configuration.md``) and the generators table (``docs/sites.md``, from the ``esrag.sites``
registry), made from the code so that they cannot drift from it.

Each generated block sits between two markers in its page; everything around them is written by
hand and left alone::

    <!-- generated: esrag.docgen cli -->
    ...
    <!-- end generated -->

``python -m esrag.docgen`` rewrites the blocks in place (run it after adding a command, an option
or a setting); ``python -m esrag.docgen --check`` exits 1 naming each page that is out of date.
``tests/test_manual.py`` runs the same check, so a new option or setting without a regenerated
manual fails the suite.

What is read: the click command tree of :data:`esrag.cli.main` (each command's help, usage and
every option and argument with its help text and default), and the settings model
:class:`esrag.config.Settings` (each field, section by section, with its ``ESRAG_*`` variable,
its default, and the ``#:`` comment above it or the ``#`` comment beside it in
``esrag/config.py``), plus :data:`esrag.config.OTHER_ENV`, the variables read outside the
settings.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, SecretStr

ROOT = Path(__file__).resolve().parents[1]
END = "<!-- end generated -->"


def marker(name: str) -> str:
    return f"<!-- generated: esrag.docgen {name} -->"


# ---------------------------------------------------------------------------------------- CLI


def _commands(group: click.Group, path: str) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group, info_name=path)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        yield f"{path} {name}", cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{path} {name}")


def command_tree() -> list[tuple[str, click.Command]]:
    """``[("esrag", main), ("esrag ask", ask), ...]``: every command, depth first, by name."""
    from esrag.cli import main

    return [("esrag", main), *_commands(main, "esrag")]


def _context(path: str) -> click.Context:
    """The context click makes for the command at ``path`` (``"esrag search"``) when a user runs
    it: each level's context a child of its group's, the root made with the group's
    ``context_settings``, so settings children inherit (``-h`` beside ``--help``) show as they
    are used. A parentless context would render ``--help`` alone, and click (8.2+) caches each
    command's help option as made by the first context that asks, so the render would depend on
    what ran before in the process."""
    from esrag.cli import main

    names = path.split()
    ctx = main.make_context(names[0], [], resilient_parsing=True)
    cmd: click.Command = main
    for name in names[1:]:
        assert isinstance(cmd, click.Group)
        sub = cmd.get_command(ctx, name)
        assert sub is not None, path
        ctx = click.Context(sub, info_name=name, parent=ctx, resilient_parsing=True)
        cmd = sub
    return ctx


def _help(text: str | None) -> str:
    """Click help text as Markdown: ``\\b`` markers dropped, paragraphs kept."""
    lines = [ln for ln in inspect.cleandoc(text or "").splitlines() if ln.strip() != "\b"]
    return "\n".join(lines).strip()


def _one_line(text: str) -> str:
    return " ".join(text.split())


#: click 8.3+'s default of an option given none (``click._utils.UNSET``, compared by identity
#: only; older click says None)
_UNSET: object = getattr(importlib.import_module("click._utils"), "UNSET", None)


def _default(ctx: click.Context, param: click.Parameter) -> str | None:
    value = param.get_default(ctx, call=False)
    if (
        value is _UNSET
        or value is None
        or callable(value)
        or value == ()
        or (isinstance(param, click.Option) and param.is_flag and not value)
    ):
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _param_line(ctx: click.Context, param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        name = param.make_metavar(ctx)
        return f"- `{name}` (argument{', required' if param.required else ''})"
    assert isinstance(param, click.Option)
    record = param.get_help_record(ctx)
    flags = record[0] if record else ", ".join(param.opts)
    text = _one_line(param.help or "")
    default = _default(ctx, param)
    if default is not None and "[default:" not in (record[1] if record else ""):
        text += f" Default: `{default}`."
    return f"- `{flags}`" + (f": {text}" if text else "")


def cli_reference() -> str:
    """Every command of ``esrag``: a heading, its help, its usage, its options and arguments."""
    out: list[str] = []
    for path, cmd in command_tree():
        ctx = _context(path)
        depth = 2 if path == "esrag" else 3
        out.append(f"{'#' * depth} `{path}`\n")
        if cmd.help:
            out.append(_help(cmd.help) + "\n")
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        out.append(f"```text\nUsage: {path} {usage}\n```\n")
        params = [p for p in cmd.get_params(ctx) if not getattr(p, "hidden", False) and p.name != "help"]
        if params:
            out.append("\n".join(_param_line(ctx, p) for p in params) + "\n")
        if isinstance(cmd, click.Group):
            names = cmd.list_commands(ctx)
            anchor = path.replace(" ", "-")  # a nested group's commands are headed by their whole path
            out.append("Commands: " + ", ".join(f"[`{n}`](#{anchor}-{n})" for n in names) + ".\n")
    return "\n".join(out)


# ----------------------------------------------------------------------------------- settings


def _field_notes(model: type[BaseModel]) -> dict[str, str]:
    """Each field's comment in the model's source: the comment lines right above it and the
    comment beside it (without the leading variable name, which the table shows anyway)."""
    try:
        lines = inspect.getsource(model).splitlines()
    except (OSError, TypeError):
        return {}
    notes: dict[str, str] = {}
    above: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#:").strip())
            continue
        match = re.match(r"\s+(\w+):\s[^#]*?(?:#\s*(.*))?$", line)
        if match and match.group(1) in model.model_fields:
            said = [re.sub(r"^ESRAG_\w+[:;]?\s*", "", s) for s in (*above, match.group(2) or "")]
            text = " ".join(s for s in said if s)
            if text:
                notes[match.group(1)] = text
        above = []
    return notes


def _rst_to_md(text: str) -> str:
    text = re.sub(r":(?:mod|func|class|meth|data|attr):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _toml(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, SecretStr):
        return "(secret)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return json.dumps(str(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    return str(value)


def _default_value(field: Any) -> Any:
    factory = field.default_factory
    return factory() if factory is not None else field.default


def _model_of(annotation: Any) -> type[BaseModel] | None:
    return annotation if inspect.isclass(annotation) and issubclass(annotation, BaseModel) else None


def _dict_model(annotation: Any) -> type[BaseModel] | None:
    args: tuple[Any, ...] = getattr(annotation, "__args__", ())
    return _model_of(args[1]) if getattr(annotation, "__origin__", None) is dict and len(args) == 2 else None


def settings_rows() -> list[tuple[str, str, str, str, str]]:
    """``(section, key, variable, default, note)`` for every setting, nested models expanded
    (``[corpora.NAME]`` with ``NAME`` as the placeholder)."""
    from esrag.config import ENV_PREFIX, Settings

    rows: list[tuple[str, str, str, str, str]] = []

    def walk(model: type[BaseModel], section: str, env: str) -> None:
        notes = _field_notes(model)
        nested: list[tuple[str, type[BaseModel], str, str]] = []
        for name, field in model.model_fields.items():
            sub, many = _model_of(field.annotation), _dict_model(field.annotation)
            key = f"{section}.{name}" if section else name
            if sub is not None:
                nested.append((key, sub, f"{env}{name.upper()}__", ""))
                continue
            if many is not None:
                nested.append((f"{key}.NAME", many, f"{env}{name.upper()}__NAME__", ""))
                continue
            rows.append((section, name, f"{env}{name.upper()}", _toml(_default_value(field)), notes.get(name, "")))
        for key, sub, sub_env, _ in nested:
            walk(sub, key, sub_env)

    walk(Settings, "", ENV_PREFIX)
    return rows


def _other_env_notes() -> list[tuple[str, str]]:
    from esrag import config

    source = inspect.getsource(config)
    block = source.split("OTHER_ENV = (", 1)[1].split("\n)", 1)[0]
    out = []
    for line in block.splitlines():
        names = re.findall(r'"(ESRAG_\w+)"', line)
        note = line.split("#", 1)[1].strip() if "#" in line else ""
        out += [(n, note) for n in names]
    return out


def _cell(text: str) -> str:
    return _one_line(text).replace("|", "\\|")


def settings_reference() -> str:
    """The settings table, one table per section, and the variables read outside the settings."""
    from esrag.config import OTHER_ENV_PREFIXES, Settings

    models: dict[str, type[BaseModel]] = {"": Settings}
    for section, *_ in settings_rows():
        if section and section not in models:
            model: Any = Settings
            for part in section.split("."):
                if part == "NAME":
                    continue
                field = model.model_fields[part]
                model = _model_of(field.annotation) or _dict_model(field.annotation)
            models[section] = model
    out: list[str] = []
    current = None
    for section, key, env, default, note in settings_rows():
        if section != current:
            current = section
            title = "Top-level settings" if not section else f"`[{section}]`"
            out.append(f"\n### {title}\n")
            doc = inspect.getdoc(models[section]) if section else None
            if doc:
                out.append("\n\n".join(_one_line(_rst_to_md(par)) for par in doc.split("\n\n")) + "\n")
            out.append("| setting | environment variable | default | notes |\n|---|---|---|---|")
        out.append(f"| `{key}` | `{env}` | `{_cell(default)}` | {_cell(_rst_to_md(note))} |")
    out.append("\n### Variables read outside the settings\n")
    out.append("| variable | what it is |\n|---|---|")
    out += [f"| `{name}` | {_cell(note)} |" for name, note in _other_env_notes()]
    out.append(f"| `{'*`, `'.join(OTHER_ENV_PREFIXES)}*` | the test suite's own variables |")
    return "\n".join(out).strip("\n") + "\n"


# ------------------------------------------------------------------------------------- pages


def sites_table() -> str:
    """The generators table of ``docs/sites.md``: one row per registered generator
    (:func:`esrag.sites.registry.describe_generators`, in detection order)."""
    from esrag.sites.registry import describe_generators

    rows = ["| `--site` | configuration read | pages, URLs and anchors | rules read from |", "|---|---|---|---|"]
    for g in describe_generators():
        names = ", ".join(f"`{n}`" for n in [g["name"], *g["variants"]])
        config = ", ".join(f"`{c}`" for c in g["config_files"]) or "none (chosen with `--site`)"
        rows.append(f"| {names} | {config} | {_cell(g['summary'])} | {_cell(g['source'])} |")
    return "\n".join(rows)


#: page (relative to the project root) -> {block name: generator}
PAGES: dict[str, dict[str, Callable[[], str]]] = {
    "docs/cli.md": {"cli": cli_reference},
    "docs/configuration.md": {"settings": settings_reference},
    "docs/sites.md": {"sites": sites_table},
}


def render(text: str, blocks: dict[str, Callable[[], str]], page: str = "page") -> str:
    """``text`` with each named block between its markers replaced by what its generator makes.

    Raises:
        ValueError: a block's markers are missing from ``text``.
    """
    for name, make in blocks.items():
        start = marker(name)
        if start not in text or END not in text.split(start, 1)[1]:
            raise ValueError(f"{page}: no {start} ... {END} block")
        head, rest = text.split(start, 1)
        _, tail = rest.split(END, 1)
        text = f"{head}{start}\n\n{make().strip()}\n\n{END}{tail}"
    return text


def stale(root: Path = ROOT) -> list[str]:
    """The pages whose generated blocks differ from what the code makes now."""
    out = []
    for page, blocks in PAGES.items():
        path = root / page
        text = path.read_text(encoding="utf-8")
        if render(text, blocks, page) != text:
            out.append(page)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        pages = stale()
        for page in pages:
            print(f"{page}: out of date; run `python -m esrag.docgen`", file=sys.stderr)
            text = (ROOT / page).read_text(encoding="utf-8")
            diff = difflib.unified_diff(
                text.splitlines(True),
                render(text, PAGES[page], page).splitlines(True),
                f"{page} (committed)",
                f"{page} (the code now)",
                n=1,
            )
            sys.stderr.writelines(list(diff)[:60])
        return 1 if pages else 0
    if args:
        print("usage: python -m esrag.docgen [--check]", file=sys.stderr)
        return 2
    for page, blocks in PAGES.items():
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = render(text, blocks, page)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"{page}: regenerated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
