"""The site's title and description as its generator's configuration states them
(:attr:`esrag.sites.generator.Detected.title` / ``description``).

Ground truth for the shared corpora: the strings their configuration files hold, read by hand
and written here (a key the file does not set, or sets in a comment, is ''). Small sites made in
``tmp_path`` cover the generators without a corpus and the values that are no plain string
(a name the JavaScript reader cannot resolve, a call, a per-locale object, a number): '' or the
locale's string, never a guess.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from esrag.sites.generator import config_text
from esrag.sites.registry import detect
from paths import DATA

CORPORA = DATA / "corpora"

# corpus, generator, title, description — as each configuration file states them
CORPUS_TITLES = [
    ("antora-asciidoctor", "antora", "Asciidoctor", ""),  # docs/antora.yml title
    ("async-book", "mdbook", "Asynchronous Programming in Rust", ""),  # book.toml [book] title
    ("docusaurus-docs", "docusaurus", "Docusaurus", ""),  # website/docusaurus.config.js title, no tagline
    (
        "fastapi-docs",
        "mkdocs",
        "FastAPI",
        "FastAPI framework, high performance, easy to learn, fast to code, ready for production",
    ),  # docs/en/mkdocs.yml
    ("flask-docs", "sphinx", "Flask", ""),  # docs/conf.py project (html_title is not read)
    ("hugo-docs", "hugo", "Hugo", "The world’s fastest framework for building websites"),  # hugo.toml title, [params] description
    ("jupyterbook-docs", "jupyterbook", "", ""),  # docs/myst.yml: project title/description commented out
    (
        "mintlify-docs",
        "mintlify",
        "Mintlify",
        "Mintlify is a platform for building and hosting documentation websites. It provides a set of tools "
        "and services for maintaining documentation and making it accessible to AI agents.",
    ),  # docs.json name, description
    ("nextra-docs", "nextra", "", ""),  # no configuration with a title
    ("pydantic-docs", "mkdocs", "Pydantic Validation", "Data validation using Python type hints"),  # mkdocs.yml
    ("requests-docs", "sphinx", "Requests", ""),  # docs/conf.py project = u"Requests"
    ("rust-book", "mdbook", "The Rust Programming Language", ""),  # book.toml [book] title
    ("starlight-biome", "starlight", "Biome", ""),  # astro.config.mjs starlight({title})
    ("vitepress-docs", "vitepress", "VitePress", ""),  # docs/.vitepress/config.mjs title
]


@pytest.mark.parametrize(("corpus", "site", "title", "description"), CORPUS_TITLES, ids=[c[0] for c in CORPUS_TITLES])
def test_corpus_title_and_description(corpus, site, title, description):
    found = detect(CORPORA / corpus)
    assert found is not None and found.site == site
    assert (found.title, found.description) == (title, description)


@pytest.mark.parametrize(
    ("value", "text"),
    [("  Site\n  Name  ", "Site Name"), ("", ""), (None, ""), (42, ""), (["a"], ""), ({"en": "x"}, "")],
)
def test_config_text_takes_plain_strings_on_one_line(value, text):
    assert config_text(value) == text


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


def _found(folder: Path) -> tuple[str, str, str]:
    found = detect(folder)
    assert found is not None
    return found.site, found.title, found.description


# -- generators without a corpus -------------------------------------------------------------
def test_antora_component_title(tmp_path):
    _write(tmp_path, {"antora.yml": "name: comp\ntitle: ' My Component '\nversion: '1.0'\n", "modules/ROOT/pages/index.adoc": "= A\n"})
    assert _found(tmp_path) == ("antora", "My Component", "")


def test_antora_without_title(tmp_path):
    _write(tmp_path, {"antora.yml": "name: comp\nversion: ~\n", "modules/ROOT/pages/index.adoc": "= A\n"})
    assert _found(tmp_path) == ("antora", "", "")


def test_zensical_project_table(tmp_path):
    toml = '[project]\nsite_name = "Zen Docs"\nsite_description = "Docs built with Zensical"\n'
    _write(tmp_path, {"zensical.toml": toml, "docs/index.md": "# A\n"})
    assert _found(tmp_path) == ("zensical", "Zen Docs", "Docs built with Zensical")


def test_gitbook_configuration_has_no_title(tmp_path):
    _write(tmp_path, {".gitbook.yaml": "root: ./\n", "README.md": "# Home\n", "SUMMARY.md": "* [Home](README.md)\n"})
    assert _found(tmp_path) == ("gitbook", "", "")


def test_mystmd_site_title_wins_over_project_title(tmp_path):
    myst = "version: 1\nproject:\n  title: Project\n  description: What it is\nsite:\n  title: The Site\n"
    _write(tmp_path, {"myst.yml": myst, "index.md": "# A\n"})
    assert _found(tmp_path) == ("jupyterbook", "The Site", "What it is")
    (tmp_path / "myst.yml").write_text("version: 1\nproject:\n  title: Project\n", encoding="utf-8")
    assert _found(tmp_path) == ("jupyterbook", "Project", "")


def test_jupyter_book_1_title(tmp_path):
    _write(
        tmp_path, {"_config.yml": "title: My sample book\nauthor: Me\n", "_toc.yml": "format: jb-book\nroot: intro\n", "intro.md": "# A\n"}
    )
    assert _found(tmp_path) == ("jupyterbook", "My sample book", "")


def test_mdbook_description(tmp_path):
    _write(tmp_path, {"book.toml": '[book]\ntitle = "B"\ndescription = "A book"\n', "src/SUMMARY.md": "- [A](a.md)\n"})
    assert _found(tmp_path) == ("mdbook", "B", "A book")


def test_mintlify_mint_json(tmp_path):
    _write(tmp_path, {"mint.json": json.dumps({"name": "Acme", "navigation": [{"group": "G", "pages": ["index"]}]}), "index.mdx": "# A\n"})
    assert _found(tmp_path) == ("mintlify", "Acme", "")


def test_hugo_default_language_title_and_params(tmp_path):
    toml = (
        'title = "Site"\ndefaultContentLanguage = "fr"\n[params]\ndescription = "Top"\n'
        '[languages.fr]\ntitle = "Le site"\n[languages.fr.params]\ndescription = "Haut"\n[languages.en]\ntitle = "The site"\n'
    )
    _write(tmp_path, {"hugo.toml": toml, "content/_index.md": "# A\n"})
    assert _found(tmp_path) == ("hugo", "Le site", "Haut")


def test_hugo_yaml_configuration(tmp_path):
    _write(tmp_path, {"hugo.yaml": "title: Yaml Site\nparams:\n  description: From YAML\n", "content/a.md": "# A\n"})
    assert _found(tmp_path) == ("hugo", "Yaml Site", "From YAML")


# -- values that are no plain string ---------------------------------------------------------
def _docusaurus(tmp_path: Path, head: str, body: str) -> Path:
    return _write(
        tmp_path, {"docusaurus.config.js": f"{head}\nexport default {{\n{body}\n  url: 'https://x.example',\n}};\n", "docs/a.md": "# A\n"}
    )


def test_docusaurus_title_and_tagline(tmp_path):
    _docusaurus(tmp_path, "", "  title: 'Docs',\n  tagline: `One line`,")
    assert _found(tmp_path) == ("docusaurus", "Docs", "One line")


def test_docusaurus_unresolved_name_is_empty(tmp_path):
    _docusaurus(tmp_path, "import {someVariable} from './site';", "  title: someVariable,\n  tagline: `v${version}`,")
    assert _found(tmp_path) == ("docusaurus", "", "")


def test_docusaurus_name_bound_to_a_literal(tmp_path):
    _docusaurus(tmp_path, "const siteTitle = 'Bound';", "  title: siteTitle,")
    assert _found(tmp_path) == ("docusaurus", "Bound", "")


def _starlight(tmp_path: Path, options: str) -> Path:
    config = f"import starlight from '@astrojs/starlight';\nexport default {{ integrations: [starlight({{ {options} }})] }};\n"
    return _write(tmp_path, {"astro.config.mjs": config, "src/content/docs/index.md": "# A\n"})


def test_starlight_title_object_takes_the_default_locale(tmp_path):
    _starlight(
        tmp_path,
        "title: { fr: 'Mes docs', de: 'Meine Doku' }, description: 'Beschreibung', defaultLocale: 'de', "
        "locales: { fr: { label: 'Français' }, de: { label: 'Deutsch' } }",
    )
    assert _found(tmp_path) == ("starlight", "Meine Doku", "Beschreibung")


def test_starlight_title_object_falls_back_to_en_then_first(tmp_path):
    _starlight(tmp_path, "title: { ja: 'ドキュメント', en: 'Docs' }, locales: { root: { label: '日本語', lang: 'pt-BR' } }")
    assert _found(tmp_path)[1] == "Docs"
    _starlight(tmp_path, "title: { ja: 'ドキュメント', ko: '문서' }, locales: { root: { label: '日本語', lang: 'pt-BR' } }")
    assert _found(tmp_path)[1] == "ドキュメント"


def test_starlight_computed_title_is_empty(tmp_path):
    _starlight(tmp_path, "title: makeTitle(), description: process.env.DESC")
    assert _found(tmp_path) == ("starlight", "", "")


def test_vitepress_root_locale_overrides_the_site(tmp_path):
    config = (
        "export default { title: 'Site', description: 'Top level', locales: { root: { label: 'English', title: 'Root' }, "
        "fr: { label: 'Français', title: 'Racine' } }, themeConfig: { siteTitle: 'Navbar' } }\n"
    )
    _write(tmp_path, {".vitepress/config.mjs": config, "index.md": "# A\n"})
    assert _found(tmp_path) == ("vitepress", "Root", "Top level")


def test_vitepress_computed_title_is_empty(tmp_path):
    config = "import { name } from './meta'\nexport default { title: name, description: `${name} docs` }\n"
    _write(tmp_path, {".vitepress/config.mjs": config, "index.md": "# A\n"})
    assert _found(tmp_path) == ("vitepress", "", "")


def test_sphinx_project_not_a_literal_is_empty(tmp_path):
    computed = _write(tmp_path / "computed", {"conf.py": 'name = "x"\nproject = f"{name} docs"\n', "index.rst": "A\n=\n"})
    assert _found(computed) == ("sphinx", "", "")
    literal = _write(tmp_path / "literal", {"conf.py": 'project = "Proj"\nhtml_title = "Proj Documentation"\n', "index.rst": "A\n=\n"})
    assert _found(literal) == ("sphinx", "Proj", "")  # read_conf is cached per path: a second folder


def test_mkdocs_folded_and_non_string_values(tmp_path):
    _write(tmp_path, {"mkdocs.yml": "site_name: >\n  Two\n  lines\nsite_description: 42\n", "docs/index.md": "# A\n"})
    assert _found(tmp_path) == ("mkdocs", "Two lines", "")
