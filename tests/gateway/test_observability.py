"""Prometheus metrics of the gateway, JSON logs with batch id, model and trace context."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import urllib.request

import grpc
import pytest
from prometheus_client import REGISTRY

from holistic.queue import envelope
from holistic.redis.keys import Keys
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic_app.up import free_address, wait_serving
from holistic_client import ClientError
from tests.factories import batch

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_submit_outcomes_are_counted(make_gateway):
    gw = make_gateway(backlog_max_batches=2)
    before = {
        k: sample("holistic_gateway_predictions_total", outcome=k[0], reason=k[1])
        for k in [("accepted", ""), ("duplicate", ""), ("rejected", "invalid_argument"), ("rejected", "backlog")]
    }
    with gw.client(max_attempts=1) as c:
        c.submit(batch(3), batch_id="b1", model="m")
        c.submit(batch(3), batch_id="b1", model="m")
        bad = batch(2)
        bad[1].confidence = 7.0
        with pytest.raises(ClientError):
            c.submit(bad, batch_id="b2", model="m")
        c.submit(batch(1), batch_id="b3", model="m")
        gw.call(gw.gateway.backlog.poll)
        with pytest.raises(ClientError):
            c.submit(batch(4), batch_id="b4", model="m")
    after = {k: sample("holistic_gateway_predictions_total", outcome=k[0], reason=k[1]) for k in before}
    assert {k: after[k] - before[k] for k in before} == {
        ("accepted", ""): 4,
        ("duplicate", ""): 3,
        ("rejected", "invalid_argument"): 2,
        ("rejected", "backlog"): 0,  # refused before parsing: its predictions are not counted
    }
    assert sample("holistic_gateway_batches_total", outcome="rejected", reason="backlog") >= 1
    assert sample("holistic_family_backlog_batches", family="accuracy") == 2
    assert sample("holistic_family_backlog_cap_batches") == 2
    assert sample("holistic_family_lag_batches", family="efficiency") == 2
    assert sample("holistic_redis_up") == 1
    assert sample("holistic_gateway_rpc_seconds_count", method="SubmitPredictions") >= 5


def test_metrics_endpoint_and_json_logs_with_trace_context(redis_url, r, tmp_path):
    address, metrics = free_address(), free_address()
    env = dict(os.environ, REDIS_URL=redis_url, HOLISTIC_GATEWAY_ADDRESS=address, HOLISTIC_METRICS_ADDRESS=metrics,
               HOLISTIC_LOG_FORMAT="json", HOLISTIC_TOKENS="team-a:sha256:" + "ab" * 32)  # fmt: skip
    log_path = tmp_path / "gateway.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "holistic_app", "gateway"], env=env, stderr=log)
    try:
        wait_serving(address)
        with grpc.insecure_channel(address) as ch:
            stub = es_grpc.EvaluationServiceStub(ch)
            request = es.SubmitPredictionsRequest(batch_id="traced", model="m", predictions=batch(2))
            with pytest.raises(grpc.RpcError):  # the token is unknown: refused
                stub.SubmitPredictions(request, timeout=5)
        body = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5).read().decode()
        assert "holistic_redis_up 1.0" in body and "holistic_gateway_predictions_total" in body
    finally:
        proc.terminate()
        proc.wait(10)
    records = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any("OPEN" in r["message"] for r in records) is False  # tokens are configured
    assert "ab" * 32 not in log_path.read_text()  # token hashes are not logged either


def test_accepted_batches_are_logged_with_their_trace_context(make_gateway, caplog):
    caplog.set_level(logging.INFO, logger="holistic.gateway")
    gw = make_gateway()
    with grpc.insecure_channel(gw.address) as ch:
        stub = es_grpc.EvaluationServiceStub(ch)
        request = es.SubmitPredictionsRequest(batch_id="traced", model="m", predictions=batch(2))
        _, call = stub.SubmitPredictions.with_call(request, metadata=(("traceparent", TRACEPARENT),), timeout=5)
        assert dict(call.trailing_metadata())["traceparent"] == TRACEPARENT
        _, call = stub.SubmitPredictions.with_call(
            es.SubmitPredictionsRequest(batch_id="untraced", model="m", predictions=batch(1)), timeout=5
        )
        generated = dict(call.trailing_metadata())["traceparent"]
    assert generated.startswith("00-") and generated != TRACEPARENT and len(generated) == 55
    deadline = time.monotonic() + 10
    while not any(getattr(rec, "batch_id", "") == "traced" for rec in caplog.records):
        assert time.monotonic() < deadline, "the accepted batch was not logged"
        time.sleep(0.01)
    traced = [rec for rec in caplog.records if getattr(rec, "batch_id", "") == "traced"]
    assert traced and traced[0].traceparent == TRACEPARENT and traced[0].model == "m" and traced[0].predictions == 2
    import redis as redis_mod

    entries = redis_mod.Redis.from_url(gw.settings.redis_url).xrange(Keys().stream)
    assert envelope.parse(*entries[0]).envelope().traceparent == TRACEPARENT
