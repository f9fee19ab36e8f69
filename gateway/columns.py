"""A batch's fields as columns: proving a simple batch valid without walking every prediction in Python.

The request bytes are parsed a second time, into message types built here at run time whose
`predictions` field is ONE message of repeated fields. Protobuf merges the occurrences of a
non-repeated message field, so every prediction's id, scenario, task, confidence, ... arrives as one
list made in C (with upb, touching a field of each prediction from Python costs a Python object per
sub-message, and that walk is most of validation's time).

A column forgets which prediction a value came from, so it can prove a batch valid but never name a
bad field: `proven_model` answers the batch's model when the columns prove that every rule of
validation.validate holds, else None, and then validate walks the batch and names what is wrong,
exactly as before. A column counts "one per prediction" only when each field was sent at most once
per message (a map's keys distinct) and no number was sent with the wrong wire type (unknown to the
real parse, packed values to a repeated column): both are checked first.

What columns cannot prove is left to the walk: rules that pair two fields of one prediction (choice
probabilities summing to 1, a perturbation's original_id differing from its own id, a ranking on a
ranking's task). A prediction's count of references is bounded by counting its tag byte. Timing
(time to first token under latency) and produced_at are read as one element per prediction, exact
and still cheaper than the walk.
Measured in benchmarks/ingest_stages.py: batches with choices, perturbations or rankings pay the
second parse for nothing.
"""

from __future__ import annotations

import math
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from gateway import validation as rules
from gateway.request_rules import RULES
from holistic.settings import Settings
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest

_F = descriptor_pb2.FieldDescriptorProto
_REPEATED = _F.LABEL_REPEATED
_OPTIONAL = _F.LABEL_OPTIONAL

# message name -> [(field name, number, type, label, message type)]: the same numbers as the real messages
_COLUMNS: dict[str, list[tuple[str, int, int, int, str]]] = {
    "Request": [("predictions", 3, _F.TYPE_MESSAGE, _OPTIONAL, "Predictions")],
    "Predictions": [
        ("id", 1, _F.TYPE_STRING, _REPEATED, ""),
        ("model", 2, _F.TYPE_STRING, _REPEATED, ""),
        ("scenario", 3, _F.TYPE_STRING, _REPEATED, ""),
        ("task", 4, _F.TYPE_INT64, _REPEATED, ""),
        ("references", 7, _F.TYPE_BYTES, _REPEATED, ""),
        ("confidence", 9, _F.TYPE_DOUBLE, _REPEATED, ""),
        ("groups", 13, _F.TYPE_BYTES, _REPEATED, ""),
        ("timing", 14, _F.TYPE_MESSAGE, _REPEATED, "Timing"),  # one element per prediction with timing
        ("produced_at", 15, _F.TYPE_MESSAGE, _REPEATED, "Time"),
        ("metadata", 16, _F.TYPE_BYTES, _REPEATED, ""),
    ],
    "Time": [("seconds", 1, _F.TYPE_INT64, _OPTIONAL, ""), ("nanos", 2, _F.TYPE_INT32, _OPTIONAL, "")],
    "Timing": [
        ("latency", 1, _F.TYPE_MESSAGE, _OPTIONAL, "Time"),
        ("time_to_first_token", 2, _F.TYPE_MESSAGE, _OPTIONAL, "Time"),
    ],
    "Entries": [("key", 1, _F.TYPE_STRING, _REPEATED, ""), ("value", 2, _F.TYPE_STRING, _REPEATED, "")],
    "Chunks": [("predictions", 3, _F.TYPE_BYTES, _REPEATED, "")],  # each prediction's own bytes
    # the numeric columns' fields as bytes: what a repeated number would read as packed values
    # First, the cheap parse: the numeric columns' fields as bytes (what a repeated number would read as
    # packed values), whether any prediction carries what only the walk can check, and every timing's
    # durations merged into two lists (one element per latency, one per time to first token).
    "WireRequest": [("predictions", 3, _F.TYPE_MESSAGE, _OPTIONAL, "WirePredictions")],
    "WirePredictions": [
        ("task", 4, _F.TYPE_BYTES, _REPEATED, ""),
        ("confidence", 9, _F.TYPE_BYTES, _REPEATED, ""),
        ("choice_probabilities", 10, _F.TYPE_BYTES, _REPEATED, ""),
        ("perturbation", 12, _F.TYPE_BYTES, _REPEATED, ""),
        ("timing", 14, _F.TYPE_MESSAGE, _OPTIONAL, "Timings"),
        ("ranking", 17, _F.TYPE_BYTES, _REPEATED, ""),
        ("evaluations", 18, _F.TYPE_BYTES, _REPEATED, ""),
    ],
    "Timings": [
        ("latency", 1, _F.TYPE_MESSAGE, _REPEATED, "Time"),
        ("time_to_first_token", 2, _F.TYPE_MESSAGE, _REPEATED, "Time"),
    ],
}


