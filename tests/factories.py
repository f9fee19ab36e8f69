"""Predictions for tests, built field by field so each test says what it depends on."""

from __future__ import annotations

from typing import Any

from holistic.v1 import prediction_pb2 as pb


def prediction(
    pid: str = "p1",
    *,
    scenario: str = "mmlu",
    task: int = pb.TASK_MULTIPLE_CHOICE,
    output: str = "Paris",
    references: list[str] | None = None,
    latency_s: float | None = None,
    ttft_s: float | None = None,
    produced_at_s: float | None = None,
    input: str = "Q?",
    **fields: Any,
) -> pb.Prediction:
    p = pb.Prediction(id=pid, scenario=scenario, task=task, output=output, input=input, **fields)
    p.references.extend(["Paris"] if references is None else references)
    if latency_s is not None:
        p.timing.latency.FromNanoseconds(round(latency_s * 1e9))
    if ttft_s is not None:
        p.timing.time_to_first_token.FromNanoseconds(round(ttft_s * 1e9))
    if produced_at_s is not None:
        p.produced_at.FromNanoseconds(round(produced_at_s * 1e9))
    return p


def batch(n: int, prefix: str = "p", **kwargs: Any) -> list[pb.Prediction]:
    return [prediction(f"{prefix}{i}", **kwargs) for i in range(n)]


def classified(model: str, n: int, wrong_every: int, now: float) -> list[pb.Prediction]:
    """n classification predictions over 20 minutes (20 time buckets); every `wrong_every`-th wrong."""
    out = []
    for i in range(n):
        truth = "positive" if i % 3 else "negative"
        output = ("negative" if truth == "positive" else "positive") if i % wrong_every == 0 else truth
        out.append(prediction(f"{model}{i}", model=model, scenario="imdb", task=pb.TASK_CLASSIFICATION,
                              output=output, references=[truth], produced_at_s=now - 60 * (i % 20)))  # fmt: skip
    return out


def varint(n: int) -> bytes:
    """A protobuf base-128 varint, for building wire bytes by hand."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def wire_field(number: int, wire_type: int, payload: bytes = b"") -> bytes:
    """A field's key (number, wire type), then its payload as given."""
    return varint(number << 3 | wire_type) + payload


def delimited(number: int, data: bytes) -> bytes:
    """A length-delimited field: key, length, bytes."""
    return wire_field(number, 2, varint(len(data)) + data)
