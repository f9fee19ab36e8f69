"""Redis memory per accepted byte: one large batch through a real gateway, INFO memory step by step.

A private redis-server as in production (AOF everysec, noeviction) and a gateway process; one batch of
N outputs of S bytes (default 60 x 1 MB, within every documented limit). Prints used_memory and its
parts (dataset, client buffers, AOF buffer) before, right after the answer and after Redis's client
cron has run, the stream entry's MEMORY USAGE, and then the same while K workers read the entry.

    .venv/bin/python benchmarks/redis_memory.py [--outputs 60] [--size 1048576] [--readers 0]
"""

from __future__ import annotations

import argparse
import os
import random
import string
import subprocess
import sys
import threading
import time

import redis

from benchmarks._common import private_redis, processes
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.v1.prediction_pb2 import TASK_FREE_GENERATION, Prediction
from holistic_client import Client

MB = 1 << 20


def memory(r: redis.Redis) -> dict[str, int]:
    info = r.info("memory")
    keys = ("used_memory", "used_memory_dataset", "mem_clients_normal", "mem_aof_buffer", "used_memory_rss")
    return {k: int(info[k]) for k in keys}


def show(label: str, now: dict[str, int], base: dict[str, int]) -> None:
    parts = "  ".join(f"{k}={(now[k] - base[k]) / MB:7.1f}" for k in now)
    print(f"{label:28} delta MB: {parts}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--outputs", type=int, default=60)
    ap.add_argument("--size", type=int, default=MB - 4096)
    ap.add_argument("--readers", type=int, default=0, help="raw XREAD clients that read the entry and stall")
    ap.add_argument("--workers", default="", help="families whose workers run (e.g. accuracy,efficiency): peak memory")
    a = ap.parse_args()
    rng = random.Random(1)
    text = "".join(rng.choices(string.ascii_letters + " ", k=a.size))
    preds = [Prediction(id=f"p{i}", scenario="s", task=TASK_FREE_GENERATION, output=text[i:] + text[:i])
             for i in range(a.outputs)]  # fmt: skip
    with private_redis(persist=True) as url:
        r = redis.Redis.from_url(url)
        families = a.workers or "accuracy"
        env = {"HOLISTIC_FAMILIES": families, "HOLISTIC_MAX_MESSAGE_BYTES": str(128 * MB)}
        workers = [["worker", f] for f in a.workers.split(",") if f]
        with processes(url, ["gateway"], *workers, env=env) as address:
            with Client(address, None) as c:
                c.submit(preds[:1], model="warm", batch_id="warm")
                while workers and any(WorkQueue(r, Keys()).backlog().values()):  # workers applied the warm-up
                    time.sleep(0.05)
                base = memory(r)
                peak = [0]
                done = threading.Event()

                def sample() -> None:
                    while not done.is_set():
                        peak[0] = max(peak[0], int(r.info("memory")["used_memory"]))
                        time.sleep(0.01)

                sampler = threading.Thread(target=sample, daemon=True)
                sampler.start()
                reply = c.submit(preds, model="big", batch_id="big-1")
                accepted = sum(len(p.SerializeToString()) for p in preds)
                after = memory(r)
            show("right after the answer", after, base)
            if workers:
                deadline = time.monotonic() + 60
                while any(WorkQueue(r, Keys()).backlog().values()) and time.monotonic() < deadline:
                    time.sleep(0.05)
                done.set()
                sampler.join()
                print(f"peak used_memory while {len(workers)} workers read it: "
                      f"+{(peak[0] - base['used_memory']) / MB:.1f} MB", flush=True)  # fmt: skip
            done.set()
            stream = Keys().stream
            entry = r.memory_usage(stream, samples=0) or 0
            print(f"accepted {reply.accepted_count} predictions, {accepted / MB:.1f} MB of protobuf; "
                  f"stream key MEMORY USAGE {entry / MB:.1f} MB", flush=True)  # fmt: skip
            time.sleep(3)  # Redis's clientsCron shrinks idle query buffers
            show("3 s later", memory(r), base)
            if a.readers:
                procs = [subprocess.Popen([sys.executable, "-c", READER, url, stream], env=dict(os.environ))
                         for _ in range(a.readers)]  # fmt: skip
                time.sleep(3)
                show(f"{a.readers} readers stalled", memory(r), base)
                for p in procs:
                    p.kill()
            print(f"Redis memory per accepted byte: {(after['used_memory'] - base['used_memory']) / accepted:.2f}")


READER = """
import socket, sys, time
path = sys.argv[1].removeprefix('unix://')
s = socket.socket(socket.AF_UNIX); s.connect(path)
key = sys.argv[2].encode()
s.sendall(b'*4\\r\\n$5\\r\\nXREAD\\r\\n$7\\r\\nSTREAMS\\r\\n$%d\\r\\n%s\\r\\n$1\\r\\n0\\r\\n' % (len(key), key))
time.sleep(60)  # a consumer that reads the entry slowly: Redis holds the reply in its output buffer
"""

if __name__ == "__main__":
    main()
