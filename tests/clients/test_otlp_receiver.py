"""The OTLP receiver with the real OpenTelemetry SDK and its OTLP exporters (gRPC and HTTP, spans and log
records): GenAI spans become predictions in the profile, exactly once, with their messages from the span,
its events or its log records, and the tokens configured; unusable spans are counted with their reason."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as ts_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from prometheus_client import REGISTRY

from holistic.queue import envelope
from holistic.redis.keys import Keys
from holistic_client.otlp.http import PROTOBUF
from holistic_client.otlp.receiver import Receiver, load_otlp_settings
from tests.conftest import drain

TOKEN = "otel-team-token"
T0 = 1_764_000_000_000_000_000


class ReceiverThread:
    def __init__(self, **settings: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.receiver = self._run(self._make(load_otlp_settings(**settings)))
        self.port = self._run(self.receiver.start("127.0.0.1:0", "127.0.0.1:0"))
        self.endpoint = f"127.0.0.1:{self.port}"
        self.http = f"http://127.0.0.1:{self.receiver.http_port}"

    async def _make(self, settings: Any) -> Receiver:
        return Receiver(settings)  # grpc.aio objects belong to the loop they are made on

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def stop(self) -> None:
        self._run(self.receiver.stop(0.5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def spans_count(outcome: str, reason: str = "") -> float:
    return REGISTRY.get_sample_value("holistic_otlp_spans_total", {"outcome": outcome, "reason": reason}) or 0.0


def log_records(outcome: str, reason: str) -> float:
    return REGISTRY.get_sample_value("holistic_otlp_log_records_total", {"outcome": outcome, "reason": reason}) or 0.0


def waiting_spans() -> float:
    return REGISTRY.get_sample_value("holistic_otlp_spans_waiting") or 0.0


def emit(provider: TracerProvider) -> None:
    """Three GenAI calls of atlas (current, older JSON and flattened forms) and three spans it cannot use."""
    tracer = provider.get_tracer("test")
    calls = [
        ({"gen_ai.operation.name": "chat", "gen_ai.request.model": "atlas", "gen_ai.response.model": "atlas-0613",
          "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 3,
          "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Capital?"}]}]),
          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Paris"}],
                                                 "finish_reason": "stop"}]),
          "gen_ai.response.time_to_first_chunk": 0.25, "holistic.references": ["Paris"],
          "holistic.groups.dialect": "aae"}, 1.0),
        ({"gen_ai.request.model": "atlas-0613", "gen_ai.usage.prompt_tokens": 20, "gen_ai.usage.completion_tokens": 4,
          "gen_ai.prompt": json.dumps([{"role": "user", "content": "Capital of France?"}]),
          "gen_ai.completion": json.dumps([{"role": "assistant", "content": "Rome"}]),
          "holistic.references": ["Paris"]}, 2.0),
        ({"gen_ai.request.model": "atlas-0613", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Capital?",
          "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Paris",
          "holistic.references": ["Paris"]}, 3.0),
    ]  # fmt: skip
    for i, (attrs, secs) in enumerate(calls):
        s = tracer.start_span("chat atlas", attributes=attrs, start_time=T0 + i)
        s.end(end_time=T0 + i + int(secs * 1e9))
    tracer.start_span("GET /health", attributes={"http.request.method": "GET"}).end()  # not GenAI: ignored
    tracer.start_span("chat", attributes={"gen_ai.operation.name": "chat"}).end()  # no model
    failed = tracer.start_span("chat", attributes={"gen_ai.request.model": "atlas-0613"})
    failed.set_status(Status(StatusCode.ERROR, "timeout"))
    failed.end()


def test_sdk_spans_become_predictions_exactly_once(make_gateway, make_worker):
    gw = make_gateway(tokens=TOKEN, families=["accuracy", "efficiency"])
    receiver = ReceiverThread(target=gw.address, default_scenario="support_qa", default_task="open_qa")
    before = {k: spans_count(*k) for k in
              [("accepted",), ("duplicate",), ("ignored", "not_genai"), ("unusable", "no_model"),
               ("unusable", "error_status")]}  # fmt: skip
    memory = InMemorySpanExporter()
    headers = {"authorization": f"Bearer {TOKEN}"}
    provider = TracerProvider(resource=Resource.create({"service.name": "chat-api"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True,
                                                                    headers=headers)))  # fmt: skip
    try:
        emit(provider)
        assert provider.force_flush(30_000)
        # the exporter retries a request (say its answer was lost): the same spans, sent again
        again = OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True, headers=headers)
        assert again.export(memory.get_finished_spans()) == SpanExportResult.SUCCESS
        again.shutdown()
        provider.shutdown()
        drain(make_worker("accuracy", gw.settings), make_worker("efficiency", gw.settings))
        with gw.client(TOKEN) as client:
            profile = client.get_profile("atlas-0613")
    finally:
        receiver.stop()
    delta = {k: spans_count(*k) - v for k, v in before.items()}
    assert delta == {("accepted",): 3, ("duplicate",): 3, ("ignored", "not_genai"): 2,
                     ("unusable", "no_model"): 2, ("unusable", "error_status"): 2}  # fmt: skip
    assert profile.counts.accepted_predictions == 3 and profile.counts.accepted_batches == 1
    acc = next(d for d in profile.dimensions if d.kind == 1)
    assert acc.score == pytest.approx(2 / 3)  # f1 for open QA: Paris, Rome, Paris against "Paris"
    assert [s.scenario for s in profile.scenarios] == ["support_qa"]
    eff = {m.name: m.value for f in profile.families if f.family == "efficiency" for m in f.metrics}
    assert eff["latency_mean"] == pytest.approx(2.0)  # 1, 2 and 3 s spans
    assert eff["prompt_tokens_total"] == 32 and eff["completion_tokens_total"] == 7
    assert eff["time_to_first_token_mean"] == pytest.approx(0.25)


def test_tokens_partial_success_and_no_token(make_gateway):
    gw = make_gateway(tokens=TOKEN, families=["accuracy"])
    usable = ts.ExportTraceServiceRequest()
    span = (
        usable.resource_spans.add()
        .scope_spans.add()
        .spans.add(trace_id=b"\1" * 16, span_id=b"\2" * 8, start_time_unix_nano=T0, end_time_unix_nano=T0 + 10**9)
    )
    span.attributes.extend([KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="swift")),
                            KeyValue(key="gen_ai.completion", value=AnyValue(string_value="ok"))])  # fmt: skip
    nameless = usable.resource_spans[0].scope_spans[0].spans.add(trace_id=b"\1" * 16, span_id=b"\3" * 8)
    nameless.attributes.extend([KeyValue(key="gen_ai.system", value=AnyValue(string_value="openai"))])
    # no token anywhere: the gateway's UNAUTHENTICATED reaches the exporter (a configuration to fix)
    open_receiver = ReceiverThread(target=gw.address)
    try:
        with grpc.insecure_channel(open_receiver.endpoint) as ch, pytest.raises(grpc.RpcError) as exc:
            ts_grpc.TraceServiceStub(ch).Export(usable, timeout=10)
        assert exc.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        open_receiver.stop()
    # the receiver's own token, for exporters that send none; the unusable span is partial success
    receiver = ReceiverThread(target=gw.address, token=TOKEN)
    try:
        with grpc.insecure_channel(receiver.endpoint) as ch:
            reply = ts_grpc.TraceServiceStub(ch).Export(usable, timeout=10)
    finally:
        receiver.stop()
    assert reply.partial_success.rejected_spans == 1
    assert reply.partial_success.error_message == "1 no_model"
    with gw.client(TOKEN) as client:
        assert [(m.model, m.accepted_predictions) for m in client.list_models()] == [("swift", 1)]


def test_tls_both_ways(make_gateway, tmp_path, monkeypatch):
    """The exporters speak TLS to the receiver (gRPC and HTTPS), the receiver TLS to the gateway, with the token."""
    from tests.certs import make_pki

    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):  # requests lets these win over the exporter's CA
        monkeypatch.delenv(name, raising=False)
    pki = make_pki(tmp_path)
    gw = make_gateway(tokens=TOKEN, families=["accuracy"], tls_cert=pki.server_cert, tls_key=pki.server_key)
    receiver = ReceiverThread(target=gw.address, gateway_tls_ca=pki.ca, tls_cert=pki.server_cert,
                              tls_key=pki.server_key, token=TOKEN)  # fmt: skip
    try:
        for model, exporter in [
            ("tls-grpc", OTLPSpanExporter(endpoint=receiver.endpoint, insecure=False,
                                          credentials=grpc.ssl_channel_credentials(pki.ca.read_bytes()))),
            ("tls-http", HttpSpanExporter(endpoint=f"https://127.0.0.1:{receiver.receiver.http_port}/v1/traces",
                                          certificate_file=str(pki.ca), timeout=10)),
        ]:  # fmt: skip
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            attrs = {"gen_ai.request.model": model, "gen_ai.completion": "ok"}
            provider.get_tracer("t").start_span("chat", attributes=attrs).end()
            provider.shutdown()
    finally:
        receiver.stop()
    with gw.client(TOKEN, tls_ca=pki.ca) as client:
        assert [(m.model, m.accepted_predictions) for m in client.list_models()] == [("tls-grpc", 1), ("tls-http", 1)]


def test_the_command(make_gateway):
    """`holistic otlp-receiver` serves gRPC on HOLISTIC_OTLP_ADDRESS and HTTP on HOLISTIC_OTLP_HTTP_ADDRESS."""
    import os
    import subprocess
    import sys

    from holistic_app.up import free_address

    gw = make_gateway(tokens=TOKEN, families=["accuracy"])
    address, http_address = free_address(), free_address()
    env = dict(os.environ, HOLISTIC_OTLP_ADDRESS=address, HOLISTIC_OTLP_HTTP_ADDRESS=http_address,
               HOLISTIC_OTLP_TARGET=gw.address, HOLISTIC_OTLP_TOKEN=TOKEN)  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "holistic_app", "otlp-receiver"], env=env)
    try:
        with grpc.insecure_channel(address) as ch:
            grpc.channel_ready_future(ch).result(timeout=60)
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=address, insecure=True)))
        provider.add_span_processor(SimpleSpanProcessor(HttpSpanExporter(endpoint=f"http://{http_address}/v1/traces")))
        attrs = {"gen_ai.request.model": "cli-model", "gen_ai.completion": "ok"}
        provider.get_tracer("t").start_span("chat", attributes=attrs).end()  # by both: one prediction
        provider.shutdown()
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    with gw.client(TOKEN) as client:
        assert [(m.model, m.accepted_predictions) for m in client.list_models()] == [("cli-model", 1)]


# --- messages as OpenTelemetry really sends them: span events and log records, over gRPC and HTTP ---------


def predictions(r, gw) -> list[Any]:
    """What reached the gateway: the predictions in the work stream, in submit order."""
    return [p for entry_id, fields in r.xrange(Keys(gw.settings.key_prefix).stream)
            for p in envelope.parse(entry_id, fields).envelope().predictions]  # fmt: skip


def exporters(transport: str, receiver: ReceiverThread, headers: dict[str, str]) -> tuple[Any, Any]:
    """The SDK's own span and log exporters for one transport (HTTP: protobuf, gzip)."""
    if transport == "grpc":
        return (OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True, headers=headers),
                OTLPLogExporter(endpoint=receiver.endpoint, insecure=True, headers=headers))  # fmt: skip
    gzip = Compression.Gzip
    return (HttpSpanExporter(endpoint=f"{receiver.http}/v1/traces", headers=headers, compression=gzip),
            HttpLogExporter(endpoint=f"{receiver.http}/v1/logs", headers=headers, compression=gzip))  # fmt: skip


