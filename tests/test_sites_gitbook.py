"""The GitBook generator (:mod:`esrag.sites.gitbook`) and GitBook's blocks
(:mod:`esrag.formats.gitbook_blocks`).

GitBook is a hosted service with no installable builder, so there is no build to compare with:
conformance is GitBook's documented Git Sync rule (``.gitbook.yaml``, ``SUMMARY.md``, page URLs;
docs "Git Sync > Content configuration"), checked on a real synced space:
``tests/data/gitbook-nats`` (six unchanged pages, the full ``SUMMARY.md`` and ``.gitbook.yaml``
of nats-io/nats.docs, published at https://docs.nats.io/; Apache-2.0, source in its
``SOURCE.txt``), and on the published URLs that space's pages link to. Forms that space does not
hold (a stepper, ``{% content-ref %}``, ``{% code %}``, a heading starting with ``.``) are
checked on small hand-written pages.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from esrag.formats.gitbook_blocks import rewrite
from esrag.sites import resolve_site
from esrag.sites.gitbook import GENERATOR, INCLUDE_BLOCK, NOT_IN_SUMMARY, SUMMARY_ITSELF, detect, heading_slug, page_slug, summary_paths
from esrag.sites.registry import detect as detect_site

SPACE = Path(__file__).parent / "data" / "gitbook-nats"
BRIGHTER = Path(__file__).parent / "data" / "gitbook-brighter" / "SUMMARY.md"
BASE = "https://gitbook.com/docs/"
NATS = "https://docs.nats.io/"


def _chunks(root: Path, base: str = BASE):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from site_builds import site_chunks

    return site_chunks(root, None, base)


def test_detected_with_no_site_from_gitbook_yaml_or_summary_and_gitbook_folder(tmp_path):
    found = detect_site(SPACE)
    assert found is not None and found.site == "gitbook" and found.pages_dir == SPACE.resolve()
    assert found.confidence == 1.0 and found.format_options["gitbook_blocks"] is True
    # the space's own .gitbook.yaml names a redirect to ".legacy/…" (for "./legacy/…"): no such file
    assert any("redirect 'nats-streaming-server/changes' -> '.legacy/stan/nats-streaming-server/changes.md'" in n for n in found.notes)
    (tmp_path / "SUMMARY.md").write_text("* [Home](README.md)\n")  # what Git Sync writes without a .gitbook.yaml
    (tmp_path / ".gitbook" / "assets").mkdir(parents=True)
    found = detect_site(tmp_path)
    assert found is not None and found.site == "gitbook" and found.confidence == 0.9


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
    copy = tmp_path / "nats"
    shutil.copytree(SPACE, copy)
    (copy / "unlisted.md").write_text("# Draft\n")
    out = _chunks(copy, NATS)
    assert out.site is not None and out.site.site == "gitbook"
    pages = {c.url.split("#")[0] for c in out.chunks}
    assert pages == {
        NATS,  # README.md: the space's first page
        NATS + "nats-concepts/subjects",
        NATS + "nats-concepts/core-nats/pubsub/pubsub_walkthrough",  # the summary's tree, "_" kept
        NATS + "using-nats/developer/connecting",  # README.md under "Developing With NATS" (developer.md)
        NATS + "using-nats/developer/connecting/default_server",
        NATS + "running-a-nats-service/configuration/securing_nats/tls",
    }
    # SOURCE.txt and LICENSE: not files ingest reads
    assert dict(out.skipped) == {"SUMMARY.md": SUMMARY_ITSELF, "unlisted.md": NOT_IN_SUMMARY}
    urls = {c.url for c in out.chunks}
    # anchors by heading_slug: "id-" before a digit, dots kept, the rest github-slugger
    assert NATS + "#id-10000-foot-view" in urls  # "10,000 foot view"
    assert NATS + "nats-concepts/core-nats/pubsub/pubsub_walkthrough#id-1.-create-subscriber-1" in urls
    assert NATS + "nats-concepts/core-nats/pubsub/pubsub_walkthrough#id-10.-publish-another-message" in urls
    assert NATS + "running-a-nats-service/configuration/securing_nats/tls#nats.net-v1" in urls  # "nats.net (v1)"
    assert NATS + "running-a-nats-service/configuration/securing_nats/tls#nats.rs" in urls
    # the page's own link to its heading (subjects.md: "#characters-allowed-and-recommended-…")
    assert NATS + "nats-concepts/subjects#characters-allowed-and-recommended-for-subject-names" in urls
    # tab titles are what a reader sees, the tags nothing; a hint shows its body
    tabs = " ".join(c.text for c in out.chunks if c.url.startswith(NATS + "using-nats/developer/connecting/default_server"))
    assert "C#" in tabs and "Python" in tabs and "await client.ConnectAsync();" in tabs
    assert "{% tab" not in tabs and "{% endtab" not in tabs
    hint = " ".join(c.text for c in out.chunks if c.url == NATS + "nats-concepts/subjects#naming-things")
    assert "There are only two hard problems in computer science" in hint and "{% hint" not in hint


def test_headings_inside_steps_and_blocks_on_a_page(tmp_path):
    """Forms the copied space does not hold (a hand-written page, GitBook's documented syntax):
    headings inside a stepper's steps are the page's sections; content-ref and code show their text."""
    (tmp_path / ".gitbook").mkdir()
    (tmp_path / "SUMMARY.md").write_text("# Table of contents\n\n* [Home](README.md)\n* [Stepper](blocks/stepper.md)\n")
    (tmp_path / "README.md").write_text("# Home\n")
    (tmp_path / "blocks").mkdir()
    body = "A step of the guide holds several blocks of its own, a reader follows them in order. " * 12
    (tmp_path / "blocks" / "stepper.md").write_text(
        f"# Stepper\n\n### Example\n\n{{% stepper %}}\n{{% step %}}\n#### Add a stepper block\n\n{body}\n{{% endstep %}}\n\n"
        f"{{% step %}}\n#### Add some content\n\n{body}\n\n"
        '{% content-ref url="../README.md" %}\n[Home](../README.md)\n{% endcontent-ref %}\n\n'
        '{% code title="app.js" %}\n```js\nconsole.log(1)\n```\n{% endcode %}\n{% endstep %}\n{% endstepper %}\n'
    )
    out = _chunks(tmp_path)
    urls = {c.url for c in out.chunks}  # the page's place in SUMMARY.md: "stepper", not "blocks/stepper"
    assert {BASE + "stepper#add-a-stepper-block", BASE + "stepper#add-some-content"} <= urls
    text = " ".join(c.text for c in out.chunks if c.url == BASE + "stepper#add-some-content")
    assert "[Home](../README.md)" in text and "app.js" in text and "console.log(1)" in text and "{%" not in text


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
    """Ids as GitBook's editor links to them (links seen in synced spaces, no text copied):
    ``#id-2.-sign-and-pass-a-jwt-token-to-gitbook`` (GitbookIO/public-docs,
    setting-up-a-custom-backend.md), ``#.net-c`` and ``#node.js`` (another synced space's
    signing-mechanism.md). The copied space (nats) has no such links: hand-written titles here."""
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
    assert page_slug("lame_duck_mode") == "lame_duck_mode"


def test_summary_tree_gives_the_urls_the_space_links_to():
    """nats-io/nats.docs' pages link to their published URLs (docs.nats.io): each is the file's
    place in the space's SUMMARY.md, underscores kept."""
    paths = summary_paths((SPACE / "SUMMARY.md").read_text(encoding="utf-8"), "")
    published = {  # file: the URL path a page links to (which page, in the comment)
        "using-nats/developing-with-nats/developer.md": "using-nats/developer",  # howto-examples/overview.md
        "nats-concepts/core-nats/README.md": "nats-concepts/core-nats",  # nats-concepts/jetstream/consumers.md
        "nats-concepts/core-nats/queue-groups/queue.md": "nats-concepts/core-nats/queue",  # consumers.md
        "nats-concepts/jetstream/streams.md": "nats-concepts/jetstream/streams",  # source_and_mirror.md
        "running-a-nats-service/configuration/README.md": "running-a-nats-service/configuration",  # tls.md
        "running-a-nats-service/configuration/clustering/cluster_config.md": (
            "running-a-nats-service/configuration/clustering/cluster_config"  # streams.md
        ),
        "running-a-nats-service/configuration/jetstream-config/resource_management.md": (
            "running-a-nats-service/configuration/resource_management"  # securing_nats/accounts.md
        ),
        "running-a-nats-service/configuration/leafnodes/jetstream_leafnodes.md": (
            "running-a-nats-service/configuration/leafnodes/jetstream_leafnodes"  # nats_api_reference.md
        ),
        "running-a-nats-service/nats_admin/lame_duck_mode.md": "running-a-nats-service/nats_admin/lame_duck_mode",  # upgrading_cluster.md
        "running-a-nats-service/configuration/sys_accounts/README.md": "running-a-nats-service/configuration/sys_accounts",  # monitoring
    }
    assert {f: paths.get(f) for f in published} == published


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
