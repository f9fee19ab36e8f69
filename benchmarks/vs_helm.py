"""The service against HELM's own metric code on one file: seconds, predictions/s and the ratio.

The file is the bundled demo sample (three models, five scenarios with perturbed variants and group
tags, plus a ranking scenario) copied with fresh ids up to --rows, produced_at shifted so the newest
row is a minute old (windows hold it), written as canonical JSON Lines.

HELM: crfm-helm 0.5.16 in the isolated environment tools/helm_conformance.py builds, scoring per
(model, scenario) run with the metric classes HELM runs for the task (benchmarks/helm_timed.py, over
tools/helm_side.py). HELM is slow (about 10 ms a row here), so it scores two subsets of the file
(instances taken at a stride, so the mix is the file's) in fresh processes; their wall times fit
fixed (interpreter, imports) + per row, and HELM's time for the file is that line at the file's size.
Left out on both sides: what needs network or model weights (HELM's Perspective toxicity, BERTScore,
SummaC faithfulness, the service's semantic similarity: off). Left out on HELM's side only, so HELM's
time is an underestimate: the service's toxicity family (HELM's is a Perspective API call). Ranking
(RankingMetric over pytrec_eval) and summarization's coverage/density/compression (SummEval over
spaCy's blank tokenizer) run on both sides: tools/helm_conformance.py installs what they need.

Service: a private Redis (AOF everysec, as production), the gateway and one worker per installed
family, real processes; the clock starts when `holistic submit FILE` starts (client parsing
included) and stops when every family's consumer group has read and acknowledged every entry; each
family's catch-up time is when its group got there. CPU seconds per process are read from /proc, and
Redis's own from INFO, to say where each microsecond per prediction went. --profile DIR runs the
client, gateway and workers under cProfile timed by CPU time (benchmarks/cpu_profile.py; slower: for
where the time goes, not for the figure) and prints each one's CPU microseconds per prediction by stage.

    python -m benchmarks.vs_helm [--rows 90000] [--runs 3] [--helm-rows 1500,4500] [--profile DIR]
                                 [--by-family ROWS] [--batch-size 500] [--redis-by-family] [--paired ROUNDS]

--paired ROUNDS measures HELM's fit and one service run in each of ROUNDS rounds and reports each
round's ratio and their median: the machine's speed drifts within minutes, and a ratio of two
figures taken minutes apart carries that drift.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import math
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis

from benchmarks._common import ScriptTime, cpu_seconds, median, private_redis, redis_cpu, spawned
from benchmarks._family_alone import family_alone
from benchmarks._results import Figure, record
from holistic.families import registry
from holistic.redis.keys import Keys
from holistic_app.demo import SAMPLE
from tools.helm_conformance import HELM_VERSION, empty_punkt

ROOT = Path(__file__).resolve().parent.parent
HELM_VENV = Path.home() / ".cache" / "holistic" / f"helm-{HELM_VERSION}"
BATCH = 500


# --- the file ---------------------------------------------------------------------------------
def _suffixed(row: dict[str, Any], tag: str) -> dict[str, Any]:
    """A copy of a demo row whose ids (its own, its original's, its documents') end with tag."""
    row = json.loads(json.dumps(row))
    row["id"] += tag
    if "perturbation" in row and "originalId" in row["perturbation"]:
        row["perturbation"]["originalId"] += tag
    ranking = row.get("ranking")
    if ranking:
        for d in ranking.get("documents", []):
            d["id"] += tag
        if "order" in ranking:
            ranking["order"] = [o + tag for o in ranking["order"]]
    return row


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def make_file(path: Path, rows: int, span_s: float | None = None) -> int:
    """The demo sample copied with fresh ids until `rows` lines; returns the lines written. span_s: the
    produced_at times squeezed (in order) into that many seconds before now - 60 s, as a live stream
    of that rate would stamp them; None keeps the sample's own spread (about three hours)."""
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        base = [json.loads(line) for line in f if line.strip()]
    parse = dt.datetime.fromisoformat
    times = [parse(r["producedAt"].replace("Z", "+00:00")) for r in base if "producedAt" in r]
    oldest, newest = min(times), max(times)
    scale = 1.0 if span_s is None else span_s / max((newest - oldest).total_seconds(), 1e-9)
    end = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=60)
    for r in base:
        if "producedAt" in r:
            t = parse(r["producedAt"].replace("Z", "+00:00"))
            r["producedAt"] = _stamp(end - (newest - t) * scale)
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for copy in range(math.ceil(rows / len(base))):
            for r in base:
                if n == rows:
                    return n
                out.write(json.dumps(_suffixed(r, f"~{copy}"), ensure_ascii=False, separators=(",", ":")) + "\n")
                n += 1
    return n


