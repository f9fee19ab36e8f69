"""The quality exporter: the profile's numbers as Prometheus series, bounded by its settings."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from gateway.quality_exporter import load_quality_settings
from holistic.errors import ConfigError
from holistic.redis.keys import Keys
from holistic_app.up import free_address
from tests.exporter_thread import ExporterThread
from tests.factories import prediction


def labels(**kv: str) -> frozenset[tuple[str, str]]:
    return frozenset(kv.items())


@pytest.fixture
def scored(make_gateway, make_worker):
    """alpha: 7 of 10 right, 8 of 10 within the 2 s objective; beta and gamma: one prediction each."""
    from tests.conftest import drain

    gw = make_gateway(families=["accuracy", "efficiency"])
    now = time.time()
    alpha = [
        prediction(
            f"a{i}", output="Paris" if i < 7 else "Rome", latency_s=1.0 if i < 8 else 3.0, produced_at_s=now - 60
        )
        for i in range(10)
    ]
    with gw.client() as c:
        c.submit(alpha, model="alpha")
        c.submit([prediction("b0", produced_at_s=now)], model="beta")
        c.submit([prediction("g0", produced_at_s=now)], model="gamma")
        drain(make_worker("accuracy", gw.settings), make_worker("efficiency", gw.settings))
        yield gw, c


def test_axis_scores_intervals_counts_and_metrics_equal_the_profile(scored):
    gw, client = scored
    quality = load_quality_settings(models=["*"], max_models=2, windows=["15m", "all"], refresh_s=3600)
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    profile = client.get_profile("alpha", "15m")
    acc = next(d for d in profile.dimensions if d.kind == 1)
    cur = {"tenant": "default", "model": "alpha", "window": "15m", "period": "current"}
    # hand-worked: 7 of 10 exact matches; 8 of 10 within the 2 s objective
    assert got[("holistic_quality_axis_score", labels(axis="accuracy", **cur))] == 0.7
    assert got[("holistic_quality_axis_samples", labels(axis="accuracy", **cur))] == 10
    assert got[("holistic_quality_axis_lower", labels(axis="accuracy", **cur))] == acc.interval.lower
    assert got[("holistic_quality_axis_upper", labels(axis="accuracy", **cur))] == acc.interval.upper
    assert 0 < acc.interval.lower < 0.7 < acc.interval.upper < 1
    assert got[("holistic_quality_axis_score", labels(axis="efficiency", **cur))] == 0.8
    m = {"tenant": "default", "model": "alpha", "family": "accuracy", "window": "15m", "period": "current"}
    assert got[("holistic_quality_metric", labels(metric="exact_match", **m))] == 0.7
    # the family's overall metrics are macro averages over scenarios; their count is the predictions behind them
    assert got[("holistic_quality_metric_samples", labels(metric="exact_match", **m))] == 10
    eff = dict(m, family="efficiency")
    assert got[("holistic_quality_metric", labels(metric="within_latency_objective", **eff))] == 0.8
    assert got[("holistic_quality_window_predictions", labels(**cur))] == 10
    # an absent axis is no series at all, never a 0
    assert not [k for k in got if k[0] == "holistic_quality_axis_score" and ("axis", "toxicity") in k[1]]
    # the 15 minutes before: nothing there, so no axis, and 0 predictions
    prev = dict(cur, period="previous")
    assert got[("holistic_quality_window_predictions", labels(**prev))] == 0
    assert ("holistic_quality_axis_score", labels(axis="accuracy", **prev)) not in got
    # all time has no window before it
    assert ("holistic_quality_window_predictions", labels(**dict(cur, window="all"))) in got
    assert ("holistic_quality_window_predictions", labels(**dict(cur, window="all", period="previous"))) not in got
    # the cap: alpha and beta (sorted), gamma counted as left out
    models = {dict(k[1])["model"] for k in got if k[0] == "holistic_quality_window_predictions"}
    assert models == {"alpha", "beta"}
    assert got[("holistic_quality_models_left_out", frozenset())] == 1
    assert got[("holistic_quality_axis_floor", labels(axis="toxicity"))] == 0.95
    assert got[("holistic_quality_refresh_timestamp_seconds", frozenset())] > 0
    # bounded: only the picked metrics (3 accuracy + 6 efficiency defaults, those present: f1_score is
    # not HELM's for multiple choice, so these scenarios have none)
    names = {dict(k[1])["metric"] for k in got if k[0] == "holistic_quality_metric"}
    assert names == {"exact_match", "quasi_exact_match", "latency_p50", "latency_p99", "within_latency_objective"}


def test_picked_models_and_metrics_only(scored):
    gw, _ = scored
    quality = load_quality_settings(
        models=["gamma", "never-sent"], windows=["1h"], metrics={"accuracy": ["exact_match"]}, previous=False
    )
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    metric_keys = [dict(k[1]) for k in got if k[0] == "holistic_quality_metric"]
    assert metric_keys == [
        {"tenant": "default", "model": "gamma", "family": "accuracy", "metric": "exact_match", "window": "1h",
         "period": "current"}
    ]  # fmt: skip
    assert {dict(k[1])["period"] for k in got if k[0] == "holistic_quality_window_predictions"} == {"current"}


def test_a_tenants_star_reads_only_the_first_names_of_its_index_and_covers_its_named_models(scored, r):
    """ "*" with a cap of 1 reads alpha from the model index (not the whole set), counts beta and gamma
    as left out, and the named entries of the same tenant add nothing (alpha is picked once; a name
    never sent is not a model of the tenant). The index is built from the set where it is missing."""
    gw, _ = scored
    r.delete(Keys().models_index())  # as a gateway from before the index left it
    quality = load_quality_settings(models=["*", "alpha", "never-sent"], max_models=1, windows=["all"])
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    assert {dict(k[1])["model"] for k in got if k[0] == "holistic_quality_window_predictions"} == {"alpha"}
    assert got[("holistic_quality_models_left_out", frozenset())] == 2
    assert r.zcard(Keys().models_index()) == 3


def test_the_command_serves_metrics(scored):
    gw, _ = scored
    address = free_address()
    env = dict(os.environ, REDIS_URL=gw.settings.redis_url, HOLISTIC_QUALITY_ADDRESS=address,
               HOLISTIC_QUALITY_MODELS="alpha", HOLISTIC_QUALITY_WINDOWS="all",
               HOLISTIC_FAMILIES="accuracy")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "holistic_app", "quality-exporter"], env=env)
    try:
        deadline, text = time.monotonic() + 60, ""
        while time.monotonic() < deadline and "holistic_quality_axis_score{" not in text:
            try:
                with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as reply:
                    text = reply.read().decode()
            except OSError:
                time.sleep(0.2)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    line = next(ln for ln in text.splitlines() if ln.startswith("holistic_quality_axis_score{"))
    assert 'model="alpha"' in line and 'axis="accuracy"' in line and line.endswith(" 0.7")


def test_bad_settings_name_the_variable():
    with pytest.raises(ConfigError, match="HOLISTIC_QUALITY_WINDOWS"):
        load_quality_settings(windows=["2h"])
    with pytest.raises(ConfigError, match="HOLISTIC_QUALITY_AXIS_FLOORS"):
        load_quality_settings(axis_floors={"accuracy": 2.0})


def test_a_tenants_models(make_gateway, make_worker):
    """`tenant|*` picks a tenant's models; the series name the tenant and the model as the tenant sees it."""
    from holistic.tenancy.tenants import hash_token
    from tests.conftest import drain

    gw = make_gateway(families=["accuracy"], tokens=f"team-a:sha256:{hash_token('tok-a')},tok-default")
    with gw.client("tok-a") as a, gw.client("tok-default") as d:
        a.submit([prediction("x1"), prediction("x2", output="Rome")], model="shared-name")
        d.submit([prediction("y1")], model="shared-name")
    drain(make_worker("accuracy", gw.settings))
    exporter = ExporterThread(gw.settings, load_quality_settings(models=["team-a|*"], windows=["all"]))
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    scores = {dict(k[1])["tenant"]: v for k, v in got.items() if k[0] == "holistic_quality_axis_score"}
    assert scores == {"team-a": 0.5}  # the default tenant's model of the same name is not picked
    (labels_,) = [dict(k[1]) for k in got if k[0] == "holistic_quality_axis_score"]
    assert labels_["model"] == "shared-name"


