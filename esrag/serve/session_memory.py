"""Session memory for agents (issue 38): within one MCP session, ``search_docs`` and ``get_page``
leave out the blocks already sent in that session, say which (section path and URL, one line
each) and how to get them again (``resend=true``).

Opt-in (the default keeps a repeated call's answer identical): ``esrag mcp --session-memory`` or
``[mcp] session_memory = true``; per call, ``resend=true`` sends everything and remembers it.

* **A block** is one indexed chunk, known by :func:`block_key`: a hash of its corpus, version,
  source path, line span and text, so a search hit's member chunk and the same chunk as a
  section of ``get_page`` are one block. A block counts as sent only when its whole text was in
  a response: a hit (or page section) cut to fit the budget leaves its unsent part — and the
  block it cuts — unsent.
* **A session**: stdio is one process, one session; streamable HTTP has the ``mcp-session-id``
  the SDK's session manager gives each client, taken together with the name of the API key
  (:class:`esrag.serve.security.Access`), so two sessions or two keys never share a memory
  (:func:`esrag.serve.mcp.session_of`). Stateless requests (no session id) have no memory.
* **Bounds**: at most :data:`MAX_SESSIONS` sessions (the least recently used forgotten first)
  and :data:`MAX_BLOCKS` blocks per session (the oldest forgotten first: sent again if asked).
* **Freed budget**: a search leaves out the hits (or the members of a merged hit) already sent
  before the response is packed (:func:`esrag.serve.responses.pack`), so the budget they would
  have used goes to the next hits of the same candidates (the pipeline is asked exactly as
  without memory: a larger candidate pool changes how sections merge, and measured worse in
  ``benchmarks/bench_session_memory.py``; with ``k`` a hit left out is not replaced); the
  response lists what was left out (at most :data:`MAX_LISTED` lines, then how many more). A page leaves each run of sent chunks of one
  section path as one line in its place (document order kept), so the budget reads on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from esrag.model import Hit
from esrag.pages import Page, Section, reassemble
from esrag.search.expand import JOINER
from esrag.search.sections import members_of
from esrag.service import hit_json
from esrag.tokens import count_tokens

MAX_SESSIONS = 256
"""Sessions remembered at once; the least recently used is forgotten first."""
MAX_BLOCKS = 4096
"""Blocks remembered per session; the oldest is forgotten first."""
MAX_LISTED = 8
"""Lines naming left-out hits in one search response (then 'and N more')."""
RESEND_HINT = "resend=true sends them again"
PLACEHOLDER = "[Already sent in this session: "
"""How the line standing for sent sections in a page starts (:func:`placeholder`)."""


def block_key(corpus: str, doc_version: str | None, source_path: str, start_line: int, end_line: int, text: str) -> str:
    """A block's identity: 24 hex characters of SHA-256 over its corpus, version ('' when
    unversioned), source path, line span and text — the same for a chunk whether a search hit or
    a page section carried it, different once the chunk is re-indexed with other text."""
    key = "\x1f".join((corpus, doc_version or "", source_path, str(start_line), str(end_line), text))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


class Sent:
    """The keys (:func:`block_key`) of the blocks sent in one session, oldest first, at most
    ``max_blocks``."""

    def __init__(self, max_blocks: int = MAX_BLOCKS) -> None:
        self._blocks: OrderedDict[str, None] = OrderedDict()
        self._max = max_blocks
        self._lock = threading.Lock()  # tools may run in worker threads, two calls of one session at once

    def __contains__(self, key: object) -> bool:
        return key in self._blocks

    def __len__(self) -> int:
        return len(self._blocks)

    def add(self, key: str) -> None:
        """Remember a block sent in full (again: it becomes the newest)."""
        with self._lock:
            self._blocks[key] = None
            self._blocks.move_to_end(key)
            while len(self._blocks) > self._max:
                self._blocks.popitem(last=False)


class SessionMemory:
    """:class:`Sent` per session key, at most ``max_sessions`` (least recently used out)."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, max_blocks: int = MAX_BLOCKS) -> None:
        self._sessions: OrderedDict[Hashable, Sent] = OrderedDict()
        self._max_sessions = max_sessions
        self._max_blocks = max_blocks
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def session(self, key: Hashable) -> Sent:
        """The memory of session ``key`` (new and empty when unknown or forgotten)."""
        with self._lock:
            sent = self._sessions.get(key)
            if sent is None:
                sent = self._sessions[key] = Sent(self._max_blocks)
            self._sessions.move_to_end(key)
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
            return sent


# -- search ---------------------------------------------------------------------------------------
def _hit_key(hit: dict[str, Any]) -> tuple[Any, ...]:
    """Where a hit starts (unique in one response: no chunk is in two hits); kept across the
    budget's shortening and JSON's field selection."""
    return (hit.get("corpus"), hit.get("doc_version") or "", hit.get("source_path"), hit.get("start_line"))


@dataclass
class SearchMemo:
    """A search's hits with the blocks already sent left out.

    Attributes:
        hits: :func:`esrag.service.hit_json` dicts in rank order, without the hits whose every
            block was sent and without the sent members of merged hits (text, lines, tokens and
            ``chunk_ids`` of the rest).
        left_out: per hit (or part of one) left out, ``{"section_path", "url", "source_path",
            "start_line", "end_line"}``, in rank order.
        blocks: per hit (:func:`_hit_key`), its whole blocks as ``(key, end offset in its text)``.
    """

    hits: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)
    blocks: dict[tuple[Any, ...], list[tuple[str, int]]] = field(default_factory=dict)


