"""The framework retrievers (esrag.integrations: LangChain, LlamaIndex, Haystack 2) over a real
index — four pydantic pages (MkDocs, page URLs from mkdocs.yml) and two Laravel pages (version
12.x, plain site) — on the embedded store and on each Elasticsearch test node: the same hits in
the same order as ``esrag search --json`` (the real CLI in a subprocess) for the same query and
options, ``url`` and ``section_path`` in the metadata; LangChain's standard
``RetrieversIntegrationTests``; a real LlamaIndex query engine; a Haystack pipeline through YAML."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import es_params
from esrag import app
from esrag.config import Settings
from esrag.errors import ConfigError
from paths import DATA, LARAVEL
from serve_helpers import run_cli

pytestmark = pytest.mark.integration

PYDANTIC = DATA / "corpora" / "pydantic-docs"
PYDANTIC_PAGES = ("index.md", "concepts/alias.md", "concepts/config.md", "concepts/validators.md")
LARAVEL_PAGES = ("scheduling.md", "cache.md")
Q_ALIAS = "how do I give a field a different name for validation"
Q_SCHEDULE = "run the scheduler every minute with cron"
Q_VALIDATOR = "validate a value after the model is built"
LARAVEL_12 = ["--corpus", "laravel", "--doc-version", "12.x"]


@dataclass
class Indexed:
    """One store holding both corpora: the settings a retriever gets, the environment the CLI gets."""

    name: str
    settings: Settings
    env: dict[str, str]
    _cli: dict[tuple[str, ...], list[dict]] = field(default_factory=dict)

    def cli(self, query: str, *args: str) -> list[dict]:
        """``esrag search QUERY ARGS --json`` (run once per query and arguments)."""
        key = (query, *args)
        if key not in self._cli:
            self._cli[key] = json.loads(run_cli(["search", query, *args, "--json"], self.env).stdout)
        return self._cli[key]


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The two source trees and an embedding cache shared by the stores (one embedding pass)."""
    base = tmp_path_factory.mktemp("integration-trees")
    pyd = base / "pydantic"
    for page in PYDANTIC_PAGES:
        (pyd / "docs" / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PYDANTIC / "docs" / page, pyd / "docs" / page)
    shutil.copy(PYDANTIC / "mkdocs.yml", pyd / "mkdocs.yml")
    lar = base / "laravel"
    lar.mkdir()
    for page in LARAVEL_PAGES:
        shutil.copy(LARAVEL / page, lar / page)
    return pyd, lar, base / "embedding_cache.db"


@pytest.fixture(scope="module", params=["sqlite", *es_params()])
def indexed(request, trees, tmp_path_factory) -> Indexed:
    pyd, lar, cache = trees
    base = tmp_path_factory.mktemp("integration-store")
    if request.param == "sqlite":
        settings = Settings(db=base / "esrag.db", embedding_cache=cache, llm_cache=base / "llm.db")
        env = {"ESRAG_DB": str(base / "esrag.db")}
    else:
        request.getfixturevalue("es_nodes")
        index = f"esrag-t-{uuid.uuid4().hex[:12]}"
        settings = Settings(es_url=request.param, index=index, embedding_cache=cache, llm_cache=base / "llm.db")
        env = {"ESRAG_ES_URL": request.param, "ESRAG_INDEX": index}
    with app.open_store(settings) as store:
        assert not app.ingest_tree(settings, store, pyd, corpus="pydantic").summary.failures
        site = app.make_site(settings, lar, "laravel", site="plain", base_url="https://laravel.com/docs/12.x/", doc_version="12.x")
        assert not app.ingest_tree(settings, store, lar, corpus="laravel", site=site).summary.failures
        assert set(app.list_corpora(store)) == {"pydantic", "laravel"}
    yield Indexed(request.param, settings, env)
    if request.param != "sqlite":
        with app.open_store(settings) as store:
            app.drop_index(store)


def ids(hits: list[dict]) -> list[str]:
    return [h["id"] for h in hits]


def check_metadata(metadata: list[dict], cli: list[dict]) -> None:
    """Each document's metadata carries the CLI hit's place in the source and on the site."""
    assert len(metadata) == len(cli) > 0
    for md, hit in zip(metadata, cli):
        for key in ("source_path", "section_path", "url", "anchor", "start_line", "end_line", "corpus", "doc_version"):
            assert md[key] == hit[key], key
        assert md["score"] == pytest.approx(hit["score"])
        assert md["url"] and md["url"].startswith(("https://docs.pydantic.dev/", "https://laravel.com/docs/12.x/"))


