"""The dashboard in a real headless Chromium (Debian's, through chromedriver): what a person sees."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.factories import prediction

TOKEN = "browser-token"
AXES = ["accuracy", "calibration", "robustness", "fairness", "bias", "toxicity", "efficiency"]


def wait_for(check: Callable[[], Any], what: str, timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value {value!r}")
        time.sleep(0.1)


def applied(client, model: str, n: int) -> bool:
    p = client.get_profile(model)
    return bool(p.families) and all(f.count == n for f in p.families)


def matrix_cell(driver, model: str, col: str) -> str:
    return driver.execute_script(
        "const c = document.querySelector(`#matrix tr[data-model='${arguments[0]}'] td[data-col='${arguments[1]}']`);"
        "return c ? c.textContent : null;",
        model,
        col,
    )


def test_page_shows_the_radar_and_updates_live(make_gateway, live_workers, make_dashboard, browser):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    client = gw.client(TOKEN)
    # m-a: 4 right of 4, latencies 0.5 s (within the 2 s objective); m-b: 1 right of 4, 3 s;
    # m-c: 2 right of 4, no timing (efficiency absent).
    client.submit([prediction(f"a{i}", latency_s=0.5) for i in range(4)], model="m-a")
    client.submit([prediction(f"b{i}", output="Paris" if i == 0 else "Rome", latency_s=3.0) for i in range(4)],
                  model="m-b")  # fmt: skip
    client.submit([prediction(f"c{i}", output="Paris" if i < 2 else "Lyon") for i in range(4)], model="m-c")
    for m in ("m-a", "m-b", "m-c"):
        wait_for(lambda m=m: applied(client, m, 4), f"{m} applied")

    url = make_dashboard(gw.address, TOKEN).url
    browser.get(url + "?window=24h&model=m-a&model=m-c")
    wait_for(lambda: browser.execute_script("return window.holistic && window.holistic.state.profiles.size") == 3,
             "three profiles on the page")  # fmt: skip
    assert browser.find_element("id", "status").text == "live"

    # The radar: the seven axes, one dataset per selected model, absent scores null (never 0).
    chart = browser.execute_script(
        "const c = Chart.getChart(document.getElementById('radar'));"
        "return {labels: c.data.labels, sets: c.data.datasets.map(d => [d.label, d.data, d.spanGaps])};"
    )
    assert chart["labels"] == AXES
    assert [s[0] for s in chart["sets"]] == ["m-a", "m-c"]
    a_data, c_data = chart["sets"][0][1], chart["sets"][1][1]
    assert a_data == [1.0, None, None, None, None, None, 1.0]
    assert c_data == [0.5, None, None, None, None, None, None]  # m-c has no latency: efficiency absent
    assert chart["sets"][0][2] is False  # the outline breaks at a null instead of bridging it
    no_data = browser.execute_script("return window.holistic.radar.noData")
    assert no_data == [False, True, True, True, True, True, False]  # efficiency: m-a has it

    # Selecting another model adds its polygon.
    browser.find_element("css selector", "#models input[value='m-b']").click()
    assert browser.execute_script("return document.getElementById('radar').dataset.models") == "m-a,m-b,m-c"

    # The matrix: every model, values with their counts; sortable.
    assert matrix_cell(browser, "m-b", "accuracy").startswith("0.25")  # 1 of 4
    assert "n=4" in matrix_cell(browser, "m-b", "accuracy")
    assert matrix_cell(browser, "m-c", "efficiency") == "—"
    browser.find_element("css selector", "#matrix th[data-key='accuracy']").click()
    rows = "return [...document.querySelectorAll('#matrix tbody tr')].map(r => r.dataset.model)"
    order = browser.execute_script(rows)
    assert order == ["m-a", "m-c", "m-b"]  # 1.0, 0.5, 0.25: the first click sorts best first

    # Detail of m-a: scenarios, percentiles, signatures, and honest placeholders.
    browser.find_element("css selector", "#matrix tr[data-model='m-a'] a.model").click()
    detail = browser.find_element("id", "detail").text
    assert "mmlu" in detail and "multiple_choice" in detail
    assert browser.find_element("css selector", "#percentiles tr[data-quantity='latency']").text.startswith("latency")
    assert "accuracy|v:" in browser.find_element("css selector", "#signatures tr[data-family='accuracy']").text
    assert "Not available yet: no toxicity report" in detail and "Not available yet: no reliability bins" in detail

    # Live: a batch submitted now shows up without a reload.
    browser.execute_script("window.__sameDocument = 42")
    updates = int(browser.execute_script("return document.body.dataset.updates"))
    client.submit([prediction(f"a-late{i}", output="Rome", latency_s=0.5) for i in range(4)], model="m-a")
    wait_for(lambda: matrix_cell(browser, "m-a", "predictions") == "8", "m-a's new predictions on the page")
    assert browser.execute_script("return window.__sameDocument") == 42  # not reloaded
    assert int(browser.execute_script("return document.body.dataset.updates")) > updates
    assert matrix_cell(browser, "m-a", "accuracy").startswith("0.5")  # 4 of 8
    wait_for(lambda: browser.execute_script("return Chart.getChart(document.getElementById('radar'))"
                                            ".data.datasets[0].data[0]") == 0.5, "the radar redrawn")  # fmt: skip

    # The comparison with the day before: accuracy appeared, which matters.
    wait_for(lambda: browser.find_elements("css selector", "#compare .compare-model[data-model='m-a'] tr.matters"),
             "highlighted changes")  # fmt: skip
    assert "data appeared" in browser.find_element("css selector", "#compare [data-model='m-a']").text

    # Window selector: all time has no comparison; the page reconnects and shows the same models.
    browser.find_element("css selector", "#window option[value='all']").click()
    wait_for(lambda: browser.execute_script("return window.holistic.state.profiles.size") == 3, "all-time profiles")
    assert "Pick a window" in browser.find_element("id", "compare").text

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    client.close()
