"""`holistic up` starts the dashboard as one of its children and prints its URL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from holistic_app.cli import main
from holistic_app.up import free_address


@pytest.mark.slow
def test_up_serves_the_dashboard_and_prints_its_url(tmp_path):
    address, dashboard = free_address(), free_address()
    env = dict(os.environ, HOLISTIC_TOKENS="up-token", COLUMNS="200")
    env.pop("REDIS_URL", None)
    env.pop("HOLISTIC_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "holistic_app", "up", "--address", address, "--dashboard-address", dashboard,
         "--data-dir", str(tmp_path)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        seen = []
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while not any("dashboard:" in line for line in seen):
            assert time.monotonic() < deadline and proc.poll() is None, "".join(seen)
            seen.append(proc.stdout.readline())
        assert f"http://{dashboard}/" in "".join(seen)
        # The dashboard child reads the gateway with the first of HOLISTIC_TOKENS.
        body = None
        while body is None:
            try:
                with urllib.request.urlopen(f"http://{dashboard}/api/models", timeout=5) as reply:
                    body = json.loads(reply.read())
            except OSError:
                assert time.monotonic() < deadline, "the dashboard did not answer"
                time.sleep(0.2)
        assert body == {"models": []}
        with urllib.request.urlopen(f"http://{dashboard}/", timeout=5) as page:
            assert '<canvas id="radar"' in page.read().decode()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_compose_runs_the_dashboard_against_the_gateway():
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    service = compose["services"]["dashboard"]
    assert service["command"] == ["dashboard", "--address", "0.0.0.0:8765", "--target", "gateway:50051"]
    assert "gateway" in service["depends_on"]
    assert service["ports"] == ["127.0.0.1:${HOLISTIC_DASHBOARD_PORT:-8765}:8765"]  # loopback only, port settable
    assert service["environment"]["HOLISTIC_TOKEN"] == "${HOLISTIC_DASHBOARD_TOKEN:-}"
    assert CliRunner().invoke(main, [*service["command"], "--help"]).exit_code == 0


def test_the_image_carries_the_dashboard_package():
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text()
    assert "COPY clients/web/holistic_dashboard ./clients/web/holistic_dashboard" in dockerfile
