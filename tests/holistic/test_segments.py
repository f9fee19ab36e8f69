"""Segments end to end: metadata values -> worker cells -> the profile's per-value main metric, bounded."""

from __future__ import annotations

import time
from statistics import NormalDist, fmean, variance

import pytest

from holistic.errors import ConfigError
from holistic.redis.keys import Keys
from holistic.settings import load_settings
from holistic.stats import segments
from tests.conftest import drain
from tests.deletion import traces_of
from tests.factories import prediction

SEGMENTS = {"segment_keys": ["region"], "segment_top_k": 2, "segment_value_max_chars": 8}


def graded(pid: str, correct: bool, region: str | None):
    p = prediction(pid, output="Paris" if correct else "Rome", latency_s=1.0)
    if region is not None:
        p.metadata["region"] = region
        p.metadata["team"] = "not a segment key"
    return p


# eu 3 of 4 right, us 2 of 3, then with K = 2 apac (1 of 1) and an over-long value (0 of 1) are `other`;
# one prediction has no region: in the whole only. Whole: 6 of 10.
FIRST = [graded("a", True, "eu"), graded("b", True, "eu"), graded("c", False, "eu"), graded("e", True, "us")]
SECOND = [
    graded("f", False, "us"), graded("g", True, "apac"), graded("d", True, "eu"), graded("j", True, "us"),
    graded("h", False, None), graded("i", False, "x" * 9),
]  # fmt: skip


def normal_interval(scores: list[int]) -> tuple[float, float]:
    """exact_match over one scenario: the mean's 95 % normal interval, from the sample variance, in [0, 1]."""
    half = NormalDist().inv_cdf(0.975) * (variance(scores) / len(scores)) ** 0.5
    return max(fmean(scores) - half, 0.0), min(fmean(scores) + half, 1.0)


def cells(profile, family: str, key: str = "region") -> dict[str, tuple[float, int, float, float, bool]]:
    (b,) = [b for b in profile.segments if b.family == family and b.key == key]
    return {
        v.value: (v.metric.value, v.metric.count, v.metric.interval.lower, v.metric.interval.upper, v.other)
        for v in b.values
    }


def test_each_value_gets_the_main_metric_with_its_interval_and_later_values_go_to_other(make_gateway, make_worker):
    gw = make_gateway(**SEGMENTS)
    worker = make_worker("accuracy", gw.settings)
    with gw.client() as c:
        c.submit(FIRST, batch_id="b1", model="m")
        drain(worker)
        c.submit(SECOND, batch_id="b2", model="m")
        drain(worker)
        p = c.get_profile("m")
    (b,) = [b for b in p.segments if b.family == "accuracy"]
    assert (b.key, b.metric, b.lower_is_better) == ("region", "exact_match", False)
    assert [v.value for v in b.values] == ["eu", "us", "other"]  # by count, `other` last
    got = cells(p, "accuracy")
    # eu: mean 0.75, s^2 = 0.25, half = 1.96 * sqrt(0.25 / 4) = 0.49: [0.26, 1]; us: 2/3, s^2 = 1/3: [0.0133, 1]
    assert got["eu"][2] == pytest.approx(0.75 - 1.959963984540054 * 0.25)
    for value, scores, other in [("eu", [1, 1, 0, 1], False), ("us", [1, 0, 1], False), ("other", [1, 0], True)]:
        lo, hi = normal_interval(scores)
        assert got[value] == pytest.approx((fmean(scores), len(scores), lo, hi, other), abs=1e-9), value
    whole = next(m for m in next(f for f in p.families if f.family == "accuracy").metrics if m.name == "exact_match")
    assert (whole.value, whole.count) == (pytest.approx(6 / 10), 10)  # the cells change nothing of the whole


def test_a_value_admitted_stays_in_its_cell_and_the_first_k_win_whatever_comes_later(make_gateway, make_worker, r):
    gw = make_gateway(**SEGMENTS)
    accuracy, efficiency = make_worker("accuracy", gw.settings), make_worker("efficiency", gw.settings)
    with gw.client() as c:
        c.submit(FIRST, batch_id="b1", model="m")
        drain(accuracy, efficiency)
        c.submit([graded(f"z{i}", True, "apac") for i in range(20)], batch_id="b2", model="m")  # apac, most by far
        drain(accuracy, efficiency)
        p = c.get_profile("m")
    assert r.smembers(Keys().segment_values("m", "region")) == {b"eu", b"us"}
    assert set(cells(p, "accuracy")) == set(cells(p, "efficiency")) == {"eu", "us", "other"}
    assert cells(p, "accuracy")["other"][:2] == (1.0, 20)


def test_segment_keys_past_the_cap_are_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError, match=r"SEGMENT_KEYS names 3 keys; at most 2 \(HOLISTIC_SEGMENT_MAX_KEYS\)"):
        load_settings(segment_keys="a,b,c", segment_max_keys=2)
    with pytest.raises(ConfigError, match="HOLISTIC_SEGMENT_KEYS"):
        load_settings(segment_keys="region,bad key")
    assert load_settings(segment_keys="region, app_version,region").segment_keys == ["region", "app_version"]


