"""`holistic otlp-receiver`: an OTLP/gRPC TraceService that turns GenAI spans into predictions.

Serving teams point their OpenTelemetry exporter at it (or add it to a collector's pipeline). Each
Export request's usable spans are grouped by model into batches of at most HOLISTIC_OTLP_MAX_BATCH and
submitted to the gateway before the request is answered. A batch's id is derived from its
prediction ids, which come from the span ids, so an exporter's retry of the same request (after a
timeout, a lost answer, an UNAVAILABLE) gives the same batches and the gateway answers them as
duplicates: every span counts exactly once, across retries, replicas and restarts. The exporter's
BatchSpanProcessor is the batcher (512 spans per export by default); batches never span requests,
since a retried request could then be cut differently.

Spans without `gen_ai.*` attributes are ignored; GenAI spans that cannot be predictions (no model, an
error status, a bad `holistic.task`, fields the gateway rejects) are counted by reason and reported in
the response's partial_success, never as an error. Errors are only what the exporter should retry
(UNAVAILABLE while the gateway is unreachable or pushing back) or fix (UNAUTHENTICATED). The
exporter's `authorization` header is passed to the gateway, so tenants are the gateway's; without
one, HOLISTIC_OTLP_TOKEN is used.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections import Counter as Tally
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as ts_grpc
from prometheus_client import Counter
from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic.v1 import prediction_pb2 as pb
from holistic_client.client import submit_method
from holistic_client.errors import from_rpc_error, retry_delay_s
from holistic_client.otlp.mapping import TASKS, Defaults, Unusable, attributes, is_genai, to_prediction

log = logging.getLogger("holistic.otlp")

SPANS = Counter(
    "holistic_otlp_spans",
    "Spans received, by outcome (accepted, duplicate, ignored, unusable, rejected) and reason.",
    ["outcome", "reason"],
)
BATCHES = Counter("holistic_otlp_batches", "Batches submitted to the gateway, by outcome.", ["outcome"])
_PREDICTION = re.compile(r"^predictions\[(\d+)\]")
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED)


class OtlpSettings(BaseSettings):
    """HOLISTIC_OTLP_*: where to listen, which gateway to submit to, and the defaults for spans."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_OTLP_", extra="ignore", frozen=True)

    address: str = Field(default="127.0.0.1:4317", description="host:port of the OTLP/gRPC receiver.")
    target: str = Field(default="127.0.0.1:50051", description="The gateway.")
    token: str | None = Field(default=None, repr=False, description="For exporters that send no authorization.")
    gateway_tls_ca: Path | None = Field(default=None, description="CA of the gateway's certificate: TLS to it.")
    tls_cert: Path | None = Field(default=None, description="Serve OTLP over TLS with this certificate chain.")
    tls_key: Path | None = None
    default_scenario: str = Field(default="production", description="For spans without holistic.scenario.")
    default_task: str = Field(default="free_generation", description="For spans without holistic.task.")
    max_batch: int = Field(default=1000, ge=1, le=100_000, description="Predictions per SubmitPredictions.")
    submit_timeout_s: float = Field(default=8.0, gt=0, description="Per submit; retried within it.")
    metrics_address: str = Field(
        default="", validation_alias=AliasChoices("HOLISTIC_OTLP_METRICS_ADDRESS", "HOLISTIC_METRICS_ADDRESS")
    )

    def defaults(self) -> Defaults:
        task = self.default_task.lower().removeprefix("task_")
        if task not in TASKS:
            raise ValueError(f"HOLISTIC_OTLP_DEFAULT_TASK {self.default_task!r}: one of {sorted(TASKS)}")
        return Defaults(self.default_scenario, TASKS[task])


def load_otlp_settings(**overrides: object) -> OtlpSettings:
    from holistic.errors import ConfigError

    try:
        settings = OtlpSettings(**overrides)  # type: ignore[arg-type]
        settings.defaults()
        return settings
    except (ValidationError, ValueError) as exc:
        raise ConfigError(f"invalid settings: {exc}") from exc


def batch_id(model: str, predictions: list[pb.Prediction]) -> str:
    """Derived from the model and the prediction ids (the span ids): the same spans, the same batch."""
    digest = hashlib.sha256("\0".join([model, *(p.id for p in predictions)]).encode()).hexdigest()
    return f"otlp-{digest[:40]}"


