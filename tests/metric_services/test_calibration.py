"""Calibration: hand-worked values, HELM's own library (uncertainty-calibration) and scikit-learn."""

from __future__ import annotations

import itertools
import random
import time
import warnings
from collections import Counter

import calibration.utils as helm_cal  # uncertainty-calibration 0.1.4, what crfm-helm calls
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from holistic.families import one_pass
from holistic.families.registry import load_family
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from metric_services import calibration as fam
from metric_services.calibration.metrics import (
    Points,
    ece_equal_mass,
    ece_equal_width,
    platt_fit,
    selective,
)
from tests.factories import prediction

FAMILY = load_family("calibration")


def points(p: list[float], y: list[int]) -> Points:
    return Points.exact(dict(Counter(p)), dict(Counter(v for v, c in zip(p, y, strict=True) if c)))


def metrics_of(preds: list[pb.Prediction], settings) -> dict[str, float]:
    env = BatchEnvelope(model="m", predictions=preds)
    env.accept_time.FromSeconds(int(time.time()))
    fold = FAMILY.fold(Folded.from_stats(one_pass(FAMILY, env, settings)), "m", settings)
    return {m.name: m.value for part in fold.scenarios.values() for m in part.metrics}


def test_four_predictions_by_hand(settings):
    # p = 0.9 0.8 0.7 0.6, y = 1 1 0 1. n < 10: four equal-mass bins of one point each:
    # ECE = (0.1 + 0.2 + 0.7 + 0.4) / 4 = 0.35; ece_1_bin = |0.75 - 0.75| = 0;
    # Brier = (0.01 + 0.04 + 0.49 + 0.16) / 4 = 0.175; selective accuracies by confidence 1, 1, 2/3, 3/4:
    # area = 3.41667 / 4 = 0.854167; acc@10 at index int(0.4) = 0: 1.
    preds = [prediction(f"p{i}", output="Paris" if y else "Rome", confidence=c)
             for i, (c, y) in enumerate([(0.9, 1), (0.8, 1), (0.7, 0), (0.6, 1)])]  # fmt: skip
    m = metrics_of(preds, settings)
    assert m["ece_10_bin"] == pytest.approx(0.35)
    assert m["ece_1_bin"] == pytest.approx(0.0)
    assert m["ece_equal_width_10_bin"] == pytest.approx(0.35)  # 0.6, 0.7, 0.8, 0.9 in four width bins
    assert m["brier_score"] == pytest.approx(0.175)
    assert m["selective_cov_acc_area"] == pytest.approx(3.4166666666666665 / 4)
    assert m["selective_acc@10"] == 1.0
    assert m["ece_10_bin_error_bound"] == 0.0
    assert m["max_prob"] == pytest.approx(0.75)


def test_ties_merge_bins_and_spread_selective_accuracy(settings):
    # four predictions at 0.5, one right: every chunk edge is 0.5, deduplicated -> one bin holding all:
    # ECE = |2 - 1| / 4 = 0.25. Over every order of the ties each position is right with chance 1/4.
    p, y = [0.5] * 4, [1, 0, 0, 0]
    assert ece_equal_mass(points(p, y)).ece == pytest.approx(0.25) == helm_cal.get_ece_em(np.array(p), np.array(y))
    sel = selective(points(p, y))
    orders = [helm_cal.get_selective_stats(np.array(p), np.array(perm)) for perm in set(itertools.permutations(y))]
    assert sel.area == pytest.approx(np.mean([a for a, _ in orders])) == pytest.approx(0.25)
    assert sel.acc_at_10 == pytest.approx(np.mean([b for _, b in orders]))


def test_choice_probabilities_give_the_confidence_and_perturbed_rows_are_skipped(settings):
    p = prediction("a", output="Paris", references=["Paris"])
    for choice, prob in (("Paris", 0.7), ("Rome", 0.3)):
        p.choice_probabilities.add(choice=choice, probability=prob)
    assert fam.confidence_of(p) == 0.7
    q = prediction("b", output="Oslo", references=["Paris"])  # not a choice: the top choice's probability
    q.choice_probabilities.add(choice="Paris", probability=0.6)
    q.choice_probabilities.add(choice="Rome", probability=0.4)
    assert fam.confidence_of(q) == 0.6
    v = prediction("a~typos", output="Paris", confidence=0.2)
    v.perturbation.name, v.perturbation.original_id = "typos", "a"
    env = BatchEnvelope(model="m", predictions=[p, q, v])
    fold = FAMILY.fold(Folded.from_stats(one_pass(FAMILY, env, settings)), "m", settings)
    assert fold.report.count == 3 and fold.report.skipped == 1 and "perturbed" in fold.report.skipped_reason
    # ECE over (0.7, right) and (0.6, wrong): two bins: (0.3 + 0.6) / 2 = 0.45
    assert fold.dimensions[0].score == pytest.approx(1 - 0.45)
    assert fold.dimensions[0].low_confidence  # 2 < 300 samples: shown, and marked


def test_all_correct_has_no_platt_fit_and_zero_recalibrated_ece(settings):
    m = metrics_of([prediction(f"p{i}", confidence=0.1 * i) for i in range(1, 6)], settings)
    assert "platt_coef" not in m and m["platt_ece_10_bin"] == 0.0 and m["platt_ece_1_bin"] == 0.0
    # every answer right: ECE = mean(1 - p) = 1 - 0.3 = 0.7 (five bins of one)
    assert m["ece_10_bin"] == pytest.approx(0.7)


