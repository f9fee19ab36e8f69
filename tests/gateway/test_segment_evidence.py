"""Alert evidence per segment cell (gateway/segment_evidence.py): which cells qualify (metric_evidence's own
rule), their floors and the cells compared with a pinned baseline, by hand and without Redis."""

from __future__ import annotations

import math

import pytest

from gateway import baseline_evidence, sequential
from gateway.quality import QualitySeries
from gateway.segment_evidence import Cell, cell_name, cell_scores, floor_of
from holistic.families import FamilyBase, registry
from holistic.stats.metric_values import macro_mean, mean, plain, proportion
from holistic.v1 import profile_pb2 as pp


def cells(family: str, metric: str, key: str, *values: tuple[str, pp.Metric]) -> pp.SegmentBreakdown:
    """A breakdown as the fold makes it; the value "other" is the other cell."""
    b = pp.SegmentBreakdown(key=key, family=family, metric=metric)
    for value, m in values:
        sv = b.values.add(value=value, other=value == "other")
        sv.metric.CopyFrom(m)
    return b


def profile(model: str, *breakdowns: pp.SegmentBreakdown, families: tuple[str, ...] = ()) -> pp.Profile:
    p = pp.Profile(model=model, families=[pp.FamilyReport(family=f) for f in families])
    p.segments.extend(breakdowns)
    return p


def tox(toxic: int, n: int) -> pp.Metric:
    return proportion("toxic_frac", "toxicity", toxic, n, lower_is_better=True)


def test_the_evidence_of_a_cell_by_hand():
    """toxic_frac 70 of 200 (0.35) in region eu against a ceiling of 0.2, read mirrored: 200 scores of mean
    0.65 against 0.8. S = 200 · (0.65 − 0.8) = −30, v + ρ = 200/4 + 125 = 175, z = −30/√175 = −2.2678,
    E = 2 · √(125/175) · exp(z²/2) · Φ(2.2678) = 2 · 0.84515 · 13.0843 · 0.98833 = 21.859: the alert fires."""
    p = profile("m", cells("toxicity", "toxic_frac", "region", ("eu", tox(70, 200))), families=("toxicity",))
    (cell,) = cell_scores(p).values()
    assert cell == Cell("toxicity", "toxic_frac", "region", "eu", False, 200, pytest.approx(0.65), True)
    series = QualitySeries()
    series.add_segment_evidence(p, "t", {"toxic_frac": 0.2})
    (sample,) = series.segment_evidence.samples
    z = -30 / math.sqrt(175)
    by_hand = 2 * math.sqrt(125 / 175) * math.exp(z * z / 2) * 0.5 * math.erfc(z / math.sqrt(2))
    assert sample.value == pytest.approx(by_hand, rel=1e-9) and sample.value == pytest.approx(21.859, abs=1e-3)
    assert sample.labels == {"tenant": "t", "model": "m", "family": "toxicity", "metric": "toxic_frac",
                             "segment_key": "region", "segment_value": "eu"}  # fmt: skip


def test_only_cells_whose_metric_qualifies_as_a_scenario_metric_would_are_read():
    macro = macro_mean("exact_match", "accuracy", [(0.5, 0.01, 10, True)])
    p = profile(
        "m",
        cells("toxicity", "toxic_frac", "region", ("eu", tox(3, 10)), ("other", tox(1, 4))),
        # a mean of scenario means (accuracy's family-level exact_match): "propagated", skipped
        cells("accuracy", "exact_match", "region", ("eu", macro)),
        cells("efficiency", "latency_p50", "region", ("eu", mean("latency_p50", "efficiency", 4, 2.0, 1.5, unit="s"))),
        cells("summarization", "bleu", "region", ("eu", plain("bleu", "summarization", 0.3, 50))),
        # a declared main metric's mean over predictions is read, as in a scenario
        cells("summarization", "rouge_2", "app", ("2.3", mean("rouge_2", "summarization", 4, 2.0, 1.5))),
        families=("toxicity", "accuracy", "efficiency", "summarization"),
    )  # fmt: skip
    got = {k: (c.n, c.score) for k, c in cell_scores(p).items()}
    assert got == {
        ("toxicity", "toxic_frac", "region", "eu"): (10, pytest.approx(0.7)),
        ("toxicity", "toxic_frac", "region", "(other)"): (4, 0.75),  # labelled as the segment gauges label it
        ("summarization", "rouge_2", "app", "2.3"): (4, 0.5),
    }


