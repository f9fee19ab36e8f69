"""SubmitPredictions: one stream entry per batch, idempotency, sequence numbers, statuses."""

from __future__ import annotations

import grpc
import pytest

from holistic.families.registry import installed
from holistic.queue import envelope
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.redis.keys import Keys
from holistic.redis.scripts import Scripts
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic_client import ClientError
from tests.factories import batch, prediction, varint

KEYS = Keys()


def test_batch_is_one_stream_entry_with_envelope(client, r):
    preds = batch(3)
    preds[0].groups["dialect"] = "aae"
    reply = client.submit(preds, batch_id="b-1", model="m1")
    assert (reply.model, reply.sequence, reply.accepted_count, reply.duplicate) == ("m1", 1, 3, False)
    entries = r.xrange(KEYS.stream)
    assert len(entries) == 1
    fields = entries[0][1]
    assert fields[b"v"] == b"2" and fields[b"m"] == b"m1" and fields[b"s"] == b"1"
    env = envelope.parse(*entries[0]).envelope()
    assert env.batch_id == "b-1" and env.model == "m1" and env.sequence == 1
    assert list(env.families) == installed()  # the gateway's default: every family
    assert [p.id for p in env.predictions] == ["p0", "p1", "p2"]
    assert env.predictions[0].groups["dialect"] == "aae"
    assert env.accept_time.ToMilliseconds() == reply.accept_time.ToMilliseconds()


def test_same_batch_id_same_content_is_the_earlier_answer(client, r):
    first = client.submit(batch(2), batch_id="b-1", model="m1")
    again = client.submit(batch(2), batch_id="b-1", model="m1")
    assert again.duplicate and not first.duplicate
    assert (again.sequence, again.accepted_count, again.accept_time) == (
        first.sequence,
        first.accepted_count,
        first.accept_time,
    )
    assert r.xlen(KEYS.stream) == 1
    meta = r.hgetall(KEYS.meta("m1"))
    assert meta[b"accepted_predictions"] == b"2" and meta[b"accepted_batches"] == b"1"


def test_same_content_with_map_fields_in_another_order_is_a_duplicate(client):
    a = prediction("p1")
    a.groups["x"] = "1"
    a.groups["y"] = "2"
    b = prediction("p1")
    b.groups["y"] = "2"
    b.groups["x"] = "1"
    client.submit([a], batch_id="b-1", model="m1")
    assert client.submit([b], batch_id="b-1", model="m1").duplicate


def _reordered(message) -> bytes:
    """The message's wire bytes built by hand: its fields last-to-first (a repeated field's items
    keep their order) and each map's entries in reverse order, recursively; a Go client's encoding
    may differ from Python's this way on every retry."""
    chunks: list[bytes] = []
    for field, value in message.ListFields():
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            chunk = b""
            for key in reversed(sorted(value)):
                single = type(message)()
                getattr(single, field.name)[key] = value[key]
                chunk += single.SerializeToString()
        elif field.message_type is not None and field.is_repeated:
            chunk = b""
            for item in value:
                body = _reordered(item)
                chunk += varint(field.number << 3 | 2) + varint(len(body)) + body
        else:
            single = type(message)()
            if field.is_repeated:
                getattr(single, field.name).extend(value)
            elif field.message_type is not None:
                getattr(single, field.name).CopyFrom(value)
            else:
                setattr(single, field.name, value)
            chunk = single.SerializeToString()
        chunks.append(chunk)
    return b"".join(reversed(chunks))


def test_a_retry_whose_wire_bytes_differ_only_in_field_and_map_order_is_a_duplicate(gateway, r):
    """batch_id idempotency compares the deterministic serialization, not the bytes received."""
    preds = batch(3, latency_s=0.5)
    for p in preds:
        p.groups.update({"dialect": "aae", "gender": "female", "age": "old"})
        p.metadata.update({"a": "1", "b": "2"})
    request = es.SubmitPredictionsRequest(batch_id="b-1", model="m1", predictions=preds)
    first_bytes = request.SerializeToString(deterministic=True)
    retry_bytes = _reordered(request)
    assert retry_bytes != first_bytes and es.SubmitPredictionsRequest.FromString(retry_bytes) == request
    with grpc.insecure_channel(gateway.address) as channel:
        call = channel.unary_unary(
            "/holistic.v1.EvaluationService/SubmitPredictions",
            response_deserializer=es.SubmitPredictionsResponse.FromString,
        )
        first = call(first_bytes, timeout=10)
        again = call(retry_bytes, timeout=10)
        assert (again.duplicate, again.sequence, again.accepted_count) == (True, first.sequence, 3)
        assert not first.duplicate
        other = es.SubmitPredictionsRequest(batch_id="b-1", model="m1", predictions=preds[:2])
        with pytest.raises(grpc.RpcError) as exc:  # other content under the same id is still refused
            call(_reordered(other), timeout=10)
        assert exc.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert r.xlen(KEYS.stream) == 1


