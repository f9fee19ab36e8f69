"""Backpressure, authentication, health and Redis outages, against real servers."""

from __future__ import annotations

import asyncio
import threading
import time

import grpc
import pytest
import redis.asyncio as aioredis
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client import REGISTRY

from gateway.durability import AofWatch
from holistic.families.registry import installed
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic_client import ClientError
from holistic_client.errors import details
from tests.conftest import drain, start_redis
from tests.factories import batch


def health(address: str, service: str = "holistic.v1.EvaluationService") -> int:
    with grpc.insecure_channel(address) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_backlog_over_cap_is_resource_exhausted_with_retry_info(make_gateway, make_worker):
    gw = make_gateway(backlog_max_batches=3, families="accuracy,efficiency")  # the two workers below
    with gw.client() as c:
        for i in range(3):
            c.submit(batch(2), batch_id=f"b{i}", model="m1")
    gw.call(gw.gateway.backlog.poll)
    with grpc.insecure_channel(gw.address) as ch:
        stub = es_grpc.EvaluationServiceStub(ch)
        with pytest.raises(grpc.RpcError) as exc:
            stub.SubmitPredictions(es.SubmitPredictionsRequest(batch_id="b9", model="m1", predictions=batch(1)))
    assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    found = details(exc.value)
    retry = [d for d in found if isinstance(d, error_details_pb2.RetryInfo)]
    quota = [d for d in found if isinstance(d, error_details_pb2.QuotaFailure)]
    assert retry and 0.5 <= retry[0].retry_delay.seconds + retry[0].retry_delay.nanos / 1e9 <= 30
    assert quota and quota[0].violations[0].subject == "work-stream-backlog"
    assert "3 batches" in quota[0].violations[0].description

    # The client waits as RetryInfo says and succeeds once workers drained the backlog.
    workers = [make_worker(f) for f in installed()]  # every deployed family's backlog must drain
    threading.Timer(0.3, lambda: drain(*workers)).start()
    with gw.client() as c:
        reply = c.submit(batch(1), batch_id="b9", model="m1")
    assert reply.sequence == 4 and not reply.duplicate


def test_auth(make_gateway):
    gw = make_gateway(tokens="alpha,beta")
    with gw.client() as anonymous, pytest.raises(ClientError) as exc:
        anonymous.submit(batch(1), batch_id="b1", model="m1")
    assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED
    with gw.client("wrong") as wrong, pytest.raises(ClientError) as exc:
        wrong.list_models()
    assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED
    with gw.client("beta") as ok:
        ok.submit(batch(1), batch_id="b1", model="m1")
        assert [m.model for m in ok.list_models()] == ["m1"]
    with gw.client() as anonymous, pytest.raises(ClientError) as exc:
        next(anonymous.watch_profile("m1"))
    assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED
    # health and reflection stay public
    assert health(gw.address) == health_pb2.HealthCheckResponse.SERVING
    with grpc.insecure_channel(gw.address) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        replies = list(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    names = {s.name for s in replies[0].list_services_response.service}
    assert "holistic.v1.EvaluationService" in names


def test_redis_outage_is_unavailable_and_recovers(make_gateway, tmp_path):
    proc, sock = start_redis(tmp_path)
    gw = make_gateway(redis_url=f"unix://{sock}")
    try:
        with gw.client(max_attempts=1, timeout_s=5) as c:
            c.submit(batch(1), batch_id="b1", model="m1")
            proc.kill()
            proc.wait()
            wait_for(lambda: health(gw.address) == health_pb2.HealthCheckResponse.NOT_SERVING)
            # liveness (what Kubernetes restarts on) stays SERVING: restarting the gateway would not bring Redis back
            assert health(gw.address, "liveness") == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(ClientError) as exc:
                c.submit(batch(1), batch_id="b2", model="m1")
            assert exc.value.code == grpc.StatusCode.UNAVAILABLE
            with pytest.raises(ClientError) as exc:
                c.get_profile("m1")
            assert exc.value.code == grpc.StatusCode.UNAVAILABLE
            proc, sock = start_redis(tmp_path)  # same socket path, empty data
            wait_for(lambda: health(gw.address) == health_pb2.HealthCheckResponse.SERVING)
            assert c.submit(batch(1), batch_id="b2", model="m1").sequence == 1
    finally:
        proc.kill()
        proc.wait()


def test_strict_durability_needs_appendfsync_always(make_gateway, tmp_path, r):
    from holistic.errors import ConfigError

    with pytest.raises(ConfigError, match="appendfsync always"):
        make_gateway(durability="strict")  # the test Redis runs without AOF
    proc, sock = start_redis(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    try:
        gw = make_gateway(durability="strict", redis_url=f"unix://{sock}")
        with gw.client() as c:
            assert c.submit(batch(1), batch_id="b1", model="m1").sequence == 1
    finally:
        proc.kill()
        proc.wait()


def test_aof_watch_reports_redis_persistence(make_gateway, tmp_path, caplog):
    """everysec's promise rests on the AOF: the gateway says when Redis runs without it, and exports
    Redis's count of stalled fsyncs (the window in which even a Redis kill loses acknowledged batches)."""
    gw = make_gateway()  # the test Redis runs without AOF
    assert gw.gateway.aof is not None
    proc, sock = start_redis(tmp_path, "--appendonly", "yes", "--appendfsync", "everysec")

    async def look(url: str) -> tuple[float, float]:
        r = aioredis.from_url(url)
        try:
            await AofWatch(r).poll()
        finally:
            await r.aclose()
        return tuple(REGISTRY.get_sample_value(f"holistic_redis_aof_{m}") for m in ("enabled", "delayed_fsync"))

    try:
        with caplog.at_level("WARNING", logger="holistic.gateway"):
            assert asyncio.run(look(gw.settings.redis_url)) == (0, 0)
            assert "without the AOF (appendonly no)" in caplog.text
            caplog.clear()
            assert asyncio.run(look(f"unix://{sock}")) == (1, 0)
            assert "appendonly" not in caplog.text
    finally:
        proc.kill()
        proc.wait()
