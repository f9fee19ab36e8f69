"""The C wire proof (gateway/_wireproof.c) against its oracles: validate() for the verdict and the
model, SerializeToString(deterministic=True) for "canonical", group_tags() for the pairs.

It may only say a batch is valid when validate says so, with the same model; "canonical" only when
the request's bytes are exactly the deterministic encoding (their sha256 is then the content digest);
its pairs are group_tags' pairs in the same order. On the valid batches of the demo mix (choices and
perturbations included) it must answer, or it would prove nothing. Batches are demo predictions with
up to two faults each from test_columns' catalogue of every rule, and encodings that are valid but
not canonical, or that only the real parse can read (a field twice, unknown fields, wrong wire types).
"""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable

import grpc
import pytest
from google.protobuf.message import DecodeError

from gateway import wire_proof
from gateway.ingest import group_tags, tags_of
from gateway.wire import _varint
from holistic.redis.keys import Keys
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from tests.factories import delimited, varint, wire_field
from tests.gateway.test_columns import DEMO, FAULTS, LIMITS, NOW, demo_batch, request_of, verdicts


def check(raw: bytes) -> wire_proof.Proof | None:
    """The proof of raw, held to every oracle wherever it answers."""
    proof = wire_proof.prove(raw, LIMITS, NOW)
    _, oracle = verdicts(raw)
    if proof is None:
        return None
    request = SubmitPredictionsRequest.FromString(raw)
    assert proof.model == oracle, "proved a batch validate refuses, or named another model"
    assert proof.count == len(request.predictions)
    if proof.canonical:
        assert raw == request.SerializeToString(deterministic=True), "canonical, but it re-encodes otherwise"
    assert list(tags_of(proof.pairs).items()) == list(group_tags(request).items()) or _same_but_order(proof, request)
    return proof


def _same_but_order(proof: wire_proof.Proof, request: SubmitPredictionsRequest) -> bool:
    """Within one prediction the pairs come in wire order, group_tags' in the map's: the same tags
    and first indices (ingest re-registers in group_tags' order before naming a capped tag)."""
    return tags_of(proof.pairs) == group_tags(request)


def test_it_is_built():
    """CI builds it (tools/build_native.py, from ./dev and pip install): a missing build must fail here,
    not silently run the gateway on the Python path."""
    assert wire_proof.available()


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_every_fault_is_left_to_the_python_path(fault):
    """Each rule broken once at the end of a batch, choices and perturbations in the batch too: validate
    refuses it and the proof does not answer."""
    rng = random.Random(fault)
    for _ in range(5):
        preds = demo_batch(rng, 12)
        FAULTS[fault](preds, rng)
        model = "" if fault.startswith("several models") else "m-a"
        request = request_of(preds, model=model) if model else SubmitPredictionsRequest(batch_id="b", predictions=preds)
        raw = request.SerializeToString()
        assert verdicts(raw)[1] is None, fault
        assert wire_proof.prove(raw, LIMITS, NOW) is None, fault


def test_valid_batches_of_the_demo_mix_are_proven_canonical():
    """Every valid batch of the demo mix (choices, perturbations, rankings, judgments) is proven, with
    its model; canonical when serialized deterministically (as holistic_client sends it); the model
    may come from the predictions instead of the request."""
    rng = random.Random(1)
    seen_choices = seen_perturbations = seen_groups = seen_rankings = 0
    for n in (1, 7, 64):
        for _ in range(10):
            preds = demo_batch(rng, n, rankings=True)
            seen_choices += sum(bool(p.choice_probabilities) for p in preds)
            seen_perturbations += sum(p.HasField("perturbation") for p in preds)
            seen_groups += sum(bool(p.groups) for p in preds)
            seen_rankings += sum(p.HasField("ranking") for p in preds)
            proof = check(request_of(preds).SerializeToString(deterministic=True))
            assert proof is not None and proof.model == "m-a" and proof.canonical
            proof = check(request_of(preds).SerializeToString())  # maps in upb's hash order
            assert proof is not None and proof.model == "m-a"
    assert seen_choices and seen_perturbations and seen_groups and seen_rankings
    preds = demo_batch(rng, 20)
    for p in preds:
        p.model = "m-b"
    proof = check(SubmitPredictionsRequest(batch_id="b", predictions=preds).SerializeToString())
    assert proof is not None and proof.model == "m-b"


