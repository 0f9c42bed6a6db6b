"""resolve_library (issue 39): a library name as a user writes it finds its corpus and version,
from the corpus names, ``[corpora.NAME] aliases`` and ``description`` of real settings."""

from __future__ import annotations

from esrag.config import CorpusSettings, Settings
from esrag.libraries import matching_versions, resolve_library, split_name

SETTINGS = Settings(
    corpora={
        "django": CorpusSettings(aliases=["Django framework"], description="Django, the Python web framework"),
        "react-router": CorpusSettings(aliases=["React Router", "remix router"]),
        "fastapi": CorpusSettings(description="FastAPI: a Python web framework for building APIs"),
        "sqlalchemy": CorpusSettings(aliases=["SQLAlchemy ORM", "sqla"]),
        "rust-book": CorpusSettings(aliases=["The Rust Programming Language"]),
        "nextjs": CorpusSettings(aliases=["Next.js"]),
        "vue": CorpusSettings(aliases=["Vue.js", "vuejs"]),
    }
)


def versions(*names: str, default: str | None = None) -> dict:
    return {"versions": {n: {"chunks": 1} for n in names}, "default_version": default}


CORPORA = {
    "django": versions("4.2", "5.0", "5.1", default="5.1"),
    "react-router": versions("v6", "v7", default="v7"),
    "react": versions("19"),
    "fastapi": versions(""),
    "laravel": versions("11.x", "12.x", default="12.x"),
    "sqlalchemy": versions("1.4", "2.0"),
    "rust-book": versions(""),
    "nextjs": versions("14", "15"),
    "vue": versions("3"),
    "flask": versions(""),
}

# (as a user writes it, the corpus, the version it names)
VARIANTS = [
    ("django", "django", None),
    ("Django 5", "django", "5.1"),  # a major version: its newest minor
    ("react router v6", "react-router", "v6"),
    ("react-router", "react-router", None),
    ("ReactRouter", "react-router", None),
    ("Next.js 14", "nextjs", "14"),  # an alias with punctuation
    ("SQLA", "sqlalchemy", None),  # an alias, upper case
    ("laravel 11", "laravel", "11.x"),
    ("the rust book", "rust-book", None),
    ("fast api", "fastapi", None),
]


def test_ten_name_variants_find_their_corpus_and_version():
    right = 0
    for written, corpus, version in VARIANTS:
        found = resolve_library(SETTINGS, CORPORA, written)
        if found and found[0]["corpus"] == corpus and found[0].get("version") == version:
            right += 1
    assert right >= 9, right
    assert right == len(VARIANTS)  # today every one


def test_ranking_versions_description_and_nothing():
    top = resolve_library(SETTINGS, CORPORA, "React")
    assert [h["corpus"] for h in top[:2]] == ["react", "react-router"] and top[0]["score"] > top[1]["score"]
    django = resolve_library(SETTINGS, CORPORA, "Django 5")[0]
    assert django["versions"] == ["5.1", "5.0", "4.2"] and django["default_version"] == "5.1" and django["matched"] == "django"
    assert {h["corpus"] for h in resolve_library(SETTINGS, CORPORA, "python web framework")} == {"django", "fastapi"}
    assert resolve_library(SETTINGS, CORPORA, "kubernetes") == [] and resolve_library(SETTINGS, CORPORA, " -- ") == []
    assert resolve_library(SETTINGS, {k: CORPORA[k] for k in ("vue",)}, "django") == []  # only the corpora given
    assert split_name("react-router@6.4") == (["react", "router"], "6.4")
    assert matching_versions(["5", "50", "5.1", "v5.2", "6"], "5") == ["v5.2", "5.1", "5"]


def test_a_sites_own_title_and_description_are_signals():
    """What a synced source's site configuration says of itself (``sites``): its title is one
    more name, its description stands in when the settings give none and never replaces one."""
    corpora = {**CORPORA, "hb": versions("")}
    sites = {"hb": {"title": "Hummingbird", "description": "Swift server framework"}, "fastapi": {"title": "", "description": "ignored"}}
    assert not resolve_library(SETTINGS, corpora, "hummingbird")  # without the site's word: nothing names it
    found = resolve_library(SETTINGS, corpora, "Hummingbird 2", sites=sites)
    assert found[0]["corpus"] == "hb" and found[0]["matched"] == "Hummingbird" and found[0]["title"] == "Hummingbird"
    assert resolve_library(SETTINGS, corpora, "swift server", sites=sites)[0] | {"score": 0} == found[0] | {
        "score": 0,
        "matched": "description",
    }
    fastapi = resolve_library(SETTINGS, corpora, "fastapi", sites=sites)[0]
    assert fastapi["description"] == SETTINGS.corpora["fastapi"].description and "title" not in fastapi
