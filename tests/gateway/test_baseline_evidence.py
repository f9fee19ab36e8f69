"""Anytime-valid evidence against a pinned baseline (gateway/baseline_evidence.py): the minimum by hand,
the false-alarm rate over equal pairs watched at every batch, and the delay to catch a drop, simulated
(pytest -s prints the figures)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import numpy as np
import pytest

from gateway import sequential
from gateway.baseline_evidence import THRESHOLD, baseline_lower, evidence, log_evidence_below

PAIRS = 1000
BATCH, BATCHES = 50, 100  # evidence read after every batch, 5,000 current predictions a pair
SLACK = 3 * math.sqrt(0.05 * 0.95 / PAIRS)  # 3 binomial standard deviations of the simulation's own noise


def test_log_evidence_is_the_floors_evidence_and_stays_finite_where_it_would_overflow():
    for n, mean, level in [(400, 0.6, 0.7), (10, 0.7, 0.9), (5000, 0.71, 0.7), (50, 0.2, 0.9)]:
        assert log_evidence_below(n, mean, level) == pytest.approx(math.log(sequential.evidence(n, mean, level)))
    # z = 1e6 · 0.9 / sqrt(250,125) ≈ 1799.6: log E = log 2 + ½ log(ρ/spread) − log(z √(2π)) + O(1/z²)
    spread = 0.25 * 10**6 + 125
    z = 0.9 * 10**6 / math.sqrt(spread)
    by_hand = math.log(2) + 0.5 * math.log(125 / spread) - math.log(z * math.sqrt(2 * math.pi))
    assert log_evidence_below(10**6, 1.0, 0.1) == pytest.approx(by_hand, abs=1e-6)


def test_the_evidence_is_the_currents_against_the_baselines_lower_bound_halved():
    # the baseline's lower bound L_b: where its own evidence against "μ_b ≤ m" falls to 2/α = 40
    for n_b, mean_b in [(400, 0.7), (5000, 0.7), (300, 0.65)]:
        low = baseline_lower(n_b, mean_b)
        assert sequential.evidence(n_b, 1 - mean_b, 1 - low) == pytest.approx(40, rel=1e-9)
        assert 0 < low < mean_b
    assert baseline_lower(0, 0.7) == 0.0 and baseline_lower(5, 0.7) == 0.0  # too few to exclude anything
    low = baseline_lower(5000, 0.7)
    assert 0.67 < low < 0.69  # about 0.7 − 0.021
    assert evidence(400, 0.6, 5000, 0.7) == pytest.approx(sequential.evidence(400, 0.6, low) / 2, rel=1e-12)
    # a baseline known ever better approaches the floor's evidence against 0.7 (52 at n = 400), halved
    values = [evidence(400, 0.6, n_b, 0.7) for n_b in (400, 5000, 10**5, 10**7)]
    assert values == sorted(values) and values[-1] == pytest.approx(sequential.evidence(400, 0.6, 0.7) / 2, rel=0.1)
    assert evidence(400, 0.7, 5000, 0.7) < 1 and evidence(0, 0.5, 100, 0.5) == 0.5 and evidence(400, 0.6, 0, 0.7) < 1
    assert math.isfinite(evidence(10**6, 0.0, 10**6, 1.0)) and evidence(10**6, 0.0, 10**6, 1.0) > 1e300


def pair_evidence(n_c: int, hits_c: int, n_b: int, hits_b: int) -> float:
    return evidence(n_c, hits_c / n_c, n_b, hits_b / n_b)


Read = Callable[[int, int, int, int], float]


def first_alarm(
    cur_hits: np.ndarray, base_n: np.ndarray, base_hits: np.ndarray, read: Read = pair_evidence
) -> int | None:
    """Predictions of the current model when the evidence first reached the threshold (None: never).
    `read(n_c, hits_c, n_b, hits_b)`: the evidence of the pair at that moment."""
    for k in range(BATCHES):
        n_c, n_b = BATCH * (k + 1), int(base_n[k])
        # E_c is increasing in the level and L_b ≤ the baseline's mean: below the threshold there, no search
        quick = log_evidence_below(n_c, cur_hits[k] / n_c, base_hits[k] / n_b) - math.log(2) >= math.log(THRESHOLD)
        if quick and read(n_c, int(cur_hits[k]), n_b, int(base_hits[k])) >= THRESHOLD:
            return n_c
    return None


def watch(
    p_current: float, p_baseline: float, frozen: int | None, seed: int, read: Read = pair_evidence
) -> list[int | None]:
    """Per pair, the first alarm. `frozen`: the baseline's all-time count, fixed (a retired version); None:
    the baseline still gets a batch for each of the current's (two versions served side by side)."""
    rng = np.random.default_rng(seed)
    cur = rng.binomial(BATCH, p_current, size=(PAIRS, BATCHES)).cumsum(axis=1)
    if frozen is None:
        base_n = np.arange(1, BATCHES + 1) * BATCH
        base = rng.binomial(BATCH, p_baseline, size=(PAIRS, BATCHES)).cumsum(axis=1)
    else:
        base_n = np.full(BATCHES, frozen)
        base = np.repeat(rng.binomial(frozen, p_baseline, size=(PAIRS, 1)), BATCHES, axis=1)
    return [first_alarm(cur[i], base_n, base[i], read) for i in range(PAIRS)]


