"""apply.lua's done bit, on its own and under two replicas racing on one entry.

The worker's Python GETBIT pre-check skips most redeliveries before apply.lua runs, so a test that
only redelivers after an apply never reaches the script's own check. Here the script is called
directly, and two replicas are held behind a barrier after their pre-checks (both saw the bit
unset) so that both reach apply.lua with the same (model, family, seq): only the bit inside the
script stops the second merge.
"""

from __future__ import annotations

import threading
from functools import partial

import pytest
import redis

from holistic.queue import envelope
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from metric_services.fault_plan import Faults
from tests.conftest import drain
from tests.factories import prediction

KEYS = Keys()


def robust(pid: str, original: str, output: str) -> pb.Prediction:
    p = prediction(pid, output=output)
    p.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
    p.perturbation.name = "typos"
    p.perturbation.original_id = original
    return p


PREDICTIONS = [
    prediction("q1", output="Paris"),
    robust("q1-typo", "q1", "Rome"),  # the variant is wrong: q1's worst case is 0
    prediction("q2", output="Paris"),
    robust("q2-typo", "q2", "Paris"),
    prediction("q3", output="Lyon"),
]


def add_entry(r: redis.Redis, family: str, model: str, seq: int) -> str:
    WorkQueue(r, KEYS).ensure_group(family)
    request = SubmitPredictionsRequest(batch_id=f"{model}-{seq}", model=model, predictions=PREDICTIONS)
    header = BatchEnvelope(batch_id=request.batch_id, model=model, sequence=seq, families=[family])
    header.accept_time.GetCurrentTime()
    return r.xadd(KEYS.stream, envelope.fields_for(model, seq, request.SerializeToString(), header)).decode()


def stats_of(r: redis.Redis, model: str, family: str) -> dict[bytes, bytes]:
    return r.hgetall(KEYS.stats(model, family, "all"))


