"""Gateway SubmitPredictions throughput against the physical limit: raw pipelined XADD of the same bytes.

Both sides write the same stream entries (a SubmitPredictionsRequest of 256 sample predictions
plus the envelope header) to the same private Redis (no persistence). The raw side is one redis-py
(hiredis) client pipelining XADDs; the gateway side is the real gateway process (1 and 2 processes
on one port) fed by a separate load process with 8 concurrent grpc.aio unary calls. A third row
is a grpc.aio server whose handler returns at once, on the same load: the ceiling of any Python
gRPC gateway on this machine. Prints medians of the runs and ratios to the raw XADD rate.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import time

import grpc
import redis

from benchmarks._common import median, now, private_redis, processes, requests
from benchmarks._results import Figure, record
from holistic.queue import envelope
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.redis.keys import Keys

BATCH = 256


def raw_xadd(url: str, payloads: list[bytes], pipeline: int = 32) -> float:
    r = redis.Redis.from_url(url)
    stream = Keys().stream
    r.delete(stream)
    header = BatchEnvelope(model="bench", sequence=1, families=["accuracy", "efficiency"])
    header.accept_time.GetCurrentTime()
    entries = [envelope.fields_for("bench", i, p, header) for i, p in enumerate(payloads)]
    start = now()
    for i in range(0, len(entries), pipeline):
        pipe = r.pipeline(transaction=False)
        for fields in entries[i : i + pipeline]:
            pipe.xadd(stream, fields)
        pipe.execute()
    elapsed = now() - start
    r.delete(stream)
    return len(entries) * BATCH / elapsed


async def _load(address: str, payloads: list[bytes], concurrency: int) -> float:
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary(
            "/holistic.v1.EvaluationService/SubmitPredictions",
            request_serializer=None,
            response_deserializer=None,
        )
        queue = list(reversed(payloads))

        async def worker() -> None:
            while queue:
                await call(queue.pop(), timeout=30)

        await call(queue.pop(), timeout=30)  # warm the channel
        start = now()
        sent = len(queue)
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return sent * BATCH / (now() - start)


def _load_process(address: str, payloads: list[bytes], concurrency: int, out: mp.Queue) -> None:
    out.put(asyncio.run(_load(address, payloads, concurrency)))


def _noop_server(port_out: mp.Queue) -> None:
    from holistic.v1.evaluation_service_pb2 import SubmitPredictionsResponse

    reply = SubmitPredictionsResponse(batch_id="x").SerializeToString()

    async def handler(raw: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return reply

    async def run() -> None:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 << 20)])
        methods = {"SubmitPredictions": grpc.unary_unary_rpc_method_handler(handler)}
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("holistic.v1.EvaluationService", methods),)
        )
        port_out.put(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        await server.wait_for_termination()

    asyncio.run(run())


def noop(payloads: list[bytes], concurrency: int) -> float:
    ports: mp.Queue = mp.Queue()
    server = mp.Process(target=_noop_server, args=(ports,), daemon=True)
    server.start()
    out: mp.Queue = mp.Queue()
    load = mp.Process(target=_load_process, args=(f"127.0.0.1:{ports.get(timeout=30)}", payloads, concurrency, out))
    load.start()
    rate = out.get(timeout=600)
    load.join()
    server.terminate()
    return rate


def gateway(url: str, payloads: list[bytes], concurrency: int, procs: int = 1, proof: bool = True) -> float:
    r = redis.Redis.from_url(url)
    r.flushall()
    env = {
        "HOLISTIC_BACKLOG_MAX_BATCHES": "10000000",
        "HOLISTIC_GATEWAY_PROCESSES": str(procs),
        "HOLISTIC_GATEWAY_WIRE_PROOF": str(proof).lower(),
        "HOLISTIC_FAMILIES": "accuracy,efficiency",  # the gateway refuses batches no family would score
    }
    with processes(url, ["gateway"], env=env) as address:
        out: mp.Queue = mp.Queue()
        proc = mp.Process(target=_load_process, args=(address, payloads, concurrency, out))
        proc.start()
        rate = out.get(timeout=600)
        proc.join()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=1500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    raw_rates: list[float] = []
    noop_rates: list[float] = []
    # (gateway processes, C wire proof): without it, the Python path the gateway takes where it is not built
    gw_rates: dict[tuple[int, bool], list[float]] = {(1, True): [], (2, True): [], (1, False): []}
    with private_redis() as url:
        for run in range(args.runs):
            payloads = requests(args.batches, BATCH, tag=str(run))
            raw_xadd(url, payloads[:100])  # warm Redis's allocator and the connection
            raw_rates.append(raw_xadd(url, payloads))
            noop_rates.append(noop(payloads, args.concurrency))
            for (procs, proof), rates in gw_rates.items():
                rates.append(gateway(url, payloads, args.concurrency, procs, proof))
                time.sleep(0.5)
    raw = median(raw_rates)
    size = len(requests(1, BATCH)[0])
    print(f"batch: {BATCH} sample predictions, {size:,} bytes; {args.batches} batches per run; {args.runs} runs")
    print(f"{'':48}{'predictions/s (median)':>16}{'vs raw':>8}   runs")
    print(f"{'raw pipelined XADD (redis-py, hiredis)':48}{raw:>16,.0f}{'100%':>8}   {[round(x) for x in raw_rates]}")
    ceiling = median(noop_rates)
    label = "grpc.aio no-op handler (Python ceiling)"
    print(f"{label:48}{ceiling:>16,.0f}{ceiling / raw:>8.1%}   {[round(x) for x in noop_rates]}")
    for (procs, proof), rates in gw_rates.items():
        label = f"gateway SubmitPredictions, {procs} proc" + ("" if proof else ", Python proof")
        gw = median(rates)
        print(f"{label:48}{gw:>16,.0f}{gw / raw:>8.1%}   {[round(x) for x in rates]}")
    print("goal: gateway >= 50% of raw XADD")
    xadd = "raw pipelined XADD of the same bytes (redis-py, hiredis)"
    one, python_path = median(gw_rates[(1, True)]), median(gw_rates[(1, False)])
    record("gateway_throughput", [
        Figure(f"SubmitPredictions, batches of {BATCH}, {args.concurrency} concurrent calls, 1 process", one,
               "predictions/s", xadd, raw, True, ">= 50 % of raw XADD", one / raw >= 0.5,
               f"a grpc.aio handler that does nothing reaches {ceiling / raw:.1%} of raw XADD here"),
        Figure("the same, 2 gateway processes", median(gw_rates[(2, True)]), "predictions/s", xadd, raw),
        Figure("the C wire proof's gain: 1 process with it", one, "predictions/s",
               "the same gateway on the Python path (HOLISTIC_GATEWAY_WIRE_PROOF=false)",
               python_path, True, ">= 1.2x (else the C path goes)", one / python_path >= 1.2),
        Figure("a grpc.aio handler that returns at once (the ceiling)", ceiling, "predictions/s", xadd, raw),
    ])  # fmt: skip


if __name__ == "__main__":
    main()
