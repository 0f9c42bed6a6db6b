"""What the servers send back, bounded by a token budget over the whole text the client receives.

* Search hits as compact Markdown (:func:`search_markdown`, MCP ``search_docs``' default: per
  hit the section path as a heading, the URL — or the source path and lines when the page has
  no URL — and the text) or as JSON (:func:`pack_json`, MCP ``format="json"`` and HTTP
  ``/search?token_budget=``).
* Page windows (:func:`page_markdown`, :func:`page_json`): one copy of the text, then what
  was left out and how to read the rest.

The budget rule (issue 30): the response, as the client receives it, holds at most
``token_budget`` cl100k tokens (counted by :func:`esrag.tokens.count_tokens` over the whole
Markdown or JSON text). Hits are taken in rank order while the response fits; a hit that does
not fit is shortened to its whole blocks (:func:`esrag.search.budget.fit_text`, the one fitting
rule: never inside a line, a code fence, a table or a list) when enough of it fits, else left
out and the next hits are tried. The response says how many hits were left out. A hit that the
search pipeline cut to its source-text budget (``truncated``) was cut by the same rule, so it
ends at a block boundary and is not cut again for that.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from esrag.formats.markdown_blocks import parse_blocks
from esrag.model import SECTION_SEPARATOR, BlockKind
from esrag.pages import PageWindow, section_count
from esrag.search.budget import fit_text
from esrag.tokens import count_tokens

DEFAULT_SEARCH_BUDGET = 2000
"""cl100k tokens of a whole ``search_docs`` response when the agent gives no budget."""
DEFAULT_PAGE_BUDGET = 4000
"""cl100k tokens of a whole ``get_page`` response when the agent gives no budget."""
MIN_SHORTENED = 40
"""A hit shortened to fewer cl100k tokens of text than this is left out instead."""

HIT_FIELDS = (
    "section_path",
    "url",
    "anchor",
    "alt_urls",
    "source_path",
    "start_line",
    "end_line",
    "text",
    "corpus",
    "doc_title",
    "doc_version",
    "score",
    "tokens",
    "truncated",
)
"""The fields of a hit in MCP ``search_docs(format="json")``."""


def candidate_budget(budget: int) -> int:
    """cl100k tokens of source text to ask the search pipeline for when a response may hold
    ``budget`` tokens: 3x (at least 4,000), so that hits too large to fit whole can be passed
    over for the next ones, and the pipeline's own cut falls beyond what the response keeps."""
    return max(3 * budget, 4000)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _json_count(text: str) -> int:
    """cl100k tokens of ``text`` as a JSON string literal (escapes counted)."""
    return count_tokens(_json(text))


def _fitted_hit(hit: dict[str, Any], room: int, count: Callable[[str], int]) -> dict[str, Any] | None:
    """``hit`` with its text fitted into ``room`` tokens by ``count``
    (:func:`esrag.search.budget.fit_text`, the one fitting rule: whole blocks), its
    ``end_line``, ``tokens`` (cl100k of the text) and ``truncated`` following; None when fewer
    than :data:`MIN_SHORTENED` tokens of it fit."""
    fit = fit_text(hit["text"], room, count)
    n = count_tokens(fit.text) if fit.text else 0
    if n < MIN_SHORTENED:
        return None
    truncated = bool(hit.get("truncated")) or fit.cut
    return {**hit, "text": fit.text, "end_line": hit["start_line"] + fit.text.count("\n"), "tokens": n, "truncated": truncated}


def pack(
    hits: list[dict[str, Any]],
    budget: int,
    render: Callable[[list[dict[str, Any]], int], str],
    part: Callable[[dict[str, Any]], str],
    text_count: Callable[[str], int],
) -> tuple[str, list[dict[str, Any]]]:
    """The longest response that fits ``budget`` cl100k tokens.

    Args:
        hits: hit dicts in rank order. budget: cl100k tokens of the whole response.
        render: ``(kept hits, number left out) -> the response text``.
        part: one hit's share of the response (its cost is estimated from it).
        text_count: cl100k tokens of a hit's text as it appears in the response.

    Returns:
        ``(response text, kept hits)``; the text's count is <= ``budget`` unless even the
        response without hits is larger.
    """
    kept: list[dict[str, Any]] = []
    used = count_tokens(render([], len(hits)))
    for hit in hits:
        cost = count_tokens(part(hit)) + 1
        if used + cost <= budget:
            kept.append(hit)
            used += cost
            continue
        bare = count_tokens(part({**hit, "text": ""})) + 1
        short = _fitted_hit(hit, budget - used - bare, text_count)
        if short is not None:
            kept.append(short)
            used += count_tokens(part(short)) + 1
    while True:  # the estimate is a sum of parts: check the whole text, and drop the last hit while over
        text = render(kept, len(hits) - len(kept))
        over = count_tokens(text) - budget
        if over <= 0 or not kept:
            return text, kept
        last = kept.pop()
        short = _fitted_hit(last, count_tokens(last["text"]) - over - 2, text_count)
        if short is not None and short["text"] != last["text"]:
            kept.append(short)


