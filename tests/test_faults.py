"""SIGKILL the gateway and Redis itself mid-stream: with client retries, nothing accepted is lost and
nothing is counted twice. Redis runs with the AOF from its own directory and is restarted there; the
gateway is restarted on its port; workers reconnect by themselves.

Both durabilities, on the real disk. Redis's everysec alone promises no loss on a Redis process kill
only while the disk keeps up with its once-a-second background fsync: during a stall Redis postpones
write(2) for up to 2 s and still answers. CI's disk stalled once and this test lost 25 acknowledged
batches; since then the gateway holds answers until Redis wrote them (gateway/durability.py), and
the last test here makes the stall certain with strace.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from holistic.queue import envelope
from holistic.redis.keys import Keys
from holistic_app.up import free_address, wait_port, wait_serving
from holistic_client import Client
from tests.conftest import start_redis
from tests.factories import prediction

pytestmark = pytest.mark.slow

FAMILIES = ("accuracy", "efficiency")


class RedisProcess:
    def __init__(self, directory: Path, fsync: str) -> None:
        self.dir = directory
        self.fsync = fsync
        self.sock = directory / "redis.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", str(self.sock), "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", self.fsync, "--save", "", "--maxmemory-policy", "noeviction"],
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


@pytest.mark.timeout(600)  # kills and restarts on a loaded 2-core machine: 230 s seen; 300 is too close
@pytest.mark.parametrize("durability", ["everysec", "strict"])
def test_gateway_and_redis_killed_mid_stream(durability, tmp_path):
    rng = random.Random(7)
    store = RedisProcess(tmp_path, "everysec" if durability == "everysec" else "always")
    store.start()
    address = free_address()
    env = dict(os.environ, REDIS_URL=f"unix://{store.sock}", HOLISTIC_GATEWAY_ADDRESS=address,
               HOLISTIC_DURABILITY=durability,
               HOLISTIC_CLAIM_IDLE_MS="500", HOLISTIC_RECOVER_INTERVAL_S="0.2", HOLISTIC_BLOCK_MS="200",
               HOLISTIC_FAMILIES=",".join(FAMILIES),
               PYTHONUNBUFFERED="1")  # fmt: skip
    logs = tmp_path / "logs"
    logs.mkdir()

    def spawn(*args: str) -> subprocess.Popen[bytes]:
        out = open(logs / f"{args[0]}-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        return subprocess.Popen([sys.executable, "-m", "holistic_app", *args], env=env, stdout=out, stderr=out)

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
                # the next kill falls on a started gateway: on a slow machine, kills every 0.4-0.9 s of
                # gateways that take seconds to import left none up long enough for the client's retries
                wait_port(address, 60)
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
        dead = [log.read_text()[-3000:] for log in sorted(logs.glob("worker-*")) if "Traceback" in log.read_text()]
        assert all(w.poll() is None for w in workers) and not dead, f"a worker died:\n{''.join(dead)}"
        assert counts == dict.fromkeys(FAMILIES, expected)
        assert profile.counts.accepted_predictions == expected and profile.counts.accepted_batches == 150
        assert gateway_kills >= 2 and store.restarts >= 2, (gateway_kills, store.restarts)
    finally:
        for proc in [gateway, *workers]:
            proc.kill()
            proc.wait()
        if store.proc is not None:
            store.proc.kill()


def test_everysec_answers_survive_an_fsync_stall_and_a_redis_kill(make_gateway, tmp_path):
    """The case that lost 25 batches in CI, made certain: strace delays each of Redis's background
    fsyncs by 2.5 s, so Redis postpones its AOF writes while still answering; Redis is then SIGKILLed.
    Every batch the gateway acknowledged must be in the restarted Redis (AofBarrier held the answers
    until Redis wrote them); without the barrier hundreds of acknowledged batches are lost here."""
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI"):
            pytest.fail("strace is not installed (apt-get install -y strace; ./dev setup does it)")
        pytest.skip("strace is not installed")
    probe_run = subprocess.run([strace, "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True, text=True)
    if probe_run.returncode != 0:  # a laptop container without ptrace; CI must be able to run it
        why = f"strace cannot trace here: {probe_run.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(f"{why} (CI must allow ptrace, e.g. docker run --cap-add SYS_PTRACE)")
        pytest.skip(why)
    aof = ("--appendonly", "yes", "--appendfsync", "everysec")
    # the bio thread's first two fdatasyncs run normally (start-up), every later one sleeps 2.5 s first
    stall = [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=fdatasync",
             "-e", "inject=fdatasync:delay_enter=2500000:when=3+"]  # fmt: skip
    traced, sock = start_redis(tmp_path, *aof, wrapper=stall)
    restarted: subprocess.Popen[bytes] | None = None
    try:
        probe = redis.Redis(unix_socket_path=sock)
        pid = int(probe.info("server")["process_id"])
        probe.close()
        gw = make_gateway(redis_url=f"unix://{sock}", backlog_max_batches=1_000_000)
        acked: dict[str, int] = {}
        stop = threading.Event()
        errors: list[BaseException] = []

        def submit(worker: int) -> None:
            try:
                with gw.client(max_attempts=40, timeout_s=10) as c:
                    b = 0
                    while not stop.is_set():
                        batch_id = f"w{worker}-b{b}"
                        preds = [prediction(f"{batch_id}-{i}") for i in range(5)]
                        acked[batch_id] = c.submit(preds, batch_id=batch_id, model="m").sequence
                        b += 1
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=submit, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        watcher = redis.Redis(unix_socket_path=sock)
        deadline = time.monotonic() + 60
        while True:  # start-up syncs, then stalls of 2.5 s each: kill Redis while one is under way
            stalled = watcher.info("persistence")
            if stalled["aof_pending_bio_fsync"] == 1 and len(acked) >= 20:
                break
            assert time.monotonic() < deadline and not errors, ("no stall seen", stalled, len(acked), errors)
            time.sleep(0.05)
        watcher.close()
        os.kill(pid, signal.SIGKILL)
        traced.wait(timeout=10)
        before_restart = len(acked)
        restarted, _ = start_redis(tmp_path, *aof)
        deadline = time.monotonic() + 60
        while len(acked) <= before_restart + 4:  # the clients' retries go through once Redis is back
            assert time.monotonic() < deadline and not errors, (len(acked), before_restart, errors)
            time.sleep(0.05)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        assert stalled["aof_pending_bio_fsync"] == 1, "no fsync was in progress: the stall did not happen"
        assert before_restart >= 20 and len(acked) > before_restart, (before_restart, len(acked))
        r = redis.Redis(unix_socket_path=sock)
        keys = Keys("hl")
        stream = r.xrange(keys.stream_for(0))
        in_stream: dict[str, set[int]] = {}  # a batch can be written twice (a retry after a crash), one sequence
        for eid, fields in stream:
            in_stream.setdefault(envelope.parse(eid, fields).envelope().batch_id, set()).add(int(fields[b"s"]))
        missing = [b for b in acked if b not in in_stream]
        assert not missing, f"{len(missing)} of {len(acked)} acknowledged batches lost: {missing[:5]}"
        states = {b: r.hget(keys.ingest("m", b), "state") for b in acked}
        assert set(states.values()) == {b"queued"}
        assert {b: in_stream[b] for b in acked} == {b: {seq} for b, seq in acked.items()}  # the sequences answered
        assert int(r.hget(keys.meta("m"), "accepted_batches")) == len(acked)
    finally:
        for proc in (traced, restarted):
            if proc is not None:
                proc.kill()
                proc.wait()
