"""The Node and Go example CLIs show which part of a window is past the tenant's retention (the Python CLI's:
tests/gateway/test_retention.py), and the three CLIs end a watch of a deleted model with an error naming the
deletion (exit 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from holistic.tenancy.tenants import hash_token
from tests.clients.test_go_client import TOKEN as GO_TOKEN
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import (
    NODE_DIR,
    node,  # noqa: F401 (a fixture)
    run_node,
)
from tests.clients.test_node_client import TOKEN as NODE_TOKEN
from tests.conftest import drain
from tests.factories import prediction

ADMIN = "admin-token"
NOTICE = re.compile(r"^  retention: minute buckets before \S+ are past retention \(1 hour\) and gone", re.M)


def gateway_for(make_gateway, tmp_path, token: str):
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nminute = "1h"\n')
    return make_gateway(families="accuracy", tokens=f"team-a:sha256:{hash_token(token)}",
                        admin_tokens=f"ops:sha256:{hash_token(ADMIN)}", retention_file=path)  # fmt: skip


def shows_the_notice(gw, make_worker, token: str, cli: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    with gw.client(token) as team:
        team.submit([prediction("p")], model="gpt")
    drain(make_worker("accuracy"))
    day = cli("profile", "gpt", "--window", "24h", target=gw.address)
    assert day.returncode == 0, day.stderr
    assert NOTICE.search(day.stdout), day.stdout
    hour = cli("profile", "gpt", "--window", "1h", target=gw.address)
    assert hour.returncode == 0 and "retention:" not in hour.stdout, hour.stdout


def a_deleted_models_watch_ends(gw, token: str, argv: list[str], cwd: str | None) -> None:
    with gw.client(token) as team:
        team.submit([prediction("p")], model="gpt")
    env = dict(os.environ, HOLISTIC_TARGET=gw.address, HOLISTIC_TOKEN=token, PYTHONUNBUFFERED="1", COLUMNS="200")
    proc = subprocess.Popen([*argv, "watch", "gpt"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and "gpt" in proc.stdout.readline()  # the first profile
        with gw.client(ADMIN) as admin:
            admin.delete_model("gpt", "team-a")
        began = time.monotonic()
        _, err = proc.communicate(timeout=10)
        assert time.monotonic() - began < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 2 and "was deleted" in err, (proc.returncode, err)


def test_node_cli_shows_the_retention_notice(node, make_gateway, make_worker, tmp_path):  # noqa: F811
    gw = gateway_for(make_gateway, tmp_path, NODE_TOKEN)
    shows_the_notice(gw, make_worker, NODE_TOKEN, lambda *a, target: run_node(node, "examples/cli.js", *a,
                                                                              target=target))  # fmt: skip


def test_go_cli_shows_the_retention_notice(holistic_go, make_gateway, make_worker, tmp_path):  # noqa: F811
    gw = gateway_for(make_gateway, tmp_path, GO_TOKEN)
    shows_the_notice(gw, make_worker, GO_TOKEN, lambda *a, target: run_go_cli(holistic_go, *a, target=target))


def test_node_cli_watch_of_a_deleted_model_ends(node, make_gateway, tmp_path):  # noqa: F811
    gw = gateway_for(make_gateway, tmp_path, NODE_TOKEN)
    a_deleted_models_watch_ends(gw, NODE_TOKEN, [node, "examples/cli.js"], str(NODE_DIR))


def test_go_cli_watch_of_a_deleted_model_ends(holistic_go, make_gateway, tmp_path):  # noqa: F811
    gw = gateway_for(make_gateway, tmp_path, GO_TOKEN)
    a_deleted_models_watch_ends(gw, GO_TOKEN, [str(holistic_go)], None)


def test_python_cli_watch_of_a_deleted_model_ends(make_gateway, tmp_path):
    gw = gateway_for(make_gateway, tmp_path, "python-token")
    a_deleted_models_watch_ends(gw, "python-token", [str(Path(sys.executable).parent / "holistic")], None)
