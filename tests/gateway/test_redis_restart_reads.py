"""After a Redis restart, profile reads retry on a fresh connection instead of failing while health
says SERVING (issue 14, defect 6)."""

from __future__ import annotations

import asyncio
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from tests.conftest import GatewayThread, start_redis
from tests.factories import prediction


def test_reads_after_a_redis_restart_succeed_while_health_says_serving(tmp_path, make_settings):
    proc, sock = start_redis(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    gw = GatewayThread(make_settings(redis_url=f"unix://{sock}", read_connections=16, tenant_concurrent_reads=16))
    try:

        async def reads(stub: es_grpc.EvaluationServiceStub, n: int) -> list[str]:
            async def one() -> str:
                try:
                    reply = await stub.GetProfile(es.GetProfileRequest(model="m1"), timeout=15)
                    return f"OK {reply.profile.counts.accepted_predictions}"
                except grpc.aio.AioRpcError as exc:
                    return f"{exc.code().name} {exc.details()}"

            return list(await asyncio.gather(*(one() for _ in range(n))))

        async def scenario() -> tuple[list[str], list[str], list[str]]:
            nonlocal proc
            async with grpc.aio.insecure_channel(gw.address) as channel:
                stub = es_grpc.EvaluationServiceStub(channel)
                health = health_pb2_grpc.HealthStub(channel)
                await stub.SubmitPredictions(
                    es.SubmitPredictionsRequest(batch_id="b1", model="m1", predictions=[prediction("a")])
                )
                before = await reads(stub, 16)  # fills the read pool with connections
                proc.kill()
                proc.wait()
                # reads arrive while Redis is down, before health has noticed, and while it comes back
                during = asyncio.ensure_future(reads(stub, 16))
                await asyncio.sleep(0.3)
                proc, _ = await asyncio.to_thread(start_redis, tmp_path, "--appendonly", "yes")
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:  # wait for health to say SERVING again
                    status = await health.Check(health_pb2.HealthCheckRequest(service=""))
                    if status.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                    await asyncio.sleep(0.05)
                after = await reads(stub, 16)  # on pooled connections to the dead process, or fresh ones
                return before, await during, after

        before, during, after = asyncio.run(scenario())
        assert before == ["OK 1"] * 16
        assert during == ["OK 1"] * 16
        assert after == ["OK 1"] * 16
    finally:
        gw.stop()
        proc.kill()
        proc.wait()
