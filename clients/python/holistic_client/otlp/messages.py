"""The prompt and the answer of one GenAI call, from every form the semantic conventions have used.

On the span: `gen_ai.input.messages` / `gen_ai.output.messages` (current: JSON, role + typed parts),
`gen_ai.prompt` / `gen_ai.completion` (older: JSON messages or text) and `gen_ai.prompt.<i>.content`
(flattened). As events, either on the span or as OTLP log records correlated to it by trace and span id
(what the conventions recommend now): `gen_ai.client.inference.operation.details` (the messages as
attributes, structured or JSON), the per-message `gen_ai.system.message`, `gen_ai.user.message`,
`gen_ai.assistant.message`, `gen_ai.tool.message` and `gen_ai.choice` (fields in the body, or on a span
event as its attributes or as `gen_ai.event.content` JSON), and the oldest `gen_ai.content.prompt` /
`gen_ai.content.completion`. Content is only there when the instrumentation captures it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DETAILS = "gen_ai.client.inference.operation.details"
ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE = "gen_ai.choice"
OLD_EVENTS = ("gen_ai.content.prompt", "gen_ai.content.completion")
EVENT_NAMES = frozenset({DETAILS, CHOICE, *ROLE_EVENTS, *OLD_EVENTS})


@dataclass(frozen=True)
class Event:
    """One GenAI event, from a span event or a log record: its name, attributes and body."""

    name: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None

    def fields(self) -> Mapping[str, Any]:
        """The event's body fields: the body, else `gen_ai.event.content` JSON, else the attributes."""
        for raw in (self.body, self.attributes.get("gen_ai.event.content")):
            parsed = _json(raw)
            if isinstance(parsed, Mapping):
                return parsed
        return self.attributes


def _json(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def text_of(message: Any) -> str:
    """Text of one message: `parts` ({type: text, content}), `content` as text or OpenAI-style parts."""
    if isinstance(message, str):
        return message
    if not isinstance(message, Mapping):
        return ""
    parts = message.get("parts")
    if isinstance(parts, list):
        return "".join(str(p.get("content", "")) for p in parts if isinstance(p, Mapping) and p.get("type") == "text")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", p.get("content", ""))) for p in content if isinstance(p, Mapping))
    return ""


def _messages(raw: Any) -> list[Any]:
    """A messages value: JSON text, plain text (one message), or already structured (a log record's)."""
    raw = _json(raw)
    if isinstance(raw, str | Mapping):
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


def _from_attributes(attrs: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    inputs = _messages(attrs.get("gen_ai.input.messages", attrs.get("gen_ai.prompt")))
    outputs = _messages(attrs.get("gen_ai.output.messages", attrs.get("gen_ai.completion")))
    return inputs or _flattened(attrs, "gen_ai.prompt"), outputs or _flattened(attrs, "gen_ai.completion")


def _from_events(events: Iterable[Event]) -> tuple[list[Any], list[Any]]:
    inputs: list[Any] = []
    outputs: list[Any] = []
    choices: list[tuple[int, Any]] = []
    for e in events:
        if e.name == DETAILS:
            found = _from_attributes({**(e.body if isinstance(e.body, Mapping) else {}), **e.attributes})
            inputs += found[0]
            outputs += found[1]
        elif e.name in ROLE_EVENTS:
            fields = e.fields()
            content = fields.get("content", e.body if isinstance(e.body, str) else None)  # or a text body
            inputs.append({"role": ROLE_EVENTS[e.name], "content": content, "parts": fields.get("parts")})
        elif e.name == CHOICE:
            fields = e.fields()
            index = fields.get("index", 0)
            message = fields.get("message", fields)
            parsed = _json(message)  # a span event's attribute holds a message as JSON text
            choices.append((index if isinstance(index, int) else 0, parsed if isinstance(parsed, Mapping) else message))
        elif e.name == OLD_EVENTS[0]:
            inputs += _messages(e.attributes.get("gen_ai.prompt", e.body))
        elif e.name == OLD_EVENTS[1]:
            outputs += _messages(e.attributes.get("gen_ai.completion", e.body))
    outputs += [m for _, m in sorted(choices, key=lambda c: c[0])]
    return inputs, outputs


def input_text(messages: list[Any]) -> str:
    """The last user message (the prompt this answer is for); without roles, every message's text."""
    users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    if users:
        return text_of(users[-1])
    return "\n".join(t for t in (text_of(m) for m in messages) if t)


def output_text(messages: list[Any]) -> str:
    """The first choice's text."""
    for m in messages:
        text = text_of(m)
        if text:
            return text
    return ""


def conversation(attrs: Mapping[str, Any], events: Iterable[Event]) -> tuple[str, str]:
    """(input, output) text: the span's attributes first, then its events and correlated log records."""
    span_in, span_out = _from_attributes(attrs)
    event_in, event_out = _from_events(events)
    return input_text(span_in or event_in), output_text(span_out or event_out)
