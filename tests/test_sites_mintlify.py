"""Mintlify (:mod:`esrag.sites.mintlify`): detection of ``docs.json`` / ``mint.json``, the
navigation (groups, tabs, versions, languages, ``$ref``), snippets, heading ids, components as
the text a reader sees, and the whole ``mintlify-docs`` corpus.

Mintlify has no public static builder, so conformance is to Mintlify's documented rules (its own
docs, ``organize/*.mdx``, ``create/text.mdx``, ``create/reusable-snippets.mdx``): the heading-id
examples of ``create/text.mdx``, every page of the navigation indexed at ``/path/to/page``, and
the site's own ``/page#anchor`` links landing on the section URLs esrag computes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from esrag.errors import ConfigError
from esrag.formats.mdx import blank_code_lines
from esrag.sites.mintlify import COMPONENTS, DOT_FOLDER, GENERATOR, IGNORED, IMPORTED, SNIPPET, detect, mintlify_anchors, mintlify_slug
from paths import DATA

sys.path.insert(0, str(Path(__file__).parent))
from site_builds import site_chunks  # noqa: E402

CORPUS = DATA / "corpora" / "mintlify-docs"


@pytest.mark.parametrize(
    ("title", "slug"),
    [  # the table of create/text.mdx "Automatic anchor IDs"
        ("Getting started", "getting-started"),
        ("Config.json options", "config-json-options"),
        ("What's new", "what’s-new"),
        ("Rate limits (per minute)", "rate-limits-per-minute"),
        ("Read/write access", "read/write-access"),
        ("Fees & billing", "fees-&-billing"),
        ("OAuth", "oauth"),
    ],
)
def test_slug_matches_the_documented_examples(title, slug):
    assert mintlify_slug(title) == slug


def test_duplicates_count_from_two_and_explicit_ids_win():
    assert mintlify_anchors(["Overview", "Overview", "X", "Overview"], ["", "", "custom", ""]) == [
        "overview",
        "overview-2",
        "custom",
        "overview-3",
    ]


def site(tmp_path: Path, config: dict, files: dict[str, str], name: str = "docs.json") -> Path:
    (tmp_path / name).write_text(json.dumps(config), encoding="utf-8")
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def test_a_docs_json_of_another_tool_is_not_taken(tmp_path):
    site(tmp_path, {"title": "API docs", "navigation": []}, {})
    assert detect(tmp_path) is None
    site(tmp_path, {"$schema": "https://mintlify.com/docs.json", "navigation": {"pages": ["index"]}}, {})
    assert detect(tmp_path) is not None


def test_bad_mint_json_names_the_file(tmp_path):
    (tmp_path / "mint.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(ConfigError, match="mint.json"):
        detect(tmp_path)


def test_navigation_versions_languages_and_refs(tmp_path):
    nav = {
        "languages": [
            {
                "language": "en",
                "versions": [
                    {"version": "v2", "groups": [{"group": "G", "root": "v2/index", "pages": ["v2/a", "GET /users"]}]},
                    {"version": "v1", "pages": ["v1/a"]},
                ],
            },
            {"$ref": "./fr.json"},
        ]
    }
    site(
        tmp_path,
        {"$schema": "https://mintlify.com/docs.json", "theme": "mint", "name": "X", "navigation": nav},
        {
            "v2/index.mdx": "---\ntitle: Home\n---\n",
            "v2/a.mdx": "",
            "v1/a.mdx": "",
            "fr/a.mdx": "",
            "hidden.md": "",
            "fr.json": json.dumps({"language": "fr", "tabs": [{"tab": "T", "pages": ["fr/a"]}]}),
        },
    )
    found = detect(tmp_path)
    assert found is not None and found.site == "mintlify"
    layout = found.layout
    place = {rel: layout.place(tmp_path / rel, {}) for rel in ("v2/index.mdx", "v2/a.mdx", "v1/a.mdx", "fr/a.mdx", "hidden.md")}
    assert {k: (p.path, p.doc_version, p.language, p.translation) for k, p in place.items() if p} == {
        "v2/index.mdx": ("v2", "v2", "en", False),
        "v2/a.mdx": ("v2/a", "v2", "en", False),
        "v1/a.mdx": ("v1/a", "v1", "en", False),
        "fr/a.mdx": ("fr/a", "", "fr", True),
        "hidden.md": ("hidden", "", "", False),  # not in the navigation: still served (hidden page)
    }
    assert layout.default_version == "v2" and layout.default_language == "en"
    assert layout.hidden_pages() == ["hidden.md"]


def test_missing_ref_is_a_note_naming_the_file(tmp_path):
    site(tmp_path, {"$schema": "https://mintlify.com/docs.json", "navigation": {"languages": [{"$ref": "./zh.json"}]}}, {})
    found = detect(tmp_path)
    assert found is not None and any("docs.json" in n and "zh.json" in n for n in found.notes)


def test_snippets_ignored_and_imported_files_are_not_pages(tmp_path):
    site(
        tmp_path,
        {"$schema": "https://mintlify.com/docs.json", "navigation": {"pages": ["index"]}},
        {
            "index.mdx": 'import Part from "/shared/part.mdx";\n\n## A\n\n<Part />\n',
            "shared/part.mdx": "Shared text.\n",
            "snippets/s.mdx": "x",
            "README.md": "x",
            "node_modules/x/a.md": "x",
            ".mintlify/AGENTS.md": "x",
            ".mintignore": "drafts/\n",
            "drafts/d.mdx": "x",
        },
    )
    layout = detect(tmp_path).layout
    reasons = {
        rel: layout.skip_reason(tmp_path / rel, {})
        for rel in (
            "index.mdx",
            "shared/part.mdx",
            "snippets/s.mdx",
            "README.md",
            "node_modules/x/a.md",
            ".mintlify/AGENTS.md",
            "drafts/d.mdx",
        )
    }
    assert reasons["index.mdx"] == "" and reasons["shared/part.mdx"] == IMPORTED and reasons["snippets/s.mdx"] == SNIPPET
    assert reasons["README.md"] == reasons["node_modules/x/a.md"] == IGNORED and reasons[".mintlify/AGENTS.md"] == DOT_FOLDER
    assert "mintignore" in reasons["drafts/d.mdx"]


def test_components_show_their_titles_and_fields():
    text = (
        '<Steps>\n  <Step title="Add your domain">\n    Text\n  </Step>\n</Steps>\n\n'
        '<ParamField body="user_id" type="string" required>\n\n<ResponseField\n  name="id"\n  type={"number"}\n>\n\n<Tip>\nBody\n</Tip>\n<Frame caption="A chart">\n'
    )
    lines = blank_code_lines(text, COMPONENTS).split("\n")
    assert len(lines) == len(text.split("\n"))  # line numbers kept
    assert [line for line in lines if line.strip()] == [
        "**Add your domain**",
        "    Text",
        "`user_id` (string, required)",
        "`id` (number)",
        "Body",
        "**A chart**",
    ]
    assert "Add your domain" not in blank_code_lines(text)  # without the site's components: tags blanked as before


@pytest.fixture(scope="module")
def corpus():
    return site_chunks(CORPUS, None, "")


def test_corpus_every_navigation_page_indexed_with_its_title(corpus):
    layout = corpus.site.layout
    assert corpus.site.site == "mintlify" and corpus.site.base_url == "https://www.mintlify.com/docs/"
    indexed = {re.sub(r"\.mdx?$", "", c.source_path) for c in corpus.chunks}
    assert len(layout.nav) >= 240
    assert set(layout.nav) <= indexed  # 100 % of the navigation's pages
    assert len(indexed) == 272 and not corpus.problems
    reasons = {why for _, why in corpus.skipped}
    assert reasons == {SNIPPET, IGNORED, DOT_FOLDER}
    paths = {c.section_path for c in corpus.chunks if c.source_path == "customize/custom-domain.mdx"}
    assert any(p.startswith("Custom domain > ") for p in paths)
    docusaurus = " ".join(c.text for c in corpus.chunks if c.source_path == "migration/docusaurus.mdx")
    assert "content freeze" in docusaurus  # /snippets/migration-launch-checklist.mdx inlined
    quickstart = "\n".join(c.text for c in corpus.chunks if c.source_path == "quickstart.mdx").split("\n")
    assert "**Install the CLI**" in quickstart  # <Step title="Install the CLI">
    fields = "\n".join(c.text for c in corpus.chunks if c.source_path == "components/fields.mdx").split("\n")
    assert "`param` (string, required)" in fields  # <ParamField path="param" type="string" required>


def test_corpus_own_anchor_links_land_on_section_urls(corpus):
    """The site's own ``/page#anchor`` links (written by Mintlify's authors, checked by ``mint
    broken-links``) against the section URLs esrag computes: ≥ 89 %. The rest are links to
    renamed headings, ids of components (``<Accordion>``, ``<ParamField>``: ``param-…``) that
    esrag does not index as sections, and ``robots.txt`` written ``robotstxt``."""
    base = "https://www.mintlify.com/docs"
    urls = {u for c in site_chunks(CORPUS, None, base + "/").chunks for u in (c.url, *c.alt_urls)}
    pages = {u.split("#")[0] for u in urls}
    ok = total = 0
    for path in CORPUS.rglob("*.mdx"):
        for m in re.finditer(r"\]\((/[^)#\s]*)#([^)\s]+)\)", path.read_text(encoding="utf-8")):
            url = unquote(f"{base}{m.group(1).rstrip('/')}#{m.group(2)}")
            if "snippets" not in path.parts and url.split("#")[0] in pages:
                total, ok = total + 1, ok + (url in urls)
    assert total > 200 and ok / total >= 0.89


def test_generator_entry():
    assert GENERATOR.title_from_front and GENERATOR.name == "mintlify"


def test_older_mint_json_groups_and_versions(tmp_path):
    """``mint.json``: ``navigation`` is a list of groups (nested groups allowed), a group may name its ``version``."""
    config = {
        "name": "X",
        "versions": ["v2", "v1"],
        "navigation": [
            {"group": "A", "version": "v1", "pages": ["v1/intro", {"group": "B", "pages": ["v1/b"]}]},
            {"group": "C", "pages": ["index"]},
        ],
    }
    site(tmp_path, config, {"v1/intro.mdx": "", "v1/b.mdx": "", "index.mdx": ""}, name="mint.json")
    layout = detect(tmp_path).layout
    assert [(p.path, p.doc_version) for p in (layout.place(tmp_path / r, {}) for r in ("v1/intro.mdx", "v1/b.mdx", "index.mdx"))] == [
        ("v1/intro", "v1"),
        ("v1/b", "v1"),
        ("", ""),
    ]
    assert layout.default_version == "v2"
