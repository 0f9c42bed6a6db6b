"""Retrievers for the RAG frameworks people already run, each over the same search as
``esrag search`` (:class:`esrag.service.SearchService`), on the embedded store or Elasticsearch:

- :mod:`esrag.integrations.langchain`: ``EsragRetriever``, a LangChain ``BaseRetriever``
  (``pip install 'esrag[langchain]'``);
- :mod:`esrag.integrations.llamaindex`: ``EsragRetriever``, a LlamaIndex ``BaseRetriever``
  (``pip install 'esrag[llamaindex]'``);
- :mod:`esrag.integrations.haystack`: ``EsragRetriever``, a Haystack 2 component
  (``pip install 'esrag[haystack]'``).

This package imports no framework itself: each module imports its own framework, so a missing
extra fails only when that module is imported, with the ``pip install`` line to run.
"""
