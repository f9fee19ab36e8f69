"""A family from outside the project, installed as a contributor would, runs end to end with no edit
to the core or the gateway: tests/plugin_family is its own distribution, registered under the
`holistic.families` entry point and installed here into a throwaway directory with pip."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from holistic.families import registry
from holistic.v1 import profile_pb2 as pp
from holistic_client.radar import radar_data, render
from tests.conftest import drain
from tests.factories import prediction
from tests.otlp_collector import Collector

PLUGIN = Path(__file__).parent / "plugin_family"
PATTERN = r"\d+(?:\.\d+)?"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin built from its pyproject.toml and installed into its own directory (no network:
    hatchling comes from this environment)."""
    site = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(site), str(PLUGIN)],
        check=True, capture_output=True,
    )  # fmt: skip
    assert (site / "holistic_hallucination" / "__init__.py").exists()
    return site


@pytest.fixture
def plugin(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The plugin importable in this process (the gateway threads fold with it) and its children."""
    monkeypatch.syspath_prepend(str(plugin_site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugin_site), os.environ.get("PYTHONPATH", "")]))
    yield plugin_site
    registry._loaded.pop("hallucination", None)
    for name in [m for m in sys.modules if m.startswith("holistic_hallucination")]:
        del sys.modules[name]


def predictions(tag: str) -> list:
    """p1 and p2 state numbers their inputs or references hold; p3 states one they do not; p4 none.
    So grounded_numbers = 2/3 over 3 scored outputs, and one skipped."""
    return [
        prediction(f"{tag}1", input="Paris has 2 airports. How many?", output="2", references=["2"]),
        prediction(f"{tag}2", input="When?", output="It was 1999", references=["1999"]),
        prediction(f"{tag}3", input="How many moons?", output="About 37 of them", references=["95"]),
        prediction(f"{tag}4", input="Capital?", output="Paris", references=["Paris"]),
    ]


def family(profile: pp.Profile, name: str) -> pp.FamilyReport | None:
    return next((f for f in profile.families if f.family == name), None)


def test_an_installed_plugin_scores_end_to_end(plugin, make_gateway, make_worker):
    assert "hallucination" in registry.installed()
    gw = make_gateway(families="accuracy,hallucination")
    workers = [make_worker("accuracy"), make_worker("hallucination")]
    with gw.client() as client:
        client.submit(predictions("a"), batch_id="b1", model="m")
        drain(*workers)
        profile = client.get_profile("m")

    # its axis comes after HELM's seven, named by the family's declaration
    names = [d.axis for d in profile.dimensions]
    assert names == ["accuracy", "calibration", "robustness", "fairness", "bias", "toxicity", "efficiency",
                     "hallucination"]  # fmt: skip
    axis = profile.dimensions[-1]
    assert axis.kind == pp.DIMENSION_KIND_UNSPECIFIED and axis.family == "hallucination"
    assert axis.score == pytest.approx(2 / 3) and axis.count == 3
    assert axis.definition.startswith("Share of outputs whose every number")

    report = family(profile, "hallucination")
    assert report is not None and (report.count, report.skipped) == (4, 1)
    assert [m.name for m in report.metric_metadata] == ["grounded_numbers"]
    # the signature its worker recorded, covering every prediction of the window
    (share,) = report.signatures
    assert share.signature.text == f"hallucination|v:1|min_numbers:1|numbers:{PATTERN}"
    assert (share.count, share.share) == (4, 1.0) and report.signature == share.signature
    assert profile.dimensions[0].score == pytest.approx(0.5)  # accuracy: exact match, p1 and p4 of 4

    axes, (series,) = radar_data([profile])
    assert axes[-1] == "hallucination" and series.values[-1] == pytest.approx(2 / 3)
    assert "hallucination" in render([profile], "svg").decode()  # the label, drawn as text


def test_a_window_that_mixes_two_configurations_says_so(plugin, make_gateway, make_worker):
    """Two replicas of the family configured differently: each signature with its share."""
    gw = make_gateway(families="hallucination")
    strict = make_worker(registry.load_family("hallucination").configured(min_numbers=2))
    with gw.client() as client:
        client.submit(predictions("a"), batch_id="b1", model="m")
        drain(strict)
        plain = make_worker("hallucination")
        client.submit(predictions("b") + predictions("c"), batch_id="b2", model="m")
        drain(plain)
        report = family(client.get_profile("m"), "hallucination")
    assert report is not None
    shares = [(s.signature.options["min_numbers"], s.count, round(s.share, 12)) for s in report.signatures]
    assert shares == [("1", 8, round(8 / 12, 12)), ("2", 4, round(4 / 12, 12))]  # most predictions first
    assert report.signature.options["min_numbers"] == "1"


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value {value!r}")
        time.sleep(0.05)


def test_a_worker_started_later_scores_from_then_on(plugin, make_gateway, make_worker, redis_url):
    """The gateway runs; the family's first worker starts (a real `holistic worker` process that finds
    the plugin by its entry point); batches accepted from then on are its, earlier ones are not."""
    gw = make_gateway(families="accuracy")
    accuracy = make_worker("accuracy")
    with gw.client() as client:
        client.submit(predictions("early"), batch_id="b1", model="m")
        drain(accuracy)
        assert family(client.get_profile("m"), "hallucination") is None  # not deployed yet
        env = {**os.environ, "REDIS_URL": redis_url, "HOLISTIC_BLOCK_MS": "50"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "holistic_app", "worker", "hallucination"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            # the gateway notices the new consumer group by itself (no restart): the family is reported
            wait_for(lambda: family(client.get_profile("m"), "hallucination") is not None, "the family deployed")
            client.submit(predictions("late"), batch_id="b2", model="m")
            drain(accuracy)
            report = wait_for(
                lambda: (f := family(client.get_profile("m"), "hallucination")) is not None and f.count and f,
                "the late batch scored",
            )
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err.decode()
        profile = client.get_profile("m")
    assert report.count == 4  # only the batch accepted after its worker started
    assert next(f for f in profile.families if f.family == "accuracy").count == 8
    assert profile.dimensions[-1].axis == "hallucination" and profile.dimensions[-1].score == pytest.approx(2 / 3)


def test_an_installed_plugin_gets_segments_without_a_line_of_code_for_them(plugin, make_gateway, make_worker):
    """p1, p2 (eu) state numbers they were given: 2 of 2 grounded; p3 (us) does not: 0 of 1; p4 (us) is skipped."""
    from scipy.stats import binomtest

    gw = make_gateway(families="hallucination", segment_keys=["region"])
    preds = predictions("s")
    for p, region in zip(preds, ("eu", "eu", "us", "us"), strict=True):
        p.metadata["region"] = region
    with gw.client() as client:
        client.submit(preds, batch_id="b1", model="m")
        drain(make_worker("hallucination", gw.settings))
        profile = client.get_profile("m")
    (b,) = profile.segments
    assert (b.key, b.family, b.metric) == ("region", "hallucination", "grounded_numbers")
    got = {
        v.value: (v.metric.value, v.metric.count, v.metric.interval.lower, v.metric.interval.upper) for v in b.values
    }
    for value, (k, n) in {"eu": (2, 2), "us": (0, 1)}.items():
        ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert got[value] == pytest.approx((k / n, n, ci.low, ci.high), abs=1e-9), value


def test_an_installed_plugin_sends_its_per_prediction_evaluation_events(plugin, make_gateway, make_worker):
    """The plugin implements the optional prediction_scores and nothing else: a worker sends its events."""
    collector = Collector()
    try:
        gw = make_gateway(families="accuracy,hallucination")
        with gw.client() as client:
            client.submit(predictions("e"), batch_id="b1", model="m")
        settings = gw.settings.model_copy(update={"otlp_eval_endpoint": collector.endpoint,
                                                  "otlp_eval_sample_rate": 1.0})  # fmt: skip
        worker = make_worker("hallucination", settings)
        drain(worker)
        worker.evaluations.close()
        got = {e["gen_ai.response.id"]: e for e in collector.events(3)}
    finally:
        collector.stop()
    assert {pid: (e["gen_ai.evaluation.name"], e["gen_ai.evaluation.score.value"], e["gen_ai.evaluation.score.label"])
            for pid, e in got.items()} == {"e1": ("grounded_numbers", 1.0, "grounded"),
                                           "e2": ("grounded_numbers", 1.0, "grounded"),
                                           "e3": ("grounded_numbers", 0.0, "ungrounded")}  # fmt: skip
    assert got["e1"]["holistic.family"] == "hallucination"
    assert got["e1"]["gen_ai.evaluation.explanation"].startswith("Grounded numbers: ")