def test_random_faults_never_prove_a_batch_validate_refuses():
    rng = random.Random(20261203)
    names = sorted(FAULTS)
    answered = 0
    for _ in range(600):
        preds = demo_batch(rng, rng.randint(1, 24), rankings=rng.random() < 0.2)
        rng.shuffle(preds)
        for name in rng.sample(names, rng.choice((0, 0, 1, 2))):
            if name.startswith("several models"):
                continue
            FAULTS[name](preds, rng)
            preds.append(preds.pop(0))
        if check(request_of(preds).SerializeToString()) is not None:
            answered += 1
    assert answered > 150


# ---- encodings ------------------------------------------------------------------------------------


def _fields(message: bytes) -> list[bytes]:
    """A message's top-level fields, each as its own bytes (tag included)."""
    out, i = [], 0
    while i < len(message):
        start = i
        key, i = _varint(message, i)
        wire_type = key & 7
        if wire_type == 0:
            _, i = _varint(message, i)
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        else:
            n, i = _varint(message, i)
            i += n
        out.append(message[start:i])
    return out


def _request(preds: list[bytes], model: bytes = b"m-a") -> bytes:
    return delimited(1, b"b-1") + delimited(2, model) + b"".join(delimited(3, p) for p in preds)


def _mutate(rng: random.Random, pred: bytes) -> bytes:
    """One valid re-encoding of a prediction, or one only the real parse reads: field order shuffled,
    a field sent twice, an unknown field, a non-minimal varint, an explicit default."""
    fields = _fields(pred)
    kind = rng.randrange(6)
    if kind == 0:
        rng.shuffle(fields)
    elif kind == 1 and fields:
        fields.append(rng.choice(fields))
    elif kind == 2:
        fields.insert(rng.randrange(len(fields) + 1), wire_field(rng.choice((18, 99, 1000)), 0, varint(7)))
    elif kind == 3:
        fields.append(delimited(rng.choice((5, 6, 2)), b""))  # input/output/model "" sent explicitly
    elif kind == 4:
        fields.append(wire_field(11, 0, rng.choice((b"\x00", b"\x01", b"\x02", b"\x81\x00"))))  # correct, odd bools
    else:
        fields.append(wire_field(9, 1, struct.pack("<d", rng.choice((0.0, -0.0, 0.5, 1.0)))))  # confidence again
    return b"".join(fields)


def test_reencodings_are_proven_only_where_validate_agrees_and_canonical_only_where_exact():
    """Valid batches re-encoded: whatever the proof says must hold (check() asserts it); batches whose
    bytes are not canonical are still proven where each field is sent once."""
    rng = random.Random(7)
    non_canonical_proven = 0
    for _ in range(800):
        preds = [p.SerializeToString() for p in demo_batch(rng, rng.randint(1, 8))]
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(preds))
            preds[i] = _mutate(rng, preds[i])
        proof = check(_request(preds))
        if proof is not None and not proof.canonical:
            non_canonical_proven += 1
    assert non_canonical_proven > 50


def _in_place(message: bytes, number: int, field: bytes) -> bytes:
    """message with field inserted where a canonical encoding would put field `number`."""
    fields = _fields(message)
    at = next((i for i, f in enumerate(fields) if _varint(f, 0)[0] >> 3 > number), len(fields))
    return b"".join([*fields[:at], field, *fields[at:]])


