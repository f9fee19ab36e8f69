"""The column check (gateway/columns.py) against validate, the oracle: it may only say a batch is valid
when validate says so too, with the same model; and on the valid batches of the demo mix it must say
so (or it would prove nothing and cost a parse).

Batches are real demo predictions with up to two faults each from a catalogue of every rule, and
requests whose bytes are not what the columns can count: non-canonical encodings, unknown fields,
a numeric field sent with the wrong wire type.
"""

from __future__ import annotations

import math
import random
import struct
import time
from collections.abc import Callable

import pytest

from gateway import columns
from gateway.validation import validate
from holistic.errors import InvalidArgument
from holistic.settings import load_settings
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from holistic_app.demo import SAMPLE
from holistic_client.jsonl import read_predictions
from tests.factories import varint

LIMITS = load_settings(max_batch_predictions=64, max_references=8)  # batches hold more references than that
DEMO = [line.prediction for line in read_predictions(SAMPLE) if line.prediction is not None]
NOW = time.time()


def verdicts(raw: bytes) -> tuple[str | None, str | None]:
    """(the columns' model or None, validate's model or None when it refuses) for the request bytes."""
    request = SubmitPredictionsRequest.FromString(raw)
    proven = columns.proven_model(request, raw, request.SerializeToString(deterministic=True), LIMITS, NOW)
    try:
        oracle: str | None = validate(SubmitPredictionsRequest.FromString(raw), LIMITS, NOW, len(raw))
    except InvalidArgument:
        oracle = None
    return proven, oracle


def request_of(preds: list[pb.Prediction], model: str = "m-a", batch_id: str = "b-1") -> SubmitPredictionsRequest:
    out = SubmitPredictionsRequest(batch_id=batch_id, model=model)
    for p in preds:
        out.predictions.add().CopyFrom(p)
    return out


def simple(p: pb.Prediction) -> bool:
    """What columns can prove: no choice probabilities, perturbation or ranking."""
    return not (p.choice_probabilities or p.HasField("perturbation") or p.HasField("ranking"))


def demo_batch(rng: random.Random, n: int, rankings: bool = False, only_simple: bool = False) -> list[pb.Prediction]:
    pool = [p for p in DEMO if (rankings or p.task != pb.TASK_RANKING) and (simple(p) or not only_simple)]
    preds = []
    for i, p in enumerate(rng.sample(pool, n)):
        q = pb.Prediction()
        q.CopyFrom(p)
        q.id = f"{i}-{p.id}"
        q.ClearField("model")  # the request's
        q.produced_at.FromSeconds(int(NOW) - rng.randint(0, 86_400))
        preds.append(q)
    return preds


def _set_ttft_after_latency(p: pb.Prediction) -> None:
    p.timing.latency.FromMilliseconds(500)
    p.timing.time_to_first_token.FromMilliseconds(600)


def _produced(p: pb.Prediction, seconds: int, nanos: int) -> None:
    p.produced_at.seconds, p.produced_at.nanos = seconds, nanos


def _add_choices(p: pb.Prediction, *probs: float, names: str = "ABCD") -> None:
    p.ClearField("choice_probabilities")
    for name, prob in zip(names, probs, strict=False):
        p.choice_probabilities.add(choice=name, probability=prob)


def _perturb(p: pb.Prediction, name: str = "typos", family: int = 1, original: str = "x") -> None:
    p.perturbation.name, p.perturbation.family, p.perturbation.original_id = name, family, original


