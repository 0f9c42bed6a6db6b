"""Helpers for the whole-site tests: every section URL esrag writes for a corpus, a build of the
corpus with its real generator (cached for the test session), and the check that each URL names
a page of the build and an element with that id on it (read with the stdlib's HTML parser).

The chunks come from the same steps ``esrag ingest`` takes per file (:func:`esrag.sources.discover`
with ``ingest.include`` plus the generator's own suffixes, :meth:`esrag.sites.Site.prepare`, the
configured chunker, :meth:`esrag.sites.Site.apply`), without embedding them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from esrag.app import make_chunker
from esrag.config import load_settings
from esrag.model import Chunk
from esrag.sites import Site, resolve_site
from esrag.sources import discover, load_document


@dataclass
class SiteChunks:
    """What an ingest would write: chunks (with url/alt_urls) and the files left out (path, reason)."""

    chunks: list[Chunk] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path, problem) the chunker left
    site: Site | None = None  # the resolved site (its describe() is the summary's site block)


def site_chunks(root: Path, site: str | None, base_url: str, built_site: Path | None = None, sitemap: str | None = None) -> SiteChunks:
    """Chunk ``root`` as ``esrag ingest ROOT [--site SITE] --base-url BASE_URL [--built-site DIR]
    [--sitemap FILE]`` does."""
    settings = load_settings()
    where = resolve_site(root, site, base_url)
    if built_site is not None or sitemap:
        where.attach_built(built_site, sitemap)
    chunker = make_chunker(settings)
    out = SiteChunks(site=where)
    for src in discover(root, [*settings.ingest.include, *where.include], settings.ingest.exclude):
        doc = load_document(src, "c", settings.ingest.max_file_bytes)
        reason = where.prepare(doc)
        if reason:
            out.skipped.append((src.rel, reason))
            continue
        doc.source, doc.root = str(src.path), str(where.include_root or src.root)  # as Ingester._chunked
        chunks = chunker.chunk(doc)
        where.apply(doc, chunks)
        out.chunks.extend(chunks)
        out.problems.extend((src.rel, p) for p in doc.problems)
    return out


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value is not None:
                self.ids.add(value)
            elif name == "name" and tag == "a" and value is not None:  # <a name> is a fragment target too
                self.ids.add(value)


class Build:
    """A generator's output folder; ``resolve(url)`` checks one URL against it."""

    def __init__(self, out: Path, base_url: str, clean_urls: bool = False) -> None:
        self.out, self.base = out, base_url
        self.clean_urls = clean_urls  # VitePress cleanUrls: /guide/x is served from guide/x.html
        self._pages: dict[Path, set[str] | None] = {}

    def page_file(self, url: str) -> Path:
        path = unquote(urlsplit(url).path)
        rel = path[len(urlsplit(self.base).path) :] if path.startswith(urlsplit(self.base).path) else path.lstrip("/")
        file = self.out / rel
        if rel.endswith("/") or rel == "":
            return file / "index.html"
        return file.with_name(file.name + ".html") if self.clean_urls and not file.name.endswith(".html") else file

    def ids(self, file: Path) -> set[str] | None:
        if file not in self._pages:
            if not file.is_file():
                self._pages[file] = None
            else:
                parser = _Ids()
                parser.feed(file.read_text(encoding="utf-8", errors="replace"))
                self._pages[file] = parser.ids
        return self._pages[file]

    def problem(self, url: str) -> str:
        """'' when ``url``'s page exists and carries its fragment as an id, else what is wrong."""
        if not url.startswith(self.base):
            return "outside the base URL"
        file = self.page_file(url)
        ids = self.ids(file)
        if ids is None:
            return f"no page {file.relative_to(self.out)}"
        fragment = unquote(urlsplit(url).fragment)
        if fragment and fragment not in ids:
            return f"no id {fragment!r} on {file.relative_to(self.out)}"
        return ""


@dataclass
class Report:
    """Distinct section URLs and alternative URLs checked, and the failures (url, problem)."""

    urls: int
    failed: list[tuple[str, str]]
    alt_urls: int
    alt_failed: list[tuple[str, str]]

    @property
    def share(self) -> float:
        return 1 - len(self.failed) / self.urls if self.urls else 0.0

    def __str__(self) -> str:
        head = "; ".join(f"{u} ({p})" for u, p in self.failed[:8])
        alt = "; ".join(f"{u} ({p})" for u, p in self.alt_failed[:5])
        return (
            f"{self.urls - len(self.failed)}/{self.urls} section URLs resolve ({self.share:.2%}); "
            f"alt {self.alt_urls - len(self.alt_failed)}/{self.alt_urls}; failures: {head}; alt failures: {alt}"
        )


