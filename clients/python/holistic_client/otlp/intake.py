"""One OTLP Export, whatever the transport: spans become predictions submitted once, log records wait
for their spans.

Each traces request's usable spans are grouped by model into batches of at most HOLISTIC_OTLP_MAX_BATCH
and submitted to the gateway before the request is answered. A batch's id is derived from its prediction
ids, which come from the span ids, so an exporter's retry of the same request gives the same batches and
the gateway answers them as duplicates: every span counts exactly once, across retries, replicas and
restarts. Batches never span requests, since a retried request could then be cut differently.

A span whose answer is in log records (the conventions' events) waits up to HOLISTIC_OTLP_EVENT_WAIT_S
for them; a span still without an answer is skipped (`no_output`), never scored as an empty answer.
The other way round, an evaluation log record in the context of a span the receiver has not seen yet
(exporters send logs and traces separately, in any order) waits as long for that span, whose prediction
it evaluates (its id, model, scenario); one whose span does not come joins by its span context alone,
as before, counted (`holistic_otlp_evaluation_span_waits_total{outcome="timed_out"}`) and told in
partial_success's message.
Skipped spans and log records are counted by reason and reported in partial_success, never as an error:
errors are only what the exporter should retry (UNAVAILABLE) or fix (UNAUTHENTICATED).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections import Counter as Tally
from collections.abc import Callable
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as ls
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from prometheus_client import Counter, Gauge

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import prediction_pb2 as pb
from holistic_client.errors import from_rpc_error, retry_delay_s
from holistic_client.otlp.evaluations import EVALUATION, to_evaluation
from holistic_client.otlp.events import LOG_RECORDS, EventBuffer, Key
from holistic_client.otlp.mapping import Unusable, attributes, is_genai, to_prediction, value
from holistic_client.otlp.messages import EVENT_NAMES, Event
from holistic_client.otlp.settings import OtlpSettings
from holistic_client.otlp.span_contexts import SPAN_WAITS, SpanContexts
from holistic_client.submit_encoding import submit_method

log = logging.getLogger("holistic.otlp")

SPANS = Counter(
    "holistic_otlp_spans",
    "Spans received, by outcome (accepted, duplicate, ignored, unusable, rejected) and reason.",
    ["outcome", "reason"],
)
WAITING = Gauge("holistic_otlp_spans_waiting", "Spans waiting for their log records (HOLISTIC_OTLP_EVENT_WAIT_S).")
BATCHES = Counter("holistic_otlp_batches", "Batches submitted to the gateway, by outcome.", ["outcome"])
EVALUATIONS = Counter(
    "holistic_otlp_evaluations",
    "gen_ai.evaluation.result events received (log records and span events), by outcome (accepted, "
    "duplicate, rejected) and reason.",
    ["outcome", "reason"],
)
_PREDICTION = re.compile(r"^predictions\[(\d+)\]")
RETRYABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED)
Metadata = tuple[tuple[str, str], ...]


def batch_id(model: str, predictions: list[pb.Prediction]) -> str:
    """Derived from the model and the prediction ids (the span ids): the same spans, the same batch."""
    digest = hashlib.sha256("\0".join([model, *(p.id for p in predictions)]).encode()).hexdigest()
    return f"otlp-{digest[:40]}"


def evaluation_batch_id(model: str, predictions: list[pb.Prediction]) -> str:
    """Derived from the evaluations themselves: a re-sent export is the same batch, a new score a new one."""
    digest = hashlib.sha256(model.encode())
    for p in predictions:
        digest.update(p.SerializeToString(deterministic=True))
    return f"otlp-eval-{digest.hexdigest()[:40]}"


def span_ref(trace_id: bytes, span_id: bytes) -> str | None:
    """`<trace id>-<span id>`, the id the receiver gives a span's prediction; None without a span context."""
    if not trace_id.strip(b"\0") or not span_id.strip(b"\0"):
        return None
    return f"{trace_id.hex()}-{span_id.hex()}"


