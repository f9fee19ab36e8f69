"""One source for the request rules (gateway/request_rules.py): every rule's failing example gets the same
answer through the gateway with the C wire proof on and off, and the C reads its limits from the table."""

from __future__ import annotations

import random
from collections.abc import Callable

import grpc
import pytest

from gateway import request_rules, validation, wire_proof
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from tests.gateway.test_columns import FAULTS, LIMITS, NOW, demo_batch, request_of
from tests.gateway.test_wire_proof import RANKING_FAULTS, _ranked


def _failing_examples() -> dict[str, SubmitPredictionsRequest]:
    """Each rule broken once in an otherwise valid batch, plus the request-level rules."""
    out = {}
    for name, fault in FAULTS.items():
        rng = random.Random(name)
        preds = demo_batch(rng, 6, only_simple=True)
        fault(preds, rng)
        if name.startswith("several models"):
            out[name] = SubmitPredictionsRequest(batch_id="b-1", predictions=preds)
        else:
            out[name] = request_of(preds)
    for name, fault in RANKING_FAULTS.items():
        rng = random.Random(name)
        bad = _ranked(rng)
        fault(bad)
        out[name] = request_of([*demo_batch(rng, 3), bad])
    rng = random.Random(0)
    out["batch_id bad"] = request_of(demo_batch(rng, 2, only_simple=True), batch_id="b 1")
    out["batch_id long"] = request_of(demo_batch(rng, 2, only_simple=True), batch_id="b" * 129)
    out["model bad"] = request_of(demo_batch(rng, 2, only_simple=True), model="m a")
    out["batch too big"] = request_of(demo_batch(rng, LIMITS.max_batch_predictions + 1, only_simple=False))
    return out


EXAMPLES = _failing_examples()


def _answer(stub: es_grpc.EvaluationServiceStub, request: SubmitPredictionsRequest) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as exc:
        stub.SubmitPredictions(request, timeout=30)
    return exc.value.code(), exc.value.details()


def test_every_rule_is_answered_the_same_with_the_c_path_on_and_off(make_gateway):
    assert wire_proof.available()
    limits = {"max_batch_predictions": LIMITS.max_batch_predictions, "max_references": LIMITS.max_references}
    on = make_gateway(gateway_wire_proof=True, **limits)
    off = make_gateway(gateway_wire_proof=False, **limits)
    with grpc.insecure_channel(on.address) as c_on, grpc.insecure_channel(off.address) as c_off:
        stub_on, stub_off = es_grpc.EvaluationServiceStub(c_on), es_grpc.EvaluationServiceStub(c_off)
        for name, request in EXAMPLES.items():
            code, details = _answer(stub_on, request)
            assert code == grpc.StatusCode.INVALID_ARGUMENT, (name, details)
            assert _answer(stub_off, request) == (code, details), name
            assert details, name


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_python_walk_names_a_field_and_the_c_proves_nothing(name):
    request = EXAMPLES[name]
    raw = request.SerializeToString()
    assert wire_proof.prove(raw, LIMITS, NOW) is None, name
    with pytest.raises(validation.InvalidArgument) as exc:
        validation.validate(SubmitPredictionsRequest.FromString(raw), LIMITS, NOW, len(raw))
    assert all(v.field for v in exc.value.violations), name


def _proven_with(table_change: dict[str, object], request: SubmitPredictionsRequest) -> bool:
    table = {**request_rules.RULES.as_c_table(), **table_change}
    wire_proof._wireproof.configure(table)
    try:
        return wire_proof.prove(request.SerializeToString(), LIMITS, NOW) is not None
    finally:
        wire_proof._wireproof.configure(request_rules.RULES.as_c_table())


@pytest.mark.parametrize(
    ("change", "make"),
    [
        ({"id_chars": 4}, lambda p: setattr(p, "id", "abcde")),
        ({"name_chars": 4}, lambda p: setattr(p, "scenario", "abcde")),
        ({"tag_chars": 4}, lambda p: p.groups.update({"abcde": "v"})),
        ({"metadata_value_chars": 4}, lambda p: p.metadata.update({"k": "abcde"})),
        ({"name_punctuation": "._:/@+"}, lambda p: setattr(p, "scenario", "a-b")),
        ({"max_duration_s": 10}, lambda p: setattr(p.timing.latency, "seconds", 10)),
        ({"min_produced_at_s": int(NOW)}, lambda p: p.produced_at.FromSeconds(int(NOW) - 60)),
    ],
)
def test_the_c_reads_each_limit_from_the_table(change: dict[str, object], make: Callable[[pb.Prediction], None]):
    """The same batch is proven under the real table and refused under a stricter one: no copy in the C."""
    p = pb.Prediction(id="abcd", scenario="abcd", task=pb.TASK_OPEN_QA, output="o")
    p.timing.latency.seconds = 1
    p.produced_at.FromSeconds(int(NOW) - 3600)
    make(p)
    request = SubmitPredictionsRequest(batch_id="b", model="m", predictions=[p])
    assert _proven_with({}, request)
    assert not _proven_with(change, request)


def test_the_c_refuses_a_table_without_a_rule():
    table = request_rules.RULES.as_c_table()
    del table["tag_chars"]
    with pytest.raises(ValueError, match="tag_chars"):
        wire_proof._wireproof.configure(table)
    wire_proof._wireproof.configure(request_rules.RULES.as_c_table())
    assert wire_proof.prove(request_of([pb.Prediction(id="a", scenario="s", task=1)]).SerializeToString(), LIMITS, NOW)


def test_the_rule_texts_come_from_the_limits():
    expected = "1-128 characters: letters, digits and . _ : / @ + -, starting with a letter or digit"
    assert expected == validation.NAME_RULE
    assert validation.TAG_RULE.startswith("1-64 characters")
    assert request_rules.BATCH_ID_RULE == "1-128 characters: letters, digits and . _ : / @ + = -"
    assert request_rules.NAME_RE.fullmatch("a" * 128) and not request_rules.NAME_RE.fullmatch("a" * 129)
