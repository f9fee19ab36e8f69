"""Each family alone (vs_helm --by-family): one worker in this process drains a file's rows from a
private Redis; the CPU of its compute, of the whole worker, and of Redis, per prediction."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis

from benchmarks._common import private_redis, redis_cpu


def family_alone(path: Path, family: str, rows: int, batch: int) -> tuple[float, float, float]:
    """One family's worker, in this process, draining the file's first `rows` predictions (batches of
    `batch` per model, as the gateway writes them) from a private Redis: CPU us/prediction of its compute,
    of the whole worker (read, decode, compute, apply, ack), and of Redis. Compute is timed inside the
    worker's loop (its caches warm as a worker's do), after one untimed batch (lazy imports, models)."""
    from google.protobuf import json_format

    from holistic.families import as_partial
    from holistic.queue import envelope as env_mod
    from holistic.queue.v1.envelope_pb2 import BatchEnvelope
    from holistic.queue.work import WorkQueue
    from holistic.redis.connection import PACKER
    from holistic.settings import load_settings
    from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
    from holistic.v1.prediction_pb2 import Prediction
    from metric_services.runner import Worker

    by_model: dict[str, list[Prediction]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for _, line in zip(range(rows), f, strict=False):
            p = json_format.Parse(line, Prediction())
            by_model[p.model].append(p)
    os.environ["HOLISTIC_SUMMARIZATION_SEMANTIC"] = "off"  # as in the service run (the family reads it)
    with private_redis(persist=True) as url:
        r = redis.Redis.from_url(url, command_packer=PACKER)  # as sync_client packs for a worker
        settings = load_settings(redis_url=url, summarization_semantic="off", families=[family])
        worker = Worker(family, settings, r, middleware=[])
        WorkQueue(r, worker.keys).ensure_group(family)
        envelopes, seq = [], 0
        for model, preds in by_model.items():
            for b in range(0, len(preds), batch):
                seq += 1
                request = SubmitPredictionsRequest(batch_id=f"b{seq}", model=model, predictions=preds[b : b + batch])
                header = BatchEnvelope(batch_id=request.batch_id, model=model, sequence=seq, families=[family])
                header.accept_time.GetCurrentTime()
                r.xadd(worker.keys.stream, env_mod.fields_for(model, seq, request.SerializeToString(), header))
                envelopes.append(
                    BatchEnvelope(model=model, predictions=request.predictions, accept_time=header.accept_time)
                )
        n = sum(len(v) for v in by_model.values())
        as_partial(worker.family.compute(envelopes[0], settings))  # warm-up: lazy imports, models
        timed = _TimedCompute(worker.family)
        worker.family = timed  # type: ignore[assignment]
        redis0, started = redis_cpu(r), time.process_time()
        while worker.step(block_ms=1):
            pass
        return 1e6 * timed.seconds / n, 1e6 * (time.process_time() - started) / n, 1e6 * (redis_cpu(r) - redis0) / n


class _TimedCompute:
    """A family whose compute counts its CPU seconds."""

    def __init__(self, family: Any) -> None:
        self.family = family
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.family, name)

    def compute(self, envelope: Any, settings: Any) -> Any:
        started = time.process_time()
        out = self.family.compute(envelope, settings)
        self.seconds += time.process_time() - started
        return out
