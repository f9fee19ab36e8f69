"""What one request can make the gateway do or keep is bounded, and bad bytes are named (issue 14,
defects 4, 7 and 8)."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from holistic.tenancy.tenants import hash_token
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic_client import InvalidPredictions
from tests.factories import prediction


@pytest.fixture
def channel(gateway):
    with grpc.insecure_channel(gateway.address) as ch:
        yield ch


def violations(exc: grpc.RpcError) -> dict[str, str]:
    status = rpc_status.from_call(exc)
    assert status is not None
    out = {}
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            out.update({v.field: v.description for v in bad.field_violations})
    return out


def raw_call(channel, method: str, payload: bytes, stream: bool = False):
    path = f"/holistic.v1.EvaluationService/{method}"
    if stream:
        call = channel.unary_stream(path, request_serializer=None, response_deserializer=None)(payload, timeout=10)
        return next(call)
    return channel.unary_unary(path, request_serializer=None, response_deserializer=None)(payload, timeout=10)


def _bad_utf8(message, field_text: str) -> bytes:
    """The message's bytes with the UTF-8 of `field_text` (a unique marker) replaced by invalid bytes."""
    data = message.SerializeToString()
    marker = field_text.encode()
    assert data.count(marker) == 1
    return data.replace(marker, b"\xff" * len(marker))


@pytest.mark.parametrize(
    ("method", "message", "field", "stream"),
    [
        ("GetProfile", es.GetProfileRequest(model="MARKER"), "model", False),
        ("WatchProfile", es.WatchProfileRequest(model="MARKER"), "model", True),
        (
            "Perturb",
            es.PerturbRequest(predictions=[prediction("a"), prediction("b", input="MARKER")]),
            "predictions[1].input",
            False,
        ),
        (
            "Perturb",
            es.PerturbRequest(
                predictions=[prediction("a")],
                perturbations=[
                    es.PerturbationSpec(name="typos"),
                    es.PerturbationSpec(name="x", options={"k": "MARKER"}),
                ],
            ),
            "perturbations[1].options",
            False,
        ),
    ],
)
def test_invalid_utf8_is_invalid_argument_naming_the_field(channel, method, message, field, stream):
    with pytest.raises(grpc.RpcError) as exc:
        raw_call(channel, method, _bad_utf8(message, "MARKER"), stream)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert violations(exc.value) == {field: "is not valid UTF-8"}


def test_perturb_refuses_an_answer_over_the_message_limit_before_working(make_gateway, monkeypatch):
    import holistic.perturbations as pt

    calls = []
    real = pt.perturb
    monkeypatch.setattr(pt, "perturb", lambda *a, **k: calls.append(1) or real(*a, **k))
    gw = make_gateway(max_message_bytes=2 << 20)
    text = "Word " * 20_000  # 100 kB
    preds = [prediction(f"p{i}", input=text) for i in range(10)]  # a 1 MB request
    specs = [es.PerturbationSpec(name=n) for n in ("lowercase", "typos", "contraction")]
    with grpc.insecure_channel(gw.address) as ch:
        stub = es_grpc.EvaluationServiceStub(ch)
        with pytest.raises(grpc.RpcError) as exc:
            stub.Perturb(es.PerturbRequest(predictions=preds, perturbations=specs, include_originals=True))
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        why = violations(exc.value)["predictions"]
        assert "HOLISTIC_MAX_MESSAGE_BYTES" in why and "would be about" in why
        assert calls == []  # nothing was perturbed
        # the same request with one perturbation fits: 10 originals + 10 variants of ~100 kB
        reply = stub.Perturb(es.PerturbRequest(predictions=preds, perturbations=specs[:1]))
        assert len(reply.predictions) == 10 and reply.predictions[0].input == text.lower()


def test_a_batch_refused_as_already_exists_registers_no_group_tags(make_gateway):
    refused_batches_register_no_group_tags(make_gateway(max_group_values=3))


def refused_batches_register_no_group_tags(gw) -> None:
    """Other content under a used batch_id is ALREADY_EXISTS and uses up no group values; a retry is
    a duplicate; the cap (3 values) refuses the fourth. Also run on a Redis Cluster (tests/test_cluster.py)."""

    def tagged(value: str, pid: str = "a"):
        p = prediction(pid)
        p.groups["dialect"] = value
        return p

    with grpc.insecure_channel(gw.address) as ch:
        stub = es_grpc.EvaluationServiceStub(ch)
        stub.SubmitPredictions(es.SubmitPredictionsRequest(batch_id="b1", model="m", predictions=[tagged("v0")]))
        for i in range(1, 6):  # other content under the used id: refused, and must not use up values
            with pytest.raises(grpc.RpcError) as exc:
                stub.SubmitPredictions(
                    es.SubmitPredictionsRequest(batch_id="b1", model="m", predictions=[tagged(f"x{i}")])
                )
            assert exc.value.code() == grpc.StatusCode.ALREADY_EXISTS
        # a retry of b1 is still a duplicate
        retry = es.SubmitPredictionsRequest(batch_id="b1", model="m", predictions=[tagged("v0")])
        again = stub.SubmitPredictions(retry)
        assert again.duplicate
        # a legitimate batch with two new values (3 in all, the cap) is accepted
        ok = stub.SubmitPredictions(
            es.SubmitPredictionsRequest(batch_id="b2", model="m", predictions=[tagged("v1"), tagged("v2", "b")])
        )
        assert not ok.duplicate and ok.accepted_count == 2
        with pytest.raises(grpc.RpcError) as exc:  # the fourth value is over the cap
            stub.SubmitPredictions(es.SubmitPredictionsRequest(batch_id="b3", model="m", predictions=[tagged("v3")]))
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_tenants_models_past_its_cap_are_refused_naming_the_model(make_gateway, r):
    models_past_the_cap_are_refused(make_gateway(tenant_max_models=2, tokens=TENANTS), r)


TENANTS = f"team-a:sha256:{hash_token('token-a')},team-b:sha256:{hash_token('token-b')}"


def models_past_the_cap_are_refused(gw, r) -> None:
    """A cap of 2 models a tenant: a third model is INVALID_ARGUMENT naming `model` and writes nothing; a
    retry of an accepted batch and new batches of the tenant's models pass; another tenant has its own
    2. Also run on a Redis Cluster (tests/test_cluster.py)."""
    with gw.client("token-a") as a, gw.client("token-b") as b:
        a.submit([prediction("p")], batch_id="b1", model="m1")
        a.submit([prediction("p")], batch_id="b1", model="m2")
        keys_before = sorted(r.keys("*"))
        with pytest.raises(InvalidPredictions) as exc:
            a.submit([prediction("p")], batch_id="b1", model="m3")
        assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
        why = dict(exc.value.violations)["model"]
        assert "'m3' would be model number 3 of tenant 'team-a'" in why and "HOLISTIC_TENANT_MAX_MODELS" in why
        assert sorted(r.keys("*")) == keys_before  # nothing written: no sequence, no meta, not listed
        assert a.submit([prediction("p")], batch_id="b1", model="m2").duplicate  # a retry
        assert not a.submit([prediction("q")], batch_id="b2", model="m1").duplicate  # a model it has
        b.submit([prediction("p")], batch_id="b1", model="m3")  # team-b's own two
        b.submit([prediction("p")], batch_id="b1", model="m4")
        assert [m.model for m in a.list_models()] == ["m1", "m2"]
        assert [m.model for m in b.list_models()] == ["m3", "m4"]
