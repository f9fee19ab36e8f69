"""One OTLP span -> one Prediction, or the reason it cannot be one.

GenAI spans (OpenTelemetry semantic conventions, `gen_ai.*`) say which model answered, its token usage,
its duration and, when content capture is on, the messages (on the span, its events or correlated log
records: messages.py). Only the operations in Defaults.operations (chat, text_completion,
generate_content) are predictions; embeddings, tools and agents are not, and a span whose answer
cannot be found is not scored as an empty one. What OTel has no name for comes as `holistic.*`
attributes (on the span, or on its resource for a whole service): scenario, task, references, confidence,
correct, source, groups, perturbation, id. The id defaults to `<trace id>-<span id>`, so a span sent twice
is the same prediction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from holistic.v1 import prediction_pb2 as pb
from holistic_client.otlp.messages import Event, conversation

TASKS = {pb.Task.Name(t).removeprefix("TASK_").lower(): t for t in pb.Task.values() if t != pb.TASK_UNSPECIFIED}
FAMILIES = {"robustness": pb.PERTURBATION_FAMILY_ROBUSTNESS, "fairness": pb.PERTURBATION_FAMILY_FAIRNESS}
TTFT_ATTRIBUTES = ("holistic.time_to_first_token", "gen_ai.response.time_to_first_chunk",
                   "gen_ai.server.time_to_first_token")  # fmt: skip


# gen_ai.operation.name values that are one model answering a prompt; embeddings, tools and agents are not.
PREDICTION_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
KNOWN_OPERATIONS = PREDICTION_OPERATIONS | {"embeddings", "execute_tool", "create_agent", "invoke_agent"}


@dataclass(frozen=True)
class Defaults:
    scenario: str = "production"
    task: int = pb.TASK_FREE_GENERATION
    operations: frozenset[str] = field(default=PREDICTION_OPERATIONS)


class Unusable(ValueError):
    """A GenAI span that cannot become a prediction; str() is the reason, counted by label."""


def value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


def attributes(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


def is_genai(attrs: Mapping[str, Any]) -> bool:
    return any(k.startswith("gen_ai.") for k in attrs)


def _number(attrs: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        v = attrs.get(name)
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            return float(v)
    return None


def span_events(span: Span) -> list[Event]:
    return [Event(e.name, attributes(e.attributes)) for e in span.events]


def to_prediction(
    span: Span, resource: Mapping[str, Any], defaults: Defaults, logs: Iterable[Event] = ()
) -> pb.Prediction:
    """The span's prediction, its messages from the span, its events and the correlated log records `logs`;
    Unusable with the reason when it has none to give (`no_output` last, so it alone can be waited out)."""
    attrs = {**{k: v for k, v in resource.items() if k.startswith("holistic.")}, **attributes(span.attributes)}
    operation = attrs.get("gen_ai.operation.name")
    # older spans name no operation: a call
    if operation is not None and (operation := str(operation)) not in defaults.operations:
        raise Unusable(f"operation_{operation}" if operation in KNOWN_OPERATIONS else "operation_other")
    if span.status.code == Status.STATUS_CODE_ERROR:
        raise Unusable("error_status")
    model = attrs.get("holistic.model") or attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    if not isinstance(model, str) or not model:
        raise Unusable("no_model")
    p = pb.Prediction(model=model)
    p.id = str(attrs.get("holistic.id") or f"{span.trace_id.hex()}-{span.span_id.hex()}")
    p.scenario = str(attrs.get("holistic.scenario") or defaults.scenario)
    task = attrs.get("holistic.task")
    if task is None:
        p.task = defaults.task  # type: ignore[assignment]
    elif str(task).lower().removeprefix("task_") in TASKS:
        p.task = TASKS[str(task).lower().removeprefix("task_")]  # type: ignore[assignment]
    else:
        raise Unusable("bad_task")
    refs = attrs.get("holistic.references")
    if refs is not None:
        p.references.extend([str(r) for r in refs] if isinstance(refs, list) else [str(refs)])
    confidence = _number(attrs, "holistic.confidence")
    if confidence is not None:
        p.confidence = confidence
    if isinstance(attrs.get("holistic.correct"), bool):
        p.correct = attrs["holistic.correct"]
    if isinstance(attrs.get("holistic.source"), str):
        p.source = attrs["holistic.source"]
    for key, v in attrs.items():
        if key.startswith("holistic.groups.") and v is not None:
            p.groups[key.removeprefix("holistic.groups.")] = str(v)
    if "holistic.perturbation.name" in attrs:
        family = str(attrs.get("holistic.perturbation.family", "")).lower()
        if family not in FAMILIES:
            raise Unusable("bad_perturbation_family")
        p.perturbation.name = str(attrs["holistic.perturbation.name"])
        p.perturbation.family = FAMILIES[family]
        p.perturbation.original_id = str(attrs.get("holistic.perturbation.original_id", ""))
    _timing(p, span, attrs)
    if span.end_time_unix_nano:
        p.produced_at.FromNanoseconds(span.end_time_unix_nano)
    p.input, p.output = conversation(attrs, [*span_events(span), *logs])
    if not p.output:  # never scored as an empty answer: content capture off, or its log records not here yet
        raise Unusable("no_output")
    return p


def _timing(p: pb.Prediction, span: Span, attrs: Mapping[str, Any]) -> None:
    latency_ns = span.end_time_unix_nano - span.start_time_unix_nano
    if span.start_time_unix_nano and latency_ns > 0:
        p.timing.latency.FromNanoseconds(latency_ns)
        ttft = _number(attrs, *TTFT_ATTRIBUTES)
        if ttft is not None and 0 <= ttft * 1e9 <= latency_ns:
            p.timing.time_to_first_token.FromNanoseconds(round(ttft * 1e9))
    prompt = _number(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
    completion = _number(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
    if prompt is not None and prompt >= 0:
        p.timing.prompt_tokens = int(prompt)
    if completion is not None and completion >= 0:
        p.timing.completion_tokens = int(completion)
