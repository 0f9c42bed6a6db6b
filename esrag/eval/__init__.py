"""Evaluation as part of the product (``esrag eval``; seed 000 §3–§4.5).

* :mod:`esrag.eval.datasets` — Qasper, BEIR, SQuAD and Markdown-tree-with-spans loaders into one
  in-memory form (documents as Markdown, questions, gold evidence / gold documents);
* :mod:`esrag.eval.metrics` — rec@Bt / prec@Bt on word 5-grams within each selected chunk, the
  greedy oracle, recall@k / MRR / nDCG@10 for chunk-free gold;
* :mod:`esrag.eval.stats` — paired differences, BCa cluster bootstrap, TOST, Holm, sign-flip;
* :mod:`esrag.eval.arms` — arms (chunker + optional enricher + indexed fields) and retrievers
  (search modes with an optional reranker); :mod:`esrag.eval.peers` — LangChain splitters;
* :mod:`esrag.eval.harness` — the grid through the real store and searcher;
  :mod:`esrag.eval.report` — JSONL, summary JSON/Markdown and the plot.
* :mod:`esrag.eval.diagnostics` — the Sim@K diagnostics of ``esrag diagnose`` (seed 002, without
  gold).

The token budget itself lives in :mod:`esrag.search.budget`, shared with ``esrag search``.
"""