# -- LangChain -----------------------------------------------------------------------------------
def test_langchain_same_hits_as_the_cli(indexed):
    from esrag.integrations.langchain import EsragRetriever

    retriever = EsragRetriever(settings=indexed.settings, k=5)
    try:
        cli = indexed.cli(Q_ALIAS, "-k", "5")
        docs = retriever.invoke(Q_ALIAS)
        assert [d.id for d in docs] == ids(cli) and [d.page_content for d in docs] == [h["text"] for h in cli]
        check_metadata([d.metadata for d in docs], cli)
        assert [d.id for d in asyncio.run(retriever.ainvoke(Q_ALIAS))] == ids(cli)
        # per-call options (k, corpus and version filters) as invoke keywords
        cli12 = indexed.cli(Q_SCHEDULE, "-k", "3", *LARAVEL_12)
        docs12 = retriever.invoke(Q_SCHEDULE, k=3, corpora=["laravel"], doc_version="12.x")
        assert [d.id for d in docs12] == ids(cli12) and {d.metadata["corpus"] for d in docs12} == {"laravel"}
        check_metadata([d.metadata for d in docs12], cli12)
        # a path prefix and a token budget, set on the retriever
        packed = EsragRetriever(settings=indexed.settings, path_prefix="docs/concepts/", budget=300)
        cli_packed = indexed.cli(Q_VALIDATOR, "--path", "docs/concepts/", "--budget", "300")
        got = packed.invoke(Q_VALIDATOR)
        # the same hits and tokens as the CLI, within the budget (the last hit cut at a block boundary)
        assert [d.id for d in got] == ids(cli_packed) and [d.metadata["tokens"] for d in got] == [h["tokens"] for h in cli_packed]
        assert sum(d.metadata["tokens"] for d in got) <= 300
        assert all(d.metadata["source_path"].startswith("docs/concepts/") for d in got)
        packed.close()
        with pytest.raises(ConfigError, match="unknown corpus 'nope'; indexed: laravel, pydantic"):
            retriever.invoke(Q_ALIAS, corpora=["nope"])
    finally:
        retriever.close()


def test_langchain_shares_one_model_between_threads_and_never_blocks_the_loop(indexed):
    from esrag.integrations.langchain import EsragRetriever

    retriever = EsragRetriever(settings=indexed.settings, k=4)
    queries = [Q_ALIAS, Q_SCHEDULE, Q_VALIDATOR, "cache a value forever"]
    try:
        retriever.warm_up()
        service = retriever._search.service()
        embedder = service.pipeline().searcher.embedder
        want = {q: [d.id for d in retriever.invoke(q)] for q in queries}
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda q: (q, [d.id for d in retriever.invoke(q)]), queries * 8))
        assert all(ids_ == want[q] for q, ids_ in got)
        # one store connection and one query model for every call of the object
        assert retriever._search.service() is service and service.pipeline().searcher.embedder is embedder
        assert len(service._pipelines) == 1

        async def spin_while_searching() -> tuple[int, list[str]]:
            task = asyncio.create_task(retriever.ainvoke(Q_SCHEDULE))
            turns = 0
            while not task.done():  # the loop keeps turning while the search runs in its thread
                turns += 1
                await asyncio.sleep(0)
            return turns, [d.id for d in task.result()]

        turns, found = asyncio.run(spin_while_searching())
        assert found == want[Q_SCHEDULE] and turns > 2
    finally:
        retriever.close()


def test_langchain_rejects_bad_options():
    from esrag.integrations.langchain import EsragRetriever

    with pytest.raises(ConfigError, match="mode='fuzzy': use one of hybrid, bm25, dense"):
        EsragRetriever(settings=Settings(db=None), mode="fuzzy")
    retriever = EsragRetriever(settings=Settings(db=None))
    with pytest.raises(ConfigError, match="unknown retriever option 'top_k'"):
        retriever._options(top_k=3)
    with pytest.raises(ConfigError, match="k=0: give a whole number >= 1"):
        retriever._options(k=0)


def _langchain_standard_tests():
    """LangChain's own retriever suite, on every store (the class is built here so that the
    module still imports when langchain-tests is missing, and fails loudly then)."""
    from langchain_tests.integration_tests import RetrieversIntegrationTests

    from esrag.integrations.langchain import EsragRetriever

    class TestLangChainStandard(RetrieversIntegrationTests):
        """``retriever_constructor_params`` point at the store of the ``indexed`` parameter."""

        @pytest.fixture(autouse=True)
        def _store(self, indexed):
            self._settings = indexed.settings

        @property
        def retriever_constructor(self) -> type[EsragRetriever]:
            return EsragRetriever

        @property
        def retriever_constructor_params(self) -> dict:
            return {"settings": self._settings}

        @property
        def retriever_query_example(self) -> str:
            return Q_ALIAS

    return TestLangChainStandard


TestLangChainStandard = _langchain_standard_tests()


