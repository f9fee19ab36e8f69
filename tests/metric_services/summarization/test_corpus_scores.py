"""sacrebleu BLEU and chrF from merged sufficient statistics: hand-worked, and equal to sacrebleu."""

from __future__ import annotations

import math
import random

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF

from holistic.stats.intervals import Z95
from metric_services.summarization import corpus_scores
from tests.metric_services.summarization.support import cases


def summed(hyps, refs, cuts):
    """Statistics extracted batch by batch (split at cuts) and added up, as Redis adds them."""
    bleu = [0] * corpus_scores.BLEU_WIDTH
    chrf = [0] * corpus_scores.CHRF_WIDTH
    for a, b in zip([0, *cuts], [*cuts, len(hyps)], strict=True):
        if a == b:
            continue
        bs, cs = corpus_scores.segment_statistics(hyps[a:b], refs[a:b])
        for row in bs:
            bleu = [x + y for x, y in zip(bleu, row, strict=True)]
        for row in cs:
            chrf = [x + y for x, y in zip(chrf, row, strict=True)]
    return bleu, chrf


def test_bleu_hand_worked():
    # Segment 1: hyp "a b c d e", ref "a b c d f": matches 4/5, 3/4, 2/3, 1/2; lengths 5 and 5.
    #   BLEU = 100 * (4/5 * 3/4 * 2/3 * 1/2) ** (1/4) = 100 * 0.2 ** 0.25 = 66.874
    bleu, _ = summed(["a b c d e"], [["a b c d f"]], [])
    assert bleu == [5, 5, 4, 3, 2, 1, 5, 4, 3, 2]
    assert corpus_scores.bleu_from_stats(bleu) == pytest.approx(100 * 0.2**0.25)
    # Add segment 2, hyp "x y", ref "x y z w" (in its own batch): matches 2/2, 1/1, 0/0, 0/0; lengths 2 and 4.
    # Corpus: correct [6, 4, 2, 1], total [7, 5, 3, 2], hyp length 7 < ref length 9: BP = exp(1 - 9/7).
    #   BLEU = 100 * exp(-2/7) * (6/7 * 4/5 * 2/3 * 1/2) ** (1/4) = 100 * exp(-2/7) * (8/35) ** 0.25
    bleu, _ = summed(["a b c d e", "x y"], [["a b c d f"], ["x y z w"]], [1])
    assert bleu == [7, 9, 6, 4, 2, 1, 7, 5, 3, 2]
    expected = 100 * math.exp(-2 / 7) * (8 / 35) ** 0.25
    assert corpus_scores.bleu_from_stats(bleu) == pytest.approx(expected)
    assert expected == pytest.approx(sacrebleu.corpus_bleu(["a b c d e", "x y"], [["a b c d f", "x y z w"]]).score)


def test_chrf_hand_worked():
    # hyp "abc", ref "abd" (character n-grams, whitespace dropped):
    #   n=1: {a,b,c} vs {a,b,d}: 2 of 3 each;  n=2: {ab,bc} vs {ab,bd}: 1 of 2;  n=3: {abc} vs {abd}: 0 of 1;
    #   n=4..6: no n-grams on either side, so they leave the average (effective order 3).
    #   P = R = (2/3 + 1/2 + 0) / 3 = 7/18, and F_beta = P when P = R: chrF = 100 * 7/18 = 38.89
    _, chrf = summed(["abc"], [["abd"]], [])
    assert chrf[:9] == [3, 3, 2, 2, 2, 1, 1, 1, 0] and chrf[9:] == [0] * 9
    assert corpus_scores.chrf_from_stats(chrf) == pytest.approx(100 * 7 / 18)
    assert corpus_scores.chrf_from_stats(chrf) == pytest.approx(sacrebleu.corpus_chrf(["abc"], [["abd"]]).score)


def test_equal_to_sacrebleu_on_the_whole_window_whatever_the_batching():
    pairs = cases(42, 300)
    hyps = [pred for _, pred in pairs]
    refs = [[r for r in rs if r] or ["fallback reference"] for rs, _ in pairs]  # 1-3 non-empty references
    # sacrebleu's way to give a variable number of references: equal-length streams padded with None.
    width = max(len(r) for r in refs)
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(width)]
    bleu_ref = BLEU()
    chrf_ref = CHRF()
    expected_bleu = bleu_ref.corpus_score(hyps, streams).score
    expected_chrf = chrf_ref.corpus_score(hyps, streams).score
    rng = random.Random(5)
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(hyps)), k=rng.randint(0, 12)))
        bleu, chrf = summed(hyps, refs, cuts)
        assert corpus_scores.bleu_from_stats(bleu) == expected_bleu
        assert corpus_scores.chrf_from_stats(chrf) == expected_chrf
    assert 0 < expected_bleu < 100 and 0 < expected_chrf < 100
    # The signatures are sacrebleu's own, with nrefs:var for a varying number of references.
    bleu_sig, chrf_sig = corpus_scores.signatures(len(r) for r in refs)
    assert bleu_sig == bleu_ref.get_signature().format() and "nrefs:var" in bleu_sig
    assert chrf_sig == chrf_ref.get_signature().format()
    assert (
        corpus_scores.signatures([1, 1])[0]
        == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    )
    # the versions the workers recorded win over the folding process's own
    assert corpus_scores.signatures([2], ["2.4.0", "2.6.0"])[1] == (
        "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.0+2.6.0"
    )


