"""Grounded answers (``esrag ask``): retrieve, structure the context, generate with abstention.

Context structuring (seed 002, §3.3.1; seed 001 on authority labels):

* **source grouping** — hits of one document are grouped into one source (a record of a record
  corpus is its own document), sources in the order of their best hit, passages inside a
  source in document order;
* **metadata** — each source is headed by its document title, source path, corpus and authority
  label; each passage by its section path and line span;
* **delineation** — sources are separated by ``\\n\\n---\\n\\n``.

Generation (seed 002, §3.3.2; prompt ``esrag/prompts/answer_v1.txt``, versioned and hashed like
every prompt): the context is the only permitted source; the model abstains when it does not hold
the answer; it answers in the question's language; it cites section paths; where sources
conflict the higher-authority one governs (authority order from ``[corpora.NAME]
authority_rank``, highest first). Calls are deterministic (temperature 0, seed 0; seeds 1-3 while
the reply is not usable JSON) and cached by the persistent LLM cache.

Citations are checked against the context: a cited section path that no passage carries is
reported under ``unsupported_citations``, never as a citation. With no hits the answer abstains
without calling the LLM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from esrag.errors import AnswerError
from esrag.llm.cache import CachedLLM
from esrag.llm.clients import LLMOptions
from esrag.llm.json_reply import RETRY_SEEDS, ask_json
from esrag.llm.prompts import ANSWER, load_prompt
from esrag.model import Hit
from esrag.tokens import count_tokens

if TYPE_CHECKING:
    from esrag.config import Settings

PROMPT = ANSWER
SEPARATOR = "\n\n---\n\n"
TOKENIZER_SLACK = 1.25
"""Model tokens per cl100k token assumed when fitting the window: the budget counts cl100k
tokens, and the tokenizers of local models (Llama, Qwen, Mistral, SmolLM) give up to about a
quarter more on English prose and code."""
HEADER_ALLOWANCE = 256
"""cl100k tokens kept for the source and passage headers that the budget does not count."""


@dataclass
class Source:
    """One source of the context: a document (or record) and its passages (hits), in document order."""

    label: str
    corpus: str
    source_path: str
    doc_title: str
    authority: str | None
    hits: list[Hit] = field(default_factory=list)

    def render(self) -> str:
        """The source as it appears in the prompt (header, then each passage under its section path)."""
        title = self.doc_title or self.source_path
        head = f"[{self.label}] {title} ({self.source_path}) — corpus: {self.corpus}; authority: {self.authority or 'unlabelled'}"
        parts = [head]
        for h in self.hits:
            c = h.chunk
            parts.append(f"Section: {c.section_path or '(no section)'} (lines {c.start_line}-{c.end_line})\n{c.text.strip()}")
        return "\n\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "corpus": self.corpus,
            "source_path": self.source_path,
            "doc_title": self.doc_title,
            "authority": self.authority,
            "passages": [
                {
                    "id": h.chunk.id,
                    "section_path": h.chunk.section_path,
                    "start_line": h.chunk.start_line,
                    "end_line": h.chunk.end_line,
                    "tokens": h.chunk.tokens,
                }
                for h in self.hits
            ],
        }


def document_key(hit: Hit) -> tuple[str, str, str]:
    """What one source is: (corpus, source path, record id or '')."""
    c = hit.chunk
    return c.corpus, c.source_path, str(c.metadata.get("record_id", ""))


def group_sources(hits: list[Hit]) -> list[Source]:
    """Hits grouped by document (order of each document's best hit), passages by line."""
    groups: dict[tuple[str, str, str], Source] = {}
    for h in hits:
        key = document_key(h)
        if key not in groups:
            c = h.chunk
            groups[key] = Source(f"S{len(groups) + 1}", c.corpus, c.source_path, c.doc_title, c.metadata.get("authority"))
        groups[key].hits.append(h)
    for s in groups.values():
        s.hits.sort(key=lambda h: (h.chunk.start_line, h.chunk.position))
    return list(groups.values())


def assemble_context(hits: list[Hit]) -> tuple[str, list[Source]]:
    """The context text (sources separated by :data:`SEPARATOR`) and its sources."""
    sources = group_sources(hits)
    return SEPARATOR.join(s.render() for s in sources), sources


def authority_order(sources: list[Source], ranks: dict[str, int]) -> str:
    """The authority labels present, highest rank first (``ranks``: label -> rank)."""
    labels = list(dict.fromkeys(s.authority or "unlabelled" for s in sources))
    labels.sort(key=lambda label: -ranks.get(label, 0))
    return " > ".join(labels) if labels else "(none)"


@dataclass
class Answer:
    """What ``esrag ask`` returns: the answer text, whether it abstained, the citations that
    match passages of the context, citations that match none, and the sources."""

    question: str
    answer: str
    abstained: bool
    citations: list[dict[str, Any]]
    sources: list[Source]
    unsupported_citations: list[str] = field(default_factory=list)
    model: str = ""
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "abstained": self.abstained,
            "citations": self.citations,
            "unsupported_citations": self.unsupported_citations,
            "sources": [s.to_dict() for s in self.sources],
            "model": self.model,
            "cached": self.cached,
        }


def _norm(text: str) -> str:
    return " ".join(str(text).replace("›", ">").split()).strip(" .;:`'\"").lower()


