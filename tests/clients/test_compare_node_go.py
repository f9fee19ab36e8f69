"""`compare` from every client: the Python, Node and Go command lines ask the gateway's CompareProfiles
the same questions and exit alike (1 worse, 3 not enough data to decide, 0 pass, 2 errors)."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from holistic_app.cli import main
from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.clients.test_node_client import node, run_node  # noqa: F401 (a fixture)
from tests.conftest import drain
from tests.factories import classified

CASES = {  # arguments -> the exit status every CLI must give
    ("a", "b", "--fail-on", "accuracy"): 1,  # b wrong on a third, a on a tenth: significantly worse
    ("b", "a", "--fail-on", "accuracy"): 0,  # the other way round: better, so the gate passes
    ("a", "b", "--fail-on", "accuracy", "--margin", "0.5"): 0,  # worse, but not beyond the margin
    ("a", "b", "--fail-on", "toxicity"): 3,  # not deployed: no value on either side, not enough data
    ("a", "b", "--fail-on", "toxicity", "--allow-empty"): 0,
    ("a", "b", "--window", "all", "--fail-on", "accuracy/classification_macro_f1"): 3,  # one bucket: no bootstrap
    ("a", "b"): 0,  # no --fail-on: not a gate
    ("never", "--fail-on", "accuracy"): 2,  # NOT_FOUND
}


def test_every_cli_compares_alike(node, holistic_go, make_gateway, make_worker):  # noqa: F811
    gw = make_gateway(tokens=f"{NODE_TOKEN},{GO_TOKEN}", families="accuracy")  # bare tokens: one tenant
    now = time.time()
    with gw.client(NODE_TOKEN) as client:
        client.submit(classified("a", 400, 10, now), model="a")
        client.submit(classified("b", 400, 3, now), model="b")
    drain(make_worker("accuracy"))
    runner = CliRunner()
    for args, status in CASES.items():
        window = [] if "--window" in args else ["--window", "1h"]
        every = ["compare", *args, *window, "--target", gw.address]
        python = runner.invoke(main, [*every, "--token", NODE_TOKEN])
        nodejs = run_node(node, "examples/cli.js", *every[:-2], target=gw.address)
        go = run_go_cli(holistic_go, *every[:-2], target=gw.address)
        got = (python.exit_code, nodejs.returncode, go.returncode)
        assert got == (status, status, status), (args, got, python.output, nodejs.stderr, go.stderr)

    # the same answer in each client's JSON: the decision, and the cells with their tests
    args = ["compare", "a", "b", "--window", "1h", "--fail-on", "accuracy", "--json"]
    py = json.loads(runner.invoke(main, [*args, "--target", gw.address, "--token", NODE_TOKEN]).output.splitlines()[0])
    js = json.loads(run_node(node, "examples/cli.js", *args, target=gw.address).stdout)
    gojson = json.loads(run_go_cli(holistic_go, *args, target=gw.address).stdout)
    assert py["decision"] == "worse" and js["decision"] == gojson["decision"] == "DECISION_WORSE"
    assert js["worse"] == gojson["worse"] == py["regressions"] == ["accuracy"]
    py_cells = {c["name"]: (c["p"], c["method"]) for c in py["changes"]}
    for reply in (js, gojson):
        assert {c["name"]: (c.get("p"), c.get("test", "")) for c in reply["cells"]} == py_cells
    # the margin test's p beside p: the same values in each JSON, and shown in each text output
    py_margin = {c["name"]: c["p_margin"] for c in py["changes"] if c["p_margin"] is not None}
    assert py_margin["accuracy"] < 0.05
    for reply in (js, gojson):
        assert {c["name"]: c["pMargin"] for c in reply["cells"] if "pMargin" in c} == py_margin
        judged = {c["name"]: c["pMarginAdjusted"] for c in reply["cells"] if "pMarginAdjusted" in c}
        assert list(judged) == ["accuracy"]  # adjusted over the judged cells only
    text = ["compare", "a", "b", "--window", "1h", "--fail-on", "accuracy", "--margin", "0.05"]
    shown = [run_node(node, "examples/cli.js", *text, target=gw.address).stdout,
             run_go_cli(holistic_go, *text, target=gw.address).stdout]  # fmt: skip
    for out in shown:
        line = next(s for s in out.splitlines() if s.strip().startswith("accuracy "))
        assert "; margin 0.05: p " in line and ", adjusted " in line.split("; margin")[1], line
    assert "p margin" in runner.invoke(main, [*text, "--target", gw.address, "--token", NODE_TOKEN]).output
