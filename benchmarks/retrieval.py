"""Retrieval: queries/s of one worker at 10 and 100 documents per query, beside pytrec_eval per query.

Queries are random rankings (per-document scores, as a reranker sends them) with binary judgments on
the relevant document and two others, regular track (15 measures: Success@1-20, Recall@1-20, RR@5,
10, 20). Four figures per size: (1) one worker replica end to end on a private Redis (AOF off):
batches of 500 already on the stream, read, computed, the per-query state read and compare-and-set
with the statistics (holistic/stats/instances.py), acknowledged (the default: later judgments join);
(2) the same with HOLISTIC_RETRIEVAL_JUDGED_FINAL (judged rankings scored in compute, no per-query
state); (3) the family's work without Redis, default settings (compute, then each query's metrics
from its state: holistic.families.one_pass); (4) the loop a user
writes with pytrec-eval-terrier, the run and qrels dicts prepared beforehand: per query one
RelevanceEvaluator for success and recall, evaluated on the run and, for HELM's RR@k, on the run cut
to its top 5, 10 and 20 (HELM itself builds one evaluator per measure, slower still). Then the late
path: the same queries as rankings without judgments followed by judgments-only rows, one worker.
"""

from __future__ import annotations

import argparse
import random
import time

import pytrec_eval
import redis

from benchmarks._common import median, now, private_redis
from holistic.families import one_pass
from holistic.families.registry import load_family
from holistic.queue import envelope as env_mod
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.settings import load_settings
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from metric_services.runner import Worker

BATCH = 500
MEASURES = {"success.1,2,3,5,10,20", "recall.1,2,3,5,10,20"}


def queries(n: int, docs: int, seed: int = 12) -> list[pb.Prediction]:
    rng = random.Random(seed)
    stamp = int(time.time()) - 30
    out = []
    for i in range(n):
        p = pb.Prediction(id=f"q{i}", scenario="msmarco", task=pb.TASK_RANKING, input=f"query {i}")
        judged = rng.sample(range(docs), 3)
        for d in range(docs):
            doc = p.ranking.documents.add(id=f"d{d}", score=round(rng.random(), 3))
            if d in judged:
                doc.relevance = 1 if d == judged[0] else 0
        p.produced_at.FromSeconds(stamp + i % 30)
        out.append(p)
    return out


def judged_later(preds: list[pb.Prediction]) -> list[pb.Prediction]:
    """The same queries with their judgments split off into judgments-only predictions after them."""
    rankings, judgments = [], []
    for p in preds:
        r = pb.Prediction()
        r.CopyFrom(p)
        j = pb.Prediction(id=p.id, scenario=p.scenario, task=p.task, produced_at=p.produced_at)
        j.ranking.form = pb.RANKING_FORM_JUDGMENTS_ONLY
        for d in r.ranking.documents:
            if d.HasField("relevance"):
                j.ranking.documents.add(id=d.id, relevance=d.relevance)
                d.ClearField("relevance")
        rankings.append(r)
        judgments.append(j)
    return rankings + judgments


def one_worker(preds: list[pb.Prediction], judged_final: bool = False) -> float:
    with private_redis() as url:
        settings = load_settings(redis_url=url, families=["retrieval"])
        client = redis.Redis.from_url(url)
        keys = Keys(settings.key_prefix)
        WorkQueue(client, keys).ensure_group("retrieval")
        accept = int(time.time() * 1000)
        pipe = client.pipeline(transaction=False)
        for seq, b in enumerate(range(0, len(preds), BATCH), start=1):
            raw = SubmitPredictionsRequest(batch_id=f"b{seq}", model="bench", predictions=preds[b : b + BATCH])
            header = BatchEnvelope(batch_id=f"b{seq}", model="bench", sequence=seq, families=["retrieval"])
            header.accept_time.FromMilliseconds(accept)
            pipe.xadd(keys.stream, env_mod.fields_for("bench", seq, raw.SerializeToString(), header))
        pipe.execute()
        family = load_family("retrieval").configured(judged_final=judged_final)
        # a drain of a backlog: reads are full; the linger would only wait once, at its end
        worker = Worker(family, settings.model_copy(update={"read_count": 16, "read_linger_ms": 0}), client)
        start = now()
        while worker.step(block_ms=1):
            pass
        elapsed = now() - start
        assert worker.counters.predictions == len(preds), worker.counters
        client.close()
    return len(preds) / elapsed


def without_redis(preds: list[pb.Prediction]) -> float:
    settings = load_settings(redis_url="unix:///unused")
    fam = load_family("retrieval")
    envs = [BatchEnvelope(model="m", predictions=preds[b : b + BATCH]) for b in range(0, len(preds), BATCH)]
    start = now()
    for env in envs:
        one_pass(fam, env, settings)
    return len(preds) / (now() - start)


def pytrec_loop(preds: list[pb.Prediction]) -> float:
    prepared = []
    for p in preds:
        run = {d.id: d.score for d in p.ranking.documents}
        qrels = {d.id: int(d.relevance) for d in p.ranking.documents if d.HasField("relevance")}
        top = sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        prepared.append((qrels, run, [dict(top[:k]) for k in (5, 10, 20)]))
    start = now()
    for qrels, run, cuts in prepared:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, MEASURES)
        evaluator.evaluate({"q": run})
        rr = pytrec_eval.RelevanceEvaluator({"q": qrels}, {"recip_rank"})
        for cut in cuts:
            rr.evaluate({"q": cut})
    return len(preds) / (now() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{args.queries:,} random queries per size, batches of {BATCH}; "
        f"medians of {args.runs} interleaved rounds; one thread each"
    )
    print(
        f"{'docs/query':>10}{'worker (joined)':>17}{'worker (final)':>16}{'without Redis':>15}"
        f"{'pytrec_eval loop':>18}   ratios (joined / final)   goals (final)"
    )
    late = {}
    for docs in (10, 100):
        preds = queries(args.queries, docs)
        # Rounds interleave the four, so that each round's figures share the machine's load (it moves).
        rounds = [
            (one_worker(preds), one_worker(preds, judged_final=True), without_redis(preds), pytrec_loop(preds))
            for _ in range(args.runs)
        ]
        worker, final, alone, loop = (median([r[i] for r in rounds]) for i in range(4))
        per_round = ", ".join(f"{w / lo:.1f}/{f / lo:.1f}" for w, f, _, lo in rounds)
        goals = f">= 5x: {'met' if final >= 5 * loop else 'NOT met'}"
        if docs == 10:
            goals += f"; >= 20,000/s: {'met' if final >= 20_000 else 'NOT met'}"
        print(
            f"{docs:>10}{worker:>17,.0f}{final:>16,.0f}{alone:>15,.0f}{loop:>18,.0f}"
            f"   {worker / loop:4.1f}x / {final / loop:4.1f}x{'':>10}{goals}"
        )
        print(f"{'':>10}ratios per round (joined/final): {per_round}")
        split = judged_later(preds)
        late[docs] = median([one_worker(split) for _ in range(args.runs)]) / 2  # two predictions a query
    for docs, qps in late.items():
        print(
            f"judgments later (rankings, then judgments-only rows, through the per-query state), {docs} documents: "
            f"{qps:,.0f} queries/s for one worker"
        )


if __name__ == "__main__":
    main()
