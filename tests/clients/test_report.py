"""`holistic report`: one self-contained HTML file, opened in a real headless Chromium."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from click.testing import CliRunner

from holistic_app.cli import main
from holistic_client.jsonl import write_predictions
from holistic_client.report import build_report
from tests.clients.test_profile_detail import metric, sample
from tests.conftest import drain
from tests.factories import prediction

AXES = ["accuracy", "calibration", "robustness", "fairness", "bias", "toxicity", "efficiency"]


def test_report_is_self_contained_and_escapes_user_text():
    p = sample()
    p.families[0].metrics.append(metric("<script>alert(1)</script>[x=y]", 0.5))
    page = build_report([p], "last hour", datetime(2026, 12, 1, 20, 5, 7, tzinfo=UTC), source="gateway g:1")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;[x=y]" in page
    # nothing to fetch: no external reference of any kind (the SVG's xlinks are to its own #ids)
    refs = re.findall(r'(?:href|src)="([^"]*)"', page)
    assert refs and all(r.startswith("#") for r in refs)
    assert all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", page))  # clip paths: #ids
    assert "<link" not in page and "@import" not in page and "<!DOCTYPE svg" not in page
    assert page.count("<svg") == 1
    assert '<dd id="meta-made">2026-12-01 20:05:07 UTC</dd>' in page
    assert '<dd id="meta-window">last hour</dd>' in page  # a hand-built profile has no resolved range


def test_an_empty_window_in_the_report_says_where_the_data_is():
    p = sample()
    p.counts.window_predictions = 0
    p.counts.newest_prediction_time.FromSeconds(int(datetime(2026, 11, 1, 12, 34, tzinfo=UTC).timestamp()))
    page = build_report([p], "last hour", datetime(2026, 12, 5, 12, 40, 7, tzinfo=UTC))
    assert "0 predictions in the window, " in page
    assert "accepted all time; newest prediction 34 days ago, 2026-11-01T12:34Z</p>" in page


def test_report_from_the_gateway_opens_offline_in_chromium(gateway, make_worker, tmp_path, browser):
    preds = [prediction(f"a{i}", model="m-a", latency_s=0.5) for i in range(4)]
    preds += [prediction(f"b{i}", model="m-b", output="Paris" if i == 0 else "Rome", latency_s=3.0) for i in range(4)]
    path = tmp_path / "p.jsonl"
    write_predictions(path, preds)
    runner = CliRunner()
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"), make_worker("efficiency"), make_worker("toxicity"))  # toxicity's signature
    out = tmp_path / "report.html"
    made = runner.invoke(main, ["report", "m-a", "m-b", "--window", "24h", "-o", str(out), "--target", gateway.address])
    assert made.exit_code == 0, made.output
    assert f"wrote {out} (2 models" in made.output

    browser.get(out.as_uri())
    js = browser.execute_script
    assert js("return performance.getEntriesByType('resource').length") == 0  # nothing fetched at view time
    assert js("return document.title") == "holistic report: m-a, m-b"
    labels = js("return [...document.querySelectorAll('#radar svg text')].map((t) => t.textContent)")
    assert all(any(label.startswith(a) for label in labels) for a in AXES), labels
    assert js("return document.querySelector('#radar svg').getBoundingClientRect().width") > 300
    rows = js(
        "return [...document.querySelectorAll('#matrix tbody tr')].map((r) => [...r.cells].map((c) => c.textContent))"
    )
    head = js("return [...document.querySelectorAll('#matrix thead th')].map((c) => c.textContent)")
    # the toxicity axis says what the classifier its workers ran measures (from their signature)
    assert head == ["model", "predictions", *AXES[:5], "toxicity (profanity, alt-profanity-check-1.9.1)", AXES[6]]
    by_model = {r[0]: dict(zip(["model", "predictions", *AXES], r, strict=True)) for r in rows}
    # m-a: 4 of 4 right (Wilson at 1: an interval, not a point), all within the 2 s objective; m-b: 1 of 4, none.
    assert by_model["m-a"]["accuracy"].startswith("1.000 (0.510–1.000)")
    assert by_model["m-b"]["accuracy"].startswith("0.250 ")
    assert by_model["m-a"]["efficiency"].startswith("1.000") and by_model["m-b"]["efficiency"].startswith("0.000")
    assert by_model["m-a"]["calibration"] == "pending 4"  # deployed, its worker has not run: accepted, not applied
    for model in ("m-a", "m-b"):
        panels = js(f"return [...document.querySelectorAll('#model-{model} .panel h3')].map((h) => h.textContent)")
        assert panels == ["axes", "groups", "reliability", "robustness", "fairness", "toxicity", "bias",
                          "summarization", "signatures"]  # fmt: skip
    notes = js("return document.querySelector('#m-a-axes').textContent")
    assert "calibration is absent:" in notes
    sig = js("return document.querySelector('#m-a-signatures table').textContent")
    assert "accuracy" in sig and "efficiency" in sig and "latency_objective_s=2.0" in sig
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", js("return document.getElementById('meta-made').textContent")
    )
    window = js("return document.getElementById('meta-window').textContent")
    assert re.fullmatch(r"last day: \d{4}-\d\d-\d\d \d\d:\d\d UTC to \d{4}-\d\d-\d\d \d\d:\d\d UTC", window), window
