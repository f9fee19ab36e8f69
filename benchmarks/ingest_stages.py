"""Where each microsecond per prediction goes on the way in, stage by stage, in one run.

Client: a JSON line to a Prediction (json_format.Parse, and holistic_client.prediction_json), and
the request's serialization. Gateway, on the requests gateway_throughput sends (256 sample
predictions each, freshly parsed as the gateway sees them): parsing, validation (the walk of every
field, and what the gateway runs: the column proof of gateway/columns.py, the walk only where it
cannot prove), the content digest
(deterministic serialization + sha256), the group tags of a new batch. Redis: raw pipelined XADD of
the same bytes (the floor). CPU time of one thread (time.process_time), median of --runs runs, so a
busy machine stretches the figures less than wall time would; compare rows of one run. Last, the
client's read_predictions on 28,716 lines, wall time, in one and in two processes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from benchmarks._common import median, private_redis, requests
from benchmarks.gateway_throughput import BATCH, raw_xadd
from gateway import columns
from gateway.ingest import group_tags
from gateway.validation import validate
from gateway.wire_proof import prove
from holistic.settings import Settings
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from holistic.v1.prediction_pb2 import Prediction
from holistic_app.demo import SAMPLE
from holistic_client.jsonl import read_predictions
from holistic_client.prediction_json import JsonParser


def cpu_us(work: Callable[[], Any], items: int, runs: int) -> float:
    """Median CPU microseconds per item of `work` over `runs` runs."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return median(times) / items * 1e6


def proof(request: SubmitPredictionsRequest, raw: bytes, settings: Settings, now: float) -> str | None:
    return columns.proven_model(request, raw, request.SerializeToString(deterministic=True), settings, now)


def simple_requests(raws: list[bytes]) -> list[bytes]:
    """The same batches without the predictions whose rules columns leave to the walk (choice
    probabilities, perturbations, rankings): traffic of generation and QA with references, groups,
    metadata and timing."""
    out = []
    for raw in raws:
        r = SubmitPredictionsRequest.FromString(raw)
        keep = [
            p
            for p in r.predictions
            if not (p.choice_probabilities or p.HasField("perturbation") or p.ranking.ByteSize())
        ]
        out.append(SubmitPredictionsRequest(batch_id=r.batch_id, model=r.model, predictions=keep).SerializeToString())
    return out