# -- search ---------------------------------------------------------------------------------------
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_ATTRS = re.compile(r"[ \t]*\{[^{}]*\}[ \t]*$")  # a trailing attribute list: { #id .class }


def without_own_heading(text: str, section_path: str) -> str:
    """``text`` without its first line when that line is the Markdown (ATX) heading of the
    section the hit's heading already names (the last part of ``section_path``; its attribute
    list ``{ #id }`` and closing ``#``s ignored)."""
    first, _, rest = text.lstrip("\n").partition("\n")
    m = _ATX.match(first)
    title = section_path.rsplit(SECTION_SEPARATOR, 1)[-1].strip()
    if m and title and _ATTRS.sub("", m.group(1)).strip() == title:
        return rest.lstrip("\n")
    return text


def hit_markdown(hit: dict[str, Any], corpus: bool = False) -> str:
    """One hit as Markdown: ``## section path``, the URL (else ``source_path`` and lines) with
    the version (and the corpus when asked), then the text (:func:`without_own_heading`)."""
    head = hit.get("section_path") or hit.get("doc_title") or hit["source_path"]
    where = hit.get("url") or f"{hit['source_path']} (lines {hit['start_line']}-{hit['end_line']})"
    extra = [f"version {hit['doc_version']}"] if hit.get("doc_version") else []
    extra += [f"corpus {hit['corpus']}"] if corpus else []
    text = without_own_heading(hit["text"], hit.get("section_path") or "").strip("\n")
    cut = f"\n[… the section goes on: get_page(path={(hit.get('url') or hit['source_path'])!r})]" if hit.get("truncated") else ""
    return f"## {head}\n{where}{' · ' + ', '.join(extra) if extra else ''}\n\n{text}{cut}\n"


def search_markdown(
    hits: list[dict[str, Any]], budget: int, query: str, note: str = "", tail: str = ""
) -> tuple[str, list[dict[str, Any]]]:
    """The compact Markdown response of ``search_docs`` (:func:`hit_markdown` per hit, in rank
    order) after ``note`` (one line, e.g. which versions were searched:
    :func:`esrag.service.versions_note`) when given and before ``tail`` (lines, e.g. what session
    memory left out: :func:`esrag.serve.session_memory.left_out_lines`), at most ``budget``
    cl100k tokens (:func:`pack`); ``(text, kept hits)``."""
    several = len({h.get("corpus") for h in hits}) > 1

    after = "\n" + tail if tail else ""

    def render(kept: list[dict[str, Any]], left: int) -> str:
        if not kept:
            return (
                (
                    f"No results for {query!r}."
                    if not left
                    else f"{left} results for {query!r} left out: none fits token_budget {budget}; raise it."
                )
                + "\n"
                + after
            )
        more = f"\n_{left} more results left out to keep to token_budget {budget}._\n" if left else ""
        return (f"_{note}_\n\n" if note else "") + "\n".join(hit_markdown(h, several) for h in kept) + more + after

    return pack(hits, budget, render, lambda h: hit_markdown(h, several), count_tokens)


def code_examples(hit: dict[str, Any]) -> dict[str, Any] | None:
    """``hit`` with only its code blocks (fenced or indented: :func:`parse_blocks`' ``code``
    blocks; a hit cut by a budget ends at a block boundary, so they are whole), joined by a blank line,
    under the same section path and URL; None when it holds no code. What ``search_docs(kind="code")``
    returns, as documentation MCP servers for code samples do."""
    code = [b.text for b in parse_blocks(hit["text"]) if b.kind is BlockKind.CODE]
    if not code:
        return None
    text = "\n\n".join(code)
    return {**hit, "text": text, "tokens": count_tokens(text), "truncated": False}


#: how long the one line of an outline entry may be (characters)
OUTLINE_CHARS = 160


def first_line(text: str, section_path: str = "") -> str:
    """The line an outline shows for a hit: its first paragraph or list (its own heading and
    code left out), whitespace collapsed, to the end of its first sentence or
    :data:`OUTLINE_CHARS` characters (then ``…``); '' when the hit has no prose."""
    for b in parse_blocks(without_own_heading(text, section_path)):
        if b.kind in (BlockKind.PARAGRAPH, BlockKind.LIST, BlockKind.BLOCKQUOTE, BlockKind.TABLE):
            line = " ".join(b.text.split())
            m = re.search(r"(?<=[.!?])\s", line)
            line = line[: m.start()] if m and m.start() <= OUTLINE_CHARS else line
            return line if len(line) <= OUTLINE_CHARS else line[: OUTLINE_CHARS - 1].rstrip() + "…"
    return ""


