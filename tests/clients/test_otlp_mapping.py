"""GenAI spans to predictions: every message form (span attributes, span events, log records), the
operations that are predictions, usage, timing and holistic.* attribute, by hand."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from holistic.v1 import prediction_pb2 as pb
from holistic_client.otlp.mapping import Defaults, Unusable, to_prediction
from holistic_client.otlp.messages import Event

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
        "gen_ai.completion": "B",
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
        # content capture off: never scored as an empty answer
        ({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.input.messages": "[]"},
         Status.STATUS_CODE_OK, "no_output"),
        ({"gen_ai.request.model": "m", "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": []}])},
         Status.STATUS_CODE_OK, "no_output"),
        # not one model answering a prompt, even with a model and text: not a prediction
        ({"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "e5", "gen_ai.completion": "x"},
         Status.STATUS_CODE_OK, "operation_embeddings"),
        ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.completion": "x"},
         Status.STATUS_CODE_OK, "operation_execute_tool"),
        ({"gen_ai.operation.name": "create_agent", "gen_ai.request.model": "m"}, Status.STATUS_CODE_OK,
         "operation_create_agent"),
        ({"gen_ai.operation.name": "rerank", "gen_ai.request.model": "m"}, Status.STATUS_CODE_OK, "operation_other"),
        ({"gen_ai.operation.name": ["chat"], "gen_ai.request.model": "m"}, Status.STATUS_CODE_OK, "operation_other"),
    ],
)  # fmt: skip
def test_unusable_spans_say_why(attrs, status, reason):
    s = span(attrs)
    s.status.code = status
    with pytest.raises(Unusable, match=f"^{reason}$"):
        to_prediction(s, {}, Defaults())


def test_operations_are_configurable():
    attrs = {"gen_ai.request.model": "m", "gen_ai.completion": "ok"}
    assert to_prediction(span({**attrs, "gen_ai.operation.name": "generate_content"}), {}, Defaults()).output == "ok"
    assert to_prediction(span({**attrs, "gen_ai.operation.name": "text_completion"}), {}, Defaults()).output == "ok"
    only_chat = Defaults(operations=frozenset({"chat"}))
    with pytest.raises(Unusable, match=r"^operation_text_completion$"):
        to_prediction(span({**attrs, "gen_ai.operation.name": "text_completion"}), {}, only_chat)
    with_embeddings = Defaults(operations=frozenset({"chat", "embeddings"}))
    assert to_prediction(span({**attrs, "gen_ai.operation.name": "embeddings"}), {}, with_embeddings).model == "m"


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
INPUT = [
    {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
    {"role": "user", "parts": [{"type": "text", "content": "Capital of France?"}]},
]
OUTPUT = [
    {"role": "assistant", "parts": [{"type": "text", "content": "Paris"}], "finish_reason": "stop"},
    {"role": "assistant", "parts": [{"type": "text", "content": "Lyon"}], "finish_reason": "stop"},
]


def test_messages_on_span_events():
    # semantic conventions 1.37+: one details event, the messages as JSON (a span event's attributes are flat)
    s = span(CHAT, events={"gen_ai.client.inference.operation.details": {
        "gen_ai.input.messages": json.dumps(INPUT), "gen_ai.output.messages": json.dumps(OUTPUT)}})  # fmt: skip
    p = to_prediction(s, {}, Defaults())
    assert (p.input, p.output) == ("Capital of France?", "Paris")
    # 1.28-1.36: an event per message, the body's fields as the event's attributes
    s = span(CHAT, events={
        "gen_ai.system.message": {"gen_ai.system": "openai", "content": "Be brief."},
        "gen_ai.user.message": {"gen_ai.system": "openai", "content": "Capital of Italy?"},
        "gen_ai.choice": {"gen_ai.system": "openai", "index": 0, "finish_reason": "stop", "message": "Rome"},
    })  # fmt: skip
    assert (to_prediction(s, {}, Defaults()).input, to_prediction(s, {}, Defaults()).output) == (
        "Capital of Italy?",
        "Rome",
    )
    # the same as the Azure AI Inference SDK writes them: the body as gen_ai.event.content JSON
    s = span(CHAT, events={
        "gen_ai.user.message": {"gen_ai.event.content": json.dumps({"role": "user", "content": "2+2?"})},
        "gen_ai.choice": {"gen_ai.event.content": json.dumps(
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "4"}})},
    })  # fmt: skip
    p = to_prediction(s, {}, Defaults())
    assert (p.input, p.output) == ("2+2?", "4")


def test_messages_in_log_records():
    """Log records (as the conventions now recommend) come structured: bodies and attributes are maps."""
    choice = {"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "Lyon"}}
    first = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Paris"}}
    logs = [
        Event("gen_ai.system.message", {"gen_ai.system": "openai"}, {"content": "Be brief."}),
        Event("gen_ai.user.message", {}, {"content": "Capital of France?"}),
        Event("gen_ai.assistant.message", {}, {"content": "Which country?"}),
        Event("gen_ai.user.message", {}, {"content": [{"type": "text", "text": "France, please."}]}),
        Event("gen_ai.choice", {}, choice),  # a later choice first: the first choice is index 0
        Event("gen_ai.choice", {}, first),
    ]
    p = to_prediction(span(CHAT), {}, Defaults(), logs)
    assert (p.input, p.output) == ("France, please.", "Paris")
    details = Event(
        "gen_ai.client.inference.operation.details",
        {"gen_ai.operation.name": "chat", "gen_ai.input.messages": INPUT, "gen_ai.output.messages": OUTPUT},
    )
    p = to_prediction(span(CHAT), {}, Defaults(), [details])
    assert (p.input, p.output) == ("Capital of France?", "Paris")
    text_bodies = [Event("gen_ai.user.message", {}, "Hi"), Event("gen_ai.choice", {}, {"message": "Hello"})]
    p = to_prediction(span(CHAT), {}, Defaults(), text_bodies)
    assert (p.input, p.output) == ("Hi", "Hello")
    # the span's own attributes win over its records; no record with content: no output
    p = to_prediction(span({**CHAT, "gen_ai.completion": "Nice"}), {}, Defaults(), [details])
    assert p.output == "Nice"
    with pytest.raises(Unusable, match=r"^no_output$"):
        to_prediction(span(CHAT), {}, Defaults(), [Event("gen_ai.choice", {}, {"index": 0, "finish_reason": "stop"})])
