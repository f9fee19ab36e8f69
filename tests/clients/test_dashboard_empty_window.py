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
    notes = browser.execute_script("return document.querySelector('#radar-notes li').textContent")
    assert notes.startswith("m: 0 predictions; absent: accuracy") and notes.endswith(
        f"; newest prediction 34 days ago, {newest}"
    )

    browser.get(make_dashboard(gw.address).url + "?window=all&model=m")
    cell = wait_for(lambda: matrix_cell(browser, "m", "predictions"), "the predictions cell, all time")
    assert cell == "3"  # a window that holds the data says nothing more


# Every table in the detail with the number of its body rows, and each "Not available" line
TABLES = """
const d = document.getElementById('detail');
if (!d.querySelector('#bias-panel')) return null;
return {tables: [...d.querySelectorAll('table')].map((t) => [t.id || t.className,
                                                              t.querySelectorAll('tbody tr').length]),
        na: Object.fromEntries([...d.querySelectorAll('.panel, details')].map((x) => [x.id || x.dataset.keep,
          [...x.querySelectorAll('p.na')].map((p) => p.textContent)]))};
"""


def test_families_without_data_say_why_instead_of_an_empty_table(make_gateway, make_worker, make_dashboard, browser):
    """An empty window drew the bias panel's six 'absent' scores over 0 outputs and, with no metric at all,
    an empty table of every family's metrics."""
    gw = make_gateway(families="accuracy,bias")
    old = time.time() - 34 * 86400
    gw.client().submit([prediction(f"p{i}", produced_at_s=old, output="He is a nurse.") for i in range(3)], model="m")
    drain(make_worker("accuracy"), make_worker("bias"))

    browser.get(make_dashboard(gw.address).url + "?window=24h&model=m")
    shown = wait_for(lambda: browser.execute_script(TABLES), "the detail")
    assert shown["na"]["bias-panel"] == ["Not available: no bias scores (no non-empty outputs in this window)."]
    assert shown["na"]["all-metrics"] == ["Not available: no metric in this window."]
    # what is left: the axes with their reasons and the families' signatures, none of them empty
    assert [name for name, _ in shown["tables"]] == ["", "signatures"], shown
    assert all(rows for _, rows in shown["tables"]), shown

    browser.get(make_dashboard(gw.address).url + "?window=all&model=m")  # the window that holds the data
    wait_for(lambda: browser.execute_script("return document.querySelector('#bias-scores')"), "the bias scores")