def test_explicit_defaults_are_proven_but_not_canonical():
    """An implicit-presence field sent with its default in its own place (a legal encoding, which
    deterministic serialization leaves out): valid, proven, and not canonical."""
    p = pb.Prediction(id="x", scenario="s", task=pb.TASK_OPEN_QA, references=["r"])
    p.timing.latency.seconds = 2
    base = p.SerializeToString()
    assert check(_request([base])).canonical
    timing = delimited(1, wire_field(1, 0, varint(2)) + wire_field(2, 0, varint(0)))  # latency 2 s, nanos 0 sent
    explicit = {
        "input": _in_place(base, 5, delimited(5, b"")),
        "output": _in_place(base, 6, delimited(6, b"")),
        "model": _in_place(base, 2, delimited(2, b"")),
        "nanos": _in_place(_fields_without(base, 14), 14, delimited(14, timing)),
    }
    for name, pred in explicit.items():
        assert pb.Prediction.FromString(pred) == p, name
        proof = check(_request([pred]))
        assert proof is not None and not proof.canonical, name


def _fields_without(message: bytes, number: int) -> bytes:
    return b"".join(f for f in _fields(message) if _varint(f, 0)[0] >> 3 != number)


def test_map_entries_in_any_order_are_proven_and_canonical_only_sorted():
    """Go's and upb's own encoders do not sort map entries: proven either way, canonical only when
    sorted as upb's deterministic serialization sorts them (memcmp, then a key AFTER its extensions)."""
    p = pb.Prediction(id="x", scenario="s", task=pb.TASK_OPEN_QA, output="o")
    base = p.SerializeToString()
    keys = [b"k", b"k2", b"ka", b"K", b"k1", b"ab", b"abc"]
    upb = [b"K", b"abc", b"ab", b"k1", b"k2", b"ka", b"k"]
    for order in (upb, sorted(keys), list(reversed(upb)), keys):
        entries = b"".join(delimited(13, delimited(1, k) + delimited(2, b"v" + k)) for k in order)
        proof = check(_request([base + entries]))
        assert proof is not None
        assert proof.canonical == (order == upb)
        assert sorted(proof.pairs) == sorted((k.decode(), "v" + k.decode(), 0) for k in keys)


def test_encodings_the_proof_leaves_to_the_python_path():
    """A field sent twice (the last wins in the real parse), a task sent packed, a map key twice in one
    prediction, a map entry without its value, the request's model after its predictions: not proven,
    whatever validate says."""
    good = pb.Prediction(id="x", scenario="mmlu", task=pb.TASK_OPEN_QA, output="o").SerializeToString()
    cases = {
        "scenario twice": delimited(3, b"bad name") + good,
        "task packed": delimited(1, b"y") + delimited(3, b"s") + delimited(4, varint(1)),
        "group key twice": good
        + delimited(13, delimited(1, b"k") + delimited(2, b"a"))
        + delimited(13, delimited(1, b"k") + delimited(2, b"b")),
        "group entry without value": good + delimited(13, delimited(1, b"k")),
        "perturbation twice": good
        + delimited(12, delimited(1, b"typos") + wire_field(2, 0, b"\x01"))
        + delimited(12, delimited(3, b"orig")),
        "a ranking": good + delimited(17, b""),
    }
    for name, pred in cases.items():
        assert wire_proof.prove(_request([pred]), LIMITS, NOW) is None, name
    late_model = delimited(1, b"b-1") + delimited(3, good) + delimited(2, b"m-a")
    assert wire_proof.prove(late_model, LIMITS, NOW) is None
    assert check(_request([good])) is not None  # and the good one is proven


