"""The dashboard's empty window says where the data is, in the CLI's and the report's words."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from tests.clients.test_dashboard_browser import matrix_cell, wait_for
from tests.conftest import drain
from tests.factories import prediction


def test_an_empty_window_names_the_newest_prediction(make_gateway, make_worker, make_dashboard, browser):
    gw = make_gateway(families="accuracy")
    old = (int(time.time()) // 60 - 34 * 1440 - 5) * 60  # 34 days and 5 minutes ago, on a minute
    gw.client().submit([prediction(f"p{i}", produced_at_s=old - 120 * i) for i in range(3)], model="m")
    drain(make_worker("accuracy"))
    newest = datetime.fromtimestamp(old, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")

    browser.get(make_dashboard(gw.address).url + "?window=24h&model=m")
    cell = wait_for(lambda: matrix_cell(browser, "m", "predictions"), "the predictions cell")
    assert cell == f"0newest prediction 34 days ago, {newest}", cell
    hint = wait_for(lambda: browser.execute_script("return document.querySelector('#detail p.hint')?.textContent"),
                    "the detail")  # fmt: skip
    assert hint.endswith(f"; newest prediction 34 days ago, {newest}"), hint

    browser.get(make_dashboard(gw.address).url + "?window=all&model=m")
    cell = wait_for(lambda: matrix_cell(browser, "m", "predictions"), "the predictions cell, all time")
    assert cell == "3"  # a window that holds the data says nothing more
