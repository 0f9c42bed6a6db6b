"""A Starlight site built with the real ``astro`` + ``@astrojs/starlight`` from npm, for the
whole-site tests (:mod:`test_sites_starlight`).

The packages are installed once per machine under ``~/.cache/esrag-tests/starlight-<version>``
(pinned: Astro 5.12.1 and Starlight 0.35.1, what biomejs/website builds with). A build works on a
copy of the site: the copy gets what a Starlight project has beside its pages (``package.json``,
Astro 5's ``src/content.config.ts`` with ``docsLoader()`` / ``docsSchema()``, a ``tsconfig.json``
with the ``@/*`` alias) and a stub for every module an MDX page imports that the corpus does not
hold (components, generated Markdown, images, packages). Stubs render nothing and name no heading,
so no id of the corpus's own pages changes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

ASTRO_VERSION = "5.12.1"
STARLIGHT_VERSION = "0.35.1"
ROOT = Path.home() / ".cache" / "esrag-tests" / f"starlight-{STARLIGHT_VERSION}"

#: what biomejs/website pins (its package.json: @astrojs/mdx 4.3.1, shiki 3.8.1 as an override)
PACKAGE = {
    "name": "esrag-starlight-build",
    "private": True,
    "type": "module",
    "dependencies": {"astro": ASTRO_VERSION, "@astrojs/starlight": STARLIGHT_VERSION, "@astrojs/mdx": "4.3.1"},
    "overrides": {"@astrojs/mdx": "4.3.1", "shiki": "3.8.1"},
}
CONTENT_CONFIG = """import { defineCollection } from 'astro:content';
import { docsLoader } from '@astrojs/starlight/loaders';
import { docsSchema } from '@astrojs/starlight/schema';

export const collections = { docs: defineCollection({ loader: docsLoader(), schema: docsSchema() }) };
"""
# a 1x1 transparent PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000100"
    "05fe02fea75d8a0000000049454e44ae426082"
)
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"></svg>\n'
ASTRO_STUB = "---\n---\n<slot />\n"
# an Astro component written as a module (for imports of framework components: no renderer needed)
MODULE_STUB = "import { createComponent, render } from 'astro/runtime/server/index.js';\nexport default createComponent(() => render``);\n"
# rehype-expressive-code 0.41 fails on an empty fenced block in MDX (``<code>`` without a text
# child): the build's config wraps the site's and gives such blocks one space (no id changes)
BUILD_CONFIG = """import site from './{config}';

