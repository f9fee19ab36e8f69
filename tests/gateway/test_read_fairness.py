"""Reads are fair between tenants: folds run off the event loop, and a tenant's concurrent reads are
capped (issue 14, "per-tenant fairness for reads as for writes").

A fold is made to block (gateway.profiles._fold wrapped to wait on an event) for one tenant's model:
other callers are answered meanwhile, and that tenant's further reads queue, then are refused.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

import gateway.profiles
from holistic.tenancy.tenants import hash_token
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from tests.factories import prediction

A, B = "token-of-team-a", "token-of-team-b"
ENTRIES = f"team-a:sha256:{hash_token(A)},team-b:sha256:{hash_token(B)}"


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture
def blocked_fold(monkeypatch):
    """Folds of team-a's model "slow" wait until `release` is set; `started` counts them."""
    real = gateway.profiles._fold
    release = threading.Event()
    started = threading.Semaphore(0)
    threads: list[str] = []

    def fold(model, *args):
        threads.append(threading.current_thread().name)
        if model == "team-a|slow":
            started.release()
            release.wait(30)
        return real(model, *args)

    monkeypatch.setattr(gateway.profiles, "_fold", fold)
    yield release, started, threads
    release.set()


def test_a_slow_fold_runs_off_the_event_loop_and_others_are_answered(make_gateway, blocked_fold):
    release, started, threads = blocked_fold
    gw = make_gateway(tokens=ENTRIES)
    with grpc.insecure_channel(gw.address) as channel, ThreadPoolExecutor(4) as pool:
        stub = es_grpc.EvaluationServiceStub(channel)
        for token, model in ((A, "slow"), (B, "quick")):
            stub.SubmitPredictions(
                es.SubmitPredictionsRequest(batch_id="b1", model=model, predictions=[prediction("a")]),
                metadata=auth(token),
            )
        slow = pool.submit(stub.GetProfile, es.GetProfileRequest(model="slow"), metadata=auth(A), timeout=30)
        assert started.acquire(timeout=10)  # the slow fold is running
        # while it runs, another tenant reads, submits and lists: the event loop is free
        quick = stub.GetProfile(es.GetProfileRequest(model="quick"), metadata=auth(B), timeout=10)
        assert quick.profile.counts.accepted_predictions == 1
        stub.SubmitPredictions(
            es.SubmitPredictionsRequest(batch_id="b2", model="quick", predictions=[prediction("b")]),
            metadata=auth(B),
            timeout=10,
        )
        assert not slow.done()
        release.set()
        assert slow.result(30).profile.counts.accepted_predictions == 1
    assert threads and all(name.startswith("fold") for name in threads)


def test_a_tenants_concurrent_reads_are_capped_the_rest_queue_then_are_refused(make_gateway, blocked_fold):
    release, started, _ = blocked_fold
    gw = make_gateway(tokens=ENTRIES, tenant_concurrent_reads=1)
    with grpc.insecure_channel(gw.address) as channel, ThreadPoolExecutor(8) as pool:
        stub = es_grpc.EvaluationServiceStub(channel)
        for token, model in ((A, "slow"), (B, "quick")):
            stub.SubmitPredictions(
                es.SubmitPredictionsRequest(batch_id="b1", model=model, predictions=[prediction("a")]),
                metadata=auth(token),
            )
        first = pool.submit(stub.GetProfile, es.GetProfileRequest(model="slow"), metadata=auth(A), timeout=30)
        assert started.acquire(timeout=10)
        queued = [
            pool.submit(stub.GetProfile, es.GetProfileRequest(model="slow"), metadata=auth(A), timeout=30)
            for _ in range(4)  # 1 running + 4 waiting = the cap's 1 x (1 + 4)
        ]
        limits = gw.gateway.hub.limits
        deadline = time.monotonic() + 10  # until the gateway holds all five (one running, four waiting)
        while limits._queued["team-a"] < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert limits._queued["team-a"] == 5
        refused = None
        try:
            stub.GetProfile(es.GetProfileRequest(model="slow"), metadata=auth(A), timeout=10)
        except grpc.RpcError as exc:
            refused = exc
        assert refused is not None and refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "HOLISTIC_TENANT_CONCURRENT_READS" in refused.details()
        # the other tenant is not held up by team-a's queue
        quick = stub.GetProfile(es.GetProfileRequest(model="quick"), metadata=auth(B), timeout=10)
        assert quick.profile.counts.accepted_predictions == 1
        assert not first.done() and not any(q.done() for q in queued)
        release.set()
        for f in [first, *queued]:
            assert f.result(30).profile.counts.accepted_predictions == 1
