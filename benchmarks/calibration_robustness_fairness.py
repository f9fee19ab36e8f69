"""Calibration, robustness and fairness: predictions/s of one worker, beside numpy in one pass.

For each family: (1) one worker replica end to end on a private Redis (AOF off): batches of 500
already on the stream, read, computed, applied with apply.lua (and, for robustness and fairness, the
per-instance state read and compare-and-set), acknowledged; (2) the family's compute alone on one
core; (3) the same metrics with numpy over the whole set at once (arrays prepared beforehand, so
this is the arithmetic alone: the floor a batch system pays once, with nothing kept for windows,
merging or late rows). The sample is the bundled demo (confidences, ~typos and ~dialect variants,
group tags) copied with fresh instance ids, variants pointing at their copy's original.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import redis

from benchmarks._common import median, now, private_redis
from holistic.families.registry import load_family
from holistic.queue import envelope as env_mod
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.settings import load_settings
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from holistic.v1.prediction_pb2 import Prediction
from holistic_app.demo import SAMPLE
from holistic_client.jsonl import read_predictions
from metric_services.calibration import confidence_of, label_of
from metric_services.runner import Worker
from metric_services.shared.main_metric import main_metric, prediction_score

BATCH = 500
FAMILIES = ("calibration", "robustness", "fairness")


def sample(n: int) -> list[Prediction]:
    base = [
        ln.prediction
        for ln in read_predictions(SAMPLE)
        if ln.prediction is not None and ln.prediction.model == "swift-8b"
    ]
    out: list[Prediction] = []
    stamp = int(time.time()) - 30
    copy = 0
    while len(out) < n:
        for p in base:
            q = Prediction()
            q.CopyFrom(p)
            q.model = ""
            q.id = f"{p.id}#{copy}"
            if q.HasField("perturbation"):
                q.perturbation.original_id = f"{p.perturbation.original_id}#{copy}"
            q.produced_at.FromSeconds(stamp + len(out) % 30)
            out.append(q)
            if len(out) == n:
                break
        copy += 1
    return out


def one_worker(family: str, preds: list[Prediction]) -> float:
    with private_redis() as url:
        settings = load_settings(redis_url=url, families=[family])
        client = redis.Redis.from_url(url)
        keys = Keys(settings.key_prefix)
        WorkQueue(client, keys).ensure_group(family)
        accept = int(time.time() * 1000)
        pipe = client.pipeline(transaction=False)
        for seq, b in enumerate(range(0, len(preds), BATCH), start=1):
            raw = SubmitPredictionsRequest(batch_id=f"b{seq}", model="bench", predictions=preds[b : b + BATCH])
            header = BatchEnvelope(batch_id=f"b{seq}", model="bench", sequence=seq, families=[family])
            header.accept_time.FromMilliseconds(accept)
            pipe.xadd(keys.stream, env_mod.fields_for("bench", seq, raw.SerializeToString(), header))
        pipe.execute()
        # a drain of a backlog: reads are full; the linger would only wait once, at its end
        worker = Worker(family, settings.model_copy(update={"read_count": 16, "read_linger_ms": 0}), client)
        start = now()
        while worker.step(block_ms=1):
            pass
        elapsed = now() - start
        assert worker.counters.predictions == len(preds), worker.counters
        client.close()
    return len(preds) / elapsed


def compute_only(family: str, preds: list[Prediction]) -> float:
    settings = load_settings(redis_url="unix:///unused")
    fam = load_family(family)
    envs = [BatchEnvelope(model="m", predictions=preds[b : b + BATCH]) for b in range(0, len(preds), BATCH)]
    start = now()
    for env in envs:
        fam.compute(env, settings)
    return len(preds) / (now() - start)


def numpy_one_pass(family: str, preds: list[Prediction]) -> float:
    """The same family metrics over the whole set at once; per-prediction inputs prepared first."""
    settings = load_settings(redis_url="unix:///unused")
    scn = np.array([hash(p.scenario) for p in preds])
    if family == "calibration":
        keep = [p for p in preds if not p.HasField("perturbation") and confidence_of(p) is not None]
        p_ = np.array([confidence_of(p) for p in keep])
        y_ = np.array([label_of(p) or 0 for p in keep])
        groups = np.array([hash(p.scenario) for p in keep])
        start = now()
        for g in np.unique(groups):
            p, y = p_[groups == g], y_[groups == g]
            order = np.argsort(p, kind="stable")
            ps, ys = p[order], y[order]
            chunks = np.array_split(ps, min(10, len(ps)))
            edges = sorted({(a[-1] + b[0]) / 2 for a, b in itertools.pairwise(chunks)} | {1.0})
            idx = np.searchsorted(edges, ps)
            _ = np.abs(np.bincount(idx, ps) - np.bincount(idx, ys)).sum() / len(ps)  # ece_10_bin
            _ = abs(ps.mean() - ys.mean()), ((ps - ys) ** 2).mean()  # ece_1_bin, Brier
            acc = np.cumsum(ys[::-1]) / np.arange(1, len(ys) + 1)
            _ = acc.mean(), acc[int(0.1 * len(ys))]  # selective area, acc@10
        return len(preds) / (now() - start)
    scores = np.array([prediction_score(p, main_metric(p.scenario, p.task, settings)) or 0.0 for p in preds])
    inst = np.array(
        [hash((p.scenario, p.perturbation.original_id if p.HasField("perturbation") else p.id)) for p in preds]
    )
    dialect = np.array([hash(p.groups.get("dialect", "")) for p in preds])
    start = now()
    order = np.lexsort((scores, inst))
    first = np.r_[0, np.flatnonzero(np.diff(inst[order])) + 1]
    worst = np.minimum.reduceat(scores[order], first)  # per-instance min over original and variants
    owner = scn[order][first]
    for g in np.unique(owner):
        _ = worst[owner == g].mean()
    if family == "fairness":
        for g in np.unique(dialect):
            _ = scores[dialect == g].mean()
    return len(preds) / (now() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--predictions", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    preds = sample(args.predictions)
    print(
        f"{len(preds):,} sample predictions (swift-8b rows of the demo, copied), batches of {BATCH}; {args.runs} runs"
    )
    print(f"{'family':14}{'one worker (Redis)':>22}{'compute alone':>16}{'numpy one pass':>18}   goal >= 20,000/s")
    for family in FAMILIES:
        worker = [one_worker(family, preds) for _ in range(args.runs)]
        compute = [compute_only(family, preds) for _ in range(args.runs)]
        base = [numpy_one_pass(family, preds) for _ in range(args.runs)]
        ok = "met" if median(worker) >= 20_000 else "NOT met"
        print(
            f"{family:14}{median(worker):>22,.0f}{median(compute):>16,.0f}{median(base):>18,.0f}   {ok} "
            f"(runs {[round(x) for x in worker]})"
        )


if __name__ == "__main__":
    main()