# -- LlamaIndex ----------------------------------------------------------------------------------
def test_llamaindex_same_hits_and_a_query_engine(indexed):
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from esrag.integrations.llamaindex import EsragRetriever

    retriever = EsragRetriever(indexed.settings, k=5)
    try:
        cli = indexed.cli(Q_ALIAS, "-k", "5")
        nodes = retriever.retrieve(Q_ALIAS)
        assert [n.node.node_id for n in nodes] == ids(cli) and [n.node.get_content() for n in nodes] == [h["text"] for h in cli]
        check_metadata([n.node.metadata for n in nodes], cli)
        assert [n.score for n in nodes] == pytest.approx([h["score"] for h in cli])
        assert nodes[0].node.ref_doc_id == f"pydantic:{cli[0]['source_path']}"
        assert [n.node.node_id for n in asyncio.run(retriever.aretrieve(Q_ALIAS))] == ids(cli)
        # filters set on the retriever
        cli12 = indexed.cli(Q_SCHEDULE, "-k", "3", *LARAVEL_12)
        r12 = EsragRetriever(indexed.settings, k=3, corpora=["laravel"], doc_version="12.x")
        assert [n.node.node_id for n in r12.retrieve(Q_SCHEDULE)] == ids(cli12)
        r12.close()
        # a real query engine; MockLLM (llama-index-core's stand-in) answers with its prompt, so
        # the answer shows what the engine gave the LLM: the chunks with their URLs and sections
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
        response = engine.query(Q_ALIAS)
        assert [n.node.node_id for n in response.source_nodes] == ids(cli)
        assert cli[0]["url"] in str(response) and cli[0]["section_path"] in str(response)
        assert "start_line" not in str(response)  # positions stay out of the prompt
        aresponse = asyncio.run(engine.aquery(Q_ALIAS))
        assert [n.node.node_id for n in aresponse.source_nodes] == ids(cli)
    finally:
        retriever.close()


# -- Haystack ------------------------------------------------------------------------------------
LARAVEL_12_FILTER = {
    "operator": "AND",
    "conditions": [
        {"field": "meta.corpus", "operator": "==", "value": "laravel"},
        {"field": "doc_version", "operator": "in", "value": ["12.x"]},
    ],
}


def test_haystack_same_hits_filters_and_async(indexed):
    from esrag.integrations.haystack import EsragRetriever

    retriever = EsragRetriever(settings=indexed.settings.model_dump(mode="json", include={"db", "es_url", "index"}), top_k=5)
    try:
        cli = indexed.cli(Q_ALIAS, "-k", "5")
        docs = retriever.run(query=Q_ALIAS)["documents"]
        assert [d.id for d in docs] == ids(cli) and [d.content for d in docs] == [h["text"] for h in cli]
        check_metadata([d.meta for d in docs], cli)
        assert [d.score for d in docs] == pytest.approx([h["score"] for h in cli])
        cli12 = indexed.cli(Q_SCHEDULE, "-k", "3", *LARAVEL_12)
        docs12 = retriever.run(query=Q_SCHEDULE, filters=LARAVEL_12_FILTER, top_k=3)["documents"]
        assert [d.id for d in docs12] == ids(cli12)
        async_docs = asyncio.run(retriever.run_async(query=Q_SCHEDULE, filters=LARAVEL_12_FILTER, top_k=3))["documents"]
        assert [d.id for d in async_docs] == ids(cli12)
        # init filters, replaced by a run's filters (the default policy) or merged with them
        scoped = EsragRetriever(
            settings=retriever.settings, filters={"field": "corpus", "operator": "==", "value": "laravel"}, top_k=3, filter_policy="merge"
        )
        assert [
            d.id for d in scoped.run(query=Q_SCHEDULE, filters={"field": "doc_version", "operator": "==", "value": "12.x"})["documents"]
        ] == ids(cli12)
        scoped.close()
    finally:
        retriever.close()


