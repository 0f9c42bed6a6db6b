"""The Elasticsearch store (``elastic``), a package split along its seams:

* :mod:`~esrag.stores.elastic.connection`: the client and error translation;
* :mod:`~esrag.stores.elastic.assets`: shipped JSON assets and the names kept per alias;
* :mod:`~esrag.stores.elastic.bodies`: pure request bodies (unit-tested as exact JSON);
* :mod:`~esrag.stores.elastic.documents`: chunk <-> document, over :mod:`esrag.stores.records`;
* :mod:`~esrag.stores.elastic.bulk`: bulk writes over ``elasticsearch.helpers.streaming_bulk``;
* :mod:`~esrag.stores.elastic.capabilities`: cluster facts and the capabilities learned once
  into the index's ``_meta``;
* :mod:`~esrag.stores.elastic.lifecycle`: index state and counts, creation, setup, rebuild, drop;
* :mod:`~esrag.stores.elastic.reranking`: reranking inside the cluster (retriever and inference API);
* :mod:`~esrag.stores.elastic.store`: :class:`ElasticStore`, which sends them.

Only this package imports ``elasticsearch``; it never imports :mod:`esrag.search` (fusion of
legs happens there). The names below stay importable from ``esrag.stores.elastic``.
"""

from esrag.stores.elastic.assets import IndexNames, asset_text, load_asset
from esrag.stores.elastic.bodies import (
    MAX_NUM_CANDIDATES,
    add_language_subfields,
    bm25_body,
    bm25_query,
    branches_msearch_body,
    filter_clauses,
    index_template_body,
    knn_body,
    knn_clause,
    mappings_component_body,
    msearch_body,
    pipeline_body,
    retriever_probe_body,
    rrf_body,
    settings_component_body,
    text_similarity_reranker_body,
    version_clause,
    weighted_fields,
)
from esrag.stores.elastic.bulk import Action, BulkItem, bulk_stream
from esrag.stores.elastic.capabilities import Capabilities, Learned
from esrag.stores.elastic.connection import (
    ClusterWarning,
    classify_reranker_error,
    classify_retriever_probe,
    error_reason,
    fast_serializers,
    redact_url,
)
from esrag.stores.elastic.documents import META_FIELDS, chunk_document, chunk_from_source, decode_vector, encode_vector
from esrag.stores.elastic.store import ElasticStore

__all__ = [
    "MAX_NUM_CANDIDATES",
    "META_FIELDS",
    "Action",
    "BulkItem",
    "Capabilities",
    "ClusterWarning",
    "ElasticStore",
    "IndexNames",
    "Learned",
    "add_language_subfields",
    "asset_text",
    "bm25_body",
    "bm25_query",
    "branches_msearch_body",
    "bulk_stream",
    "chunk_document",
    "chunk_from_source",
    "classify_reranker_error",
    "classify_retriever_probe",
    "decode_vector",
    "encode_vector",
    "error_reason",
    "fast_serializers",
    "filter_clauses",
    "index_template_body",
    "knn_body",
    "knn_clause",
    "load_asset",
    "mappings_component_body",
    "msearch_body",
    "pipeline_body",
    "redact_url",
    "retriever_probe_body",
    "rrf_body",
    "settings_component_body",
    "text_similarity_reranker_body",
    "version_clause",
    "weighted_fields",
]
