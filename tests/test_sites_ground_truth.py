"""The published site as ground truth (``--built-site``, ``--sitemap``): where the tree does not
say how the site is served (requests' docs built with Sphinx's ``dirhtml`` builder while its
conf.py and .readthedocs.yaml say nothing of it), the build's page URLs and heading ids win and
the summary names every page where esrag's own rule differed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import DATA
from site_builds import Build, check, site_chunks, sphinx_build

pytestmark = pytest.mark.integration  # a real Sphinx build

REQUESTS = DATA / "corpora" / "requests-docs"
BASE = "https://requests.readthedocs.io/en/latest/"


@pytest.fixture(scope="module")
def dirhtml(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("requests-dirhtml") / "out"
    return sphinx_build(REQUESTS / "docs", out, "dirhtml", conf_tail='pygments_style = "default"\nhtml_sidebars = {}')


def test_built_site_reproduces_the_build_and_names_every_differing_page(dirhtml):
    own = site_chunks(REQUESTS, None, BASE)  # detected: html builder (the tree says nothing else)
    own_report = check(Build(dirhtml, BASE), own.chunks)
    assert own_report.share < 0.5, str(own_report)  # the rule's .html pages are not in this build
    taken = site_chunks(REQUESTS, None, BASE, built_site=dirhtml)
    report = check(Build(dirhtml, BASE), taken.chunks)
    assert report.urls == own_report.urls and not report.failed, str(report)
    block = taken.site.describe()["built"]
    pages = {c.source_path.removeprefix("docs/") for c in own.chunks}
    assert {d["path"].removeprefix("docs/") for d in block["differs"]} == pages  # every page: x.html -> x/
    assert all(d["computed"].endswith(".html") and d["built"].endswith("/") for d in block["differs"])
    assert not block["missing"]


def test_sitemap_gives_page_urls(dirhtml, tmp_path):
    pages = sorted(p.relative_to(dirhtml).parent.as_posix() for p in dirhtml.rglob("index.html"))
    locs = "".join(f"<url><loc>{BASE}{'' if p == '.' else p + '/'}</loc></url>" for p in pages)
    sitemap = tmp_path / "sitemap.xml"
    sitemap.write_text(f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>')
    taken = site_chunks(REQUESTS, None, BASE, sitemap=str(sitemap))
    report = check(Build(dirhtml, BASE), taken.chunks)
    assert report.share >= 0.99, str(report)


def test_cli_summary_lists_the_pages_the_build_changed(dirhtml, tmp_path):
    env = {**os.environ, "ESRAG_DB": str(tmp_path / "x.db")}
    esrag = str(Path(sys.executable).parent / "esrag")
    proc = subprocess.run(
        [esrag, "ingest", str(REQUESTS), "--base-url", BASE, "--built-site", str(dirhtml), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    built = json.loads(proc.stdout)["site"]["built"]
    assert built["pages"] > 10 and len(built["differs"]) >= 10
    bad = subprocess.run(
        [esrag, "ingest", str(REQUESTS), "--built-site", str(dirhtml)], env=env, capture_output=True, text=True, check=False
    )
    assert bad.returncode != 0
    assert "--built-site needs the site's base URL" in bad.stderr and "Traceback" not in bad.stderr
