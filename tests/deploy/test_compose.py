"""docker-compose.yml for real: podman builds the image, podman-compose starts the whole file, the demo
goes through the published gateway port, a family scales to 3 consuming replicas, a SIGKILLed worker
container loses nothing, a Redis that crashes comes back by its restart policy with the gateway serving
again, and the documented tear-down leaves nothing of the project behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from holistic_app.demo import SAMPLE, rebased, wait_applied
from holistic_app.up import free_address, wait_serving
from holistic_client import Client
from tests.deploy import containers
from tests.factories import prediction

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def images() -> tuple[dict[str, str], str]:
    missing = containers.missing_tools()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"no container engine: {', '.join(missing)} (./dev test installs podman, runc, debootstrap)")
        pytest.skip(f"no container engine: {', '.join(missing)}")
    env = containers.environment()
    return env, containers.project_image(env)


def compose(project: str, env: dict[str, str], *args: str, timeout: float = 300) -> str:
    exe = Path(sys.executable).parent / "podman-compose"
    return containers.run(exe, "-p", project, *args, env=env, timeout=timeout)


def applied_by(container: str, model: str, env: dict[str, str]) -> int:
    """Batches of `model` this worker container logged as applied."""
    logs = subprocess.run(["podman", "logs", container], env=env, capture_output=True, text=True).stderr
    return sum(1 for line in logs.splitlines() if "applied batch_id=" in line and f"model={model} " in line)


def consumer_of(container: str, env: dict[str, str]) -> str:
    """The worker's consumer name, from its start line ("worker accuracy consuming ... as NAME")."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs = subprocess.run(["podman", "logs", container], env=env, capture_output=True, text=True).stderr
        for line in logs.splitlines():
            if " consuming " in line and " as " in line:
                return line.rsplit(" as ", 1)[1].strip()
        time.sleep(0.5)
    raise AssertionError(f"{container} never started consuming")


def pending(project: str, consumer: str, env: dict[str, str]) -> int:
    """The consumer's pending entries in the accuracy group (XINFO CONSUMERS, read in the Redis container)."""
    out = containers.run("podman", "exec", f"{project}_redis_1", "redis-cli", "XINFO", "CONSUMERS",
                         "hl:{q0}:preds", "accuracy", env=env).split("\n")  # fmt: skip
    for i in range(0, len(out) - 3):
        if out[i] == "name" and out[i + 1] == consumer and out[i + 2] == "pending":
            return int(out[i + 3])
    return 0


def axis_score(url: str, labels: dict[str, str]) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "holistic_quality_axis_score" and sample.labels == labels:
                return sample.value
    return None


def send_span(endpoint: str, model: str) -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint, insecure=True)))
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                  "gen_ai.prompt": "Capital of France?", "gen_ai.completion": "Paris"}  # fmt: skip
    provider.get_tracer("compose-test").start_span("chat", attributes=attributes).end()
    provider.shutdown()


