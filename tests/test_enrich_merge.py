"""Key-based merging M and its controls RM and SM (seed 000 App. N.3), related-key expansion KX
and the adjacency control AX (App. N.4), and the TopicGPT-style key consolidation call, on hand
cases whose right answers are worked out in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from esrag.enrich.key_links import expand_adjacent, expand_related, group_by_document, linked, related_counts
from esrag.enrich.merge import (
    apply_key_mapping,
    consolidate_keys,
    key_bins,
    merge_by_keys,
    merge_count,
    random_merges,
    similarity_merges,
)
from esrag.llm.cache import CachedLLM
from esrag.llm.clients import OllamaLLM
from esrag.model import Chunk, Enrichment, content_hash
from llm_standin import Reply, StandIn


def mk(i: int, length: int, key: str = "", related: tuple[str, ...] = (), tokens: int = 100, path: str = "d.md") -> Chunk:
    text = (f"[{i}]" + "x" * length)[:length]
    e = Enrichment(
        title=f"T{i}",
        summary=f"S{i}",
        keywords=[f"k{i}", "shared"],
        questions=[f"q{i}?"],
        entities=[f"E{i}"],
        key=key,
        related_keys=list(related),
        model="ollama:qwen2.5:7b",
        prompt_sha256="p" * 64,
    )
    return Chunk(
        id=f"c{i}",
        text=text,
        section_path=f"Doc > S{i}",
        start_line=10 * i,
        end_line=10 * i + 5,
        position=i,
        n_chunks=8,
        tokens=tokens,
        content_hash=content_hash(text),
        enrichment=e,
        source_path=path,
    )


# -- M -----------------------------------------------------------------------------------------------
def hand_document() -> list[Chunk]:
    return [mk(1, 1000, "a"), mk(2, 500, "b"), mk(3, 1000, "a"), mk(4, 50), mk(5, 1500, "a"), mk(6, 3100, "b"), mk(7, 300), mk(8, 400, "b")]


def test_key_bins_next_fit_by_group_in_order_of_first_chunk():
    # a: c1 (1000) + c3 (1000 + 2) = 2002 fits; c5 would make 3504 > 3000 -> new bin.
    # b: c2 (500); c6 (3100) cannot join -> own bin; c8 cannot join c6's bin (3502) -> own bin.
    assert key_bins(hand_document()) == [[0, 2], [4], [1], [5], [7]]


def test_next_fit_never_revisits_an_earlier_bin():
    chunks = [mk(1, 2000, "k"), mk(2, 1500, "k"), mk(3, 900, "k")]
    assert key_bins(chunks) == [[0], [1, 2]]  # c3 would fit beside c1 (2902) but that bin is closed


def test_merge_by_keys_builds_merged_chunks_and_orphan_context():
    chunks = hand_document()
    out = merge_by_keys(chunks)
    assert [c.id for c in out] == ["c1", "c2", "c4", "c5", "c6", "c7", "c8"]
    assert [c.position for c in out] == list(range(1, 8)) and all(c.n_chunks == 7 for c in out)
    assert merge_count(chunks, out) == 1
    m = out[0]
    assert m.text == chunks[0].text + "\n\n" + chunks[2].text
    e = m.enrichment
    assert (e.title, e.summary, e.key, m.section_path) == ("T1", "S1", "a", "Doc > S1")
    assert e.keywords == ["k1", "shared", "k3"] and e.questions == ["q1?", "q3?"] and e.entities == ["E1", "E3"]
    assert (m.start_line, m.end_line) == (10, 35) and m.metadata["merged_from"] == ["c1", "c3"]
    assert m.tokens > 0 and m.content_hash != chunks[0].content_hash
    orphan = out[2]  # keyless and shorter than 200 characters
    assert orphan.context == "[Section: Doc > S4]\n[Previous: S3]\n[Next: S5]" and orphan.text == chunks[3].text
    assert out[5].context == ""  # keyless but 300 characters: untouched
    assert out[4].text == chunks[5].text  # longer than the cap: alone and unchanged
    assert chunks[0].enrichment.keywords == ["k1", "shared"]  # inputs are not modified


def test_merge_keeps_every_source_text_exactly_once():
    chunks = hand_document()
    texts = "\n\n".join(c.text for c in merge_by_keys(chunks))
    for c in chunks:
        assert texts.count(c.text) == 1


def test_orphan_at_document_edges_and_without_section():
    chunks = [mk(1, 40), mk(2, 1000, "z")]
    chunks[0].section_path = ""
    out = merge_by_keys(chunks)
    assert out[0].context == "[Section: (no section)]\n[Next: S2]"


def test_merged_chunk_of_non_adjacent_fragments_sits_at_its_first_fragment():
    chunks = [mk(1, 100, "k"), mk(2, 100, "j"), mk(3, 100, "k")]
    out = merge_by_keys(chunks)
    assert [c.id for c in out] == ["c1", "c2"] and out[0].metadata["merged_from"] == ["c1", "c3"]


# -- RM and SM ----------------------------------------------------------------------------------------
def test_random_merges_are_count_matched_adjacent_seeded_and_capped():
    chunks = [mk(i, 700) for i in range(1, 9)]
    a = random_merges(chunks, 3, seed="0:d.md")
    assert len(a) == 5 and [c.id for c in random_merges(chunks, 3, seed="0:d.md")] == [c.id for c in a]
    for c in a:  # every output is a contiguous run of the input
        ids = c.metadata.get("merged_from", [c.id])
        nums = [int(x[1:]) for x in ids]
        assert nums == list(range(nums[0], nums[0] + len(nums))) and len(c.text) <= 3000
    seeds = {tuple(c.id for c in random_merges(chunks, 3, seed=s)) for s in range(10)}
    assert len(seeds) > 1
    big = [mk(1, 2000), mk(2, 1500), mk(3, 2000)]
    assert len(random_merges(big, 2, seed=1)) == 3  # no pair fits the cap: no merge


def test_similarity_merges_take_the_most_similar_adjacent_pair_first():
    chunks = [mk(i, 500) for i in range(1, 6)]
    v = np.array([[1, 0, 0], [0, 1, 0], [0, 0.9, 0.1], [0, 0.1, 1], [0.2, 0, 1.0]])
    one = similarity_merges(chunks, v, 1)
    assert [c.metadata.get("merged_from", [c.id]) for c in one] == [["c1"], ["c2", "c3"], ["c4"], ["c5"]]
    two = similarity_merges(chunks, v, 2)
    assert [c.metadata.get("merged_from", [c.id]) for c in two] == [["c1"], ["c2", "c3"], ["c4", "c5"]]
    capped = [mk(1, 500), mk(2, 2000), mk(3, 2000), mk(4, 500)]
    out = similarity_merges(capped, np.array([[1, 0], [0, 1], [0, 1], [1, 0.1]]), 1)
    # c2+c3 are identical but 4002 > cap; c3+c4 (cosine 0.0995) beats c1+c2 (0)
    assert [c.metadata.get("merged_from", [c.id]) for c in out] == [["c1"], ["c2"], ["c3", "c4"]]
    with pytest.raises(ValueError, match="5 chunks but 2 vectors"):
        similarity_merges(chunks, v[:2], 1)


# -- KX and AX ----------------------------------------------------------------------------------------
def kx_document() -> list[Chunk]:
    return [mk(1, 100, "a"), mk(2, 100, "b", ("a",)), mk(3, 100, "a"), mk(4, 100, "c"), mk(5, 100, "d", ("c",)), mk(6, 100, "e")]


def test_linked_by_shared_key_or_related_keys_either_way():
    c = kx_document()
    assert linked(c[0], c[2]) and linked(c[0], c[1]) and linked(c[1], c[0]) and linked(c[3], c[4])
    assert not linked(c[0], c[3]) and not linked(c[5], c[0])


def test_related_key_expansion_inserts_linked_chunks_after_each_hit():
    c = kx_document()
    docs = group_by_document(c)
    ranked = [c[2], c[3]]
    assert [x.id for x in expand_related(ranked, docs)] == ["c3", "c1", "c2", "c4", "c5"]
    assert related_counts(ranked, docs) == [2, 1]
    assert [x.id for x in expand_related(ranked, docs, budget_tokens=250)] == ["c3", "c1", "c2"]  # 300 >= 250: full


def test_adjacency_control_inserts_the_same_number_of_neighbours():
    c = kx_document()
    docs = group_by_document(c)
    # after c3 (KX inserted 2): next c4, previous c2; after c4 (1): next c5 (c3 is taken)
    assert [x.id for x in expand_adjacent([c[2], c[3]], docs)] == ["c3", "c4", "c2", "c5"]
    assert [x.id for x in expand_adjacent([c[2], c[3]], docs, counts=[0, 0])] == ["c3", "c4"]
    assert [x.id for x in expand_adjacent([c[2], c[3]], docs, budget_tokens=200)] == ["c3", "c4"]


def test_expansion_stays_within_the_hit_document():
    a = kx_document()
    b = [mk(i, 100, "a", path="other.md") for i in (11, 12)]
    docs = group_by_document(a + b)
    out = expand_related([a[0]], docs)
    assert {x.source_path for x in out} == {"d.md"}


# -- consolidation (TopicGPT pattern) ------------------------------------------------------------------
@pytest.fixture
def standin():
    with StandIn() as s:
        yield s


def test_consolidation_maps_keys_to_canonical_ones_and_merging_follows(standin):
    c = CachedLLM(OllamaLLM("qwen2.5:7b", standin.url, timeout=5, retries=0))
    keys = ["oauth token flow", "oauth tokens", "queue workers", "Oauth Tokens"]
    mapping = consolidate_keys(keys, c)
    assert mapping == {"oauth token flow": "oauth token flow", "oauth tokens": "oauth token flow", "queue workers": "queue workers"}
    assert len(standin.requests) == 1 and "Keys:\noauth token flow\noauth tokens\nqueue workers\n" in standin.requests[0].prompt
    chunks = [mk(1, 100, "oauth token flow"), mk(2, 100, "queue workers", ("oauth tokens",)), mk(3, 100, "oauth tokens")]
    mapped = apply_key_mapping(chunks, mapping)
    assert [x.enrichment.key for x in mapped] == ["oauth token flow", "queue workers", "oauth token flow"]
    assert mapped[1].enrichment.related_keys == ["oauth token flow"] and chunks[2].enrichment.key == "oauth tokens"
    assert merge_count(mapped, merge_by_keys(mapped)) == 1


def test_consolidation_rejects_unknown_targets_and_survives_garbage(standin):
    c = CachedLLM(OllamaLLM("qwen2.5:7b", standin.url, timeout=5, retries=0))
    standin.queue('{"mapping": {"alpha": "not in the list", "beta": "alpha"}}')
    assert consolidate_keys(["alpha", "beta"], c) == {"alpha": "alpha", "beta": "alpha"}
    standin.queue(*["nope"] * 4)
    assert consolidate_keys(["alpha", "gamma"], c) == {"alpha": "alpha", "gamma": "gamma"}
    assert c.ledger.totals().llm_failures == 1
    standin.queue(Reply(status=500))
    assert consolidate_keys(["x", "y"], c) == {"x": "x", "y": "y"}
    n = len(standin.requests)
    assert consolidate_keys(["only", "only", ""], c) == {"only": "only"} and len(standin.requests) == n  # no call
