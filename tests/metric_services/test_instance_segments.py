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


def stream(gw, make_worker, family: str, batches: list[list[pb.Prediction]], together: bool = False):
    """Each batch applied by the next of two replicas, in its own read (together: all of them in one read of one
    replica, applied as one: metric_services/work.py's coalesce): the profile of model m."""
    workers = [make_worker(family, gw.settings), make_worker(family, gw.settings)]
    for q in workers[0].queues:  # deployed before the first batch (a plugin the gateway's settings do not name)
        q.ensure_group(workers[0].group)
    gw.call(gw.gateway.deployment.refresh)
    with gw.client() as c:
        for i, batch in enumerate(batches):
            c.submit(batch, batch_id=f"b{i}", model="m")
            if not together:
                drain(workers[i % 2])
        if together:
            w = workers[0]
            entries = w.queue.read(w.group, w.consumer, len(batches), None)
            assert len(entries) == len(batches)
            w.process(entries, w.queue)
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


@pytest.mark.parametrize("together", [False, True])
@pytest.mark.parametrize(("family", "kind"), [("robustness", ROB), ("fairness", FAIR)])
def test_worst_case_per_region_when_originals_and_variants_arrive_in_other_batches(
    make_gateway, make_worker, family, kind, together
):
    p = stream(make_gateway(segment_keys=["region"]), make_worker, family, worst_case_batches(kind), together)
    got = cells(p, family)
    assert list(got) == ["eu", "us"]  # 3 instances each: by value
    for region, worst in {"eu": [0, 0, 1], "us": [0, 1, 1]}.items():
        lo, hi = normal_interval(worst)
        assert got[region] == pytest.approx((family, fmean(worst), 3, lo, hi), abs=1e-9), region
    whole = next(m for m in next(f for f in p.families if f.family == family).metrics if m.name == family)
    assert (whole.value, whole.count) == (pytest.approx(3 / 6), 6)


def cell_fold(r, settings, family: str, value: str) -> dict[str, tuple[float, int]]:
    """The family's own fold of one region cell's stored statistics (all time): its metrics."""
    from holistic.families.registry import load_family
    from holistic.redis.keys import Keys
    from holistic.stats import segments
    from holistic.stats.mergeable import Folded

    stored = Folded.from_hashes([r.hgetall(Keys(settings.key_prefix).stats("m", family, "all"))])
    cell = segments.split(stored)[1].groups()["region"].groups()[segments.cell_part(value)]
    fold = load_family(family).fold(Folded(dict(cell)), "m", settings)
    return {m.name: (m.value, m.count) for m in fold.report.metrics}


def test_a_counterfactual_pair_split_across_batches_lands_in_its_cell(make_gateway, make_worker, use_table, r):
    """eu: o1 (.9) and its gender variant (.3, the batch before) -> gap .6; us: o2 (.2), its variant (.4) after
    -> .2; o3's variant (eu) never meets its original: unpaired, in eu's cell too."""
    from tests.metric_services.test_cross_batch_joins import BIAS, fair

    use_table({**BIAS, "v3": [0.5]})

    def region(p: pb.Prediction, value: str) -> pb.Prediction:
        p.metadata["region"] = value
        return p

    batches = [
        [region(fair("o1~g", "o1", "v1"), "eu"), region(prediction("o2", output="o2", scenario="chat"), "us")],
        [region(prediction("o1", output="o1", scenario="chat"), "eu"), region(fair("o2~g", "o2", "v2g"), "us"),
         region(fair("o3~g", "o3", "v3"), "eu")],
    ]  # fmt: skip
    gw = make_gateway(segment_keys=["region"])
    p = stream(gw, make_worker, "bias", batches)
    whole = {m.name: (m.value, m.count) for f in p.families if f.family == "bias" for m in f.metrics}
    assert whole["counterfactual_toxicity_gap"] == (pytest.approx((0.6 + 0.2) / 2), 2)
    eu, us = cell_fold(r, gw.settings, "bias", "eu"), cell_fold(r, gw.settings, "bias", "us")
    assert eu["counterfactual_toxicity_gap"] == (pytest.approx(0.6), 1)
    assert eu["counterfactual_unpaired"][0] == 1
    assert us["counterfactual_toxicity_gap"] == (pytest.approx(0.2), 1) and "counterfactual_unpaired" not in us


class ConsistencySpec:
    """A plugin's InstanceSpec: an input is consistently right when every completion of it is right."""

    thresholded = False

    def reducer(self, slot: str) -> str:
        return "min"

    def derive(self, instance: str, slots) -> dict[str, float]:
        return {"consistent": min(slots.values())}

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return ()


