"""Evaluations from every client: the same JSON Lines file of evaluation-only predictions, submitted by
the Python CLI, the Node client and the Go client, gives the same client scores, as worked by hand."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
from click.testing import CliRunner

from holistic_app.cli import main
from holistic_client.errors import ClientError
from tests.clients.conftest import LiveWorkers
from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401  (the fixture)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.clients.test_node_client import node, run_node  # noqa: F401  (the fixture)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evaluations.jsonl"
TOKENS = f"{NODE_TOKEN},{GO_TOKEN}"


def evaluations(client, model: str) -> dict[tuple[str, str], tuple[float, int]]:
    deadline = time.monotonic() + 60
    while True:
        try:
            profile = client.get_profile(model)
        except ClientError as err:
            assert err.code == grpc.StatusCode.NOT_FOUND, err
            profile = None
        family = next((f for f in profile.families if f.family == "evaluations"), None) if profile else None
        if family is not None and family.count == 4:
            break
        assert time.monotonic() < deadline, f"{model}: the evaluations were not applied"
        time.sleep(0.1)
    cells = {(s.scenario, m.name): (m.value, m.count) for s in profile.scenarios for m in s.metrics
             if m.family == "evaluations"}  # fmt: skip
    cells.update({("", m.name): (m.value, m.count) for m in family.metrics})
    return cells


# by hand: chat relevance (4 + 2 + 3) / 3, helpfulness 1; qa relevance 5; over the model, relevance is the
# unweighted mean of the two scenarios' means, (3 + 5) / 2
EXPECTED = {("chat", "relevance"): (3.0, 3), ("chat", "helpfulness"): (1.0, 1), ("qa", "relevance"): (5.0, 1),
            ("", "relevance"): (4.0, 4), ("", "helpfulness"): (1.0, 1)}  # fmt: skip


def test_every_client_sends_evaluations(node, holistic_go, make_gateway, settings, redis_server):  # noqa: F811
    gw = make_gateway(tokens=TOKENS, families="accuracy,evaluations")
    workers = LiveWorkers(settings, redis_server, ("accuracy", "evaluations"))
    try:
        cli = CliRunner().invoke(main, ["submit", str(FIXTURE), "--model", "cli-ev", "--target", gw.address,
                                        "--no-progress"], env={"HOLISTIC_TOKEN": NODE_TOKEN})  # fmt: skip
        assert cli.exit_code == 0, cli.output
        from_node = run_node(node, "examples/cli.js", "submit", str(FIXTURE), "--model", "node-ev", target=gw.address)
        assert from_node.returncode == 0, from_node.stdout + from_node.stderr
        from_go = run_go_cli(holistic_go, "submit", str(FIXTURE), "--model", "go-ev", target=gw.address)
        assert from_go.returncode == 0, from_go.stdout + from_go.stderr
        with gw.client(NODE_TOKEN) as client:
            got = {model: evaluations(client, model) for model in ("cli-ev", "node-ev", "go-ev")}
    finally:
        workers.stop()
    assert got == {"cli-ev": EXPECTED, "node-ev": EXPECTED, "go-ev": EXPECTED}
