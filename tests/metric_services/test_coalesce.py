"""Batches of one read that share a model are applied by one script (metric_services/work.py), and
count exactly what applying them one by one counts: also where one of them was applied before (the
script writes nothing and the runner applies the rest one by one), and with per-instance state that
spans the batches."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
import redis

from holistic.profile.windows import minute_of
from holistic.queue import envelope
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from metric_services.middleware import Hooks
from metric_services.runner import Worker
from metric_services.work import Work, coalesce
from tests.conftest import drain
from tests.factories import prediction

KEYS = Keys()
BATCHES = 6


def batch(seq: int, now: float) -> list[pb.Prediction]:
    """Seq's predictions over three minutes; each question's typo variant comes two batches later."""
    out = []
    for i in range(5):
        q = f"q{seq}-{i}"
        out.append(prediction(q, output="Paris" if (seq + i) % 3 else "Rome", produced_at_s=now - 60 * (i % 3) - seq))
        if seq >= 2:
            v = prediction(f"q{seq - 2}-{i}-typo", output="Rome" if i % 2 else "Paris", produced_at_s=now - 30 * i)
            v.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
            v.perturbation.name = "typos"
            v.perturbation.original_id = f"q{seq - 2}-{i}"
            out.append(v)
    return out


def submit(r: redis.Redis, family: str, model: str, now: float) -> None:
    WorkQueue(r, KEYS).ensure_group(family)
    for seq in range(1, BATCHES + 1):
        request = SubmitPredictionsRequest(batch_id=f"{model}-{seq}", model=model, predictions=batch(seq, now))
        header = BatchEnvelope(batch_id=request.batch_id, model=model, sequence=seq, families=[family])
        header.accept_time.FromNanoseconds(round(now * 1e9))
        r.xadd(KEYS.stream, envelope.fields_for(model, seq, request.SerializeToString(), header))


def folded(r: redis.Redis, model: str, family: str, tier: str = "all", bucket: int | None = None) -> Folded:
    return Folded.from_hashes([r.hgetall(KEYS.stats(model, family, tier, bucket))])


def assert_same(got: Folded, want: Folded) -> None:
    assert set(got) == set(want) and len(want) > 5
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


class Counted:
    """A worker's apply script, counting its calls: called alone (an apply with instance state), or
    sent by EVALSHA of its digest in a pipeline of the worker's client (plain statistics)."""

    def __init__(self, worker: Worker) -> None:
        self.script, self.calls = worker.queue.scripts.apply, 0
        worker.queue.scripts.apply = self  # type: ignore[assignment]
        pipeline = worker.r.pipeline

        def counting_pipeline(*args, **kwargs):
            pipe = pipeline(*args, **kwargs)
            evalsha = pipe.evalsha

            def counted(sha, *rest):
                self.calls += sha == self.script.sha
                return evalsha(sha, *rest)

            pipe.evalsha = counted
            return pipe

        worker.r.pipeline = counting_pipeline  # type: ignore[method-assign]

    def __getattr__(self, name: str):  # sha, script: the runner pipelines EVALSHA itself
        return getattr(self.script, name)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.script(*args, **kwargs)


@pytest.mark.parametrize("family", ["accuracy", "robustness"])  # plain statistics; per-instance state
def test_one_read_is_one_apply_and_counts_what_one_by_one_counts(make_worker, make_settings, r, family):
    now = time.time()
    alone = make_worker(family, make_settings(read_ahead_ms=0, apply_max_predictions=1))
    together = make_worker(family, make_settings(read_ahead_ms=0))
    calls_alone, calls_together = Counted(alone), Counted(together)
    submit(r, family, "one-by-one", now)
    assert drain(alone) == BATCHES
    assert calls_alone.calls == BATCHES
    submit(r, family, "together", now)
    assert drain(together) == BATCHES
    assert calls_together.calls == 1  # all six batches in one script
    assert together.counters.applied == BATCHES and together.counters.predictions == alone.counters.predictions
    want = folded(r, "one-by-one", family)
    assert_same(folded(r, "together", family), want)
    for minute in {minute_of(now - 60 * k - s) for k in range(3) for s in range(1, BATCHES + 1)}:
        assert_same(folded(r, "together", family, "m", minute), folded(r, "one-by-one", family, "m", minute))
    done = KEYS.done("together", family)
    assert [r.getbit(done, s) for s in range(BATCHES + 2)] == [0] + [1] * BATCHES + [0]
    updates = r.xrange(KEYS.updates("together"))
    assert [(u[b"seq"], u[b"n"]) for _, u in updates] == [
        (str(s).encode(), str(len(batch(s, now))).encode()) for s in range(1, BATCHES + 1)
    ]
    if family == "robustness":  # the variants met their originals across batches
        # 30 questions; batch 2's five variants name questions that never came, so they stand alone
        assert want["mmlu|exact_match|worst|n"] == 35 and want["mmlu|exact_match|p:typos|worst|n"] == 25


