"""What segment cells cost a family with per-instance state: robustness over one model's rows of the demo sample
(its originals and ~typos/~dialect variants, each row with metadata app_version), without segments and with
HOLISTIC_SEGMENT_KEYS=app_version (3 values).

Per batch of 500, one core, time.process_time, median of --runs: `segments.compute` (the family's compute once
per cell's predictions, its rows tagged with their cells), then what the worker does with the rows before Redis
(`fold_rows` and the aggregate deltas: `aggregate` takes the same path as a plan's deltas). Redis's read and
apply are not in it. Also the bytes of an instance's state and the statistics fields the instances write.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping

from benchmarks._common import batches, median
from benchmarks._results import Figure, record
from holistic.families import Partial, as_partial
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.stats import segments
from holistic.stats.instances import aggregate, fold_rows
from holistic.stats.mergeable import Stats
from holistic_app.demo import SAMPLE
from holistic_client.jsonl import read_predictions
from metric_services.robustness import FAMILY

BATCH = 500


def admit_all(asked: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """Every value admitted, answered in memory (the admission's Redis call is not timed)."""
    return {k: set(values) for k, values in asked.items()}


def envelopes(model: str) -> list[BatchEnvelope]:
    preds = [ln.prediction for ln in read_predictions(SAMPLE) if ln.prediction and ln.prediction.model == model]
    return batches(preds, BATCH)


def run(envs: list[BatchEnvelope], keys: str, runs: int) -> dict[str, float]:
    settings = load_settings(redis_url="unix:///unused", segment_keys=keys)
    computes, plans = [], []
    partials: list[Partial] = []
    for _ in range(runs):
        partials = []
        start = time.process_time()
        for env in envs:
            _, partial = as_partial(segments.compute(FAMILY, env, settings, admit_all))
            assert partial is not None
            partials.append(partial)
        computes.append(time.process_time() - start)
        start = time.process_time()
        for partial in partials:
            aggregate(partial.spec, fold_rows(partial.spec, partial.rows, partial.cells))
        plans.append(time.process_time() - start)
    joined = Partial({}, partials[0].spec)
    for partial in partials:
        joined.join(partial)
    states = fold_rows(joined.spec, joined.rows, joined.cells)
    fields = Stats()
    for st in aggregate(joined.spec, states).values():
        fields.merge(st)
    return {
        "compute_ms": median(computes) / len(envs) * 1e3,
        "rows_ms": median(plans) / len(envs) * 1e3,
        "state_bytes": sum(len(s.encode()) for s in states.values()) / len(states),
        "instances": len(states),
        "fields": len(fields.ints) + len(fields.floats),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="atlas-70b")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    envs = envelopes(args.model)
    n = sum(len(e.predictions) for e in envs)
    plain, cells = run(envs, "", args.runs), run(envs, "app_version", args.runs)
    print(f"robustness, {n:,} predictions of {args.model} from the demo sample in batches of {BATCH}; "
          f"{plain['instances']:,} instances; median of {args.runs} runs; one core")  # fmt: skip
    print(f"{'segment keys':>14} {'compute ms/batch':>17} {'rows ms/batch':>14} {'state bytes':>12} {'fields':>7}")
    for name, r in (("none", plain), ("app_version", cells)):
        print(f"{name:>14} {r['compute_ms']:17.2f} {r['rows_ms']:14.2f} {r['state_bytes']:12.1f} {r['fields']:7d}")
    note = "3 cells; Redis's read and apply not in it"
    record(
        "instance_segments",
        [
            Figure("robustness compute per batch of 500, app_version cells", cells["compute_ms"], "ms",
                   "no segment keys", plain["compute_ms"], higher_is_better=False, note=note),
            Figure("robustness instance rows folded and their deltas per batch of 500, app_version cells",
                   cells["rows_ms"], "ms", "no segment keys", plain["rows_ms"], higher_is_better=False, note=note),
            Figure("bytes of an instance's state, app_version cells", cells["state_bytes"], "B",
                   "no segment keys", plain["state_bytes"], higher_is_better=False, note="one cell a key"),
            Figure("statistics fields of the instances, app_version cells", cells["fields"], "fields",
                   "no segment keys", plain["fields"], higher_is_better=False, note="at most 1 + cells copies"),
        ],
    )  # fmt: skip


if __name__ == "__main__":
    main()