def test_haystack_pipeline_through_yaml(indexed):
    import haystack
    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder

    from esrag.integrations.haystack import EsragRetriever

    template = "{% for d in documents %}[{{ d.meta.section_path }}]({{ d.meta.url }})\n{{ d.content }}\n{% endfor %}Q: {{ query }}"
    pipe = Pipeline()
    pipe.add_component(
        "retriever",
        EsragRetriever(
            settings=indexed.settings.model_dump(mode="json", include={"db", "es_url", "index"}), top_k=3, filters=LARAVEL_12_FILTER
        ),
    )
    pipe.add_component("prompt", PromptBuilder(template, required_variables=["documents", "query"]))
    pipe.connect("retriever.documents", "prompt.documents")
    inputs = {"retriever": {"query": Q_SCHEDULE}, "prompt": {"query": Q_SCHEDULE}}
    yaml_text = pipe.dumps()
    assert "esrag.integrations.haystack.EsragRetriever" in yaml_text and "12.x" in yaml_text
    v3 = int(haystack.__version__.split(".")[0]) >= 3
    # Haystack 3 loads classes only from allowed modules (docs/python.md); Haystack 2 from any module
    allowed = {"allowed_modules": ["esrag.integrations.haystack"]} if v3 else {}
    if v3:
        from haystack.core.errors import DeserializationError

        with pytest.raises(DeserializationError, match="esrag.integrations.haystack"):
            Pipeline.loads(yaml_text)
    loaded = Pipeline.loads(yaml_text, **allowed)
    assert loaded.dumps() == yaml_text
    prompt = pipe.run(inputs)["prompt"]["prompt"]
    assert loaded.run(inputs)["prompt"]["prompt"] == prompt
    cli12 = indexed.cli(Q_SCHEDULE, "-k", "3", *LARAVEL_12)
    for hit in cli12:
        assert f"[{hit['section_path']}]({hit['url']})" in prompt
    async_pipe = loaded if v3 else haystack.AsyncPipeline.loads(yaml_text)  # Haystack 3: one Pipeline with run_async
    async_prompt = asyncio.run(async_pipe.run_async(inputs))["prompt"]["prompt"]
    assert async_prompt == prompt
    for p in (pipe, loaded, async_pipe):
        p.get_component("retriever").close()


def test_haystack_to_dict_round_trip_and_bad_filters():
    from haystack.errors import FilterError

    from esrag.integrations.haystack import EsragRetriever, UnsupportedFilter, filters_to_options

    r = EsragRetriever(
        settings={"db": "/tmp/x.db"},
        top_k=4,
        filters=LARAVEL_12_FILTER,
        path_prefix="docs/",
        budget=500,
        mode="bm25",
        filter_policy="merge",
    )
    d = r.to_dict()
    assert d["type"] == "esrag.integrations.haystack.EsragRetriever"
    assert d["init_parameters"] == {
        "settings": {"db": "/tmp/x.db"},
        "filters": LARAVEL_12_FILTER,
        "top_k": 4,
        "path_prefix": "docs/",
        "budget": 500,
        "mode": "bm25",
        "embedder": None,
        "filter_policy": "merge",
    }
    assert EsragRetriever.from_dict(d).to_dict() == d
    assert filters_to_options(LARAVEL_12_FILTER) == {"corpora": ["laravel"], "doc_version": "12.x"}
    assert filters_to_options({"field": "language", "operator": "in", "value": ["de", "fr"]}) == {"languages": ["de", "fr"]}
    bad = [
        ({"operator": "OR", "conditions": []}, "logical operator 'OR' is not supported"),
        ({"operator": "NOT", "conditions": [LARAVEL_12_FILTER]}, "logical operator 'NOT'"),
        ({"field": "meta.start_line", "operator": ">", "value": 3}, "field 'meta.start_line' is not supported"),
        ({"field": "corpus", "operator": "!=", "value": "x"}, "operator '!=' with value 'x' on 'corpus' is not supported"),
        ({"field": "doc_version", "operator": "in", "value": ["1", "2"]}, "doc_version takes one version"),
        (
            {
                "operator": "AND",
                "conditions": [{"field": "corpus", "operator": "==", "value": "a"}, {"field": "corpus", "operator": "in", "value": ["b"]}],
            },
            r"filters.conditions\[1\]: 'corpus' is filtered twice",
        ),
        ({"field": "corpus", "value": "x"}, "a comparison needs 'field', 'operator' and 'value'"),
    ]
    for filters, message in bad:
        with pytest.raises(UnsupportedFilter, match=message) as err:
            filters_to_options(filters)
        assert isinstance(err.value, FilterError) and isinstance(err.value, ConfigError)
    with pytest.raises(UnsupportedFilter, match="logical operator 'OR'"):
        EsragRetriever(settings={"db": "/tmp/x.db"}, filters={"operator": "OR", "conditions": []})
    with pytest.raises(ConfigError, match=r"settings\['es_api_key'\].*ESRAG_ES_API_KEY"):
        EsragRetriever(settings={"es_url": "https://es.example.org", "es_api_key": "s3cret"})


# -- extras --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "module, framework, extra",
    [("langchain", "langchain_core", "langchain"), ("llamaindex", "llama_index", "llamaindex"), ("haystack", "haystack", "haystack")],
)
def test_a_missing_framework_names_its_extra(module, framework, extra):
    """Without the framework, importing its retriever fails with the ``pip install`` line to run;
    ``esrag.integrations`` itself imports no framework."""
    import subprocess
    import sys

    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {framework!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")
sys.meta_path.insert(0, Block())
import esrag.integrations
assert not any(m.split(".")[0] == {framework!r} for m in sys.modules)
try:
    import esrag.integrations.{module}
except ImportError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out.endswith(f"run: pip install 'esrag[{extra}]'") and framework in out
