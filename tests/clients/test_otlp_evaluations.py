"""gen_ai.evaluation.result events into the receiver, from an app using the OpenTelemetry SDK: each one's
score joins the prediction it names in the profile (evaluations); bad ones are counted with a reason."""

from __future__ import annotations

import json
import threading
import time

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc import LogsServiceStub
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import REGISTRY

from tests.clients.test_otlp_receiver import TOKEN, ReceiverThread, exporters, message, predictions
from tests.conftest import drain
from tests.factories import prediction

RESULT = "gen_ai.evaluation.result"


def evaluations(outcome: str, reason: str = "") -> float:
    labels = {"outcome": outcome, "reason": reason}
    return REGISTRY.get_sample_value("holistic_otlp_evaluations_total", labels) or 0.0


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_sdk_evaluation_events_join_their_predictions_in_the_profile(make_gateway, make_worker, r, transport):
    gw = make_gateway(tokens=TOKEN, families=["accuracy", "evaluations"])
    receiver = ReceiverThread(target=gw.address)
    reasons = [("accepted", ""), ("duplicate", ""), ("rejected", "evaluation_no_name"),
               ("rejected", "evaluation_score_not_a_number"), ("rejected", "evaluation_error"),
               ("rejected", "evaluation_no_model")]  # fmt: skip
    before = {k: evaluations(*k) for k in reasons}
    with gw.client(TOKEN) as client:  # a prediction a client submitted under its completion id
        client.submit([prediction("chatcmpl-1", scenario="production", output="Rome", references=["Paris"])],
                      model="atlas")  # fmt: skip
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer, logger = tracer_provider.get_tracer("app"), logger_provider.get_logger("judge")
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "atlas", "holistic.references": ["Paris"],
            "gen_ai.output.messages": json.dumps([message("Paris")])}  # fmt: skip
    with tracer.start_as_current_span("chat atlas", attributes=chat) as span:
        # on the span it evaluates (the conventions' SHOULD), and as a log record in its context
        span.add_event(RESULT, {"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 4.0,
                                "gen_ai.evaluation.score.label": "relevant"})  # fmt: skip
        logger.emit(event_name=RESULT, attributes={"gen_ai.evaluation.name": "helpfulness",
                                                   "gen_ai.evaluation.score.value": 0.5})  # fmt: skip
        ctx = span.get_span_context()
    with tracer.start_as_current_span("chat atlas", attributes={**chat, "holistic.id": "turn-7"}):
        logger.emit(event_name=RESULT, attributes={"gen_ai.evaluation.name": "helpfulness",  # the span's id
                                                   "gen_ai.evaluation.score.value": 1.5})  # fmt: skip
    span_id = f"{ctx.trace_id:032x}-{ctx.span_id:016x}"
    judge = {"gen_ai.response.id": "chatcmpl-1", "holistic.model": "atlas"}  # no span: the response id says which
    logger.emit(event_name=RESULT, attributes={**judge, "gen_ai.evaluation.name": "relevance",
                                               "gen_ai.evaluation.score.value": 2, "gen_ai.evaluation.explanation":
                                               "Off topic."})  # fmt: skip
    logger.emit(
        event_name=RESULT,
        attributes={**judge, "gen_ai.evaluation.name": "safety", "gen_ai.evaluation.score.label": "pass"},
    )  # a label alone: 1
    logger.emit(event_name=RESULT, attributes={**judge, "gen_ai.evaluation.score.value": 1.0})  # no name
    logger.emit(event_name=RESULT, attributes={**judge, "gen_ai.evaluation.name": "tone",
                                               "gen_ai.evaluation.score.value": "high"})  # fmt: skip
    logger.emit(
        event_name=RESULT, attributes={**judge, "gen_ai.evaluation.name": "tone", "error.type": "timeout"}
    )  # the judge failed: nothing to count
    logger.emit(
        event_name=RESULT,
        attributes={"gen_ai.response.id": "x", "gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.value": 1.0},
    )  # which model?
    span_exporter, log_exporter = exporters(transport, receiver, {"authorization": f"Bearer {TOKEN}"})
    try:
        assert span_exporter.export(spans.get_finished_spans()).name == "SUCCESS"
        assert log_exporter.export(logs.get_finished_logs()).name == "SUCCESS"
        assert log_exporter.export(logs.get_finished_logs()).name == "SUCCESS"  # a retry: counted once
        drain(make_worker("accuracy", gw.settings), make_worker("evaluations", gw.settings))
        with gw.client(TOKEN) as client:
            profile = client.get_profile("atlas")
    finally:
        receiver.stop()
    assert {k: evaluations(*k) - n for k, n in before.items()} == {
        ("accepted", ""): 5, ("duplicate", ""): 4, ("rejected", "evaluation_no_name"): 2,
        ("rejected", "evaluation_score_not_a_number"): 2, ("rejected", "evaluation_error"): 2,
        ("rejected", "evaluation_no_model"): 2}  # fmt: skip
    sent = {(p.id, e.name): e for p in predictions(r, gw) for e in p.evaluations}
    assert {k: (e.score, e.label, e.explanation) for k, e in sent.items()} == {
        (span_id, "relevance"): (4.0, "relevant", ""),
        (span_id, "helpfulness"): (0.5, "", ""),  # the model is the span's, which the receiver saw
        ("turn-7", "helpfulness"): (1.5, "", ""),
        ("chatcmpl-1", "relevance"): (2.0, "", "Off topic."),
        ("chatcmpl-1", "safety"): (1.0, "pass", ""),
    }
    assert next(f for f in profile.families if f.family == "accuracy").count == 3  # the three predictions only
    cell = next(s for s in profile.scenarios if s.scenario == "production")
    scores = {m.name: (m.value, m.count) for m in cell.metrics if m.family == "evaluations"}
    assert scores == {"relevance": (3.0, 2), "helpfulness": (1.0, 2), "safety": (1.0, 1)}