def test_limits_are_the_settings():
    """max_batch_predictions, max_references, max_map_entries and the future skew come from the settings."""
    rng = random.Random(11)
    preds = demo_batch(rng, 12)
    raw = request_of(preds).SerializeToString()
    assert wire_proof.prove(raw, LIMITS, NOW) is not None
    assert wire_proof.prove(raw, LIMITS.model_copy(update={"max_batch_predictions": 11}), NOW) is None
    assert wire_proof.prove(raw, LIMITS.model_copy(update={"max_batch_predictions": 12}), NOW) is not None
    most = max(len(p.references) for p in preds)
    assert wire_proof.prove(raw, LIMITS.model_copy(update={"max_references": most - 1}), NOW) is None
    assert wire_proof.prove(raw, LIMITS.model_copy(update={"max_references": most}), NOW) is not None
    latest = max(p.produced_at.seconds for p in preds)
    assert wire_proof.prove(raw, LIMITS, latest - LIMITS.future_skew_s - 1) is None
    assert wire_proof.prove(raw, LIMITS, latest - LIMITS.future_skew_s) is not None


# ---- rankings -------------------------------------------------------------------------------------

RANKINGS = [p for p in DEMO if p.HasField("ranking")]


def _ranked(rng: random.Random) -> pb.Prediction:
    q = pb.Prediction()
    q.CopyFrom(rng.choice([p for p in RANKINGS if len(p.ranking.documents) >= 3 and not p.ranking.order]))
    q.id = "ranked-" + q.id
    q.ClearField("model")
    q.produced_at.FromSeconds(int(NOW))
    return q


def _doc(p: pb.Prediction, i: int = -1) -> pb.RankedDocument:
    return p.ranking.documents[i]


def _order(p: pb.Prediction, ids: list[str], form: int = pb.RANKING_FORM_UNSPECIFIED) -> None:
    p.ranking.order[:] = ids
    p.ranking.form = form


RANKING_FAULTS: dict[str, Callable[[pb.Prediction], None]] = {
    "document id empty": lambda p: setattr(_doc(p), "id", ""),
    "document id too long": lambda p: setattr(_doc(p), "id", "d" * 257),
    "document id twice": lambda p: setattr(_doc(p), "id", _doc(p, 0).id),
    "relevance fraction": lambda p: setattr(_doc(p), "relevance", 1.5),
    "relevance negative": lambda p: setattr(_doc(p), "relevance", -1.0),
    "relevance nan": lambda p: setattr(_doc(p), "relevance", math.nan),
    "relevance inf": lambda p: setattr(_doc(p), "relevance", math.inf),
    "score nan": lambda p: setattr(_doc(p), "score", math.nan),
    "score inf": lambda p: setattr(_doc(p), "score", -math.inf),
    "logprob inf": lambda p: setattr(_doc(p), "logprob", math.inf),
    "retriever rank 0": lambda p: setattr(_doc(p), "retriever_rank", 0),
    "order names a stranger": lambda p: _order(p, [_doc(p, 0).id, "stranger"]),
    "order repeats": lambda p: _order(p, [_doc(p, 0).id, _doc(p, 1).id, _doc(p, 0).id]),
    "order under form scores": lambda p: _order(p, [_doc(p, 0).id], pb.RANKING_FORM_SCORES),
    "form scores without scores": lambda p: (
        [d.ClearField("score") for d in p.ranking.documents] + [setattr(p.ranking, "form", pb.RANKING_FORM_SCORES)]
    ),
    "form binary without outputs": lambda p: (
        [d.ClearField("model_output") for d in p.ranking.documents]
        + [setattr(p.ranking, "form", pb.RANKING_FORM_BINARY)]
    ),
    "form judgments without relevance": lambda p: (
        [d.ClearField("relevance") for d in p.ranking.documents]
        + [setattr(p.ranking, "form", pb.RANKING_FORM_JUDGMENTS_ONLY)]
    ),
    "form unknown": lambda p: setattr(p.ranking, "form", 9),
    "documents too many": lambda p: [
        p.ranking.documents.add(id=f"extra{i}") for i in range(LIMITS.max_ranking_documents)
    ],
    "ranking without its task": lambda p: setattr(p, "task", pb.TASK_OPEN_QA),
    "ranking task without ranking": lambda p: p.ClearField("ranking"),
}