def test_the_compose_file_runs_scales_and_survives_a_sigkill(images):
    base_env, image = images
    gateway, otlp, quality_port = free_address(), free_address(), free_address().rpartition(":")[2]
    project = f"hlcompose{os.getpid()}"
    env = dict(base_env, HOLISTIC_IMAGE=image, HOLISTIC_BASE_IMAGE=containers.BASE_IMAGE,
               HOLISTIC_REDIS_IMAGE=containers.BASE_IMAGE, HOLISTIC_GATEWAY_PORT=gateway.rpartition(":")[2],
               HOLISTIC_DASHBOARD_PORT=free_address().rpartition(":")[2], HOLISTIC_QUALITY_PORT=quality_port,
               HOLISTIC_OTLP_PORT=otlp.rpartition(":")[2], HOLISTIC_SUMMARIZATION_SEMANTIC="off")  # fmt: skip
    try:
        compose(project, env, "up", "-d")
        wait_serving(gateway, timeout_s=180)
        lines, _ = rebased(SAMPLE, time.time())
        per_model = Counter(ln.prediction.model for ln in lines if ln.prediction is not None)
        with Client(gateway) as client:
            report = client.submit_lines(iter(lines), batch_size=500)
            assert report.accepted == sum(per_model.values()) == 7179 and not report.rejected
            wait_applied(client, sorted(per_model), timeout_s=600)
            for model, n in per_model.items():
                profile = client.get_profile(model)
                assert profile.counts.accepted_predictions == n
                assert {f.family: f.count for f in profile.families} == dict.fromkeys(
                    ["accuracy", "bias", "calibration", "efficiency", "evaluations", "fairness", "retrieval",
                     "robustness", "summarization", "toxicity"], n)  # fmt: skip
                assert all(d.HasField("score") for d in profile.dimensions), model

            # the quality exporter's series equal the gateway's profile; a GenAI span comes in over OTLP
            day = next(d for d in client.get_profile("atlas-70b", "24h").dimensions if d.kind == 1)
            want = {"tenant": "default", "model": "atlas-70b", "axis": "accuracy", "window": "24h", "period": "current"}
            # a scrape returns the last snapshot (HOLISTIC_QUALITY_REFRESH_S, 15 s): one taken while the
            # workers were still applying shows the profile of then, the next one the profile of now
            deadline = time.monotonic() + 120
            while (score := axis_score(f"http://127.0.0.1:{quality_port}/metrics", want)) != pytest.approx(
                day.score, abs=1e-12
            ):
                assert time.monotonic() < deadline, f"the exporter showed {score}, never the profile's {day.score}"
                time.sleep(1)
            send_span(otlp, "otel-model")
            deadline = time.monotonic() + 60
            while not [m for m in client.list_models() if m.model == "otel-model"]:
                assert time.monotonic() < deadline, "the OTLP span never reached the gateway"
                time.sleep(0.5)

            # scale one family to 3 replicas: all three consume from the accuracy group
            compose(project, env, "up", "-d", "--scale", "worker-accuracy=3")
            replicas = [f"{project}_worker-accuracy_{i}" for i in (1, 2, 3)]
            deadline, sent = time.monotonic() + 300, 0
            while min(applied_by(c, "scaled", env) for c in replicas) == 0:
                assert time.monotonic() < deadline, {c: applied_by(c, "scaled", env) for c in replicas}
                for _ in range(10):
                    client.submit([prediction(f"s{sent}-{i}") for i in range(20)], model="scaled")
                    sent += 1
                time.sleep(0.5)

            # SIGKILL a replica that holds delivered, unacknowledged batches: stopped (SIGSTOP) while blocked
            # in XREADGROUP, it is handed entries it never applies; then killed. Another replica claims them
            # (HOLISTIC_CLAIM_IDLE_MS) and applying is idempotent: every prediction counts once.
            # A stopped replica is handed entries only until its XREADGROUP's BLOCK (1 s) runs out, and only if
            # it was stopped blocked there (not lingering or applying): submit at once, check, and where it
            # got none, let it run (CONT) a moment and stop it again. (Checking first, a `podman exec` that
            # takes a second on a slow machine, let the block run out before anything was sent.)
            victim = consumer_of(replicas[1], env)
            batches, deadline = 0, time.monotonic() + 120
            while True:
                containers.run("podman", "kill", "--signal", "STOP", replicas[1], env=env)
                for _ in range(3):
                    client.submit([prediction(f"k{batches}-{i}") for i in range(25)], model="killed")
                    batches += 1
                if pending(project, victim, env) > 0:
                    break
                assert time.monotonic() < deadline and batches < 30, "the stopped replica was never handed an entry"
                containers.run("podman", "kill", "--signal", "CONT", replicas[1], env=env)
                time.sleep(1.5)
            held = pending(project, victim, env)
            containers.run("podman", "kill", "--signal", "KILL", replicas[1], env=env)
            while batches < 40:
                client.submit([prediction(f"k{batches}-{i}") for i in range(25)], model="killed")
                batches += 1
            wait_applied(client, ["killed", "scaled"], timeout_s=300)
            killed = client.get_profile("killed")
            assert held > 0 and pending(project, victim, env) == 0  # its entries were claimed and applied
            assert killed.counts.accepted_predictions == batches * 25 == 1000
            assert {f.family: f.count for f in killed.families}["accuracy"] == 1000
            acc = next(d for d in killed.dimensions if d.kind == 1)
            assert acc.count == 1000 and acc.score == 1.0
            assert client.get_profile("scaled").counts.accepted_predictions == sent * 20

        # Redis crashes (SIGKILL of its process from the host: not a `podman stop`, which a restart policy
        # honours as the operator's wish): `restart: unless-stopped` brings it back with its AOF, the gateway
        # returns to SERVING by itself, and a batch after it is accepted and scored.
        redis_pid = containers.run("podman", "inspect", "--format", "{{.State.Pid}}", f"{project}_redis_1",
                                   env=env).strip()  # fmt: skip
        os.kill(int(redis_pid), 9)
        deadline = time.monotonic() + 120
        while containers.run("podman", "inspect", "--format", "{{.State.Pid}}", f"{project}_redis_1",
                             env=env).strip() in ("0", redis_pid):  # fmt: skip
            assert time.monotonic() < deadline, "Redis was not restarted after its crash"
            time.sleep(0.5)
        wait_serving(gateway, timeout_s=120)
        with Client(gateway) as client:
            client.submit([prediction(f"r{i}") for i in range(10)], model="after-redis")
            wait_applied(client, ["after-redis"], timeout_s=300)
            after = client.get_profile("after-redis")
            assert {f.family: f.count for f in after.families}["accuracy"] == 10
            assert client.get_profile("killed").counts.accepted_predictions == 1000  # the AOF kept it

        # the documented tear-down (docs/deploying.md) leaves no container, pod, volume or network
        compose(project, env, "down", "-v", "--remove-orphans", timeout=180)
        label = f"label=io.podman.compose.project={project}"
        # podman-compose 1.x leaves the named volume behind here (measured): the docs' second command
        volumes = containers.run("podman", "volume", "ls", "-q", "--filter", label, env=env).split()
        if volumes:
            containers.run("podman", "volume", "rm", "-f", *volumes, env=env)
        assert containers.run("podman", "ps", "-aq", "--filter", label, env=env).split() == []
        assert containers.run("podman", "volume", "ls", "-q", "--filter", label, env=env).split() == []
        left = [n for n in containers.run("podman", "network", "ls", "--format", "{{.Name}}", env=env).split()
                if project in n]  # fmt: skip
        left += [n for n in containers.run("podman", "pod", "ls", "--format", "{{.Name}}", env=env).split()
                 if project in n]  # fmt: skip
        left += [n for n in containers.run("podman", "volume", "ls", "--format", "{{.Name}}", env=env).split()
                 if project in n]  # fmt: skip
        assert left == []
    finally:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            compose(project, env, "down", "-v", timeout=120)
        containers.remove_project(project, env)