def span_waits(outcome: str) -> float:
    return REGISTRY.get_sample_value("holistic_otlp_evaluation_span_waits_total", {"outcome": outcome}) or 0.0


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_an_evaluation_record_sent_before_its_span_waits_for_it_and_joins_its_prediction(
    make_gateway, make_worker, r, transport
):
    """The log record is exported first (a judge inside the span, flushed before the span ends); it waits
    (HOLISTIC_OTLP_EVENT_WAIT_S) for the span, then evaluates the span's prediction: its holistic.id, model and
    scenario, which the record alone does not carry. A record whose span never comes times out, counted."""
    gw = make_gateway(tokens=TOKEN, families=["accuracy", "evaluations"])
    receiver = ReceiverThread(target=gw.address, event_wait_s=5)
    joined, timed_out = span_waits("joined"), span_waits("timed_out")
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer, logger = tracer_provider.get_tracer("app"), logger_provider.get_logger("judge")
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "atlas", "holistic.references": ["Paris"],
            "gen_ai.output.messages": json.dumps([message("Paris")]), "holistic.id": "turn-9",
            "holistic.scenario": "support"}  # fmt: skip
    with tracer.start_as_current_span("chat atlas", attributes=chat):
        logger.emit(event_name=RESULT, attributes={"gen_ai.evaluation.name": "helpfulness",
                                                   "gen_ai.evaluation.score.value": 0.75})  # fmt: skip
    span_exporter, log_exporter = exporters(transport, receiver, {"authorization": f"Bearer {TOKEN}"})
    outcome: list[str] = []
    try:
        first = threading.Thread(target=lambda: outcome.append(log_exporter.export(logs.get_finished_logs()).name))
        first.start()
        time.sleep(0.5)  # the record is in, waiting
        assert first.is_alive() and outcome == []
        assert span_exporter.export(spans.get_finished_spans()).name == "SUCCESS"
        first.join(10)
        assert outcome == ["SUCCESS"]
        drain(make_worker("accuracy", gw.settings), make_worker("evaluations", gw.settings))
        with gw.client(TOKEN) as client:
            profile = client.get_profile("atlas")
    finally:
        receiver.stop()
    sent = [(p.id, p.model, p.scenario, e.name, e.score) for p in predictions(r, gw) for e in p.evaluations]
    assert sent == [("turn-9", "atlas", "support", "helpfulness", 0.75)]
    cell = next(s for s in profile.scenarios if s.scenario == "support")
    assert {m.name: (m.value, m.count) for m in cell.metrics if m.family == "evaluations"} == {"helpfulness": (0.75, 1)}
    assert (span_waits("joined") - joined, span_waits("timed_out") - timed_out) == (1, 0)

    receiver = ReceiverThread(target=gw.address, event_wait_s=0.3)  # a span that never comes
    logs.clear()
    with tracer.start_as_current_span("an agent step"):
        logger.emit(event_name=RESULT, attributes={"gen_ai.evaluation.name": "helpfulness", "holistic.model": "atlas",
                                                   "gen_ai.evaluation.score.value": 0.25})  # fmt: skip
        ctx = trace.get_current_span().get_span_context()
    _, log_exporter = exporters(transport, receiver, {"authorization": f"Bearer {TOKEN}"})
    record = LogRecord(event_name=RESULT, trace_id=b"\1" * 16, span_id=b"\2" * 8, attributes=[
        KeyValue(key="gen_ai.evaluation.name", value=AnyValue(string_value="tone")),
        KeyValue(key="gen_ai.evaluation.score.value", value=AnyValue(double_value=0.5)),
        KeyValue(key="holistic.model", value=AnyValue(string_value="atlas"))])  # fmt: skip
    request = ExportLogsServiceRequest(resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=[record])])])
    try:
        assert log_exporter.export(logs.get_finished_logs()).name == "SUCCESS"
        with grpc.insecure_channel(receiver.endpoint) as channel:  # what the SDK does not show: the warning
            reply = LogsServiceStub(channel).Export(request, metadata=[("authorization", f"Bearer {TOKEN}")])
    finally:
        receiver.stop()
    assert reply.partial_success.rejected_log_records == 0  # used, not rejected
    assert reply.partial_success.error_message == (
        "1 evaluation records' spans not seen in time: joined by span context alone"
    )
    assert span_waits("timed_out") - timed_out == 2
    late = [(p.id, e.score) for p in predictions(r, gw) for e in p.evaluations if e.score == 0.25]
    assert late == [(f"{ctx.trace_id:032x}-{ctx.span_id:016x}", 0.25)]  # by its span context, as before
    assert [(p.id, e.name) for p in predictions(r, gw) for e in p.evaluations if e.name == "tone"] == [
        (f"{'01' * 16}-{'02' * 8}", "tone")
    ]
