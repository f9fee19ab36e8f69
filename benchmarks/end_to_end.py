"""End to end: predictions/s from the first SubmitPredictions to both families' profiles applied.

The real processes: a private Redis (AOF everysec, as production), the gateway, one worker per
family. A load process submits the predictions with 4 concurrent clients in batches of 500; the
clock stops when GetProfile shows every family has applied every accepted prediction. Beside it,
each family's compute alone on one core (compute + fold in-process, no Redis), the number a
single worker replica cannot exceed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import time

import grpc

from benchmarks._common import median, now, private_redis, processes, requests, sample_predictions
from benchmarks._results import Figure, record
from holistic.families.registry import load_family
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc

BATCH = 500
FAMILIES = ("accuracy", "efficiency")
ENV = {"HOLISTIC_BACKLOG_MAX_BATCHES": "100000", "HOLISTIC_FAMILIES": ",".join(FAMILIES)}


async def _submit(address: str, payloads: list[bytes], concurrency: int) -> None:
    async with grpc.aio.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)]) as ch:
        call = ch.unary_unary(
            "/holistic.v1.EvaluationService/SubmitPredictions", request_serializer=None, response_deserializer=None
        )
        queue = list(reversed(payloads))

        async def worker() -> None:
            while queue:
                await call(queue.pop(), timeout=60)

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def _load(address: str, payloads: list[bytes]) -> None:
    asyncio.run(_submit(address, payloads, 4))


def run_once(n: int, tag: str) -> tuple[float, float]:
    payloads = requests(n // BATCH, BATCH, model=f"e2e{tag}", tag=tag)
    total = len(payloads) * BATCH
    with private_redis(persist=True) as url, processes(
        url, ["gateway"], *(["worker", f] for f in FAMILIES), env=ENV
    ) as address:  # fmt: skip
        load = mp.Process(target=_load, args=(address, payloads))
        start = now()
        load.start()
        with grpc.insecure_channel(address) as ch:
            stub = es_grpc.EvaluationServiceStub(ch)
            while True:
                try:
                    p = stub.GetProfile(es.GetProfileRequest(model=f"e2e{tag}")).profile
                    if len(p.families) == len(FAMILIES) and all(f.count >= total for f in p.families):
                        break
                except grpc.RpcError:
                    pass
                time.sleep(0.05)
            elapsed = now() - start
        load.join()
        submitted = total
    return submitted / elapsed, elapsed


def compute_only(family: str, n: int) -> float:
    settings = load_settings(redis_url="unix:///unused")
    fam = load_family(family)
    env = BatchEnvelope(model="m", predictions=sample_predictions(BATCH))
    env.accept_time.GetCurrentTime()
    rounds = max(1, n // BATCH)
    fam.compute(env, settings)  # warm: accuracy loads nltk on its first open-ended prediction (~1 s)
    start = now()
    for _ in range(rounds):
        fam.compute(env, settings)
    return rounds * BATCH / (now() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--predictions", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rates, times = [], []
    for run in range(args.runs):
        rate, elapsed = run_once(args.predictions, str(run))
        rates.append(rate)
        times.append(elapsed)
    print(f"{args.predictions:,} sample predictions in batches of {BATCH}; {args.runs} runs; AOF everysec")
    print(f"{'':46}{'predictions/s (median)':>24}   runs")
    label = "end to end (submit -> both families applied)"
    print(f"{label:46}{median(rates):>24,.0f}   {[round(x) for x in rates]}  ({median(times):.1f} s)")
    for family in FAMILIES:
        label = f"{family} compute alone, one core (no Redis)"
        print(f"{label:46}{compute_only(family, 50_000):>24,.0f}")
    print("goal: end to end >= 20,000 predictions/s")
    name = f"{args.predictions:,} predictions in batches of {BATCH}, submit to every family applied"
    record(
        "end_to_end", [Figure(name, median(rates), "predictions/s", goal=">= 20,000/s", met=median(rates) >= 20_000)]
    )


if __name__ == "__main__":
    main()