class RivalFirst(Hooks):
    """Before the worker's apply (its GETBIT pre-check saw every bit unset), another replica applies
    batch 3 of the read on its own."""

    def __init__(self, rival: Worker, entry: tuple[str, dict[bytes, bytes]]) -> None:
        self.rival, self.entry = rival, entry

    def before_apply(self, worker: Worker, batch_ids: list[str]) -> None:
        if self.entry:
            with contextlib.suppress(Died):
                self.rival.process([self.entry])
            self.entry = None


class Died(Exception):
    pass


class DieBeforeAck(Hooks):
    """The rival applied, then died before XACK: the entry is still pending, its done bit set."""

    def before_ack(self, worker: Worker, batch_ids: list[str]) -> None:
        raise Died


@pytest.mark.parametrize("rival_acks", [True, False])
@pytest.mark.parametrize("family", ["accuracy", "robustness"])
def test_a_batch_applied_meanwhile_is_not_counted_twice_and_the_rest_are_applied(
    make_worker, make_settings, r, family, rival_acks
):
    """The script of six finds batch 3 no longer pending (the rival acknowledged it) or its done bit
    set (the rival died before acknowledging), writes nothing, and the runner applies the other five
    one by one: the statistics equal one-by-one applies of the six."""
    now = time.time()
    alone = make_worker(family, make_settings(read_ahead_ms=0, apply_max_predictions=1))
    submit(r, family, "one-by-one", now)
    drain(alone)
    submit(r, family, "together", now)
    read = r.xreadgroup(family, "reader", {KEYS.stream: ">"}, count=100)[0][1]
    read = [(i.decode(), f) for i, f in read]
    third = next(e for e in read if int(e[1][b"s"]) == 3)
    rival = make_worker(family, make_settings(), middleware=[] if rival_acks else [DieBeforeAck()])
    worker = make_worker(family, make_settings(read_ahead_ms=0), middleware=[RivalFirst(rival, third)])
    calls, rival_calls = Counted(worker), Counted(rival)
    worker.process(read)
    assert rival_calls.calls == 1 and calls.calls == 1 + 6  # the six, refused; then each alone (3: 0)
    assert r.getbit(KEYS.done("together", family), 3) == 1
    assert worker.counters.applied == BATCHES - 1 and rival.counters.applied == 1
    assert_same(folded(r, "together", family), folded(r, "one-by-one", family))
    assert r.xpending(KEYS.stream, family)["pending"] == 0


def test_coalesce_groups_per_model_up_to_the_cap():
    def work(model: str, seq: int, n: int, partial: bool = False) -> Work:
        e = type("E", (), {"model": model, "seq": seq})()
        return Work(f"0-{seq}", e, f"b{seq}", n, {}, object() if partial else None)  # type: ignore[arg-type]

    ws = [work("a", 1, 400), work("b", 2, 100), work("a", 3, 400), work("a", 4, 300), work("b", 5, 50)]
    groups = coalesce(ws, 1000)
    assert [[b.entry.seq for b in g.batches] for g in groups] == [[1, 3], [2, 5], [4]]
    assert [g.n for g in groups] == [800, 150, 300]
    assert [[b.entry.seq for b in g.batches] for g in coalesce(ws, 1)] == [[1], [2], [3], [4], [5]]
    assert coalesce([work("a", 1, 5000)], 1000)[0] is not None  # a batch over the cap goes alone


