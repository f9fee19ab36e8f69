"""`holistic report`: one self-contained HTML file, opened in a real headless Chromium."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
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
        assert panels == ["axes", "groups", "segments", "reliability", "robustness", "fairness", "toxicity", "bias",
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


# Each text line of the reliability plot's column (its scale in the header, its rows below), as Chromium laid it out
PLOT_LINES = """
return [...document.querySelectorAll('th, td')].filter((c) => /[●│]/.test(c.textContent)).map((c) => {
  const r = document.createRange(); r.selectNodeContents(c);
  const box = r.getBoundingClientRect();
  return [c.tagName, box.left, box.width];
});
"""


def test_the_reliability_plot_is_as_wide_as_its_scale_in_chromium(tmp_path, browser):
    """The report set the scale above the plot in the page's proportional font: 311 px over 321 px of plot."""
    p = sample()
    curve = p.families.add(family="calibration", count=20).reliability_curves.add(scenario="mmlu", exact=True)
    curve.bins.add(lower=0.0, upper=0.5, count=10, mean_confidence=0.3, accuracy=0.2)
    curve.bins.add(lower=0.5, upper=1.0, count=10, mean_confidence=0.8, accuracy=0.9)
    page = tmp_path / "report.html"
    page.write_text(build_report([p], "last hour", datetime(2026, 12, 1, 20, 5, 7, tzinfo=UTC)), encoding="utf-8")
    browser.get(page.as_uri())
    lines = browser.execute_script(PLOT_LINES)
    assert [tag for tag, _, _ in lines] == ["TH", "TD", "TD"]  # the scale, then one row per bin
    (_, left, width), *rows = lines
    assert width > 200  # 41 characters
    for _, row_left, row_width in rows:  # the same 41 monospace columns, from the same left edge
        assert row_left == pytest.approx(left, abs=0.5) and row_width == pytest.approx(width, abs=0.5), lines
