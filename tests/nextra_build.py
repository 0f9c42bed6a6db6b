"""Heading ids of Nextra pages as Nextra's own MDX compiler gives them, for the conformance test of
:mod:`esrag.sites.nextra` (:mod:`test_sites_nextra`).

``nextra`` 4.6.1 (with the ``next`` / ``react`` it peers with) is installed once per machine under
``~/.cache/esrag-tests/nextra-4.6.1`` from npm. Each page goes through ``compileMdx`` from
``nextra/compile`` — the same remark/rehype chain (``remark-custom-heading-id``,
``remark-headings``: github-slugger per page, no id on the h1) that ``next build`` runs through
Nextra's loader — with code highlighting off (it changes no heading) and one extra rehype plugin,
run after every remark plugin, that records the ``id`` of each ``h1``–``h6`` element. A full
``next build`` of the corpus is not possible (its pages import layouts, components and
``examples/`` the corpus lacks); page URLs follow the Next.js app router rule, which
:mod:`test_sites_nextra` checks on its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

NEXTRA_VERSION = "4.6.1"
ROOT = Path.home() / ".cache" / "esrag-tests" / f"nextra-{NEXTRA_VERSION}"
PACKAGE = {
    "name": "esrag-nextra-ids",
    "private": True,
    "type": "module",
    "dependencies": {"nextra": NEXTRA_VERSION, "next": "15.5.7", "react": "19.2.1", "react-dom": "19.2.1"},
}
#: reads paths (one per line) on stdin, writes ``{path: [id, …] | {"error": message}}``
IDS_SCRIPT = """import { compileMdx } from 'nextra/compile'
import fs from 'node:fs'
const files = fs.readFileSync(0, 'utf8').split('\\n').filter(Boolean)
const out = {}
for (const f of files) {
  const ids = []
  const collect = () => (tree) => {
    const walk = (n) => {
      if (n.type === 'element' && /^h[1-6]$/.test(n.tagName) && n.properties && n.properties.id) ids.push(String(n.properties.id))
      for (const c of n.children || []) walk(c)
    }
    walk(tree)
  }
  try {
    await compileMdx(fs.readFileSync(f, 'utf8'), { filePath: f, codeHighlight: false, mdxOptions: { jsx: true, outputFormat: 'program', rehypePlugins: [collect] } })
    out[f] = ids
  } catch (e) { out[f] = { error: String((e && e.message) || e).split('\\n')[0] } }
}
process.stdout.write(JSON.stringify(out))
"""


def install() -> Path:
    """The folder holding the pinned packages and the ids script (``npm install`` once, ~30 s).

    Raises:
        AssertionError: node or npm is missing, or the install failed (with the output's tail).
    """
    assert shutil.which("node") and shutil.which("npm"), "node and npm are needed (Node 20; scripts/setup test)"
    ROOT.mkdir(parents=True, exist_ok=True)
    package = json.dumps(PACKAGE, indent=2)
    if not (ROOT / "node_modules" / "nextra").is_dir() or (ROOT / "package.json").read_text() != package:
        (ROOT / "package.json").write_text(package)
        proc = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund"], cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False
        )
        assert proc.returncode == 0, f"npm install failed in {ROOT}:\n{(proc.stdout + proc.stderr)[-3000:]}"
    (ROOT / "ids.mjs").write_text(IDS_SCRIPT)
    return ROOT


def heading_ids(pages: list[Path]) -> dict[Path, list[str]]:
    """``{page: ids of its headings in document order}`` from Nextra's compiler.

    Raises:
        AssertionError: a page does not compile (named, with Nextra's message).
    """
    root = install()
    proc = subprocess.run(
        ["node", "ids.mjs"], cwd=root, input="\n".join(str(p) for p in pages), capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, f"nextra compile failed:\n{proc.stderr[-3000:]}"
    out: dict[Path, list[str]] = {}
    for name, ids in json.loads(proc.stdout).items():
        assert isinstance(ids, list), f"{name}: {ids['error']}"
        out[Path(name)] = ids
    return out