def subset(src: Path, dst: Path, rows: int) -> int:
    """About `rows` of src's rows: whole instances (a row and its perturbed variants) at a
    stride, so the subset has the file's mix of scenarios, models and perturbations."""
    by_instance: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    with open(src, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            key = (r["model"], r["scenario"], r.get("perturbation", {}).get("originalId", r["id"]))
            by_instance[key].append(line)
    total = sum(len(v) for v in by_instance.values())
    stride = max(1, round(total / rows))
    n = 0
    with open(dst, "w", encoding="utf-8") as out:
        for i, lines in enumerate(by_instance.values()):
            if i % stride == 0:
                out.writelines(lines)
                n += len(lines)
    return n


# --- HELM -------------------------------------------------------------------------------------
def helm_run(path: Path) -> dict[str, float]:
    """HELM over one file in a fresh process: its report, plus the wall time measured from outside."""
    python = HELM_VENV / "bin" / "python"
    env = {"NLTK_DATA": str(empty_punkt(HELM_VENV / "nltk_data")), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    start = time.perf_counter()
    out = subprocess.run(
        [str(python), str(ROOT / "benchmarks" / "helm_timed.py"), str(path)],
        check=True, capture_output=True, text=True, env=env,
    ).stdout  # fmt: skip
    doc = json.loads(out.strip().splitlines()[-1])
    doc["outside_s"] = time.perf_counter() - start
    return doc


def helm_fit(path: Path, d: Path, sizes: list[int]) -> tuple[float, float]:
    """HELM's time on two subsets of the file, fitted as fixed seconds + seconds per row (printed)."""
    points = []
    for size in sizes:
        sub = d / f"helm-{size}.jsonl"
        n = subset(path, sub, size)
        doc = helm_run(sub)
        points.append((n, doc["outside_s"], doc))
    (n1, t1, _), (n2, t2, d2) = points
    per_row = (t2 - t1) / (n2 - n1)
    fixed = t1 - per_row * n1
    print(f"HELM {HELM_VERSION} (its metric code, one process, one core): {n1:,} rows {t1:.1f} s, "
          f"{n2:,} rows {t2:.1f} s (import {d2['import_s']:.1f} s) -> fixed {fixed:.1f} s + "
          f"{per_row * 1e3:.2f} ms/row", flush=True)  # fmt: skip
    return fixed, per_row


def paired(path: Path, d: Path, sizes: list[int], rounds: int, rows: int, families: list[str], batch: int) -> None:
    """HELM and the service measured side by side, `rounds` times: this machine's speed drifts by
    tens of per cent within minutes, so a ratio is read from the two figures of one round, and the
    median of the rounds' ratios is the figure."""
    ratios, rates = [], []
    for i in range(rounds):
        fixed, per_row = helm_fit(path, d, sizes)
        run = service_run(path, rows, families, None, batch)
        helm, elapsed = fixed + per_row * rows, run["elapsed"]
        ratios.append(helm / elapsed)
        rates.append(rows / elapsed)
        cpu = 1e6 * sum(run["cpu"].values()) / rows
        print(f"  round {i + 1}: HELM {helm:.1f} s for {rows:,} rows, service {elapsed:.2f} s "
              f"({rows / elapsed:,.0f}/s, {cpu:.0f} CPU us a prediction): {ratios[-1]:.1f}x", flush=True)  # fmt: skip
    print(f"ratio, median of {rounds} rounds: service {median(ratios):.1f}x faster than HELM "
          f"(rounds: {', '.join(f'{r:.1f}x' for r in ratios)})")  # fmt: skip
    rate, ratio = median(rates), median(ratios)
    name = f"service predictions/s, {rows:,} predictions, {len(families)} families (median of {rounds} paired rounds)"
    note = f"the ratio is the median of the rounds' ratios: {', '.join(f'{r:.1f}x' for r in ratios)}"
    record("vs_helm", [Figure(name, rate, "predictions/s", f"HELM {HELM_VERSION}'s own metric code on the same rows",
                              rate / ratio, True, ">= 100x", ratio >= 100, note)])  # fmt: skip


# --- the service ------------------------------------------------------------------------------
def _groups(r: redis.Redis, stream: str) -> dict[str, dict[str, Any]]:
    try:
        return {g["name"].decode(): g for g in r.xinfo_groups(stream)}
    except redis.ResponseError:
        return {}


def _caught_up(r: redis.Redis, stream: str, families: list[str], timeout_s: float) -> int:
    """Wait until every family's group has read and acknowledged every entry; the entries added."""
    deadline = time.monotonic() + timeout_s
    while True:
        added = r.xinfo_stream(stream)["entries-added"]
        groups = _groups(r, stream)
        done = all(g["entries-read"] == added and not g["pending"] for g in groups.values())
        if len(groups) == len(families) and done:
            return int(added)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the families did not apply the warm-up batch within {timeout_s:g} s: {groups}")
        time.sleep(0.1)


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children (the client's, once it has exited)."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def service_run(
    path: Path, rows: int, families: list[str], profile: Path | None, batch: int = BATCH, scripts: bool = False
) -> dict[str, Any]:
    """Submit the file with the CLI; seconds until each family's group has applied every entry.
    scripts: also Redis's script time per family (ScriptTime)."""
    env = {
        "HOLISTIC_BACKLOG_MAX_BATCHES": "100000",
        "HOLISTIC_FAMILIES": ",".join(families),
        "HOLISTIC_SUMMARIZATION_SEMANTIC": "off",
    }
    commands = [["gateway"], *(["worker", f] for f in families)]

    def python(cmd: list[str]) -> list[str]:
        return ["-m", "benchmarks.cpu_profile", str(profile / f"{'-'.join(cmd)}.prof")] if profile else []

    stream = Keys().stream
    with private_redis(persist=True) as url, spawned(url, *commands, env=env, python=python) as (address, procs):
        r = redis.Redis.from_url(url)
        # a warm-up batch of other models that every family applies: workers started, models loaded
        warm = path.with_name("warm-up.jsonl")
        with open(path, encoding="utf-8") as src, open(warm, "w", encoding="utf-8") as dst:
            for _, line in zip(range(batch), src, strict=False):
                row = json.loads(line)
                dst.write(json.dumps(dict(row, model=f"{row['model']}-warm-up")) + "\n")
        submit = [sys.executable, "-m", "holistic_app", "submit", "--no-progress", "--target", address]
        done = subprocess.run([*submit, str(warm)], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"holistic submit (warm-up) failed: {done.stdout}{done.stderr}")
        _caught_up(r, stream, families, 120)
        cpu0 = {p.pid: cpu_seconds(p.pid) for p in procs}
        redis0 = redis_cpu(r)
        r.config_resetstat()
        script_time = ScriptTime(r) if scripts else None
        client_py = ["-m", "benchmarks.cpu_profile", str(profile / "client.prof")] if profile else []
        submit = [sys.executable, *client_py, "-m", "holistic_app", "submit", str(path), "--no-progress",
                  "--target", address, "--batch-size", str(batch)]  # fmt: skip
        children0 = _children_cpu()
        start = time.perf_counter()
        client = subprocess.Popen(submit, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        caught: dict[str, float] = {}
        cpu: dict[str, float] = {}
        submitted_s = 0.0
        added = -1  # entries on the stream once the client is done
        history: list[tuple[float, dict[str, dict[str, Any]]]] = []  # polled while the client submits
        while len(caught) < len(families):
            time.sleep(0.05)
            t = time.perf_counter() - start
            history.append((t, _groups(r, stream)))
            if script_time is not None and len(history) % 10 == 0:
                script_time.drain()
            if t > 900:
                raise TimeoutError(f"families not caught up after 900 s: {sorted(set(families) - set(caught))}")
            if client.poll() is None:
                continue
            if not submitted_s:
                submitted_s = t
                cpu["client"] = _children_cpu() - children0
                if client.returncode:
                    raise RuntimeError(f"holistic submit failed: {client.stdout.read().decode()}")  # type: ignore[union-attr]
                added = r.xinfo_stream(stream)["entries-added"]
            for at, groups in history:  # the first poll at which the group had applied every entry
                for name, g in groups.items():
                    if name not in caught and g["entries-read"] == added and g["pending"] == 0:
                        caught[name] = at
            history.clear()
        elapsed = max(caught.values())
        cpu.update({" ".join(cmd): cpu_seconds(p.pid) - cpu0[p.pid] for cmd, p in zip(commands, procs, strict=True)})
        cpu["redis"] = redis_cpu(r) - redis0
        commands_us = {k: (float(v["usec"]), int(v["calls"])) for k, v in r.info("commandstats").items()}
        if script_time is not None:
            script_time.drain()
    out = {"elapsed": elapsed, "submitted": submitted_s, "caught": caught, "cpu": cpu, "redis": commands_us}
    if script_time is not None:
        out["scripts"] = {f: (us, script_time.calls[f]) for f, us in script_time.us.items()}
    return out


# --- where the time went (--profile) ---------------------------------------------------------
# per process: its steady-state root (startup imports left out), then stages inside it; a stage is
# every function whose "file:function" contains the pattern (cumulative CPU time, summed)
STAGES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "client": ("holistic_client/cli.py:submit", [
        ("parse JSON Lines (json_format.Parse)", "json_format.py:Parse"),
        ("read lines, other", "holistic_client/jsonl.py:read_predictions"),
        ("submit RPCs (serialize, gRPC)", "holistic_client/client.py:submit"),
    ]),
    "gateway": ("asyncio/base_events.py:_run_once", [
        ("parse request", "gateway/ingest.py:parse_request"),
        ("validation", "gateway/validation.py:validate"),
        ("ingest in all (validation, Redis script)", "gateway/ingest.py:submit"),
    ]),
    "worker": ("metric_services/runner.py:run", [
        ("read (XREADGROUP)", "holistic/queue/work.py:read"),
        ("decode envelope", "holistic/queue/envelope.py:envelope"),
        ("compute", "runner.py:_compute"),
        ("apply (build args, instance state, Lua)", "runner.py:_apply_pipelined|runner.py:_apply_with_instances"),
        ("ack", "holistic/queue/work.py:ack"),
    ]),
}  # fmt: skip


def _cumulative(stats: pstats.Stats, patterns: str) -> float:
    """Cumulative seconds of the functions named by "file:function|file:function"."""
    wanted = [p.rpartition(":") for p in patterns.split("|")]
    total = 0.0
    for (file, _, name), (_, _, _, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        if any(file.endswith(f) and name == fn for f, _, fn in wanted):
            total += ct
    return total


def print_profile(directory: Path, rows: int) -> None:
    print(
        f"\nCPU time by stage under cProfile ({directory}; the profiler inflates Python-heavy stages), us/prediction:"
    )
    for prof in sorted(directory.glob("*.prof")):
        kind = "worker" if prof.stem.startswith("worker") else prof.stem
        root, stages = STAGES[kind]
        stats = pstats.Stats(str(prof))
        steady = _cumulative(stats, root)
        parts = ", ".join(f"{label} {1e6 * _cumulative(stats, pat) / rows:.1f}" for label, pat in stages)
        print(f"  {prof.stem:<22} {1e6 * steady / rows:>7.1f}: {parts}")


# --- report -----------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=90_000)
    ap.add_argument("--runs", type=int, default=3, help="service runs (the median is reported)")
    ap.add_argument(
        "--span-s", type=float, help="squeeze produced_at into this many seconds (default: the sample's ~3 hours)"
    )
    ap.add_argument("--helm-rows", default="1500,4500", help="the two subset sizes HELM scores")
    ap.add_argument("--skip-helm", action="store_true", help="service only (e.g. with --profile)")
    ap.add_argument("--profile", type=Path, help="write cProfile files of client, gateway and workers here")
    ap.add_argument("--by-family", type=int, metavar="ROWS", help="also each family alone over ROWS rows: CPU split")
    ap.add_argument("--batch-size", type=int, default=BATCH, help="predictions per batch, as submitted")
    ap.add_argument(
        "--redis-by-family", action="store_true", help="Redis's script time per family (SLOWLOG; costs Redis a little)"
    )
    ap.add_argument(
        "--paired", type=int, metavar="ROUNDS", help="ROUNDS of (HELM's fit, one service run): a ratio per round"
    )
    args = ap.parse_args()
    families = registry.installed()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vs-helm-") as d:
        path = Path(d) / "predictions.jsonl"
        rows = make_file(path, args.rows, args.span_s)
        scorable = rows  # HELM scores every row: ranking and extractiveness too (tools/helm_conformance.py)
        print(f"file: {rows:,} predictions (demo sample x{rows / 7179:.1f}, fresh ids); "
              f"{os.cpu_count()} CPUs, load average before "
              f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
        sizes = [int(x) for x in args.helm_rows.split(",")]
        if args.paired:
            paired(path, Path(d), sizes, args.paired, rows, families, args.batch_size)
            return
        helm = None
        if not args.skip_helm:
            fixed, per_row = helm_fit(path, Path(d), sizes)
            helm = fixed + per_row * scorable
            print(f"  extrapolated to {scorable:,} rows: {helm:.1f} s")
        runs = []
        for i in range(args.runs):
            prof = args.profile / f"run{i}" if args.profile else None
            if prof:
                prof.mkdir(exist_ok=True)
            runs.append(service_run(path, rows, families, prof, args.batch_size, args.redis_by_family))
            print(f"  service run {i + 1}: {runs[-1]['elapsed']:.2f} s (submit done {runs[-1]['submitted']:.2f} s), "
                  f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
        if args.by_family:
            print(f"\neach family alone, one worker in one process, {args.by_family:,} rows; CPU us/prediction:")
            print(f"  {'family':<16}{'compute':>9}{'worker':>9}{'redis':>9}")
            for fam in families:
                c, w, rd = family_alone(path, fam, args.by_family, args.batch_size)
                print(f"  {fam:<16}{c:>9.1f}{w:>9.1f}{rd:>9.1f}")
    elapsed = median([x["elapsed"] for x in runs])
    mid = sorted(runs, key=lambda x: x["elapsed"])[len(runs) // 2]
    print()
    print(f"{'':44}{'seconds':>10}{'predictions/s':>16}")
    print(f"{'service: holistic submit -> every family':44}{elapsed:>10.2f}{rows / elapsed:>16,.0f}"
          f"   median of {len(runs)}: {[round(x['elapsed'], 2) for x in runs]}")  # fmt: skip
    if helm is not None:
        print(f"{'HELM ' + HELM_VERSION + ' metric code (fixed + per row)':44}{helm:>10.1f}{scorable / helm:>16,.0f}")
        print(f"{'HELM, per-row part only':44}{helm - fixed:>10.1f}{scorable / (helm - fixed):>16,.0f}")
        print(f"ratio: service {helm / elapsed:.1f}x faster than HELM ({(helm - fixed) / elapsed:.1f}x without "
              f"HELM's fixed {fixed:.1f} s); HELM scored {scorable:,} of the {rows:,} rows")  # fmt: skip
        name = f"service predictions/s, {rows:,} predictions, {len(families)} families (median of {len(runs)} runs)"
        record("vs_helm", [Figure(name, rows / elapsed, "predictions/s", f"HELM {HELM_VERSION}'s own metric code",
                                  scorable / helm, True, ">= 100x", helm / elapsed >= 100)])  # fmt: skip
    print()
    print(f"per family (median run): catch-up s, CPU s, CPU us/prediction; submit done at {mid['submitted']:.2f} s")
    for name, t in sorted(mid["caught"].items(), key=lambda kv: kv[1]):
        c = mid["cpu"].get(f"worker {name}", 0.0)
        print(f"  {name:<16}{t:>8.2f}{c:>8.1f}{1e6 * c / rows:>10.1f}")
    for name in ("client", "gateway", "redis"):
        c = mid["cpu"][name]
        print(f"  {name:<16}{'':>8}{c:>8.1f}{1e6 * c / rows:>10.1f}")
    top = sorted(mid["redis"].items(), key=lambda kv: -kv[1][0])[:6]
    by_command = ", ".join(f"{k.removeprefix('cmdstat_')} {us / rows:.1f} ({calls:,} calls)" for k, (us, calls) in top)
    print(f"  redis by command (scripts include their calls), us/prediction: {by_command}")
    if "scripts" in mid:
        parts = sorted(mid["scripts"].items(), key=lambda kv: -kv[1][0])
        each = ", ".join(
            f"{f} {us / rows:.1f} ({calls:,} calls, {us / 1e3 / calls:.1f} ms each)" for f, (us, calls) in parts
        )
        print(f"  redis scripts by family (SLOWLOG), us/prediction: {each}")
    if args.profile:
        print_profile(args.profile / f"run{runs.index(mid)}", rows)
    print(f"load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