class Failed(Exception):
    """Answer the Export with this status: the exporter retries (UNAVAILABLE) or must be fixed."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class TraceReceiver(ts_grpc.TraceServiceServicer):
    def __init__(self, settings: OtlpSettings) -> None:
        self.settings = settings
        self.defaults = settings.defaults()
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
        if settings.gateway_tls_ca:
            creds = grpc.ssl_channel_credentials(settings.gateway_tls_ca.read_bytes())
            self.channel = grpc.aio.secure_channel(settings.target, creds, options)
        else:
            self.channel = grpc.aio.insecure_channel(settings.target, options)
        self.stub = es_grpc.EvaluationServiceStub(self.channel)
        self._submit_call = submit_method(self.channel)

    async def Export(
        self, request: ts.ExportTraceServiceRequest, context: grpc.aio.ServicerContext
    ) -> ts.ExportTraceServiceResponse:
        by_model: dict[str, dict[str, pb.Prediction]] = {}
        rejected: Tally[str] = Tally()
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    if not is_genai(attributes(span.attributes)):
                        SPANS.labels("ignored", "not_genai").inc()
                        continue
                    try:
                        p = to_prediction(span, resource, self.defaults)
                    except Unusable as exc:
                        rejected[str(exc)] += 1
                        SPANS.labels("unusable", str(exc)).inc()
                        continue
                    by_model.setdefault(p.model, {}).setdefault(p.id, p)  # a span repeated in one request: once
        metadata = self._metadata(context)
        try:
            for model, preds in by_model.items():
                ordered = list(preds.values())
                for start in range(0, len(ordered), self.settings.max_batch):
                    await self._submit(model, ordered[start : start + self.settings.max_batch], metadata, rejected)
        except Failed as exc:
            await context.abort(exc.code, str(exc))
        response = ts.ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = sum(rejected.values())
            response.partial_success.error_message = "; ".join(f"{n} {why}" for why, n in sorted(rejected.items()))
        return response

    def _metadata(self, context: grpc.aio.ServicerContext) -> tuple[tuple[str, str], ...]:
        for key, val in context.invocation_metadata() or ():
            if key == "authorization":
                return (("authorization", val if isinstance(val, str) else val.decode()),)
        return (("authorization", f"Bearer {self.settings.token}"),) if self.settings.token else ()

    async def _submit(
        self, model: str, chunk: list[pb.Prediction], metadata: tuple[tuple[str, str], ...], rejected: Tally[str]
    ) -> None:
        """Submit until accepted; predictions the gateway rejects are dropped (and counted), the rest resent."""
        attempts = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.submit_timeout_s
        while chunk:
            request = es.SubmitPredictionsRequest(batch_id=batch_id(model, chunk), model=model, predictions=chunk)
            try:
                reply = await self._submit_call(request, metadata=metadata, timeout=max(deadline - loop.time(), 0.1))
            except grpc.aio.AioRpcError as err:
                code = err.code()
                if code == grpc.StatusCode.ALREADY_EXISTS:  # these span ids were accepted before: counted once
                    SPANS.labels("duplicate", "").inc(len(chunk))
                    BATCHES.labels("duplicate").inc()
                    return
                if code == grpc.StatusCode.INVALID_ARGUMENT:
                    chunk = self._drop_rejected(err, chunk, rejected)
                    continue
                if code in RETRYABLE:
                    attempts += 1
                    delay = min(retry_delay_s(err) or 0.1 * 2**attempts, 2.0)
                    if loop.time() + delay < deadline:
                        await asyncio.sleep(delay)
                        continue
                    BATCHES.labels("failed").inc()
                    raise Failed(grpc.StatusCode.UNAVAILABLE, f"the gateway: {code.name} {err.details()}") from None
                BATCHES.labels("failed").inc()
                if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                    raise Failed(code, f"the gateway: {err.details()}") from None
                raise Failed(grpc.StatusCode.UNAVAILABLE, f"the gateway: {code.name} {err.details()}") from None
            outcome = "duplicate" if reply.duplicate else "accepted"
            SPANS.labels(outcome, "").inc(len(chunk))
            BATCHES.labels(outcome).inc()
            return

    def _drop_rejected(
        self, err: grpc.aio.AioRpcError, chunk: list[pb.Prediction], rejected: Tally[str]
    ) -> list[pb.Prediction]:
        violations = getattr(from_rpc_error(err), "violations", [])
        bad: set[int] = set()
        for path, description in violations:
            m = _PREDICTION.match(path)
            if m is None:  # a batch-level problem (e.g. the model name): no prediction can go
                bad = set(range(len(chunk)))
                break
            bad.add(int(m.group(1)))
            log.info("span %s rejected by the gateway: %s %s", chunk[int(m.group(1))].id, path, description)
        if not bad:
            bad = set(range(len(chunk)))
        rejected["rejected_by_gateway"] += len(bad)
        SPANS.labels("rejected", "invalid_argument").inc(len(bad))
        return [p for i, p in enumerate(chunk) if i not in bad]

    async def close(self) -> None:
        await self.channel.close()


class Receiver:
    """The grpc.aio server around a TraceReceiver: start() binds (port 0 for any), stop() drains."""

    def __init__(self, settings: OtlpSettings) -> None:
        self.settings = settings
        self.servicer = TraceReceiver(settings)
        self.server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 << 20)])
        ts_grpc.add_TraceServiceServicer_to_server(self.servicer, self.server)
        self.port = 0

    async def start(self, address: str | None = None) -> int:
        where = address or self.settings.address
        s = self.settings
        if s.tls_cert and s.tls_key:
            creds = grpc.ssl_server_credentials([(s.tls_key.read_bytes(), s.tls_cert.read_bytes())])
            self.port = self.server.add_secure_port(where, creds)
        else:
            self.port = self.server.add_insecure_port(where)
        await self.server.start()
        log.info("OTLP/gRPC receiver on port %d, submitting to %s", self.port, s.target)
        return self.port

    async def stop(self, grace_s: float = 5.0) -> None:
        await self.server.stop(grace_s)
        await self.servicer.close()


async def serve(settings: OtlpSettings) -> None:
    import signal

    from holistic.observability import serve_metrics

    serve_metrics(settings.metrics_address)
    receiver = Receiver(settings)
    await receiver.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await receiver.stop()