def check(build: Build, chunks: list[Chunk]) -> Report:
    """Every distinct section URL (a chunk's ``url`` with ``#anchor``) and alternative URL of ``chunks``
    checked against ``build``."""
    urls = sorted({c.url for c in chunks if c.url and "#" in c.url})
    alts = sorted({u for c in chunks for u in c.alt_urls})
    failed = [(u, p) for u in urls if (p := build.problem(u))]
    alt_failed = [(u, p) for u in alts if (p := build.problem(u))]
    return Report(len(urls), failed, len(alts), alt_failed)


def run(cmd: list[str], cwd: Path, timeout: float = 1200) -> None:
    """Run a generator; AssertionError with its output's tail when it fails."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def sphinx_build(src: Path, out: Path, builder: str = "dirhtml", conf_tail: str = "") -> Path:
    """``sphinx-build -b BUILDER`` of the Sphinx source folder ``src`` (a copy of it, so the
    corpus stays untouched) into ``out``; intersphinx inventories are not fetched (no network
    in tests): cross-project references fall back to text, which changes no id. ``conf_tail``
    is appended to the copy's conf.py (settings naming theme files the corpus lacks)."""
    work = out.parent / (out.name + "-src")
    shutil.copytree(src.parent, work, dirs_exist_ok=True)
    if conf_tail:
        conf = work / src.name / "conf.py"
        conf.write_text(conf.read_text(encoding="utf-8") + "\n" + conf_tail + "\n", encoding="utf-8")
    options = [x for k, v in {"intersphinx_mapping": "", "intersphinx_disabled_reftypes": "*"}.items() for x in ("-D", f"{k}={v}")]
    run([sys.executable, "-m", "sphinx", "-b", builder, "-q", *options, str(work / src.name), str(out)], cwd=work / src.name)
    return out


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_dump(data: dict, prefix: str = "") -> str:
    """A TOML document of nested dicts of strings, numbers, booleans and lists (enough for a
    book.toml)."""
    lines = [f'"{k}" = {_toml_value(v)}' for k, v in data.items() if not isinstance(v, dict)]
    out = ([f"[{prefix}]"] if prefix and lines else []) + lines
    for k, v in data.items():
        if isinstance(v, dict):
            out.append(toml_dump(v, f'{prefix}."{k}"' if prefix else f'"{k}"'))
    return "\n".join(out)


MDBOOK_VERSION = "^0.4"
MDBOOK_ROOT = Path.home() / ".cache" / "esrag-tests" / "mdbook-0.4"


def mdbook() -> str:
    """The ``mdbook`` binary (0.4, the release line the books are built with): on PATH, else
    installed once with ``cargo install mdbook --version ^0.4 --locked`` under
    ``~/.cache/esrag-tests/mdbook-0.4`` (a few minutes of compiling, once per machine)."""
    found = shutil.which("mdbook")
    if found:
        return found
    binary = MDBOOK_ROOT / "bin" / "mdbook"
    if not binary.is_file():
        cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
        run(
            [cargo, "install", "mdbook", "--version", MDBOOK_VERSION, "--locked", "--root", str(MDBOOK_ROOT)], cwd=Path.home(), timeout=3600
        )
    return str(binary)


def mdbook_build(book: Path, out: Path, drop: tuple[str, ...] = ()) -> Path:
    """``mdbook build`` of a copy of ``book`` into ``out``, with the book.toml tables named in
    ``drop`` (dotted, e.g. ``preprocessor.trpl-note``) removed: preprocessors and renderers
    whose binaries are not installed here."""
    import tomllib

    work = out.parent / (out.name + "-src")
    shutil.copytree(book, work, dirs_exist_ok=True)
    cfg = tomllib.loads((work / "book.toml").read_text(encoding="utf-8"))
    for dotted in drop:
        *parents, last = dotted.split(".")
        table = cfg
        for p in parents:
            table = table.get(p, {})
        table.pop(last, None)
    (work / "book.toml").write_text(toml_dump(cfg) + "\n", encoding="utf-8")
    run([mdbook(), "build", "--dest-dir", str(out), str(work)], cwd=work)
    return out


def _importable(extension: str) -> bool:
    import importlib.util

    module = extension if "." in extension else f"markdown.extensions.{extension}"
    try:
        return importlib.util.find_spec(module.split(":")[0]) is not None
    except (ImportError, ValueError):
        return False


