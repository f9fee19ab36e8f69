"""ROUGE: hand-worked values, and equality with rouge-score itself (HELM's implementation)."""

from __future__ import annotations

import random

import pytest
from rouge_score import rouge_scorer  # a dev dependency: the reference implementation

from metric_services.shared import rouge
from tests.metric_services.summarization.support import cases


def test_hand_worked_without_stemming():
    # ref  the cat sat on the mat      pred the cat lay on the mat   (all tokens <= 3 chars: no stemming)
    # rouge_1: ref {the:2, cat, sat, on, mat}, pred {the:2, cat, lay, on, mat}: overlap 2+1+1+1 = 5 of 6 each
    # rouge_2: ref {the cat, cat sat, sat on, on the, the mat}, pred {the cat, cat lay, lay on, on the, the mat}:
    #          overlap 3 of 5 each
    # rouge_l: LCS "the cat on the mat" = 5: P = R = 5/6
    r1, r2, rl = rouge.score(["The cat sat on the mat."], "the cat LAY on the mat")
    assert r1 == pytest.approx((5 / 6, 5 / 6, 5 / 6))
    assert r2 == pytest.approx((3 / 5, 3 / 5, 3 / 5))
    assert rl == pytest.approx((5 / 6, 5 / 6, 5 / 6))


def test_hand_worked_with_porter_stemming_and_max_over_references():
    # "running" -> run, "dogs" -> dog, "runs" -> run (stemmed: longer than 3 characters); "the" is kept.
    # ref [run, dog]  pred [the, dog, run]
    # rouge_1: overlap 2: P 2/3, R 2/2, F = 2*(2/3)*1 / (5/3) = 0.8
    # rouge_2: ref (run dog); pred (the dog), (dog run): 0
    # rouge_l: LCS 1: P 1/3, R 1/2, F = 2*(1/6) / (5/6) = 0.4
    # The second reference scores 0 everywhere, so the max keeps the first, with its P and R.
    r1, r2, rl = rouge.score(["Running dogs!", "zebra"], "the dog runs")
    assert r1 == pytest.approx((2 / 3, 1.0, 0.8))
    assert r2 == (0.0, 0.0, 0.0)
    assert rl == pytest.approx((1 / 3, 1 / 2, 0.4))
    assert rouge.tokenize("Running dogs, the runs") == ["run", "dog", "the", "run"]


def test_non_ascii_vanishes_as_in_rouge_score():
    # rouge-score keeps only [a-z0-9] after lowercasing: "東京" and "😀" vanish, "İ" lowercases to "i̇" -> "i".
    assert rouge.tokenize("東京 is big 😀") == ["is", "big"]
    assert rouge.tokenize("İ") == ["i"]
    assert rouge.score(["東京タワー"], "東京タワー") == (rouge.ZERO, rouge.ZERO, rouge.ZERO)
    assert rouge.score([""], "") == (rouge.ZERO, rouge.ZERO, rouge.ZERO)


def test_lcs_length_matches_the_dynamic_programme():
    rng = random.Random(7)
    for _ in range(2000):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 40))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
        assert rouge.lcs_length(a, b) == table[-1][-1]


def test_equals_rouge_score_on_a_varied_corpus():
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    checked = 0
    for refs, pred in cases(20261130, 500):
        ours = rouge.score(refs, pred)
        # HELM: max over references of each type's F; rouge-score's score_multi keeps that reference's P and R.
        theirs = scorer.score_multi(refs, pred)
        for mine, key in zip(ours, ("rouge1", "rouge2", "rougeL"), strict=True):
            t = theirs[key]
            assert mine.fmeasure == pytest.approx(t.fmeasure, abs=1e-9), (refs, pred, key)
            assert mine.precision == pytest.approx(t.precision, abs=1e-9), (refs, pred, key)
            assert mine.recall == pytest.approx(t.recall, abs=1e-9), (refs, pred, key)
            checked += 1
    assert checked == 3 * 504
