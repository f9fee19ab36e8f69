"""The noisy-neighbour harness: a gateway process, a worker, a victim tenant measured in this process and
an abusive tenant in another process doing the worst reads and watches it is allowed.

Used by tests/gateway/test_noisy_neighbour.py; its figures are reported in docs/production.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from holistic.profile.windows import resolve
from holistic.tenancy.tenants import hash_token
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic_app.up import free_address, wait_serving
from tests.factories import prediction

ABUSER, VICTIM = "token-of-the-abuser", "token-of-the-victim"
TOKENS = f"abuser:sha256:{hash_token(ABUSER)},victim:sha256:{hash_token(VICTIM)}"
WORST_END_S = 253_402_300_799  # 9999-12-31T23:59:59Z
HEAVY, LIGHT = "heavy", "light"


def retry_delay(exc: grpc.aio.AioRpcError) -> float:
    status = rpc_status.from_call(exc)
    for detail in status.details if status else ():
        info = error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            return info.retry_delay.ToTimedelta().total_seconds()
    return 0.0


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@dataclass
class Phase:
    submit_s: list[float] = field(default_factory=list)
    profile_s: list[float] = field(default_factory=list)
    health: list[int] = field(default_factory=list)


class Service:
    """Gateway and accuracy worker as processes on `redis_url` (production settings otherwise)."""

    def __init__(self, redis_url: str, logs: Path, **env: str) -> None:
        self.address = free_address()
        self.env = dict(
            os.environ,
            REDIS_URL=redis_url,
            HOLISTIC_GATEWAY_ADDRESS=self.address,
            HOLISTIC_TOKENS=TOKENS,
            HOLISTIC_BLOCK_MS="200",
            HOLISTIC_FAMILIES="accuracy",  # the gateway makes its group at start, as `holistic up` does
            PYTHONUNBUFFERED="1",
            **env,
        )
        logs.mkdir(exist_ok=True)
        self.procs = [self._spawn(logs, "gateway"), self._spawn(logs, "worker", "accuracy")]
        self.gateway = self.procs[0]
        wait_serving(self.address)

    def _spawn(self, logs: Path, *args: str) -> subprocess.Popen[bytes]:
        out = open(logs / f"{args[0]}.log", "wb")  # noqa: SIM115
        return subprocess.Popen([sys.executable, "-m", "holistic_app", *args], env=self.env, stdout=out, stderr=out)

    def gateway_peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.gateway.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc status")

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(30)


def seed(address: str) -> int:
    """The abuser's model gets one prediction in every bucket its worst read folds; the victim's, a few."""
    now = time.time()
    worst = resolve(0, WORST_END_S, now, 3 * 86_400, latest_s=now + 300)
    tiers = {"m": 60, "h": 3600, "d": 86_400, "d16": 16 * 86_400, "d256": 256 * 86_400}
    heavy = []
    for i, (tier, index) in enumerate(worst.buckets):
        at = min(index * tiers[tier] + 1, now - 1)  # type: ignore[operator]
        heavy.append(prediction(f"h{i}", output="Paris" if i % 2 else "Rome", latency_s=0.5, produced_at_s=at))
    with grpc.insecure_channel(address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        stub.SubmitPredictions(
            es.SubmitPredictionsRequest(batch_id="seed", model=HEAVY, predictions=heavy), metadata=auth(ABUSER)
        )
        light = [prediction(f"l{i}", latency_s=0.3) for i in range(10)]
        stub.SubmitPredictions(
            es.SubmitPredictionsRequest(batch_id="seed", model=LIGHT, predictions=light), metadata=auth(VICTIM)
        )
        deadline = time.monotonic() + 60  # until the worker applied both
        while time.monotonic() < deadline:
            req = es.GetProfileRequest(model=HEAVY)
            applied = {f.family: f.count for f in stub.GetProfile(req, metadata=auth(ABUSER)).profile.families}
            if applied.get("accuracy") == len(heavy):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the worker did not apply the seed batch")
    return len(worst.buckets)


def victim(address: str, n: int, min_s: float = 0.0) -> Phase:
    """At least n rounds, and for at least min_s, of: submit 10 predictions, then read the profile (all
    time, the default window); health polled meanwhile."""
    phase = Phase()
    done = threading.Event()

    def health() -> None:
        with grpc.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while not done.is_set():
                phase.health.append(stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status)
                done.wait(0.05)

    poller = threading.Thread(target=health, daemon=True)
    poller.start()
    with grpc.insecure_channel(address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        read = es.GetProfileRequest(model=LIGHT)
        started, i = time.monotonic(), 0
        while i < n or time.monotonic() - started < min_s:
            i += 1
            batch = [prediction(f"v{i}-{j}", latency_s=0.3) for j in range(10)]
            request = es.SubmitPredictionsRequest(batch_id=f"v{time.time_ns()}", model=LIGHT, predictions=batch)
            t0 = time.perf_counter()
            stub.SubmitPredictions(request, metadata=auth(VICTIM), timeout=30)
            t1 = time.perf_counter()
            stub.GetProfile(read, metadata=auth(VICTIM), timeout=30)
            t2 = time.perf_counter()
            phase.submit_s.append(t1 - t0)
            phase.profile_s.append(t2 - t1)
    done.set()
    poller.join(10)
    return phase


async def _abuse(address: str, watches: int, readers: int, ready, stop, report) -> None:
    counts = {"reads": 0, "refused": 0, "watch_profiles": 0, "watches_open": 0}
    async with grpc.aio.insecure_channel(address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)

        def worst(k: int) -> es.GetProfileRequest:
            req = es.GetProfileRequest(model=HEAVY)
            req.range.start_time.seconds = k  # a distinct window per caller: nothing is shared
            req.range.end_time.seconds = WORST_END_S
            return req

        async def refused(exc: grpc.aio.AioRpcError) -> None:
            """Ask again as soon as allowed: after the RetryInfo delay when refused over a limit."""
            if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                counts["refused"] += 1
                await asyncio.sleep(retry_delay(exc))

        async def watch(k: int) -> None:
            w = worst(k)
            request = es.WatchProfileRequest(model=HEAVY, range=w.range)
            while not stop.is_set():
                try:
                    first = True
                    async for _ in stub.WatchProfile(request, metadata=auth(ABUSER)):
                        counts["watch_profiles"] += 1
                        if first:
                            counts["watches_open"] += 1
                            first = False
                        if stop.is_set():
                            return
                except grpc.aio.AioRpcError as exc:
                    await refused(exc)

        async def read(k: int) -> None:
            while not stop.is_set():
                try:
                    await stub.GetProfile(worst(1000 + k), metadata=auth(ABUSER))
                    counts["reads"] += 1
                except grpc.aio.AioRpcError as exc:
                    await refused(exc)

        async def submit() -> None:  # every applied batch makes every watch recompute
            i = 0
            while not stop.is_set():
                i += 1
                batch = [prediction(f"a{i}-{j}") for j in range(5)]
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await stub.SubmitPredictions(
                        es.SubmitPredictionsRequest(batch_id=f"a{i}", model=HEAVY, predictions=batch),
                        metadata=auth(ABUSER),
                    )
                await asyncio.sleep(0.05)

        tasks = [asyncio.create_task(watch(k)) for k in range(watches)]
        tasks += [asyncio.create_task(read(k)) for k in range(readers)]
        tasks.append(asyncio.create_task(submit()))
        await asyncio.sleep(1.0)  # watches open, reads in flight
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        report.put(dict(counts))
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def abuse_process(address: str, watches: int, readers: int, ready, stop, report) -> None:
    """The abuser's own client work runs at a lower CPU priority: on a small shared machine the test
    measures how the gateway shares itself, not how the OS shares the cores with the abuser's client."""
    os.nice(10)
    asyncio.run(_abuse(address, watches, readers, ready, stop, report))
