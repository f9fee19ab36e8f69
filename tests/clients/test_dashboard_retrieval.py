"""A plugin family on the dashboard with no change to it: the retrieval family's scenario (task,
main metric, its metrics and the accuracy it feeds) in the generic tables, in headless Chromium."""

from __future__ import annotations

import pytest

from tests.clients.conftest import LiveWorkers
from tests.clients.test_dashboard_browser import TOKEN, applied, wait_for
from tests.metric_services.retrieval.support import ranking_prediction


@pytest.fixture
def retrieval_workers(settings, redis_server):
    workers = LiveWorkers(settings, redis_server, ("accuracy", "retrieval"))
    yield workers
    workers.stop()


def test_ranking_scenario_in_the_generic_tables(make_gateway, retrieval_workers, make_dashboard, browser):
    gw = make_gateway(tokens=TOKEN, families="accuracy,retrieval")
    client = gw.client(TOKEN)
    # RR@10: q0 finds b at rank 1, q1 at rank 2: (1 + 1/2) / 2 = 0.75
    client.submit(
        [
            ranking_prediction("q0", scenario="kb", scores={"a": 1.0, "b": 2.0}, rels={"b": 1}),
            ranking_prediction("q1", scenario="kb", scores={"a": 3.0, "b": 2.0}, rels={"b": 1}),
        ],
        model="m-r",
    )
    wait_for(lambda: applied(client, "m-r", 2), "m-r applied")
    browser.get(make_dashboard(gw.address, TOKEN).url + "?window=24h&model=m-r")
    wait_for(lambda: browser.execute_script("return window.holistic && window.holistic.state.profiles.size") == 1,
             "the profile on the page")  # fmt: skip
    browser.find_element("css selector", "#matrix tr[data-model='m-r'] a.model").click()
    row = wait_for(lambda: browser.find_elements("css selector", "#scenarios tr[data-scenario='kb']"), "kb's row")
    cells = [c.text for c in row[0].find_elements("css selector", "td")]
    assert cells[:4] == ["kb", "ranking", "RR@10", "2"]
    heads = [c.text for c in browser.find_elements("css selector", "#scenarios thead th")]
    values = dict(zip(heads, cells, strict=True))
    assert values["accuracy"] == "0.75" and values["RR@10"] == "0.75" and values["Success@1"] == "0.5"
    assert "retrieval|v:1" in browser.find_element("css selector", "#signatures tr[data-family='retrieval']").text
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    client.close()
