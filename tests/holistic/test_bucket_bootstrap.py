"""The bucket bootstrap of corpus-level values (holistic/compare/bootstrap.py): the merge of a draw, the
interval's coverage, and the gate's false-alarm rate and power on a corpus-level cell, simulated
(figures printed: pytest -s)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from holistic.compare import bootstrap as bucket_bootstrap
from holistic.compare.bootstrap import MIN_BUCKETS, merged, standard_errors
from holistic.compare.margin import margin_p
from holistic.compare.significance import LEVEL, Z95, welch_from_se
from holistic.stats.mergeable import Folded
from holistic.stats.names import key

REPS = 1000
NOMINAL_CEILING = LEVEL + 3 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)  # 0.0707
BUCKETS, PER_BUCKET = 30, 20  # a window of 30 busy minutes, 20 predictions each


def test_a_draw_merges_as_redis_does():
    a = Folded({"tp": 2.0, "lat|min": 0.5, "lat|max": 3.0, "lat|7": 1.0})
    b = Folded({"tp": 5.0, "lat|min": 0.2, "lat|max": 1.0, "fp": 1.0})
    assert dict(merged([a, b], [3, 0])) == {"tp": 6.0, "lat|min": 0.5, "lat|max": 3.0, "lat|7": 3.0}
    assert dict(merged([a, b], [1, 2])) == {"tp": 12.0, "lat|min": 0.2, "lat|max": 3.0, "lat|7": 1.0, "fp": 2.0}


def test_too_few_buckets_give_no_estimate():
    few = [Folded({"x": 1.0})] * (MIN_BUCKETS - 1) + [Folded()] * 50  # empty buckets do not count
    assert standard_errors(few, lambda f: {"x": f.num("x")}) == {}
    assert standard_errors([Folded({"x": float(i)}) for i in range(MIN_BUCKETS)], lambda f: {"x": f.num("x")})


def test_the_standard_error_of_a_mean_matches_the_textbook_one():
    """Buckets of one value each: the bootstrap of their mean, with its sqrt(k/(k-1)) correction, is the
    textbook standard error sd/sqrt(k), within the Monte Carlo error of 200 replicates (about 5 %)."""
    xs = [float(i % 7) for i in range(40)]
    se = standard_errors([Folded({"n": 1.0, "s": x}) for x in xs], lambda f: {"mean": f.num("s") / f.num("n")})
    textbook = float(np.std(xs, ddof=1)) / math.sqrt(len(xs))
    assert se["mean"] == pytest.approx(textbook, rel=0.15)
    again = standard_errors([Folded({"n": 1.0, "s": x}) for x in xs], lambda f: {"mean": f.num("s") / f.num("n")})
    assert again == se  # a fixed seed: the same stored data, the same answer


def f1(f: Folded) -> float:
    """Binary F1 from confusion counts, as a classification fold computes it."""
    tp, fp, fn = f.num("tp"), f.num("fp"), f.num("fn")
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def window(rng: np.random.Generator, positive: float, recall: float, false_positive: float) -> list[Folded]:
    """BUCKETS minutes of PER_BUCKET predictions: confusion counts of a classifier with that recall and
    false-positive rate on a class of that prevalence."""
    out = []
    for _ in range(BUCKETS):
        pos = rng.binomial(PER_BUCKET, positive)
        tp = rng.binomial(pos, recall)
        fp = rng.binomial(PER_BUCKET - pos, false_positive)
        out.append(Folded({"tp": float(tp), "fn": float(pos - tp), "fp": float(fp)}))
    return out


def f1_cells(f: Folded) -> dict[str, float]:
    return {"f1": f1(f)}


def test_the_f1_interval_covers_the_true_value(monkeypatch):
    """500 windows: value ± 1.96·se covers the population's F1 (0.4·0.8 true positives against 0.4·0.2
    misses and 0.6·0.1 false alarms: 0.64 / 0.78 = 0.8205) at about its 95 %."""
    monkeypatch.setattr(bucket_bootstrap, "REPLICATES", 200)
    truth = 2 * 0.32 / (2 * 0.32 + 0.08 + 0.06)
    rng = np.random.default_rng(1)
    reps, covered = 500, 0
    for _ in range(reps):
        buckets = window(rng, 0.4, 0.8, 0.1)
        value = f1(merged(buckets, [1] * len(buckets)))
        se = standard_errors(buckets, f1_cells)["f1"]
        covered += value - Z95 * se <= truth <= value + Z95 * se
    rate = covered / reps
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)  # 0.921
    print(f"F1 by bucket bootstrap: the 95% interval covered the true F1 in {rate:.1%} of {reps} windows")
    assert floor <= rate <= 0.99


def gate_rate(after_recall: float, seed: int) -> float:
    """Share of REPS pairs of windows where the F1 cell is significantly worse (5 %, one cell)."""
    rng = np.random.default_rng(seed)
    alarms = 0
    for _ in range(REPS):
        before, after = window(rng, 0.4, 0.8, 0.1), window(rng, 0.4, after_recall, 0.1)
        fb, fa = f1(merged(before, [1] * BUCKETS)), f1(merged(after, [1] * BUCKETS))
        t = welch_from_se(fb, fa, standard_errors(before, f1_cells, 100)["f1"],
                          standard_errors(after, f1_cells, 100)["f1"])  # fmt: skip
        alarms += t is not None and (margin_p(t, +1, 0.0) or 1.0) < LEVEL
    return alarms / REPS


def test_the_f1_gate_on_equal_versions_stays_within_its_level():
    rate = gate_rate(0.8, seed=2)
    print(f"F1, equal versions: the gate failed {rate:.1%} of {REPS} pairs (ceiling {NOMINAL_CEILING:.1%})")
    assert rate <= NOMINAL_CEILING


def test_the_f1_gate_detects_a_known_drop():
    rate = gate_rate(0.7, seed=3)  # recall 0.8 -> 0.7: F1 0.8205 -> 0.7568, on 600 predictions a window
    print(f"F1 0.82 -> 0.76 (recall 0.8 -> 0.7), 600 predictions a window: the gate failed {rate:.1%} (power)")
    assert rate >= 0.5


BINS = 5


def ece(f: Folded) -> float:
    """Expected calibration error over BINS equal-width confidence bins: sum over bins of n_b / N times
    |accuracy_b - mean confidence_b|, from each bin's count, sum of confidences and sum of correct."""
    total = sum(f.num(f"b{b}", "n") for b in range(BINS))
    err = 0.0
    for b in range(BINS):
        n = f.num(f"b{b}", "n")
        if n:
            err += abs(f.num(f"b{b}", "correct") - f.num(f"b{b}", "conf")) / total
    return err