def test_same_batch_id_other_content_is_already_exists(client, r):
    client.submit(batch(2), batch_id="b-1", model="m1")
    with pytest.raises(ClientError) as exc:
        client.submit(batch(3), batch_id="b-1", model="m1")
    assert exc.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert "b-1" in exc.value.message
    assert r.xlen(KEYS.stream) == 1


def test_sequences_are_per_model(client):
    seqs = [client.submit(batch(1), batch_id=f"b{i}", model=m).sequence for i, m in enumerate("aabab")]
    assert seqs == [1, 2, 1, 3, 2]


def test_model_may_come_from_the_predictions(client):
    preds = batch(2, model="m7")
    assert client.submit(preds, batch_id="b-1").model == "m7"


def test_reserved_but_not_queued_batch_is_re_added_with_same_sequence(client, r, gateway):
    """A gateway crash between reserving and XADD: the retry writes the batch with its sequence."""
    request = es.SubmitPredictionsRequest(batch_id="b-1", model="m1", predictions=batch(2))
    import hashlib

    digest = hashlib.sha256(request.SerializeToString(deterministic=True)).hexdigest()
    keys = [KEYS.ingest("m1", "b-1"), KEYS.sequence("m1"), KEYS.deleted("m1"), KEYS.deleting("m1")]
    Scripts(r).ingest(keys=keys, args=[digest, 600, 1_000, 2])
    assert r.xlen(KEYS.stream) == 0
    reply = client.submit(batch(2), batch_id="b-1", model="m1")
    assert reply.duplicate and reply.sequence == 1
    assert r.xlen(KEYS.stream) == 1
    assert r.hget(KEYS.meta("m1"), "accepted_predictions") == b"2"
    client.submit(batch(2), batch_id="b-1", model="m1")
    assert r.xlen(KEYS.stream) == 1


def test_message_over_the_size_limit_is_resource_exhausted_without_retry_info(make_gateway):
    gw = make_gateway(max_message_bytes=1 << 20)
    big = prediction("p1", output="x" * (1 << 20))
    with gw.client(max_attempts=3) as c, pytest.raises(ClientError) as exc:
        c.submit([big], batch_id="b-1", model="m1")
    assert exc.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_garbage_bytes_are_invalid_argument(gateway):
    with grpc.insecure_channel(gateway.address) as channel:
        call = channel.unary_unary("/holistic.v1.EvaluationService/SubmitPredictions")
        with pytest.raises(grpc.RpcError) as exc:
            call(b"\x1a\x03\xff\xfe\xfd", timeout=5)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_invalid_utf8_in_a_string_field_is_invalid_argument(gateway):
    # field 3 (predictions) holding field 6 (output) with bytes that are not UTF-8
    inner = b"\x32\x02\xc3\x28"
    raw = b"\x0a\x01b" + b"\x12\x01m" + b"\x1a" + bytes([len(inner)]) + inner
    with grpc.insecure_channel(gateway.address) as channel:
        call = channel.unary_unary("/holistic.v1.EvaluationService/SubmitPredictions")
        with pytest.raises(grpc.RpcError) as exc:
            call(raw, timeout=5)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_list_models(client):
    client.submit(batch(2), batch_id="b-1", model="zeta")
    client.submit(batch(3), batch_id="b-1", model="alpha")
    models = client.list_models()
    assert [(m.model, m.accepted_predictions, m.accepted_batches) for m in models] == [("alpha", 3, 1), ("zeta", 2, 1)]
    assert models[0].first_accept_time.seconds > 0


def test_unknown_model_profile_is_not_found(client):
    with pytest.raises(ClientError) as exc:
        client.get_profile("nobody")
    assert exc.value.code == grpc.StatusCode.NOT_FOUND


