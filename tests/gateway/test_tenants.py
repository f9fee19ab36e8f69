"""Tenants: hashed tokens, namespaced models, rotation without restart, per-tenant quotas."""

from __future__ import annotations

import time

import grpc
import pytest
from google.rpc import error_details_pb2

from holistic.tenancy.tenants import hash_token
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from holistic_client import ClientError
from holistic_client.errors import details
from tests.conftest import drain
from tests.factories import batch, prediction

A, B = "token-of-team-a", "token-of-team-b"
ENTRIES = f"team-a:sha256:{hash_token(A)},team-b:sha256:{hash_token(B)}"


def test_tenants_never_see_each_others_models(make_gateway, make_worker):
    gw = make_gateway(tokens=ENTRIES)
    with gw.client(A) as a, gw.client(B) as b:
        a.submit(batch(3), batch_id="b1", model="shared-name")
        a.submit(batch(2), batch_id="b2", model="secret-model")
        reply = b.submit(batch(1, output="Rome"), batch_id="b1", model="shared-name")  # same batch id, own space
        assert not reply.duplicate and reply.sequence == 1
        drain(make_worker("accuracy"), make_worker("efficiency"))
        pa, pb = a.get_profile("shared-name"), b.get_profile("shared-name")
        assert (pa.model, pa.counts.accepted_predictions) == ("shared-name", 3)
        assert (pb.model, pb.counts.accepted_predictions) == ("shared-name", 1)
        assert pa.dimensions[0].score == 1.0  # accuracy: Paris for Paris
        assert pb.dimensions[0].score == 0.0  # Rome for Paris
        assert [m.model for m in a.list_models()] == ["secret-model", "shared-name"]
        assert [m.model for m in b.list_models()] == ["shared-name"]
        for call in (lambda: b.get_profile("secret-model"), lambda: next(b.watch_profile("secret-model"))):
            with pytest.raises(ClientError) as exc:
                call()
            assert exc.value.code == grpc.StatusCode.NOT_FOUND
            assert "team-a" not in exc.value.message


def test_tokens_rotate_without_restart(make_gateway, tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# tenants\nteam-a:sha256:{hash_token(A)}\n")
    gw = make_gateway(tokens_file=path)
    with gw.client(A) as a, gw.client("brand-new-token") as new:
        a.list_models()
        with pytest.raises(ClientError) as exc:
            new.list_models()
        assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED
        path.write_text(f"team-a:sha256:{hash_token('brand-new-token')}\n")  # rotate: new in, old out
        deadline = time.monotonic() + 5
        while True:
            try:
                new.list_models()
                break
            except ClientError:
                assert time.monotonic() < deadline, "the new token was not picked up"
                time.sleep(0.2)
        with pytest.raises(ClientError) as exc:
            a.list_models()
        assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_a_broken_tokens_file_keeps_the_tokens_before(make_gateway, tmp_path, caplog):
    path = tmp_path / "tokens"
    path.write_text(f"team-a:sha256:{hash_token(A)}\n")
    gw = make_gateway(tokens_file=path)
    path.write_text("team-a:sha256:not-hex\n")
    deadline = time.monotonic() + 10
    with gw.client(A) as a:
        while not any("is invalid; keeping" in rec.getMessage() for rec in caplog.records):
            a.list_models()  # accepted before and after the gateway reads the broken file
            assert time.monotonic() < deadline, "the broken tokens file was never read"
            time.sleep(0.1)
        a.list_models()  # still accepted


def _quota_failure(err: grpc.RpcError) -> tuple[float, str]:
    found = details(err)
    retry = next(d for d in found if isinstance(d, error_details_pb2.RetryInfo))
    quota = next(d for d in found if isinstance(d, error_details_pb2.QuotaFailure))
    return retry.retry_delay.seconds + retry.retry_delay.nanos / 1e9, quota.violations[0].subject


def test_rate_quota_per_tenant(make_gateway):
    gw = make_gateway(tokens=ENTRIES, tenant_quotas='{"team-a": {"predictions_per_s": 10}}')
    with grpc.insecure_channel(gw.address) as ch:
        stub = es_grpc.EvaluationServiceStub(ch)

        def send(token: str, batch_id: str, n: int) -> None:
            request = es.SubmitPredictionsRequest(batch_id=batch_id, model="m", predictions=batch(n))
            stub.SubmitPredictions(request, metadata=(("authorization", f"Bearer {token}"),), timeout=5)

        for attempt in range(5):  # both calls must land in one clock second
            second = int(time.time())
            if time.time() - second > 0.7:
                time.sleep(1 - (time.time() - second))
                continue
            send(A, f"a{attempt}", 8)
            with pytest.raises(grpc.RpcError) as exc:
                send(A, f"a{attempt}-more", 5)
            if int(time.time()) == second:
                break
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        delay, subject = _quota_failure(exc.value)
        assert subject == "tenant:team-a:predictions-per-second" and 0 < delay <= 1.0
        send(B, "b1", 500)  # team-b has no limit
    with gw.client(A) as a:  # the client waits as RetryInfo says, then gets through
        assert a.submit(batch(5), batch_id="later", model="m").accepted_count == 5


def test_backlog_share_per_tenant(make_gateway, make_worker):
    gw = make_gateway(
        tokens=ENTRIES,
        backlog_max_batches=4,
        tenant_quotas='{"team-a": {"backlog_share": 0.5}}',
        families="accuracy,efficiency",  # the two families whose workers run below
    )
    with gw.client(A, max_attempts=1) as a, gw.client(B, max_attempts=1) as b:
        a.submit(batch(1), batch_id="a1", model="m")
        a.submit(batch(1), batch_id="a2", model="m2")
        gw.call(gw.gateway.quotas.measure)
        assert gw.gateway.quotas.backlog == {"team-a": 2}
        with pytest.raises(ClientError) as exc:
            a.submit(batch(1), batch_id="a3", model="m")
        assert exc.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "share of the backlog" in exc.value.message
        b.submit(batch(1), batch_id="b1", model="m")  # team-b is not held back by team-a's share
        drain(make_worker("accuracy"), make_worker("efficiency"))
        gw.call(gw.gateway.quotas.measure)
        assert gw.gateway.quotas.backlog == {"team-a": 0}
        assert a.submit([prediction("x")], batch_id="a3", model="m").sequence == 2


def test_backlog_share_counts_each_model_once_in_chunks(make_gateway, monkeypatch, r):
    """150 models (a set past Redis's small encoding, so SSCAN walks it in chunks of about 10): the
    measured backlog is exactly one batch a model."""
    monkeypatch.setattr("gateway.quota.MEASURE_CHUNK", 10)
    gw = make_gateway(tokens=ENTRIES, backlog_max_batches=1000, tenant_quotas='{"team-a": {"backlog_share": 0.5}}')
    with gw.client(A, max_attempts=1) as a:
        for i in range(150):
            a.submit(batch(1), batch_id="b1", model=f"m{i:03}")
        r.config_resetstat()
        gw.call(gw.gateway.quotas.measure)
        assert gw.gateway.quotas.backlog == {"team-a": 150}
        assert int(r.info("commandstats")["cmdstat_sscan"]["calls"]) >= 5
