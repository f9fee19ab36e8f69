"""The work stream under failure: trimming, recovery, dead letters and replay, on a real Redis."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from holistic.queue import envelope
from holistic.queue.janitor import sweep
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue, next_id
from holistic.redis.keys import Keys
from holistic.stats.mergeable import Folded
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from tests.conftest import drain
from tests.factories import batch

KEYS = Keys()


def add_batch(r, model: str, seq: int, n: int = 2, families=("accuracy", "efficiency"), batch_id=None) -> str:
    """What the gateway writes for one batch (its groups exist before the first batch)."""
    for group in ("accuracy", "efficiency"):
        WorkQueue(r, KEYS).ensure_group(group)
    request = SubmitPredictionsRequest(batch_id=batch_id or f"b{seq}", model=model, predictions=batch(n))
    header = BatchEnvelope(batch_id=request.batch_id, model=model, sequence=seq, families=list(families))
    header.accept_time.GetCurrentTime()
    fields = envelope.fields_for(model, seq, request.SerializeToString(), header)
    return r.xadd(KEYS.stream, fields).decode()


def wait_idle(q: WorkQueue, group: str, idle_ms: int, n: int) -> None:
    """Until n entries of the group have been pending for idle_ms (what recovery looks for)."""
    deadline = time.monotonic() + 10
    while len(q.idle_pending(group, idle_ms)) < n:
        assert time.monotonic() < deadline, "entries never became idle"
        time.sleep(0.01)


def applied_count(r, model: str, family: str) -> int:
    return int(Folded.from_hashes([r.hgetall(KEYS.stats(model, family, "all"))]).num("mmlu|n"))


def test_maxlen_would_drop_undelivered_entries_and_the_janitor_does_not(r):
    # The Redis behaviour that rules out XADD MAXLEN on the work stream (Redis 7.0):
    r.xgroup_create("t:s", "g", id="$", mkstream=True)
    for i in range(10):
        r.xadd("t:s", {"n": i}, maxlen=5, approximate=False)
    assert len(r.xreadgroup("g", "c", {"t:s": ">"})[0][1]) == 5  # five were never delivered
    # Our janitor only trims below what every group still needs.
    q = WorkQueue(r, KEYS)
    q.ensure_group("accuracy")
    q.ensure_group("efficiency")
    ids = [add_batch(r, "m", s) for s in range(1, 11)]
    got = q.read("accuracy", "c1", 3, 1)
    q.ack("accuracy", [got[0][0], got[1][0]])
    q.read("efficiency", "c2", 10, 1)
    q.ack("efficiency", ids)
    assert q.trim_floor() == ids[2]  # accuracy still has entry 3 pending
    sweep(q, ["accuracy", "efficiency"])
    assert [e[0].decode() for e in r.xrange(KEYS.stream)] == ids[2:]
    assert len(q.read("accuracy", "c1", 100, 1)) == 7  # nothing undelivered was lost


def test_the_trim_floor_is_a_groups_oldest_pending_entry_not_its_newest(r):
    """A group with several entries pending (a crashed consumer's read) keeps the oldest of them."""
    q = WorkQueue(r, KEYS)
    ids = [add_batch(r, "m", s) for s in range(1, 7)]
    q.read("accuracy", "crashed", 4, 1)
    q.ack("accuracy", [ids[1], ids[2]])  # ids[0] and ids[3] stay pending
    q.read("efficiency", "c", 6, 1)
    q.ack("efficiency", ids)
    assert q.trim_floor() == ids[0]
    assert q.trim() == 0 and r.xlen(KEYS.stream) == 6
    q.ack("accuracy", [ids[0]])
    assert q.trim_floor() == ids[3] and q.trim() == 3
    assert [e[0].decode() for e in r.xrange(KEYS.stream)] == ids[3:]


def test_trim_after_everything_is_acked(r, settings, make_worker):
    for s in range(1, 6):
        add_batch(r, "m", s)
    drain(make_worker("accuracy"), make_worker("efficiency"))
    q = WorkQueue(r, KEYS)
    assert q.trim() == 5 and r.xlen(KEYS.stream) == 0


def test_dead_letter_is_atomic_under_two_recoverers(r):
    q = WorkQueue(r, KEYS)
    q.ensure_group("accuracy")
    eid = add_batch(r, "m", 1)
    q.read("accuracy", "dead", 1, 1)
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def recover() -> None:
        own = WorkQueue(r.__class__(connection_pool=r.connection_pool), KEYS)
        barrier.wait()
        results.append(own.deadletter("accuracy", eid, 6, "test"))

    threads = [threading.Thread(target=recover) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    dl = q.dead_letters()
    assert len(dl) == 1
    assert dl[0][1]["src_id"] == eid and dl[0][1]["group"] == "accuracy" and dl[0][1]["m"] == "m"


def test_a_dead_consumers_entries_are_claimed_and_counted_once(r, make_settings, make_worker):
    s = make_settings(claim_idle_ms=50, read_count=4)
    for seq in range(1, 5):
        add_batch(r, "m", seq, n=3)
    WorkQueue(r, KEYS).ensure_group("accuracy")
    WorkQueue(r, KEYS).read("accuracy", "crashed", 2, 1)  # read 2, then "crash" without acking
    survivor = make_worker("accuracy", s)
    drain(survivor)
    assert applied_count(r, "m", "accuracy") == 6  # the 2 unclaimed-yet entries are still pending
    wait_idle(survivor.queue, "accuracy", 50, 2)
    assert survivor.recover() == 2
    assert applied_count(r, "m", "accuracy") == 12
    assert survivor.counters.claimed == 2
    assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0


def test_applied_but_not_acked_is_skipped_on_redelivery(r, make_settings, make_worker):
    s = make_settings(claim_idle_ms=50)
    add_batch(r, "m", 1, n=3)
    w = make_worker("accuracy", s)
    entries = w.queue.read("accuracy", w.consumer, 1, 1)
    e = envelope.parse(*entries[0])
    item = w._compute(w.queue, entries[0][0], e)
    keys, args = w._apply_args(item)
    assert w.queue.scripts.apply(keys=keys, args=args) == 1  # applied, then the worker dies before XACK
    wait_idle(w.queue, "accuracy", 50, 1)
    w2 = make_worker("accuracy", s)
    w2.recover()
    assert w2.counters.skipped == 1 and w2.counters.applied == 0
    assert applied_count(r, "m", "accuracy") == 3
    assert w.queue.scripts.apply(keys=keys, args=args) == 0  # the bit stops a second merge


def test_an_applied_entry_at_the_delivery_cap_is_acked_not_dead_lettered(r, make_settings, make_worker):
    """Consumers killed between apply and ack, every time: the cap must not call a settled batch poison.
    Its unapplied neighbour at the same count is dead-lettered as before."""
    s = make_settings(claim_idle_ms=50, max_deliveries=3)
    applied_id = add_batch(r, "m", 1, n=3)
    stuck_id = add_batch(r, "m", 2, n=2)
    w = make_worker("accuracy", s)
    entries = w.queue.read("accuracy", w.consumer, 2, 1)
    item = w._compute(w.queue, entries[0][0], envelope.parse(*entries[0]))
    keys, args = w._apply_args(item)
    assert w.queue.scripts.apply(keys=keys, args=args) == 1  # applied, never acked
    for _ in range(2):  # two more consumers took both and died: 3 deliveries each
        r.xclaim(KEYS.stream, "accuracy", "killed", 0, [applied_id, stuck_id])
    wait_idle(w.queue, "accuracy", 50, 2)
    w2 = make_worker("accuracy", s)
    w2.recover()
    dead = WorkQueue(r, KEYS).dead_letters()
    assert [d[1]["src_id"] for d in dead] == [stuck_id]
    assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0
    assert applied_count(r, "m", "accuracy") == 3 and w2.counters.dead_lettered == 1


def test_duplicate_stream_entries_of_one_sequence_apply_once(r, make_worker):
    add_batch(r, "m", 1, n=2)
    add_batch(r, "m", 1, n=2)  # a client retry after a gateway crash re-adds with the same seq
    w = make_worker("accuracy")
    drain(w)
    assert applied_count(r, "m", "accuracy") == 2 and w.counters.skipped == 1


def test_a_poison_entry_is_dead_lettered_and_replay_is_safe(r, make_worker):
    add_batch(r, "m", 1)
    r.xadd(KEYS.stream, {"v": "1", "m": "m", "s": "2", "e": b"\xff\xff not protobuf"})
    add_batch(r, "m", 3)
    acc, eff = make_worker("accuracy"), make_worker("efficiency")
    drain(acc, eff)
    assert applied_count(r, "m", "accuracy") == 4
    assert acc.counters.dead_lettered == 1 and eff.counters.dead_lettered == 1
    dl = WorkQueue(r, KEYS).dead_letters()
    assert sorted(d[1]["group"] for d in dl) == ["accuracy", "efficiency"]
    assert all("failed 3 times" in d[1]["reason"] and "DecodeError" in d[1]["reason"] for d in dl)
    assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0


def test_a_version_1_entry_with_the_header_inside_e_is_read_as_version_2(r, make_worker):
    """Entries accepted before the upgrade (v 1: e is the request followed by the header) apply as
    the same envelope; a version 2 entry without its header h is unreadable, not read without it."""
    v2_id = add_batch(r, "m", 1, n=3)
    ((_, v2),) = r.xrange(KEYS.stream)
    v1 = {b"v": b"1", b"m": b"m", b"s": b"2", b"f": v2[b"f"], b"e": v2[b"e"] + v2[b"h"].replace(b"b1", b"b2")}
    v1_id = r.xadd(KEYS.stream, v1).decode()
    old, new = envelope.parse(v1_id, v1).envelope(), envelope.parse(v2_id, v2).envelope()
    assert (old.batch_id, new.batch_id) == ("b2", "b1")
    new.batch_id = "b2"
    assert old == new and old.sequence == 1 and old.accept_time.seconds > 0 and len(old.predictions) == 3
    with pytest.raises(envelope.BadEntry, match="no 'h' field"):
        envelope.parse(v2_id, {k: v for k, v in v2.items() if k != b"h"})
    acc = make_worker("accuracy")
    drain(acc)
    assert applied_count(r, "m", "accuracy") == 6 and acc.counters.dead_lettered == 0


def test_replay_applies_once_for_the_family_that_gave_up(r, make_worker):
    add_batch(r, "m", 1, n=3)
    acc = make_worker("accuracy")
    eid = acc.queue.read("accuracy", acc.consumer, 1, 1)[0][0]
    assert acc.queue.deadletter("accuracy", eid, 6, "consumer kept crashing")
    eff = make_worker("efficiency")
    drain(eff)
    dl_id = WorkQueue(r, KEYS).dead_letters()[0][0]
    assert WorkQueue(r, KEYS).replay(dl_id) is not None
    assert WorkQueue(r, KEYS).dead_letters() == []
    assert WorkQueue(r, KEYS).replay(dl_id) is None
    drain(acc, eff)
    assert applied_count(r, "m", "accuracy") == 3
    assert eff.counters.skipped == 1  # efficiency had applied it before: the done bit skips it


def test_batches_for_other_families_are_acked_not_applied(r, make_worker):
    add_batch(r, "m", 1, families=("efficiency",))
    acc = make_worker("accuracy")
    drain(acc)
    assert acc.counters.applied == 0 and not r.exists(KEYS.stats("m", "accuracy", "all"))
    assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0


def test_backlog_counts_lag_and_pending(r):
    q = WorkQueue(r, KEYS)
    q.ensure_group("accuracy")
    for s in range(1, 6):
        add_batch(r, "m", s)
    q.read("accuracy", "c", 2, 1)
    assert q.backlog() == {"accuracy": 5, "efficiency": 5}


def test_a_batch_read_from_a_redis_that_restarted_without_it_is_not_applied(tmp_path, make_settings):
    """A worker holds entry X (seq 1) read from one Redis process; Redis restarts without it (the AOF
    had not written it) and the sequence number 1 goes to another batch B. Applying X to the new
    process would set seq 1's done bit with X's statistics and skip B for good; apply.lua applies
    only entries pending for the family on the Redis it runs on, so X is dropped and B counted."""
    from metric_services.runner import Worker
    from tests.conftest import start_redis

    proc, sock = start_redis(tmp_path)
    r = redis.Redis(unix_socket_path=sock)
    try:
        add_batch(r, "m", 1, n=2, batch_id="x")
        w = Worker("accuracy", make_settings(redis_url=f"unix://{sock}"), redis.Redis(unix_socket_path=sock))
        entries = w.queue.read("accuracy", w.consumer, 10, 1)
        assert len(entries) == 1
        proc.kill()
        proc.wait()
        proc, _ = start_redis(tmp_path)  # same socket, empty: what was not written is gone
        add_batch(r, "m", 1, n=3, batch_id="b")
        w.process(entries)
        assert w.counters.applied == 0 and not r.getbit(KEYS.done("m", "accuracy"), 1)
        assert drain(w) == 1
        assert w.counters.applied == 1 and applied_count(r, "m", "accuracy") == 3
    finally:
        r.close()
        proc.kill()
        proc.wait()


def test_apply_survives_redis_losing_its_scripts_mid_pipeline(r, make_worker, monkeypatch):
    """The worker sends apply.lua by EVALSHA in a pipeline; a Redis restarted since it last ran the
    script has an empty script cache and answers NOSCRIPT. This killed both workers of the fault test
    once; the worker now loads the script and sends the pipeline again. The restart is played by
    SCRIPT FLUSH just before the pipeline is sent."""
    add_batch(r, "m", 1, n=3)
    w = make_worker("accuracy")
    execute = redis.client.Pipeline.execute
    flushed: list[bool] = []

    def lose_then_execute(self: redis.client.Pipeline, *args: Any, **kwargs: Any) -> list[Any]:
        if not flushed and any(c[0][0] == "EVALSHA" for c in self.command_stack):
            flushed.append(True)
            r.script_flush()
        return execute(self, *args, **kwargs)

    monkeypatch.setattr(redis.client.Pipeline, "execute", lose_then_execute)
    assert drain(w) == 1
    assert flushed and w.counters.applied == 1 and applied_count(r, "m", "accuracy") == 3


def test_trim_floor_when_a_group_acked_everything_between_xinfo_and_xpending(r, monkeypatch):
    # issue 14, defect 10: XINFO GROUPS said "1 pending", then the worker acked it before the janitor's
    # XPENDING, whose reply for a group with nothing pending is {pending: 0, min: None, ...}.
    q = WorkQueue(r, KEYS)
    ids = [add_batch(r, "m", s) for s in range(1, 4)]
    q.read("efficiency", "c2", 10, 1)
    q.ack("efficiency", ids)
    got = q.read("accuracy", "c1", 2, 1)  # entries 1 and 2 delivered, 3 not
    stale = q.groups()  # accuracy: 2 pending
    assert {str(g["name"]): int(g["pending"]) for g in stale} == {"accuracy": 2, "efficiency": 0}  # type: ignore[call-overload]
    q.ack("accuracy", [got[0][0], got[1][0]])  # ... and now nothing is pending
    monkeypatch.setattr(q, "groups", lambda: stale)
    # everything up to entry 2 is done for both groups: the floor is just after it, entry 3 stays
    assert q.trim_floor() == next_id(ids[1])
    assert q.trim() == 2
    assert [e[0].decode() for e in r.xrange(KEYS.stream)] == ids[2:]