class Evaluations:
    """One Export's evaluation-only predictions, one per (model, id), each metric of a prediction once."""

    def __init__(self) -> None:
        self.by_model: dict[str, dict[str, pb.Prediction]] = {}
        self.rejected: Tally[str] = Tally()

    def add(self, make: Callable[..., pb.Prediction], *args: Any) -> None:
        try:
            p = make(*args)
        except Unusable as exc:
            self.rejected[str(exc)] += 1
            EVALUATIONS.labels("rejected", str(exc)).inc()
            return
        held = self.by_model.setdefault(p.model, {}).setdefault(p.id, p)
        if held is p:
            return
        if any(e.name == p.evaluations[0].name for e in held.evaluations):
            self.rejected["evaluation_repeated"] += 1  # one score per metric of a prediction in one export
            EVALUATIONS.labels("rejected", "evaluation_repeated").inc()
            return
        held.evaluations.append(p.evaluations[0])


def partial(rejected: Tally[str]) -> tuple[int, str]:
    return sum(rejected.values()), "; ".join(f"{n} {why}" for why, n in sorted(rejected.items()))


class Failed(Exception):
    """Answer the Export with this status: the exporter retries (UNAVAILABLE) or must be fixed."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class Intake:
    """Made on the event loop that serves it (its channel and the buffer's waits belong to that loop)."""

    def __init__(self, settings: OtlpSettings) -> None:
        self.settings = settings
        self.defaults = settings.defaults()
        self.events = EventBuffer()
        self.spans = SpanContexts()  # what an evaluation log record in a span's context inherits from it
        options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
        if settings.gateway_tls_ca:
            creds = grpc.ssl_channel_credentials(settings.gateway_tls_ca.read_bytes())
            self.channel = grpc.aio.secure_channel(settings.target, creds, options)
        else:
            self.channel = grpc.aio.insecure_channel(settings.target, options)
        self._submit_call = submit_method(self.channel)

    def metadata(self, authorization: str | None) -> Metadata:
        """The exporter's authorization goes on to the gateway; without one, HOLISTIC_OTLP_TOKEN."""
        if authorization:
            return (("authorization", authorization),)
        return (("authorization", f"Bearer {self.settings.token}"),) if self.settings.token else ()

    async def logs(self, request: ls.ExportLogsServiceRequest, metadata: Metadata) -> ls.ExportLogsServiceResponse:
        """GenAI event records are held for their spans; others are not ours (a logs pipeline's). A record
        joins only a span sent with the same authorization: no one else's records reach a tenant's spans."""
        rejected: Tally[str] = Tally()
        evaluations = Evaluations()
        early: list[tuple[dict, dict, str, int]] = []  # evaluations whose span has not come yet
        for resource_logs in request.resource_logs:
            resource = _holistic(attributes(resource_logs.resource.attributes))
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    attrs = attributes(record.attributes)
                    name = record.event_name or attrs.get("event.name")
                    if name == EVALUATION:
                        ref = span_ref(record.trace_id, record.span_id)
                        at = record.time_unix_nano or record.observed_time_unix_nano
                        if ref is not None and "holistic.id" not in attrs and self.spans.get((metadata, ref)) is None:
                            early.append((attrs, resource, ref, at))  # its span says which prediction: wait
                            continue
                        context = {**resource, **(self.spans.get((metadata, ref or "")) or {})}
                        evaluations.add(to_evaluation, attrs, context, self.defaults, ref, at)
                        continue
                    if name not in EVENT_NAMES:
                        LOG_RECORDS.labels("ignored", "not_genai_event").inc()
                        continue
                    if not record.trace_id.strip(b"\0") or not record.span_id.strip(b"\0"):
                        rejected["no_span_context"] += 1
                        LOG_RECORDS.labels("rejected", "no_span_context").inc()
                        continue
                    body = value(record.body) if record.HasField("body") else None
                    outcome = self.events.add((metadata, record.trace_id, record.span_id), Event(name, attrs, body))
                    if outcome == "late":
                        rejected["span_already_answered"] += 1
                    LOG_RECORDS.labels(outcome if outcome == "held" else "rejected", outcome).inc()
        timed_out = await self._await_spans(early, metadata, evaluations)
        rejected.update(await self._evaluations(evaluations, metadata))
        response = ls.ExportLogsServiceResponse()
        if rejected or timed_out:
            n, message = partial(rejected)
            if timed_out:  # a warning, not a rejection (OTLP: error_message with rejected 0 is one)
                warning = f"{timed_out} evaluation records' spans not seen in time: joined by span context alone"
                message = f"{message}; {warning}" if message else warning
            log.info("OTLP logs: %d GenAI records skipped (%s)", n, message)
            response.partial_success.rejected_log_records, response.partial_success.error_message = n, message
        return response

    async def _await_spans(
        self, early: list[tuple[dict, dict, str, int]], metadata: Metadata, into: Evaluations
    ) -> int:
        """Evaluation records that came before their span wait (HOLISTIC_OTLP_EVENT_WAIT_S) for it, then join it:
        its prediction's id, model and scenario; those whose span did not come join by their span context alone
        (the id the receiver gives a span without holistic.id). How many timed out."""
        if early:
            await self.spans.wait_for(((metadata, ref) for _, _, ref, _ in early), self.settings.event_wait_s)
        timed_out = 0
        for attrs, resource, ref, at in early:
            span = self.spans.get((metadata, ref))
            timed_out += span is None
            SPAN_WAITS.labels("joined" if span is not None else "timed_out").inc()
            into.add(to_evaluation, attrs, {**resource, **(span or {})}, self.defaults, ref, at)
        if timed_out:
            log.info(
                "OTLP logs: %d evaluation records' spans not seen within %ss", timed_out, self.settings.event_wait_s
            )
        return timed_out

    async def traces(self, request: ts.ExportTraceServiceRequest, metadata: Metadata) -> ts.ExportTraceServiceResponse:
        rejected: Tally[str] = Tally()
        waiting: dict[Key, tuple[Span, dict]] = {}
        evaluations = Evaluations()
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self._span_evaluations(span, resource, evaluations)
                    if not is_genai(attributes(span.attributes)):
                        SPANS.labels("ignored", "not_genai").inc()
                        continue
                    key = (metadata, span.trace_id, span.span_id)
                    waiting[key] = (span, resource)
        seen = list(waiting)
        by_model = await self._predictions(waiting, rejected)
        for model, preds in by_model.items():
            ordered = list(preds.values())
            for start in range(0, len(ordered), self.settings.max_batch):
                await self._submit(model, ordered[start : start + self.settings.max_batch], metadata, rejected)
        for key in seen:  # answered: its log records are no longer needed (kept for a retry until now)
            self.events.finish(key)
        if by_model:
            self.spans.arrived()  # evaluation records waiting for these spans may join now
        skipped = await self._evaluations(evaluations, metadata)  # told in the message, not counted as spans
        response = ts.ExportTraceServiceResponse()
        if rejected or skipped:
            n, message = partial(rejected + skipped)
            n = sum(rejected.values())
            log.info("OTLP traces: %d spans skipped (%s)", n, message)
            response.partial_success.rejected_spans, response.partial_success.error_message = n, message
        return response

    def _span_evaluations(self, span: Span, resource: dict, evaluations: Evaluations) -> None:
        """A span's gen_ai.evaluation.result events: they evaluate the span they are on."""
        found = [e for e in span.events if e.name == EVALUATION]
        if not found:
            return
        context = {**_holistic(resource), **attributes(span.attributes)}
        ref = span_ref(span.trace_id, span.span_id)
        for e in found:
            attrs, at = attributes(e.attributes), e.time_unix_nano or span.end_time_unix_nano
            evaluations.add(to_evaluation, attrs, context, self.defaults, ref, at)

    async def _evaluations(self, evaluations: Evaluations, metadata: Metadata) -> Tally[str]:
        """Submit the export's evaluation-only predictions (batches of their own); the reasons of those skipped."""
        rejected = evaluations.rejected
        for model, preds in evaluations.by_model.items():
            ordered = list(preds.values())
            for start in range(0, len(ordered), self.settings.max_batch):
                chunk = ordered[start : start + self.settings.max_batch]
                await self._submit(model, chunk, metadata, rejected, EVALUATIONS, evaluation_batch_id)
        return rejected

    async def _predictions(
        self, waiting: dict[Key, tuple[Span, dict]], rejected: Tally[str]
    ) -> dict[str, dict[str, pb.Prediction]]:
        """The spans' predictions by model and id; a span without its answer waits for its log records."""
        by_model: dict[str, dict[str, pb.Prediction]] = {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.event_wait_s
        while True:
            for key, (span, resource) in list(waiting.items()):
                try:
                    p = to_prediction(span, resource, self.defaults, self.events.get(key))
                except Unusable as exc:
                    if str(exc) == "no_output" and loop.time() < deadline and not self.events.is_done(key):
                        continue  # its log records may be on their way
                    rejected[str(exc)] += 1
                    SPANS.labels("unusable", str(exc)).inc()
                else:
                    by_model.setdefault(p.model, {}).setdefault(p.id, p)  # a span repeated in one request: once
                    self._remember(key, p)
                del waiting[key]
            if not waiting:
                return by_model
            n = len(waiting)
            WAITING.inc(n)
            try:
                await self.events.arrival(deadline - loop.time())
            finally:
                WAITING.dec(n)

    def _remember(self, key: Key, p: pb.Prediction) -> None:
        ref = span_ref(key[1], key[2])
        if ref is None:
            return
        self.spans.remember((key[0], ref), {"holistic.model": p.model, "holistic.scenario": p.scenario,
                                            "holistic.id": p.id})  # fmt: skip

    async def _submit(
        self,
        model: str,
        chunk: list[pb.Prediction],
        metadata: Metadata,
        rejected: Tally[str],
        counted: Counter = SPANS,
        batch: Callable[[str, list[pb.Prediction]], str] = batch_id,
    ) -> None:
        """Submit until accepted; predictions the gateway rejects are dropped (and counted), the rest resent."""
        attempts = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.submit_timeout_s
        while chunk:
            request = es.SubmitPredictionsRequest(batch_id=batch(model, chunk), model=model, predictions=chunk)
            try:
                reply = await self._submit_call(request, metadata=metadata, timeout=max(deadline - loop.time(), 0.1))
            except grpc.aio.AioRpcError as err:
                code = err.code()
                if code == grpc.StatusCode.ALREADY_EXISTS:  # these span ids were accepted before: counted once
                    counted.labels("duplicate", "").inc(_events(chunk))
                    BATCHES.labels("duplicate").inc()
                    return
                if code == grpc.StatusCode.INVALID_ARGUMENT:
                    chunk = self._drop_rejected(err, chunk, rejected, counted)
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
            counted.labels(outcome, "").inc(_events(chunk))
            BATCHES.labels(outcome).inc()
            return

    def _drop_rejected(
        self, err: grpc.aio.AioRpcError, chunk: list[pb.Prediction], rejected: Tally[str], counted: Counter = SPANS
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
        counted.labels("rejected", "invalid_argument").inc(len(bad))
        return [p for i, p in enumerate(chunk) if i not in bad]

    async def close(self) -> None:
        await self.channel.close()


def _holistic(attrs: dict) -> dict:
    """What a resource gives its spans and events: its holistic.* attributes."""
    return {k: v for k, v in attrs.items() if k.startswith("holistic.")}


def _events(chunk: list[pb.Prediction]) -> int:
    """What a batch counts as: a span each, an evaluation each."""
    return sum(len(p.evaluations) or 1 for p in chunk)
