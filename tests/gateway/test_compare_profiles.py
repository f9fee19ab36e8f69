"""CompareProfiles: a window against the one before, or one model against another; each cell tested by
what is stored for it, the p-values adjusted, and a decision that says "not enough data" rather than
passing."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from statistics import NormalDist
from typing import Any

import grpc
import pytest
from scipy.stats import binomtest

from holistic.compare.significance import BOOTSTRAP, HOLM, MCNEMAR_EXACT, WELCH, benjamini_hochberg, holm
from holistic.families import Family, FamilyFold
from holistic.families.registry import load_family
from holistic.stats import segments
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp
from holistic_client.client import Client
from tests.conftest import drain
from tests.factories import classified, prediction
from tests.gateway.test_request_bounds import violations


def cells(response: es.CompareProfilesResponse) -> dict[str, es.CellComparison]:
    return {c.name: c for c in response.cells}


def test_a_window_against_the_one_before(client, make_worker):
    now = time.time()
    before = [prediction(f"b{i}", model="m", produced_at_s=now - 80 * 60) for i in range(40)]
    after = [prediction(f"a{i}", model="m", produced_at_s=now, output="Paris" if i % 2 else "Rome") for i in range(40)]
    client.submit(before + after, model="m")
    drain(make_worker("accuracy"))

    r = client.compare_profiles("m", window="1h", fail_on=["accuracy"])
    assert (r.before.counts.window_predictions, r.after.counts.window_predictions) == (40, 40)
    acc = cells(r)["accuracy"]
    # 40/40 before, 20/40 now (comparison.py's rule on the profile's intervals, as `holistic compare`)
    assert (acc.before, acc.after, acc.difference, acc.test) == (1.0, 0.5, -0.5, WELCH)
    assert acc.lower < -0.5 < acc.upper < 0 and acc.p < acc.p_adjusted < 0.05
    assert acc.verdict == es.VERDICT_WORSE and acc.kind == "dimension" and acc.after_count == 40
    assert (r.decision, list(r.worse), r.multiplicity, r.level) == (es.DECISION_WORSE, ["accuracy"], HOLM, 0.05)
    assert r.summary.startswith("worse: accuracy got significantly worse beyond the margin 0")
    tested = [c for c in r.cells if c.HasField("p")]
    assert [c.p_adjusted for c in tested] == pytest.approx(holm([c.p for c in tested]))  # over every cell tested

    # the margin test: one-sided p of "worse by at most the margin", adjusted over the judged cells only
    assert acc.p_margin == acc.p_margin_adjusted < 1e-9  # margin 0: one-sided, half the two-sided p here
    assert acc.p_margin == pytest.approx(acc.p / 2)
    assert not [c.name for c in r.cells if c.HasField("p_margin_adjusted") and c.name != "accuracy"]
    # se = (upper - d) / 1.96 = 0.08313; margin 0.3: z = -0.2 / 0.08313 = -2.41, p 0.0081: worse beyond it
    beyond = client.compare_profiles("m", window="1h", fail_on=["accuracy"], margin=0.3)
    assert cells(beyond)["accuracy"].p_margin == pytest.approx(0.00806, abs=5e-5)
    assert (beyond.decision, list(beyond.worse)) == (es.DECISION_WORSE, ["accuracy"])
    # margin 0.4: worse by 0.5 as a point estimate, but z = -0.1 / 0.08313 = -1.20, p 0.11: not significantly
    # beyond 0.4, so it passes; margin 0.6: the worsening does not even reach it
    within = client.compare_profiles("m", window="1h", fail_on=["accuracy"], margin=0.4)
    assert cells(within)["accuracy"].p_margin == pytest.approx(0.1145, abs=5e-4)
    assert within.decision == es.DECISION_PASS and cells(within)["accuracy"].verdict == es.VERDICT_WORSE
    assert client.compare_profiles("m", window="1h", fail_on=["accuracy"], margin=0.6).decision == es.DECISION_PASS
    bh = client.compare_profiles("m", window="1h", multiplicity=es.MULTIPLICITY_BENJAMINI_HOCHBERG)
    assert bh.multiplicity == "Benjamini-Hochberg"
    tested = [c for c in bh.cells if c.HasField("p")]
    assert [c.p_adjusted for c in tested] == pytest.approx(benjamini_hochberg([c.p for c in tested]))
    # toxicity is not deployed here: no value on either side, not enough data (not a pass)
    gate = client.compare_profiles("m", window="1h", fail_on=["toxicity"])
    assert (gate.decision, list(gate.not_enough_data)) == (es.DECISION_NOT_ENOUGH_DATA, ["toxicity"])
    assert gate.summary.startswith("not enough data to decide: toxicity")


def test_corpus_level_cells_by_bucket_bootstrap(client, make_worker):
    now = time.time()
    client.submit(classified("a", 400, 10, now), model="a")
    client.submit(classified("b", 400, 3, now), model="b")
    drain(make_worker("accuracy"))

    # 26 minutes: read in minute buckets (a window holding a whole clock hour reads that hour as one bucket)
    span = (datetime.fromtimestamp(now - 25 * 60, UTC), datetime.fromtimestamp(now + 60, UTC))
    r = client.compare_profiles("a", "b", window=span, fail_on=["accuracy/classification_macro_f1"])
    f1 = cells(r)["accuracy/classification_macro_f1"]
    folded = {m.name: m.value for f in r.before.families for m in f.metrics}
    assert f1.before == folded["classification_macro_f1"] and f1.test == BOOTSTRAP
    assert f1.after < f1.before and f1.lower < f1.difference < f1.upper < 0
    assert f1.verdict == es.VERDICT_WORSE and r.decision == es.DECISION_WORSE
    again = client.compare_profiles("a", "b", window=span, fail_on=["accuracy/classification_macro_f1"])
    assert cells(again)["accuracy/classification_macro_f1"] == f1  # a fixed seed: the same answer

    # all time is one stored bucket: nothing to resample, so not enough data to decide
    whole = client.compare_profiles("a", "b", fail_on=["accuracy/classification_macro_f1"])
    f1 = cells(whole)["accuracy/classification_macro_f1"]
    assert f1.verdict == es.VERDICT_NOT_ENOUGH_DATA and not f1.HasField("p") and "time buckets" in f1.why
    assert whole.decision == es.DECISION_NOT_ENOUGH_DATA


def fair(model: str, pid: str, original: str, output: str, now: float) -> pb.Prediction:
    p = prediction(pid, model=model, output=output, scenario="chat", produced_at_s=now)
    if original:
        p.perturbation.family = pb.PERTURBATION_FAMILY_FAIRNESS
        p.perturbation.name = "gender"
        p.perturbation.original_id = original
    return p


def submit_fair_pairs(client: Client) -> None:
    """30 instances (an original and its gender variant) scored by both models: a is right on every
    original, b wrong on 10 of them, so McNemar's discordant pairs are 10 against 0."""
    now = time.time()
    for model in ("a", "b"):
        preds = []
        for i in range(30):
            right = model == "a" or i >= 10
            preds.append(fair(model, f"q{i}", "", "Paris" if right else "Rome", now))
            preds.append(fair(model, f"q{i}~gender", f"q{i}", "Paris", now))
        client.submit(preds, model=model)


