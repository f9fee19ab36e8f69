"""Shared set-up for the benchmark scripts: a private Redis, service processes, sample batches, Redis's
script time per family."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import redis

from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.redis.embedded import EmbeddedRedis
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from holistic.v1.prediction_pb2 import Prediction
from holistic_app.demo import SAMPLE
from holistic_app.up import free_address, wait_serving
from holistic_client.jsonl import read_predictions


def redis_cpu(client: redis.Redis) -> float:
    """Redis's CPU seconds, its forks' included: with AOF on, a rewrite's child (vs_helm's file
    triggers two a run) took ~10 % of Redis's samples on the same cores (perf); INFO counts it under
    *_children once it has exited (0 without persistence)."""
    info = client.info("cpu")
    return sum(float(info[f"used_cpu_{k}"]) for k in ("user", "sys", "user_children", "sys_children"))


@contextmanager
def private_redis(persist: bool = False) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="holistic-bench-") as d:
        server = EmbeddedRedis(Path(d), persist=persist)
        url = server.start()
        try:
            yield url
        finally:
            server.stop()


@contextmanager
def processes(redis_url: str, *commands: list[str], env: dict[str, str] | None = None) -> Iterator[str]:
    """Gateway (first command is assumed to be it) and workers as real processes."""
    with spawned(redis_url, *commands, env=env) as (address, _):
        yield address


@contextmanager
def spawned(
    redis_url: str,
    *commands: list[str],
    env: dict[str, str] | None = None,
    python: Sequence[str] | Callable[[list[str]], Sequence[str]] = (),
) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """processes(), also giving the processes (for their CPU time); `python` goes between the interpreter
    and `-m holistic_app` (e.g. `-m cProfile -o FILE`: a callable gives it per command)."""
    address = free_address()
    child_env = dict(os.environ, REDIS_URL=redis_url, HOLISTIC_GATEWAY_ADDRESS=address, **(env or {}))
    procs = [
        subprocess.Popen(
            [sys.executable, *(python(cmd) if callable(python) else python), "-m", "holistic_app", *cmd],
            env=child_env,
            stderr=subprocess.DEVNULL,
        )
        for cmd in commands
    ]
    try:
        wait_serving(address, timeout_s=120)  # ten processes importing at once on a busy 2-core box
        yield address, procs
    finally:
        stop(procs, 30)


def stop(procs: Sequence[subprocess.Popen], wait_s: float) -> None:
    """SIGTERM every process, then SIGKILL whichever has not exited within wait_s."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(wait_s)
        except subprocess.TimeoutExpired:
            p.kill()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample_predictions(n: int, spread_s: float = 30.0) -> list[Prediction]:
    """Predictions from the bundled sample, repeated with fresh ids up to n, produced over the last
    spread_s seconds, as a batch of live traffic is (the sample itself spans three hours)."""
    base = [line.prediction for line in read_predictions(SAMPLE) if line.prediction is not None]
    newest = time.time()
    out = []
    for i in range(n):
        p = Prediction()
        p.CopyFrom(base[i % len(base)])
        p.id = f"{p.id}#{i}"
        p.model = ""
        p.produced_at.FromNanoseconds(int((newest - spread_s * (n - i) / n) * 1e9))
        out.append(p)
    return out


def batches(preds: Sequence[Prediction], size: int, accept_s: int = 1_800_000_000) -> list[BatchEnvelope]:
    """The predictions as the envelopes a worker reads, `size` each, accepted at `accept_s`."""
    out = []
    for i in range(0, len(preds), size):
        env = BatchEnvelope(model="bench", batch_id=f"b{i}", predictions=preds[i : i + size])
        env.accept_time.FromSeconds(accept_s)
        out.append(env)
    return out


def requests(n_batches: int, batch_size: int, model: str = "bench", tag: str = "") -> list[bytes]:
    preds = sample_predictions(batch_size)
    template = SubmitPredictionsRequest(model=model, predictions=preds)
    out = []
    for i in range(n_batches):
        template.batch_id = f"bench{tag}-{i}"
        out.append(template.SerializeToString(deterministic=True))  # as holistic_client sends it
    return out


def median(values: list[float]) -> float:
    return statistics.median(values)


def now() -> float:
    return time.perf_counter()


# a script's keys name its family: the done bitmap, a statistics tier, an instance-state hash (holistic/redis/keys.py)
_FAMILY_KEY = re.compile(r"\}:(?:done|st|inst|sig):([^:\s]+)")


class ScriptTime:
    """Redis's time in scripts per family, from SLOWLOG (threshold 0: every command), drained as it
    fills; a script whose keys name no family is the gateway's. Slowlog costs Redis a little time."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self.us: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        r.config_set("slowlog-max-len", 100_000)
        r.config_set("slowlog-log-slower-than", 0)
        r.slowlog_reset()

    def drain(self) -> None:
        entries = self.r.execute_command("SLOWLOG", "GET", "-1")
        self.r.slowlog_reset()
        for entry in entries:
            args = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in entry[3]]
            if not args or args[0].upper() not in ("EVALSHA", "EVAL"):
                continue
            m = _FAMILY_KEY.search(" ".join(args[3:]))
            family = m.group(1) if m else "gateway"
            self.us[family] += float(entry[2])
            self.calls[family] += 1
