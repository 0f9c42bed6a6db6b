"""The generator registry (esrag.sites.registry): every generator is one module behind one protocol,
registered in the ``esrag.sites`` entry-point group; each has a conformance test on a real site;
a user's package adds one with no edit to esrag; detection finds a site above or below the
ingested folder."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from esrag.errors import ConfigError
from esrag.sites import check_site, resolve_site
from esrag.sites.generator import Generator
from esrag.sites.registry import detect, generator_of, generators, page_anchors, site_names
from paths import DATA, PROJECT

CORPORA = DATA / "corpora"

#: per registered generator, the tests that check its URLs on real sites (a real build where the
#: generator installs from a registry, else its documented rule): ``module::function``.
CONFORMANCE = {
    "mkdocs": ["test_site_builds::test_fastapi_docs_mkdocs_material", "test_site_builds::test_pydantic_docs_mkdocs_material"],
    "mdbook": ["test_site_builds::test_rust_book_mdbook", "test_site_builds::test_async_book_mdbook"],
    "sphinx": [
        "test_site_builds::test_flask_docs_sphinx_dirhtml",
        "test_site_builds::test_requests_docs_sphinx_html",
        "test_sites_myst::test_myst_sphinx_site_every_page_and_url_in_the_build",
    ],
    "docusaurus": ["test_sites_whole::test_docusaurus_whole_site_urls_versions_and_links"],
    "hugo": ["test_sites_whole::test_hugo_whole_site_every_section_url_is_in_the_build"],
    "vitepress": ["test_sites_vitepress::test_vitepress_build_conformance"],
    "starlight": ["test_sites_starlight::test_starlight_build_conformance"],
    "antora": ["test_sites_antora::test_antora_build_conformance", "test_sites_antora::test_antora_asciidoctorjs_conformance"],
    "jupyterbook": ["test_sites_jupyterbook::test_mystmd_build_conformance"],
    "mintlify": ["test_sites_mintlify::test_corpus_own_anchor_links_land_on_section_urls"],  # no public builder: documented rule
    "nextra": ["test_sites_nextra::test_nextra_compile_conformance", "test_sites_nextra::test_corpus_own_links_land_on_pages_and_sections"],
    "gitbook": [  # hosted, no builder: documented Git Sync rule, a sitemap-verified URL model, real spaces
        "test_sites_gitbook::test_real_space_pages_urls_and_skips",
        "test_sites_gitbook::test_summary_tree_gives_published_paths",
    ],
    "zensical": [
        "test_sites_zensical::test_zensical_build_conformance",
        "test_sites_zensical::test_zensical_build_slugify_table_and_offline",
    ],
    # no configuration and no build: GitHub's own slug fixtures and the page rule
    "github": ["test_sites::test_github_slugger_fixtures", "test_sites::test_page_paths"],
    "plain": ["test_sites::test_page_paths"],
}


def test_every_registered_generator_has_a_conformance_test():
    registered = set(generators())
    assert registered == set(CONFORMANCE), f"generators without a conformance test: {registered - set(CONFORMANCE)}"
    for name, tests in CONFORMANCE.items():
        for node in tests:
            module, func = node.split("::")
            assert callable(getattr(importlib.import_module(module), func, None)), f"{name}: {node} does not exist"


def test_registry_gives_site_names_rules_and_errors():
    assert all(isinstance(g, Generator) for g in generators().values())
    names = site_names()
    assert {"mkdocs", "mdbook", "sphinx", "sphinx-dirhtml", "docusaurus", "hugo", "github", "plain"} <= set(names)
    assert names[-1] == "plain"  # the fallback is tried last
    assert generator_of("sphinx-dirhtml").name == "sphinx"
    assert page_anchors("mkdocs", ["A", "A"]) == ["a", "a_1"]
    with pytest.raises(ConfigError, match=r"--site: unknown site 'jekyll'; valid: .*mkdocs"):
        check_site("jekyll")


def test_no_generator_table_outside_the_registry():
    """Adding a generator touches its module and its entry point: no module of esrag lists the
    generators by name (the old SITES / ANCHOR_RULES / page_path tables)."""
    offenders = []
    for path in (PROJECT / "esrag").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for needle in ('"mkdocs", "mdbook"', "ANCHOR_RULES", "PAGE_ANCHORS", "_DETECTORS"):
            if needle in text:
                offenders.append(f"{path.relative_to(PROJECT)}: {needle}")
    assert not offenders


def test_detection_finds_the_site_below_a_repository_root(tmp_path):
    """FastAPI keeps mkdocs.yml in docs/en/: ingesting the repository root finds it."""
    repo = tmp_path / "repo"
    (repo / "docs" / "en" / "docs").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "docs" / "en" / "mkdocs.yml").write_text("site_url: https://x.example/\n", encoding="utf-8")
    (repo / "docs" / "en" / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    found = detect(repo)
    assert found is not None and found.site == "mkdocs" and found.pages_dir == repo / "docs" / "en" / "docs"
    site = resolve_site(repo)
    assert site.include_root == repo.resolve()
    assert site.page_path("a.md", {}) == "a/"


def test_several_sites_below_a_root_is_an_error_naming_each(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "mkdocs.yml").write_text("site_name: a\n", encoding="utf-8")
    (tmp_path / "website").mkdir()
    (tmp_path / "website" / "book.toml").write_text("[book]\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"several documentation sites found: .*mkdocs.*mdbook|several documentation sites found: .*mdbook.*mkdocs"
    ):
        detect(tmp_path)


def test_root_must_hold_the_ingested_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ConfigError, match=r"--root .*must be a folder that holds the ingested folder"):
        resolve_site(tmp_path / "a", include_root=tmp_path / "b")
    assert resolve_site(tmp_path / "a", include_root=tmp_path).include_root == tmp_path.resolve()


@pytest.mark.integration
def test_a_users_package_adds_a_generator(tmp_path):
    """A generator from another distribution: listed by `esrag plugins`, offered by `--site`,
    detected with no flag, its URL and anchor rules used; esrag itself unchanged."""
    target = tmp_path / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
        + [str(PROJECT / "tests" / "plugins" / "esrag-example-site")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(target), "ESRAG_DB": str(tmp_path / "x.db")}
    esrag = [str(Path(sys.executable).parent / "esrag")]
    listed = json.loads(subprocess.run([*esrag, "plugins", "--json"], env=env, capture_output=True, text=True, check=True).stdout)
    assert any(p["group"] == "esrag.sites" and p["name"] == "exampledoc" for p in listed)
    helptext = subprocess.run([*esrag, "ingest", "--help"], env=env, capture_output=True, text=True, check=True).stdout
    assert "exampledoc" in " ".join(helptext.split())
    site = tmp_path / "site"
    (site / "pages" / "guide").mkdir(parents=True)
    (site / "exampledoc.toml").write_text('base_url = "https://ex.example/"\n', encoding="utf-8")
    (site / "pages" / "guide" / "start.md").write_text(
        "# Start Here\n\n" + "text one " * 200 + "\n\n## Start Here\n\n" + "text two " * 200 + "\n", encoding="utf-8"
    )
    code = (
        "import json,sys; from pathlib import Path; from site_builds import site_chunks; "
        "r = site_chunks(Path(sys.argv[1]), None, ''); print(json.dumps(sorted({c.url for c in r.chunks})))"
    )
    env["PYTHONPATH"] += f":{PROJECT / 'tests'}"
    urls = json.loads(subprocess.run([sys.executable, "-c", code, str(site)], env=env, capture_output=True, text=True, check=True).stdout)
    assert urls == ["https://ex.example/guide/start.htm#start_here", "https://ex.example/guide/start.htm#start_here_2"]


@pytest.mark.integration
def test_a_broken_generator_plugin_breaks_only_itself(tmp_path):
    """An installed distribution whose esrag.sites entry point does not import: every command
    still runs (one warning names it), and only `--site broken` fails, with its error."""
    dist = tmp_path / "site-packages" / "broken_site-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-site\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[esrag.sites]\nbroken = no_such_module_here:GENERATOR\n", encoding="utf-8")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path / "site-packages"), "ESRAG_DB": str(tmp_path / "x.db")}
    esrag = [str(Path(sys.executable).parent / "esrag")]
    shown = subprocess.run([*esrag, "ingest", "--help"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0 and "mkdocs" in shown.stdout and "Traceback" not in shown.stderr
    assert "no_such_module_here" in shown.stderr  # said, not hidden
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n", encoding="utf-8")
    chosen = subprocess.run([*esrag, "ingest", str(docs), "--site", "broken"], env=env, capture_output=True, text=True)
    assert chosen.returncode != 0 and "Traceback" not in chosen.stderr
    assert "plugin 'broken' in esrag.sites failed to load" in chosen.stderr