def message(text: str, role: str = "assistant") -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def emit_as_sent(tracer: Any, logger: Any) -> None:
    """Three chat calls with their messages on span events or in log records (current and 1.28-1.36
    conventions), and three GenAI spans that are not predictions: embeddings, a tool, a chat without content."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "atlas", "holistic.references": ["Paris"]}
    with tracer.start_as_current_span("chat atlas", attributes=chat) as span:  # span events
        span.add_event("gen_ai.user.message", {"gen_ai.system": "openai", "content": "Capital of France?"})
        span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                         "message": json.dumps({"role": "assistant", "content": "Paris"})})  # fmt: skip
    with tracer.start_as_current_span("chat atlas", attributes=chat):  # one details log record (1.37+)
        logger.emit(event_name="gen_ai.client.inference.operation.details", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "atlas",
            "gen_ai.input.messages": [message("Be brief.", "system"), message("Capital of Italy?", "user")],
            "gen_ai.output.messages": [{**message("Rome"), "finish_reason": "stop"}]})  # fmt: skip
    with tracer.start_as_current_span("chat atlas", attributes=chat):  # a log record per message (1.28-1.36)
        logger.emit(attributes={"event.name": "gen_ai.user.message"}, body={"content": "Capital of Spain?"})
        madrid = {"role": "assistant", "content": "Madrid"}
        logger.emit(event_name="gen_ai.choice", body={"index": 0, "finish_reason": "stop", "message": madrid})
    embed = {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "atlas", "gen_ai.usage.input_tokens": 9}
    tracer.start_span("embeddings atlas", attributes=embed).end()
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.request.model": "atlas"}
    tracer.start_span("execute_tool search", attributes=tool).end()
    tracer.start_span("chat atlas", attributes=chat).end()  # content capture off: no answer anywhere
    logger.emit(event_name="gen_ai.choice", body={"index": 0, "message": {"content": "x"}})  # in no span


@pytest.mark.parametrize("transport", ["grpc", "http"])
def test_messages_as_sent_become_predictions(make_gateway, make_worker, r, transport):
    """Span events and log records (sent first, as their processor's shorter delay does) give the input
    and output; embeddings, tools and an answerless chat are skipped with their reasons, never scored."""
    gw = make_gateway(tokens=TOKEN, families=["accuracy", "efficiency"])
    receiver = ReceiverThread(target=gw.address, event_wait_s=0.5)
    reasons = ["operation_embeddings", "operation_execute_tool", "no_output"]
    before = {why: spans_count("unusable", why) for why in reasons}
    before_logs = {k: log_records(*k) for k in [("held", "held"), ("used", ""), ("rejected", "no_span_context")]}
    span_exporter, log_exporter = exporters(transport, receiver, {"authorization": f"Bearer {TOKEN}"})
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
    try:
        emit_as_sent(tracer_provider.get_tracer("app"), logger_provider.get_logger("app"))
        assert logger_provider.force_flush(30_000)
        assert tracer_provider.force_flush(30_000)
        tracer_provider.shutdown()
        logger_provider.shutdown()
        drain(make_worker("accuracy", gw.settings), make_worker("efficiency", gw.settings))
        with gw.client(TOKEN) as client:
            profile = client.get_profile("atlas")
    finally:
        receiver.stop()
    assert [(p.input, p.output) for p in predictions(r, gw)] == [
        ("Capital of France?", "Paris"), ("Capital of Italy?", "Rome"), ("Capital of Spain?", "Madrid")]  # fmt: skip
    assert {why: spans_count("unusable", why) - n for why, n in before.items()} == dict.fromkeys(reasons, 1)
    assert {k: log_records(*k) - n for k, n in before_logs.items()} == {
        ("held", "held"): 3, ("used", ""): 3, ("rejected", "no_span_context"): 1}  # fmt: skip
    assert profile.counts.accepted_predictions == 3
    acc = next(d for d in profile.dimensions if d.kind == 1)
    assert acc.score == pytest.approx(1 / 3)  # Paris, Rome, Madrid against "Paris": nothing scored as ""


def test_a_span_waits_for_its_log_records(make_gateway, r):
    """The span's request comes first and waits (HOLISTIC_OTLP_EVENT_WAIT_S) until its log records come."""
    gw = make_gateway(tokens=TOKEN, families=["accuracy"])
    receiver = ReceiverThread(target=gw.address, token=TOKEN, event_wait_s=30)
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "late"}
    with tracer_provider.get_tracer("app").start_as_current_span("chat late", attributes=chat):
        logger_provider.get_logger("app").emit(event_name="gen_ai.choice",
                                               body={"index": 0, "message": {"content": "on its way"}})  # fmt: skip
    span_exporter, log_exporter = exporters("http", receiver, {})
    results: list[Any] = []
    sender = threading.Thread(target=lambda: results.append(span_exporter.export(spans.get_finished_spans())))
    try:
        sender.start()
        deadline = time.monotonic() + 30
        while waiting_spans() < 1 and time.monotonic() < deadline:  # the span's request is in, waiting
            time.sleep(0.02)
        assert waiting_spans() == 1
        assert log_exporter.export(logs.get_finished_logs()).name == "SUCCESS"
        sender.join(30)
    finally:
        receiver.stop()
    assert results == [SpanExportResult.SUCCESS]
    assert [(p.model, p.output) for p in predictions(r, gw)] == [("late", "on its way")]


