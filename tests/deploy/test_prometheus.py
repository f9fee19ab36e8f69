"""The shipped alerting rules: valid for promtool, unit-tested with promtool, and firing in a real
Prometheus that scrapes the quality exporter while the test degrades a model's traffic."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from gateway.quality_exporter import load_quality_settings
from holistic.stats.intervals import wilson
from holistic_app.up import free_address
from tests.conftest import drain
from tests.exporter_thread import ExporterThread
from tests.factories import prediction
from tests.plugins import plugins_site, two_plugins  # noqa: F401  (fixtures)

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "holistic-alerts.yml"


def tool(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed (apt-get install -y prometheus)")
        pytest.skip(f"{name} is not installed (apt-get install -y prometheus)")
    return exe


def test_promtool_checks_the_rules():
    out = subprocess.run([tool("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 14 rules found" in out.stdout


def test_promtool_unit_tests_of_the_rules():
    """deploy/prometheus/holistic-alerts.test.yml: synthetic series for every alert, fired and not."""
    out = subprocess.run(
        [tool("promtool"), "test", "rules", "holistic-alerts.test.yml"], cwd=RULES_DIR, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


class Prometheus:
    """Debian's prometheus with 1 s scrape and evaluation intervals, on a private port and TSDB."""

    def __init__(self, tmp: Path, target: str) -> None:
        rules = yaml.safe_load(RULES.read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                rule["for"] = "0s"  # the durations are promtool's to test; here: fire on the first evaluation
        (tmp / "rules.yml").write_text(yaml.safe_dump(rules))
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(tmp / "rules.yml")],
            "scrape_configs": [{"job_name": "holistic-quality", "static_configs": [{"targets": [target]}]}],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.address = free_address()
        self.log = (tmp / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [tool("prometheus"), f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'tsdb'}",
             f"--web.listen-address={self.address}"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def api(self, path: str, **params: str) -> object:
        url = f"http://{self.address}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=5) as reply:
            body = json.load(reply)
        assert body["status"] == "success", body
        return body["data"]

    def until(self, what: str, fn, timeout_s: float = 120.0):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout_s
        last: object = None
        while time.monotonic() < deadline:
            try:
                last = fn()
            except OSError as exc:  # not listening yet
                last = exc
            else:
                if last:
                    return last
            time.sleep(0.2)
        raise AssertionError(f"{what}: not within {timeout_s} s; last: {last}")

    def value(self, query: str) -> float | None:
        result = self.api("query", query=query)["result"]  # type: ignore[index]
        return float(result[0]["value"][1]) if result else None

    def evaluated_after(self, t: float) -> bool:
        groups = self.api("rules")["groups"]  # type: ignore[index]
        quality = next(g for g in groups if g["name"] == "holistic-quality")
        return all(_rfc3339(r["lastEvaluation"]) > t for r in quality["rules"])

    def firing(self, model: str) -> dict[str, dict]:  # type: ignore[type-arg]
        alerts = self.api("alerts")["alerts"]  # type: ignore[index]
        return {
            a["labels"]["alertname"]: a for a in alerts if a["labels"].get("model") == model and a["state"] == "firing"
        }

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def _rfc3339(text: str) -> float:
    from datetime import datetime

    head, _, frac = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(head + "+00:00").timestamp() + (float("0." + frac) if frac else 0.0)


def test_alerts_fire_in_prometheus_when_a_models_accuracy_drops(make_gateway, make_worker, tmp_path):
    tool("prometheus")
    gw = make_gateway(families=["accuracy"])
    worker = make_worker("accuracy", gw.settings)
    now = time.time()
    model = "m-prom"
    good_before = [prediction(f"old{i}", produced_at_s=now - 20 * 60) for i in range(60)]  # the 15 min before
    good_now = [prediction(f"new{i}", produced_at_s=now - 30) for i in range(60)]
    with gw.client() as client:
        client.submit(good_before, model=model)
        client.submit(good_now, model=model)
        drain(worker)
        quality = load_quality_settings(models=[model], windows=["15m"], refresh_s=0.2, axis_floors={"accuracy": 0.5})
        exporter = ExporterThread(gw.settings, quality)
        prom = Prometheus(tmp_path, f"127.0.0.1:{exporter.port}")
        try:
            score = f'holistic_quality_axis_score{{model="{model}",axis="accuracy",window="15m",period="current"}}'
            prom.until("Prometheus scraped the perfect score", lambda: prom.value(score) == 1.0)
            seen = time.time()
            prom.until("the quality rules evaluated after that", lambda: prom.evaluated_after(seen))
            assert prom.firing(model) == {}
            previous = score.replace('period="current"', 'period="previous"')
            assert prom.value(previous) == 1.0
            assert prom.value(previous.replace("_score", "_samples")) == 60

            # degrade: 140 wrong answers now; the window's accuracy falls to 60 / 200
            wrong = [prediction(f"bad{i}", output="Rome", produced_at_s=time.time() - 10) for i in range(140)]
            client.submit(wrong, model=model)
            drain(worker)
            both = {"HolisticAxisBelowFloor", "HolisticAxisWorseThanPreviousWindow"}
            firing = prom.until("both quality alerts fire", lambda: both <= set(f := prom.firing(model)) and f)
            prom_values = {"previous_lower": prom.value(previous.replace("_score", "_lower"))}
        finally:
            prom.stop()
            exporter.stop()
    below = firing["HolisticAxisBelowFloor"]
    assert below["labels"]["axis"] == "accuracy" and below["labels"]["window"] == "15m"
    assert float(below["value"]) == pytest.approx(60 / 200)
    assert below["annotations"]["summary"] == f"{model}: accuracy is 0.300 over the last 15m, below its floor"
    worse = firing["HolisticAxisWorseThanPreviousWindow"]
    # the accuracy axis's interval is the normal one of the mean of 0/1 matches (sample variance):
    # now 0.3 ± 1.96·√(0.3·0.7/199) = [0.2363, 0.3637]; before, 60 of 60 right: Wilson's [0.9398, 1]
    upper_now = 0.3 + 1.959963984540054 * math.sqrt(0.3 * 0.7 / 199)
    assert float(worse["value"]) == pytest.approx(upper_now, abs=1e-9)
    assert prom_values["previous_lower"] == pytest.approx(wilson(60, 60)[0], abs=1e-12)  # 60 / (60 + z²)


@pytest.mark.usefixtures("two_plugins")
def test_the_floor_alert_fires_on_a_plugin_axis(make_gateway, make_worker, tmp_path):
    """Two plugin families, each its own axis series; only brevity's is under its floor, and fires."""
    tool("prometheus")
    gw = make_gateway(families="hallucination,brevity")
    now = time.time()
    model = "m-plugin"
    # brevity (at most 3 words): 10 short of 50 = 0.2, under 0.9; hallucination: the 40 outputs whose
    # number is in the input are grounded, 40 / 50 = 0.8, over 0.5
    outputs = ["2"] * 10 + ["it has 2 moons now"] * 30 + ["it has 7 moons now"] * 10
    preds = [
        prediction(f"p{i}", input="It has 2 moons", output=out, references=["2"], produced_at_s=now - 30)
        for i, out in enumerate(outputs)
    ]
    with gw.client() as client:
        client.submit(preds, model=model)
        drain(make_worker("hallucination", gw.settings), make_worker("brevity", gw.settings))
    quality = load_quality_settings(
        models=[model], windows=["15m"], refresh_s=0.2, axis_floors={"brevity": 0.9, "hallucination": 0.5}
    )
    exporter = ExporterThread(gw.settings, quality)
    prom = Prometheus(tmp_path, f"127.0.0.1:{exporter.port}")
    try:
        score = f'holistic_quality_axis_score{{model="{model}",period="current",axis="%s"}}'
        prom.until("both plugin axes scraped", lambda: prom.value(score % "brevity") is not None)
        assert prom.value(score % "brevity") == pytest.approx(0.2)
        assert prom.value(score % "hallucination") == pytest.approx(0.8)
        seen = time.time()
        prom.until("the quality rules evaluated after that", lambda: prom.evaluated_after(seen))
        alerts = prom.api("alerts")["alerts"]  # type: ignore[index]
    finally:
        prom.stop()
        exporter.stop()
    below = [a for a in alerts if a["labels"]["alertname"] == "HolisticAxisBelowFloor" and a["state"] == "firing"]
    assert [a["labels"]["axis"] for a in below] == ["brevity"]
    assert float(below[0]["value"]) == pytest.approx(0.2)
    assert below[0]["annotations"]["summary"] == f"{model}: brevity is 0.200 over the last 15m, below its floor"
