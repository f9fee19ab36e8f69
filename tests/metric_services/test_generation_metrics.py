"""HELM's rouge_l, bleu_1 and bleu_4 (shared/generation_metrics.py), worked by hand and against the
libraries HELM calls (rouge-score, nltk's sentence_bleu)."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from metric_services.shared.generation_metrics import (
    BLEU_1,
    BLEU_4,
    bleu,
    generation_scores,
    nltk_word_tokenize,
    word_tokenize,
)


def test_word_tokenize_is_punkt_then_treebank():
    assert word_tokenize("Hello, world. It isn't here!") == ("Hello", ",", "world", ".", "It", "is", "n't", "here", "!")
    assert word_tokenize("") == ()


# Words, Treebank's special ones among them, and what sits next to the plain-text path's edges.
_WORDS = st.sampled_from(["a", "The", "cat", "B", "U", "2020", "x1", "cannot", "Gonna", "gimmes", "wanna",
                          "lemme", "gotta", "can", "not", "Mr", "no"])  # fmt: skip
_GLUE = st.sampled_from([" ", ", ", ",", "  ", ". ", ".", "'", " '", "-", "? ", "!", "; ", ": ", " (", ") "])
_TEXTS = st.builds(
    lambda first, rest, end: first + "".join(g + w for g, w in rest) + end,
    _WORDS, st.lists(st.tuples(_GLUE, _WORDS), max_size=8), st.sampled_from(["", ".", "..", ",", " ", "?", ".'"]),
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(_TEXTS)
@example("a cousin from the mountains")
@example("to follow the clues it contained, I guess.")
@example("He cannot go, gonna stay.")
@example("Plan B.")
@example("1, 2, 3.")
def test_plain_text_is_split_as_nltk_splits_it(text):
    assert word_tokenize.__wrapped__(text) == nltk_word_tokenize(text)


def test_hand_worked_scores():
    # [the cat sat on a mat] vs [the cat sat on the mat]: 5 of 6 unigrams, LCS 5, one of three 4-grams.
    rl, b1, b4 = generation_scores(["the cat sat on the mat"], "the cat sat on a mat")
    assert (rl, b1, b4) == pytest.approx((5 / 6, 5 / 6, 1 / 3), abs=1e-12)
    # shorter output: BP = exp(1 - r/c) = exp(1 - 4/3); unigrams 2 of 3.
    rl, b1, b4 = generation_scores(["cat sat on mat"], "  the cat sat ")
    assert rl == pytest.approx(4 / 7, abs=1e-12)
    assert b1 == pytest.approx(2 / 3 * math.exp(-1 / 3), abs=1e-12)
    # no 4-gram at all: nltk without smoothing gives BP x sys.float_info.min, not 0 (HELM reports it).
    assert b4 == pytest.approx(math.exp(-1 / 3) * sys.float_info.min, rel=1e-9)


def test_bleu_is_case_sensitive_and_empty_scores_zero():
    assert bleu("Paris", "paris", BLEU_1) == 0.0
    assert generation_scores(["Paris"], "") == (0.0, 0.0, 0.0)
    assert generation_scores(["Paris"], "   ") == (0.0, 0.0, 0.0)
    assert bleu("Paris", "Paris", BLEU_4) == pytest.approx(sys.float_info.min, rel=1e-9)  # exp(log(min))


def test_max_over_references_each_metric_on_its_own():
    refs = ["a b c d e", "x y"]
    rl, b1, _ = generation_scores(refs, "x y z")
    # vs "x y": LCS 2, P 2/3 R 1 -> 4/5; bleu_1 2/3 (c 3 > r 2, BP 1); vs the first: 0.
    assert rl == pytest.approx(0.8, abs=1e-12)
    assert b1 == pytest.approx(2 / 3, abs=1e-12)


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("The quick brown foxes jumped", "quick brown fox jumping over"),
        ("naïve café — 😀 ok", "naive cafe ok 😀"),
        ("{summary} with braces", "summary with {braces}"),
        ("10", "1"),
    ],
)
def test_rouge_l_equals_rouge_score(gold, pred):
    expected = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(gold, pred.strip())["rougeL"].fmeasure
    assert generation_scores([gold], pred)[0] == pytest.approx(expected, abs=1e-12)


def test_bleu_equals_nltks_sentence_bleu_on_random_texts():
    """The one-pass BLEU_1/BLEU_4 against the nltk call HELM makes, on random short texts over a small
    vocabulary (repeats, clipping, outputs shorter and longer than the reference, no match at all)."""
    import random
    import warnings

    from nltk.translate.bleu_score import sentence_bleu

    rng = random.Random(11)
    words = ["the", "cat", "sat", "on", "a", "mat", "The", ".", ",", "dog", "ran", "😀"]
    for _ in range(400):
        gold = " ".join(rng.choices(words, k=rng.randint(1, 12)))
        pred = " ".join(rng.choices(words, k=rng.randint(0, 12)))
        for weights in (BLEU_1, BLEU_4):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = float(sentence_bleu([list(word_tokenize(gold))], list(word_tokenize(pred)), weights=weights))
            assert bleu(gold, pred, weights) == expected, (gold, pred, weights)