@pytest.mark.parametrize("seed", range(40))
def test_same_numbers_as_helms_library(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    p = rng.random(n).round(int(rng.integers(1, 5))) if seed % 2 else rng.random(n)  # ties, then none
    y = (rng.random(n) < p**1.5).astype(int)
    pts = points(p.tolist(), y.tolist())
    assert ece_equal_mass(pts).ece == pytest.approx(helm_cal.get_ece_em(p, y, num_bins=10), abs=1e-12)
    assert ece_equal_width(pts) == pytest.approx(helm_cal.get_ece(p, y, num_bins=10), abs=1e-12)
    if len(set(p.tolist())) == n:  # no ties: HELM's order is defined
        area, acc = helm_cal.get_selective_stats(p, y)
        sel = selective(pts)
        assert (sel.area, sel.acc_at_10) == pytest.approx((area, acc), abs=1e-12)


def test_platt_scaling_matches_scikit_learn():
    rng = np.random.default_rng(7)
    p = rng.random(2000)
    y = (rng.random(2000) < p**2).astype(int)
    coef, intercept = platt_fit(points(p.tolist(), y.tolist()))
    x = np.log(np.clip(p, 1e-12, 1 - 1e-12) / (1 - np.clip(p, 1e-12, 1 - 1e-12))).reshape(-1, 1)
    lr = LogisticRegression(C=1e10).fit(x, y)  # HELM's call
    assert coef == pytest.approx(lr.coef_[0][0], rel=2e-3)
    assert intercept == pytest.approx(lr.intercept_[0], rel=2e-3)
    assert coef > 1  # y ~ p^2: the model is overconfident, Platt sharpens its logit


def test_platt_on_separable_data_raises_no_overflow_warning():
    # 0.49 wrong, 0.51 right and one 1e-12 wrong: separable, so the (barely regularised) slope grows
    # past exp's range at x = logit(1e-12) = -27.6; the fit still ends, ordering the points, silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        coef, intercept = platt_fit(points([1e-12, 0.49, 0.51], [0, 0, 1]))
    assert coef > 100
    assert intercept == pytest.approx(0.0, abs=1e-6)  # symmetric about 0.5


def test_past_the_exact_cap_the_grid_stays_within_its_bound(settings):
    rng = random.Random(3)
    n = fam.EXACT_CAP + 500
    confidences = [rng.betavariate(8, 2) for _ in range(n)]  # crowded near 0.8: many per grid cell
    labels = [int(rng.random() < c**3) for c in confidences]
    preds = [prediction(f"p{i}", output="Paris" if y else "Rome", confidence=c)
             for i, (c, y) in enumerate(zip(confidences, labels, strict=True))]  # fmt: skip
    env = BatchEnvelope(model="m", predictions=preds)
    stats = Folded.from_stats(one_pass(FAMILY, env, settings))
    assert stats["mmlu|xn|over"] == 1.0
    fold = FAMILY.fold(stats, "m", settings)
    m = {x.name: x.value for x in fold.scenarios["mmlu"].metrics}
    exact = helm_cal.get_ece_em(np.array(confidences), np.array(labels), num_bins=10)
    assert abs(m["ece_10_bin"] - exact) <= m["ece_10_bin_error_bound"] < 0.05
    assert m["ece_equal_width_10_bin"] == pytest.approx(
        helm_cal.get_ece(np.array(confidences), np.array(labels), num_bins=10)
    )
    area, acc = helm_cal.get_selective_stats(np.array(confidences), np.array(labels))
    assert abs(m["selective_cov_acc_area"] - area) <= m["selective_cov_acc_area_error_bound"]
    assert abs(m["selective_acc@10"] - acc) <= m["selective_acc@10_error_bound"] + 1e-12
    assert not fold.report.reliability_curves[0].exact


def test_the_cap_turns_over_in_redis_too(gateway, make_worker, r):
    worker = make_worker("calibration")
    preds = [prediction(f"p{i}", confidence=(i + 0.5) / (fam.EXACT_CAP + 10)) for i in range(fam.EXACT_CAP + 10)]
    with gateway.client() as client:
        for b in range(0, len(preds), 500):
            client.submit(preds[b : b + 500], batch_id=f"b{b}", model="m")
        while worker.step(block_ms=1):
            pass
        report = next(f for f in client.get_profile("m").families if f.family == "calibration")
    assert not report.reliability_curves[0].exact and report.count == len(preds)
    # all correct and p = (i + 0.5) / N: ECE = 1 - mean p = 1 - 0.5 * (N) / (N + 10) ... from the grid, bounded
    n = fam.EXACT_CAP + 10
    exact = 1 - sum((i + 0.5) / n for i in range(n)) / n
    m = {x.name: x.value for x in report.metrics}
    assert abs(m["ece_10_bin"] - exact) <= m["ece_10_bin_error_bound"] + 1e-12


def test_references_win_setting_sets_the_label(make_settings):
    # Both judged wrong by the client, both exact matches of their reference "Paris":
    # default y = 0 0 -> accuracy 0, ECE |0.85 - 0| ... ; with references winning y = 1 1.
    preds = [
        prediction("a", output="Paris", confidence=0.9, correct=False),
        prediction("b", output="Paris", confidence=0.8, correct=False),
        prediction("c", output="Rome", confidence=0.7, references=[], correct=True),  # no refs: its judgement
    ]
    client = metrics_of(preds, make_settings())
    helm = metrics_of(preds, make_settings(references_win=True))
    # ece_1_bin = |mean p - accuracy|: mean p = 0.8; accuracy 1/3 by the client, 1 by the references.
    assert client["ece_1_bin"] == pytest.approx(abs(0.8 - 1 / 3), abs=1e-12)
    assert helm["ece_1_bin"] == pytest.approx(0.2, abs=1e-12)
    assert FAMILY.signature("m", make_settings(references_win=True)).options["label"] == "exact_match|correct"
