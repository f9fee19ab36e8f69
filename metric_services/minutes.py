"""Predictions per minute of a batch: what every worker stamps its signature count with.

Each family's worker counts the predictions of every batch it applies per epoch minute (produced_at,
else the batch's accept time: `prediction_minute`). In Python that is a wrapper object per prediction
and per timestamp, ~0.6 µs a prediction, paid once per family: nine times over. `metric_services/_minutes.c`
reads the minutes straight from the envelope's bytes (built by tools/build_native.py, like the
gateway's proof); where it is not built, or the bytes hold something it does not read as protobuf
would (it answers None), the loop runs as before. tests/holistic/test_minutes.py holds the two equal.
"""

from __future__ import annotations

from holistic.families import prediction_minute
from holistic.queue.v1.envelope_pb2 import BatchEnvelope

try:
    from metric_services._minutes import counts as _counts
except ImportError:  # no C compiler where this was installed
    _counts = None


def per_minute(payload: bytes, envelope: BatchEnvelope, accept_s: float) -> dict[int, int]:
    """{minute: predictions} in order of first appearance; payload: the bytes that hold envelope's
    predictions (the stream entry's e; the header h carries none)."""
    if _counts is not None:
        out = _counts(payload, int(accept_s // 60))
        if out is not None:
            return out
    return loop(envelope, accept_s)


def loop(envelope: BatchEnvelope, accept_s: float) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in envelope.predictions:
        minute = prediction_minute(p.produced_at.seconds, p.produced_at.nanos, accept_s)
        out[minute] = out.get(minute, 0) + 1
    return out
