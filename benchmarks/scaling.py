"""Adding replicas of one family: a backlog drained by 1, 2, ... worker processes, and the speedup.

For each CPU-bound family (summarization with semantic similarity, by far the costliest per
prediction; summarization lexical; bias and toxicity with the bundled classifier): N replicas are
started as real processes (`holistic worker <family>`, the default settings unless --env says
otherwise) on a private Redis, and wait, models loaded, blocked on their first read. They are
stopped (SIGSTOP), the backlog is added to the stream (pipelined XADD of envelopes as the gateway
writes them), they are continued (SIGCONT) and the clock runs until the family's group has
nothing pending and nothing undelivered. Replica counts: 1, 2, and up to os.cpu_count() (or
--replicas). Per run: seconds, the speedup over one replica (medians of --rounds, interleaved so
the machine's noise hits all alike), each replica's CPU seconds (utime + stime, its threads
included: an idle replica shows as a small share, spinning threads as CPU beyond the work) and
the CPU per 1,000 predictions, the share of it spent outside the main threads, Redis's CPU, the
cores used (the replicas' CPU seconds per second of drain: on a loaded machine, what it gave them,
which bounds the speedup), and the threads each replica runs. The load average is printed with each
figure: on a shared machine the speedup is depressed by the others' load.

The ceiling: the same backlog computed by the family's own `compute` alone in N bare processes (each
a disjoint share, no Redis, no runner, no reads or applies), the speedup that the cores themselves
give this work, and each process's CPU per 1,000 predictions. Replicas cannot beat it; where both
columns agree, what limits the replicas is the machine (two vCPUs that slow each other), not the
service.

    .venv/bin/python -m benchmarks.scaling [--families summarization-semantic,toxicity] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field

import redis

from benchmarks._common import median, now, private_redis, redis_cpu, sample_predictions, stop
from benchmarks.summarization import corpus
from holistic.queue import envelope as env_mod
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Workload:
    family: str
    batches: int  # on the stream when the replicas continue
    batch_size: int
    env: dict[str, str] = field(default_factory=dict)
    # "demo": the bundled sample's predictions; "news": summaries of unique news articles; "news3": three
    # models summarizing the same articles (HELM's runs), their batches interleaved on the stream
    kind: str = "demo"


WORKLOADS = {
    # 16 summaries a batch, every source unique: ~0.1 CPU-s a summary, the embedding cache never hits
    "summarization-semantic": Workload("summarization", 24, 16, {"HOLISTIC_SUMMARIZATION_SEMANTIC": "on"}, "news"),
    # the same with three models summarizing each article: sources and references repeat across batches
    "summarization-semantic-models": Workload(
        "summarization", 24, 16, {"HOLISTIC_SUMMARIZATION_SEMANTIC": "on"}, "news3"
    ),
    "summarization-lexical": Workload("summarization", 32, 200, {"HOLISTIC_SUMMARIZATION_SEMANTIC": "off"}, "news"),
    "bias": Workload("bias", 96, 500),
    "toxicity": Workload("toxicity", 160, 500),
}


def backlog(w: Workload, tag: str) -> list[dict[str, bytes | str | int]]:
    """The stream entries of the workload; `tag` makes every id (and, for news, every text) fresh."""
    models = ["bench"]
    if w.kind in ("news", "news3"):
        models = ["m-a", "m-b", "m-c"] if w.kind == "news3" else models
        per_model = w.batches * w.batch_size // len(models)
        articles = corpus(per_model, seed=zlib.crc32(tag.encode()))
        rng = random.Random(tag)
        pool = [summary for _, summary, _ in articles]
        preds = []
        for start in range(0, per_model, w.batch_size):  # batch k of each model, in turn
            for m, _ in enumerate(models):
                for i in range(start, min(start + w.batch_size, per_model)):
                    source, summary, reference = articles[i]
                    output = summary if m == 0 else rng.choice(pool)  # the other models' summaries differ
                    p = pb.Prediction(id=f"{tag}-{i}", scenario="news", task=pb.TASK_SUMMARIZATION, output=output)
                    p.references.append(reference)
                    p.source = f"{tag}-{i} {source}"  # fresh each run: no cache outlives a run
                    p.produced_at.GetCurrentTime()
                    preds.append(p)
    else:
        preds = sample_predictions(w.batches * w.batch_size)
        for p in preds:
            p.id = f"{tag}-{p.id}"
    out = []
    accept = int(time.time() * 1000)
    for b in range(w.batches):
        chunk = preds[b * w.batch_size : (b + 1) * w.batch_size]
        model, seq = models[b % len(models)], b // len(models) + 1
        raw = SubmitPredictionsRequest(batch_id=f"{tag}-{b}", model=model, predictions=chunk)
        header = BatchEnvelope(batch_id=f"{tag}-{b}", model=model, sequence=seq, families=[w.family])
        header.accept_time.FromMilliseconds(accept)
        out.append(env_mod.fields_for(model, seq, raw.SerializeToString(), header))
    return out


def cpu_seconds(pid: int) -> tuple[float, float]:
    """utime + stime of the process's main thread, and of all its other threads (pools, spinning)."""
    main = others = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # a thread that ended
            continue
        seconds = (int(fields[11]) + int(fields[12])) / TICKS
        if int(task) == pid:
            main += seconds
        else:
            others += seconds
    return main, others


def threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))


def blocked_reads(client: redis.Redis) -> int:
    """Connections blocked in XREADGROUP (Redis 7.0 creates a consumer only when it is given an entry)."""
    return sum(1 for c in client.client_list() if c.get("cmd") == "xreadgroup" and "b" in c.get("flags", ""))


@dataclass
class Run:
    seconds: float
    cpu: list[float]  # per replica, during the drain
    others: float  # of all the replicas' CPU, what threads other than the main ones spent
    redis_cpu: float  # redis-server's CPU seconds during the drain (apply scripts, reads, acks)
    threads: list[int]
    load: float


def drain(w: Workload, replicas: int, tag: str, env: dict[str, str]) -> Run:
    entries = backlog(w, tag)
    with private_redis() as url:
        client = redis.Redis.from_url(url)
        keys = Keys("hl")
        queue = WorkQueue(client, keys)
        queue.ensure_group(w.family)
        child_env = dict(os.environ, REDIS_URL=url, HOLISTIC_FAMILIES=w.family, **w.env, **env)
        cmd = [sys.executable, "-m", "holistic_app", "worker", w.family]
        procs = [subprocess.Popen(cmd, env=child_env, stderr=subprocess.DEVNULL) for _ in range(replicas)]
        try:
            deadline = now() + 120
            while blocked_reads(client) < replicas:  # models loaded, each waiting in XREADGROUP
                if now() > deadline or any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"{w.family}: replicas did not start")
                time.sleep(0.05)
            for p in procs:
                p.send_signal(signal.SIGSTOP)
            pipe = client.pipeline(transaction=False)
            for fields in entries:
                pipe.xadd(queue.stream, fields)
            pipe.execute()
            before = [cpu_seconds(p.pid) for p in procs]
            redis_before = redis_cpu(client)
            start = now()
            for p in procs:
                p.send_signal(signal.SIGCONT)
            while True:
                g = next(g for g in client.xinfo_groups(queue.stream) if g["name"] == w.family.encode())
                if g["pending"] == 0 and g["lag"] == 0:
                    break
                time.sleep(0.05)  # a poll costs CPU the replicas share; 50 ms is ~0.2 % of a drain
            seconds = now() - start
            after = [cpu_seconds(p.pid) for p in procs]
            redis_spent = redis_cpu(client) - redis_before
            cpu = [sum(a) - sum(b) for a, b in zip(after, before, strict=True)]
            others = sum(a[1] - b[1] for a, b in zip(after, before, strict=True))
            return Run(seconds, cpu, others, redis_spent, [threads(p.pid) for p in procs], os.getloadavg()[0])
        finally:
            for p in procs:
                p.send_signal(signal.SIGCONT)
            stop(procs, 10)
            client.close()


def compute_share(path: str, index: int, count: int) -> None:
    """A bare process of the ceiling: load the family, say ready, compute its share on "go", say done."""
    from holistic.families.registry import load_family
    from holistic.settings import Settings

    family_name, entries = pickle.loads(open(path, "rb").read())  # noqa: SIM115
    settings = Settings()
    family = load_family(family_name)
    prepare = getattr(family, "prepare", None)
    if prepare is not None:
        prepare(settings)
    share = [env_mod.parse(eid, fields).envelope() for eid, fields in entries[index::count]]
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.process_time()
    for envelope in share:
        family.compute(envelope, settings)
    print(f"done {time.process_time() - started}", flush=True)