@pytest.mark.parametrize("fault", sorted(RANKING_FAULTS))
def test_every_ranking_fault_is_left_to_the_python_path(fault):
    rng = random.Random(fault)
    for _ in range(5):
        preds = demo_batch(rng, 6)
        bad = _ranked(rng)
        RANKING_FAULTS[fault](bad)
        raw = request_of([*preds, bad]).SerializeToString()
        assert verdicts(raw)[1] is None, fault
        assert wire_proof.prove(raw, LIMITS, NOW) is None, fault
        raw = request_of([*preds, _ranked(rng)]).SerializeToString()
        assert check(raw) is not None, fault  # the same batch without the fault is proven


def test_judgments_share_their_rankings_id_and_nothing_else_does():
    """A judgments-only prediction may repeat its ranking's id (validate's exception); a second ranking
    with the id, or any other prediction, may not."""
    rng = random.Random(4)
    ranking = _ranked(rng)
    ranking.ranking.form = pb.RANKING_FORM_ORDER
    ranking.ranking.order[:] = [d.id for d in ranking.ranking.documents]
    judgments = pb.Prediction(id=ranking.id, scenario=ranking.scenario, task=pb.TASK_RANKING)
    judgments.ranking.documents.add(id=ranking.ranking.documents[0].id, relevance=1)
    for form in (pb.RANKING_FORM_UNSPECIFIED, pb.RANKING_FORM_JUDGMENTS_ONLY):
        judgments.ranking.form = form
        assert check(request_of([ranking, judgments]).SerializeToString()) is not None
        assert check(request_of([judgments, ranking]).SerializeToString()) is not None
    judgments.ranking.documents[0].score = 0.5  # now it is a ranking of its own
    judgments.ranking.form = pb.RANKING_FORM_UNSPECIFIED
    raw = request_of([ranking, judgments]).SerializeToString()
    assert verdicts(raw)[1] is None and wire_proof.prove(raw, LIMITS, NOW) is None
    other = pb.Prediction(id=ranking.id, scenario="s", task=pb.TASK_OPEN_QA)
    raw = request_of([ranking, other]).SerializeToString()
    assert verdicts(raw)[1] is None and wire_proof.prove(raw, LIMITS, NOW) is None


# ---- in the gateway ---------------------------------------------------------------------------------


def _refused(*args: object, **kwargs: object) -> None:
    raise AssertionError("the Python path ran for a batch the C proof should have proven")


def test_the_gateway_uses_it(make_gateway, monkeypatch, r):
    """With the proof on, a valid batch is neither parsed nor walked in Python, its group tags are
    registered, its retry is a duplicate, and so is the same content encoded otherwise (the digest is
    the content's)."""
    from gateway import ingest

    gw = make_gateway()
    real_parse = ingest.parse_request
    monkeypatch.setattr(ingest, "validate", _refused)
    monkeypatch.setattr(ingest.columns, "proven_model", _refused)
    monkeypatch.setattr(ingest, "parse_request", _refused)  # canonical bytes are never parsed
    preds = demo_batch(random.Random(8), 30, rankings=True)
    preds[3].groups.clear()
    preds[3].groups.update({"dialect": "aae", "region": "uk"})
    request = request_of(preds, batch_id="proof-1")
    raw = request.SerializeToString(deterministic=True)
    fields = _fields(raw)
    # same content, other bytes: the request's first fields swapped, each prediction's id sent last
    moved = []
    for p in request.predictions:
        own = _fields(p.SerializeToString())
        moved.append(delimited(3, b"".join([*own[1:], own[0]])))
    reordered = b"".join([fields[1], fields[0], *moved])
    assert SubmitPredictionsRequest.FromString(reordered) == request
    assert wire_proof.prove(reordered, LIMITS, NOW) is not None
    with grpc.insecure_channel(gw.address) as channel:
        call = channel.unary_unary(
            "/holistic.v1.EvaluationService/SubmitPredictions",
            request_serializer=None,
            response_deserializer=es.SubmitPredictionsResponse.FromString,
        )
        first = call(raw)
        assert not first.duplicate and first.accepted_count == 30
        keys = Keys(gw.settings.key_prefix)
        assert {b"dialect", b"region"} <= r.smembers(keys.group_keys("m-a"))
        assert b"uk" in r.smembers(keys.group_values("m-a", "region"))
        reply = call(raw)
        assert reply.duplicate and reply.sequence == first.sequence
        monkeypatch.setattr(ingest, "parse_request", real_parse)  # other bytes: re-encoded for the digest
        reply = call(reordered)
        assert reply.duplicate and reply.sequence == first.sequence
        other = request_of(preds[:-1], batch_id="proof-1")  # other content under the same id
        with pytest.raises(grpc.RpcError) as exc:
            es_grpc.EvaluationServiceStub(channel).SubmitPredictions(other)
        assert exc.value.code() == grpc.StatusCode.ALREADY_EXISTS


