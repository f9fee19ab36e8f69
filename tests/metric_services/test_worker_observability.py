"""A batch followed end to end: the client's trace context in the gateway's and every worker's log
lines, and the workers' Prometheus counters and histograms."""

from __future__ import annotations

import logging

import grpc
from prometheus_client import REGISTRY

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from tests.conftest import drain
from tests.factories import batch

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_trace_context_and_worker_metrics(make_gateway, make_worker, caplog):
    caplog.set_level(logging.INFO, logger="holistic")
    gw = make_gateway(families="accuracy,efficiency")
    before = {f: value("holistic_worker_predictions_applied_total", family=f) for f in ("accuracy", "efficiency")}
    computes = value("holistic_worker_compute_seconds_count", family="accuracy")
    with grpc.insecure_channel(gw.address) as ch:
        request = es.SubmitPredictionsRequest(batch_id="traced", model="m", predictions=batch(5, latency_s=0.3))
        es_grpc.EvaluationServiceStub(ch).SubmitPredictions(request, metadata=(("traceparent", TRACEPARENT),))
    drain(make_worker("accuracy"), make_worker("efficiency"))
    lines = [r for r in caplog.records if getattr(r, "batch_id", None) == "traced"]
    assert {(r.name, getattr(r, "family", "gateway")) for r in lines} == {
        ("holistic.gateway", "gateway"),
        ("holistic.worker", "accuracy"),
        ("holistic.worker", "efficiency"),
    }
    assert {r.traceparent for r in lines} == {TRACEPARENT}
    assert all(r.model == "m" and r.predictions == 5 for r in lines)
    for family in ("accuracy", "efficiency"):
        assert value("holistic_worker_predictions_applied_total", family=family) - before[family] == 5
    assert value("holistic_worker_compute_seconds_count", family="accuracy") - computes == 1
    assert value("holistic_worker_apply_seconds_count", family="efficiency") >= 1