def ceiling(w: Workload, replicas: int, tag: str, env: dict[str, str]) -> tuple[float, float]:
    """Seconds for `replicas` bare processes to compute the backlog, and their CPU seconds in all."""

    def as_read(fields: dict[str, bytes | str | int]) -> dict[bytes, bytes]:  # as XREADGROUP returns them
        return {k.encode(): v if isinstance(v, bytes) else str(v).encode() for k, v in fields.items()}

    entries = [(f"{i + 1}-0", as_read(fields)) for i, fields in enumerate(backlog(w, tag))]
    with tempfile.NamedTemporaryFile(suffix=".pickle") as fh:
        fh.write(pickle.dumps((w.family, entries)))
        fh.flush()
        child_env = dict(os.environ, HOLISTIC_FAMILIES=w.family, **w.env, **env)
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "benchmarks.scaling", "--compute-share", fh.name, str(i), str(replicas)],
                env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
            for i in range(replicas)
        ]  # fmt: skip
        try:
            for p in procs:
                if p.stdout is None or p.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"{w.family}: a compute process did not start")
            start = now()
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            cpu = 0.0
            for p in procs:
                assert p.stdout is not None
                cpu += float(p.stdout.readline().split()[1])
            seconds = now() - start
        finally:
            stop(procs, 10)
    return seconds, cpu


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--compute-share":
        compute_share(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default=",".join(WORKLOADS), help=f"comma separated, of {', '.join(WORKLOADS)}")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--replicas", default="", help="replica counts, comma separated (default 1, 2 .. cpu_count)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply each backlog's batches")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the bare-compute ceiling (half the time)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for every replica (e.g. a setting)")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    counts = [int(c) for c in args.replicas.split(",")] if args.replicas else sorted({1, *range(2, cores + 1)})
    env = dict(kv.split("=", 1) for kv in args.env)
    print(f"{cores} cores; replica counts {counts}; median of {args.rounds} rounds, interleaved; "
          f"replicas' environment: {env or 'defaults'}")  # fmt: skip
    for name in args.families.split(","):
        base = WORKLOADS[name]
        w = Workload(base.family, max(1, round(base.batches * args.scale)), base.batch_size, base.env, base.kind)
        n = w.batches * w.batch_size
        runs: dict[int, list[Run]] = {c: [] for c in counts}
        bare: dict[int, list[tuple[float, float]]] = {c: [] for c in counts}
        for r in range(args.rounds):
            for c in counts:
                runs[c].append(drain(w, c, f"r{r}c{c}", env))
                bare[c].append((float("nan"), float("nan")) if args.no_ceiling else ceiling(w, c, f"b{r}c{c}", env))
        one = median([x.seconds for x in runs[counts[0]]])
        print(f"\n{name}: {w.batches} batches of {w.batch_size} ({n:,} predictions) on the stream; "
              f"{' '.join(f'{k}={v}' for k, v in w.env.items()) or 'default settings'}")  # fmt: skip
        head = f"  {'replicas':>8} {'drain s':>8} {'speedup':>8} {'pred/s':>9} {'CPU-s/1,000':>11} {'off-main':>8}"
        head += f" {'Redis CPU-s':>11} {'cores used':>10}"
        head += f" {'ceiling':>8} {'ceiling CPU-s/1,000':>19}"
        print(f"{head} {'CPU-s per replica (median run)':>31} {'threads':>7} {'load':>5}  rounds (s)")
        bare_one = median([b[0] for b in bare[counts[0]]])
        for c in counts:
            secs = median([x.seconds for x in runs[c]])
            mid = sorted(runs[c], key=lambda x: x.seconds)[len(runs[c]) // 2]
            per_k = 1000 * median([sum(x.cpu) for x in runs[c]]) / n
            shares = " ".join(f"{s:.1f}" for s in mid.cpu)
            off_main = median([x.others / max(sum(x.cpu), 1e-9) for x in runs[c]])
            speedup = f"{one / secs:.2f}x" if c != counts[0] else "1.00x"
            print(f"  {c:>8} {secs:>8.2f} {speedup:>8} {n / secs:>9,.0f} {per_k:>11.3f} {off_main:>8.1%} "
                  f"{median([x.redis_cpu for x in runs[c]]):>11.2f} "
                  f"{median([sum(x.cpu) / x.seconds for x in runs[c]]):>10.2f} "
                  f"{bare_one / median([b[0] for b in bare[c]]):>7.2f}x "
                  f"{1000 * median([b[1] for b in bare[c]]) / n:>19.3f} {shares:>31} "
                  f"{max(mid.threads):>7} {median([x.load for x in runs[c]]):>5.2f}  "
                  f"{[round(x.seconds, 2) for x in runs[c]]}")  # fmt: skip


if __name__ == "__main__":
    main()
