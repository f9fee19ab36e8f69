"""Every bad field gets INVALID_ARGUMENT with a google.rpc.BadRequest field path; nothing is written."""

from __future__ import annotations

import math
import time

import grpc
import pytest

from gateway.validation import validate
from holistic.errors import InvalidArgument
from holistic.redis.keys import Keys
from holistic.settings import load_settings
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from holistic_client import InvalidPredictions
from tests.factories import batch, prediction


def violations(client, preds, *, batch_id="b-1", model="m1"):
    with pytest.raises(InvalidPredictions) as exc:
        client.submit(preds, batch_id=batch_id, model=model)
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
    return dict(exc.value.violations)


def with_field(i, **fields):
    preds = batch(4)
    for name, value in fields.items():
        setattr(preds[i], name, value)
    return preds


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda p: setattr(p, "confidence", 1.5), "predictions[3].confidence", "[0, 1]"),
        (lambda p: setattr(p, "confidence", -0.01), "predictions[3].confidence", "[0, 1]"),
        (lambda p: setattr(p, "confidence", math.nan), "predictions[3].confidence", "nan"),
        (lambda p: setattr(p, "id", ""), "predictions[3].id", "required"),
        (lambda p: setattr(p, "scenario", ""), "predictions[3].scenario", "required"),
        (lambda p: setattr(p, "scenario", "has space"), "predictions[3].scenario", "letters"),
        (lambda p: setattr(p, "scenario", "a|b"), "predictions[3].scenario", "letters"),
        (lambda p: setattr(p, "task", pb.TASK_UNSPECIFIED), "predictions[3].task", "TASK_OPEN_QA"),
        (lambda p: setattr(p, "task", 99), "predictions[3].task", "one of"),
        (lambda p: setattr(p, "model", "other"), "predictions[3].model", "one model per batch"),
        (lambda p: p.perturbation.SetInParent(), "predictions[3].perturbation.original_id", "required"),
        (lambda p: p.groups.__setitem__("dialect", "a a"), "predictions[3].groups", "value 'a a' of 'dialect'"),
        (lambda p: p.groups.__setitem__("bad key", "x"), "predictions[3].groups", "key 'bad key'"),
        (lambda p: p.timing.latency.FromSeconds(-1), "predictions[3].timing.latency", "non-negative"),
        (lambda p: p.produced_at.FromSeconds(10), "predictions[3].produced_at", "2000"),
        (lambda p: p.produced_at.FromSeconds(4_000_000_000), "predictions[3].produced_at", "future"),
        (lambda p: p.references.append("r" * 3000), "predictions[3].references[1]", "longer"),
        (lambda p: setattr(p, "output", "é" * 1500), "predictions[3].output", "longer"),
    ],
)
def test_field_violation_names_the_field(make_gateway, r, mutate, path, words):
    gw = make_gateway(max_text_bytes=2048)
    preds = batch(4)
    mutate(preds[3])
    with gw.client() as c:
        found = violations(c, preds)
    assert path in found, found
    assert words.lower() in found[path].lower()
    assert r.xlen(Keys().stream) == 0 and not r.exists(Keys().meta("m1"))


def test_perturbation_fields(client):
    p = prediction("p1")
    p.perturbation.name = "typos"
    found = violations(client, [p])
    assert set(found) == {"predictions[0].perturbation.family", "predictions[0].perturbation.original_id"}
    p.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
    p.perturbation.original_id = "p1"
    assert "must differ" in violations(client, [p])["predictions[0].perturbation.original_id"]


def test_choice_probabilities_must_sum_to_one(client):
    p = prediction("p1")
    p.choice_probabilities.add(choice="A", probability=0.5)
    p.choice_probabilities.add(choice="B", probability=0.4)
    found = violations(client, [p])
    assert "sum to 1" in found["predictions[0].choice_probabilities"]
    p.choice_probabilities[1].probability = 0.5
    p.choice_probabilities.add(choice="A", probability=0.0)
    assert "repeats" in violations(client, [p])["predictions[0].choice_probabilities[2].choice"]
    p.choice_probabilities[1].probability = 1.5
    assert "[0, 1]" in violations(client, [p])["predictions[0].choice_probabilities[1].probability"]


def test_ttft_after_latency(client):
    p = prediction("p1", latency_s=1.0, ttft_s=2.0)
    assert "latency" in violations(client, [p])["predictions[0].timing.time_to_first_token"]


def test_duplicate_ids_in_a_batch(client):
    preds = batch(3)
    preds[2].id = "p0"
    assert "p0" in violations(client, preds)["predictions[2].id"]


def test_batch_level_fields(client):
    from holistic.v1 import evaluation_service_pb2 as es

    with pytest.raises(grpc.RpcError) as exc:  # the client library always sets a batch id
        client.stub.SubmitPredictions(es.SubmitPredictionsRequest(model="m1", predictions=batch(1)), timeout=5)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "batch_id" in exc.value.details()
    assert "letters" in violations(client, batch(1), batch_id="has space")["batch_id"]
    assert "letters" in violations(client, batch(1), model="{bad}")["model"]
    assert "empty" in violations(client, [])["predictions"]
    assert "required" in violations(client, batch(1), model="")["model"]


def test_batch_size_limit(make_gateway):
    gw = make_gateway(max_batch_predictions=5)
    with gw.client() as c:
        assert "at most 5" in violations(c, batch(6))["predictions"]


