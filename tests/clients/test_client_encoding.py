"""The Python client encodes each batch once: the bytes it sends are the request's canonical encoding."""

from __future__ import annotations

import random

import pytest

from holistic.v1 import evaluation_service_pb2 as es
from holistic_client.client import Client
from holistic_client.submit_encoding import canonical_bytes, content_batch_id, encoded, request_body, with_batch_id
from tests.gateway.test_columns import demo_batch


@pytest.mark.parametrize("batch_id", ["", "b", "x" * 127, "x" * 128, "é" * 200, "c-" + "0" * 40_000])
def test_the_batch_id_prefixed_to_the_body_is_the_canonical_encoding(batch_id):
    preds = demo_batch(random.Random(3), 30, rankings=True)
    for p in preds:
        p.groups.update({"zeta": "1", "alpha": "2", "mid": "3"})  # map entries sorted only when deterministic
    body = canonical_bytes(es.SubmitPredictionsRequest(model="m", predictions=preds))
    request = es.SubmitPredictionsRequest(batch_id=batch_id, model="m", predictions=preds)
    assert with_batch_id(batch_id, body) == request.SerializeToString(deterministic=True)
    assert es.SubmitPredictionsRequest.FromString(with_batch_id(batch_id, body)) == request


def test_submit_sends_the_content_id_and_the_canonical_bytes(monkeypatch):
    preds = demo_batch(random.Random(4), 20, rankings=False)
    sent: list[bytes] = []
    with Client("127.0.0.1:1") as client:  # a lazy channel: nothing connects
        monkeypatch.setattr(client, "_submit", lambda raw, **_: sent.append(canonical_bytes(raw)))
        client.submit(preds, model="m")
        client.submit(preds, model="m", batch_id="mine")
    expected = es.SubmitPredictionsRequest(model="m", predictions=preds)
    expected.batch_id = content_batch_id(expected)
    assert sent[0] == expected.SerializeToString(deterministic=True)
    expected.batch_id = "mine"
    assert sent[1] == expected.SerializeToString(deterministic=True)


@pytest.mark.parametrize("model", ["", "m", "modèle-" + "x" * 300])
@pytest.mark.parametrize("n", [0, 1, 40])
def test_the_body_from_each_prediction_is_the_request_s_canonical_encoding(model, n):
    preds = demo_batch(random.Random(5), n, rankings=True) if n else []
    for i, p in enumerate(preds):
        p.groups.update({"zeta": "1", "alpha": "2", "mid": str(i)})  # map entries sorted only when deterministic
        p.output = "y" * (i * 20)  # encodings on both sides of every varint length boundary up to 16 KiB
        p.input = "é" * (i * 100)
    if preds:
        preds[0].MergeFromString(b"\xa0\x1f\x07")  # field 500, varint 7: unknown, kept as it is
    request = es.SubmitPredictionsRequest(model=model, predictions=preds)
    assert request_body(model, encoded(preds)) == request.SerializeToString(deterministic=True)