def _dumper():
    """A YAML dumper writing :class:`esrag.sites.mkdocs.PyName` / ``PyApply`` back as their tags."""
    import yaml

    from esrag.sites.mkdocs import PyApply, PyName

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(PyName, lambda d, v: d.represent_scalar(f"tag:yaml.org,2002:python/name:{v.name}", ""))
    Dumper.add_representer(
        PyApply, lambda d, v: d.represent_mapping(f"tag:yaml.org,2002:python/object/apply:{v.name}", {"args": list(v.args), "kwds": v.kwds})
    )
    return Dumper


_Dumper = _dumper()


def mkdocs_build(tree: Path, config: str, out: Path) -> tuple[Path, list[str]]:
    """``mkdocs build`` of a copy of ``tree`` with its config ``config`` (relative to ``tree``)
    into ``out``. What does not install or is not in the corpus is left out of the copy's
    config: plugins but ``search``, ``hooks``, ``watch``, a missing ``theme.custom_dir`` and Markdown
    extensions whose module is missing. Returns the output folder and what was left out."""
    import yaml

    from esrag.sites.mkdocs import load_yaml

    work = out.parent / (out.name + "-src")
    shutil.copytree(tree, work, dirs_exist_ok=True)
    path = work / config
    cfg = load_yaml(path)
    left_out = [
        f"plugin {p if isinstance(p, str) else next(iter(p))}"
        for p in cfg.get("plugins") or []
        if (p if isinstance(p, str) else next(iter(p))) != "search"
    ]
    cfg["plugins"] = ["search"]
    for key in ("hooks", "watch"):  # hook scripts; watch paths of the source code (not in the corpus)
        if cfg.pop(key, None):
            left_out.append(key)
    theme = cfg.get("theme")
    if isinstance(theme, dict) and theme.get("custom_dir") and not (path.parent / theme["custom_dir"]).is_dir():
        left_out.append(f"theme.custom_dir {theme.pop('custom_dir')}")
    ext = cfg.get("markdown_extensions") or []
    items = list(ext.items()) if isinstance(ext, dict) else [(e, None) if isinstance(e, str) else next(iter(e.items())) for e in ext]
    kept = [(n, v) for n, v in items if _importable(n)]
    left_out += [f"markdown extension {n}" for n, _ in items if not _importable(n)]
    cfg["markdown_extensions"] = [{n: v} if v is not None else n for n, v in kept]
    path.write_text(yaml.dump(cfg, Dumper=_Dumper, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(path), "-d", str(out)], cwd=path.parent)
    return out, left_out


VITEPRESS_VERSION = "2.0.0-alpha.20"  # the first release after the vitepress-docs corpus commit (ed2bfb26)
VITEPRESS_ROOT = Path.home() / ".cache" / "esrag-tests" / f"vitepress-{VITEPRESS_VERSION}"


def vitepress() -> Path:
    """The ``vitepress`` CLI script (the pinned version), installed once with ``npm install
    --no-audit --no-fund vitepress@VERSION`` under ``~/.cache/esrag-tests/vitepress-VERSION``."""
    script = VITEPRESS_ROOT / "node_modules" / "vitepress" / "bin" / "vitepress.js"
    if not script.is_file():
        VITEPRESS_ROOT.mkdir(parents=True, exist_ok=True)
        (VITEPRESS_ROOT / "package.json").write_text('{"private": true}\n', encoding="utf-8")
        run(["npm", "install", "--no-audit", "--no-fund", f"vitepress@{VITEPRESS_VERSION}"], cwd=VITEPRESS_ROOT, timeout=1800)
    return script


def vitepress_build(tree: Path, project: str, out: Path, stubs: dict[str, str | bytes] | None = None) -> Path:
    """``vitepress build PROJECT --outDir OUT`` of a (writable) copy of ``tree``; ``stubs``
    (path relative to the copy -> content) are written first: files the corpus lacks that the
    build imports (images of ``public/``, Vue components), none of them naming a heading."""
    import os

    work = out.parent / (out.name + "-src")
    shutil.copytree(tree, work, dirs_exist_ok=True, copy_function=shutil.copyfile)
    for folder, _, _ in os.walk(work):
        os.chmod(folder, 0o755)
    for rel, content in (stubs or {}).items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    script = vitepress()
    link = work / "node_modules"
    if not link.exists():
        link.symlink_to(script.parents[2], target_is_directory=True)
    run(["node", str(script), "build", project, "--outDir", str(out)], cwd=work)
    return out