def test_taking_the_baselines_observed_mean_for_the_truth_would_alarm_far_too_often():
    """What the baseline's confidence sequence is for: the floor test against a 200-score baseline's mean."""
    rng = np.random.default_rng(30)
    cur = rng.binomial(BATCH, 0.7, size=(PAIRS, BATCHES)).cumsum(axis=1)
    base = rng.binomial(200, 0.7, size=PAIRS) / 200
    naive = theirs = 0
    for i in range(PAIRS):
        n = BATCH * np.arange(1, BATCHES + 1)
        naive += any(sequential.evidence(n[k], cur[i, k] / n[k], base[i]) >= THRESHOLD for k in range(BATCHES))
        theirs += first_alarm(cur[i], np.full(BATCHES, 200), np.full(BATCHES, base[i] * 200)) is not None
    print(f"equal pairs, baseline of 200: naive {naive / PAIRS:.1%} alarmed, this test {theirs / PAIRS:.1%}")
    assert naive / PAIRS > 0.2 and theirs / PAIRS <= 0.05 + SLACK


@pytest.mark.parametrize("frozen", [2000, None], ids=["frozen-baseline", "growing-baseline"])
def test_equal_pairs_watched_at_every_batch_rarely_alarm(frozen):
    alarms = sum(c is not None for c in watch(0.7, 0.7, frozen, seed=31)) / PAIRS
    print(f"equal pairs (0.7), baseline {frozen or 'growing'}: {alarms:.1%} of {PAIRS} alarmed (bound 5 %)")
    assert alarms <= 0.05 + SLACK  # Ville


def test_a_current_just_above_its_baseline_never_alarms_more():
    alarms = sum(c is not None for c in watch(0.72, 0.7, 2000, seed=32)) / PAIRS
    print(f"current 0.72 against a baseline of 0.7: {alarms:.1%} alarmed")
    assert alarms <= 0.05 + SLACK


@pytest.mark.parametrize(
    ("frozen", "fastest", "slowest"), [(5000, 350, 900), (None, 400, 1500)], ids=["frozen-baseline", "growing-baseline"]
)
def test_a_drop_is_caught_and_the_delay_reported(frozen, fastest, slowest):
    caught = watch(0.6, 0.7, frozen, seed=33)
    found = [c for c in caught if c is not None]
    delay = statistics.median(found)
    print(f"0.6 against a baseline of 0.7 ({frozen or 'growing'}): {len(found)} of {PAIRS} caught, median {delay:g}")
    assert len(found) == PAIRS and fastest <= delay <= slowest  # the floor test, knowing 0.7 exactly: 350
