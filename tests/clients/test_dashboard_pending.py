"""The dashboard says "pending N" where a family has accepted predictions it has not applied yet."""

from __future__ import annotations

from tests.clients.test_dashboard_browser import matrix_cell, wait_for
from tests.conftest import drain
from tests.factories import prediction


def test_matrix_and_detail_show_pending_until_applied(make_gateway, make_worker, make_dashboard, browser):
    gw = make_gateway(families="accuracy,efficiency")
    client = gw.client()
    client.submit([prediction(f"a{i}", latency_s=0.5) for i in range(3)], model="m")  # no worker runs yet
    browser.get(make_dashboard(gw.address).url + "?model=m")
    wait_for(lambda: browser.execute_script("return window.holistic && window.holistic.state.profiles.size") == 1,
             "the profile on the page")  # fmt: skip
    assert matrix_cell(browser, "m", "predictions") == "0pending 3"
    assert matrix_cell(browser, "m", "accuracy") == "pending 3"
    hint = wait_for(lambda: browser.execute_script("return document.querySelector('#detail p.hint')?.textContent"),
                    "the detail's counts")  # fmt: skip
    assert hint == "m: 0 predictions in the window, 3 accepted all time; pending (accepted, not yet applied): " \
        "accuracy 3, efficiency 3"  # fmt: skip

    drain(make_worker("accuracy"), make_worker("efficiency"))
    wait_for(lambda: matrix_cell(browser, "m", "predictions") == "3", "the applied count, nothing pending")
    assert "pending" not in matrix_cell(browser, "m", "accuracy")