def test_map_entry_limits(make_gateway):
    gw = make_gateway(max_map_entries=2)
    p = prediction("p1")
    for k in "abc":
        p.metadata[k] = "v"
        p.groups[k] = "v"
    with gw.client() as c:
        found = violations(c, [p])
    assert "at most 2" in found["predictions[0].metadata"] and "at most 2" in found["predictions[0].groups"]


def test_every_violation_is_reported_at_once(client):
    preds = batch(3)
    preds[0].confidence = 2.0
    preds[2].scenario = ""
    found = violations(client, preds)
    assert set(found) == {"predictions[0].confidence", "predictions[2].scenario"}


def test_valid_edge_values_are_accepted(client):
    p = prediction("p1", output="", references=[], latency_s=0.0, ttft_s=0.0)
    p.confidence = 0.0
    p.choice_probabilities.add(choice="A", probability=1.0 - 5e-5)
    p.groups["dialect"] = "aae"
    assert client.submit([p], batch_id="b-1", model="m1").accepted_count == 1


def test_group_caps_refuse_the_batch_naming_the_field(make_gateway):
    gw = make_gateway(max_group_values=2, max_group_keys=2)
    with gw.client() as c:
        a = prediction("a", groups={"dialect": "aae"})
        b = prediction("b", groups={"dialect": "sae", "region": "us"})
        c.submit([a, b], batch_id="ok", model="m")
        third = prediction("c", groups={"dialect": "x"})
        found = violations(c, [prediction("d", groups={"dialect": "aae"}), third], model="m")
        assert list(found) == ["predictions[1].groups['dialect']"]
        assert "HOLISTIC_MAX_GROUP_VALUES" in found["predictions[1].groups['dialect']"]
        found = violations(c, [prediction("e", groups={"gender": "f"})], model="m")
        assert "HOLISTIC_MAX_GROUP_KEYS" in found["predictions[0].groups['gender']"]
        c.submit([prediction("f", groups={"dialect": "sae", "region": "uk"})], batch_id="ok2", model="m")  # known


def _confidence(p: pb.Prediction, value: float) -> str:
    p.confidence = value
    return "predictions[0].confidence"


def _choice(p: pb.Prediction, value: float) -> str:
    p.choice_probabilities.add(choice="A", probability=value)
    p.choice_probabilities.add(choice="B", probability=1.0 - value)  # the sum stays 1 for valid values
    return "predictions[0].choice_probabilities[0].probability"


PROBABILITY_FIELDS = {"Prediction.confidence": _confidence, "ChoiceProbability.probability": _choice}
VALID_PROBABILITIES = [0.0, -0.0, 5e-324, 0.5, math.nextafter(1.0, 0.0), 1.0]
INVALID_PROBABILITIES = [math.nextafter(0.0, -1.0), -1.0, math.nextafter(1.0, 2.0), 2.0, math.nan, math.inf, -math.inf]


def _double_fields(descriptor, seen=None) -> set[str]:
    seen = set() if seen is None else seen
    out = set()
    for f in descriptor.fields:
        if f.type == f.TYPE_DOUBLE or f.type == f.TYPE_FLOAT:
            out.add(f"{descriptor.name}.{f.name}")
        elif f.message_type is not None and f.message_type.full_name not in seen:
            seen.add(f.message_type.full_name)
            out |= _double_fields(f.message_type, seen)
    return out


# Floating-point fields that are not probabilities, and where their checks are tested.
NOT_PROBABILITIES = {  # tests/gateway/test_ranking_validation.py
    "RankedDocument.score": "finite",
    "RankedDocument.logprob": "finite",
    "RankedDocument.relevance": "a non-negative integer",
    "Evaluation.score": "finite",  # tests/metric_services/test_evaluations.py
}


def test_the_table_covers_every_probability_field():
    """A new floating-point field on a Prediction must join PROBABILITY_FIELDS (or say why not)."""
    assert _double_fields(pb.Prediction.DESCRIPTOR) == set(PROBABILITY_FIELDS) | set(NOT_PROBABILITIES)


@pytest.mark.parametrize("value", VALID_PROBABILITIES + INVALID_PROBABILITIES)
@pytest.mark.parametrize("field", sorted(PROBABILITY_FIELDS))
def test_zero_and_one_are_valid_edges_of_every_probability(field, value):
    """[0, 1] closed at both ends, for each probability field; the next double outside is refused."""
    p = prediction("p0")
    path = PROBABILITY_FIELDS[field](p, value)
    request = SubmitPredictionsRequest(batch_id="b-1", model="m1", predictions=[p])
    if value in VALID_PROBABILITIES:
        assert validate(request, load_settings(), time.time()) == "m1"
    else:
        with pytest.raises(InvalidArgument) as exc:
            validate(request, load_settings(), time.time())
        found = {v.field: v.description for v in exc.value.violations}
        assert "[0, 1]" in found[path], found


@pytest.mark.parametrize("edge", [0.0, 1.0])
def test_a_bad_sum_is_refused_with_edge_probabilities(edge):
    """An edge value takes the same path as any valid one: the sum is still checked."""
    p = prediction("p0")
    p.choice_probabilities.add(choice="A", probability=edge)
    p.choice_probabilities.add(choice="B", probability=0.25)
    request = SubmitPredictionsRequest(batch_id="b-1", model="m1", predictions=[p])
    with pytest.raises(InvalidArgument) as exc:
        validate(request, load_settings(), time.time())
    found = {v.field: v.description for v in exc.value.violations}
    assert (
        set(found) == {"predictions[0].choice_probabilities"}
        and "sum to 1" in found["predictions[0].choice_probabilities"]
    ), found
