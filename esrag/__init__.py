"""esrag: index documentation repositories into Elasticsearch (or an embedded SQLite store) for
retrieval-augmented generation, and search them with BM25 + kNN fused by RRF."""

__version__ = "0.1.0"
