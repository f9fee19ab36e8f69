"""Segments where people read them: `holistic profile`, the report, `holistic compare`'s cells, the dashboard."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from holistic.compare.profiles import compare
from holistic.v1 import profile_pb2 as pp
from holistic_app.cli import main
from holistic_client.report import build_report
from tests.clients.conftest import LiveWorkers
from tests.clients.test_dashboard_browser import wait_for
from tests.conftest import drain
from tests.factories import prediction

SEGMENTS = {"segment_keys": ["region"], "segment_top_k": 1}


def graded(pid: str, correct: bool, region: str):
    p = prediction(pid, output="Paris" if correct else "Rome", latency_s=1.0)
    p.metadata["region"] = region
    return p


# K = 1: eu is admitted first (3 of 4 right); us and apac are `other` (1 of 3 right).
PREDICTIONS = [graded("a", True, "eu"), graded("b", True, "eu"), graded("c", False, "eu"), graded("d", True, "eu"),
               graded("e", False, "us"), graded("f", True, "apac"), graded("g", False, "us")]  # fmt: skip


def cell(value: float, n: int, lower: float, upper: float) -> pp.Metric:
    m = pp.Metric(name="exact_match", family="accuracy", value=value, count=n)
    m.interval.CopyFrom(pp.Interval(lower=lower, upper=upper, level=0.95, method="wilson"))
    return m


def segmented(eu: pp.Metric, other: pp.Metric) -> pp.Profile:
    p = pp.Profile(model="m")
    p.dimensions.add(kind=pp.DIMENSION_KIND_ACCURACY, score=0.6, count=7)
    b = p.segments.add(key="region", family="accuracy", metric="exact_match")
    b.values.add(value="eu", metric=eu)
    b.values.add(value="other", other=True, metric=other)
    return p


def test_the_cli_profile_and_its_segments_section_show_each_value(make_gateway, make_worker):
    gw = make_gateway(**SEGMENTS)
    with gw.client() as c:
        c.submit(PREDICTIONS[:1], batch_id="b0", model="m")
        drain(make_worker("accuracy", gw.settings))
        c.submit(PREDICTIONS[1:], batch_id="b1", model="m")
        drain(make_worker("accuracy", gw.settings))
    runner = CliRunner()
    shown = runner.invoke(main, ["profile", "m", "--target", gw.address], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    segment = shown.output.split("segment region")[1]
    rows = [line for line in segment.splitlines() if "exact_match" in line]
    assert [r.split()[1] for r in rows[:2]] == ["eu", "other"]
    assert "0.75" in rows[0] and " 4 " in rows[0] and "0.3333" in rows[1] and " 3 " in rows[1]
    section = runner.invoke(main, ["profile", "m", "--section", "segments", "--target", gw.address])
    assert section.exit_code == 0 and "segment region" in section.output


def test_the_report_has_the_segments_panel():
    page = build_report([segmented(cell(0.75, 4, 0.3, 0.95), cell(1 / 3, 3, 0.06, 0.79))], "last hour",
                        datetime(2026, 12, 5, 12, 0, tzinfo=UTC))  # fmt: skip
    panel = page.split('id="m-segments"')[1].split("</div>")[0]
    assert "segment region" in panel and "eu" in panel and "other" in panel and "0.3333" in panel


def test_compare_tests_each_segment_cell_like_any_metric():
    before = segmented(cell(0.9, 400, 0.87, 0.93), cell(0.5, 100, 0.40, 0.60))
    after = segmented(cell(0.6, 400, 0.55, 0.65), cell(0.52, 100, 0.42, 0.62))
    changes = {c.name: c for c in compare(after, before)}
    eu, other = changes["accuracy/exact_match[region=eu]"], changes["accuracy/exact_match[region=(other)]"]
    assert (eu.kind, eu.better, eu.matters, eu.delta) == ("segment", False, True, pytest.approx(-0.3))
    assert eu.p is not None and eu.p < 1e-6 and eu.p_holm is not None
    assert (other.better, other.matters) == (True, False) and other.p is not None and other.p > 0.5


def test_the_dashboard_draws_the_segments_panel(make_gateway, make_settings, redis_server, make_dashboard, browser):
    gw = make_gateway(families="accuracy,efficiency", **SEGMENTS)
    workers = LiveWorkers(gw.settings, redis_server, ("accuracy", "efficiency"))
    try:
        with gw.client() as c:
            c.submit(PREDICTIONS[:1], batch_id="b0", model="m")
            wait_for(lambda: c.get_profile("m").segments, "the first batch applied")
            c.submit(PREDICTIONS[1:], batch_id="b1", model="m")
            wait_for(lambda: all(f.count == 7 for f in c.get_profile("m").families), "every prediction applied")
        browser.get(make_dashboard(gw.address).url + "?window=24h&detail=m")
        table = "#segments-panel .segment[data-key='region']"
        wait_for(lambda: browser.find_elements("css selector", table), "the segments panel")
        rows = browser.find_elements("css selector", f"{table} tr[data-family='accuracy']")
        assert [r.get_attribute("data-value") for r in rows] == ["eu", None]
        assert rows[1].get_attribute("class") == "other" and rows[1].text.startswith("other")
        value = browser.find_element(
            "css selector", f"{table} tr[data-value='eu'][data-family='accuracy'] td[data-value]"
        )
        assert float(value.get_attribute("data-value")) == 0.75
        assert browser.find_elements("css selector", f"{table} tr[data-family='efficiency']")
    finally:
        workers.stop()
