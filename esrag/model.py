"""The vocabulary of esrag: plain dataclasses that flow between the parts.

``Document`` (a decoded source file) -> ``Block`` (one Markdown block with its line span and
section path) -> ``Chunk`` (what is indexed) -> ``Hit`` (what a search returns).

Units: line numbers are 1-based and inclusive; lengths called *characters* are Python ``str``
lengths (code points); *tokens* are cl100k_base tokens (see :mod:`esrag.tokens`).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any

SECTION_SEPARATOR = " > "


class BlockKind(str, enum.Enum):
    """The block types of seed 000, App. N.1, plus ``html`` for raw HTML blocks.

    Two kinds are added to the seed's eight, both kept in the chunk text but never body:
    ``html`` (raw HTML blocks, which ride along with the chunk they fall in) and ``anchor``
    (paragraphs made only of ``<a name=…></a>`` anchors or comments, which travel with the header
    they precede, as a header does under grouping rule 1).
    """

    FRONT_MATTER = "front_matter"
    CODE = "code"
    HEADER = "header"
    TABLE = "table"
    LIST = "list"
    BLOCKQUOTE = "blockquote"
    THEMATIC_BREAK = "thematic_break"
    PARAGRAPH = "paragraph"
    HTML = "html"
    ANCHOR = "anchor"


@dataclass(slots=True)
class Document:
    """One source file, decoded.

    Attributes:
        path: path relative to the ingested root, POSIX separators (``"docs/scheduling.md"``).
        text: the decoded text with ``\\n`` line endings and no byte-order mark.
        corpus: name of the corpus the document belongs to.
        title: the document title (first level-1 header or front-matter ``title``), if any.
        metadata: free-form metadata copied onto every chunk (``authority``, ``language``…).
        doc_version: the documentation version the file belongs to ('' = unversioned); part
            of every chunk id when set.
        headers: the document's headers in order, filled by the header chunker (what the site
            layer, :mod:`esrag.sites`, turns into anchors).
        front_matter: the parsed YAML/TOML front matter ({} when none).
        source: absolute path of the file on disk (include directives resolve relative to it).
        root: absolute path of the tree include directives may read from (the ingested tree);
            includes resolve only when ``source`` and ``root`` are set, and never outside it.
        problems: one-line messages a chunker left about this document (an include left
            unresolved, a reStructuredText error: ``"line N: …"``); ingest reports them.
        format: ``"rst"`` or ``"markdown"`` when the site's generator says how it reads the
            file (Sphinx ``source_suffix``); '' = by suffix (:func:`esrag.formats.is_rst`).
        format_options: options for the format's reader from the generator's configuration
            (reStructuredText: ``object_types``, ``crossref_types`` registered in Sphinx's conf.py).
    """

    path: str
    text: str
    corpus: str = "default"
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    doc_version: str = ""
    headers: list[Heading] = field(default_factory=list)
    front_matter: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    root: str | None = None
    problems: list[str] = field(default_factory=list)
    format: str = ""
    format_options: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Heading:
    """One header of a document: level 1–6, rendered title, explicit id ('' = none), the
    1-based line it starts on, and the section path it opens (titles joined by ``" > "``).

    ``alt_anchors`` are the section's other ids on the published page (old ``<a id>`` anchors
    kept above a renamed header, reStructuredText labels and object ids), in document order;
    ``html_anchor`` is True when ``anchor`` itself comes from an ``<a name|id>`` element
    rather than the header's own id (mdBook then keeps the header's id, see :mod:`esrag.sites`)."""

    level: int
    title: str
    anchor: str
    line: int
    section_path: str
    alt_anchors: tuple[str, ...] = ()
    html_anchor: bool = False


@dataclass(slots=True)
class Block:
    """One Markdown block.

    Attributes:
        kind: the block type.
        text: the block's source lines joined by ``\\n`` (no trailing newline).
        start_line, end_line: 1-based inclusive line span in the normalised document.
        section_path: titles of the enclosing headers, outermost first; for a header block
            this includes the header's own title.
        level: header level 1–6 for header blocks, else 0.
        anchor: an explicit id of a header block (attr-list ``{#id}``, an ``<a name|id>``
            before it, a docutils section id); '' when none is given.
        alt_anchors: a header block's other explicit ids (the further ``<a name|id>`` anchors
            before or inside it; reStructuredText labels and object ids), in document order.
        html_anchor: True when ``anchor`` comes from an ``<a name|id>`` element, not from the
            header's own id (attr-list or docutils).
    """

    kind: BlockKind
    text: str
    start_line: int
    end_line: int
    section_path: tuple[str, ...] = ()
    level: int = 0
    anchor: str = ""
    alt_anchors: tuple[str, ...] = ()
    html_anchor: bool = False

    @property
    def is_body(self) -> bool:
        """True for blocks that count as chunk body in the grouping rules (not header/html/anchor)."""
        return self.kind not in (BlockKind.HEADER, BlockKind.HTML, BlockKind.ANCHOR)


@dataclass(slots=True)
class Enrichment:
    """LLM-generated fields of one chunk (seed 000, App. N.2, Table 18). Never part of ``text``."""

    title: str = ""
    summary: str = ""
    keywords: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    key: str = ""
    related_keys: list[str] = field(default_factory=list)
    model: str = ""
    prompt_sha256: str = ""


@dataclass(slots=True)
class Chunk:
    """One indexed unit.

    Attributes:
        id: stable id from corpus, source path, section path and ordinal within the section
            (see :func:`chunk_id`); survives edits elsewhere in the file.
        text: the chunk's own source text (blocks as in the source). Evidence is matched on it.
        section_path: enclosing header titles joined by ``" > "`` ("" before the first header).
        start_line, end_line: 1-based inclusive line span in the source document.
        position: 1-based position i of n among the document's chunks; ``n_chunks`` is n.
        tokens: cl100k_base token count of ``text``.
        content_hash: SHA-256 (hex) of what the chunk's index entry derives from (see
            :func:`content_hash`); decides re-embedding and re-enrichment.
        anchor: the HTML id of the chunk's section on the published page ('' = none/unknown).
        url: absolute URL of the chunk's section on the published site, with ``#anchor``
            ('' when no base URL is known). Neither enters the content hash.
        alt_urls: the section's other published addresses (explicit labels, old anchors, page
            aliases), absolute, in document order, without ``url``; [] when it has one address.
            Like ``url``, not part of the content hash.
        doc_version: the documentation version ('' = unversioned).
    """

    id: str
    text: str
    corpus: str = "default"
    source_path: str = ""
    section_path: str = ""
    start_line: int = 1
    end_line: int = 1
    position: int = 1
    n_chunks: int = 1
    tokens: int = 0
    content_hash: str = ""
    doc_title: str = ""
    anchor: str = ""
    url: str = ""
    doc_version: str = ""
    alt_urls: list[str] = field(default_factory=list)
    parent_id: str | None = None
    context: str = ""
    enrichment: Enrichment | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class LegResult:
    """A hit's rank (1-based) and raw score in one retrieval leg (``bm25`` or ``dense``)."""

    rank: int
    score: float


