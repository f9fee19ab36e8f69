"""The OTLP receiver with the real OpenTelemetry SDK and OTLP/gRPC exporter: GenAI spans become
predictions in the profile, exactly once, with the tokens configured; unusable spans are counted."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as ts_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from prometheus_client import REGISTRY

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
        self.port = self._run(self.receiver.start("127.0.0.1:0"))
        self.endpoint = f"127.0.0.1:{self.port}"

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
    span.attributes.extend([KeyValue(key="gen_ai.request.model", value=AnyValue(string_value="swift"))])
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


def test_tls_both_ways(make_gateway, tmp_path):
    """The exporter speaks TLS to the receiver, the receiver TLS to the gateway, with the token."""
    from tests.certs import make_pki

    pki = make_pki(tmp_path)
    gw = make_gateway(tokens=TOKEN, families=["accuracy"], tls_cert=pki.server_cert, tls_key=pki.server_key)
    receiver = ReceiverThread(target=gw.address, gateway_tls_ca=pki.ca, tls_cert=pki.server_cert,
                              tls_key=pki.server_key, token=TOKEN)  # fmt: skip
    try:
        exporter = OTLPSpanExporter(
            endpoint=receiver.endpoint, insecure=False, credentials=grpc.ssl_channel_credentials(pki.ca.read_bytes())
        )
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        s = provider.get_tracer("t").start_span("chat", attributes={"gen_ai.request.model": "tls-model"})
        s.end()
        provider.shutdown()
    finally:
        receiver.stop()
    with gw.client(TOKEN, tls_ca=pki.ca) as client:
        assert [(m.model, m.accepted_predictions) for m in client.list_models()] == [("tls-model", 1)]


def test_the_command(make_gateway):
    import os
    import subprocess
    import sys

    from holistic_app.up import free_address

    gw = make_gateway(tokens=TOKEN, families=["accuracy"])
    address = free_address()
    env = dict(os.environ, HOLISTIC_OTLP_ADDRESS=address, HOLISTIC_OTLP_TARGET=gw.address, HOLISTIC_OTLP_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "holistic_app", "otlp-receiver"], env=env)
    try:
        with grpc.insecure_channel(address) as ch:
            grpc.channel_ready_future(ch).result(timeout=60)
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=address, insecure=True)))
        provider.get_tracer("t").start_span("chat", attributes={"gen_ai.request.model": "cli-model"}).end()
        provider.shutdown()
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    with gw.client(TOKEN) as client:
        assert [(m.model, m.accepted_predictions) for m in client.list_models()] == [("cli-model", 1)]