def _classes() -> dict[str, type[Message]]:
    """Message classes of _COLUMNS, in a pool of their own (the real types are untouched)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="holistic_gateway_columns.proto", package="columns", syntax="proto3"
    )
    for name, fields in _COLUMNS.items():
        msg = proto.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            f = msg.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                f.type_name = f".columns.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"columns.{name}")) for name in _COLUMNS}


_CLASSES = _classes()
Request, Entries, WireRequest, Chunks = (_CLASSES[n] for n in ("Request", "Entries", "WireRequest", "Chunks"))
UNPAIRED_TASKS = rules.KNOWN_TASKS - {pb.TASK_RANKING}  # a ranking task pairs with its ranking: the walk
REFERENCE_TAG = b":"  # field 7 (references), wire type 2: (7 << 3) | 2 = 0x3A


def _entries(chunks: list[bytes]) -> Any | None:
    """Map entries (groups, metadata) as key and value columns; None unless each has one of both."""
    entries = Entries.FromString(b"".join(chunks))
    if not len(entries.key) == len(entries.value) == len(chunks):
        return None
    return entries


def proven_model(
    request: SubmitPredictionsRequest, raw: bytes, deterministic: bytes, limits: Settings, now_s: float
) -> str | None:
    """The batch's model when its columns prove it valid under validation.validate's rules; None when
    they cannot (then validate decides, and names what is wrong). `deterministic`: the request
    re-serialized (the content digest's bytes)."""
    # Re-encoded, a parsed message is never longer than its bytes: a field sent twice keeps one value
    # (or merges into one message), a default sent explicitly is not re-sent; unknown fields are
    # re-sent as they came. Equal lengths: every field is counted once. (An encoding shorter than the
    # canonical one could hide a repeat: a packed field sent unpacked, of which a Prediction has none,
    # or a map entry without its key or value, which _entries refuses.)
    if len(deterministic) != len(raw) or len(raw) > limits.max_text_bytes:  # a text may be too long
        return None
    n = len(request.predictions)
    if not 0 < n <= limits.max_batch_predictions or not rules.BATCH_ID_RE.fullmatch(request.batch_id):
        return None
    try:
        wire = WireRequest.FromString(raw).predictions
        if wire.choice_probabilities or wire.perturbation or wire.ranking or wire.evaluations:
            return None  # rules that pair two fields of one prediction: the walk
        if wire.task or wire.confidence:  # sent with the wrong wire type: unknown to the request
            return None
        c = Request.FromString(raw).predictions
    except DecodeError:
        return None
    if len(c.references) > limits.max_references and not _references_bounded(raw, limits.max_references):
        return None
    ids = list(c.id)
    if len(set(ids)) != n or max(map(len, ids)) > rules.MAX_ID_CHARS:
        return None
    model = _model(request.model, set(c.model))
    if model is None:
        return None
    scenarios = c.scenario
    if len(scenarios) != n or not all(rules.NAME_RE.fullmatch(s) for s in set(scenarios)):
        return None
    tasks = c.task
    if len(tasks) != n or not set(tasks) <= UNPAIRED_TASKS:
        return None
    confidence = list(c.confidence)
    if confidence and not (min(confidence) >= 0.0 and max(confidence) <= 1.0 and not math.isnan(sum(confidence))):
        return None
    if not _maps_ok(c, limits.max_map_entries):
        return None
    latest_s = int(now_s + limits.future_skew_s)
    for t in c.produced_at:
        secs, nanos = t.seconds, t.nanos
        if (secs or nanos) and not (0 <= nanos < 1_000_000_000 and rules.MIN_PRODUCED_AT_S <= secs <= latest_s):
            return None
    return model if _timings_ok(wire.timing, c.timing) else None


def _timings_ok(merged: Any, elements: Any) -> bool:
    """validate's timing rules. Where every timing has both durations, the i-th latency and the i-th
    time to first token are one prediction's (the merged lists keep the order); otherwise each
    timing, one element per prediction, by validate's own function."""
    latency, ttft = merged.latency, merged.time_to_first_token
    if len(latency) == len(ttft) == len(elements):
        for lat, first in zip(latency, ttft, strict=True):
            ls, ln, fs, fn = lat.seconds, lat.nanos, first.seconds, first.nanos
            if not (0 <= ls < rules.MAX_DURATION_S and 0 <= ln < 1_000_000_000):
                return False
            if not (0 <= fs < rules.MAX_DURATION_S and 0 <= fn < 1_000_000_000 and (fs, fn) <= (ls, ln)):
                return False
        return True
    v = rules.Violations()
    for timing in elements:
        rules.check_timing(v, "", timing)
        if v:
            return False
    return True


def _references_bounded(raw: bytes, most: int) -> bool:
    """No prediction has more than `most` references: each of its references starts with the byte
    0x3A (its tag), so a prediction's count of that byte bounds its count of references."""
    return max(chunk.count(REFERENCE_TAG) for chunk in Chunks.FromString(raw).predictions) <= most


def _model(model: str, named: set[str]) -> str | None:
    """The request's model, or its predictions' one model; None where validate must decide."""
    if model:
        return model if rules.NAME_RE.fullmatch(model) and named <= {model} else None
    if len(named) == 1:
        only = next(iter(named))
        return only if rules.NAME_RE.fullmatch(only) else None
    return None


def _maps_ok(c: Any, max_entries: int) -> bool:
    """groups: every (key, value) a tag; metadata: keys and values within request_rules' lengths.
    A prediction's keys are distinct (canonical encoding), so at most `max_entries` distinct keys in
    the whole batch bound every prediction's count."""
    if c.groups:
        groups = _entries(list(c.groups))
        if groups is None or len(set(groups.key)) > max_entries:
            return False
        for key, value in set(zip(groups.key, groups.value, strict=True)):
            if not (rules.TAG_RE.fullmatch(key) and rules.TAG_RE.fullmatch(value)):
                return False
    if c.metadata:
        metadata = _entries(list(c.metadata))
        if metadata is None or len(set(metadata.key)) > max_entries:
            return False
        keys_ok = all(0 < len(k) <= RULES.metadata_key_chars for k in set(metadata.key))
        if not keys_ok or max(map(len, metadata.value)) > RULES.metadata_value_chars:
            return False
    return True
