"""OpenTelemetry's `gen_ai.evaluation.result` events, built and sent as OTLP logs, never blocking scoring.

The GenAI semantic conventions define the event: a log record named `gen_ai.evaluation.result` with
an empty body and the attributes `gen_ai.evaluation.name` (required), `gen_ai.evaluation.score.value`
(double) and `gen_ai.evaluation.score.label` (each conditionally required, if applicable),
`gen_ai.evaluation.explanation` and `gen_ai.response.id` (recommended) and `error.type` (if the
evaluation failed). Workers send one per sampled scored prediction, the quality exporter one per
profile cell that changed (docs/otlp.md).

Sending is best effort and bounded: `EvaluationSender.offer` puts a record on a queue of at most
HOLISTIC_OTLP_EVAL_QUEUE records and returns at once; one thread sends what is queued to the
collector (ExportLogsService over OTLP/gRPC or OTLP/HTTP, with HOLISTIC_OTLP_EVAL_HEADERS:
otlp_export.py; built from opentelemetry-proto, no SDK at run time). A full queue or a failed export
drops records, counted in `holistic_evaluation_events{outcome}`.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
import zlib
from collections.abc import Mapping
from typing import NamedTuple

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from prometheus_client import Counter

from holistic.process.otlp_export import ExportFailed, transport
from holistic.settings import Settings

log = logging.getLogger("holistic.process.evaluation_events")

EVENT_NAME = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
ERROR_TYPE = "error.type"

EVENTS = Counter(
    "holistic_evaluation_events",
    "gen_ai.evaluation.result events by outcome: sent, dropped_queue_full (the queue held "
    "HOLISTIC_OTLP_EVAL_QUEUE), dropped_export_failed (the collector refused or was unreachable).",
    ["outcome"],
)
MAX_EXPORT = 512  # records per ExportLogsServiceRequest, as the SDK's BatchLogRecordProcessor sends

Value = str | float | int | bool


class Score(NamedTuple):
    """One evaluation: a metric's value, and a label where the value has one (a 0/1 outcome); or, when the
    family could not score a prediction it was asked to, no value and `error_type` (the conventions' error.type,
    a low-cardinality reason such as `empty_output`)."""

    name: str
    value: float | None
    label: str | None = None
    error_type: str | None = None


def in_sample(model: str, scenario: str, prediction_id: str, rate: float) -> bool:
    """Whether a prediction's events are sent: CRC-32 of "<model>\\0<scenario>\\0<id>" below rate × 2³², so
    every replica and retry picks the same ones (crc32, not sampling.py's blake2b: ~20x cheaper a
    prediction, and the predictions a worker sees are already its scoring sample)."""
    if rate >= 1.0:
        return True
    return zlib.crc32(f"{model}\0{scenario}\0{prediction_id}".encode("utf-8", "surrogatepass")) < rate * 4294967296


def _any(value: Value) -> common_pb2.AnyValue:
    if isinstance(value, bool):
        return common_pb2.AnyValue(bool_value=value)
    if isinstance(value, int):
        return common_pb2.AnyValue(int_value=value)
    if isinstance(value, float):
        return common_pb2.AnyValue(double_value=value)
    return common_pb2.AnyValue(string_value=value)


def record(
    score: Score,
    *,
    explanation: str = "",
    response_id: str = "",
    attributes: Mapping[str, Value] | None = None,
    time_ns: int | None = None,
) -> logs_pb2.LogRecord:
    """The event as a log record; `attributes` add context (holistic.model, ...) after the convention's. A failed
    evaluation carries error.type and no score."""
    attrs: list[tuple[str, Value]] = [(NAME, score.name)]
    if score.value is not None:
        attrs.append((SCORE_VALUE, float(score.value)))
    if score.error_type:
        attrs.append((ERROR_TYPE, score.error_type))
    if score.label:
        attrs.append((SCORE_LABEL, score.label))
    if explanation:
        attrs.append((EXPLANATION, explanation))
    if response_id:
        attrs.append((RESPONSE_ID, response_id))
    attrs.extend((attributes or {}).items())
    now = time.time_ns()
    return logs_pb2.LogRecord(
        time_unix_nano=time_ns or now,
        observed_time_unix_nano=now,
        severity_number=logs_pb2.SEVERITY_NUMBER_INFO,
        event_name=EVENT_NAME,
        attributes=[common_pb2.KeyValue(key=k, value=_any(v)) for k, v in attrs],
    )


class EvaluationSender:
    """A bounded queue of records and the one thread that exports them to an OTLP logs collector."""

    def __init__(
        self,
        endpoint: str,
        service: str,
        cap: int = 10_000,
        timeout_s: float = 5.0,
        protocol: str = "",
        headers: str = "",
    ) -> None:
        self.transport = transport(endpoint, protocol, headers, timeout_s)
        self.resource = resource_pb2.Resource(attributes=[common_pb2.KeyValue(key="service.name", value=_any(service))])
        self.queue: queue.Queue[logs_pb2.LogRecord | None] = queue.Queue(maxsize=cap)
        self.thread = threading.Thread(target=self._run, name="evaluation-events", daemon=True)
        self.thread.start()

    def offer(self, rec: logs_pb2.LogRecord) -> bool:
        """Queue the record for sending; False (and counted) when the queue is full. Never blocks."""
        try:
            self.queue.put_nowait(rec)
            return True
        except queue.Full:
            EVENTS.labels("dropped_queue_full").inc()
            return False

    def _run(self) -> None:
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < MAX_EXPORT:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._export(batch)
                    return
                batch.append(nxt)
            self._export(batch)

    def _export(self, records: list[logs_pb2.LogRecord]) -> None:
        request = logs_service_pb2.ExportLogsServiceRequest(
            resource_logs=[
                logs_pb2.ResourceLogs(
                    resource=self.resource,
                    scope_logs=[
                        logs_pb2.ScopeLogs(scope=common_pb2.InstrumentationScope(name="holistic"), log_records=records)
                    ],
                )
            ]
        )
        try:
            reply = self.transport.export(request)
        except ExportFailed as exc:
            EVENTS.labels("dropped_export_failed").inc(len(records))
            log.warning("evaluation events: %d dropped, %s", len(records), exc)
            return
        rejected = reply.partial_success.rejected_log_records if reply.HasField("partial_success") else 0
        EVENTS.labels("sent").inc(len(records) - rejected)
        if rejected:
            EVENTS.labels("dropped_export_failed").inc(rejected)

    def close(self, timeout_s: float = 5.0) -> None:
        """Send what is queued (within timeout_s), then stop the thread."""
        with contextlib.suppress(queue.Full):
            self.queue.put(None, timeout=timeout_s)
        self.thread.join(timeout_s)
        self.transport.close()


def sender(settings: Settings, service: str) -> EvaluationSender | None:
    """A sender when an endpoint is configured (HOLISTIC_OTLP_EVAL_ENDPOINT), else None: nothing is built."""
    if not settings.otlp_eval_endpoint:
        return None
    return EvaluationSender(
        settings.otlp_eval_endpoint,
        service,
        settings.otlp_eval_queue,
        protocol=settings.otlp_eval_protocol,
        headers=settings.otlp_eval_headers,
    )
