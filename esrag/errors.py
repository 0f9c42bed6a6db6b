"""esrag's exceptions. Each message names the bad value and the way out."""

from __future__ import annotations

from esrag.urls import scrub_credentials


class EsragError(Exception):
    """Base class of every error esrag raises on purpose. Its text never shows the
    ``user:password@`` of a URL (:func:`esrag.urls.scrub_credentials`), whatever a message
    or a wrapped library error put in it."""

    def __str__(self) -> str:
        return scrub_credentials(super().__str__())


class SourceError(EsragError):
    """A source file cannot be indexed (not UTF-8, binary, empty, too large). Names the file."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class EmptySource(SourceError):
    """A source file with nothing but whitespace: a page that shows nothing (Sphinx's test roots
    keep blank ``index.rst`` files). An ingest of pages leaves it out as skipped, reason
    ``empty``, and removes what it held before; a records ingest and ``esrag chunk FILE`` report
    it as the one-line error it is."""


class ConfigError(EsragError):
    """A setting has an unusable value."""


class PluginError(EsragError):
    """A plugin name is unknown or its entry point fails to load; lists the valid names."""


class ModelLoadError(EsragError):
    """An embedding or reranking model cannot be loaded (often: hub unreachable, offline)."""


class EmbedderMismatch(EsragError):
    """The index was built with another embedding model or dimension than the configured one."""


class StoreError(EsragError):
    """The store cannot be opened, written or searched."""


class NotIndexedError(EsragError):
    """A search was run against an index that does not exist yet."""


class PageNotFound(NotIndexedError):
    """No indexed page has the requested source path (in the requested corpus / version);
    :func:`esrag.pages.get_page` raises it, naming the path."""


class RerankError(EsragError):
    """A reranker cannot be built or called (bad spec, unreachable endpoint, a cluster without
    the ``text_similarity_reranker`` retriever). Names the reranker and the way out."""


class AnswerError(EsragError):
    """``esrag ask`` could not produce an answer (the LLM gave no usable reply)."""


class InvalidSettings(ConfigError, ValueError):
    """A settings file, an ``ESRAG_*`` variable or a value passed in code is unusable: an
    unknown key, a missing ``ESRAG_CONFIG`` file, a value of the wrong type. One line naming
    the file or variable and the dotted key (:mod:`esrag.config_check`). Also a ValueError,
    as pydantic's ValidationError it replaces."""