def test_a_capped_tag_is_named_as_without_the_proof(make_gateway):
    """Past HOLISTIC_MAX_GROUP_KEYS the refusal names the same field with the proof on and off (the
    proof's pairs come in wire order; the gateway re-registers in the request's own order to name it)."""
    answers = []
    for on in (True, False):
        gw = make_gateway(max_group_keys=2, gateway_wire_proof=on)
        p = pb.Prediction(id="a", scenario="s", task=pb.TASK_OPEN_QA, output="o")
        p.groups.update({"zeta": "1", "alpha": "2", "mid": "3"})
        with grpc.insecure_channel(gw.address) as channel:
            stub = es_grpc.EvaluationServiceStub(channel)
            with pytest.raises(grpc.RpcError) as exc:
                stub.SubmitPredictions(SubmitPredictionsRequest(batch_id="g", model="m", predictions=[p]))
            assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            answers.append(exc.value.details())
    assert answers[0] == answers[1]


# ---- UTF-8 ------------------------------------------------------------------------------------------

EDGES = [0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF]
BAD = [b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
       b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xe2\x82",
       b"\xf0\x9f\x98", b"\xc3"]  # fmt: skip


def _samples(rng: random.Random) -> list[bytes]:
    """Strings of every UTF-8 length at the edges of each form, random text, and broken sequences
    (overlong, surrogate, past U+10FFFF, truncated, stray continuation) at random places in them."""
    out = [chr(c).encode() for c in EDGES]
    for _ in range(400):
        text = "".join(chr(rng.choice((rng.randint(32, 126), rng.randint(0x80, 0x7FF), rng.randint(0x800, 0xD7FF),
                                        rng.randint(0xE000, 0xFFFF), rng.randint(0x10000, 0x10FFFF))))
                       for _ in range(rng.randint(1, 40)))  # fmt: skip
        good = text.encode()
        out.append(good)
        at = rng.randint(0, len(good))
        out.append(good[:at] + rng.choice(BAD) + good[at:])
        out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))))  # anything
    return out


def test_texts_are_proven_exactly_when_they_are_utf8():
    """The proof lets the gateway skip the real parse, so it must refuse what the parse refuses: for
    each sample as a prediction's output, proven iff Python decodes it (and upb parses it)."""
    base = pb.Prediction(id="x", scenario="s", task=pb.TASK_OPEN_QA).SerializeToString()
    for sample in _samples(random.Random(12)):
        raw = _request([_in_place(base, 6, delimited(6, sample))])
        try:
            sample.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            valid = False
        try:
            SubmitPredictionsRequest.FromString(raw)
            parsed = True
        except DecodeError:
            parsed = False
        assert parsed == valid, sample  # the premise: upb and Python agree on UTF-8
        assert (wire_proof.prove(raw, LIMITS, NOW) is not None) == valid, sample


SNOWMAN = "\N{SNOWMAN}".encode()