def match_citations(cited: list[Any], sources: list[Source]) -> tuple[list[dict[str, Any]], list[str]]:
    """Citations that name a passage's section path (or its source label, e.g. ``S2``), as
    ``{section_path, source, corpus, source_path, doc_title, authority, start_line, end_line, url}``
    (``url``: the section's published link, None when unknown);
    and the cited strings that match none."""
    index: dict[str, list[tuple[Source, Hit]]] = {}
    for s in sources:
        for h in s.hits:
            index.setdefault(_norm(h.chunk.section_path), []).append((s, h))
        index.setdefault(_norm(s.label), []).extend((s, h) for h in s.hits)
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    unsupported: list[str] = []
    for item in cited:
        text = str(item.get("section_path", "") if isinstance(item, dict) else item)
        key = _norm(text.strip("[]"))
        if key not in index:
            unsupported.append(text)
            continue
        for s, h in index[key]:
            if h.chunk.id in seen:
                continue
            seen.add(h.chunk.id)
            c = h.chunk
            found.append(
                {
                    "section_path": c.section_path,
                    "source": s.label,
                    "corpus": c.corpus,
                    "source_path": c.source_path,
                    "doc_title": s.doc_title,
                    "authority": s.authority,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                    "url": c.url or None,
                }
            )
    return found, unsupported


class Answerer:
    """Grounded generation over retrieved hits.

    Args:
        llm: the LLM behind the persistent cache.
        authority_ranks: authority label -> rank (higher governs).
        max_tokens: output limit of the answer call (model tokens).
    """

    def __init__(
        self, llm: CachedLLM, authority_ranks: dict[str, int] | None = None, max_tokens: int = 800, context_tokens: int | None = None
    ) -> None:
        self.llm = llm
        self.authority_ranks = authority_ranks or {}
        self.max_tokens = max_tokens
        self._window: tuple[int, str] | None = (context_tokens, "[answer] context_tokens") if context_tokens else None

    @property
    def window(self) -> tuple[int, str]:
        """``(model tokens, source)`` of the LLM's context window: ``[answer] context_tokens``,
        else what the server reports (:func:`esrag.llm_window.context_window`, asked once)."""
        if self._window is None:
            from esrag.llm_window import context_window

            inner = self.llm.llm  # the provider behind the cache
            self._window = context_window(inner.provider, inner.url or "", inner.model)
        return self._window

    def _fits(self, prompt_text: str) -> bool:
        return count_tokens(prompt_text) * TOKENIZER_SLACK + self.max_tokens <= self.window[0]

    def fit_budget(self, want: int, question: str = "") -> int:
        """The context budget (cl100k tokens of source text) at most ``want`` that leaves room
        in the window for the prompt, the headers and the answer (``max_tokens``):
        ``(window - max_tokens) / TOKENIZER_SLACK - prompt - HEADER_ALLOWANCE``, at least 1."""
        empty = load_prompt(PROMPT).render(question=question, context="", authority_order="")
        room = int((self.window[0] - self.max_tokens) / TOKENIZER_SLACK) - count_tokens(empty) - HEADER_ALLOWANCE
        return max(1, min(want, room))

    def answer(self, question: str, hits: list[Hit]) -> Answer:
        """The grounded answer to ``question`` from ``hits``.

        Raises:
            LLMError: the LLM cannot be reached. AnswerError: no usable JSON after seeds 0-3.
        """
        if not hits:
            return Answer(question, "The indexed sources hold nothing on this question.", True, [], [], model=self.llm.spec)
        prompt = load_prompt(PROMPT)
        hits = list(hits)
        while True:  # the last hits go until prompt + answer fit the model's window
            context, sources = assemble_context(hits)
            text = prompt.render(question=question, context=context, authority_order=authority_order(sources, self.authority_ranks))
            if self._fits(text) or len(hits) == 1:
                break
            hits.pop()
        if not self._fits(text):
            raise AnswerError(
                f"the question and one passage do not fit {self.llm.spec}'s window of {self.window[0]} tokens "
                f"({self.window[1]}) with {self.max_tokens} answer tokens; lower [answer] max_tokens or --budget"
            )
        options = LLMOptions(max_tokens=self.max_tokens, json=True)
        got = ask_json(
            self.llm,
            text,
            prompt.sha256,
            options,
            "answer",
            lambda o: isinstance(o.get("answer"), str) and bool(o["answer"].strip()),
            "no usable answer (a JSON object with an 'answer' string)",
        )
        if got.transport is not None:
            raise got.transport
        if got.value is None or got.reply is None:
            raise AnswerError(
                f"{self.llm.spec} gave no usable answer (a JSON object with an 'answer' string) after seeds "
                f"0, {', '.join(map(str, RETRY_SEEDS))}; try another model (--llm)"
            )
        obj, reply = got.value, got.reply
        abstained = bool(obj.get("abstained", False))
        cited = obj.get("citations") or []
        citations, unsupported = match_citations(cited if isinstance(cited, list) else [cited], sources)
        return Answer(
            question,
            obj["answer"].strip(),
            abstained,
            [] if abstained else citations,
            sources,
            unsupported,
            reply.model or self.llm.spec,
            reply.cached,
        )


def make_answerer(settings: Settings) -> Answerer:
    """An :class:`Answerer` with the configured LLM behind the persistent cache and the
    corpora's authority ranks."""
    from esrag.llm.cache import LLMCache
    from esrag.llm.clients import make_llm

    ranks = {cs.authority: cs.authority_rank for cs in settings.corpora.values() if cs.authority}
    llm = CachedLLM(make_llm(settings.llm, settings), LLMCache(settings.llm_cache_path))
    return Answerer(llm, ranks, settings.answer.max_tokens, settings.answer.context_tokens)
