"""Predictions per minute from an envelope's bytes (metric_services/_minutes.c) equal the Python loop."""

from __future__ import annotations

import os
import random

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.v1.prediction_pb2 import Prediction
from metric_services import minutes
from tests.factories import delimited, varint, wire_field

if minutes._counts is None and os.environ.get("CI"):  # ./dev and any pip install build it; CI must test it
    pytest.fail("metric_services/_minutes.c is not built (tools/build_native.py)", pytrace=False)
needs_c = pytest.mark.skipif(minutes._counts is None, reason="metric_services/_minutes.c is not built (no C compiler)")


U64 = (1 << 64) - 1  # a negative int64 on the wire: its two's complement, ten bytes


def timestamp(seconds: int | None = None, nanos: int | None = None) -> bytes:
    out = b""
    if seconds is not None:
        out += wire_field(1, 0, varint(seconds & U64))
    if nanos is not None:
        out += wire_field(2, 0, varint(nanos & U64))
    return out


def envelope_bytes(predictions: list[bytes], accept_s: int = 1_700_000_123) -> bytes:
    """Request-like bytes (batch id, model, predictions) followed by a header, as the gateway writes."""
    body = delimited(1, b"b") + delimited(2, b"m") + b"".join(delimited(3, p) for p in predictions)
    header = BatchEnvelope(batch_id="b", model="m", sequence=7)
    header.accept_time.seconds = accept_s
    return body + header.SerializeToString()


def both(raw: bytes) -> tuple[dict[int, int] | None, dict[int, int]]:
    env = BatchEnvelope.FromString(raw)
    accept_s = env.accept_time.seconds + env.accept_time.nanos * 1e-9
    assert minutes._counts is not None
    return minutes._counts(raw, int(accept_s // 60)), minutes.loop(env, accept_s)


def same(raw: bytes) -> None:
    fast, slow = both(raw)
    assert fast is not None
    assert list(fast.items()) == list(slow.items())  # the same minutes, counts and order
    env = BatchEnvelope.FromString(raw)
    assert minutes.per_minute(raw, env, env.accept_time.seconds) == slow


SECONDS = st.one_of(
    st.none(),
    st.just(0),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=1_699_999_000, max_value=1_700_003_000),
    st.integers(min_value=-200, max_value=200),
)
NANOS = st.one_of(st.none(), st.just(0), st.integers(min_value=-(2**31), max_value=2**31 - 1))
OTHER = st.sampled_from(
    [
        b"",
        delimited(1, b"id-1"),
        delimited(6, "out \u00e9".encode()),
        wire_field(9, 1, bytes(8)),  # confidence, fixed64
        wire_field(99, 0, varint(5)),  # unknown varint
        wire_field(98, 5, b"\x01\x02\x03\x04"),  # unknown fixed32
        delimited(97, b"\x08\x01"),  # unknown length-delimited
        wire_field(15, 0, varint(1_700_000_000)),  # produced_at with a varint's wire type: unknown, ignored
        delimited(14, timestamp(5, 6)),  # timing: another message
    ]
)


@st.composite
def prediction(draw: st.DrawFn) -> bytes:
    parts = [draw(OTHER)]
    for _ in range(draw(st.integers(min_value=0, max_value=3))):  # produced_at 0-3 times: the messages merge
        ts = timestamp(draw(SECONDS), draw(NANOS))
        if draw(st.booleans()):
            ts += draw(st.sampled_from([wire_field(3, 0, varint(9)), delimited(4, b"x"), wire_field(1, 5, bytes(4))]))
        parts.append(delimited(15, ts))
        parts.append(draw(OTHER))
    return b"".join(parts)


@needs_c
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(prediction(), max_size=40), st.integers(min_value=0, max_value=2_000_000_000))
def test_wire_counts_equal_the_loop(predictions: list[bytes], accept_s: int) -> None:
    same(envelope_bytes(predictions, accept_s))