def test_two_models_paired_on_the_instances_both_scored(client, make_worker):
    submit_fair_pairs(client)
    drain(make_worker("fairness"))

    r = client.compare_profiles("a", "b", window="1h", fail_on=["fairness/paired:o"])
    paired = {c.name: c for c in r.cells if c.kind == "paired"}
    original = paired["fairness/paired:o"]
    assert (original.before, original.after, original.before_count) == (1.0, pytest.approx(20 / 30), 30)
    assert original.test == MCNEMAR_EXACT and original.p == pytest.approx(binomtest(0, 10, 0.5).pvalue)  # 0.00195
    # fairness declares its correctness slots higher-is-better: the paired cell is worse, and the gate fails on it
    assert original.verdict == es.VERDICT_WORSE and original.upper < 0 and not original.lower_is_better
    # the margin test by hand: margin 0 is McNemar's exact test made one-sided, p_margin = 0.00195 / 2; margin
    # 0.2: se = d / z(p / 2) = (1/3) / 3.0973 = 0.10762, z = (-1/3 + 0.2) / 0.10762 = -1.2389, p_margin 0.1077
    assert original.p_margin == pytest.approx(binomtest(0, 10, 0.5).pvalue / 2)
    se = (1 / 3) / -NormalDist().inv_cdf(binomtest(0, 10, 0.5).pvalue / 2)
    assert round(se, 5) == 0.10762
    beyond = cells(client.compare_profiles("a", "b", window="1h", margin=0.2, fail_on=["fairness/paired:o"]))
    assert beyond["fairness/paired:o"].p_margin == pytest.approx(NormalDist().cdf((-1 / 3 + 0.2) / se))
    assert 0.107 < beyond["fairness/paired:o"].p_margin < 0.108
    assert (r.decision, list(r.worse)) == (es.DECISION_WORSE, ["fairness/paired:o"])
    reverse = client.compare_profiles("b", "a", window="1h", fail_on=["fairness/paired:o"])
    assert cells(reverse)["fairness/paired:o"].verdict == es.VERDICT_BETTER and reverse.decision == es.DECISION_PASS
    variant = paired["fairness/paired:p:gender"]
    assert (variant.before, variant.after, variant.p, variant.verdict) == (
        1.0, 1.0, 1.0, es.VERDICT_NO_SIGNIFICANT_CHANGE
    )  # fmt: skip
    # the same model against itself over the window before has no pairs (an instance lives in one minute)
    assert not [c for c in client.compare_profiles("a", window="1h").cells if c.kind == "paired"]