@pytest.mark.parametrize("linger_ms", [0, 400])
def test_a_read_that_got_less_than_it_asked_for_lingers_for_what_trickles_in(make_worker, make_settings, r, linger_ms):
    """Caught up, batches arrive one by one: with a linger the read waits, reads again and applies
    the ones that came meanwhile with it, in one script."""
    now = time.time()
    worker = make_worker("accuracy", make_settings(read_ahead_ms=0, read_linger_ms=linger_ms))
    calls = Counted(worker)
    WorkQueue(r, KEYS).ensure_group("accuracy")

    def add(seq: int) -> None:
        request = SubmitPredictionsRequest(batch_id=f"b{seq}", model="m", predictions=batch(seq, now))
        header = BatchEnvelope(batch_id=request.batch_id, model="m", sequence=seq, families=["accuracy"])
        header.accept_time.FromNanoseconds(round(now * 1e9))
        r.xadd(KEYS.stream, envelope.fields_for("m", seq, request.SerializeToString(), header))

    add(1)
    later = threading.Timer(0.1, lambda: [add(s) for s in (2, 3, 4)])
    later.start()
    started = time.monotonic()
    handled = worker.step(block_ms=1)
    later.join()
    if linger_ms:
        assert handled == 4 and calls.calls == 1 and time.monotonic() - started >= 0.4
    else:
        assert handled == 1 and calls.calls == 1
        assert drain(worker) == 3
    assert worker.counters.applied == 4 and r.xpending(KEYS.stream, "accuracy")["pending"] == 0


def test_the_read_that_ends_a_backlog_does_not_linger_the_next_caught_up_one_does(make_worker, make_settings, r):
    """Draining a backlog, reads get all they ask for; the one that gets the rest applies it at once
    (a burst's last batches are not held back), and a read after that, caught up, lingers."""
    worker = make_worker("accuracy", make_settings(read_ahead_ms=0, read_count=4, read_linger_ms=400))
    submit(r, "accuracy", "m", time.time())  # six entries: a read of 4, then the last 2
    assert worker.step(block_ms=1) == 4
    started = time.monotonic()
    assert worker.step(block_ms=1) == 2
    assert time.monotonic() - started < 0.3
    request = SubmitPredictionsRequest(batch_id="late", model="m", predictions=batch(9, time.time()))
    header = BatchEnvelope(batch_id="late", model="m", sequence=9, families=["accuracy"])
    header.accept_time.GetCurrentTime()
    r.xadd(KEYS.stream, envelope.fields_for("m", 9, request.SerializeToString(), header))
    started = time.monotonic()
    assert worker.step(block_ms=1) == 1
    assert time.monotonic() - started >= 0.4
    assert worker.counters.applied == BATCHES + 1


def test_a_worker_told_to_stop_does_not_linger(make_worker, make_settings, r):
    worker = make_worker("accuracy", make_settings(read_ahead_ms=0, read_linger_ms=10_000))
    submit(r, "accuracy", "m", time.time())
    r.xtrim(KEYS.stream, maxlen=1, approximate=False)  # one entry of the six: a read of 16 gets less than it asked for
    threading.Timer(0.2, worker.stopping.set).start()
    started = time.monotonic()
    assert worker.step(block_ms=1) == 1
    assert time.monotonic() - started < 5 and worker.counters.applied == 1


def test_a_pass_over_several_shards_does_not_linger_on_each(make_worker, make_settings, r):
    """With queue shards a step reads each without blocking; only its blocking read (every shard was
    empty) may linger, so a step over S shards never waits S lingers."""
    settings = make_settings(queue_shards=2, read_ahead_ms=0, read_linger_ms=10_000)
    worker = make_worker("accuracy", settings)
    WorkQueue(r, KEYS, shard=1).ensure_group("accuracy")
    submit(r, "accuracy", "m", time.time())  # six entries on shard 0, none on shard 1: reads of 16 get less
    started = time.monotonic()
    assert worker.step(block_ms=1) == BATCHES
    assert time.monotonic() - started < 5 and worker.counters.applied == BATCHES
