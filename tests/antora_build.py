"""Real builds for the Antora tests, npm installs cached under ``~/.cache/esrag-tests/``:

* :func:`build`: the Antora CLI and site generator (npm ``antora`` 3) building a component from a
  git repository made in a temporary copy, with a minimal local UI bundle (a ``default.hbs``
  layout writing the page's contents; the default UI is fetched from the network) and
  ``runtime.fetch: false``: the real page paths and the ids Asciidoctor.js writes;
* :func:`section_ids`: Asciidoctor.js (npm ``@asciidoctor/core`` 3) converting each page with
  given attributes, its sections' ids listed in document order.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import yaml

CACHE = Path.home() / ".cache" / "esrag-tests" / "asciidoctorjs"
ANTORA = Path.home() / ".cache" / "esrag-tests" / "antora"
LAYOUT = "<!DOCTYPE html><html><head><title>{{page.title}}</title></head><body>{{{page.contents}}}</body></html>\n"
SCRIPT = r"""
const Asciidoctor = require('@asciidoctor/core')();
const [files, attrs] = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = {};
for (const f of files) {
  const doc = Asciidoctor.loadFile(f, {safe: 'safe', attributes: attrs, catalog_assets: true});
  out[f] = doc.findBy({context: 'section'}).filter(s => s.getLevel() > 0).map(s => s.getId() || '');
}
process.stdout.write(JSON.stringify(out));
"""


def install(folder: Path = CACHE, package: str = "@asciidoctor/core@3", marker: str = "@asciidoctor/core") -> Path:
    """The cached ``node_modules`` holding ``package``; npm must exist."""
    npm = shutil.which("npm")
    assert npm, "npm is required for the Antora conformance tests"
    if not (folder / "node_modules" / marker).is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"private": true}\n')
        subprocess.run([npm, "install", "--no-audit", "--no-fund", package], cwd=folder, check=True, timeout=600)
    return folder / "node_modules"


def build(component: Path, work: Path, site_url: str, urls: dict | None = None) -> tuple[Path, Path]:
    """Build the component whose ``antora.yml`` is in ``component`` with Antora: copied to
    ``work/src/docs`` (a git repository with one commit), the playbook at ``work/src`` (where
    esrag finds it too). Returns (the copied component folder, the output folder)."""
    modules = install(ANTORA, "antora@3", "@antora/site-generator")
    git = shutil.which("git")
    assert git, "git is required: Antora reads content from git repositories"
    src = work / "src"
    shutil.copytree(component, src / "docs", symlinks=True)
    with zipfile.ZipFile(work / "ui.zip", "w") as z:
        z.writestr("layouts/default.hbs", LAYOUT)
        z.writestr("layouts/404.hbs", LAYOUT)
    out = work / "out"
    playbook = {
        "site": {"title": "T", "url": site_url},
        "content": {"sources": [{"url": str(src), "branches": "HEAD", "start_path": "docs"}]},
        "ui": {"bundle": {"url": str(work / "ui.zip")}},
        "output": {"dir": str(out)},
        "runtime": {"fetch": False, "quiet": True},
        "urls": urls or {},
    }
    (src / "antora-playbook.yml").write_text(yaml.safe_dump(playbook))
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "docs"]):
        subprocess.run([git, *cmd], cwd=src, check=True, timeout=120)
    subprocess.run([str(modules / ".bin" / "antora"), "antora-playbook.yml"], cwd=src, check=True, timeout=600, capture_output=True)
    return src / "docs", out


def section_ids(files: list[Path], attributes: dict[str, str]) -> dict[str, list[str]]:
    """``{absolute file: [section id, …]}`` (sections of level ≥ 1, document order) by Asciidoctor.js."""
    install()
    node = shutil.which("node")
    assert node, "node is required for the Asciidoctor.js conformance test"
    payload = json.dumps([[str(f) for f in files], attributes])
    done = subprocess.run([node, "-e", SCRIPT], cwd=CACHE, input=payload, capture_output=True, text=True, check=True, timeout=600)
    return json.loads(done.stdout)
