"""Extractive fragments: worked examples, and the same walk as Newsroom's matching loop."""

from __future__ import annotations

import random

import pytest

from metric_services.summarization.fragments import fragment_lengths, fragment_stats, tokenize


def newsroom_match(summary: list[str], source: list[str]) -> list[int]:
    """Grusky et al.'s greedy matching as published (newsroom/analyze/fragments.py), scanning every position."""
    out, i = [], 0
    while i < len(summary):
        best, j = 0, 0
        while j < len(source):
            if summary[i] == source[j]:
                k = 0
                while i + k < len(summary) and j + k < len(source) and summary[i + k] == source[j + k]:
                    k += 1
                best = max(best, k)
                j += k
            else:
                j += 1
        if best:
            out.append(best)
        i += best or 1
    return out


def test_worked_example():
    # S = the cat sat . a dog ran                           (7 tokens)
    # A = the cat sat on the mat . the dog ran              (10 tokens)
    # i=0 "the": at A0 "the cat sat" (3), at A4 and A7 only "the" (1): fragment 3
    # i=3 ".": at A6, 1 ("a" != "the"): fragment 1;  i=4 "a": nowhere;  i=5 "dog": at A8 "dog ran": fragment 2
    # coverage (3+1+2)/7 = 6/7, density (9+1+4)/7 = 2, compression 10/7
    stats = fragment_stats("The cat sat. A dog ran", "The cat sat on the mat. The dog ran")
    assert fragment_lengths(tokenize("The cat sat. A dog ran"), tokenize("The cat sat on the mat. The dog ran")) == [
        3,
        1,
        2,
    ]
    assert (stats.coverage, stats.density, stats.compression) == pytest.approx((6 / 7, 2.0, 10 / 7))


def test_the_scan_resumes_after_a_match_as_newsroom_does():
    # S = a a b, A = a a a b: the match at A0 is "a a" (2); the scan resumes at A2 and finds "a" (1), so the
    # longer "a a b" at A1 is never tried. Then "b" matches: fragments [2, 1], not [3].
    assert fragment_lengths(list("aab"), list("aaab")) == [2, 1]
    stats = fragment_stats("a a b", "a a a b")
    assert (stats.coverage, stats.density, stats.compression) == pytest.approx((1.0, 5 / 3, 4 / 3))


def test_empty_summary_is_zero_everywhere():
    # |S| = 0 is every denominator: HELM scores 0.
    assert fragment_stats("", "A long source article.")[:3] == (0.0, 0.0, 0.0)
    assert fragment_stats("   ", "")[:3] == (0.0, 0.0, 0.0)


def test_summary_copied_whole_from_the_source():
    source = "The council voted 6-1 on Tuesday. Work starts in spring and lasts 40 months."
    # Copied whole: one fragment of all n tokens: coverage 1, density n, compression 1.
    whole = fragment_stats(source, source)
    n = len(tokenize(source))
    assert n == 18  # the council voted 6 - 1 on tuesday . work starts in spring and lasts 40 months .
    assert (whole.coverage, whole.density, whole.compression) == pytest.approx((1.0, n, 1.0))
    # Its first sentence alone (the council voted 6 - 1 on tuesday .): one fragment of 9 tokens:
    # coverage 1, density 9, compression 18/9.
    first = fragment_stats("The council voted 6-1 on Tuesday.", source)
    assert (first.coverage, first.density, first.compression) == pytest.approx((1.0, 9.0, 2.0))


def test_tokenization():
    assert tokenize("It's 3.5% of $1,000 (U.S.)!") == [
        "it", "'", "s", "3.5", "%", "of", "$", "1,000", "(", "u", ".", "s", ".", ")", "!",
    ]  # fmt: skip
    assert tokenize("東京タワー は 高い 😀👍") == ["東京タワー", "は", "高い", "😀", "👍"]


def test_non_english_and_emoji():
    source = "Der Stadtrat von München stimmte zu 😀. 東京タワー は 高い。Ελληνικά κείμενα."
    stats = fragment_stats("東京タワー は 高い 😀", source)
    # 東京タワー は 高い: one fragment of 3; 😀 on its own: 1; of 4 tokens
    assert stats.coverage == pytest.approx(1.0)
    assert stats.density == pytest.approx((9 + 1) / 4)


def test_same_walk_as_newsroom_on_random_sequences():
    rng = random.Random(11)
    for _ in range(3000):
        vocab = rng.randint(1, 6)
        summary = [str(rng.randint(0, vocab)) for _ in range(rng.randint(0, 30))]
        source = [str(rng.randint(0, vocab)) for _ in range(rng.randint(0, 80))]
        assert fragment_lengths(summary, source) == newsroom_match(summary, source)
