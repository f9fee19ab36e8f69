"""A family that scores a sample says so beside its value: the dashboard's matrix and the report."""

from __future__ import annotations

from click.testing import CliRunner

from holistic_app.cli import main
from tests.clients.test_dashboard_browser import matrix_cell, wait_for
from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.clients.test_node_client import node, run_node  # noqa: F401 (a fixture)
from tests.conftest import drain
from tests.factories import prediction


def test_dashboard_and_report_say_sampled(make_gateway, make_worker, make_dashboard, browser, tmp_path, monkeypatch):
    gw = make_gateway(families="toxicity")
    client = gw.client()
    client.submit([prediction(f"p{i}", output="thanks!", scenario="chat") for i in range(60)], model="m")
    client.submit([prediction(f"q{i}", output="thanks!", scenario="qa") for i in range(60)], model="m")
    monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", "0.5")
    monkeypatch.setenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES", "qa=0.25")
    drain(make_worker("toxicity"))
    fam = next(f for f in client.get_profile("m").families if f.family == "toxicity")
    assert fam.sample_rate == 0.5 and 0 < fam.count < 120

    browser.get(make_dashboard(gw.address).url + "?window=24h&model=m")
    cell = wait_for(lambda: matrix_cell(browser, "m", "toxicity"), "the toxicity cell")
    assert cell.startswith("1") and f"n={fam.count}" in cell and cell.endswith("sampled 50 %"), cell
    browser.find_element("css selector", "#matrix tr[data-model='m'] a.model").click()
    row = "return document.querySelector('#scenarios tr[data-scenario=\"{}\"] td').textContent"
    assert wait_for(lambda: browser.execute_script(row.format("qa")), "the qa row") == "qa toxicity sampled 25 %"
    assert browser.execute_script(row.format("chat")) == "chat toxicity sampled 50 %"

    out = tmp_path / "report.html"
    made = CliRunner().invoke(main, ["report", "m", "--window", "24h", "-o", str(out), "--target", gw.address])
    assert made.exit_code == 0, made.output
    assert f"toxicity ({fam.count} predictions), sampled 50 %" in out.read_text()
    assert "qa toxicity sampled 25 %" in out.read_text() and "chat toxicity sampled 50 %" in out.read_text()


def sampled_gateway(make_gateway, make_worker, monkeypatch, token: str):
    gw = make_gateway(tokens=token, families="toxicity")
    gw.client(token).submit([prediction(f"p{i}", output="thanks!", scenario=f"s{i % 2}") for i in range(40)], model="m")
    monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", "0.25")
    monkeypatch.setenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES", "s1=0.5")
    drain(make_worker("toxicity"))
    return gw


def test_node_cli_says_sampled(node, make_gateway, make_worker, monkeypatch):  # noqa: F811
    gw = sampled_gateway(make_gateway, make_worker, monkeypatch, NODE_TOKEN)
    shown = run_node(node, "examples/cli.js", "profile", "m", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert "  toxicity     1.000 sampled 25 %\n" in shown.stdout, shown.stdout
    assert "  scenario s0: toxicity sampled 25 %\n  scenario s1: toxicity sampled 50 %\n" in shown.stdout, shown.stdout


def test_go_cli_says_sampled(holistic_go, make_gateway, make_worker, monkeypatch):  # noqa: F811
    gw = sampled_gateway(make_gateway, make_worker, monkeypatch, GO_TOKEN)
    shown = run_go_cli(holistic_go, "profile", "m", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert "  toxicity     1.000 sampled 25 %\n" in shown.stdout, shown.stdout
    assert "  scenario s0: toxicity sampled 25 %\n  scenario s1: toxicity sampled 50 %\n" in shown.stdout, shown.stdout
