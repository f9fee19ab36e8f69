"""The dashboard in a real headless Chromium (Debian's, through chromedriver): what a person sees."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

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
    # 4 of 4: Wilson's interval is 0.51–1, uneven about 1; it shows its bounds, never "1 ±0.245"
    assert matrix_cell(browser, "m-a", "accuracy").startswith("1 (0.51–1)n=4"), matrix_cell(browser, "m-a", "accuracy")
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
    # Families not deployed: each panel says so with the profile's own reason.
    assert "Not available: no toxicity scores (no toxicity metric service runs in this deployment)" in detail
    assert "Not available: no reliability curve in this profile (no calibration metric service runs" in detail
    assert "Not available: no per-group breakdown (no fairness metric service runs" in detail
    assert "Not available: no summarization report (the summarization family is not deployed)" in detail

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
    # the gateway's CompareProfiles: each cell's test, Holm-adjusted, and its verdict have their columns (empty
    # p here: nothing to test against an empty day), and the decision is said in a line
    heads = browser.execute_script("return [...document.querySelectorAll('#compare [data-model=\"m-a\"] th')]"
                                   ".map((t) => t.textContent)")  # fmt: skip
    assert heads[:7] == ["", "before", "now", "change", "p (Holm)", "verdict", "why"]
    box = browser.find_element("css selector", "#compare [data-model='m-a']")
    assert box.get_attribute("data-decision") == "not-enough-data" and "not enough data to decide" in box.text
    row = box.find_element("css selector", "tr[data-name='accuracy']")
    assert row.get_attribute("data-verdict") == "one-sided"

    # Window selector: all time has no comparison; the page reconnects and shows the same models.
    browser.find_element("css selector", "#window option[value='all']").click()
    wait_for(lambda: browser.execute_script("return window.holistic.state.profiles.size") == 3, "all-time profiles")
    assert "Pick a window" in browser.find_element("id", "compare").text

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    client.close()


PANEL_FAMILIES = ("accuracy", "calibration", "robustness", "fairness", "summarization", "toxicity", "bias")


def js(driver, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def text_of(driver, css: str) -> str:
    return driver.find_element("css selector", css).text


def value_of(driver, css: str) -> float:
    """The exact number a cell or tile holds (data-value), as the page received it."""
    return float(driver.find_element("css selector", css).get_attribute("data-value"))


def reliability_points(driver) -> dict[str, Any]:
    return js(driver, "const c = document.getElementById('reliability'); const sets = Chart.getChart(c).data.datasets;"
                      "const xy = (d) => d.data.map(p => [p.x, p.y]);"
                      "return {scenario: c.dataset.scenario, points: xy(sets[0]), diagonal: xy(sets[1])};")  # fmt: skip


def test_detail_panels_read_each_familys_own_fields(make_gateway, settings, redis_server, make_dashboard, browser):
    from holistic.classifiers.runtime import model_for
    from holistic.families.registry import load_family
    from tests.clients.conftest import LiveWorkers
    from tests.clients.family_batch import family_batch

    gw = make_gateway(
        tokens=TOKEN,
        families=",".join(PANEL_FAMILIES),
        fold_families={"fairness": load_family("fairness").configured(min_group_count=3)},
    )
    lexical = load_family("summarization").configured(semantic="off")
    workers = LiveWorkers(settings, redis_server, tuple(lexical if f == "summarization" else f for f in PANEL_FAMILIES))
    client = gw.client(TOKEN)
    try:
        batch = family_batch()  # 43 predictions; tests/clients/family_batch.py says how each is built
        client.submit(batch, model="m-full")
        wait_for(lambda: applied(client, "m-full", len(batch)), "every family applied m-full")
        profile = client.get_profile("m-full", "24h")
        fam = {f.family: f for f in profile.families}
        metric = {(f.family, m.name): m.value for f in profile.families for m in f.metrics}

        browser.get(make_dashboard(gw.address, TOKEN).url + "?window=24h&detail=m-full")
        wait_for(lambda: js(browser, "return document.getElementById('reliability')"), "the reliability diagram")

        # Reliability: one curve per scenario, boolq first. boolq has 6 distinct confidences: min(10, 6) = 6
        # equal-mass bins of one prediction each; mmlu 20 distinct: 10 bins of 2.
        shown = reliability_points(browser)
        curves = {c.scenario: c for c in fam["calibration"].reliability_curves}
        assert shown["scenario"] == "boolq" and len(shown["points"]) == 6 == len(curves["boolq"].bins)
        assert shown["diagonal"] == [[0, 0], [1, 1]]
        browser.find_element("css selector", "#reliability-scenario option[value='mmlu']").click()
        wait_for(lambda: reliability_points(browser)["scenario"] == "mmlu", "the mmlu diagram")
        points = reliability_points(browser)["points"]
        assert points == [[b.mean_confidence, b.accuracy] for b in curves["mmlu"].bins] and len(points) == 10
        # First bin: confidences 0.10 and 0.14 (q00, q01, both right); second: 0.18, 0.22 (q02 right, q03 wrong).
        assert points[0][0] == pytest.approx(0.12) and points[0][1] == 1.0
        assert points[1][0] == pytest.approx(0.20) and points[1][1] == 0.5
        assert "in 10 equal-mass bins; ece_10_bin" in text_of(browser, "#reliability-panel")
        assert "(exact)" in text_of(browser, "#reliability-panel")

        # Groups: dialect sae = 10/10 right, aae = 5/10 (q01, q05, q09, q13, q17): gap 0.5, ratio 0.5, aae worst.
        dialect = "#groups-panel .group[data-key='dialect']"
        worst = browser.find_elements("css selector", f"{dialect} tr.worst")
        assert [w.get_attribute("data-value") for w in worst] == ["aae"] and worst[0].text.endswith("worst")
        assert value_of(browser, f"{dialect} tr[data-value='aae'] td[data-value]") == 0.5
        assert value_of(browser, f"{dialect} tr[data-value='sae'] td[data-value]") == 1.0
        assert "max gap 0.5 (best sae, worst aae), worst/best 0.5" in text_of(browser, dialect)
        # region: us 19 predictions (15 right), uk 1 (< 3: too few, so no gap).
        region = "#groups-panel .group[data-key='region']"
        assert "too few (< 3)" in text_of(browser, f"{region} tr.too-few[data-value='uk']")
        assert value_of(browser, "#groups-panel tr[data-value='us'] td[data-value]") == pytest.approx(15 / 19)
        assert "only us has enough predictions: no gap" in text_of(browser, region)

        # Worst case per perturbation: q04 right, q04~typos wrong; q06 and q06~typos right: before 1,
        # perturbed 0.5, worst 0.5. Fairness: the same with q00~dialect (wrong) and q02~dialect (right).
        for panel, pert in (("robustness", "typos"), ("fairness", "dialect")):
            cells = [float(c.get_attribute("data-value")) for c in browser.find_elements(
                "css selector", f"#{panel}-panel tr[data-perturbation='{pert}'] td[data-value]")]  # fmt: skip
            assert cells == [1.0, 0.5, 0.5]
        assert "worst_group[dialect=aae] 0.5) = 0.5" in text_of(browser, "#fairness-panel .axis-parts")

        # Toxicity: s03, s04 and s10~dialect score >= 0.5 of 43 non-empty outputs: toxic_frac = 3/43.
        tox = "#toxicity-panel"
        assert value_of(browser, f"{tox} .tile[data-metric='toxic_frac']") == metric[("toxicity", "toxic_frac")]
        assert metric[("toxicity", "toxic_frac")] == 3 / 43
        for name in ("expected_max_toxicity", "max_toxicity_probability", "toxicity_mean"):
            assert value_of(browser, f"{tox} .tile[data-metric='{name}']") == metric[("toxicity", name)]
        profanity = value_of(browser, f"{tox} tr[data-label='profanity'] td[data-value]")
        assert profanity == metric[("toxicity", "profanity_mean")]
        sha = model_for(load_family("toxicity").config).sha256
        assert fam["toxicity"].signature.model_sha256 == fam["bias"].signature.model_sha256 == sha
        for panel in ("toxicity", "bias"):
            assert browser.find_element("css selector", f"#{panel}-panel [data-sha256]").text == sha

        # Bias: gender words she, she, her, sister (female) and he (male): P = (0.8, 0.2), representation
        # TV = ½(0.3 + 0.3) = 0.3; nurse co-occurs only with female words and engineer only with male: each
        # word's TV is 0.5, mean 0.5. No race word: both race scores absent.
        rep = "bias_metric:mode=representation,demographic_category="
        assoc = "bias_metric:mode=associations,demographic_category=gender,target_category=profession"
        gender = value_of(browser, f"#bias-scores tr[data-metric='{rep}gender'] td[data-value]")
        assert gender == metric[("bias", f"{rep}gender")] == pytest.approx(0.3)
        assert value_of(browser, f"#bias-scores tr[data-metric='{assoc}'] td[data-value]") == 0.5
        assert "absent" in text_of(browser, f"#bias-scores tr[data-metric='{rep}race']")
        # Toxic rate per dialect: aae has 13 outputs (10 mmlu, s01, s03, s04), 2 toxic; sae 14, none.
        aae = "#bias-panel .group[data-key='dialect'] tr.worst[data-value='aae']"
        assert value_of(browser, f"{aae} td[data-value]") == metric[("bias", "toxic_rate[dialect=aae]")] == 2 / 13
        assert value_of(browser, "#bias-panel .group[data-key='dialect'] .gap") == 2 / 13
        gap = metric[("bias", "counterfactual_toxicity_gap")]
        assert value_of(browser, "#counterfactual tr[data-metric='counterfactual_toxicity_gap'] td[data-value]") == gap
        assert "3 pairs" in text_of(browser, "#counterfactual")  # q00, q02 and s10 with their ~dialect variants

        # Summarization: the family's numbers; semantic similarity absent with the worker's reason.
        for name in ("rouge_2", "bleu", "chrf", "coverage", "density", "compression"):
            shown = value_of(browser, f"#summarization tr[data-metric='{name}'] td[data-value]")
            assert shown == metric[("summarization", name)]
        assert "not available: the worker runs with HOLISTIC_SUMMARIZATION_SEMANTIC=off" in text_of(
            browser, "#summarization tr[data-metric='semantic_similarity_source']")  # fmt: skip

        # A live update re-renders the detail; the picked scenario stays picked.
        client.submit([prediction("other-1")], model="m-other")
        wait_for(lambda: js(browser, "return window.holistic.state.profiles.size") == 2, "m-other on the page")
        assert reliability_points(browser)["scenario"] == "mmlu"
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        client.close()
        workers.stop()


def test_the_toxicity_axis_says_what_it_measures(make_gateway, settings, redis_server, make_dashboard, browser):
    from tests.clients.conftest import LiveWorkers

    gw = make_gateway(tokens=TOKEN)  # every family deployed, as `holistic up` runs them: toxicity is profanity
    live = LiveWorkers(settings, redis_server, ("accuracy", "efficiency", "toxicity"))  # its signature: its workers'
    try:
        client = gw.client(TOKEN)
        client.submit([prediction(f"t{i}", latency_s=0.5) for i in range(2)], model="m-t")
        wait_for(lambda: all(f.count == 2 for f in client.get_profile("m-t").families if f.family in
                             ("accuracy", "efficiency", "toxicity")), "m-t applied")  # fmt: skip
        browser.get(make_dashboard(gw.address, TOKEN).url + "?window=24h&model=m-t")
        wait_for(lambda: browser.execute_script("return window.holistic && window.holistic.state.profiles.size") == 1,
                 "the profile on the page")  # fmt: skip
        shown = "toxicity (profanity, alt-profanity-check-1.9.1)"
        header = wait_for(lambda: browser.execute_script(
            "const th = document.querySelector(`#matrix th[data-key='toxicity']`); return th && th.textContent;"
        ), "the matrix")  # fmt: skip
        assert header == shown
        labels = browser.execute_script(
            "const c = Chart.getChart(document.getElementById('radar'));"
            "return c.data.labels.map((l, i) => c.options.scales.r.pointLabels.callback(l, i));"
        )
        # wrapped into lines Chart.js fits inside the canvas: at spaces, then after hyphens
        assert labels[5] == ["toxicity", "(profanity, alt-", "profanity-check-", "1.9.1)"] and labels[0] == ["accuracy"]
    finally:
        live.stop()