def test_deadline_too_short_is_refused(gateway):
    with grpc.insecure_channel(gateway.address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        request = es.SubmitPredictionsRequest(batch_id="b", model="m", predictions=batch(1))
        with pytest.raises(grpc.RpcError) as exc:
            stub.SubmitPredictions(request, timeout=0.001)
    assert exc.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_mark_queued_counts_a_batch_once(client, r):
    """The script itself refuses to count twice (the gateway's own state check masks it otherwise:
    two retries of a reserved batch can both reach it)."""
    from holistic.redis.scripts import Scripts

    client.submit(batch(3), batch_id="b-1", model="m1")
    keys = [KEYS.ingest("m1", "b-1"), KEYS.meta("m1"), KEYS.models()]
    assert Scripts(r).mark_queued(keys=keys, args=["m1"]) == 0
    meta = r.hgetall(KEYS.meta("m1"))
    assert meta[b"accepted_predictions"] == b"3" and meta[b"accepted_batches"] == b"1"


def _submit_script(r, batch_id: str, digest: str = "d1", ms: int = 1_700_000_000_123):
    """submit.lua called as the gateway calls it on one Redis (no group tags)."""
    request = es.SubmitPredictionsRequest(batch_id=batch_id, predictions=batch(3)).SerializeToString()
    keys = [KEYS.ingest("m1", batch_id), KEYS.sequence("m1"), KEYS.meta("m1"), KEYS.models(), KEYS.stream_for(0)]
    keys += [KEYS.models_index(), KEYS.deleted("m1"), KEYS.deleting("m1")]
    header = BatchEnvelope(batch_id=batch_id, model="m1", families=["accuracy"]).SerializeToString()
    args = [digest, 600, ms, 3, "m1", envelope.VERSION, "m1", "accuracy", request, header, 100_000]
    return [int(x) for x in Scripts(r).submit(keys=keys, args=args)], (request, header)


@pytest.mark.parametrize(
    ("seq", "ms"),
    [(1, 1_700_000_000_123), (127, 1_700_000_000_000), (128, 999), (300, 1_000), (2**32 + 5, 1), (2**50, 2**41 + 7)],
)
def test_submit_script_writes_the_envelope_sequence_and_accept_time_as_protobuf_does(r, seq, ms):
    """submit.lua encodes BatchEnvelope's fields 100 and 101 itself (only it knows the sequence): the
    bytes equal protobuf's own encoding, zero seconds or nanos left out as proto3 does."""
    r.set(KEYS.sequence("m1"), seq - 1)
    reply, (request, header) = _submit_script(r, "b-1", ms=ms)
    assert reply == [0, seq, 3, ms]
    ((entry_id, fields),) = r.xrange(KEYS.stream_for(0))
    tail = BatchEnvelope(sequence=seq)
    tail.accept_time.FromMilliseconds(ms)
    assert fields[b"e"] == request and fields[b"h"] == header + tail.SerializeToString()
    assert (fields[b"v"], fields[b"m"], fields[b"s"], fields[b"f"]) == (b"2", b"m1", str(seq).encode(), b"accuracy")
    env = envelope.parse(entry_id, fields).envelope()
    assert (env.batch_id, env.model, env.sequence, env.accept_time.ToMilliseconds()) == ("b-1", "m1", seq, ms)
    assert [p.id for p in env.predictions] == ["p0", "p1", "p2"]


def test_submit_script_adds_and_counts_a_batch_once(r):
    """A known batch_id with the same content is the earlier answer and adds nothing; with other
    content it is refused and writes nothing; one reserved by an older gateway's first step
    (ingest.lua, then a crash) is queued once, under its own sequence number and accept time."""
    stream = KEYS.stream_for(0)
    assert _submit_script(r, "b-1")[0] == [0, 1, 3, 1_700_000_000_123]
    assert _submit_script(r, "b-1", ms=5)[0] == [1, 1, 3, 1_700_000_000_123]
    assert _submit_script(r, "b-1", digest="other")[0] == [2, 1]
    assert r.xlen(stream) == 1
    assert r.smembers(KEYS.models()) == {b"m1"}
    assert r.zrange(KEYS.models_index(), 0, -1, withscores=True) == [(b"m1", 0)]
    meta = r.hgetall(KEYS.meta("m1"))
    assert meta[b"accepted_predictions"] == b"3" and meta[b"accepted_batches"] == b"1"
    ingest_keys = [KEYS.ingest("m1", "b-2"), KEYS.sequence("m1"), KEYS.deleted("m1"), KEYS.deleting("m1")]
    Scripts(r).ingest(keys=ingest_keys, args=["d2", 600, 1_000, 3])
    assert _submit_script(r, "b-2", digest="d2", ms=9_000)[0] == [1, 2, 3, 1_000]
    assert _submit_script(r, "b-2", digest="d2", ms=9_000)[0] == [1, 2, 3, 1_000]
    assert r.xlen(stream) == 2 and r.hget(KEYS.ingest("m1", "b-2"), "state") == b"queued"
    assert envelope.parse(*r.xrange(stream)[1]).envelope().accept_time.ToMilliseconds() == 1_000
    assert r.hget(KEYS.meta("m1"), "accepted_batches") == b"2"
