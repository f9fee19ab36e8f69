"""The quality exporter's alert evidence per segment cell, end to end: predictions with a `region` through
the gateway, the workers and a real redis-server, read back from /metrics."""

from __future__ import annotations

import math

import pytest

from gateway import baseline_evidence
from gateway.quality_exporter import load_quality_settings
from holistic.errors import ConfigError
from tests.conftest import drain
from tests.exporter_thread import ExporterThread
from tests.factories import prediction
from tests.metric_services.conftest import table_classifier


def regional(prefix: str, counts: dict[str, tuple[int, int]]) -> list:
    """Per region in order (first come, first admitted), (predictions, toxic ones): "bad" is toxic and wrong,
    "good" neither; every prediction takes 1 s."""
    out = []
    for region, (n, toxic) in counts.items():
        for i in range(n):
            p = prediction(f"{prefix}-{region}-{i}", output="bad" if i < toxic else "good", references=["good"],
                           latency_s=1.0)  # fmt: skip
            p.metadata["region"] = region
            out.append(p)
    return out


@pytest.fixture
def regions(make_gateway, make_worker, monkeypatch):
    """K = 2. alpha: eu 70 toxic of 200, us 2 of 20, then apac 1 of 5 and jp 0 of 5 in (other) (1 of 10).
    beta: eu 10 of 100, us 0 of 40, jp 0 of 5 in (other)."""
    clf = table_classifier({"bad": [0.9], "good": [0.1]})
    monkeypatch.setattr("metric_services.toxicity.classifier_for", lambda settings: clf)
    monkeypatch.setattr("metric_services.toxicity.model_for", lambda settings: clf.model)
    gw = make_gateway(families=["accuracy", "efficiency", "toxicity"], segment_keys=["region"], segment_top_k=2)
    with gw.client() as c:
        c.submit(regional("a", {"eu": (200, 70), "us": (20, 2), "apac": (5, 1), "jp": (5, 0)}), model="alpha")
        c.submit(regional("b", {"eu": (100, 10), "us": (40, 0), "jp": (5, 0)}), model="beta")
    drain(*(make_worker(f, gw.settings) for f in ("accuracy", "efficiency", "toxicity")))
    return gw


def scrape(gw, **quality) -> dict:
    exporter = ExporterThread(gw.settings, load_quality_settings(models=["alpha"], windows=["all"], previous=False,
                                                                 refresh_s=3600, **quality))  # fmt: skip
    try:
        return exporter.scrape()
    finally:
        exporter.stop()


def test_evidence_per_qualifying_cell_against_its_floor(regions):
    gw = regions
    got = scrape(gw, metric_floors={"toxic_frac": 0.2, "toxicity/toxic_frac[region=us]": 0.05, "exact_match": 0.9,
                                    "latency_p50": 0.5})  # fmt: skip
    cells = {dict(k[1])["segment_value"]: (v, dict(k[1])) for k, v in got.items()
             if k[0] == "holistic_quality_segment_alert_evidence"}  # fmt: skip
    # only toxicity's cells: accuracy's exact_match per cell is a mean of scenario means ("propagated") and
    # efficiency's latency_p50 has a unit, whatever their floors
    assert {lab["family"] for _, lab in cells.values()} == {"toxicity"}
    gauges = {dict(k[1])["family"] for k in got if k[0] == "holistic_quality_segment"}
    assert gauges == {"accuracy", "efficiency", "toxicity"}  # the cells are there, only not read by the e-process
    # by hand: eu, 70 toxic of 200 against a ceiling of 0.2, read mirrored (mean 0.65 against 0.8):
    # z = 200 (0.65 - 0.8) / sqrt(200/4 + 125) = -30/sqrt(175), E = 2 sqrt(125/175) exp(z²/2) Φ(-z) = 21.859
    z = -30 / math.sqrt(175)
    by_hand = 2 * math.sqrt(125 / 175) * math.exp(z * z / 2) * 0.5 * math.erfc(z / math.sqrt(2))
    assert cells["eu"][0] == pytest.approx(by_hand, rel=1e-9) and 21.85 < cells["eu"][0] < 21.87
    assert cells["eu"][1] == {"tenant": "default", "model": "alpha", "family": "toxicity", "metric": "toxic_frac",
                              "segment_key": "region", "segment_value": "eu"}  # fmt: skip
    # us: 2 of 20 against its own ceiling 0.05 (it wins over toxic_frac's): S = 20 (0.9 - 0.95) = -1, v + ρ = 130
    z = -1 / math.sqrt(130)
    us = 2 * math.sqrt(125 / 130) * math.exp(z * z / 2) * 0.5 * math.erfc(z / math.sqrt(2))
    assert cells["us"][0] == pytest.approx(us, rel=1e-9)
    # apac and jp share the other cell, labelled as the segment gauges label it: 1 of 10 against 0.2
    gauge = {dict(k[1])["segment_value"] for k in got if k[0] == "holistic_quality_segment"}
    assert set(cells) == {"eu", "us", "(other)"} and "(other)" in gauge
    z = 10 * (0.9 - 0.8) / math.sqrt(10 / 4 + 125)
    assert cells["(other)"][0] == pytest.approx(
        2 * math.sqrt(125 / 127.5) * math.exp(z * z / 2) * 0.5 * math.erfc(z / math.sqrt(2)), rel=1e-9
    )
    assert not [k for k in got if k[0] == "holistic_quality_segment_alert_baseline_evidence"]  # no baselines


def test_evidence_per_named_cell_against_a_pinned_baseline(regions):
    gw = regions
    got = scrape(gw, axis_floors={}, baselines="alpha=beta")
    base = {dict(k[1])["segment_value"]: (v, dict(k[1])) for k, v in got.items()
            if k[0] == "holistic_quality_segment_alert_baseline_evidence"}  # fmt: skip
    # eu (alpha 0.65 of 200, beta 0.9 of 100) and us (0.9 of 20, 1.0 of 40); never (other): alpha's holds apac
    # and jp, beta's jp
    assert set(base) == {"eu", "us"}
    assert base["eu"][0] == pytest.approx(baseline_evidence.evidence(200, 0.65, 100, 0.9), rel=1e-9)
    assert base["us"][0] == pytest.approx(baseline_evidence.evidence(20, 0.9, 40, 1.0), rel=1e-9)
    assert base["eu"][1] == {"tenant": "default", "model": "alpha", "baseline": "beta", "family": "toxicity",
                             "metric": "toxic_frac", "segment_key": "region", "segment_value": "eu"}  # fmt: skip
    assert not [k for k in got if k[0] == "holistic_quality_segment_alert_evidence"]  # no floors


@pytest.mark.parametrize(
    "name",
    ["toxic_frac[region=eu]", "toxicity/toxic_frac[]", "toxicity/toxic_frac[region=]", "toxicity/[region=eu]",
     "toxicity/toxic_frac[re gion=eu]", "a/toxicity/toxic_frac[region=eu]", "toxicity /toxic_frac[region=eu]"],
)  # fmt: skip
def test_a_malformed_cell_floor_names_the_setting_and_the_entry(name):
    with pytest.raises(ConfigError, match=r"HOLISTIC_QUALITY_METRIC_FLOORS: .*family/metric\[key=value\]"):
        load_quality_settings(metric_floors={name: 0.1})


def test_cell_floors_with_any_value_are_accepted():
    floors = {"toxicity/toxic_frac[region=(other)]": 0.1, "brevity/short_outputs[path=/a/b c]": 0.5}
    assert load_quality_settings(metric_floors=floors).metric_floors == floors
