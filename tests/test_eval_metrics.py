"""Budget rule and budgeted metrics, on hand-computed cases (seed 000 §4.4)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from esrag.eval import metrics
from esrag.eval.metrics import Gold, evidence_recall, gold_precision, greedy_oracle, select, words
from esrag.search.budget import Taken, cut_text, take_budget, taken_text
from esrag.tokens import count_tokens


@dataclass
class C:
    """A chunk stand-in: source text and its cl100k count."""

    text: str
    tokens: int = -1

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = count_tokens(self.text)


def ws(n: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{i}" for i in range(1, n + 1))


# -- budget ----------------------------------------------------------------------------------


def test_take_budget_cuts_the_overflowing_item_and_stops():
    items = [C("a", 300), C("b", 300), C("c", 10)]
    taken = take_budget(items, 512)
    assert [(t.item.text, t.tokens, t.truncated) for t in taken] == [("a", 300, False), ("b", 212, True)]


def test_take_budget_exact_fill_and_short_rankings():
    assert [t.tokens for t in take_budget([C("a", 256), C("b", 256), C("c", 5)], 512)] == [256, 256]
    assert [t.tokens for t in take_budget([C("a", 10), C("b", 0), C("c", 20)], 512)] == [10, 0, 20]
    assert take_budget([], 512) == []


def test_take_budget_custom_cost_and_errors():
    taken = take_budget([{"n": 5}, {"n": 7}], 10, tokens=lambda d: d["n"])
    assert [(t.tokens, t.truncated) for t in taken] == [(5, False), (5, True)]
    with pytest.raises(ValueError, match="at least 1"):
        take_budget([C("a")], 0)
    with pytest.raises(ValueError, match="negative|>= 0"):
        take_budget([{"n": -1}], 5, tokens=lambda d: d["n"])


def test_cut_text_keeps_the_first_tokens():
    text = "The quick brown fox jumps over the lazy dog. " * 10
    cut = cut_text(text, 7)
    assert text.startswith(cut) and count_tokens(cut) == 7
    assert cut_text(text, 10_000) == text
    assert taken_text(Taken(C(text), 7, truncated=True)) == cut
    assert taken_text(Taken(C(text), count_tokens(text))) == text


# -- words and grams -------------------------------------------------------------------------


def test_words_normalise_case_punctuation_and_unicode():
    assert words("BERT-PFT (IR), scores 73.7 — Crème_brûlée!") == ["bert", "pft", "ir", "scores", "73", "7", "crème", "brûlée"]
    assert words("ﬁne STRASSE straße") == ["fine", "strasse", "strasse"]  # NFKC ligature, casefold
    assert words("1\\. Random: *emphasis*") == words("1. Random: emphasis")


def test_grams():
    assert metrics.grams(words(ws(6))) == {("w1", "w2", "w3", "w4", "w5"), ("w2", "w3", "w4", "w5", "w6")}
    assert metrics.grams(["a", "b"]) == {("a", "b")}
    assert metrics.grams([]) == set()


# -- evidence recall ---------------------------------------------------------------------------


def test_half_of_the_5grams_is_enough():
    gold = Gold.from_texts([ws(8)])  # 4 distinct 5-grams
    # "x w1..w6": holds w1-w5 and w2-w6 = 2 of 4 -> retrieved
    assert evidence_recall(gold, select([C("x " + ws(6))], 512)) == 1.0
    # w1..w5 only: 1 of 4 -> not retrieved
    assert evidence_recall(gold, select([C(ws(5))], 512)) == 0.0


def test_grams_never_span_two_chunks():
    gold = Gold.from_texts([ws(8)])
    split = [C(ws(4)), C("w5 w6 w7 w8")]
    assert evidence_recall(gold, select(split, 512)) == 0.0
    assert evidence_recall(gold, select([C(ws(4) + " w5 w6 w7 w8")], 512)) == 1.0


def test_short_evidence_must_match_contiguously_in_one_chunk():
    gold = Gold.from_texts(["Amazon SQS"])
    assert evidence_recall(gold, select([C("such as Redis or Amazon SQS.")], 512)) == 1.0
    assert evidence_recall(gold, select([C("such as Amazon"), C("SQS is a queue")], 512)) == 0.0
    assert evidence_recall(gold, select([C("SQS and Amazon")], 512)) == 0.0


def test_recall_is_the_share_of_evidence_found():
    gold = Gold.from_texts([ws(6, "a"), ws(6, "b"), "!!!"])  # the third has no word: never found
    sel = select([C(ws(6, "a"))], 512)
    assert metrics.found(gold, sel) == [True, False, False]
    assert evidence_recall(gold, sel) == pytest.approx(1 / 3)


def test_evidence_cut_off_by_the_budget_is_not_retrieved():
    head = C(ws(300, "h"))
    evidence = ws(20, "e")
    tail_chunk = C(ws(100, "f") + " " + evidence)
    assert head.tokens < 1024
    budget = head.tokens + 50  # the second chunk is cut after 50 tokens, before the evidence
    assert evidence_recall(Gold.from_texts([evidence]), select([head, tail_chunk], budget)) == 0.0
    assert evidence_recall(Gold.from_texts([evidence]), select([head, tail_chunk], 4096)) == 1.0


def test_gold_token_precision():
    gold = Gold.from_texts(["b c d e f"])
    sel = select([C("a b c d e f g")], 512)  # grams abcde, bcdef, cdefg; gold bcdef
    assert gold_precision(gold, sel) == pytest.approx(1 / 3)
    assert gold_precision(gold, select([], 512)) == 0.0
    both = select([C("a b c d e f g"), C("b c d e f")], 512)  # distinct grams: 3, one of them gold
    assert gold_precision(gold, both) == pytest.approx(1 / 3)


# -- ranking metrics ---------------------------------------------------------------------------


def test_ranking_metrics_by_hand():
    ranked = metrics.document_ranking(["d2", "d2", "d1", "d3", "d1"])
    assert ranked == ["d2", "d1", "d3"]
    gold = {"d1": 1.0, "d3": 2.0}
    assert metrics.recall_at_k(ranked, gold, 1) == 0.0
    assert metrics.recall_at_k(ranked, gold, 2) == 0.5
    assert metrics.recall_at_k(ranked, gold, 10) == 1.0
    assert metrics.reciprocal_rank(ranked, gold) == 0.5
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert metrics.ndcg_at_k(ranked, gold, 10) == pytest.approx(dcg / idcg)
    assert metrics.reciprocal_rank(["x"], gold) == 0.0


# -- greedy oracle -----------------------------------------------------------------------------


def test_oracle_assembles_a_split_paragraph_and_ignores_distractors():
    evidence = ws(10)  # 6 grams; each half below holds 2
    x = C("filler text " + " ".join(evidence.split()[:6]))
    y = C(" ".join(evidence.split()[4:]) + " more filler")
    z = C("nothing relevant here at all, just words")
    gold = Gold.from_texts([evidence])
    rec, order = greedy_oracle([z, x, y], gold, 512)
    assert rec == 1.0 and sorted(order, key=id) == sorted([x, y], key=id)
    assert order[0] is y  # equal progress: the chunk with fewer tokens first
    assert evidence_recall(gold, select([x], 512)) == 0.0


def test_oracle_respects_the_budget():
    a, b = C(ws(40, "a")), C(ws(40, "b"))
    gold = Gold.from_texts([ws(40, "a"), ws(40, "b")])
    assert greedy_oracle([a, b], gold, 4096)[0] == 1.0
    rec, order = greedy_oracle([a, b], gold, a.tokens)
    assert rec == 0.5 and len(order) == 1
    assert greedy_oracle([C("unrelated words only")], gold, 512) == (0.0, [])