def test_a_lower_is_better_paired_slot_toxicity(client, make_worker):
    """The same 20 inputs answered by both models: a politely every time, b profanely on 12. Toxicity's
    slot "max" (an input's highest toxicity) is lower-is-better: b's paired cell is worse, a's better."""
    now = time.time()
    for model in ("a", "b"):
        preds = [
            prediction(f"{model}{i}", model=model, input=f"question {i}", produced_at_s=now,
                       output="fuck this, you idiot" if model == "b" and i < 12 else "Thanks, happy to help.")
            for i in range(20)
        ]  # fmt: skip
        client.submit(preds, model=model)
    drain(make_worker("toxicity"))

    r = client.compare_profiles("a", "b", window="1h", fail_on=["toxicity/paired:max"])
    tox = cells(r)["toxicity/paired:max"]
    assert tox.kind == "paired" and tox.lower_is_better and tox.before_count == 20 and tox.after > tox.before
    assert tox.verdict == es.VERDICT_WORSE and tox.p_margin < 0.05
    assert (r.decision, list(r.worse)) == (es.DECISION_WORSE, ["toxicity/paired:max"])
    back = client.compare_profiles("b", "a", window="1h", fail_on=["toxicity/paired:max"])
    assert cells(back)["toxicity/paired:max"].verdict == es.VERDICT_BETTER and back.decision == es.DECISION_PASS


class WithoutDirection:
    """A family as a plugin without `paired_direction` declares it: the fairness family, less that method."""

    def __init__(self, inner: Family) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "paired_direction":
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_family_without_paired_direction_gives_paired_cells_without_one(make_gateway, make_worker):
    gw = make_gateway({"fairness": WithoutDirection(load_family("fairness"))}, families=["fairness"])
    with gw.client() as client:
        submit_fair_pairs(client)
        drain(make_worker("fairness", gw.settings))
        r = client.compare_profiles("a", "b", window="1h", fail_on=["fairness/paired:o"])
    original = cells(r)["fairness/paired:o"]
    assert original.verdict == es.VERDICT_CHANGED and original.p < 0.05 and not original.HasField("p_margin")
    # no better or worse: the gate cannot judge it, so it does not pass either
    assert (r.decision, list(r.not_enough_data)) == (es.DECISION_NOT_ENOUGH_DATA, ["fairness/paired:o"])


