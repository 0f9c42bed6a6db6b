"""The manual (issue 28): README.md is the front page, ``docs/`` the manual, ``mkdocs.yml`` builds it.

- The generated blocks of ``docs/cli.md`` and ``docs/configuration.md`` are what
  ``python -m esrag.docgen`` makes from the code now.
- Independently of that generator: every command, every option flag, every setting and every
  ``ESRAG_*`` variable of the code is named somewhere in the manual.
- Every relative link of README.md, ``docs/*.md`` and ``benchmarks/README.md`` reaches a file, and
  a heading of it where the link has ``#anchor`` (MkDocs' slugs for the manual's pages, GitHub's
  for the others, as esrag itself computes them).
- The manual is a site esrag reads: ``docs/`` ingested with esrag's MkDocs reader (the
  ``mkdocs.yml`` at the project root) into a temporary embedded store answers real questions with
  the right page and section URL under ``site_url``; and ``mkdocs build --strict`` of it (in
  process) has every page and anchor those URLs name.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from html.parser import HTMLParser
from pathlib import Path

import click
import pytest
import yaml
from pydantic import BaseModel

from esrag import docgen
from esrag.chunking.header import HeaderChunker
from esrag.config import OTHER_ENV, Settings
from esrag.ingest import Ingester
from esrag.search.searcher import Searcher
from esrag.sites import resolve_site
from esrag.sites.mkdocs import toc_slugify
from esrag.sites.slugs import github_slug, github_unique
from esrag.stores.sqlite import SQLiteStore
from fault_helpers import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINKED = [ROOT / "README.md", *PAGES, ROOT / "benchmarks" / "README.md"]
SITE_URL = "https://esrag.example.org/"
REGENERATE = "python -m esrag.docgen"


def manual_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *PAGES])


# -- (a) generated blocks are current ------------------------------------------------------------


@pytest.mark.integration
def test_generated_blocks_are_what_the_code_makes_now():
    # in a fresh process, as `python -m esrag.docgen` runs (the diff is printed when it fails);
    # test_render_is_the_same_after_the_cli_ran checks the render does not depend on what ran before
    run = subprocess.run([sys.executable, "-m", "esrag.docgen", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"run `{REGENERATE}` and commit the result:\n{run.stderr[-6000:]}"


@pytest.mark.integration
def test_render_is_the_same_after_the_cli_ran():
    """click (8.2+) caches each command's help option as made by the first context that asks for
    it; the reference renders every command in the context a user's run makes (``-h, --help``
    under the group's context_settings), so what ran before in the process does not matter."""
    from click.testing import CliRunner

    from esrag.cli import main

    first = docgen.cli_reference()
    for args in (["status", "--no-such-flag"], ["search", "-h"], ["plugins", "--help"]):
        CliRunner().invoke(main, args)
    assert docgen.cli_reference() == first
    assert "- `-h, --help`: Show this message and exit." in first and "\n- `--help`:" not in first


def test_render_replaces_only_between_the_markers():
    page = f"# Title\n\nprose\n\n{docgen.marker('x')}\nold\n{docgen.END}\n\nmore prose\n"
    assert docgen.render(page, {"x": lambda: "new"}) == f"# Title\n\nprose\n\n{docgen.marker('x')}\n\nnew\n\n{docgen.END}\n\nmore prose\n"
    with pytest.raises(ValueError, match="no <!-- generated: esrag.docgen y -->"):
        docgen.render(page, {"y": lambda: "new"})


# -- (b) every command, option and setting is in the manual ---------------------------------------


def commands() -> list[tuple[str, click.Command]]:
    from esrag import cli

    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: str) -> None:
        out.append((path, cmd))
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")

    walk(cli.main, "esrag")
    return out


def settings_names() -> list[str]:
    """Every setting as its name in backticks and as its variable (``[corpora.NAME]``: ``NAME``)."""
    out: list[str] = []

    def walk(model: type[BaseModel], key: str, env: str) -> None:
        for name, field in model.model_fields.items():
            kind = field.annotation
            args = getattr(kind, "__args__", ())
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                walk(kind, f"{key}{name}.", f"{env}{name.upper()}__")
            elif getattr(kind, "__origin__", None) is dict and isinstance(args[1], type) and issubclass(args[1], BaseModel):
                walk(args[1], f"{key}{name}.NAME.", f"{env}{name.upper()}__NAME__")
            else:
                out.extend([f"`{name}`", f"{env}{name.upper()}"])

    walk(Settings, "", "ESRAG_")
    return out


def test_every_command_option_and_setting_is_in_the_manual():
    text = manual_text()
    cli_page = (DOCS / "cli.md").read_text(encoding="utf-8")
    missing = [f"command `{path}`" for path, _ in commands() if f"`{path}`" not in cli_page]
    for path, cmd in commands():
        for param in cmd.params:
            if isinstance(param, click.Option):
                missing += [
                    f"option {flag} of `{path}`"
                    for flag in param.opts + param.secondary_opts
                    if not re.search(rf"`{re.escape(flag)}[ ,`]", cli_page)
                ]
    missing += [f"setting {name}" for name in settings_names() if name not in text]
    missing += [f"variable {name}" for name in OTHER_ENV if name not in text]
    assert missing == [], f"not in the manual: {'; '.join(missing)} (run `{REGENERATE}`, or document them)"
    assert len(commands()) >= 16 and len(settings_names()) > 150