@needs_c
def test_hand_worked() -> None:
    raw = envelope_bytes(
        [
            delimited(15, timestamp(120)),  # minute 2
            delimited(15, timestamp(-1)),  # floor: minute -1
            delimited(15, timestamp(0, 5)),  # nanos alone: set, minute 0
            b"",  # unset: the accept minute
            delimited(15, timestamp(179)),  # minute 2 again
            delimited(15, timestamp(60)) + delimited(15, timestamp(nanos=1)),  # merged: seconds 60 stays, minute 1
            delimited(15, timestamp(61)) + delimited(15, timestamp(300)),  # the later seconds wins: minute 5
        ],
        accept_s=6_000,
    )
    assert minutes._counts is not None
    assert list(minutes._counts(raw, 100).items()) == [(2, 2), (-1, 1), (0, 1), (100, 1), (1, 1), (5, 1)]
    same(raw)


@needs_c
def test_a_real_envelope() -> None:
    preds = [Prediction(id=f"p{i}", model="m", scenario="s", output="o") for i in range(300)]
    for i, p in enumerate(preds):
        if i % 3:
            p.produced_at.seconds = 1_700_000_000 + 7 * i
            p.produced_at.nanos = i
    env = BatchEnvelope(batch_id="b", model="m", predictions=preds, sequence=3)
    env.accept_time.seconds = 1_700_001_000
    same(env.SerializeToString())


@needs_c
@pytest.mark.parametrize(
    "raw",
    [
        envelope_bytes([wire_field(16, 3, wire_field(1, 0, varint(1))) + wire_field(16, 4)]),  # a group: kept unknown
        envelope_bytes([delimited(15, timestamp(60))]) + wire_field(120, 3) + wire_field(120, 4),  # a group, at the end
        envelope_bytes([delimited(15, b"\x08" + b"\xff" * 9 + b"\x7f")]),  # a varint past 64 bits
    ],
)
def test_what_it_does_not_read_goes_to_the_loop(raw: bytes) -> None:
    fast, slow = both(raw)
    assert fast is None
    env = BatchEnvelope.FromString(raw)
    assert minutes.per_minute(raw, env, env.accept_time.seconds) == slow


@needs_c
@pytest.mark.parametrize("cut", [1, 2, 5, 9])
def test_truncated_bytes_are_not_read(cut: int) -> None:
    raw = envelope_bytes([delimited(15, timestamp(1_700_000_000, 5)), delimited(6, b"text")], accept_s=0)
    body = raw[: raw.index(b"text") + 4]  # the predictions alone, then cut inside them
    assert minutes._counts is not None
    assert minutes._counts(body[:-cut], 0) is None


def test_without_the_module_the_loop_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = envelope_bytes([delimited(15, timestamp(120)), b"", delimited(15, timestamp(150))], accept_s=600)
    env = BatchEnvelope.FromString(raw)
    monkeypatch.setattr(minutes, "_counts", None)
    assert minutes.per_minute(raw, env, 600.0) == {2: 2, 10: 1}


@needs_c
def test_the_wire_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = envelope_bytes([delimited(15, timestamp(120)), delimited(15, timestamp(600))], accept_s=600)
    env = BatchEnvelope.FromString(raw)

    def no_loop(*args: object) -> dict[int, int]:
        raise AssertionError("the Python loop ran although the C module read the bytes")

    monkeypatch.setattr(minutes, "loop", no_loop)
    assert minutes.per_minute(raw, env, 600.0) == {2: 1, 10: 1}


@needs_c
def test_mangled_bytes_never_crash_and_agree_where_protobuf_reads_them() -> None:
    """Bytes flipped, cut and inserted at random in a real envelope (200,000 such cases also ran clean
    under ASan and UBSan): C answers None or counts, and counts equal the loop wherever upb parses."""
    rng = random.Random(20261204)
    env = BatchEnvelope(predictions=[Prediction(id=str(i), output="x" * i) for i in range(40)])
    for p in env.predictions:
        p.produced_at.seconds = 1_700_000_000 + rng.randint(-500, 500)
    raw = env.SerializeToString()
    agreed = 0
    for _ in range(3000):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 6)):
            j, op = rng.randrange(len(b)), rng.random()
            if op < 0.5:
                b[j] = rng.randrange(256)
            elif op < 0.75:
                del b[j : j + rng.randint(1, 20)]
            else:
                b[j:j] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
        assert minutes._counts is not None
        fast = minutes._counts(bytes(b), 5)
        if fast is None:
            continue
        try:
            parsed = BatchEnvelope.FromString(bytes(b))
        except DecodeError:
            continue
        assert list(fast.items()) == list(minutes.loop(parsed, 300.0).items())
        agreed += 1
    assert agreed > 100  # the comparison really ran