def test_alert_evidence_from_the_all_time_profile(scored):
    from gateway.sequential import evidence

    gw, client = scored
    quality = load_quality_settings(
        models=["alpha"], windows=["15m"], refresh_s=3600, axis_floors={"accuracy": 0.9},
        metric_floors='{"exact_match": 0.9, "mmlu/quasi_exact_match": 0.5, "latency_mean": 0.5}',
    )  # fmt: skip
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    acc = next(d for d in client.get_profile("alpha", "all").dimensions if d.kind == 1)
    key = ("holistic_quality_alert_evidence", labels(tenant="default", model="alpha", axis="accuracy"))
    assert (acc.count, acc.score) == (10, 0.7)
    assert got[key] == evidence(10, 0.7, 0.9)  # read from all time, though the exporter's windows are 15m
    assert 1.0 < got[key] < 20  # below the floor, not yet enough to say so
    assert not [k for k in got if k[0] == "holistic_quality_alert_evidence" and ("axis", "efficiency") in k[1]]
    # per scenario metric: mmlu's 7 of 10 exact matches (its main metric) and quasi-exact matches, each
    # against its floor; latency has a unit: no evidence, whatever its floor
    per_metric = {
        dict(k[1])["metric"]: (v, dict(k[1]))
        for k, v in got.items()
        if k[0] == "holistic_quality_metric_alert_evidence"
    }
    assert {m: v for m, (v, _) in per_metric.items()} == {
        "exact_match": evidence(10, 0.7, 0.9), "quasi_exact_match": evidence(10, 0.7, 0.5)
    }  # fmt: skip
    assert per_metric["exact_match"][1] == {
        "tenant": "default", "model": "alpha", "scenario": "mmlu", "family": "accuracy", "metric": "exact_match"
    }  # fmt: skip