function fillEmptyCode() {{
  const walk = (node) => {{
    if (node.type === 'code' && !node.value) node.value = ' ';
    for (const child of node.children || []) walk(child);
  }};
  return walk;
}}
const markdown = site.markdown || {{}};
export default {{ ...site, markdown: {{ ...markdown, remarkPlugins: [...(markdown.remarkPlugins || []), fillEmptyCode] }} }};
"""
_IMPORT = re.compile(r"""^import\s+(?:(?P<what>.+?)\s+from\s+)?["'](?P<spec>[^"']+)["'];?\s*$""")
_FENCE = re.compile(r"^\s*(```|~~~)")
# images Astro resolves itself: Markdown images and front matter files (``hero.image.file``…)
_IMAGE = re.compile(
    r"!\[[^\]]*\]\((?P<md>(?:\.{1,2}|@)/[^)\s]+)|^\s*(?:file|dark|light|image|cover):\s*[\"']?(?P<fm>(?:\.{1,2}|@)/[^\"'\s]+)", re.M
)


def _run(cmd: list[str], cwd: Path, timeout: float) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def install() -> Path:
    """The ``node_modules`` folder with the pinned packages (``npm install`` once, ~1 minute)."""
    if not (ROOT / "node_modules" / ".bin" / "astro").exists():
        ROOT.mkdir(parents=True, exist_ok=True)
        (ROOT / "package.json").write_text(json.dumps(PACKAGE))
        _run(["npm", "install", "--no-audit", "--no-fund"], ROOT, 1800)
    return ROOT / "node_modules"


def page_imports(docs: Path) -> list[tuple[Path, str, str]]:
    """``(page, imported names, module)`` of every top-level ``import`` of the MDX pages under
    ``docs`` (lines in fenced code blocks are examples, not imports)."""
    out = []
    for page in sorted(docs.rglob("*.mdx")):
        fenced = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            elif not fenced and (m := _IMPORT.match(line)):
                out.append((page, m.group("what") or "", m.group("spec")))
    return out


def _stub_file(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix.lower()
    if suffix in (".png", ".jpg", ".jpeg", ".webp", ".gif"):
        target.write_bytes(PNG)
    elif suffix == ".svg":
        target.write_text(SVG)
    elif suffix == ".astro":
        target.write_text(ASTRO_STUB)
    elif suffix in (".md", ".mdx", ".css", ".scss"):
        target.write_text("")
    else:
        target.write_text(MODULE_STUB)


def _package_stub(work: Path, what: str, spec: str) -> str:
    """A module standing in for the package ``spec`` (its named imports as functions returning '')."""
    names = re.findall(r"\b(\w+)\b", what.split("{", 1)[1]) if "{" in what else []
    file = work / "stubs" / (re.sub(r"\W+", "_", spec) + ".js")
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("".join(f"export const {n} = async () => '';\n" for n in names if n != "as") + "export default {};\n")
    return "./" + file.relative_to(work).as_posix()


def stub_imports(work: Path, node_modules: Path) -> list[str]:
    """Stub every module the copy's MDX pages import that is missing; returns what was stubbed.
    ``@/x`` is ``src/x`` (biomejs/website's tsconfig alias); packages get a module mapped by
    ``tsconfig.json`` ``paths``."""
    paths: dict[str, list[str]] = {"@/*": ["./src/*"]}
    stubbed = []
    for page, what, spec in page_imports(work / "src" / "content" / "docs"):
        if spec.startswith(("astro:", "node:")):
            continue
        if spec.startswith("@/") or spec.startswith("."):
            target = work / "src" / spec[2:] if spec.startswith("@/") else (page.parent / spec).resolve()
            if not target.exists():
                _stub_file(target)
                stubbed.append(spec)
        elif not (node_modules / spec).exists() and spec not in paths:
            paths[spec] = [_package_stub(work, what, spec)]
            stubbed.append(spec)
    for page in sorted((work / "src" / "content" / "docs").rglob("*.md*")):
        for m in _IMAGE.finditer(page.read_text(encoding="utf-8")):
            spec = m.group("md") or m.group("fm")
            target = work / "src" / spec[2:] if spec.startswith("@/") else (page.parent / spec).resolve()
            if not target.exists():
                _stub_file(target)
                stubbed.append(spec)
    tsconfig = {"extends": "astro/tsconfigs/base", "compilerOptions": {"baseUrl": ".", "paths": paths}}
    (work / "tsconfig.json").write_text(json.dumps(tsconfig, indent=1))
    return sorted(set(stubbed))


def build(site: Path, name: str) -> tuple[Path, float, list[str]]:
    """``astro build`` of a copy of the Starlight site folder ``site`` (its ``astro.config.*`` and
    ``src/``), made in ``~/.cache/esrag-tests/starlight-<version>/builds/<name>`` (below the
    installed ``node_modules``: Vite does not follow a symlinked one); returns the output folder,
    the build's wall time (seconds) and the stubbed modules.

    Raises:
        AssertionError: npm or the build failed (with the output's tail).
    """
    node_modules = install()
    work = ROOT / "builds" / name
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(site, work, copy_function=shutil.copy)
    for path in work.rglob("*"):  # the corpus is read-only; the copy must not be
        path.chmod(0o755 if path.is_dir() else 0o644)
    work.chmod(0o755)
    (work / "package.json").write_text(json.dumps({"name": "esrag-starlight-site", "private": True, "type": "module"}))
    (work / "src" / "content.config.ts").write_text(CONTENT_CONFIG)
    stubbed = stub_imports(work, node_modules)
    config = next(p.name for p in sorted(work.glob("astro.config.*")))
    (work / "astro.esrag-build.mjs").write_text(BUILD_CONFIG.format(config=config))
    start = time.monotonic()
    _run([str(node_modules / ".bin" / "astro"), "build", "--silent", "--config", "astro.esrag-build.mjs"], work, 3600)
    return work / "dist", time.monotonic() - start, stubbed
