"""The Node and Go clients delete a model and a tenant on a live gateway, through their example CLIs, with an
admin token: nothing of either is left, and without --yes nothing is deleted."""

from __future__ import annotations

from collections.abc import Callable
from subprocess import CompletedProcess

from holistic.tenancy.tenants import hash_token
from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.clients.test_node_client import node, run_node  # noqa: F401 (a fixture)
from tests.deletion import traces_of
from tests.factories import prediction

SUBMITTER, TEAM = "submitter-token", "team-a-token"  # the default tenant's (bare) and team-a's


def deletes_a_model_and_a_tenant(make_gateway, r, admin: str, cli: Callable[..., CompletedProcess[str]]) -> None:
    gw = make_gateway(
        families="accuracy", tokens=f"{SUBMITTER},team-a:sha256:{hash_token(TEAM)}",
        admin_tokens=f"ops:sha256:{hash_token(admin)}",
    )  # fmt: skip
    with gw.client(SUBMITTER) as default, gw.client(TEAM) as team:
        default.submit([prediction("p1"), prediction("p2")], batch_id="b1", model="m")
        team.submit([prediction("p1")], batch_id="b1", model="x")
    refused = cli("delete-model", "m", target=gw.address)
    assert refused.returncode == 2 and "not deleting without --yes" in refused.stderr
    assert traces_of(r, "m") != []
    deleted = cli("delete-model", "m", "--yes", target=gw.address)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith("deleted model m:\n  hl:{q<shard>}:preds\t1\n"), deleted.stdout
    assert "  hl:{m:<model>}:ingest:<batch_id>\t1\n" in deleted.stdout
    assert traces_of(r, "m") == []
    again = cli("delete-model", "m", "--yes", target=gw.address)
    assert again.stdout == "deleted model m: nothing left to remove\n"
    tenant = cli("delete-tenant", "team-a", "--yes", target=gw.address)
    assert tenant.returncode == 0, tenant.stderr
    assert tenant.stdout.startswith("deleted tenant team-a (1 model):\n"), tenant.stdout
    assert traces_of(r, "team-a|x") == []


def test_the_node_client_deletes(node, make_gateway, r):  # noqa: F811
    deletes_a_model_and_a_tenant(
        make_gateway, r, NODE_TOKEN, lambda *a, target: run_node(node, "examples/cli.js", *a, target=target)
    )


def test_the_go_client_deletes(holistic_go, make_gateway, r):  # noqa: F811
    deletes_a_model_and_a_tenant(
        make_gateway, r, GO_TOKEN, lambda *a, target: run_go_cli(holistic_go, *a, target=target)
    )