def hit_outline(hit: dict[str, Any], corpus: bool = False) -> str:
    """One hit as an outline entry: ``- **section path** — URL`` (else source path and lines;
    the version and corpus as :func:`hit_markdown`), then its one line (the hit's ``text`` as
    :func:`search_outline` prepared it)."""
    head = hit.get("section_path") or hit.get("doc_title") or hit["source_path"]
    where = hit.get("url") or f"{hit['source_path']} (lines {hit['start_line']}-{hit['end_line']})"
    extra = [f"version {hit['doc_version']}"] if hit.get("doc_version") else []
    extra += [f"corpus {hit['corpus']}"] if corpus else []
    line = f"\n  {hit['text']}" if hit.get("text") else ""
    return f"- **{head}** — {where}{' · ' + ', '.join(extra) if extra else ''}{line}"


def search_outline(hits: list[dict[str, Any]], budget: int, query: str, note: str = "") -> tuple[str, list[dict[str, Any]]]:
    """``search_docs(format="outline")``: section paths, URLs and one line per hit
    (:func:`first_line`), for an agent that chooses before it reads (get_page reads a hit),
    within ``budget`` cl100k tokens (:func:`pack`); ``(text, kept hits)``."""
    several = len({h.get("corpus") for h in hits}) > 1
    lines = [{**h, "text": first_line(h["text"], h.get("section_path") or ""), "truncated": False} for h in hits]

    def render(kept: list[dict[str, Any]], left: int) -> str:
        if not kept:
            return f"No results for {query!r}.\n" if not left else f"{left} results for {query!r} left out: raise token_budget.\n"
        tail = f"\n_{left} more results left out to keep to token_budget {budget}._\n" if left else ""
        head = (f"_{note}_\n\n" if note else "") + "_Outline: get_page(path=URL) reads a section._\n\n"
        return head + "\n".join(hit_outline(h, several) for h in kept) + "\n" + tail

    return pack(lines, budget, render, lambda h: hit_outline(h, several), count_tokens)


def pack_json(body: dict[str, Any], budget: int, fields: tuple[str, ...] | None = None) -> tuple[str, dict[str, Any]]:
    """``body`` (``{"hits": [...], ...}``) as compact JSON of at most ``budget`` cl100k tokens:
    hits kept in rank order (:func:`pack`), each with only ``fields`` when given; adds
    ``"left_out"`` (hits left out) when any was. ``(json text, the body sent)``."""
    hits = [{f: h.get(f) for f in fields if f in h or f == "url"} if fields else h for h in body["hits"]]
    rest = {k: v for k, v in body.items() if k != "hits"}

    def shaped(kept: list[dict[str, Any]], left: int) -> dict[str, Any]:
        return {"hits": kept, **rest, **({"left_out": left} if left else {})}

    text, kept = pack(hits, budget, lambda kept, left: _json(shaped(kept, left)), _json, _json_count)
    return text, shaped(kept, len(hits) - len(kept))


# -- pages ----------------------------------------------------------------------------------------
def _call(path: str, **args: Any) -> str:
    return "get_page(" + ", ".join([f"path={path!r}"] + [f"{k}={v!r}" for k, v in args.items()]) + ")"


def left_out(window: PageWindow) -> dict[str, Any]:
    """What a page window leaves out and how to read it: ``{"before": {"sections", "lines"}?,
    "after": {"sections", "lines", "tokens"}?, "next": {"offset", "section"?, "section_path"?}?}``;
    ``sections`` counts sections, not chunks (:func:`esrag.pages.section_count`)."""
    out: dict[str, Any] = {}
    if window.before:
        out["before"] = {"sections": section_count(window.before), "lines": [window.before[0].start_line, window.before[-1].end_line]}
    if window.after:
        out["after"] = {
            "sections": section_count(window.after),
            "lines": [window.after[0].start_line, window.after[-1].end_line],
            "tokens": sum(s.token_count() for s in window.after),
        }
    if window.next_offset is not None:
        nxt: dict[str, Any] = {"offset": window.next_offset}
        if window.next_section is not None:
            nxt["section"] = window.next_section.anchor or window.next_section.section_path
            nxt["section_path"] = window.next_section.section_path
        out["next"] = nxt
    return out