def consistency_family():
    """A family written against holistic.family alone, with per-instance state and no word of segments."""
    from holistic.family import (
        BatchEnvelope,
        FamilyBase,
        FamilyFold,
        FamilyReport,
        Folded,
        MetricMetadata,
        MetricSignature,
        Partial,
        Row,
        Settings,
        Stats,
        key,
        make_signature,
        mean,
        prediction_minute,
    )

    class Consistency(FamilyBase):
        name = "consistency"
        version = "1"
        metrics = (MetricMetadata("consistent", "Consistent", "Share of inputs whose every completion is right."),)
        main_metrics = ("consistent",)

        def compute(self, envelope: BatchEnvelope, settings: Settings) -> Partial:
            out: dict[int, Stats] = {}
            rows = []
            for p in envelope.predictions:
                minute = prediction_minute(p.produced_at.seconds, p.produced_at.nanos, envelope.accept_time.seconds)
                out.setdefault(minute, Stats()).incr("completions")
                right = float(bool(p.references) and p.output == p.references[0])
                rows.append(Row(p.input, "c", right, minute))
            return Partial(out, ConsistencySpec(), rows)

        def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
            report = FamilyReport(family=self.name, count=int(stats.get("completions", 0)))
            n = stats.get(key("consistent", "n"), 0)
            if n:
                total, sumsq = stats[key("consistent", "sum")], stats[key("consistent", "sumsq")]
                report.metrics.append(mean("consistent", self.name, n, total, sumsq, clip=(0.0, 1.0)))
            return FamilyFold(report=report)

        def signature(self, model: str, settings: Settings) -> MetricSignature:
            return make_signature(self.name, self.version, {})

    return Consistency()


def test_a_plugin_family_with_instance_state_gets_cells_with_no_code(make_gateway, make_worker):
    """Inputs with completions in three batches: eu's i1 (right, right) and i2 (right, wrong) -> [1, 0];
    us's i3 (right, right, right) and i4 (right) -> [1, 1]; i5's only completion has no region: no cell."""
    family = consistency_family()

    def completion(pid: str, inp: str, right: bool, region: str | None) -> pb.Prediction:
        p = prediction(pid, input=inp, output="Paris" if right else "Rome", produced_at_s=NOW)
        if region is not None:
            p.metadata["region"] = region
        return p

    batches = [
        [completion("a", "i1", True, "eu"), completion("b", "i2", True, "eu"), completion("c", "i3", True, "us")],
        [completion("d", "i2", False, "eu"), completion("e", "i3", True, "us"), completion("f", "i5", False, None)],
        [completion("g", "i1", True, "eu"), completion("h", "i3", True, "us"), completion("i", "i4", True, "us")],
    ]  # fmt: skip
    gw = make_gateway(segment_keys=["region"], fold_families={"consistency": family})
    p = stream(gw, make_worker, family, batches)
    got = cells(p, "consistency")
    lo, hi = normal_interval([1, 0])
    assert got["eu"] == pytest.approx(("consistent", 0.5, 2, lo, hi), abs=1e-9)
    assert got["us"][:3] == ("consistent", 1.0, 2)
    whole = next(m for f in p.families if f.family == "consistency" for m in f.metrics if m.name == "consistent")
    assert (whole.value, whole.count) == (pytest.approx(3 / 5), 5)


@pytest.mark.parametrize("order", ["rankings_first", "judgments_first"])
def test_a_ranking_judged_later_counts_in_its_querys_cell(make_gateway, make_worker, order):
    """Rankings b > a > c; the judgments come in other batches, without metadata. eu: q0 (a relevant: RR 1/2)
    and q1 (c: 1/3), q3 never judged; us: q2 (b: 1) and q5 (a: 1/2). RR@5 = RR@10 with three documents."""
    from tests.metric_services.retrieval.test_late_judgments import batchings

    regions = {"q0": "eu", "q1": "eu", "q3": "eu", "q2": "us", "q5": "us"}
    batches = batchings()[order]
    for batch in batches:
        for p in batch:
            if p.ranking.documents and any(d.HasField("score") for d in p.ranking.documents):
                p.metadata["region"] = regions[p.id]  # the rankings; judgments-only rows carry none
    p = stream(make_gateway(segment_keys=["region"]), make_worker, "retrieval", batches)
    got = cells(p, "retrieval")
    assert {v: got[v][:3] for v in got} == {
        "eu": ("RR@5", pytest.approx(5 / 12), 2), "us": ("RR@5", pytest.approx(3 / 4), 2)
    }  # fmt: skip
