"""One supervisor for `holistic up`'s stack and `holistic gateway --processes N` (holistic/process/supervisor.py):
a child that dies is restarted, stopping ends every child, one that ignores SIGTERM is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from holistic.process.supervisor import Child, Supervisor
from holistic_app.up import free_address, wait_serving
from tests.clients.test_dashboard_browser import wait_for

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]
STUBBORN = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(120)"]  # fmt: skip


def test_a_dead_child_is_restarted_and_stop_ends_them_all(tmp_path):
    env = dict(os.environ)
    sup = Supervisor([Child("a", SLEEPER, env), Child("b", STUBBORN, env, tmp_path / "b.log")], grace_s=1.0)
    sup.start()
    a, b = sup.children
    try:
        first = a.proc.pid
        a.proc.kill()
        a.proc.wait()
        sup.supervise_once()
        assert a.restarts == 1 and a.proc.pid != first and a.proc.poll() is None
        assert b.restarts == 0
        wait_for(lambda: "ready" in (tmp_path / "b.log").read_text(), "the stubborn child's handler")
    finally:
        started = time.monotonic()
        sup.stop()
    assert a.proc.returncode == -signal.SIGTERM  # stopped by SIGTERM
    assert b.proc.returncode == -signal.SIGKILL and time.monotonic() - started >= 1.0  # killed after its grace
    sup.supervise_once()
    assert a.restarts == 1  # a stopped supervisor restarts nothing


def children_of(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_gateway_processes_restart_and_stop_together(redis_url):
    address = free_address()
    env = dict(os.environ, REDIS_URL=redis_url, HOLISTIC_FAMILIES="accuracy")
    parent = subprocess.Popen([sys.executable, "-m", "holistic_app", "gateway", "--address", address,
                               "--processes", "2"], env=env)  # fmt: skip
    try:
        wait_serving(address, timeout_s=60)
        pids = wait_for(lambda: len(children_of(parent.pid)) == 2 and children_of(parent.pid), "two gateways")
        os.kill(pids[0], signal.SIGKILL)
        again = wait_for(lambda: (c := children_of(parent.pid)) and len(c) == 2 and pids[0] not in c and c,
                           "the killed gateway restarted")  # fmt: skip
        assert pids[1] in again
        wait_serving(address, timeout_s=60)
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=60) == 0
        for pid in again:
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
