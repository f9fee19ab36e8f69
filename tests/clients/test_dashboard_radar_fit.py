"""The dashboard's radar fits its labels at the widths people use (issue: at 1400 and 1700 px
"toxicity" and "robustness" were clipped). Measured with Chart.js's own label boxes in Chromium."""

from __future__ import annotations

import pytest

from tests.clients.test_dashboard_browser import wait_for
from tests.conftest import drain
from tests.factories import prediction

# Chart.js's computed boxes of each point label, the chart's size, and the canvas's box against the page's
MEASURE = """
const chart = Chart.getChart(document.getElementById('radar'));
const canvas = chart.canvas.getBoundingClientRect();
const box = chart.canvas.parentElement.getBoundingClientRect();
return {
  labels: chart.scales.r._pointLabelItems.map((it) => [it.left, it.top, it.right, it.bottom]),
  texts: chart.scales.r._pointLabels,
  width: chart.width, height: chart.height,
  canvas: [canvas.left, canvas.top, canvas.right, canvas.bottom],
  box: [box.left, box.top, box.right, box.bottom],
  page: document.documentElement.clientWidth,
};
"""


@pytest.fixture
def dashboard_url(make_gateway, make_worker, make_dashboard):
    gw = make_gateway(families="accuracy,efficiency,toxicity")
    gw.client().submit([prediction(f"p{i}", latency_s=0.5) for i in range(4)], model="m")
    drain(make_worker("accuracy"), make_worker("efficiency"), make_worker("toxicity"))
    return make_dashboard(gw.address).url + "?window=24h&model=m"


@pytest.mark.parametrize("width", [900, 1400, 1700, 2200])
def test_radar_labels_lie_inside_the_chart(dashboard_url, browser, width):
    browser.set_window_size(width, 1400)
    browser.get(dashboard_url)
    loaded = "return window.holistic && window.holistic.state.profiles.size"
    wait_for(lambda: browser.execute_script(loaded), "a profile")
    m = wait_for(lambda: browser.execute_script(MEASURE), "the radar")
    texts = [" ".join(t) if isinstance(t, list) else t for t in m["texts"]]
    assert any(t.startswith("toxicity (profanity") for t in texts) and any("robustness" in t for t in texts), texts
    for text, (left, top, right, bottom) in zip(texts, m["labels"], strict=True):
        assert left >= 0 and top >= 0 and right <= m["width"] and bottom <= m["height"], (text, m)
    canvas_left, _, canvas_right, _ = m["canvas"]
    box_left, _, box_right, _ = m["box"]
    # the canvas is not cut by its box or the page
    assert box_left <= canvas_left and canvas_right <= box_right and canvas_right <= m["page"], m