class Lockstep(Faults):
    """Waits for every replica at before_apply (after the GETBIT pre-check and compute) and again at
    after_apply (before XACK), so neither acknowledges, which would end the entry's pending state and
    with it apply.lua's pending check, before both have applied (and retried a state conflict)."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__("")
        self.barrier = barrier

    def at(self, point: str, batch_ids: list[str]) -> None:
        if batch_ids:
            self.barrier.wait(timeout=30)


def test_apply_script_merges_one_sequence_once(r, make_worker):
    """apply.lua alone (no pending check: stream ''), twice with the same seq, then another seq."""
    add_entry(r, "accuracy", "m", 1)
    w = make_worker("accuracy")
    eid, fields = w.queue.read("accuracy", w.consumer, 1, 1)[0]
    item = w._compute(w.queue, eid, envelope.parse(eid, fields))
    item.stream = ""  # skip the pending check: only the done bit stands between two merges
    keys, args = w._apply_args(item)
    assert w.queue.scripts.apply(keys=keys, args=args) == 1
    once = stats_of(r, "m", "accuracy")
    # all 5 counted; the run cell is over the 3 unperturbed (HELM): Paris in q1 and q2
    assert int(once[b"mmlu|n"]) == 5 and int(once[b"mmlu|ref|exact_match|sum"]) == 2
    assert w.queue.scripts.apply(keys=keys, args=args) == 0
    assert stats_of(r, "m", "accuracy") == once
    assert r.getbit(KEYS.done("m", "accuracy"), 1) == 1
    assert r.xlen(KEYS.updates("m")) == 1  # one update for the watchers, not two
    args[0] = 2  # the same statistics under another sequence number are another batch
    assert w.queue.scripts.apply(keys=keys, args=args) == 1
    assert int(stats_of(r, "m", "accuracy")[b"mmlu|n"]) == 10


def apply_ops(w, seq: int, *ops: object) -> object:
    """apply.lua with one hash (model m's all-time accuracy statistics) and its ops, for batch `seq`."""
    return w.queue.scripts.apply(
        keys=[KEYS.done("m", "accuracy"), KEYS.updates("m"), KEYS.deleted("m"), KEYS.stats("m", "accuracy", "all")],
        args=[seq, 10, "accuracy", 1, "", 0, len(ops) // 3, *ops],
    )


def test_apply_script_sums_floats_exactly_and_refuses_infinity_writing_nothing(r, make_worker):
    """Sums are doubles stored with 17 significant digits (they read back bit for bit, also below
    1e-17 where HINCRBYFLOAT's fixed 17 decimals gave 0); a sum that overflows fails the script before
    anything, the done bit included, is written."""
    w = make_worker("accuracy")
    key = KEYS.stats("m", "accuracy", "all")

    apply = partial(apply_ops, w)

    assert apply(1, "f", "x", repr(0.1), "f", "tiny", "1e-20", "i", "n", 2, "s", "s", "kept") == 1
    assert apply(2, "f", "x", repr(0.2), "f", "tiny", "3e-20", "i", "n", 3, "f", "big", "1e308") == 1
    got = r.hgetall(key)
    assert float(got[b"x"]) == 0.1 + 0.2 and float(got[b"tiny"]) == 1e-20 + 3e-20 and got[b"n"] == b"5"
    with pytest.raises(redis.exceptions.ResponseError, match="NaN or Infinity"):
        apply(3, "i", "n", 1, "f", "big", "1e308")
    assert r.hgetall(key) == got and r.getbit(KEYS.done("m", "accuracy"), 3) == 0


def test_apply_script_refuses_a_field_written_twice_in_one_hash_writing_nothing(r, make_worker):
    """Each hash's new values are made in one pass over its ops, so a field may be written by one op
    at most (a condition on it besides is fine): a block writing one twice fails the script before
    anything, the done bit included, is written, instead of summing it wrongly."""
    w = make_worker("accuracy")
    key = KEYS.stats("m", "accuracy", "all")

    apply = partial(apply_ops, w)

    assert apply(1, "!", "s", "", "i", "n", 2, "s", "s", "a", "f", "x", "0.5") == 1
    assert apply(2, "=", "s", "a", "s", "s", "b", "i", "n", 3, "<", "lo", "4", ">", "hi", "4") == 1
    got = r.hgetall(key)
    assert got == {b"n": b"5", b"s": b"b", b"x": b"0.5", b"lo": b"4", b"hi": b"4"}
    with pytest.raises(redis.exceptions.ResponseError, match="field written twice in one apply: n"):
        apply(3, "i", "x2", 1, "i", "n", 1, "i", "n", 2)
    with pytest.raises(redis.exceptions.ResponseError, match="field written twice in one apply: s"):
        apply(3, "n", "s", "c", "s", "s", "d")
    assert r.hgetall(key) == got and r.getbit(KEYS.done("m", "accuracy"), 3) == 0
    assert r.xlen(KEYS.updates("m")) == 2


def test_apply_script_reads_and_writes_hashes_bigger_than_one_call(r, make_worker):
    """apply.lua reads and writes each hash in calls of at most 2,000 arguments (Lua's unpack is bounded):
    5,001 conditions, 5,001 sums and 5,001 sets on one hash, then the same fields summed again."""
    w = make_worker("accuracy")
    key = KEYS.stats("m", "accuracy", "all")
    n = 5_001

    apply = partial(apply_ops, w)

    first = [x for i in range(n) for x in ("!", f"new{i}", "", "i", f"n{i}", i, "s", f"new{i}", f"v{i}")]
    assert apply(1, *first) == 1
    assert apply(2, *[x for i in range(n) for x in ("=", f"new{i}", f"v{i}", "i", f"n{i}", 1)]) == 1
    got = r.hgetall(key)
    assert len(got) == 2 * n and all(got[f"n{i}".encode()] == str(i + 1).encode() for i in range(n))
    assert got[f"new{n - 1}".encode()] == f"v{n - 1}".encode()
    assert apply(3, "!", f"new{n - 1}", "", "i", "n0", 1) == -1  # the last condition of a big read counts
    assert r.hget(key, "n0") == b"1"


@pytest.mark.parametrize("family", ["accuracy", "robustness"])
def test_two_replicas_racing_on_one_entry_merge_it_once(r, make_worker, family):
    """Both replicas pass the Python pre-check, then both run apply.lua on the same pending entry
    (a claim racing a slow owner); the statistics equal those of one replica applying it alone."""
    add_entry(r, family, "alone", 1)
    solo = make_worker(family)
    solo.process(solo.queue.read(family, solo.consumer, 1, 1))
    expected = stats_of(r, "alone", family)
    assert expected and solo.counters.applied == 1

    add_entry(r, family, "raced", 1)
    barrier = threading.Barrier(2)
    a = make_worker(family, faults=Lockstep(barrier))
    b = make_worker(family, faults=Lockstep(barrier))
    entries = a.queue.read(family, a.consumer, 1, 1)
    errors: list[BaseException] = []

    def run(worker) -> None:
        try:
            worker.process(entries)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert sorted([a.counters.applied, b.counters.applied]) == [0, 1]
    assert a.counters.skipped + b.counters.skipped == 1
    assert stats_of(r, "raced", family) == expected
    assert r.xlen(KEYS.updates("raced")) == 1
    assert r.xpending(KEYS.stream, family)["pending"] == 0


def robust_as(pid: str, original: str, output: str, name: str) -> pb.Prediction:
    p = robust(pid, original, output)
    p.perturbation.name = name
    return p


RACES = {
    # both replicas find the instance absent ('!' conditions)
    "absent": ([], [prediction("q1", output="Paris")], [robust("q1-typo", "q1", "Rome")]),
    # both find the same stored state ('=' conditions)
    "present": (
        [prediction("q1", output="Paris")],
        [robust_as("q1-typo", "q1", "Rome", "typos")],
        [robust_as("q1-caps", "q1", "Lyon", "casing")],
    ),
}


@pytest.mark.parametrize("race", sorted(RACES))
def test_two_replicas_joining_one_instance_from_different_batches_read_again_on_conflict(r, make_worker, race):
    """Two batches touch one instance (an original and its variant, or two variants); two replicas
    each read the instance's state before either applies. apply.lua's '!' and '=' conditions make the
    second write nothing and read again, so the statistics are those of one replica applying in turn."""
    before, one, other = RACES[race]

    def submit(model: str, seq: int, preds: list[pb.Prediction]) -> None:
        WorkQueue(r, KEYS).ensure_group("robustness")
        request = SubmitPredictionsRequest(batch_id=f"{model}-{seq}", model=model, predictions=preds)
        header = BatchEnvelope(batch_id=request.batch_id, model=model, sequence=seq, families=["robustness"])
        header.accept_time.GetCurrentTime()
        r.xadd(KEYS.stream, envelope.fields_for(model, seq, request.SerializeToString(), header))

    solo = make_worker("robustness")
    batches = [b for b in (before, one, other) if b]
    for seq, preds in enumerate(batches, 1):
        submit("alone", seq, preds)
    solo.process(solo.queue.read("robustness", solo.consumer, len(batches), 1))
    expected = stats_of(r, "alone", "robustness")

    if before:
        submit("raced", 0, before)
        solo.process(solo.queue.read("robustness", solo.consumer, 1, 1))
    a, b = make_worker("robustness"), make_worker("robustness")
    barrier = threading.Barrier(2)
    for w in (a, b):  # the first plan of each waits until both have read the state
        plan, waited = w.instances.plan, []

        def held(*args, _plan=plan, _waited=waited, **kwargs):
            out = _plan(*args, **kwargs)
            if not _waited:
                _waited.append(True)
                barrier.wait(timeout=30)
            return out

        w.instances.plan = held
    submit("raced", 1, one)
    submit("raced", 2, other)
    first = a.queue.read("robustness", a.consumer, 1, 1)
    second = b.queue.read("robustness", b.consumer, 1, 1)
    threads = [threading.Thread(target=w.process, args=(e,)) for w, e in ((a, first), (b, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert a.counters.applied == b.counters.applied == 1
    assert stats_of(r, "raced", "robustness") == expected


def test_another_familys_entry_is_skipped_without_decoding_its_envelope(r, make_worker):
    """The `f` field routes: an entry for another family is acknowledged unread, even when its envelope
    could not be decoded at all (here: bytes that are not a BatchEnvelope), and never dead-lettered."""
    WorkQueue(r, KEYS).ensure_group("accuracy")
    fields = envelope.fields_for("m", 1, b"", BatchEnvelope(model="m", sequence=1, families=["calibration"]))
    fields["e"] = b"\xff\xff\xff not protobuf"
    r.xadd(KEYS.stream, fields)
    add_entry(r, "accuracy", "m", 2)
    w = make_worker("accuracy")
    drain(w)  # a first read claims one entry (metric_services/read_pace.py)
    assert w.counters.applied == 1 and w.counters.dead_lettered == 0
    assert r.xlen(KEYS.dead_letters) == 0
    assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0