def test_evidence_against_a_pinned_baseline_from_both_all_time_profiles(scored):
    from gateway.baseline_evidence import evidence

    gw, client = scored
    quality = load_quality_settings(
        models=["alpha"], windows=["15m"], refresh_s=3600, axis_floors={}, baselines="alpha=beta, gamma=nobody"
    )
    assert quality.baselines == [("default", "alpha", "beta"), ("default", "gamma", "nobody")]
    exporter = ExporterThread(gw.settings, quality)
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    found = {dict(k[1])["axis"]: v for k, v in got.items() if k[0] == "holistic_quality_alert_baseline_evidence"}
    beta = {d.kind: d for d in client.get_profile("beta", "all").dimensions}
    alpha = {d.kind: d for d in client.get_profile("alpha", "all").dimensions}
    assert (alpha[1].count, alpha[1].score, beta[1].count, beta[1].score) == (10, 0.7, 1, 1.0)
    key = (
        "holistic_quality_alert_baseline_evidence",
        labels(tenant="default", model="alpha", baseline="beta", axis="accuracy"),
    )
    assert got[key] == evidence(10, 0.7, 1, 1.0) and got[key] < 1  # one baseline score says little
    # only the axes both score (beta's one prediction has no latency: no efficiency axis); gamma's baseline never
    # sent: no series
    assert set(found) == {"accuracy"}
    assert not [k for k in got if k[0] == "holistic_quality_alert_evidence"]  # no floors, no floor evidence
    # per scenario main metric both have (mmlu's exact_match: alpha 7 of 10, beta 1 of 1), automatically
    per_metric = {k[1]: v for k, v in got.items() if k[0] == "holistic_quality_metric_alert_baseline_evidence"}
    main = labels(tenant="default", model="alpha", baseline="beta", scenario="mmlu", family="accuracy",
                  metric="exact_match")  # fmt: skip
    assert per_metric == {main: evidence(10, 0.7, 1, 1.0)}
    assert not [k for k in got if k[0] == "holistic_quality_metric_alert_evidence"]  # no metric floors


@pytest.mark.parametrize(
    ("value", "says"),
    [('{"": 0.5}', "not `metric`"), ('{"qa/": 0.5}', "not `metric`"), ('{"/em": 0.5}', "not `metric`"),
     ('{" em": 0.5}', "not `metric`"), ('{"em": 1.5}', r"\[0, 1\]"), ('{"em": -0.1}', r"\[0, 1\]"),
     ('{"em": true}', r"\[0, 1\]"), ('{"em": "0.7"}', r"\[0, 1\]"), ('{"em": NaN}', r"\[0, 1\]"),
     ('["em"]', "JSON object"), ("em=0.7", "not a JSON object")],
)  # fmt: skip
def test_a_malformed_metric_floor_names_the_setting_and_the_entry(value, says):
    with pytest.raises(ConfigError, match=f"HOLISTIC_QUALITY_METRIC_FLOORS: .*{says}"):
        load_quality_settings(metric_floors=value)


def test_metric_floors_by_metric_or_scenario_from_the_environment(monkeypatch):
    monkeypatch.setenv("HOLISTIC_QUALITY_METRIC_FLOORS", '{"exact_match": 0.7, "mmlu/f1_score": 1, "toxic_frac": 0}')
    assert load_quality_settings().metric_floors == {"exact_match": 0.7, "mmlu/f1_score": 1.0, "toxic_frac": 0.0}
    monkeypatch.setenv("HOLISTIC_QUALITY_METRIC_FLOORS", "")
    assert load_quality_settings().metric_floors == {}
    monkeypatch.setenv("HOLISTIC_QUALITY_METRIC_FLOORS", "exact_match=0.7")  # not JSON: the setting named
    with pytest.raises(ConfigError, match=r"HOLISTIC_QUALITY_METRIC_FLOORS: .*JSON"):
        load_quality_settings()


@pytest.mark.parametrize("value", ["alpha", "alpha=", "=beta", "alpha=alpha", "a=b,a=c", "a=t|b", "a=b=c"])
def test_a_malformed_baseline_names_the_setting(value):
    with pytest.raises(ConfigError, match="HOLISTIC_QUALITY_BASELINES"):
        load_quality_settings(baselines=value)