def test_segment_statistics_equal_sacrebleus_own_extraction():
    """Our faster counting gives sacrebleu's `_extract_corpus_statistics`, segment by segment."""
    segments = [(pred, [r for r in refs if r] or ["fallback"]) for refs, pred in cases(7, 300)]
    segments += [
        ("東京タワー", ["東京" * 50 + "".join(chr(0x4E00 + i) for i in range(1500))]),  # > 1,024 characters
        ("a lone \ud800 surrogate", ["a lone surrogate", ""]),  # an empty reference among others
        ("", ["x"]),
        ("x", [""]),
    ]
    expected_chrf = []
    for hyp, refs in segments:
        streams = [[r] for r in refs]
        assert corpus_scores.bleu_segment(hyp, refs) == BLEU()._extract_corpus_statistics([hyp], streams)[0]
        expected_chrf.append(CHRF()._extract_corpus_statistics([hyp], streams)[0])
        assert corpus_scores.chrf_segment(hyp, refs) == expected_chrf[-1]
    # the whole list counted together (the alphabet too large to pack: segment by segment), and without
    # the segment whose alphabet is too large (one pass over every segment's n-grams)
    hyps, refs = [h for h, _ in segments], [r for _, r in segments]
    assert corpus_scores.chrf_segments(hyps, refs) == expected_chrf
    assert corpus_scores.chrf_segments(hyps[:300] + hyps[301:], refs[:300] + refs[301:]) == (
        expected_chrf[:300] + expected_chrf[301:]
    )


@pytest.mark.parametrize(("distinct", "segments"), [(2, 40), (256, 40), (300, 2), (300, 40), (700, 5)])
def test_chrf_segments_in_one_pass_equal_sacrebleu_whatever_the_alphabet(distinct, segments):
    """Characters, orders and pairs share one 63-bit key: 256 characters (8 bits a character, 48 for six)
    leave room for 2,048 pairs; 300 (9 bits) for 32, so 2 segments go in one pass and 40 (~80 pairs) one
    by one; 700 (10 bits) never pack. Every way gives sacrebleu's counts, the first best reference kept."""
    rng = random.Random(distinct * 100 + segments)
    alphabet = [chr(0x100 + i) for i in range(distinct)]
    hyps, refs = [], []
    for i in range(segments):
        hyps.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))))
        refs.append(["".join(rng.choice(alphabet[:8]) for _ in range(rng.randint(0, 12))) for _ in range(1 + i % 3)])
    hyps[0] = "".join(alphabet)  # the whole alphabet in the batch
    refs[1] = [refs[1][0], refs[1][0]]  # two equal references: the first one is kept
    expected = [CHRF()._extract_corpus_statistics([h], [[r] for r in rs])[0] for h, rs in zip(hyps, refs, strict=True)]
    assert corpus_scores.chrf_segments(hyps, refs) == expected


def test_non_english_and_emoji():
    hyps = ["Der Stadtrat stimmte zu 😀", "東京タワーは高い", ""]
    refs = [["Der Rat stimmte gestern zu"], ["東京タワーはとても高い", "高い塔"], ["👍"]]
    bleu, chrf = summed(hyps, refs, [1])
    width = 2
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(width)]
    assert corpus_scores.bleu_from_stats(bleu) == sacrebleu.corpus_bleu(hyps, streams).score
    assert corpus_scores.chrf_from_stats(chrf) == sacrebleu.corpus_chrf(hyps, streams).score


def test_jackknife_hand_worked():
    # score = the first statistic's sum. Groups hold 1, 2, 3: value 6; leaving one out gives 5, 4, 3 (mean 4);
    # variance (G-1)/G * sum of squared deviations = 2/3 * (1 + 0 + 1) = 4/3; interval 6 -/+ 1.96 * sqrt(4/3).
    value, lo, hi = corpus_scores.jackknife({0: [1.0], 5: [2.0], 9: [3.0]}, lambda s: s[0], (0.0, 100.0))
    half = Z95 * math.sqrt(4 / 3)
    assert (value, lo, hi) == pytest.approx((6.0, 6.0 - half, 6.0 + half))
    # One group: no interval. Bounds clip.
    assert corpus_scores.jackknife({3: [1.0]}, lambda s: s[0], (0.0, 100.0))[1] == -math.inf
    assert corpus_scores.jackknife({0: [1.0], 1: [9.0]}, lambda s: s[0], (0.0, 11.0))[2] == 11.0


def test_groups_depend_only_on_the_prediction_id():
    assert corpus_scores.group_of("news-000017") == corpus_scores.group_of("news-000017")
    assert {corpus_scores.group_of(f"p{i}") for i in range(500)} == set(range(corpus_scores.GROUPS))
