"""One OTLP span -> one Prediction, or the reason it cannot be one.

GenAI spans (OpenTelemetry semantic conventions, `gen_ai.*`) say which model answered, its token usage,
its duration and, when content capture is on, the messages. Current conventions: `gen_ai.input.messages`
and `gen_ai.output.messages` (JSON: role + typed parts); older ones: `gen_ai.prompt` / `gen_ai.completion`
as JSON messages or text, on the span or on its `gen_ai.content.prompt` / `gen_ai.content.completion`
events, and the flattened `gen_ai.prompt.<i>.content` form. What OTel has no name for comes as `holistic.*`
attributes (on the span, or on its resource for a whole service): scenario, task, references, confidence,
correct, source, groups, perturbation, id. The id defaults to `<trace id>-<span id>`, so a span sent twice
is the same prediction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from holistic.v1 import prediction_pb2 as pb

TASKS = {pb.Task.Name(t).removeprefix("TASK_").lower(): t for t in pb.Task.values() if t != pb.TASK_UNSPECIFIED}
FAMILIES = {"robustness": pb.PERTURBATION_FAMILY_ROBUSTNESS, "fairness": pb.PERTURBATION_FAMILY_FAIRNESS}
TTFT_ATTRIBUTES = ("holistic.time_to_first_token", "gen_ai.response.time_to_first_chunk",
                   "gen_ai.server.time_to_first_token")  # fmt: skip


@dataclass(frozen=True)
class Defaults:
    scenario: str = "production"
    task: int = pb.TASK_FREE_GENERATION


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


def _text_of_message(message: Any) -> str:
    """Text of one message: current `parts` ({type: text, content}), `content` as text or OpenAI-style parts."""
    if isinstance(message, str):
        return message
    if not isinstance(message, Mapping):
        return ""
    parts = message.get("parts")
    if isinstance(parts, list):
        return "".join(p.get("content", "") for p in parts if isinstance(p, Mapping) and p.get("type") == "text")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", p.get("content", ""))) for p in content if isinstance(p, Mapping))
    return ""


def _messages(raw: Any) -> list[Any]:
    """A messages attribute: JSON text, plain text (one message), or already structured."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return [raw]
        raw = parsed
    if isinstance(raw, Mapping):
        return [raw]
    return list(raw) if isinstance(raw, list) else []


def _flattened(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """gen_ai.prompt.0.role / gen_ai.prompt.0.content ... (the older flattened form) in index order."""
    out: dict[int, dict[str, Any]] = {}
    for key, v in attrs.items():
        head, _, rest = key.removeprefix(prefix + ".").partition(".")
        if key.startswith(prefix + ".") and head.isdigit() and rest in ("role", "content"):
            out.setdefault(int(head), {})[rest] = v
    return [out[i] for i in sorted(out)]


def _find_messages(attrs: Mapping[str, Any], events: Mapping[str, Mapping[str, Any]], kind: str) -> list[Any]:
    current, old, event = (
        ("gen_ai.input.messages", "gen_ai.prompt", "gen_ai.content.prompt")
        if kind == "input"
        else ("gen_ai.output.messages", "gen_ai.completion", "gen_ai.content.completion")
    )
    for raw in (attrs.get(current), attrs.get(old), events.get(event, {}).get(old)):
        if raw is not None:
            return _messages(raw)
    return _flattened(attrs, old)


def input_text(messages: list[Any]) -> str:
    """The last user message (the prompt this answer is for); without roles, every message's text."""
    users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    if users:
        return _text_of_message(users[-1])
    return "\n".join(t for t in (_text_of_message(m) for m in messages) if t)


def output_text(messages: list[Any]) -> str:
    """The first choice's text."""
    for m in messages:
        text = _text_of_message(m)
        if text:
            return text
    return ""


def _number(attrs: Mapping[str, Any], *names: str) -> float | None:
    for name in names:
        v = attrs.get(name)
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            return float(v)
    return None


def to_prediction(span: Span, resource: Mapping[str, Any], defaults: Defaults) -> pb.Prediction:
    """The span's prediction; Unusable with the reason when it has none to give."""
    attrs = {**{k: v for k, v in resource.items() if k.startswith("holistic.")}, **attributes(span.attributes)}
    if span.status.code == Status.STATUS_CODE_ERROR:
        raise Unusable("error_status")
    model = attrs.get("holistic.model") or attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model")
    if not isinstance(model, str) or not model:
        raise Unusable("no_model")
    events = {e.name: attributes(e.attributes) for e in span.events}
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
    p.input = input_text(_find_messages(attrs, events, "input"))
    p.output = output_text(_find_messages(attrs, events, "output"))
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
