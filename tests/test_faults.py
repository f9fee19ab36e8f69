"""SIGKILL the gateway and Redis itself mid-stream: with client retries, nothing accepted is lost and
nothing is counted twice. Redis runs with AOF everysec from its own directory and is restarted there;
the gateway is restarted on its port; workers reconnect by themselves.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from holistic.up import free_address, wait_serving
from holistic_client import Client
from tests.factories import prediction

pytestmark = pytest.mark.slow

FAMILIES = ("accuracy", "efficiency")


class RedisProcess:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.sock = directory / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", str(self.sock), "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--maxmemory-policy", "noeviction"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(400):
            try:
                redis.Redis(unix_socket_path=str(self.sock)).ping()
                return
            except (redis.ConnectionError, FileNotFoundError, redis.BusyLoadingError):
                time.sleep(0.025)
        raise AssertionError("redis-server did not come back")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.restarts += 1


def test_gateway_and_redis_killed_mid_stream(tmp_path):
    rng = random.Random(7)
    store = RedisProcess(tmp_path)
    store.start()
    address = free_address()
    env = dict(os.environ, REDIS_URL=f"unix://{store.sock}", HOLISTIC_GATEWAY_ADDRESS=address,
               HOLISTIC_CLAIM_IDLE_MS="500", HOLISTIC_RECOVER_INTERVAL_S="0.2", HOLISTIC_BLOCK_MS="200",
               HOLISTIC_FAMILIES=",".join(FAMILIES),
               PYTHONUNBUFFERED="1")  # fmt: skip
    logs = tmp_path / "logs"
    logs.mkdir()

    def spawn(*args: str) -> subprocess.Popen[bytes]:
        out = open(logs / f"{args[0]}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        return subprocess.Popen([sys.executable, "-m", "holistic", *args], env=env, stdout=out, stderr=out)

    gateway = spawn("gateway")
    workers = [spawn("worker", f) for f in FAMILIES]
    wait_serving(address)
    accepted: dict[str, int] = {}
    done = threading.Event()
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            now = time.time()
            with Client(address, max_attempts=60, timeout_s=5) as client:
                for b in range(150):
                    preds = [prediction(f"{b}-{i}", latency_s=0.2 + i / 100, produced_at_s=now - b) for i in range(20)]
                    reply = client.submit(preds, batch_id=f"batch-{b}", model="m")
                    accepted[reply.batch_id] = reply.accepted_count
                    time.sleep(0.01)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=submit)
    thread.start()
    gateway_kills = 0
    try:
        while not done.wait(rng.uniform(0.4, 0.9)):
            if rng.random() < 0.5:
                gateway.send_signal(signal.SIGKILL)
                gateway.wait()
                gateway_kills += 1
                time.sleep(rng.uniform(0.0, 0.3))
                gateway = spawn("gateway")
            else:
                store.kill()
                time.sleep(rng.uniform(0.0, 0.3))
                store.start()
        thread.join()
        assert not errors, errors
        wait_serving(address)
        expected = sum(accepted.values())
        deadline = time.monotonic() + 60
        with Client(address) as client:
            while True:
                profile = client.get_profile("m")
                counts = {f.family: f.count for f in profile.families}
                if counts == dict.fromkeys(FAMILIES, expected) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        assert len(accepted) == 150 and expected == 3000
        assert counts == dict.fromkeys(FAMILIES, expected)
        assert profile.counts.accepted_predictions == expected and profile.counts.accepted_batches == 150
        assert gateway_kills >= 2 and store.restarts >= 2, (gateway_kills, store.restarts)
    finally:
        for proc in [gateway, *workers]:
            proc.kill()
            proc.wait()
        if store.proc is not None:
            store.proc.kill()