def validation_rows(
    label: str, raws: list[bytes], settings: Settings, now: float, runs: int
) -> list[tuple[str, str, float]]:
    """CPU microseconds per prediction of validate's walk and of what the gateway runs (the columns'
    proof, the walk where they cannot prove), on fresh parses; the deterministic bytes that the proof
    reads are the content digest's (its row), made once before."""
    n = sum(len(SubmitPredictionsRequest.FromString(r).predictions) for r in raws)
    dets = [SubmitPredictionsRequest.FromString(r).SerializeToString(deterministic=True) for r in raws]

    def fresh() -> list[SubmitPredictionsRequest]:
        return [SubmitPredictionsRequest.FromString(r) for r in raws]

    def walked() -> None:
        for r, raw in zip(fresh(), raws, strict=True):
            validate(r, settings, now, len(raw))

    def gated() -> None:
        for r, raw, det in zip(fresh(), raws, dets, strict=True):
            columns.proven_model(r, raw, det, settings, now) or validate(r, settings, now, len(raw))

    times: dict[str, list[float]] = {"fresh": [], "walked": [], "gated": []}
    for _ in range(runs):  # interleaved: a change in the machine's speed falls on all three alike
        for name, work in (("fresh", fresh), ("walked", walked), ("gated", gated)):
            start = time.process_time()
            work()
            times[name].append(time.process_time() - start)
    base = median(times["fresh"])
    return [
        ("gateway", f"validation walk{label}", (median(times["walked"]) - base) / n * 1e6),
        ("gateway", f"validation by columns{label}", (median(times["gated"]) - base) / n * 1e6),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batches", type=int, default=40)
    args = ap.parse_args()
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh if line.strip()]
    fast = JsonParser(Prediction)
    raws = requests(args.batches, BATCH)
    simple = simple_requests(raws)
    n = len(raws) * BATCH
    settings = Settings()
    now = time.time()

    def fresh() -> list[SubmitPredictionsRequest]:
        return [SubmitPredictionsRequest.FromString(r) for r in raws]

    def digests() -> None:
        for r in parsed:
            hashlib.sha256(r.SerializeToString(deterministic=True)).hexdigest()

    parsed = fresh()
    runs = args.runs

    def per_line(parse: Callable[[str], Any]) -> float:
        return cpu_us(lambda: [parse(x) for x in lines], len(lines), runs)

    rows: list[tuple[str, str, float]] = [
        ("client", "json_format.Parse, per line", per_line(lambda x: json_format.Parse(x, Prediction()))),
        ("client", "prediction_json (fast reader), per line", per_line(fast.parse)),
        ("client", "request SerializeToString", cpu_us(lambda: [r.SerializeToString() for r in parsed], n, runs)),
        ("gateway", "parse (FromString)", cpu_us(fresh, n, runs)),
        *validation_rows("", raws, settings, now, runs),
        *validation_rows(", simple batches", simple, settings, now, runs),
        ("gateway", "digest (deterministic bytes + sha256)", cpu_us(digests, n, runs)),
        ("gateway", "group tags of a new batch", cpu_us(lambda: [group_tags(r) for r in parsed], n, runs)),
        # the C path replaces the four rows above for a batch sent canonically: no parse, no walk, no
        # re-encoding (sha256 of the bytes as they came), tags from the proof
        (
            "gateway",
            "C wire proof (validation + UTF-8 + tags)",
            cpu_us(lambda: [prove(r, settings, now) for r in raws], n, runs),
        ),
        (
            "gateway",
            "C path digest (sha256 of the request bytes)",
            cpu_us(lambda: [hashlib.sha256(r).hexdigest() for r in raws], n, runs),
        ),
    ]
    with private_redis() as url:
        raw_xadd(url, raws[:10])
        rate = median([raw_xadd(url, raws) for _ in range(args.runs)])
    rows.append(("redis", "raw pipelined XADD (wall time, floor)", 1e6 / rate))
    print(f"{n:,} gateway predictions in {len(raws)} batches of {BATCH}; {len(lines):,} client lines; {args.runs} runs")
    print(f"{'stage':9}{'':46}{'us/prediction':>14}")
    for stage, what, us in rows:
        print(f"{stage:9}{what:46}{us:>14.2f}")
    print(f"client parse speed-up: {rows[0][2] / rows[1][2]:.1f}x")
    for label, batches, (walk, by_columns) in (("demo mix", raws, rows[4:6]), ("simple", simple, rows[6:8])):
        proven = sum(1 for raw in batches if proof(SubmitPredictionsRequest.FromString(raw), raw, settings, now))
        print(f"validation, {label}: walk {walk[2]:.2f} us, columns {by_columns[2]:.2f} us "
              f"({walk[2] / by_columns[2]:.2f}x); {proven} of {len(batches)} batches proven by columns")  # fmt: skip
    with tempfile.TemporaryDirectory() as d:  # read_predictions end to end, wall time, 1 and 2 processes
        path = Path(d) / "p.jsonl"
        path.write_text("\n".join(lines * 4) + "\n", encoding="utf-8")
        for procs in (1, 2):
            walls = []
            for _ in range(runs):
                start = time.perf_counter()
                count = sum(1 for _ in read_predictions(path, processes=procs))
                walls.append(time.perf_counter() - start)
            wall = median(walls)
            print(f"read_predictions, {procs} process(es): {count / wall:,.0f} lines/s wall ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
