"""The GitBook generator (:mod:`esrag.sites.gitbook`) and GitBook's blocks
(:mod:`esrag.formats.gitbook_blocks`).

GitBook is a hosted service with no installable builder, so there is no build to compare with:
conformance is GitBook's documented Git Sync rule (``.gitbook.yaml``, ``SUMMARY.md``, page URLs;
docs "Git Sync > Content configuration"), checked on a real synced space:
``tests/data/gitbook-public-docs`` (eight unchanged pages, the full ``SUMMARY.md`` and
``.gitbook/`` of GitbookIO/public-docs' ``documentation`` space; source and licence in its
``SOURCE.txt``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from esrag.formats.gitbook_blocks import rewrite
from esrag.sites import resolve_site
from esrag.sites.gitbook import GENERATOR, INCLUDE_BLOCK, NOT_IN_SUMMARY, SUMMARY_ITSELF, detect, heading_slug, page_slug, summary_paths
from esrag.sites.registry import detect as detect_site

SPACE = Path(__file__).parent / "data" / "gitbook-public-docs"
BRIGHTER = Path(__file__).parent / "data" / "gitbook-brighter" / "SUMMARY.md"
BASE = "https://gitbook.com/docs/"


def _chunks(root: Path):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from site_builds import site_chunks

    return site_chunks(root, None, BASE)


def test_detected_with_no_site_from_summary_and_gitbook_folder():
    found = detect_site(SPACE)
    assert found is not None and found.site == "gitbook" and found.pages_dir == SPACE.resolve()
    assert found.confidence == 0.9 and found.format_options["gitbook_blocks"] is True


def test_gitbook_yaml_root_and_structure(tmp_path):
    docs = tmp_path / "docs" / "product"
    docs.mkdir(parents=True)
    (tmp_path / ".gitbook.yaml").write_text("root: ./docs/\nstructure:\n  readme: ./product/intro.md\n  summary: product/SUMMARY.md\n")
    (docs / "SUMMARY.md").write_text("# Table of contents\n\n* [Intro](intro.md)\n* [Guide](guide/README.md)\n  * [Step](guide/step.md)\n")
    found = detect(tmp_path)
    assert found is not None and found.confidence == 1.0 and found.pages_dir == (tmp_path / "docs").resolve()
    assert found.skip is not None
    assert found.skip("product/intro.md") == "" and found.skip("product/guide/step.md") == ""
    assert found.skip("product/SUMMARY.md") == SUMMARY_ITSELF
    assert found.skip("product/orphan.md") == NOT_IN_SUMMARY
    assert found.skip(".gitbook/includes/x.md") == INCLUDE_BLOCK
    site = resolve_site(tmp_path / "docs", None, BASE)
    assert GENERATOR.page_path is not None
    assert GENERATOR.page_path("product/intro.md", {}, site) == ""  # structure.readme: the space root
    assert GENERATOR.page_path("product/guide/README.md", {}, site) == "guide"  # the summary's tree, not the disk
    assert GENERATOR.page_path("product/guide/step.md", {}, site) == "guide/step"
    assert GENERATOR.page_path("product/orphan.md", {}, site) == "product/orphan"  # not published: the folder rule


def test_without_summary_every_page_and_a_note(tmp_path):
    (tmp_path / ".gitbook.yaml").write_text("redirects:\n  old/page: missing.md\n")
    found = detect(tmp_path)
    assert found is not None and found.skip is not None and found.skip("any/page.md") == ""
    assert any("no table of contents" in n for n in found.notes)
    assert any("redirect 'old/page'" in n and "missing.md" in n for n in found.notes)


def test_bad_config_is_one_note_naming_the_file(tmp_path):
    (tmp_path / ".gitbook.yaml").write_text("root: [unclosed\n")
    found = detect(tmp_path)
    assert found is not None and found.pages_dir == tmp_path.resolve()
    assert any(n.startswith(f"{tmp_path / '.gitbook.yaml'}: not valid YAML") for n in found.notes)


def test_not_a_gitbook_space(tmp_path):
    (tmp_path / "SUMMARY.md").write_text("* [A](a.md)\n")  # an mdBook src/ or a plain file: no .gitbook/
    assert detect(tmp_path) is None


def test_real_space_pages_urls_and_skips(tmp_path):
    copy = tmp_path / "documentation"
    shutil.copytree(SPACE, copy)
    (copy / "unlisted.md").write_text("# Draft\n")
    out = _chunks(copy)
    assert out.site is not None and out.site.site == "gitbook"
    pages = {c.url.split("#")[0] for c in out.chunks}
    assert pages == {
        BASE,
        BASE + "docs-as-code/git-sync/content-configuration",
        BASE + "create-content/blocks",
        BASE + "create-content/blocks/hint",
        BASE + "create-content/blocks/tabs",
        BASE + "create-content/blocks/stepper",
        BASE + "create-content/blocks/embed-a-url",
    }
    assert dict(out.skipped) == {"SUMMARY.md": SUMMARY_ITSELF, "unlisted.md": NOT_IN_SUMMARY}  # SOURCE.txt: not a file ingest reads
    urls = {c.url for c in out.chunks}
    # anchors by heading_slug
    assert BASE + "docs-as-code/git-sync/content-configuration#configure-a-space-with-.gitbook.yaml" in urls  # dots kept
    assert BASE + "docs-as-code/git-sync/content-configuration#set-the-content-root" in urls
    # the tab titles are what a reader sees; no block tag outside code is left (the page's
    # "Representation in Markdown" section shows the tags in a fence: they stay there)
    tabs = " ".join(c.text for c in out.chunks if c.url == BASE + "create-content/blocks/tabs#example")
    assert "Windows" in tabs and "Here are the instructions for Linux" in tabs and "{% tab" not in tabs
    stepper = {c.url for c in out.chunks if c.url.startswith(BASE + "create-content/blocks/stepper")}
    assert BASE + "create-content/blocks/stepper#add-a-stepper-block" in stepper  # headings inside steps


def test_blocks_line_for_line():
    text = "\n".join(
        [
            '{% hint style="info" %}',
            "Body **text**",
            "{% endhint %}",
            '{% tabs %}{% tab title="macOS" icon="apple" %}',
            "inside",
            "{% endtab %}{% endtabs %}",
            '{% content-ref url="page.md" %}[Page](page.md){% endcontent-ref %}',
            '{% embed url="https://youtu.be/x" %}',
            '{% code title="index.js" lineNumbers="true" %}',
            "```js",
            '{% hint style="x" %} stays in code',
            "```",
            "{% endcode %}",
            '{% file src="../.gitbook/assets/report.pdf" %}',
            '{% openapi src="spec.yaml" path="/pets" method="get" %}',
            '{% openapi-schemas spec="s" schemas="Pet,Owner" %}',
            '{% update date="2025-01-02" %}',
        ]
    )
    out = rewrite(text).split("\n")
    assert len(out) == len(text.split("\n"))
    assert out[:9] == ["", "Body **text**", "", "macOS", "inside", "", "[Page](page.md)", "https://youtu.be/x", "index.js"]
    assert out[10] == '{% hint style="x" %} stays in code'
    assert out[12:] == ["", "report.pdf", "API operation: GET /pets", "API schemas: Pet,Owner", "2025-01-02"]


def test_anchors_github_slugger_dots_and_id_prefix_and_explicit_ids():
    """Ids as GitBook's editor links to them: ``#id-2.-sign-and-pass-a-jwt-token-to-gitbook``
    (GitbookIO/public-docs, setting-up-a-custom-backend.md), ``#.net-c`` and ``#node.js``
    (another synced space's signing-mechanism.md)."""
    assert heading_slug("2. Sign and pass a JWT token to GitBook") == "id-2.-sign-and-pass-a-jwt-token-to-gitbook"
    assert heading_slug(".NET (C#)") == ".net-c" and heading_slug("Node.js") == "node.js"
    assert heading_slug("How do I use GitBook AI?") == "how-do-i-use-gitbook-ai"
    assert GENERATOR.anchors(["Structure", "Structure", "Get Started"], ["", "", "getting-started"]) == [
        "structure",
        "structure-1",
        "getting-started",
    ]


def test_summary_tree_gives_published_paths():
    """BrighterCommand/Docs keeps every page flat in ``contents/``; GitBook publishes each at its
    place in SUMMARY.md (the model the project verified against GitBook's live sitemap)."""
    paths = summary_paths(BRIGHTER.read_text(encoding="utf-8"), "")
    assert len(paths) == 157
    assert paths["contents/GetStarted.md"] == "get-started/getstarted"
    assert paths["contents/TutorialFirstCommand.md"] == "get-started/tutorialfirstcommand"
    assert paths["contents/Requests, Commands and Events.md"] == "commands-handlers-and-pipelines/requests-commands-and-events"
    assert paths["contents/FeatureSwitches.md"] == "commands-handlers-and-pipelines/buildingapipeline/featureswitches"
    assert paths["contents/MigratingToPollyV8.md"] == (
        "commands-handlers-and-pipelines/buildingapipeline/policyretryandcircuitbreaker/migratingtopollyv8"
    )
    assert paths["contents/AzureBlobConfiguration.md"] == "outbox-and-inbox/outboxarchiver/azureblobarchiveprovider/azureblobconfiguration"
    assert paths["contents/FAQ.md"] == "reference/faq"


def test_summary_groups_explicit_ids_and_rules():
    text = (
        "# Table of contents\n\n* [Home](README.md)\n\n"
        '## Get Started <a href="#getting-started" id="getting-started"></a>\n\n* [Quickstart](start/quick.md)\n\n'
        "## Help\n\n* [Bugs](help/bugs.md)\n\n***\n\n* [Skill](skill/README.md)\n  * [Write](skill/write.md)\n"
    )
    paths = summary_paths(text, "")
    assert paths == {
        "README.md": "readme",
        "start/quick.md": "getting-started/quick",
        "help/bugs.md": "help/bugs",
        "skill/README.md": "skill",
        "skill/write.md": "skill/write",
    }
    assert page_slug("Requests, Commands and Events") == "requests-commands-and-events"


def test_summary_items_without_links_and_dots():
    """0xn3va/cheat-sheets (GitBook-synced; its pages link to the published URLs
    ``…/cheat-sheets/container/escaping/exposed-docker-socket`` and
    ``…/web-application/oauth-2.0-vulnerabilities``): an item without a link is an empty page
    that names a segment, and page slugs keep dots."""
    text = (
        "# Summary\n\n- [Application Security Cheat Sheet](INTRODUCTION.md)\n\n## Container\n\n- Escaping\n"
        "    - [Exposed Docker Socket](Container/Escaping/exposed-docker-socket.md)\n\n## Web Application\n\n"
        "- [OAuth 2.0 Vulnerabilities](Web%20Application/OAuth%202.0%20Vulnerabilities/README.md)\n"
    )
    paths = summary_paths(text, "")
    assert paths["Container/Escaping/exposed-docker-socket.md"] == "container/escaping/exposed-docker-socket"
    assert paths["Web Application/OAuth 2.0 Vulnerabilities/README.md"] == "web-application/oauth-2.0-vulnerabilities"


def test_real_gitbook_yaml_with_invisible_characters(tmp_path):
    """BrighterCommand/Docs' .gitbook.yaml carried U+200B before ``structure:`` (GitBook then read
    no structure block, its defaults named the same files): read the same way."""
    (tmp_path / ".gitbook.yaml").write_text("root: ./\n\n\u200bstructure:  \n    readme: intro.md  \n    summary: SUMMARY.md\u200b\n")
    shutil.copy(BRIGHTER, tmp_path / "SUMMARY.md")
    (tmp_path / "contents").mkdir()
    (tmp_path / "contents" / "FeatureSwitches.md").write_text("# Feature Switches\n\n## Using the Feature Switch Attribute\n\nText.\n")
    (tmp_path / "README.md").write_text("# Brighter\n")
    out = _chunks(tmp_path)
    assert {c.url for c in out.chunks} >= {
        BASE + "#brighter",  # README.md: the default first page, the space root
        BASE + "commands-handlers-and-pipelines/buildingapipeline/featureswitches#using-the-feature-switch-attribute",
    }
