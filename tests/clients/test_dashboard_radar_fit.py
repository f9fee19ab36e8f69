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
  scale: [chart.scales.r.left, chart.scales.r.top, chart.scales.r.right, chart.scales.r.bottom],
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


# The profile on the page with three plugin axes beside HELM's seven, one of them a 48-character word
LONG_AXES = """
const p = structuredClone(window.holistic.state.profiles.get('m'));
p.dimensions.push({axis: 'a very long plugin axis name (with a unit)', score: 0.4},
                  {axis: 'another_plugin_axis_whose_name_never_ends_at_all', score: 0.6},
                  {axis: 'hallucination', score: 0.6});
window.holistic.radar.show([p]);
"""


@pytest.mark.parametrize(
    ("width", "long_axes"),
    [(400, False), (900, False), (1400, False), (1700, False), (2200, False), (400, True), (1400, True), (1700, True)],
)
def test_radar_labels_lie_inside_the_chart(dashboard_url, browser, width, long_axes):
    """400 px: one column, the circle shrunk past Chart.js's own limit (half its radius) for ten long names."""
    browser.set_window_size(width, 1400)
    browser.get(dashboard_url)
    loaded = "return window.holistic && window.holistic.state.profiles.size"
    wait_for(lambda: browser.execute_script(loaded), "a profile")
    if long_axes:
        browser.execute_script(LONG_AXES)
    m = wait_for(lambda: browser.execute_script(MEASURE), "the radar")
    texts = [" ".join(t) if isinstance(t, list) else t for t in m["texts"]]
    assert any(t.startswith("toxicity (profanity") for t in texts) and any("robustness" in t for t in texts), texts
    assert len(texts) == (10 if long_axes else 7)
    left_, top_, right_, bottom_ = m["scale"]  # the radar's own box, above the legend
    for text, (left, top, right, bottom) in zip(texts, m["labels"], strict=True):
        assert left >= 0 and top >= 0 and right <= m["width"] and bottom <= m["height"], (text, m)
        assert left >= left_ and top >= top_ and right <= right_ and bottom <= bottom_, (text, m)
    canvas_left, _, canvas_right, _ = m["canvas"]
    box_left, _, box_right, _ = m["box"]
    # the canvas is not cut by its box or the page
    assert box_left <= canvas_left and canvas_right <= box_right and canvas_right <= m["page"], m
