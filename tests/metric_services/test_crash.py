"""Workers SIGKILLed at random points, a poison batch, client retries: every count stays exact.

Worker processes (two per family) die by injected faults before apply and between apply and ack,
by a poison batch that kills whoever takes it, and by SIGKILLs from outside at random moments.
A supervisor respawns them. Afterwards each family has applied every accepted prediction exactly
once and the poison batch sits in the dead-letter stream, once per family. Robustness keeps
per-instance state (an original and its variants join across batches): its metrics must equal those
of one crash-free worker fed the same batches.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.v1 import prediction_pb2 as pb
from tests.conftest import drain
from tests.factories import prediction

pytestmark = pytest.mark.slow

FAMILIES = ("accuracy", "efficiency", "robustness")
MODELS = ("m-a", "m-b", "m-c")


def spawn(family: str, env: dict[str, str], log_dir: Path, n: int) -> subprocess.Popen[bytes]:
    log = open(log_dir / f"{family}-{n}.log", "wb")  # noqa: SIM115
    return subprocess.Popen([sys.executable, "-m", "holistic_app", "worker", family], env=env, stdout=log, stderr=log)


def variant(pid: str, original: str, output: str, **kwargs) -> pb.Prediction:
    p = prediction(pid, output=output, **kwargs)
    p.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
    p.perturbation.name = "typos"
    p.perturbation.original_id = original
    return p


def metrics(profile, family: str) -> dict[str, tuple[float, int]]:
    report = next(f for f in profile.families if f.family == family)
    return {m.name: (round(m.value, 12), m.count) for m in report.metrics}


def test_crashes_lose_nothing_and_count_nothing_twice(make_gateway, make_settings, make_worker, redis_url, r, tmp_path):
    rng = random.Random(20261130)
    gw = make_gateway(families=",".join(FAMILIES))  # the runner's guarantees, on three families
    env = dict(os.environ)
    env.update(
        REDIS_URL=redis_url,
        HOLISTIC_CLAIM_IDLE_MS="300",
        HOLISTIC_RECOVER_INTERVAL_S="0.1",
        HOLISTIC_BLOCK_MS="100",
        HOLISTIC_READ_COUNT="8",
        HOLISTIC_MAX_DELIVERIES="6",
        HOLISTIC_FAULTS="before_apply=0.1,after_apply=0.1,poison=poison-",
        PYTHONUNBUFFERED="1",
        HOLISTIC_FAMILIES=",".join(FAMILIES),
    )
    spawned = 0
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    for family in FAMILIES:
        for _ in range(2):
            spawned += 1
            procs.append((family, spawn(family, env, tmp_path, spawned)))

    expected: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    now = time.time()
    sent: list[tuple[str, str, list[pb.Prediction]]] = []
    originals: list[str] = []
    deaths = 0
    next_kill = time.monotonic() + 0.3

    def supervise() -> None:
        nonlocal spawned, deaths, next_kill
        if time.monotonic() >= next_kill:  # an outside SIGKILL at a random moment
            victim = rng.choice(procs)[1]
            if victim.poll() is None:
                victim.send_signal(signal.SIGKILL)
            next_kill = time.monotonic() + rng.uniform(0.2, 0.6)
        for i, (family, proc) in enumerate(procs):
            if proc.poll() is not None:
                deaths += 1
                spawned += 1
                procs[i] = (family, spawn(family, env, tmp_path, spawned))

    try:
        with gw.client() as client:
            for b in range(120):
                model = MODELS[b % 3]
                n = rng.randint(5, 40)
                preds = []
                for i in range(n):  # about a third are variants of an original from this or an earlier batch
                    kwargs = dict(latency_s=rng.uniform(0.1, 4), produced_at_s=now - rng.uniform(0, 7200))
                    output = rng.choice(["Paris", "Rome"])
                    if originals and rng.random() < 0.3:
                        preds.append(variant(f"{b}-{i}v", rng.choice(originals), output, **kwargs))
                    else:
                        preds.append(prediction(f"{b}-{i}", output=output, **kwargs))
                        originals.append(f"{b}-{i}")
                batch_id = "poison-1" if b == 60 else f"batch-{b}"
                reply = client.submit(preds, batch_id=batch_id, model=model)
                if b % 10 == 0:  # a client retry of the same batch
                    assert client.submit(preds, batch_id=batch_id, model=model).duplicate
                accepted[model] += reply.accepted_count
                sent.append((model, batch_id, preds))
                if batch_id.startswith("poison"):
                    poison_model, poison_n = model, n
                else:
                    expected[model] += n
                supervise()

            deadline = time.monotonic() + 150
            while time.monotonic() < deadline:
                supervise()
                profiles = {m: client.get_profile(m) for m in MODELS}
                counts = {m: {f.family: f.count for f in p.families} for m, p in profiles.items()}
                dead = WorkQueue(r, Keys()).dead_letters()
                drained = all(counts[m] == dict.fromkeys(FAMILIES, expected[m]) for m in MODELS)
                if drained and len(dead) == len(FAMILIES):
                    break
                time.sleep(0.2)
    finally:
        for _, proc in procs:
            proc.kill()
            proc.wait()

    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
    faults = Counter(line.rsplit(": ", 1)[1] for line in logs.splitlines() if "fault injected" in line)
    assert counts == {m: dict.fromkeys(FAMILIES, expected[m]) for m in MODELS}, (counts, expected, faults)
    for m in MODELS:
        assert profiles[m].counts.accepted_predictions == accepted[m]
    assert accepted[poison_model] - expected[poison_model] == poison_n
    assert sorted(d[1]["group"] for d in dead) == sorted(FAMILIES)
    assert all("delivered" in d[1]["reason"] and int(d[1]["deliveries"]) >= 6 for d in dead)
    assert all(r.getbit(Keys().done(poison_model, f), 21) == 0 for f in FAMILIES)  # seq of the poison batch
    assert faults["after_apply"] >= 1 and faults["before_apply"] >= 1 and faults["poison"] >= 6, faults
    assert deaths >= 20, deaths

    # robustness's per-instance worst cases, from one crash-free worker over the same batches
    reference = make_gateway(families="robustness", key_prefix="ref")
    with reference.client() as client:
        for model, batch_id, preds in sent:
            if not batch_id.startswith("poison"):
                client.submit(preds, batch_id=batch_id, model=model)
        drain(make_worker("robustness", make_settings(key_prefix="ref", families="robustness")))
        for m in MODELS:
            expected_metrics = metrics(client.get_profile(m), "robustness")
            assert expected_metrics and metrics(profiles[m], "robustness") == expected_metrics, m