def _page_note(window: PageWindow, path: str, section: str | None) -> str:
    """The Markdown lines after a page window: what is left out, the calls that read it."""
    gone = left_out(window)
    lines: list[str] = []
    if "before" in gone:
        b = gone["before"]
        lines.append(f"Not shown before: {b['sections']} sections (lines {b['lines'][0]}-{b['lines'][1]}).")
    if window.next_offset is not None:
        lines.append(
            f"Not shown after: lines {window.next_offset}-{window.scope_end} of "
            + (f"section {section!r}" if section else "this page")
            + f" (~{window.tokens_left:,} tokens)."
        )
        lines.append(f"Continue: {_call(path, **({'section': section} if section else {}), offset=window.next_offset)}")
        if window.next_section is not None:
            ns = window.next_section
            lines.append(f"Next section: {_call(path, section=ns.anchor or ns.section_path)} ({ns.section_path})")
    elif section and "after" in gone:
        a = gone["after"]
        lines.append(
            f"The page goes on: {a['sections']} more sections (lines {a['lines'][0]}-{a['lines'][1]}); "
            f"{_call(path, offset=a['lines'][0])} reads on."
        )
    return ("\n---\n" + "\n".join(lines) + "\n") if lines else ""


def _page_head(window: PageWindow) -> str:
    page = window.page
    version = ""
    if page.versions and page.versions != [""]:
        others = [v or "(unversioned)" for v in page.versions if v != page.doc_version]
        version = f" · version {page.doc_version or '(unversioned)'}" + (f" (also indexed: {', '.join(others)})" if others else "")
    where = page.url or page.source_path
    span = (
        f"Lines {window.start_line}-{window.end_line} of {window.page.sections[-1].end_line}"
        if not window.complete and window.sections
        else ""
    )
    return f"# {page.title or page.source_path}\n{where} · source {page.source_path} · corpus {page.corpus}{version}\n" + (
        span + "\n" if span else ""
    )


def page_markdown(fit: Callable[[int | None], PageWindow], budget: int, section: str | None) -> tuple[str, PageWindow]:
    """A page window as Markdown (a heading, where the page lives and which version it is, the
    text, then what was left out and the calls that read the rest) in at most ``budget``
    cl100k tokens. ``fit(text_budget)`` makes the window (:func:`esrag.pages.page_window`);
    the text budget shrinks until the whole response fits."""
    return _fit_page(fit, budget, lambda w: _page_head(w) + "\n" + w.text.strip("\n") + "\n" + _page_note(w, w.page.source_path, section))


def page_json(
    fit: Callable[[int | None], PageWindow], budget: int | None, section: str | None, sections: bool
) -> tuple[str, dict[str, Any]]:
    """A page window as JSON: the fields of :meth:`esrag.pages.Page.to_dict` for the part
    shown (``sections`` with their text only when ``sections``, as HTTP ``/pages`` has them)
    plus ``versions``, ``start_line``, ``end_line``, ``complete`` and ``left_out``
    (:func:`left_out`); at most ``budget`` cl100k tokens when given."""

    def body(w: PageWindow) -> dict[str, Any]:
        page = w.page
        out: dict[str, Any] = {
            "source_path": page.source_path,
            "corpus": page.corpus,
            "doc_version": page.doc_version or None,
            "title": page.title,
            "url": page.url or None,
        }
        if sections:
            out["sections"] = [
                {
                    "section_path": s.section_path,
                    "anchor": s.anchor or None,
                    "url": s.url or None,
                    "start_line": s.start_line,
                    "end_line": s.end_line,
                    "text": s.text,
                }
                for s in w.sections
            ]
        out.update(
            text=w.text, versions=page.versions, start_line=w.start_line, end_line=w.end_line, complete=w.complete, left_out=left_out(w)
        )
        if section:
            out["section"] = section
        return out

    if budget is None:
        w = fit(None)
        return _json(body(w)), body(w)
    text, w = _fit_page(fit, budget, lambda w: _json(body(w)))
    return text, body(w)


def _fit_page(fit: Callable[[int | None], PageWindow], budget: int, render: Callable[[PageWindow], str]) -> tuple[str, PageWindow]:
    """The largest window whose rendering holds at most ``budget`` tokens: the text budget
    starts at what the rendering of an empty window leaves, then shrinks in proportion to the
    overflow (a rendering may hold the text twice, as JSON ``sections`` and ``text``)."""
    empty = fit(0)
    overhead = count_tokens(render(empty))
    room = budget - overhead - 8
    for _ in range(8):
        if room <= 0:
            break
        window = fit(room)
        text = render(window)
        used = count_tokens(text)
        if used <= budget:
            return text, window
        room = min(room - 1, int(room * (budget - overhead) / max(used - overhead, 1)) - 4)
    return render(empty), empty