def calibration_window(rng: np.random.Generator, overconfidence: float) -> list[Folded]:
    """BUCKETS minutes of PER_BUCKET predictions with confidence c ~ U(0.5, 1), right with probability
    c - overconfidence: each bucket's per-bin count, sum of confidences and count right."""
    out = []
    for _ in range(BUCKETS):
        conf = rng.uniform(0.5, 1.0, PER_BUCKET)
        right = rng.random(PER_BUCKET) < conf - overconfidence
        fields: dict[str, float] = {}
        for b, c, r in zip(np.minimum((conf * BINS).astype(int), BINS - 1), conf, right, strict=True):
            for name, v in (("n", 1.0), ("conf", float(c)), ("correct", float(r))):
                fields[key(f"b{b}", name)] = fields.get(key(f"b{b}", name), 0.0) + v
        out.append(Folded(fields))
    return out


def ece_cells(f: Folded) -> dict[str, float]:
    return {"ece": ece(f)}


def ece_gate_rate(after_overconfidence: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    alarms = 0
    for _ in range(REPS):
        before, after = calibration_window(rng, 0.1), calibration_window(rng, after_overconfidence)
        eb, ea = ece(merged(before, [1] * BUCKETS)), ece(merged(after, [1] * BUCKETS))
        t = welch_from_se(eb, ea, standard_errors(before, ece_cells, 100)["ece"],
                          standard_errors(after, ece_cells, 100)["ece"])  # fmt: skip
        alarms += t is not None and (margin_p(t, -1, 0.0) or 1.0) < LEVEL  # ECE: lower is better
    return alarms / REPS


def test_the_ece_gate_on_equal_versions_stays_within_its_level():
    rate = ece_gate_rate(0.1, seed=4)
    print(f"ECE, equal versions: the gate failed {rate:.1%} of {REPS} pairs (ceiling {NOMINAL_CEILING:.1%})")
    assert rate <= NOMINAL_CEILING


def test_the_ece_gate_detects_a_known_shift():
    rate = ece_gate_rate(0.15, seed=5)  # overconfident by 0.10 -> 0.15
    print(f"ECE 0.10 -> 0.15 (overconfidence), 600 predictions a window: the gate failed {rate:.1%} (power)")
    assert rate >= 0.3
