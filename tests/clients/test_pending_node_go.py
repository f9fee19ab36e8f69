"""The Node and Go example CLIs print what each family has accepted but not applied yet."""

from __future__ import annotations

from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.clients.test_node_client import node, run_node  # noqa: F401 (a fixture)
from tests.factories import prediction

WANT = "  pending: accuracy 3, efficiency 3\n"


def submitted(make_gateway, token: str):
    gw = make_gateway(tokens=token, families="accuracy,efficiency")
    gw.client(token).submit([prediction(f"p{i}") for i in range(3)], model="m")  # no worker runs
    return gw


def test_node_cli_profile_shows_pending(node, make_gateway):  # noqa: F811
    gw = submitted(make_gateway, NODE_TOKEN)
    shown = run_node(node, "examples/cli.js", "profile", "m", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("m: 0 predictions (all)\n" + WANT), shown.stdout
    assert "pending: 3 accepted predictions not yet applied by the accuracy family" in shown.stdout


def test_go_cli_profile_shows_pending(holistic_go, make_gateway):  # noqa: F811
    gw = submitted(make_gateway, GO_TOKEN)
    shown = run_go_cli(holistic_go, "profile", "m", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert WANT in shown.stdout, shown.stdout
    assert "pending: 3 accepted predictions not yet applied by the accuracy family" in shown.stdout