def test_deleting_the_model_removes_its_segment_keys(make_gateway, make_worker, r):
    gw = make_gateway(**SEGMENTS)
    with gw.client() as c:
        c.submit(FIRST, batch_id="b1", model="m")
        drain(make_worker("accuracy", gw.settings))
        assert r.exists(Keys().segment_values("m", "region"))
        c.delete_model("m")
    assert traces_of(r, "m") == []


@pytest.mark.parametrize("value", ["eu", "a|b", "100%", "%7C", ""])
def test_any_value_survives_as_a_field_part(value):
    assert segments.cell_value(segments.cell_part(value)) == value
    assert "|" not in segments.cell_part(value)


def test_redis_failing_during_admission_leaves_the_batch_pending_not_dead_lettered(make_gateway, make_worker, r):
    import redis as redis_lib

    gw = make_gateway(**SEGMENTS)
    worker = make_worker("accuracy", gw.settings)
    script = worker.segments.script

    def down(*args, **kwargs):
        raise redis_lib.ConnectionError("Redis went away")

    worker.segments.script = down
    with gw.client() as c:
        c.submit(FIRST, batch_id="b1", model="m")
        with pytest.raises(redis_lib.ConnectionError):  # out to the loop, which waits and retries
            worker.step(block_ms=1)
        worker.segments.script = script
        time.sleep(0.3)  # past HOLISTIC_CLAIM_IDLE_MS (200 here): the pending entry is read again
        worker.recover()
        drain(worker)
        p = c.get_profile("m")
    assert r.xlen(Keys().dead_letters) == 0
    assert cells(p, "accuracy")["eu"][:2] == (pytest.approx(2 / 3), 3)


def test_a_worker_asks_redis_only_about_values_it_has_not_seen_while_the_key_has_room(r):
    admission = segments.Admission(r, Keys(), top_k=2)
    calls = []
    script = admission.script
    admission.script = lambda keys, args: calls.append(args) or script(keys=keys, args=args)
    assert admission.admit("m", {"region": ["eu"]}) == {"region": {"eu"}}
    assert admission.admit("m", {"region": ["eu"]}) == {"region": {"eu"}}  # known: no call
    assert admission.admit("m", {"region": ["us", "apac"]}) == {"region": {"eu", "us"}}  # apac refused: full
    assert admission.admit("m", {"region": ["jp", "eu"]}) == {"region": {"eu", "us"}}  # full: no call
    assert calls == [[2, 1, "eu"], [2, 2, "us", "apac"]]
    admission.forget("m")  # after a deletion: ask again
    r.delete(Keys().segment_values("m", "region"))
    assert admission.admit("m", {"region": ["jp"]}) == {"region": {"jp"}}


def test_every_installed_family_folds_its_cells_of_the_demo_and_each_cell_adds_up(make_gateway, make_worker):
    """The demo's predictions (every task, perturbations, rankings, summaries) with a tier on each, K = 2 of 3:
    every family's cells fold, and a family's cells hold no more predictions than it scored."""
    from holistic.families.registry import installed
    from holistic_app.demo import SAMPLE
    from holistic_client.jsonl import read_predictions

    gw = make_gateway(segment_keys=["tier"], segment_top_k=2)
    lines = list(read_predictions(SAMPLE))[:1200]
    for i, line in enumerate(lines):
        line.prediction.metadata["tier"] = ("free", "pro", "team")[i % 3]
    with gw.client() as c:
        assert not c.submit_lines(iter(lines), batch_size=200).rejected
        drain(*(make_worker(name, gw.settings) for name in installed()))
        profiles = [c.get_profile(m) for m in sorted({line.model for line in lines})]
    shown: dict[str, set[str]] = {}
    for p in profiles:
        whole = {(f.family, m.name): m for f in p.families for m in f.metrics}
        for b in p.segments:
            shown.setdefault(b.family, set()).add(b.metric)
            assert b.key == "tier" and b.values and all(v.metric.count > 0 for v in b.values)
            assert [v.value for v in b.values if v.other] in ([], ["other"])
            # every prediction has a tier: the cells split the whole's predictions, and the instances joined
            # across batches (an original and its variants, a query and its judgments: each in one cell)
            if b.family in ("accuracy", "robustness", "fairness", "retrieval"):
                assert sum(v.metric.count for v in b.values) == whole[(b.family, b.metric)].count, b.family
    assert shown == {
        "accuracy": {"exact_match"}, "calibration": {"ece_10_bin"}, "efficiency": {"latency_p50"},
        "summarization": {"rouge_2"}, "toxicity": {"toxic_frac"},
        "bias": {"bias_metric:mode=representation,demographic_category=gender"},
        "robustness": {"robustness"}, "fairness": {"fairness"}, "retrieval": {"RR@5"},
    }  # fmt: skip