def test_every_free_text_string_is_checked():
    """A stray byte in each string field that no name rule holds to ASCII (marked with a snowman): not proven."""
    rng = random.Random(13)
    ranked = _ranked(rng)
    ranked.ranking.order[:] = [d.id for d in ranked.ranking.documents]
    ranked.ranking.form = pb.RANKING_FORM_ORDER
    choice = pb.Prediction(id="c", scenario="s", task=pb.TASK_MULTIPLE_CHOICE)
    choice.choice_probabilities.add(choice="A", probability=0.5)
    choice.choice_probabilities.add(choice="B☃B", probability=0.5)
    perturbed = pb.Prediction(id="p", scenario="s", task=pb.TASK_OPEN_QA)
    perturbed.perturbation.name, perturbed.perturbation.family, perturbed.perturbation.original_id = (
        "typos",
        1,
        "o☃o",
    )
    texts = pb.Prediction(
        id="i☃i",
        scenario="s",
        task=pb.TASK_OPEN_QA,
        input="in☃put",
        output="ou☃tput",
        references=["r☃ef"],
        source="so☃urce",
    )
    texts.metadata.update({"k☃ey": "value", "key": "va☃lue"})
    ranked.ranking.documents[0].model_output = "Y☃es"
    ranked.ranking.documents[1].id = "d☃oc"
    ranked.ranking.order[1] = "d☃oc"
    for p in (choice, perturbed, texts, ranked):
        good = p.SerializeToString()
        assert check(_request([good])) is not None
        marks = [at for at in range(len(good)) if good[at : at + 3] == SNOWMAN]
        assert marks
        for at in marks:
            bad = good[:at] + b"\xff\xff\xff" + good[at + 3 :]
            with pytest.raises(DecodeError):
                SubmitPredictionsRequest.FromString(_request([bad]))
            assert wire_proof.prove(_request([bad]), LIMITS, NOW) is None, (p, at)


def test_the_python_client_sends_canonical_bytes(make_gateway, monkeypatch):
    """holistic_client serializes deterministically, so its batches (maps with several keys included)
    are proven and digested without a parse in the gateway."""
    from gateway import ingest

    gw = make_gateway()
    monkeypatch.setattr(ingest, "parse_request", _refused)
    preds = demo_batch(random.Random(9), 40, rankings=True)
    for i, p in enumerate(preds):
        p.groups.update({f"key{j}": f"v{i % 3}" for j in range(6)})  # six keys: sorted only by chance otherwise
    with gw.client() as client:
        reply = client.submit(preds, model="m-a", batch_id="canonical-1")
        assert reply.accepted_count == 40 and not reply.duplicate
        assert client.submit(preds, model="m-a", batch_id="canonical-1").duplicate


@pytest.mark.timeout(60, method="thread")  # a hang in C never returns to Python for a signal
def test_many_tiny_predictions_are_proven():
    """A batch of many small predictions (more ids than its bytes suggest) is proven, and a repeated id
    among them found: the id set grows (a fixed-size one hung here, a request of 12 KB)."""
    limits = LIMITS.model_copy(update={"max_batch_predictions": 20_000})
    for n in (1000, 20_000):
        preds = [pb.Prediction(id=str(i), scenario="s", task=pb.TASK_OPEN_QA) for i in range(n)]
        raw = SubmitPredictionsRequest(batch_id="b", model="m", predictions=preds).SerializeToString()
        proof = wire_proof.prove(raw, limits, NOW)
        assert proof is not None and proof.count == n
        preds[-1].id = str(n // 2)
        raw = SubmitPredictionsRequest(batch_id="b", model="m", predictions=preds).SerializeToString()
        assert wire_proof.prove(raw, limits, NOW) is None
    ranked = pb.Prediction(id="r", scenario="s", task=pb.TASK_RANKING)
    ranked.ranking.documents.extend(pb.RankedDocument(id=str(i), score=1.0) for i in range(1000))
    ranked.ranking.order.extend(str(i) for i in reversed(range(1000)))
    raw = SubmitPredictionsRequest(batch_id="b", model="m", predictions=[ranked]).SerializeToString()
    assert wire_proof.prove(raw, limits.model_copy(update={"max_ranking_documents": 1000}), NOW) is not None
