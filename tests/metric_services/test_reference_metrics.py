"""HELM's reference metrics (crfm-helm 0.5.16 evaluate_reference_metrics.py), quirks included.

Every expected value is worked out by hand in the comment next to it, from HELM's definitions
(`docs/architecture.md` and docs/metrics.md's Accuracy section name the metrics).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metric_services.shared.reference_metrics import (
    BINARY,
    METRICS,
    exact_match,
    f1_score,
    f_measure,
    normalize_text,
    prefix_exact_match,
    quasi_exact_match,
    quasi_prefix_exact_match,
    score,
)

ALL_FIVE = (
    "exact_match",
    "quasi_exact_match",
    "prefix_exact_match",
    "quasi_prefix_exact_match",
    "f1_score",
)


def test_metric_table_names_the_five_metrics_and_only_f1_is_graded():
    assert tuple(METRICS) == ALL_FIVE
    assert frozenset(ALL_FIVE) - BINARY == {"f1_score"}


# --- normalize_text ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # punctuation goes before articles: "the-cat" -> "thecat", and "thecat" has no article word.
        ("the-cat", "thecat"),
        # lowercase "the cat!", drop "!" -> "the cat", drop "the" -> " cat", collapse -> "cat".
        ("The Cat!", "cat"),
        # "an apple, a day." -> "an apple a day" -> "  apple   day" -> "apple day".
        ("An apple, a day.", "apple day"),
        # articles only as whole words: "another" and "theory" keep their letters.
        ("another theory", "another theory"),
        # "a.b" -> "ab" (the dot goes first, so no article is left standing).
        ("a.b", "ab"),
        # whitespace of any kind collapses to single spaces, ends trimmed.
        ("  x \t\n y  ", "x y"),
        # only ASCII string.punctuation is removed: curly quotes stay.
        ("\u201ccat\u201d", "\u201ccat\u201d"),
        # an article-only text normalizes to nothing.
        ("The a AN", ""),
    ],
)
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


# --- exact and quasi-exact match ---------------------------------------------------------------


def test_quasi_exact_match_normalizes_but_exact_match_does_not():
    # norm("The Cat!") = "cat" = norm("cat") -> 1; "cat" != "The Cat!" -> 0.
    assert quasi_exact_match("cat", "The Cat!") == 1.0
    assert exact_match("cat", "The Cat!") == 0.0


def test_exact_match_strips_both_sides_only():
    # " Paris \n".strip() == "Paris" -> 1; case still matters -> 0.
    assert exact_match(" Paris \n", "Paris") == 1.0
    assert exact_match("Paris", "paris") == 0.0


def test_quasi_exact_match_with_gold_normalizing_to_nothing():
    # norm("the") = "" and norm("a") = "": equal, so HELM counts a match although nothing matched.
    assert quasi_exact_match("the", "a") == 1.0
    # norm("the") = "" vs norm("cat") = "cat" -> 0.
    assert quasi_exact_match("the", "cat") == 0.0


@pytest.mark.parametrize("fn", [exact_match, quasi_exact_match, prefix_exact_match, quasi_prefix_exact_match, f1_score])
def test_empty_prediction_scores_zero(fn):
    # HELM: 0 if p == "" for every metric, even when the gold is empty too.
    assert fn("Paris", "") == 0.0
    assert fn("", "") == 0.0
    # gold normalizes to "" (so quasi_prefix "" .startswith("") would be True): still 0.
    assert fn("the", "") == 0.0


def test_whitespace_only_output_scores_zero_through_score():
    # score() strips the output first: "  \n\t " -> "" -> every metric 0.
    assert score(["Paris", ""], "  \n\t ") == dict.fromkeys(ALL_FIVE, 0.0)
    # ... whereas calling exact_match directly with an unstripped " " and gold "" matches:
    # " " is truthy and "".strip() == " ".strip(). This is why HELM strips completions first.
    assert exact_match("", " ") == 1.0


# --- prefix matches ----------------------------------------------------------------------------


def test_prefix_exact_match_gold_1_matches_pred_10():
    # "10".startswith("1") -> 1; HELM's own caveat. Exact match is 0.
    assert prefix_exact_match("1", "10") == 1.0
    assert exact_match("1", "10") == 0.0
    # norm("10") = "10" starts with norm("1") = "1" -> 1.
    assert quasi_prefix_exact_match("1", "10") == 1.0


def test_prefix_exact_match_is_case_sensitive_quasi_prefix_is_not():
    # "Paris is big".startswith("paris") is False -> 0; norm: "paris is big".startswith("paris") -> 1.
    assert prefix_exact_match("paris", "Paris is big") == 0.0
    assert quasi_prefix_exact_match("paris", "Paris is big") == 1.0
    # prediction shorter than gold: "Par" does not start with "Paris" -> 0 on both.
    assert prefix_exact_match("Paris", "Par") == 0.0
    assert quasi_prefix_exact_match("Paris", "Par") == 0.0


def test_quasi_prefix_matches_anything_when_gold_normalizes_to_nothing():
    # norm("The!") = "" and every string starts with "" -> 1 for any non-empty prediction.
    assert quasi_prefix_exact_match("The!", "anything at all") == 1.0


# --- F1 on token sets --------------------------------------------------------------------------


def test_f1_collapses_duplicate_tokens():
    # gold "x y y" -> {x, y}; pred "y y z" -> {y, z}; overlap {y} = 1.
    # P = 1/2, R = 1/2, F = 1/(0.5/0.5 + 0.5/0.5) = 0.5.
    # (SQuAD's bag-of-tokens F1 would give P = R = 2/3 -> 2/3.)
    assert f1_score("x y y", "y y z") == pytest.approx(0.5, abs=1e-15)


def test_f1_drops_articles_before_taking_sets():
    # gold "a b b" -> "b b" -> {b}; pred "b b c" -> {b, c}; overlap 1.
    # P = 1/2, R = 1/1, F = 1/(0.5/0.5 + 0.5/1) = 1/1.5 = 2/3.
    assert f1_score("a b b", "b b c") == pytest.approx(2 / 3, abs=1e-15)


def test_f1_precision_and_recall_worked_example():
    # gold "The cat sat." -> {cat, sat}; pred "cat sat on mat" -> {cat, sat, on, mat}.
    # P = 2/4, R = 2/2, F = 2PR/(P+R) = 1/1.5 = 2/3.
    assert f1_score("The cat sat.", "cat sat on mat") == pytest.approx(2 / 3, abs=1e-15)
    # swapped roles: P = 1, R = 1/2 -> same 2/3 (F1 is symmetric).
    assert f1_score("cat sat on mat", "The cat sat.") == pytest.approx(2 / 3, abs=1e-15)


def test_f1_no_overlap_is_zero():
    # {paris} vs {london}: overlap 0 -> precision 0 -> 0.
    assert f1_score("Paris", "London") == 0.0


def test_f1_is_zero_when_either_side_normalizes_to_nothing():
    # gold "the" -> "" -> empty set: nltk returns None, HELM scores 0.
    assert f1_score("the", "cat") == 0.0
    # prediction "An!" -> "" -> empty set -> 0.
    assert f1_score("cat", "An!") == 0.0
    # both empty: SQuAD would say 1; HELM says 0.
    assert f1_score("the", "a") == 0.0
    assert f_measure(set(), {"x"}) is None
    assert f_measure({"x"}, set()) is None


def test_f_measure_alpha_weights_precision():
    # reference {a, b}, test {a}: P = 1, R = 1/2.
    # alpha = 0.5: 1/(0.5/1 + 0.5/0.5) = 1/1.5 = 2/3; alpha = 1 (precision only): 1/(1/1) = 1.
    assert f_measure({"a", "b"}, {"a"}) == pytest.approx(2 / 3, abs=1e-15)
    assert f_measure({"a", "b"}, {"a"}, alpha=1.0) == pytest.approx(1.0, abs=1e-15)
    # alpha = 0 (recall only): 1/(1/0.5) = 0.5.
    assert f_measure({"a", "b"}, {"a"}, alpha=0.0) == pytest.approx(0.5, abs=1e-15)


# --- score(): max over references, output stripped ---------------------------------------------


def test_score_takes_each_metric_max_over_references_independently():
    out = "Paris, France"
    refs = ["Paris", "paris france"]
    # ref "Paris":        em 0, qem norm "paris" vs "paris france" 0, pem "Paris, France".startswith("Paris") 1,
    #                     qpem 1, f1 {paris} vs {paris, france}: P 1/2, R 1 -> 2/3.
    # ref "paris france": em 0, qem 1, pem 0 (case), qpem 1, f1 1.
    # max per metric: em 0, qem 1 (2nd ref), pem 1 (1st ref), qpem 1, f1 1.
    assert score(refs, out) == {
        "exact_match": 0.0,
        "quasi_exact_match": 1.0,
        "prefix_exact_match": 1.0,
        "quasi_prefix_exact_match": 1.0,
        "f1_score": 1.0,
    }


def test_score_f1_is_the_best_reference():
    # out "x z" -> {x, z}. ref "x y" -> {x, y}: P 1/2, R 1/2 -> 1/2. ref "x" -> {x}: P 1/2, R 1 -> 2/3.
    # max = 2/3; the order of the references does not matter.
    assert score(["x y", "x"], "x z")["f1_score"] == pytest.approx(2 / 3, abs=1e-15)
    assert score(["x", "x y"], "x z")["f1_score"] == pytest.approx(2 / 3, abs=1e-15)


def test_score_strips_the_output():
    # "  Paris\n" -> "Paris" == "Paris": every metric 1.
    assert score(["Paris"], "  Paris\n") == dict.fromkeys(ALL_FIVE, 1.0)


def test_score_without_references_is_all_zero():
    assert score([], "Paris") == dict.fromkeys(ALL_FIVE, 0.0)


def test_score_empty_normalized_gold():
    # gold "the" -> norm "": qem needs norm(out) == "" (out "cat" -> no: 0), qpem "cat".startswith("") -> 1,
    # f1 0 (empty gold set), em 0, pem "cat".startswith("the") -> 0.
    assert score(["the"], "cat") == {
        "exact_match": 0.0,
        "quasi_exact_match": 0.0,
        "prefix_exact_match": 0.0,
        "quasi_prefix_exact_match": 1.0,
        "f1_score": 0.0,
    }


# --- property: score() is exactly the max over references of the single functions ---------------

_PIECES = ["the", "The", "a", "an", "An", "cat", "Cat", "x", "10", "1", "-", ".", ",", "!", "'", " ", "  ", "\t", "\n"]
_text = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


@settings(max_examples=400, deadline=None)
@given(refs=st.lists(_text, max_size=4), out=_text)
def test_score_equals_max_of_individual_functions(refs, out):
    pred = out.strip()
    expected = {name: max((fn(g, pred) for g in refs), default=0.0) for name, fn in METRICS.items()}
    assert score(refs, out) == expected