def test_a_plugin_familys_declared_main_metric_is_read_in_its_cells(monkeypatch):
    class Judge(FamilyBase):
        name, version, main_metrics = "judge", "1", ("judge_score",)

    monkeypatch.setitem(registry._loaded, "judge", Judge())
    p = profile("m", cells("judge", "judge_score", "tier", ("gold", mean("judge_score", "judge", 4, 3.0, 2.5))),
                families=("judge",))  # fmt: skip
    assert list(cell_scores(p)) == [("judge", "judge_score", "tier", "gold")]
    series = QualitySeries()
    series.add_segment_evidence(p, "t", {"judge_score": 0.9})
    assert [s.value for s in series.segment_evidence.samples] == [sequential.evidence(4, 0.75, 0.9)]


def test_a_cells_own_floor_wins_over_the_metrics_and_a_scenarios_floor_is_not_a_cells():
    eu = Cell("toxicity", "toxic_frac", "region", "eu", False, 10, 0.7, True)
    other = Cell("toxicity", "toxic_frac", "region", "(other)", True, 10, 0.7, True)
    floors = {"toxic_frac": 0.2, "toxicity/toxic_frac[region=eu]": 0.1, "chat/exact_match": 0.5}
    assert cell_name(*eu.key) == "toxicity/toxic_frac[region=eu]"
    assert floor_of(floors, eu) == 0.1 and floor_of(floors, other) == 0.2
    assert floor_of({"toxicity/toxic_frac[region=(other)]": 0.3}, other) == 0.3
    em = Cell("accuracy", "exact_match", "region", "eu", False, 10, 0.7, False)
    assert floor_of(floors, em) is None  # `chat/exact_match` is scenario chat's


def test_the_series_floors_per_cell_and_baselines_per_named_cell_both_have():
    cur = profile(
        "v2",
        cells("toxicity", "toxic_frac", "region", ("eu", tox(70, 200)), ("us", tox(2, 20)), ("other", tox(1, 10))),
        families=("toxicity",),
    )  # fmt: skip
    pinned = profile(
        "v1",
        cells("toxicity", "toxic_frac", "region", ("eu", tox(10, 100)), ("jp", tox(0, 5)), ("other", tox(1, 10))),
        families=("toxicity",),
    )  # fmt: skip
    series = QualitySeries()
    series.add_segment_evidence(cur, "t", {"toxic_frac": 0.2, "toxicity/toxic_frac[region=us]": 0.05})
    series.add_segment_baseline_evidence(cur, pinned, "t")
    floor = {s.labels["segment_value"]: s.value for s in series.segment_evidence.samples}
    assert floor == {
        "eu": pytest.approx(sequential.evidence(200, 0.65, 0.8)),
        "us": pytest.approx(sequential.evidence(20, 0.9, 0.95)),  # its own ceiling
        "(other)": pytest.approx(sequential.evidence(10, 0.9, 0.8)),
    }
    base = {tuple(s.labels.values()): s.value for s in series.segment_baseline_evidence.samples}
    # eu only: us and jp are each one model's; each model's other cell holds its own later values
    assert base == {
        ("t", "v2", "v1", "toxicity", "toxic_frac", "region", "eu"): pytest.approx(
            baseline_evidence.evidence(200, 0.65, 100, 0.9)
        )
    }
