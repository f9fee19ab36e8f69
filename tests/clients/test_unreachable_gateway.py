"""Client commands against a gateway that is not there fail at once, naming the address and the cause,
in the Python, Node and Go CLIs; --wait-for-ready waits for it instead.

Reproduced first: the Python CLI retried 55 s (12 attempts) before its error, the Node CLI ~40 s."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from holistic_app.up import free_address
from tests.clients.test_go_client import holistic_go, run_go_cli  # noqa: F401 (a fixture)
from tests.clients.test_node_client import NODE_DIR, node  # noqa: F401 (a fixture)

# A generous bound that today's retries (40-60 s) exceed; not a timing benchmark.
PROMPT_S = 20.0


def python_cli(*args: str, target: str) -> list[str]:
    return [sys.executable, "-m", "holistic_app", *args, "--target", target]


def node_cli(*args: str, target: str) -> list[str]:
    return ["node", str(NODE_DIR / "examples" / "cli.js"), *args, "--target", target]


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    return done, time.monotonic() - started


def expected(target: str) -> str:
    return f"error: UNAVAILABLE: cannot reach the gateway at {target}: Connection refused (is it running?"


@pytest.mark.parametrize("args", [["profile", "m"], ["models"], ["submit", "--demo", "--no-progress"], ["watch", "m"]])
def test_python_cli_fails_at_once_naming_the_address(args):
    target = free_address()  # nothing listens there
    done, took = timed(python_cli(*args, target=target))
    assert done.returncode == 2 and expected(target) in done.stderr, done.stderr
    assert took < PROMPT_S and "retrying" not in done.stderr


def test_node_cli_fails_at_once_naming_the_address(node):  # noqa: F811
    target = free_address()
    for args in (["profile", "m"], ["models"], ["watch", "m"]):
        done, took = timed(node_cli(*args, target=target))
        assert done.returncode == 2 and expected(target) in done.stderr, done.stderr
        assert done.stderr.endswith("--wait-for-ready waits for it)\n") and took < PROMPT_S


def test_go_cli_fails_at_once_naming_the_address(holistic_go):  # noqa: F811
    target = free_address()
    for args in (["profile", "m"], ["models"], ["watch", "m"]):
        started = time.monotonic()
        done = run_go_cli(holistic_go, *args, target=target)
        assert done.returncode == 2 and expected(target) in done.stderr, done.stderr
        assert time.monotonic() - started < PROMPT_S


@pytest.mark.parametrize("cli", ["python", "node", "go"])
def test_wait_for_ready_waits_for_the_gateway(cli, make_gateway, request):
    target = free_address()
    if cli == "python":
        command = python_cli("models", "--wait-for-ready", target=target)
    elif cli == "node":
        request.getfixturevalue("node")
        command = node_cli("models", "--wait-for-ready", target=target)
    else:
        command = [str(request.getfixturevalue("holistic_go")), "--target", target, "--wait-for-ready", "models"]
    env = dict(os.environ)
    env.pop("HOLISTIC_TOKEN", None)
    started = threading.Timer(2.0, lambda: make_gateway(bind=target))  # up two seconds after the command
    started.start()
    try:
        done, _ = timed(command, env)
    finally:
        started.join()
    assert done.returncode == 0, done.stderr
    assert "cannot reach" not in done.stderr


@pytest.mark.parametrize("cli", ["python", "node", "go"])
def test_a_host_that_accepts_and_never_answers_is_named_within_seconds(cli, request):
    """A black hole (the port accepts, nothing speaks HTTP/2) held each of 12 attempts for 30 s."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    target = f"127.0.0.1:{silent.getsockname()[1]}"
    if cli == "python":
        command = python_cli("models", target=target)
    elif cli == "node":
        request.getfixturevalue("node")
        command = node_cli("models", target=target)
    else:
        command = [str(request.getfixturevalue("holistic_go")), "--target", target, "models"]
    try:
        done, took = timed(command)
    finally:
        silent.close()
    assert done.returncode == 2, done.stderr
    assert f"cannot reach the gateway at {target}: no answer within 5 s" in done.stderr and took < PROMPT_S