# -- (c) links and anchors ---------------------------------------------------------------------


def _outside_code(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(path: Path) -> set[str]:
    """The heading ids of ``path`` as the site builds them: Python-Markdown ``toc`` (MkDocs) for
    the manual's pages, GitHub's for README files."""
    seen: dict[str, int] = {}
    out = set()
    for line in _outside_code(path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6} (.+?)\s*#*$", line)
        if not match:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)).replace("`", "")
        if path.parent == DOCS:
            slug = toc_slugify(title, "-")
            unique, n = slug, 0
            while unique in out:
                n += 1
                unique = f"{slug}_{n}"
            out.add(unique)
        else:
            out.add(github_unique(github_slug(title), seen))
    return out


def links(path: Path) -> list[str]:
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", _outside_code(path.read_text(encoding="utf-8"))) if not re.match(r"[a-z]+:", t)]


def test_every_relative_link_reaches_a_file_and_a_heading():
    broken = []
    for page in LINKED:
        for target in links(page):
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.is_file() and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no heading #{anchor} in {dest.relative_to(ROOT)})")
    assert broken == []
    assert sum(len(links(p)) for p in LINKED) > 40


def test_readme_is_a_front_page_and_its_two_commands_stand():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "scripts/demo     # set up, ingest ../shared/data/corpora/laravel-docs into ./.esrag/, then search it\n" in readme
    assert "scripts/test     # set up, start Elasticsearch 9.2.8 and 8.15.5 (Maven + Java), run the whole test suite\n" in readme
    linked = {Path(t.partition("#")[0]).name for t in links(ROOT / "README.md")}
    assert {p.name for p in PAGES} - {"index.md"} <= linked  # every manual page is reachable from the front page


def test_mkdocs_yml_names_every_page():
    conf = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert conf["docs_dir"] == "docs" and conf["site_url"] == SITE_URL
    nav = {file for entry in conf["nav"] for file in entry.values()}
    assert nav == {p.name for p in PAGES}


# -- (d) esrag reads its own manual ---------------------------------------------------------------

EMBED = ["section_path", "text"]
BM25 = {"text": 1.0, "section_path": 1.0}

#: question -> (the page and anchor that answers it, how many hits may come before it)
QUESTIONS = {
    "how do I connect to Elastic Cloud": ("elasticsearch/", ("elasticsearch", "connecting-to-a-secured-cluster"), 3),
    "what does max_delete_fraction do": ("ingest/", ("safe-by-default-deletions-bad-input-faults",), 3),
    "register the MCP server with Claude Desktop": ("serving/", ("serve-it",), 1),
    "which privileges does a search-only API key need": ("elasticsearch/", ("elasticsearch-privileges-least-privilege",), 1),
    "use esrag as a LangChain retriever": ("python/", ("langchain-llamaindex-and-haystack-retrievers",), 1),
}


@pytest.fixture(scope="module")
def manual_store(tmp_path_factory):
    """``docs/`` ingested as the MkDocs site ``mkdocs.yml`` describes (a stand-in embedder)."""
    site = resolve_site(DOCS)
    assert site.site == "mkdocs" and site.base_url == SITE_URL and site.config == ROOT / "mkdocs.yml"
    store = SQLiteStore(tmp_path_factory.mktemp("manual") / "esrag.db")
    emb = HashEmbedder(64)
    ingester = Ingester(
        store, emb.spec, lambda: emb, HeaderChunker.from_settings(Settings().chunking), EMBED, BM25, site=site, doc_version=site.doc_version
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = ingester.run(DOCS, "esrag-manual", ["*.md"], [])
    assert summary.failures == [] and summary.files == len(PAGES)
    yield store, emb
    store.close()


def test_the_manual_answers_questions_with_section_urls(manual_store):
    store, emb = manual_store
    searcher = Searcher(store, lambda: emb, Settings().search, BM25)
    for question, (page, ids, within) in QUESTIONS.items():
        urls = [h.chunk.url for h in searcher.search(question, k=5, mode="bm25").hits]
        wanted = [f"{SITE_URL}{page}#{anchor}" for anchor in ids]
        assert any(u in wanted for u in urls[:within]), f"{question!r}: {wanted} not in the top {within} of {urls}"


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.ids |= {v for k, v in attrs if k == "id" and v}


def test_mkdocs_builds_the_manual_with_every_anchor_esrag_wrote(manual_store, tmp_path):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "site"), strict=True))
    store, _ = manual_store
    chunks = store.get([i for entries in store.manifest("esrag-manual").values() for i in entries])
    assert len(chunks) > 100
    missing = []
    for url in sorted({c.url for c in chunks}):
        assert url.startswith(SITE_URL), url
        path, _, anchor = url[len(SITE_URL) :].partition("#")
        html = tmp_path / "site" / path / "index.html"
        parser = _Ids()
        parser.feed(html.read_text(encoding="utf-8") if html.is_file() else "")
        if anchor not in parser.ids:
            missing.append(url)
    assert missing == []
