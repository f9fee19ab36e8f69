"""Watches are cheap and bounded (issue 14, defects 2 and 3).

Hundreds of open WatchProfile streams share one XREAD loop on a connection of its own, so they take no
connection from submits (which kept failing with UNAVAILABLE, health NOT_SERVING, when each watched
model held a pooled connection); per-tenant and per-gateway caps refuse more with RESOURCE_EXHAUSTED;
a revoked or expired token's open streams end with UNAUTHENTICATED.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holistic.tenancy.tenants import TokenStore, hash_token
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from tests.conftest import drain
from tests.factories import prediction

A, B = "token-of-team-a", "token-of-team-b"
ENTRIES = f"team-a:sha256:{hash_token(A)},team-b:sha256:{hash_token(B)}"


def auth(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def xread_clients(r) -> int:
    return sum(1 for c in r.client_list() if c.get("cmd") == "xread" and "b" in c.get("flags", ""))


def submit_models(address: str, token: str, models: list[str]) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        for m in models:
            stub.SubmitPredictions(
                es.SubmitPredictionsRequest(batch_id="b1", model=m, predictions=[prediction("a")]), metadata=auth(token)
            )


def test_300_watches_share_one_read_loop_and_submits_keep_working(make_gateway, r):
    gw = make_gateway(tokens=ENTRIES, tenant_max_watches=400, max_watches=400)
    models = [f"m{i}" for i in range(300)]
    submit_models(gw.address, A, models)

    async def scenario() -> tuple[int, int, list[grpc.StatusCode], int]:
        async with grpc.aio.insecure_channel(gw.address) as channel:
            stub = es_grpc.EvaluationServiceStub(channel)
            calls = [stub.WatchProfile(es.WatchProfileRequest(model=m), metadata=auth(A)) for m in models]
            firsts = await asyncio.gather(*(c.read() for c in calls))
            # every watch got its first profile; wait until the feed loop's XREAD covers them all
            deadline = time.monotonic() + 10
            while xread_clients(r) == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            blocked = 0
            for _ in range(20):  # the most blocked XREADs seen at once over a second
                blocked = max(blocked, xread_clients(r))
                await asyncio.sleep(0.05)
            codes = []
            for i in range(20):  # the other tenant submits while the 300 streams are open
                try:
                    await stub.SubmitPredictions(
                        es.SubmitPredictionsRequest(batch_id=f"b{i}", model="other", predictions=[prediction("x")]),
                        metadata=auth(B),
                    )
                    codes.append(grpc.StatusCode.OK)
                except grpc.aio.AioRpcError as exc:
                    codes.append(exc.code())
            health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
            for c in calls:
                c.cancel()
            return sum(f.profile.counts.accepted_predictions for f in firsts), blocked, codes, health.status

    total, blocked, codes, health = asyncio.run(scenario())
    assert total == 300
    assert blocked == 1  # one XREAD for 300 models, not one pooled connection per model
    assert codes == [grpc.StatusCode.OK] * 20
    assert health == health_pb2.HealthCheckResponse.SERVING


def refused(limit: str) -> float:
    from holistic.process.observability import READS_REFUSED

    return READS_REFUSED.labels(limit)._value.get()


def test_watch_caps_per_tenant_and_per_gateway(make_gateway, make_worker):
    before = refused("tenant-watches"), refused("watches")
    gw = make_gateway(tokens=ENTRIES, tenant_max_watches=2, max_watches=3)
    submit_models(gw.address, A, ["m1"])
    submit_models(gw.address, B, ["m1"])

    async def scenario() -> list[str]:
        out = []
        async with grpc.aio.insecure_channel(gw.address) as channel:
            stub = es_grpc.EvaluationServiceStub(channel)

            async def open_watch(token: str) -> grpc.aio.UnaryStreamCall | None:
                call = stub.WatchProfile(es.WatchProfileRequest(model="m1"), metadata=auth(token))
                try:
                    await call.read()
                    out.append("ok")
                    return call
                except grpc.aio.AioRpcError as exc:
                    out.append(f"{exc.code().name}: {exc.details()}")
                    return None

            a1, a2 = await open_watch(A), await open_watch(A)
            await open_watch(A)  # the tenant's third: over HOLISTIC_TENANT_MAX_WATCHES
            b1 = await open_watch(B)  # the gateway's third
            await open_watch(B)  # the gateway's fourth: over HOLISTIC_MAX_WATCHES
            a1.cancel()
            deadline = time.monotonic() + 10  # the gateway sees the cancel: A may open one again
            while True:
                again = await open_watch(A)
                if again is not None or time.monotonic() > deadline:
                    break
                out.pop()
                await asyncio.sleep(0.05)
            for c in (a2, b1, again):
                if c is not None:
                    c.cancel()
        return out

    out = asyncio.run(scenario())
    assert out[:2] == ["ok", "ok"]
    assert out[2].startswith("RESOURCE_EXHAUSTED") and "HOLISTIC_TENANT_MAX_WATCHES" in out[2]
    assert out[3] == "ok"
    assert out[4].startswith("RESOURCE_EXHAUSTED") and "HOLISTIC_MAX_WATCHES" in out[4]
    assert out[5] == "ok"
    # counted for Prometheus (the retry while the cancel reaches the gateway may add tenant refusals)
    assert refused("tenant-watches") - before[0] >= 1 and refused("watches") - before[1] == 1


def test_watchers_of_one_model_and_window_share_each_profile_read(make_gateway, make_worker, r):
    gw = make_gateway(tenant_max_watches=100)
    submit_models(gw.address, "", ["m1"])
    worker = make_worker("accuracy")
    drain(worker)

    async def scenario() -> list[int]:
        async with grpc.aio.insecure_channel(gw.address) as channel:
            stub = es_grpc.EvaluationServiceStub(channel)
            calls = [stub.WatchProfile(es.WatchProfileRequest(model="m1")) for _ in range(50)]
            await asyncio.gather(*(c.read() for c in calls))
            r.config_resetstat()
            await stub.SubmitPredictions(
                es.SubmitPredictionsRequest(batch_id="b2", model="m1", predictions=[prediction("b")])
            )
            await asyncio.to_thread(drain, worker)
            fresh = await asyncio.gather(*(c.read() for c in calls))
            for c in calls:
                c.cancel()
            return [f.profile.counts.accepted_predictions for f in fresh]

    assert asyncio.run(scenario()) == [2] * 50
    # 50 watchers, one update: the profile is read once or twice (meta + 8 families x 5 minute
    # buckets' worth of HGETALLs each), not 50 times
    hgetalls = int(r.info("commandstats")["cmdstat_hgetall"]["calls"])
    assert hgetalls <= 2 * (1 + len(gw.settings.families))


@pytest.mark.parametrize("how", ["revoked", "expired"])
def test_a_revoked_or_expired_tokens_open_watch_ends(make_gateway, tmp_path, how):
    path = tmp_path / "tokens"
    expires = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
    entry = f"team-a:sha256:{hash_token(A)}" + (f":expires:{expires}" if how == "expired" else "")
    path.write_text(entry + "\n")
    gw = make_gateway(tokens_file=path)
    submit_models(gw.address, A, ["m1"])
    with grpc.insecure_channel(gw.address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        stream = stub.WatchProfile(es.WatchProfileRequest(model="m1"), metadata=auth(A), timeout=20)
        assert next(stream).profile.counts.accepted_predictions == 1
        if how == "revoked":
            path.write_text(f"team-b:sha256:{hash_token(B)}\n")
        with pytest.raises(grpc.RpcError) as exc:
            next(stream)  # nothing is applied: only the revocation or the expiry ends the stream
        assert exc.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "revoked or has expired" in exc.value.details()
        with pytest.raises(grpc.RpcError) as exc:
            stub.ListModels(es.ListModelsRequest(), metadata=auth(A))
        assert exc.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_token_expiry_is_parsed_and_checked():
    past = f"team-a:sha256:{hash_token(A)}:expires:2020-01-01T00:00:00Z"
    future = f"team-b:sha256:{hash_token(B)}:expires:2999-01-01T00:00:00+00:00"
    store = TokenStore(f"{past},{future}")
    assert store.tenant_of(A) is None
    assert store.tenant_of(B) == "team-b"
    from holistic.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a UTC offset"):
        TokenStore(f"team-a:sha256:{hash_token(A)}:expires:2030-01-01T00:00:00")
    with pytest.raises(ConfigError, match="not an ISO 8601 time"):
        TokenStore(f"team-a:sha256:{hash_token(A)}:expires:tomorrow")
