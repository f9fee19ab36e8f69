"""The dashboard's matrix writes an interval as "±" only when it is even about the score, as the CLI does;
otherwise its bounds (the issue: efficiency "0.727 ±0.234" where the interval is 0.434–0.903)."""

from __future__ import annotations

from tests.clients.test_dashboard_browser import wait_for

# util.js's scoreInterval, imported by the page itself, on hand-built dimensions
SHOWN = """
const done = arguments[arguments.length - 1];
import('/static/util.js').then((u) => done([
  u.scoreInterval({interval: {lower: 0.434, upper: 0.903}}, 0.727),
  u.scoreInterval({interval: {lower: 0.6, upper: 0.8}}, 0.7),
  u.scoreInterval({interval: {lower: 0.51, upper: 1}}, 1),
  u.scoreInterval({}, 0.5),
]));
"""


def test_uneven_intervals_show_their_bounds(make_gateway, make_dashboard, browser):
    gw = make_gateway(families="accuracy")
    browser.get(make_dashboard(gw.address).url)
    wait_for(lambda: browser.execute_script("return !!window.holistic"), "the page")
    uneven, even, wilson, none = browser.execute_async_script(SHOWN)
    assert uneven == " (0.434–0.903)"  # 0.293 below, 0.176 above: no half-width describes it
    assert even == " ±0.1"  # 0.7 ± 0.1 (the two sides differ by float rounding only)
    assert wilson == " (0.51–1)"  # 4 of 4 right
    assert none == ""