@dataclass(slots=True)
class Hit:
    """A search result: a chunk, its fused score and the per-leg ranks/scores behind it."""

    chunk: Chunk
    score: float
    legs: dict[str, LegResult] = field(default_factory=dict)
    expanded_from: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``esrag search --json`` (fields are a scripting contract)."""
        c = self.chunk
        out: dict[str, Any] = {
            "id": c.id,
            "source_path": c.source_path,
            "section_path": c.section_path,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "score": self.score,
            "text": c.text,
            "corpus": c.corpus,
            "doc_title": c.doc_title,
            "tokens": c.tokens,
            "authority": c.metadata.get("authority"),
            "url": c.url or None,
            "anchor": c.anchor or None,
            "alt_urls": list(c.alt_urls),
            "doc_version": c.doc_version or None,
            "legs": {name: {"rank": leg.rank, "score": leg.score} for name, leg in self.legs.items()},
        }
        if self.expanded_from is not None:
            out["expanded_from"] = self.expanded_from
        return out


def chunk_id(corpus: str, source_path: str, section_path: str, ordinal: int, doc_version: str = "") -> str:
    """Stable chunk id: 32 hex characters of SHA-256 over (corpus, path, section path, ordinal
    [, doc_version]).

    ``ordinal`` counts chunks with the same section path within the file (0-based), so an edit
    in another section leaves the id unchanged, and two sibling sections with the same title get
    distinct ids. ``doc_version`` enters the key only when set, so unversioned chunks keep the
    ids they always had and two versions of one corpus never share an id.
    """
    parts = (corpus, source_path, section_path, str(ordinal)) + ((doc_version,) if doc_version else ())
    key = "\x1f".join(parts)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def content_hash(*parts: str) -> str:
    """SHA-256 hex digest of the given strings joined by a unit separator."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