def test_bad_requests_name_the_field(gateway, client):
    client.submit([prediction("p1", model="m")], model="m")
    with grpc.insecure_channel(gateway.address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        cases = {
            "model": es.CompareProfilesRequest(preset=2),
            "other_model": es.CompareProfilesRequest(model="a", other_model="no way"),
            "margin": es.CompareProfilesRequest(model="a", preset=2, margin=-1),
            "level": es.CompareProfilesRequest(model="a", preset=2, level=0.9),
            "fail_on[1]": es.CompareProfilesRequest(model="a", preset=2, fail_on=["accuracy", ""]),
            "preset": es.CompareProfilesRequest(model="a"),  # itself over all time: no window before
        }
        for field, request in cases.items():
            with pytest.raises(grpc.RpcError) as err:
                stub.CompareProfiles(request, timeout=10)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert field in violations(err.value), (field, violations(err.value))
        with pytest.raises(grpc.RpcError) as err:  # a misspelt axis, once the profiles say which axes there are
            stub.CompareProfiles(es.CompareProfilesRequest(model="m", preset=2, fail_on=["acuracy"]), timeout=10)
        assert violations(err.value)["fail_on[0]"].startswith("unknown axis acuracy; use accuracy, bias, ")
        with pytest.raises(grpc.RpcError) as err:
            stub.CompareProfiles(es.CompareProfilesRequest(model="never", preset=2), timeout=10)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_segment_cells_are_compared_like_any_metric(make_gateway, make_worker):
    """Model a: eu 40 of 40 right, us 20 of 20; model b: eu 10 of 40, us 20 of 20. CompareProfiles names each
    segment cell, tests it, and finds eu worse and us unchanged."""
    gw = make_gateway(families=["accuracy"], segment_keys=["region"])
    preds: dict[str, list[pb.Prediction]] = {"a": [], "b": []}
    for model, eu_right in (("a", 40), ("b", 10)):
        for i in range(60):
            region, right = ("eu", i < eu_right) if i < 40 else ("us", True)
            p = prediction(f"{model}{i}", model=model, output="Paris" if right else "Rome")
            p.metadata["region"] = region
            preds[model].append(p)
    with gw.client() as c:
        for model, batch in preds.items():
            c.submit(batch, model=model)
        drain(make_worker("accuracy", gw.settings))
        r = c.compare_profiles("a", "b", fail_on=["accuracy/exact_match[region=eu]"])
    got = cells(r)
    eu, us = got["accuracy/exact_match[region=eu]"], got["accuracy/exact_match[region=us]"]
    assert (eu.kind, eu.before, eu.after, eu.before_count, eu.after_count) == ("segment", 1.0, 0.25, 40, 40)
    assert eu.difference == pytest.approx(-0.75) and eu.HasField("p") and eu.verdict == es.VERDICT_WORSE
    assert (us.before, us.after) == (1.0, 1.0) and us.verdict != es.VERDICT_WORSE
    assert (r.decision, list(r.worse)) == (es.DECISION_WORSE, ["accuracy/exact_match[region=eu]"])


def calibrated(model: str, overconfident_eu: float, rng: random.Random, now: float) -> list[pb.Prediction]:
    """600 predictions over 20 minutes, regions eu and us alternating (apac in 6 of the minutes only), each
    right with probability its confidence, less `overconfident_eu` in eu."""
    out = []
    for i in range(600):
        minute = i % 20
        region = "apac" if minute < 6 and (i // 20) % 3 == 0 else "eu" if (i // 20) % 2 else "us"
        conf = rng.uniform(0.5, 1.0)
        right = rng.random() < conf - (overconfident_eu if region == "eu" else 0.0)
        p = prediction(f"{model}{i}", model=model, output="Paris" if right else "Rome", produced_at_s=now - 60 * minute)
        p.confidence = conf
        p.metadata["region"] = region
        out.append(p)
    return out


def test_corpus_level_segment_cells_by_their_own_bucket_bootstrap(make_gateway, make_worker):
    """ECE is corpus-level (no interval) and calibration's segment metric. Model b is overconfident by 0.3 in
    eu only: each segment cell is bootstrapped over the buckets holding its predictions, eu is found worse,
    us is not; apac, in 6 minutes of the 26, has too few buckets of its own to resample: not enough data."""
    gw = make_gateway(families=["calibration"], segment_keys=["region"])
    now, rng = time.time(), random.Random(7)
    with gw.client() as c:
        c.submit(calibrated("a", 0.0, rng, now), model="a")
        c.submit(calibrated("b", 0.3, rng, now), model="b")
        drain(make_worker("calibration", gw.settings))
        span = (datetime.fromtimestamp(now - 25 * 60, UTC), datetime.fromtimestamp(now + 60, UTC))
        r = c.compare_profiles("a", "b", window=span, fail_on=["calibration/ece_10_bin[region=eu]"])
        again = c.compare_profiles("a", "b", window=span, fail_on=["calibration/ece_10_bin[region=eu]"])
    got = cells(r)
    eu, us, apac = (got[f"calibration/ece_10_bin[region={v}]"] for v in ("eu", "us", "apac"))
    shown = {v.value: v.metric for b in r.after.segments for v in b.values}
    assert (eu.kind, eu.after, eu.lower_is_better) == ("segment", shown["eu"].value, True)
    assert not shown["eu"].HasField("interval")  # corpus-level: the bootstrap is its only test
    assert eu.test == BOOTSTRAP and eu.difference > 0.15 and 0 < eu.lower < eu.difference < eu.upper
    assert eu.verdict == es.VERDICT_WORSE and eu.p_margin < 0.05
    assert us.test == BOOTSTRAP and us.verdict != es.VERDICT_WORSE
    assert apac.verdict == es.VERDICT_NOT_ENOUGH_DATA and "time buckets with this segment's predictions" in apac.why
    assert (r.decision, list(r.worse)) == (es.DECISION_WORSE, ["calibration/ece_10_bin[region=eu]"])
    assert cells(again)["calibration/ece_10_bin[region=eu]"] == eu  # a fixed seed: the same answer


def test_a_segment_of_an_axis_score_without_interval_has_none():
    """find() reads an axis's score as the segment's metric: without an interval it must stay without one
    (an empty one read as [0, 0] gave a zero standard error, so a Welch p of 1: a silent pass)."""
    fold = FamilyFold(pp.FamilyReport(family="x"), dimensions=[pp.Dimension(axis="x", score=0.7, count=40)])
    m = segments.find(fold, "x")
    assert m is not None and m.value == 0.7 and not m.HasField("interval")
    fold.dimensions[0].interval.lower, fold.dimensions[0].interval.upper = 0.6, 0.8
    assert segments.find(fold, "x").interval.upper == 0.8  # type: ignore[union-attr]