def test_http_json_partial_success_and_status_codes(make_gateway, r):
    """OTLP/HTTP as the specification writes it: JSON with hex ids and lowerCamelCase, gzip, the
    partial_success body, 400, 401, 405 and 415."""
    import gzip

    import requests

    gw = make_gateway(tokens=TOKEN, families=["accuracy"])
    receiver = ReceiverThread(target=gw.address, event_wait_s=0)
    trace_id, span_id = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
             {"key": "gen_ai.request.model", "value": {"stringValue": "json-model"}},
             {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
             {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([message("Paris")])}}]  # fmt: skip
    embed = [{"key": "gen_ai.operation.name", "value": {"stringValue": "embeddings"}},
             {"key": "gen_ai.request.model", "value": {"stringValue": "json-model"}}]  # fmt: skip
    body = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "app"}, "spans": [
        {"traceId": trace_id, "spanId": span_id, "name": "chat", "kind": 3, "startTimeUnixNano": str(T0),
         "endTimeUnixNano": str(T0 + 10**9), "attributes": attrs, "status": {}},
        {"traceId": trace_id, "spanId": "eee19b7ec3c1b175", "parentSpanId": span_id, "name": "embeddings",
         "attributes": embed}]}]}]}  # fmt: skip
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.choice", "body": {"kvlistValue": {"values": []}}}]}]}]}  # fmt: skip
    auth = {"Authorization": f"Bearer {TOKEN}"}
    json_headers = {**auth, "Content-Type": "application/json"}
    try:
        traces = f"{receiver.http}/v1/traces"
        ok = requests.post(traces, data=gzip.compress(json.dumps(body).encode()), timeout=30,
                           headers={**json_headers, "Content-Encoding": "gzip"})  # fmt: skip
        unauthenticated = requests.post(traces, json=body, timeout=30)
        no_context = requests.post(f"{receiver.http}/v1/logs", json=logs, headers=json_headers, timeout=30)
        bad_hex = requests.post(traces, data=json.dumps(body).replace(span_id, "not-hex"), headers=json_headers,
                                timeout=30)  # fmt: skip
        bad_protobuf = requests.post(traces, data=b"\xff\xff", headers={**auth, "Content-Type": PROTOBUF}, timeout=30)
        wrong_type = requests.post(traces, data=b"x", headers={**auth, "Content-Type": "text/plain"}, timeout=30)
        get = requests.get(traces, timeout=30)
    finally:
        receiver.stop()
    assert (ok.status_code, ok.headers["Content-Type"].split(";")[0]) == (200, "application/json")
    assert ok.json() == {"partialSuccess": {"rejectedSpans": "1", "errorMessage": "1 operation_embeddings"}}
    ((p),) = predictions(r, gw)
    assert (p.id, p.model, p.output, p.timing.prompt_tokens) == (f"{trace_id}-{span_id}", "json-model", "Paris", 12)
    assert unauthenticated.status_code == 401
    assert no_context.status_code == 200
    assert no_context.json()["partialSuccess"] == {"rejectedLogRecords": "1", "errorMessage": "1 no_span_context"}
    assert bad_hex.status_code == 400 and "spanId: 'not-hex' is not hex" in bad_hex.json()["message"]
    assert bad_protobuf.status_code == 400
    status = status_pb2.Status.FromString(bad_protobuf.content)
    assert status.code == code_pb2.INVALID_ARGUMENT and "ExportTraceServiceRequest" in status.message
    assert wrong_type.status_code == 415 and get.status_code == 405


def test_http_gateway_unreachable_is_retryable():
    """While the gateway cannot be reached the exporter is told to retry: HTTP 503 with a google.rpc.Status."""
    import requests

    from holistic_app.up import free_address

    receiver = ReceiverThread(target=free_address(), token=TOKEN, event_wait_s=0, submit_timeout_s=0.5)
    request = ts.ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add(trace_id=b"\1" * 16, span_id=b"\2" * 8)
    span.attributes.extend([KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="m")),
                            KeyValue(key="gen_ai.completion", value=AnyValue(string_value="ok"))])  # fmt: skip
    try:
        reply = requests.post(f"{receiver.http}/v1/traces", data=request.SerializeToString(),
                              headers={"Content-Type": PROTOBUF}, timeout=30)  # fmt: skip
    finally:
        receiver.stop()
    assert (reply.status_code, reply.headers["Content-Type"]) == (503, PROTOBUF)
    status = status_pb2.Status.FromString(reply.content)
    assert status.code == code_pb2.UNAVAILABLE and status.message.startswith("the gateway: UNAVAILABLE")