def _gone(d: dict[str, Any], start: int, end: int) -> dict[str, Any]:
    return {
        "section_path": d.get("section_path"),
        "url": d.get("url"),
        "source_path": d["source_path"],
        "start_line": start,
        "end_line": end,
    }


def leave_out_sent(hits: Iterable[Hit], sent: Sent | None) -> SearchMemo:
    """``hits`` as :func:`esrag.service.hit_json` dicts without the blocks in ``sent`` (None:
    nothing left out, blocks still listed so that the response can be recorded).

    A hit's blocks are its member chunks (:func:`esrag.search.sections.members_of`); a member
    the pipeline's budget cut is not whole and is never recorded (nor left out)."""
    memo = SearchMemo()
    for hit in hits:
        d = hit_json(hit)
        c = hit.chunk
        rows = c.metadata.get("chunks")
        members = members_of(hit)
        whole = [len(m.text) == row[3] for m, row in zip(members, rows)] if rows else [not d.get("truncated")]
        keys = [block_key(m.corpus, m.doc_version, m.source_path, m.start_line, m.end_line, m.text) for m in members]
        keep = [i for i, k in enumerate(keys) if sent is None or k not in sent]
        if not keep:
            memo.left_out.append(_gone(d, members[0].start_line, members[-1].end_line))
            continue
        if len(keep) < len(members):
            gone = [i for i in range(len(members)) if i not in keep]
            memo.left_out.append(_gone(d, members[gone[0]].start_line, members[gone[-1]].end_line))
            text = JOINER.join(members[i].text for i in keep)
            d = {
                **d,
                "text": text,
                "start_line": members[keep[0]].start_line,
                "end_line": members[keep[-1]].end_line,
                "tokens": count_tokens(text),
                "chunk_ids": [members[i].id for i in keep],
            }
            if whole[keep[-1]]:
                d.pop("truncated", None)
        at, blocks = 0, []
        for i in keep:
            text = members[i].text
            if whole[i]:
                blocks.append((keys[i], at + len(text.rstrip())))
            at += len(text) + len(JOINER)
        memo.blocks[_hit_key(d)] = blocks
        memo.hits.append(d)
    return memo


def record_search(memo: SearchMemo, kept: Iterable[dict[str, Any]], sent: Sent) -> int:
    """Remember the blocks of ``kept`` (the hits a response holds, as the budget left them)
    that it holds whole: a block whose text ends within the kept text. Returns how many."""
    n = 0
    for hit in kept:
        length = len(hit.get("text") or "")
        for key, end in memo.blocks.get(_hit_key(hit), []):
            if end <= length:
                sent.add(key)
                n += 1
    return n


def left_out_lines(left_out: list[dict[str, Any]], limit: int = MAX_LISTED) -> str:
    """The Markdown lines after a search response naming what was left out as already sent:
    ``- section path — URL (lines a-b)`` each, at most ``limit``, then how many more; '' when
    nothing was."""
    if not left_out:
        return ""
    lines = [f"_Left out: {len(left_out)} already sent in this session ({RESEND_HINT}):_"]
    for g in left_out[:limit]:
        where = g.get("url") or g["source_path"]
        lines.append(f"- {g.get('section_path') or g['source_path']} — {where} (lines {g['start_line']}-{g['end_line']})")
    if len(left_out) > limit:
        lines.append(f"- … and {len(left_out) - limit} more")
    return "\n".join(lines) + "\n"


# -- pages ----------------------------------------------------------------------------------------
def _section_key(page: Page, s: Section) -> str:
    return block_key(page.corpus, page.doc_version, page.source_path, s.start_line, s.end_line, s.text)


def placeholder(page: Page, run: list[Section]) -> Section:
    """One line standing for ``run`` (consecutive sent sections of one section path) in a page:
    its section path, URL (else source path) and the call that sends it again; the line span of
    the run, so the page's line numbers and ``offset`` calls stay right."""
    first = run[0]
    where = first.url or page.source_path
    call = f"get_page(path={where!r}, section={(first.anchor or first.section_path)!r}, resend=true)"
    text = f"{PLACEHOLDER}{first.section_path or page.title} — {where}; {call} sends it again]"
    return Section(first.section_path, first.anchor, first.url, first.start_line, run[-1].end_line, text, alt_urls=list(first.alt_urls))


def page_without_sent(page: Page, sent: Sent, offset: int | None = None) -> tuple[Page, int]:
    """``page`` with each run of sent sections (chunks) of one section path replaced by a
    :func:`placeholder` line (a section that starts before ``offset`` is left whole: the
    window cuts it). Returns ``(page, sections left out)``; ``page`` itself when none was."""
    out: list[Section] = []
    n = 0
    run: list[Section] = []
    for s in page.sections:
        gone = (offset is None or s.start_line >= offset) and _section_key(page, s) in sent
        if run and (not gone or s.section_path != run[0].section_path):
            out.append(placeholder(page, run))
            run = []
        if gone:
            run.append(s)
            n += 1
        else:
            out.append(s)
    if run:
        out.append(placeholder(page, run))
    if not n:
        return page, 0
    return dataclasses.replace(page, sections=out, text=reassemble(out)), n


def record_page(page: Page, start_line: int, end_line: int, sent: Sent) -> int:
    """Remember the sections of ``page`` (as :func:`page_without_sent` left it) that a window
    showing source lines ``start_line``-``end_line`` (inclusive; 0-0: nothing) holds whole:
    not a placeholder, not the section a window cut to fit (it ends before the section does)
    or started inside (``offset``). Returns how many."""
    n = 0
    for s in page.sections:
        if start_line and start_line <= s.start_line and s.end_line <= end_line and not s.text.startswith(PLACEHOLDER):
            sent.add(_section_key(page, s))
            n += 1
    return n
