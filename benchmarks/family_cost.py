"""What each family costs: CPU-seconds per 1,000 predictions of its compute over the demo data.

Each family's `compute` runs over the bundled demo sample (6,651 predictions: three models, five
scenarios, perturbed variants and group tags) in batches of 500 per model, as a worker receives
them, one thread (classifier and embedding threads 1). CPU time is the process's (onnxruntime's
threads included), after one untimed warm-up batch that loads models; the embedding cache is
emptied before each round (within a round, the same source summarized by the three models is
embedded once, as in a worker). The figure is compute only:
a worker also reads, applies (Lua in Redis, which costs Redis CPU) and acknowledges, which
`calibration_robustness_fairness` measures end to end. Columns: per 1,000 predictions of the demo
mix, per 1,000 of the predictions the family scores (summarization scores only summaries), and the
peak resident memory of the process (each family in a fresh one, as a worker is). Sizing a
deployment: cores ≈ rate × (CPU-s per 1,000) / 1,000.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from holistic.families import as_partial
from holistic.families.registry import installed, load_family
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings, load_settings
from holistic.v1.prediction_pb2 import TASK_SUMMARIZATION, Prediction
from holistic_app.demo import SAMPLE
from holistic_client.jsonl import read_predictions
from metric_services.summarization.encoder import encoder_for

BATCH = 500


def demo_batches() -> list[BatchEnvelope]:
    by_model: dict[str, list[Prediction]] = {}
    for line in read_predictions(SAMPLE):
        if line.prediction is not None:
            by_model.setdefault(line.prediction.model, []).append(line.prediction)
    out = []
    for model, preds in sorted(by_model.items()):
        for b in range(0, len(preds), BATCH):
            out.append(BatchEnvelope(model=model, predictions=preds[b : b + BATCH]))
    return out


def cpu_seconds(family: str, batches: list[BatchEnvelope], settings: Settings) -> float:
    fam = load_family(family)
    as_partial(fam.compute(batches[0], settings))  # warm-up: loads models
    encoder = encoder_for(fam.config).encoder if family == "summarization" else None  # type: ignore[attr-defined]
    if encoder is not None:
        encoder.cache.clear()  # embeddings are cached per text: each round embeds its texts afresh
    start = time.process_time()
    for env in batches:
        as_partial(fam.compute(env, settings))
    return time.process_time() - start


def scored(family: str, batches: list[BatchEnvelope]) -> int:
    if family != "summarization":
        return sum(len(b.predictions) for b in batches)
    return sum(1 for b in batches for p in b.predictions if p.task == TASK_SUMMARIZATION)


def measure(family: str, rounds: int, semantic: int) -> dict[str, float]:
    """One family in this (fresh) process: CPU-s per 1,000 (mix and scored) and the peak RSS."""
    batches = demo_batches()
    total = sum(len(b.predictions) for b in batches)
    # each family reads its own settings from the environment when it is loaded, as in a worker
    os.environ.update(
        HOLISTIC_SUMMARIZATION_SEMANTIC="on" if semantic else "off",
        HOLISTIC_SUMMARIZATION_EMBED_THREADS="1",
        HOLISTIC_TOXICITY_THREADS="1",
        HOLISTIC_BIAS_THREADS="1",
    )
    settings = load_settings(redis_url="unix:///unused")
    if semantic:
        summaries = [p for b in batches for p in b.predictions if p.task == TASK_SUMMARIZATION][:semantic]
        share = scored("summarization", batches) / total
        batches, total = [BatchEnvelope(model="m", predictions=summaries)], len(summaries) / share
    secs = statistics.median(cpu_seconds(family, batches, settings) for _ in range(rounds))
    n = len(batches[0].predictions) if semantic else scored(family, batches)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mix": 1000 * secs / total, "scored": 1000 * secs / n, "rss_mib": rss_mib}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--semantic", type=int, default=32, help="summaries for the semantic-similarity row (0: skip)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one family in this process
    args = ap.parse_args()
    if args.one:
        family, _, sem = args.one.partition(":")
        print(json.dumps(measure(family, args.rounds, args.semantic if sem else 0)))
        return
    total = sum(len(b.predictions) for b in demo_batches())
    print(f"{total:,} demo predictions in batches of up to {BATCH}; median of {args.rounds} rounds; one process each")
    print(f"{'family':<28} {'CPU-s / 1,000 demo predictions':>31} {'CPU-s / 1,000 scored':>21} {'peak RSS MiB':>13}")
    runs = [(f, f) for f in installed()]
    if args.semantic:
        runs.append(("summarization (semantic on)", "summarization:semantic"))
    for label, one in runs:
        cmd = [sys.executable, "-m", "benchmarks.family_cost", "--one", one, "--rounds", str(args.rounds),
               "--semantic", str(args.semantic)]  # fmt: skip
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        note = f"   ({args.semantic} summaries)" if ":" in one else ""
        print(f"{label:<28} {r['mix']:>31.4f} {r['scored']:>21.4f} {r['rss_mib']:>13.0f}{note}")


if __name__ == "__main__":
    main()
