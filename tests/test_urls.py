"""Credentials in URLs never reach what a user or a client reads: the CLI's errors and
warnings, HTTP and MCP error bodies, and every esrag error's text (the helper-found leak of
ESRAG_LLM_URL / embedder / reranker passwords)."""

from __future__ import annotations

import click
import pytest

from esrag.cli.common import handle_errors, one_line_warning
from esrag.embedding.remote import OllamaEmbedder, OpenAIEmbedder
from esrag.errors import EsragError, ModelLoadError, RerankError
from esrag.llm.clients import LLMError
from esrag.search.rerank import HTTPReranker
from esrag.serve import mcp
from esrag.serve.http import error
from esrag.urls import redact_url, scrub_credentials


@pytest.mark.parametrize(
    "text, want",
    [
        ("ollama:q at http://u:OLPW@127.0.0.1:9: cannot connect", "ollama:q at http://127.0.0.1:9: cannot connect"),
        ("two: https://a:b@x.io/v1 and http://tok@y:8/z", "two: https://x.io/v1 and http://y:8/z"),
        ("no credentials http://host:9200/path?q=a@b", "no credentials http://host:9200/path?q=a@b"),
        ("mail me at someone@example.com", "mail me at someone@example.com"),
        ("git@github.com:org/repo.git", "git@github.com:org/repo.git"),
    ],
)
def test_scrub_credentials(text, want):
    assert scrub_credentials(text) == want


def test_redact_url_still_serves_the_elasticsearch_store():
    from esrag.stores.elastic import redact_url as es_redact

    assert es_redact is redact_url
    assert redact_url("http://a:9200,https://u:pw@b:9243") == "http://a:9200,https://b:9243"


def test_every_esrag_error_hides_credentials():
    for exc in (
        EsragError("at http://u:SECRET@h:1: down"),
        LLMError("x http://k:SECRET@h/v1 y", 500),
        RerankError("reranker http:http://u:SECRET@h/rerank: HTTP 500"),
    ):
        assert "SECRET" not in str(exc) and "http://h" in str(exc)


def test_cli_errors_and_warnings_hide_credentials():
    @handle_errors
    def fails() -> None:
        raise ModelLoadError("cannot reach http://user:SECRET@10.0.0.1:11434")

    with pytest.raises(click.ClickException) as info:
        fails()
    assert "SECRET" not in info.value.message and "10.0.0.1:11434" in info.value.message
    assert "SECRET" not in one_line_warning("server http://user:SECRET@host/ slow")


def test_http_and_mcp_error_bodies_hide_credentials():
    body = error(502, "ollama:qwen at http://u:LLMPW@127.0.0.1:9: cannot connect").body.decode()
    assert "LLMPW" not in body and "127.0.0.1:9" in body
    assert "LLMPW" not in mcp._one_line(ValueError("at http://u:LLMPW@127.0.0.1:9"))


def test_unreachable_remote_models_name_their_server_without_credentials():
    """Real clients against a closed port (9, discard): the errors they raise."""
    reranker = HTTPReranker("http://u:RRPW@127.0.0.1:9/rerank", timeout=2)
    assert "RRPW" not in reranker.spec
    with pytest.raises(RerankError) as info:
        reranker.rerank("q", ["a"])
    assert "RRPW" not in str(info.value) and "127.0.0.1:9" in str(info.value)
    for make in (
        lambda: OllamaEmbedder("m", url="http://u:EMBPW@127.0.0.1:9", timeout=2),
        lambda: OpenAIEmbedder("m", url="http://u:EMBPW@127.0.0.1:9/v1", timeout=2),
    ):
        with pytest.raises(ModelLoadError) as info:  # the client asks the server for the dimensions at once
            make().embed_documents(["a"])
        assert "EMBPW" not in str(info.value) and "127.0.0.1:9" in str(info.value), str(info.value)
