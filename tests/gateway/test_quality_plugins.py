"""Plugin families in the quality exporter: each plugin axis is its own series, labelled with the axis
name the profile carries; each family exports the metrics it declares; floors take plugin axes."""

from __future__ import annotations

import time

import pytest

from gateway import sequential
from gateway.quality_exporter import load_quality_settings
from holistic.errors import ConfigError
from holistic.families import exported_metrics, registry
from tests.conftest import drain
from tests.exporter_thread import ExporterThread
from tests.factories import prediction
from tests.plugins import plugins_site, two_plugins  # noqa: F401  (fixtures)


def labels(**kv: str) -> frozenset[tuple[str, str]]:
    return frozenset(kv.items())


@pytest.mark.usefixtures("two_plugins")
def test_two_plugin_axes_are_two_series_with_their_declared_metrics(make_gateway, make_worker):
    gw = make_gateway(families="accuracy,hallucination,brevity")
    now = time.time()
    # hallucination: p1, p2 grounded, p3 not, p4 has no number (unscored): 2/3.
    # brevity (at most 3 words): "2", "It was 1999", "Paris" short, "About 37 of them" not: 3/4;
    # words 1 + 3 + 4 + 1 = 9, mean 9/4.
    preds = [
        prediction("p1", input="Paris has 2 airports. How many?", output="2", references=["2"], produced_at_s=now),
        prediction("p2", input="When?", output="It was 1999", references=["1999"], produced_at_s=now),
        prediction("p3", input="How many moons?", output="About 37 of them", references=["95"], produced_at_s=now),
        prediction("p4", input="Capital?", output="Paris", references=["Paris"], produced_at_s=now),
    ]
    with gw.client() as client:
        client.submit(preds, batch_id="b1", model="m")
        drain(make_worker("accuracy", gw.settings), make_worker("hallucination", gw.settings),
              make_worker("brevity", gw.settings))  # fmt: skip
    quality = load_quality_settings(
        models=["m"], windows=["15m"], previous=False, refresh_s=3600,
        axis_floors={"accuracy": 0.5, "hallucination": 0.9, "brevity": 0.5},
        metric_floors={"grounded_numbers": 0.9, "short_outputs": 0.5, "words_mean": 0.5},
    )  # fmt: skip
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    cur = {"tenant": "default", "model": "m", "window": "15m", "period": "current"}
    scores = {dict(k[1])["axis"]: v for k, v in got.items() if k[0] == "holistic_quality_axis_score"}
    assert scores == pytest.approx({"accuracy": 0.5, "hallucination": 2 / 3, "brevity": 3 / 4})
    assert got[("holistic_quality_axis_samples", labels(axis="hallucination", **cur))] == 3
    assert got[("holistic_quality_axis_samples", labels(axis="brevity", **cur))] == 4
    # the families' own exported metrics: hallucination's declared metric by default, brevity's choice
    # (words_total is declared but not exported)
    picked = {
        (dict(k[1])["family"], dict(k[1])["metric"]): v for k, v in got.items() if k[0] == "holistic_quality_metric"
    }
    assert {k: v for k, v in picked.items() if k[0] != "accuracy"} == pytest.approx(
        {("hallucination", "grounded_numbers"): 2 / 3, ("brevity", "short_outputs"): 3 / 4,
         ("brevity", "words_mean"): 9 / 4}
    )  # fmt: skip
    assert {m for f, m in picked if f == "accuracy"} == {"exact_match", "quasi_exact_match"}
    floors = {dict(k[1])["axis"]: v for k, v in got.items() if k[0] == "holistic_quality_axis_floor"}
    assert floors == {"accuracy": 0.5, "hallucination": 0.9, "brevity": 0.5}
    # a plugin's per-scenario share gets metric floor evidence with no declaration (brevity reports no
    # scenarios: nothing for its floors)
    per_metric = {
        (dict(k[1])["scenario"], dict(k[1])["family"], dict(k[1])["metric"]): v
        for k, v in got.items()
        if k[0] == "holistic_quality_metric_alert_evidence"
    }
    assert per_metric == {("mmlu", "hallucination", "grounded_numbers"): sequential.evidence(3, 2 / 3, 0.9)}


@pytest.mark.usefixtures("two_plugins")
def test_a_family_declares_its_exported_metrics():
    assert exported_metrics(registry.load_family("accuracy")) == ("exact_match", "quasi_exact_match", "f1_score")
    assert exported_metrics(registry.load_family("brevity")) == ("short_outputs", "words_mean")
    # none declared, no main metrics: every metric it declares by a plain name
    assert exported_metrics(registry.load_family("hallucination")) == ("grounded_numbers",)
    # none declared: its main metrics
    retrieval = registry.load_family("retrieval")
    assert retrieval.main_metrics and exported_metrics(retrieval) == retrieval.main_metrics


def test_floors_take_any_axis_name_but_not_an_empty_one_or_a_score_outside_0_1():
    assert load_quality_settings(axis_floors={"hallucination": 0.9}).axis_floors == {"hallucination": 0.9}
    with pytest.raises(ConfigError, match=r"HOLISTIC_QUALITY_AXIS_FLOORS: .*axis name"):
        load_quality_settings(axis_floors={" ": 0.5})
    with pytest.raises(ConfigError, match=r"HOLISTIC_QUALITY_AXIS_FLOORS: .*\[0, 1\]"):
        load_quality_settings(axis_floors={"brevity": 1.5})


@pytest.mark.usefixtures("two_plugins")
def test_a_plugin_familys_share_gets_evidence_per_segment_cell_with_no_edit(make_gateway, make_worker):
    """brevity's main metric (short_outputs, a share) per region: eu 1 short output of 4, us 2 of 2, against a
    floor of 0.9; the evidence is the e-process's on each cell's own count and share."""
    gw = make_gateway(families="brevity", segment_keys=["region"])
    outputs = [("eu", "Paris"), ("eu", "About 37 of them"), ("eu", "It was in 1999 I think"),
               ("eu", "Rome is the capital city"), ("us", "2"), ("us", "It was 1999")]  # fmt: skip
    preds = []
    for i, (region, output) in enumerate(outputs):
        p = prediction(f"p{i}", output=output)
        p.metadata["region"] = region
        preds.append(p)
    with gw.client() as client:
        client.submit(preds, batch_id="b1", model="m")
    drain(make_worker("brevity", gw.settings))
    quality = load_quality_settings(models=["m"], windows=["all"], previous=False, refresh_s=3600, axis_floors={},
                                    metric_floors={"short_outputs": 0.9})  # fmt: skip
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    cells = {
        dict(k[1])["segment_value"]: (v, dict(k[1])["family"], dict(k[1])["metric"])
        for k, v in got.items()
        if k[0] == "holistic_quality_segment_alert_evidence"
    }
    assert cells == {
        "eu": (sequential.evidence(4, 0.25, 0.9), "brevity", "short_outputs"),
        "us": (sequential.evidence(2, 1.0, 0.9), "brevity", "short_outputs"),
    }
