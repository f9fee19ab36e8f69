"""GenAI spans to predictions: every message form, usage, timing and holistic.* attribute, by hand."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from holistic.v1 import prediction_pb2 as pb
from holistic_client.otlp.mapping import Defaults, Unusable, to_prediction

T0 = 1_764_000_000_000_000_000  # ns


def any_value(v: object) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, list):
        return AnyValue(array_value=ArrayValue(values=[any_value(x) for x in v]))
    return AnyValue(string_value=str(v))


def span(attrs: dict[str, object], *, events: dict[str, dict[str, object]] | None = None, secs: float = 1.5) -> Span:
    s = Span(trace_id=bytes(range(16)), span_id=bytes(range(8)), name="chat",
             start_time_unix_nano=T0, end_time_unix_nano=T0 + int(secs * 1e9))  # fmt: skip
    s.attributes.extend(KeyValue(key=k, value=any_value(v)) for k, v in attrs.items())
    for name, ev in (events or {}).items():
        e = s.events.add(name=name, time_unix_nano=T0)
        e.attributes.extend(KeyValue(key=k, value=any_value(v)) for k, v in ev.items())
    return s


def test_current_conventions_with_holistic_attributes():
    inputs = [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Capital of France?"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Which country?"}]},
        {"role": "user", "parts": [{"type": "text", "content": "France, "}, {"type": "text", "content": "please."}]},
    ]
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": "Paris"}], "finish_reason": "stop"}]
    p = to_prediction(span({
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "atlas", "gen_ai.response.model": "atlas-0613",
        "gen_ai.usage.input_tokens": 21, "gen_ai.usage.output_tokens": 2,
        "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs),
        "gen_ai.response.time_to_first_chunk": 0.25,
        "holistic.task": "open_qa", "holistic.references": ["Paris", "paris, France"], "holistic.confidence": 0.9,
        "holistic.correct": True, "holistic.groups.dialect": "aae",
    }), {"holistic.scenario": "geo", "service.name": "x"}, Defaults())  # fmt: skip
    assert p.id == "000102030405060708090a0b0c0d0e0f-0001020304050607"
    assert p.model == "atlas-0613"  # the model that answered
    assert (p.scenario, p.task) == ("geo", pb.TASK_OPEN_QA)  # scenario from the resource
    assert p.input == "France, please." and p.output == "Paris"  # the last user message; the first choice
    assert list(p.references) == ["Paris", "paris, France"]
    assert p.confidence == 0.9 and p.correct is True and dict(p.groups) == {"dialect": "aae"}
    assert p.timing.latency.ToNanoseconds() == 1_500_000_000
    assert p.timing.time_to_first_token.ToNanoseconds() == 250_000_000
    assert (p.timing.prompt_tokens, p.timing.completion_tokens) == (21, 2)
    assert p.produced_at.ToNanoseconds() == T0 + 1_500_000_000
    assert not p.HasField("perturbation")


def test_older_forms_prompt_and_completion():
    # gen_ai.prompt / gen_ai.completion as JSON messages, older usage names
    p = to_prediction(span({
        "gen_ai.request.model": "swift", "gen_ai.usage.prompt_tokens": 7, "gen_ai.usage.completion_tokens": 1,
        "gen_ai.prompt": json.dumps([{"role": "user", "content": "2+2?"}]),
        "gen_ai.completion": json.dumps([{"role": "assistant", "content": "4"}]),
    }), {}, Defaults())  # fmt: skip
    assert (p.model, p.input, p.output) == ("swift", "2+2?", "4")
    assert (p.timing.prompt_tokens, p.timing.completion_tokens) == (7, 1)
    assert (p.scenario, p.task) == ("production", pb.TASK_FREE_GENERATION)  # the defaults
    # the flattened form (gen_ai.prompt.<i>.role/content), OpenAI-style content parts
    p = to_prediction(span({
        "gen_ai.request.model": "swift", "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be kind.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Hi",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Hello!",
    }), {}, Defaults())  # fmt: skip
    assert (p.input, p.output) == ("Hi", "Hello!")
    # on the span's events (semantic conventions 1.26), plain text
    p = to_prediction(
        span({"gen_ai.system": "openai", "gen_ai.request.model": "swift"},
             events={"gen_ai.content.prompt": {"gen_ai.prompt": "Say hi"},
                     "gen_ai.content.completion": {"gen_ai.completion": "hi"}}),
        {}, Defaults(scenario="chat", task=pb.TASK_CLASSIFICATION),
    )  # fmt: skip
    assert (p.input, p.output, p.scenario, p.task) == ("Say hi", "hi", "chat", pb.TASK_CLASSIFICATION)
    assert not p.timing.HasField("time_to_first_token")


def test_perturbation_and_overrides():
    p = to_prediction(span({
        "gen_ai.request.model": "m", "holistic.model": "m-canary", "holistic.id": "q7~typos",
        "holistic.task": "TASK_MULTIPLE_CHOICE", "holistic.perturbation.name": "typos",
        "holistic.perturbation.family": "robustness", "holistic.perturbation.original_id": "q7",
        "gen_ai.server.time_to_first_token": 9.0,  # longer than the span: left out, never rejected
    }), {}, Defaults())  # fmt: skip
    assert (p.model, p.id, p.task) == ("m-canary", "q7~typos", pb.TASK_MULTIPLE_CHOICE)
    assert (p.perturbation.name, p.perturbation.family, p.perturbation.original_id) == (
        "typos",
        pb.PERTURBATION_FAMILY_ROBUSTNESS,
        "q7",
    )
    assert not p.timing.HasField("time_to_first_token")


@pytest.mark.parametrize(
    ("attrs", "status", "reason"),
    [
        ({"gen_ai.operation.name": "chat"}, Status.STATUS_CODE_UNSET, "no_model"),
        ({"gen_ai.request.model": "m"}, Status.STATUS_CODE_ERROR, "error_status"),
        ({"gen_ai.request.model": "m", "holistic.task": "poetry"}, Status.STATUS_CODE_OK, "bad_task"),
        ({"gen_ai.request.model": "m", "holistic.perturbation.name": "x"}, Status.STATUS_CODE_OK,
         "bad_perturbation_family"),
    ],
)  # fmt: skip
def test_unusable_spans_say_why(attrs, status, reason):
    s = span(attrs)
    s.status.code = status
    with pytest.raises(Unusable, match=f"^{reason}$"):
        to_prediction(s, {}, Defaults())