def test_a_changed_cell_sends_one_evaluation_event_an_unchanged_one_none(scored, make_worker):
    from tests.conftest import drain
    from tests.otlp_collector import Collector

    gw, client = scored
    collector = Collector()
    settings = gw.settings.model_copy(update={"otlp_eval_endpoint": collector.endpoint})
    quality = load_quality_settings(
        models=["alpha"], windows=["all"], metrics={"accuracy": ["exact_match"]}, axis_floors={"accuracy": 0.75},
        previous=False, refresh_s=3600,
    )  # fmt: skip
    exporter = ExporterThread(settings, quality)  # its first snapshot at start: every cell is new
    try:
        first = {(e.get("holistic.family", ""), e["gen_ai.evaluation.name"]): e for e in collector.events(3)}
        acc = next(d for d in client.get_profile("alpha", "all").dimensions if d.kind == 1)
        assert first[("", "accuracy")] == {
            "gen_ai.evaluation.name": "accuracy",
            "gen_ai.evaluation.score.value": 0.7,
            "gen_ai.evaluation.score.label": "fail",  # below its floor, 0.75
            "gen_ai.evaluation.explanation": f"accuracy axis of alpha over all: 0.7 from 10 predictions, 95 % "
            f"interval [{acc.interval.lower:.4g}, {acc.interval.upper:.4g}]",
            "holistic.model": "alpha",
            "holistic.tenant": "default",
            "holistic.window": "all",
            "holistic.sample_count": 10,
            "holistic.axis": "accuracy",
        }
        assert first[("", "efficiency")]["gen_ai.evaluation.score.value"] == 0.8
        assert "gen_ai.evaluation.score.label" not in first[("", "efficiency")]  # no floor for it
        assert first[("accuracy", "exact_match")]["gen_ai.evaluation.score.value"] == 0.7
        assert "gen_ai.response.id" not in first[("accuracy", "exact_match")]  # a cell scores the model
        assert len(collector.records) == 3

        exporter.refresh()  # nothing applied since: nothing sent
        time.sleep(0.2)
        assert len(collector.records) == 3

        now = time.time()
        client.submit([prediction(f"n{i}", latency_s=1.0, produced_at_s=now) for i in range(10)], model="alpha")
        drain(make_worker("accuracy", gw.settings), make_worker("efficiency", gw.settings))
        exporter.refresh()
        later = {(e.get("holistic.family", ""), e["gen_ai.evaluation.name"]): e for e in collector.events(6)[3:]}
        assert {k: (e["gen_ai.evaluation.score.value"], e["holistic.sample_count"]) for k, e in later.items()} == {
            ("", "accuracy"): (0.85, 20),  # 17 of 20
            ("", "efficiency"): (0.9, 20),  # 18 of 20 within the objective
            ("accuracy", "exact_match"): (0.85, 20),
        }
        assert later[("", "accuracy")]["gen_ai.evaluation.score.label"] == "pass"
    finally:
        exporter.stop()
        collector.stop()


def test_each_segment_value_is_a_series_of_the_main_metric_and_later_values_share_other(make_gateway, make_worker):
    """K = 2: eu (3 of 4 right) and us (1 of 2) have their own series; apac and jp (2 of 2) share `(other)`."""
    from tests.conftest import drain

    gw = make_gateway(families=["accuracy"], segment_keys=["region"], segment_top_k=2)
    preds = [prediction(f"p{i}", output="Rome" if i in (2, 5) else "Paris") for i in range(8)]
    for p, region in zip(preds, ["eu", "eu", "eu", "eu", "us", "us", "apac", "jp"], strict=True):
        p.metadata["region"] = region
    with gw.client() as c:
        c.submit(preds, model="alpha")
        drain(make_worker("accuracy", gw.settings))
        profile = c.get_profile("alpha", "all")
    exporter = ExporterThread(gw.settings, load_quality_settings(models=["alpha"], windows=["all"], refresh_s=3600))
    try:
        got = exporter.scrape()
    finally:
        exporter.stop()
    base = {"tenant": "default", "model": "alpha", "family": "accuracy", "metric": "exact_match",
            "segment_key": "region", "better": "higher", "window": "all", "period": "current"}  # fmt: skip
    series = {dict(k[1])["segment_value"]: v for k, v in got.items() if k[0] == "holistic_quality_segment"}
    assert series == {"eu": 0.75, "us": 0.5, "(other)": 1.0}
    assert got[("holistic_quality_segment_samples", labels(segment_value="eu", **base))] == 4
    eu = next(v.metric for b in profile.segments for v in b.values if v.value == "eu")
    assert got[("holistic_quality_segment_lower", labels(segment_value="eu", **base))] == eu.interval.lower
    assert got[("holistic_quality_segment_upper", labels(segment_value="eu", **base))] == eu.interval.upper