FAULTS: dict[str, Callable[[list[pb.Prediction], random.Random], None]] = {
    "id empty": lambda ps, rng: ps[-1].ClearField("id"),
    "id repeated": lambda ps, rng: setattr(ps[-1], "id", ps[0].id),
    "id too long": lambda ps, rng: setattr(ps[-1], "id", "i" * 257),
    "model of another": lambda ps, rng: setattr(ps[-1], "model", "m-b"),
    "scenario empty": lambda ps, rng: ps[-1].ClearField("scenario"),
    "scenario bad": lambda ps, rng: setattr(ps[-1], "scenario", "bad name"),
    "task unset": lambda ps, rng: ps[-1].ClearField("task"),
    "task unknown": lambda ps, rng: setattr(ps[-1], "task", 99),
    "task ranking": lambda ps, rng: setattr(ps[-1], "task", pb.TASK_RANKING),
    "ranking on another task": lambda ps, rng: ps[-1].ranking.documents.add(id="d1"),
    "references too many": lambda ps, rng: ps[-1].references.extend(["r"] * (LIMITS.max_references + 1)),
    "text too long": lambda ps, rng: setattr(ps[-1], "output", "o" * (LIMITS.max_text_bytes + 1)),
    "confidence above": lambda ps, rng: setattr(ps[-1], "confidence", 1.5),
    "confidence below": lambda ps, rng: setattr(ps[-1], "confidence", -1e-9),
    "confidence nan": lambda ps, rng: setattr(ps[-1], "confidence", math.nan),
    "choices sum": lambda ps, rng: _add_choices(ps[-1], 0.5, 0.4),
    "choices empty name": lambda ps, rng: _add_choices(ps[-1], 0.5, 0.5, names=["", "B"]),
    "choices repeated": lambda ps, rng: _add_choices(ps[-1], 0.5, 0.5, names="AA"),
    "choices above": lambda ps, rng: _add_choices(ps[-1], 1.5, -0.5),
    "perturbation no name": lambda ps, rng: _perturb(ps[-1], name=""),
    "perturbation bad name": lambda ps, rng: _perturb(ps[-1], name="bad name"),
    "perturbation no family": lambda ps, rng: _perturb(ps[-1], family=0),
    "perturbation no original": lambda ps, rng: _perturb(ps[-1], original=""),
    "perturbation of itself": lambda ps, rng: _perturb(ps[-1], original=ps[-1].id),
    "group key bad": lambda ps, rng: ps[-1].groups.update({"bad key": "v"}),
    "group value empty": lambda ps, rng: ps[-1].groups.update({"k": ""}),
    "groups too many": lambda ps, rng: ps[-1].groups.update({f"k{i}": "v" for i in range(33)}),
    "metadata key empty": lambda ps, rng: ps[-1].metadata.update({"": "v"}),
    "metadata key long": lambda ps, rng: ps[-1].metadata.update({"k" * 129: "v"}),
    "metadata value long": lambda ps, rng: ps[-1].metadata.update({"k": "v" * 4097}),
    "metadata too many": lambda ps, rng: ps[-1].metadata.update({f"k{i}": "v" for i in range(33)}),
    "latency negative": lambda ps, rng: setattr(ps[-1].timing.latency, "seconds", -1),
    "latency nanos": lambda ps, rng: setattr(ps[-1].timing.latency, "nanos", 1_000_000_000),
    "latency a day": lambda ps, rng: setattr(ps[-1].timing.latency, "seconds", 86_400),
    "ttft after latency": lambda ps, rng: _set_ttft_after_latency(ps[-1]),
    "ttft negative": lambda ps, rng: setattr(ps[-1].timing.time_to_first_token, "nanos", -5),
    "produced nanos only": lambda ps, rng: _produced(ps[-1], 0, 5),
    "produced 1970": lambda ps, rng: ps[-1].produced_at.FromSeconds(1000),
    "produced future": lambda ps, rng: ps[-1].produced_at.FromSeconds(int(NOW) + 7200),
    "produced nanos bad": lambda ps, rng: setattr(ps[-1].produced_at, "nanos", -1),
    "several models, no batch model": lambda ps, rng: [setattr(p, "model", f"m{i}") for i, p in enumerate(ps)],
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_fault_is_left_to_validate(fault):
    """Each rule broken once, at the end of a batch that the columns would prove: validate refuses it
    (the catalogue is real) and the columns never prove it."""
    rng = random.Random(fault)
    for _ in range(5):
        preds = demo_batch(rng, 12, only_simple=True)
        FAULTS[fault](preds, rng)
        model = "" if fault.startswith("several models") else "m-a"
        request = request_of(preds, model=model) if model else SubmitPredictionsRequest(batch_id="b", predictions=preds)
        proven, oracle = verdicts(request.SerializeToString())
        assert oracle is None, fault
        assert proven is None, fault


def test_valid_batches_of_the_demo_mix_are_proven():
    """Without a fault, every batch of predictions without choices, perturbations or rankings is proven
    by the columns, with its model (references, groups, metadata, timing and confidence included)."""
    rng = random.Random(1)
    for n in (1, 7, 64):
        for _ in range(10):
            preds = demo_batch(rng, n, only_simple=True)
            assert sum(len(p.references) for p in preds) > LIMITS.max_references or n < 64  # the bound is used
            raw = request_of(preds).SerializeToString()
            assert verdicts(raw) == ("m-a", "m-a")
        if n == 64:
            preds[0].references[:] = [":"] * LIMITS.max_references  # at the limit, but the bound counts more
            assert verdicts(request_of(preds).SerializeToString()) == (None, "m-a")
    for _ in range(5):  # the model on every prediction instead of the request
        preds = demo_batch(rng, 20, only_simple=True)
        for p in preds:
            p.model = "m-b"
        raw = SubmitPredictionsRequest(batch_id="b", predictions=preds).SerializeToString()
        assert verdicts(raw) == ("m-b", "m-b")


def test_random_faults_never_prove_a_batch_validate_refuses():
    """Up to two faults anywhere in a batch (or none), rankings in some: the columns agree with validate
    whenever they answer."""
    rng = random.Random(20261202)
    names = sorted(FAULTS)
    answered = 0
    for _ in range(600):
        preds = demo_batch(rng, rng.randint(1, 24), rankings=rng.random() < 0.2, only_simple=rng.random() < 0.7)
        rng.shuffle(preds)
        for name in rng.sample(names, rng.choice((0, 0, 1, 2))):
            if name.startswith("several models"):
                continue
            FAULTS[name](preds, rng)
            preds.append(preds.pop(0))  # the next fault falls on another prediction
        proven, oracle = verdicts(request_of(preds).SerializeToString())
        if proven is not None:
            answered += 1
            assert proven == oracle
    assert answered > 100  # it did answer, on the batches without faults


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    return varint(number << 3 | wire_type) + payload


def _delimited(number: int, data: bytes) -> bytes:
    return _field(number, 2, varint(len(data)) + data)


def _wire(preds: list[bytes]) -> bytes:
    return _delimited(1, b"b-1") + _delimited(2, b"m-a") + b"".join(_delimited(3, p) for p in preds)


def test_bytes_the_columns_cannot_count_are_left_to_validate():
    """A task or a confidence sent packed (unknown to the real parse, values to a column), a field
    twice, a map entry without its value: each is decided by validate alone. Map entries in any order
    (Go's and upb's own encoders do not sort them) and unknown fields are proven."""
    rng = random.Random(3)
    good = [p.SerializeToString() for p in demo_batch(rng, 3, only_simple=True)]
    no_task = pb.Prediction()
    no_task.ParseFromString(good[0])
    no_task.ClearField("task")
    packed_task = no_task.SerializeToString() + _delimited(4, varint(1))  # task 1, packed: wire type 2
    assert verdicts(_wire([packed_task, *good[1:]])) == (None, None)

    two_scenarios = _delimited(3, b"bad name") + good[0]  # the last occurrence wins in the real parse
    assert verdicts(_wire([two_scenarios, *good[1:]])) == (None, "m-a")
    no_scenario = pb.Prediction.FromString(good[0])
    no_scenario.ClearField("scenario")  # refused; another prediction's second scenario would fill its count
    assert verdicts(_wire([no_scenario.SerializeToString(), _delimited(3, b"mmlu") + good[1], good[2]])) == (None, None)

    unknown = good[0] + _field(99, 0, varint(7))  # a newer client's field: ignored by both
    assert verdicts(_wire([unknown, *good[1:]])) == ("m-a", "m-a")
    packed_confidence = good[0] + _delimited(9, struct.pack("<d", 7.0))  # unknown to the request: valid
    assert verdicts(_wire([packed_confidence, *good[1:]])) == (None, "m-a")

    p = pb.Prediction()
    p.ParseFromString(good[0])
    p.groups.clear()
    entries = [_delimited(1, b"zeta") + _delimited(2, b"1"), _delimited(1, b"alpha") + _delimited(2, b"2")]
    reordered = p.SerializeToString() + b"".join(_delimited(13, e) for e in entries)
    assert verdicts(_wire([reordered, *good[1:]])) == ("m-a", "m-a")
    valueless = p.SerializeToString() + _delimited(13, _delimited(1, b"k"))  # validate: value "" is not a tag
    assert verdicts(_wire([valueless, *good[1:]])) == (None, None)
    assert verdicts(_wire(good)) == ("m-a", "m-a")


def test_timings_with_both_durations_pair_by_position():
    """Where every prediction has latency and time to first token, the merged lists pair by position:
    one time to first token after its own latency is refused, even when it is under another's."""
    rng = random.Random(5)
    for bad in (0, 5, 11):
        preds = demo_batch(rng, 12, only_simple=True)
        for i, p in enumerate(preds):
            p.timing.latency.FromMilliseconds(1000 + 100 * i)
            p.timing.time_to_first_token.FromMilliseconds(200 + 10 * i)
        assert verdicts(request_of(preds).SerializeToString()) == ("m-a", "m-a")
        preds[bad].timing.time_to_first_token.FromMilliseconds(1000 + 100 * bad + 1)  # under the last latency
        assert verdicts(request_of(preds).SerializeToString()) == (None, None)
        preds[bad].timing.time_to_first_token.FromMilliseconds(1000 + 100 * bad)  # equal: valid
        assert verdicts(request_of(preds).SerializeToString()) == ("m-a", "m-a")
