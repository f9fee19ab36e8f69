"""Fuzzing the gateway with requests generated from the protobuf schema itself (hypothesis).

Every generated request must get OK or a clean INVALID_ARGUMENT whose BadRequest names real fields;
never UNKNOWN, INTERNAL or a dropped connection. Byte-level mutations of valid requests too. Each
verdict is checked against `validate` run in-process on the same bytes (the oracle): accepted exactly
when it finds nothing, and refused naming exactly the fields it names.
"""

from __future__ import annotations

import re
import time

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.rpc import error_details_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.ingest import parse_request
from gateway.validation import validate
from holistic.errors import InvalidArgument
from holistic.v1 import evaluation_service_pb2 as es
from holistic_client.errors import details
from tests.factories import batch

TEXT = st.one_of(
    st.sampled_from(["", "mmlu", "m1", "a b", "x" * 300, "é", "🙂", "{m}", "a|b", "p0"]),
    st.text(max_size=40),
)
SCALARS = {
    FieldDescriptor.TYPE_STRING: TEXT,
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_DOUBLE: st.floats(allow_nan=True, allow_infinity=True),
    FieldDescriptor.TYPE_FLOAT: st.floats(width=32, allow_nan=True, allow_infinity=True),
    FieldDescriptor.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: st.integers(0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: st.integers(0, 2**64 - 1),
}


def message(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[dict]:
    """A dict of field values for `descriptor`, any subset of its fields, from its schema alone."""
    fields = {}
    for f in descriptor.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            fields[f.name] = st.dictionaries(SCALARS[k.type], SCALARS[v.type], max_size=4)
            continue
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            if depth > 3:
                continue
            value = message(f.message_type, depth + 1)
        elif f.type == FieldDescriptor.TYPE_ENUM:
            value = st.one_of(st.sampled_from([v.number for v in f.enum_type.values]), st.integers(-5, 50))
        else:
            value = SCALARS[f.type]
        fields[f.name] = st.lists(value, max_size=3) if f.is_repeated else value
    return st.fixed_dictionaries({}, optional=fields)


def build(descriptor_cls: type, values: dict) -> object:
    msg = descriptor_cls()
    fill(msg, values)
    return msg


def fill(msg: object, values: dict) -> None:
    for name, value in values.items():
        f = msg.DESCRIPTOR.fields_by_name[name]  # type: ignore[attr-defined]
        target = getattr(msg, name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            target.update(value)
        elif f.type == FieldDescriptor.TYPE_MESSAGE:
            if f.is_repeated:
                for item in value:
                    fill(target.add(), item)
            else:
                fill(target, value)
                target.SetInParent()
        elif f.is_repeated:
            target.extend(value)
        else:
            setattr(msg, name, value)


FIELD_PATH = re.compile(r"^(batch_id|model|predictions)(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*$")


def oracle(gateway, raw: bytes) -> set[str] | None:
    """What the gateway must answer, from `validate` run in-process on the same bytes: None when the
    request is valid, else the field paths it must name (an unparsable request names `predictions`)."""
    try:
        request = parse_request(raw)
        validate(request, gateway.settings, time.time(), len(raw))
    except InvalidArgument as exc:
        return {v.field for v in exc.violations}
    return None


def check(gateway, raw: bytes) -> None:
    expected = oracle(gateway, raw)
    with grpc.insecure_channel(gateway.address) as channel:
        call = channel.unary_unary("/holistic.v1.EvaluationService/SubmitPredictions")
        try:
            call(raw, timeout=10)
            assert expected is None, f"accepted, but validate names {expected}"
            return
        except grpc.RpcError as err:
            code = err.code()
            if code == grpc.StatusCode.ALREADY_EXISTS:  # a valid request reusing a batch id: a clean answer
                assert expected is None, f"ALREADY_EXISTS, but validate names {expected}"
                return
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, err.details())
            violations = [
                v for d in details(err) if isinstance(d, error_details_pb2.BadRequest) for v in d.field_violations
            ]
            assert violations, err.details()
            for v in violations:
                assert FIELD_PATH.match(v.field), v.field
                assert v.description
            named = {v.field for v in violations}
            if expected is None:  # valid fields, but past the model's group caps (state from earlier examples)
                assert all(".groups[" in v.field and "HOLISTIC_MAX_GROUP" in v.description for v in violations)
            else:
                assert named == expected, (named, expected)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=message(es.SubmitPredictionsRequest.DESCRIPTOR))
def test_generated_requests_get_ok_or_invalid_argument(gateway, values):
    try:
        request = build(es.SubmitPredictionsRequest, values)
        raw = request.SerializeToString()
    except (ValueError, TypeError):  # a value protobuf itself refuses to hold (e.g. a lone surrogate)
        return
    check(gateway, raw)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_bytes_get_ok_or_invalid_argument(gateway, data):
    valid = es.SubmitPredictionsRequest(
        batch_id="b", model="m", predictions=batch(2, latency_s=0.5)
    ).SerializeToString()
    raw = bytearray(valid)
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    check(gateway, bytes(raw))
