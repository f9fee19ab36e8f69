"""Redis at its maxmemory (noeviction): submits refused with RetryInfo, nothing accepted lost,
workers keep applying and acknowledging, and submits work again by themselves once memory frees."""

from __future__ import annotations

import time

import grpc
import pytest
import redis
from google.rpc import error_details_pb2

from holistic.queue.janitor import sweep
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.stats.mergeable import Folded
from holistic.v1 import evaluation_service_pb2 as es
from holistic_client.errors import details
from metric_services.runner import Worker
from tests.conftest import drain, start_redis
from tests.factories import batch

KEYS = Keys()
OUTPUT = "Paris " * 700  # ~4 KB per prediction, ~200 KB per batch of 50


@pytest.fixture
def small_redis(tmp_path):
    proc, sock = start_redis(tmp_path, "--maxmemory-policy", "noeviction")
    client = redis.Redis(unix_socket_path=sock)
    client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 3 * (1 << 20))  # 3 MB of room
    yield sock, client
    client.close()
    proc.kill()
    proc.wait()


def test_at_maxmemory_submits_are_refused_workers_drain_and_submits_resume(small_redis, make_gateway, make_settings):
    sock, r = small_redis
    gw = make_gateway(redis_url=f"unix://{sock}", families="accuracy", backlog_max_batches=100_000)
    accepted: dict[str, int] = {}
    refused: grpc.RpcError | None = None
    with grpc.insecure_channel(gw.address) as channel:
        submit = channel.unary_unary(
            "/holistic.v1.EvaluationService/SubmitPredictions",
            request_serializer=es.SubmitPredictionsRequest.SerializeToString,
            response_deserializer=es.SubmitPredictionsResponse.FromString,
        )

        def request(b: int) -> es.SubmitPredictionsRequest:
            preds = batch(50, prefix=f"b{b}-", output=OUTPUT)
            return es.SubmitPredictionsRequest(batch_id=f"b{b}", model="m", predictions=preds)

        for b in range(100):  # 3 MB of room: full after ~15 batches
            try:
                accepted[f"b{b}"] = submit(request(b), timeout=10).sequence
            except grpc.RpcError as err:
                refused = err
                break
        assert refused is not None, "Redis never filled up"
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (refused.code(), refused.details())
        assert "maxmemory" in refused.details()
        retry = next(d for d in details(refused) if isinstance(d, error_details_pb2.RetryInfo))
        assert retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9 > 0
        assert (
            len(accepted) >= 5 and r.info("memory")["used_memory"] > int(r.config_get("maxmemory")["maxmemory"]) * 0.9
        )

        # nothing accepted is lost: every answered batch is on the stream, counted, under its sequence
        entries = {int(fields[b"s"]) for _, fields in r.xrange(KEYS.stream)}
        assert entries == set(accepted.values())
        assert int(r.hget(KEYS.meta("m"), "accepted_batches")) == len(accepted)

        # at the limit, workers still read, apply (apply.lua: allow-oom) and acknowledge. The refused
        # request's buffers are freed by now, so the limit is moved 1 MB under what Redis holds: it
        # stays over it until the janitor trims
        used = int(r.info("memory")["used_memory"])
        r.config_set("maxmemory", used - (1 << 20))
        worker = Worker("accuracy", make_settings(redis_url=f"unix://{sock}", families="accuracy"), r)
        drain(worker)
        assert int(r.info("memory")["used_memory"]) > int(r.config_get("maxmemory")["maxmemory"])
        stats = Folded.from_hashes([r.hgetall(KEYS.stats("m", "accuracy", "all"))])
        assert worker.counters.applied == len(accepted) and stats.num("mmlu|n") == 50 * len(accepted)
        assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0

        # the janitor trims what every group is done with; the refused batch then goes through
        sweep(WorkQueue(r, KEYS), ["accuracy"])
        b = len(accepted)
        deadline = time.monotonic() + 30
        while True:
            try:
                reply = submit(request(b), timeout=10)
                break
            except grpc.RpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline, err.details()
                time.sleep(0.2)
        # the refused try may have reserved its sequence number before XADD was refused: the retry
        # writes it under that number (answered as a duplicate of the reservation), counted once
        assert reply.sequence == len(accepted) + 1 and reply.accepted_count == 50
        assert int(r.hget(KEYS.meta("m"), "accepted_batches")) == len(accepted) + 1
        drain(worker)
    stats = Folded.from_hashes([r.hgetall(KEYS.stats("m", "accuracy", "all"))])
    assert stats.num("mmlu|n") == 50 * (len(accepted) + 1)
