"""Every command finds what `holistic up` started: its run-state file (holistic/process/run_state.py).

Reproduced first: under a running `holistic up`, `holistic families list` and `holistic
quality-exporter` failed with "REDIS_URL is not set" while `holistic dlq list` worked."""

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
import redis

from holistic.errors import ConfigError
from holistic.process import run_state
from holistic.redis.keys import Keys
from holistic.redis.local import with_local_redis
from holistic.settings import load_settings
from holistic_app.up import free_address

HOLISTIC = [sys.executable, "-m", "holistic_app"]


def gone_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_write_read_stale_and_remove(tmp_path):
    state = run_state.RunState(os.getpid(), time.time(), "unix:///x/redis.sock", "127.0.0.1:7", "http://127.0.0.1:8/")
    written = run_state.write(tmp_path, state)
    assert written == tmp_path / "run.json" and (written.stat().st_mode & 0o777) == 0o600  # may hold a password
    assert run_state.read(tmp_path) == (state, "")
    run_state.remove(tmp_path, pid=os.getpid() + 1)  # another stack's: left alone
    assert written.exists()
    run_state.remove(tmp_path, pid=os.getpid())
    found, why = run_state.read(tmp_path)
    assert found is None and why == f"no `holistic up` runs here ({tmp_path / 'run.json'} does not exist)"

    dead = run_state.RunState(gone_pid(), 1_800_000_000.0, "unix:///x/redis.sock", "127.0.0.1:7")
    run_state.write(tmp_path, dead)
    found, why = run_state.read(tmp_path)
    assert found is None and why.startswith(f"{tmp_path / 'run.json'} is stale: the `holistic up` started 2027")
    assert why.endswith(f"(pid {dead.pid}) is gone")
    settings = load_settings(data_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"no Redis: REDIS_URL is not set and .* is stale: .*set REDIS_URL"):
        with_local_redis(settings)


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HOLISTIC, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_commands_find_the_running_stack_without_redis_url_or_target(tmp_path):
    address = free_address()
    env = dict(os.environ, COLUMNS="200", HOLISTIC_FAMILIES="accuracy,efficiency")
    for name in ("REDIS_URL", "HOLISTIC_TARGET", "HOLISTIC_DATA_DIR", "HOLISTIC_TOKENS", "HOLISTIC_TOKEN"):
        env.pop(name, None)
    up = subprocess.Popen([*HOLISTIC, "up", "--address", address, "--no-dashboard"], cwd=tmp_path, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    state_file = tmp_path / ".holistic" / "run.json"
    try:
        deadline = time.monotonic() + 120
        while not state_file.exists():
            assert up.poll() is None and time.monotonic() < deadline, "holistic up wrote no run.json"
            time.sleep(0.1)
        state = json.loads(state_file.read_text())
        assert state["pid"] == up.pid and state["gateway"] == address
        assert state["redis_url"] == f"unix://{(tmp_path / '.holistic' / 'redis.sock').resolve()}"

        listed = run(["families", "list"], tmp_path, env)
        assert listed.returncode == 0, listed.stderr
        rows = [line for line in listed.stdout.splitlines() if "│ accuracy" in line or "│ efficiency" in line]
        assert len(rows) == 2 and all("│ yes       │ yes      │" in r for r in rows), listed.stdout  # deployed
        assert run(["dlq", "list"], tmp_path, env).returncode == 0
        submitted = run(["submit", "--demo", "--no-progress"], tmp_path, env, timeout=120)  # no --target
        assert submitted.returncode == 0 and "accepted 7,179 predictions" in submitted.stdout, submitted.stderr
        models = run(["models"], tmp_path, env)
        served = sorted(m.decode() for m in redis.Redis.from_url(state["redis_url"]).smembers(Keys("hl").models()))
        assert models.returncode == 0 and served and all(m in models.stdout for m in served), models.stdout

        metrics = free_address()
        exporter = subprocess.Popen([*HOLISTIC, "quality-exporter", "--address", metrics], cwd=tmp_path, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            body = ""
            while "holistic_quality" not in body:
                assert exporter.poll() is None, exporter.stderr.read() if exporter.stderr else ""
                assert time.monotonic() < deadline, "the quality exporter never served"
                try:
                    with urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5) as reply:
                        body = reply.read().decode()
                except OSError:
                    time.sleep(0.2)
        finally:
            exporter.terminate()
            exporter.wait(30)
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
    assert not state_file.exists()  # removed on the way out
    after = run(["dlq", "list"], tmp_path, env)
    assert after.returncode == 2 and "no `holistic up` runs here" in after.stderr and "REDIS_URL" in after.stderr
    listed = run(["families", "list"], tmp_path, env)  # the installed families still show, and why no more
    assert listed.returncode == 0 and "deployed and backlog unknown: no Redis" in " ".join(listed.stderr.split())


def test_the_otlp_receiver_submits_to_the_running_stack_unless_told_otherwise(tmp_path, monkeypatch):
    from holistic_app.integrations_cli import otlp_target

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HOLISTIC_DATA_DIR", raising=False)
    monkeypatch.delenv("HOLISTIC_OTLP_TARGET", raising=False)
    assert otlp_target(None) is None  # nothing runs here: the settings' default
    run_state.write(tmp_path / ".holistic", run_state.RunState(os.getpid(), time.time(), "unix:///x", "127.0.0.1:7"))
    assert otlp_target(None) == "127.0.0.1:7"
    assert otlp_target("10.0.0.1:50051") == "10.0.0.1:50051"  # --target first
    monkeypatch.setenv("HOLISTIC_OTLP_TARGET", "10.0.0.2:50051")
    assert otlp_target(None) is None  # the variable is the settings' to read
