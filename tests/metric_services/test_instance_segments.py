"""Segment cells of the metrics made from per-instance state: an instance's rows join across batches and
replicas, and its joined value counts in its cell (holistic/stats/instances.py, holistic/stats/segments.py)."""

from __future__ import annotations

import time
from statistics import NormalDist, fmean, variance

import pytest

from holistic.v1 import prediction_pb2 as pb
from tests.conftest import drain
from tests.factories import prediction

NOW = time.time() - 600
ROB, FAIR = pb.PERTURBATION_FAMILY_ROBUSTNESS, pb.PERTURBATION_FAMILY_FAIRNESS


def graded(pid: str, right: bool, region: str | None, original: str = "", kind: int = ROB) -> pb.Prediction:
    p = prediction(pid, output="Paris" if right else "Rome", produced_at_s=NOW)
    if original:
        p.perturbation.name, p.perturbation.family, p.perturbation.original_id = "typos", kind, original
    if region is not None:
        p.metadata["region"] = region
    return p


def normal_interval(values: list[float]) -> tuple[float, float]:
    half = NormalDist().inv_cdf(0.975) * (variance(values) / len(values)) ** 0.5
    return max(fmean(values) - half, 0.0), min(fmean(values) + half, 1.0)


def cells(profile, family: str) -> dict[str, tuple[str, float, int, float, float]]:
    (b,) = [b for b in profile.segments if b.family == family and b.key == "region"]
    return {
        v.value: (b.metric, v.metric.value, v.metric.count, v.metric.interval.lower, v.metric.interval.upper)
        for v in b.values
    }


def stream(make_gateway, make_worker, family: str, batches: list[list[pb.Prediction]], **settings):
    """Each batch applied by the next of two replicas, in its own read: the family's profile of model m."""
    gw = make_gateway(segment_keys=["region"], **settings)
    workers = [make_worker(family, gw.settings), make_worker(family, gw.settings)]
    with gw.client() as c:
        for i, batch in enumerate(batches):
            c.submit(batch, batch_id=f"b{i}", model="m")
            drain(workers[i % 2])
        return c.get_profile("m")


# eu: q1 right, its typo (next batch) wrong -> 0; q2's typo right first, q2 wrong after -> 0; q3 right alone -> 1.
# us: q5 right, its typo right and a second typo wrong, both in the next batch -> 0; q6 right, typo right -> 1.
# q7's typo carries no region and its original (us, right) comes later: the instance is us's -> 1.
def worst_case_batches(kind: int) -> list[list[pb.Prediction]]:
    return [
        [graded("q1", True, "eu"), graded("q2~t", True, "eu", "q2", kind), graded("q3", True, "eu"),
         graded("q5", True, "us"), graded("q6", True, "us"), graded("q7~t", True, None, "q7", kind)],
        [graded("q1~t", False, "eu", "q1", kind), graded("q5~t", True, "us", "q5", kind),
         graded("q6~t", True, "us", "q6", kind)],
        [graded("q2", False, "eu"), graded("q5~t2", False, "us", "q5", kind), graded("q7", True, "us")],
    ]  # fmt: skip


@pytest.mark.parametrize(("family", "kind"), [("robustness", ROB), ("fairness", FAIR)])
def test_worst_case_per_region_when_originals_and_variants_arrive_in_other_batches(
    make_gateway, make_worker, family, kind
):
    p = stream(make_gateway, make_worker, family, worst_case_batches(kind))
    got = cells(p, family)
    assert list(got) == ["eu", "us"]  # 3 instances each: by value
    for region, worst in {"eu": [0, 0, 1], "us": [0, 1, 1]}.items():
        lo, hi = normal_interval(worst)
        assert got[region] == pytest.approx((family, fmean(worst), 3, lo, hi), abs=1e-9), region
    whole = next(m for m in next(f for f in p.families if f.family == family).metrics if m.name == family)
    assert (whole.value, whole.count) == (pytest.approx(3 / 6), 6)
