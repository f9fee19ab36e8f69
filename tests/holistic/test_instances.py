"""Per-instance state: reduced slots, minute attribution, aggregate deltas, compare-and-set apply."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping

import pytest

from holistic.families import one_pass
from holistic.families.signature import signature_id
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.redis.keys import Keys
from holistic.stats.instance_state import State
from holistic.stats.instances import (
    COUNT_FIELD,
    LATE,
    OVER_CAP,
    SEP,
    InstanceStore,
    Row,
    aggregate,
    deltas,
    fold_rows,
    merge,
)
from holistic.stats.mergeable import Folded, Stats
from metric_services.runner import Worker
from metric_services.shared.worst_case import SPEC
from metric_services.work import Work
from tests.conftest import drain
from tests.factories import prediction

DAY = 86_400
NOW = time.time() - 600


class MaxToxicity:
    """A toxicity-like spec: per instance the max over completions, and a threshold count."""

    def reducer(self, slot: str) -> str:
        return "max"

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        return {"tox": max(slots.values())}

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return (0.5,)


def flat(by_minute: dict[int, Stats]) -> dict[int, dict[str, float]]:
    return {m: dict(Folded.from_stats(st)) for m, st in by_minute.items()}


@pytest.mark.parametrize("value", [0.1 + 0.2, 1 / 3, 0.012345678901234567, 1e-300, 5e-324, -0.0, 1.0])
def test_state_round_trips_exactly(value):
    """Every float back bit for bit, with one slot (its own path) and with several (sorted)."""
    for slots in ({"o": value}, {"o": 1.0, "p:typos": value, "p:a=b": 0.1}):
        s = State(29_000_000, slots)
        back = State.decode(s.encode())
        signs = {k: math.copysign(1, v) for k, v in back.slots.items()}
        assert back == s and signs == {k: math.copysign(1, v) for k, v in slots.items()}
    assert State.decode(State(7).encode()) == State(7)


def test_merge_reduces_each_slot_and_keeps_the_earliest_minute():
    old = State(10, {"o": 1.0, "p:typos": 0.5})
    new = merge(SPEC, old, State(7, {"p:typos": 0.2, "p:lower": 1.0}))
    assert new == State(7, {"o": 1.0, "p:typos": 0.2, "p:lower": 1.0})
    assert merge(MaxToxicity(), State(3, {"c": 0.4}), State(5, {"c": 0.9})) == State(3, {"c": 0.9})


def test_a_variant_lowers_the_worst_case_by_a_delta():
    inst = SEP.join(("mmlu", "exact_match", "q1"))
    old = State(100, {"o": 1.0})
    new = merge(SPEC, old, State(101, {"p:typos": 0.0}))
    out: dict[int, Stats] = {}
    deltas(SPEC, inst, old, new, out)
    f = flat(out)[100]
    # worst: 1 -> min(1, 0) = 0: n unchanged (+1 - 1), sum 0 - 1 = -1, sumsq 0 - 1 = -1
    assert f["mmlu|exact_match|worst|n"] == 0 and f["mmlu|exact_match|worst|sum"] == -1.0
    assert f["mmlu|exact_match|worst|sumsq"] == -1.0
    # the variant's own quantities appear: worst min(1, 0) = 0, before 1, perturbed 0
    assert f["mmlu|exact_match|p:typos|worst|n"] == 1 and f["mmlu|exact_match|p:typos|worst|sum"] == 0.0
    assert f["mmlu|exact_match|p:typos|before|sum"] == 1.0
    assert f["mmlu|exact_match|orig|n"] == 0  # unchanged: +1 - 1


def test_an_earlier_row_moves_the_instance_to_its_minute():
    inst = SEP.join(("s", "m", "q"))
    old = State(200, {"p:typos": 0.5})
    new = merge(SPEC, old, State(150, {"o": 1.0}))
    out: dict[int, Stats] = {}
    deltas(SPEC, inst, old, new, out)
    f = flat(out)
    assert f[200]["s|m|worst|n"] == -1 and f[200]["s|m|worst|sum"] == -0.5
    assert f[150]["s|m|worst|n"] == 1 and f[150]["s|m|worst|sum"] == 0.5  # min(1, 0.5)
    assert f[150]["s|m|orig|sum"] == 1.0


def test_thresholds_count_instances_at_or_above():
    rows = [Row("a", "c", 0.2, 1), Row("a", "c", 0.7, 1), Row("b", "c", 0.5, 1), Row("c", "c", 0.1, 2)]
    f = flat(aggregate(MaxToxicity(), fold_rows(MaxToxicity(), rows)))
    # per-instance max: a 0.7, b 0.5 (minute 1), c 0.1 (minute 2); >= 0.5: a and b
    assert f[1] == {"tox|n": 2, "tox|sum": 1.2, "tox|sumsq": pytest.approx(0.74), "tox|ge:0.5": 2}
    assert f[2] == {"tox|n": 1, "tox|sum": 0.1, "tox|sumsq": pytest.approx(0.01)}  # nothing >= 0.5


def test_new_instances_add_their_values_and_squares():
    # worst case (no thresholds): a 0.5 and b 0.25 in minute 1, c 0.75 in minute 2; binary fractions, exact
    a, b, c = (SEP.join(("s", "m", q)) for q in "abc")
    rows = [Row(a, "o", 0.5, 1), Row(b, "o", 0.25, 1), Row(c, "o", 0.75, 2)]
    f = flat(aggregate(SPEC, fold_rows(SPEC, rows)))
    assert (f[1]["s|m|worst|n"], f[1]["s|m|worst|sum"], f[1]["s|m|worst|sumsq"]) == (2, 0.75, 0.3125)
    assert (f[2]["s|m|worst|n"], f[2]["s|m|worst|sum"], f[2]["s|m|worst|sumsq"]) == (1, 0.75, 0.5625)


def _apply(worker: Worker, store: InstanceStore, rows: list[Row], seq: int, accept_s: float = 0.0) -> int:
    plan = store.plan("m", SPEC, rows, accept_s)
    w = Work("0-1", type("E", (), {"model": "m", "seq": seq})(), f"b{seq}", len(rows), {}, None, accept_s)
    keys, args = worker._apply_args(w, plan.by_minute, plan.hashes)
    return int(worker.queue.scripts.apply(keys=keys, args=args))


def test_a_stale_read_writes_nothing_and_retries(make_worker, settings, r):
    worker = make_worker("robustness")
    store = InstanceStore(r, Keys(settings.key_prefix), "robustness", settings.instance_ttl_s, 100)
    inst = SEP.join(("s", "exact_match", "q"))
    plan_a = store.plan("m", SPEC, [Row(inst, "o", 1.0, 5)], 0)
    plan_b = store.plan("m", SPEC, [Row(inst, "p:typos", 0.0, 5)], 0)  # read the same (empty) state
    assert _apply(worker, store, [Row(inst, "o", 1.0, 5)], 1) == 1 and plan_a.hashes
    w = Work("0-2", type("E", (), {"model": "m", "seq": 2})(), "b2", 1, {}, None, 0)
    keys, args = worker._apply_args(w, plan_b.by_minute, plan_b.hashes)
    assert int(worker.queue.scripts.apply(keys=keys, args=args)) == -1  # creation raced: nothing written
    assert not r.getbit(Keys(settings.key_prefix).done("m", "robustness"), 2)
    assert _apply(worker, store, [Row(inst, "p:typos", 0.0, 5)], 2) == 1  # re-read, re-planned
    f = Folded.from_hashes([r.hgetall(Keys(settings.key_prefix).stats("m", "robustness", "all"))])
    assert f["s|exact_match|worst|n"] == 1 and f["s|exact_match|worst|sum"] == 0.0  # min(1, 0), counted once
    assert f["s|exact_match|orig|sum"] == 1.0


def _at(r, when: float) -> float:
    """The offset that puts a store's view of Redis's clock at `when` (seconds since the epoch)."""
    seconds, micros = r.time()
    return when - (seconds + micros / 1e6)


@pytest.mark.parametrize(
    ("ours", "rival"),
    [
        (100 * DAY + 3600.0, 100 * DAY + 3600.0),  # the same day: both create in today's hash
        (101 * DAY - 60.0, 101 * DAY + 60.0),  # a rival already past midnight (a clock step)
        (100 * DAY + 60.0, 100 * DAY - 60.0),  # a rival not yet past it
    ],
)
def test_a_rival_cannot_create_an_instance_twice(make_worker, settings, r, ours, rival):
    """A rival replica creates the instance between our read and our apply, in its day's hash: our
    apply writes nothing, and once re-planned counts the instance once. Replicas share Redis's clock;
    a rival on the other side of midnight (a clock step, a failover) is caught within CLOCK_STEP_S."""
    worker = make_worker("robustness")
    keys = Keys(settings.key_prefix)
    store = InstanceStore(r, keys, "robustness", 2 * DAY, 100, offset_s=_at(r, ours))
    rival_store = InstanceStore(r, keys, "robustness", 2 * DAY, 100, offset_s=_at(r, rival))
    inst = SEP.join(("s", "exact_match", "q"))
    stale = store.plan("m", SPEC, [Row(inst, "p:typos", 0.0, 5)], 0)  # the instance is absent everywhere
    assert _apply(worker, rival_store, [Row(inst, "o", 1.0, 5)], 1) == 1
    assert r.hexists(keys.instances("m", "robustness", int(rival // DAY)), inst)
    w = Work("0-2", type("E", (), {"model": "m", "seq": 2})(), "b2", 1, {}, None, 0)
    k, args = worker._apply_args(w, stale.by_minute, stale.hashes)
    assert int(worker.queue.scripts.apply(keys=k, args=args)) == -1
    assert _apply(worker, store, [Row(inst, "p:typos", 0.0, 5)], 2) == 1
    f = Folded.from_hashes([r.hgetall(keys.stats("m", "robustness", "all"))])
    assert f["s|exact_match|worst|n"] == 1 and f["s|exact_match|worst|sum"] == 0.0


def test_a_plan_for_yesterday_applied_after_midnight_writes_nothing(make_worker, settings, r):
    """'@': a new instance is created only while Redis's day is the one its plan read (else a rival
    that read after midnight could create it in the new day's hash without seeing ours)."""
    worker = make_worker("robustness")
    keys = Keys(settings.key_prefix)
    store = InstanceStore(r, keys, "robustness", 2 * DAY, 100, offset_s=_at(r, 101 * DAY - 0.2))
    inst = SEP.join(("s", "exact_match", "q"))
    plan = store.plan("m", SPEC, [Row(inst, "o", 1.0, 5)], 0)
    assert any("@" in ops[0::3] for _, ops in plan.hashes.values())
    time.sleep(0.3)  # midnight passes between the read and the apply
    w = Work("0-1", type("E", (), {"model": "m", "seq": 1})(), "b1", 1, {}, None, 0)
    k, args = worker._apply_args(w, plan.by_minute, plan.hashes)
    assert int(worker.queue.scripts.apply(keys=k, args=args)) == -1
    assert not r.exists(keys.instances("m", "robustness", 100))
    assert _apply(worker, store, [Row(inst, "o", 1.0, 5)], 1) == 1  # re-planned: in the new day's hash
    assert r.hexists(keys.instances("m", "robustness", 101), inst)


@pytest.mark.parametrize(("into_day", "checked_days"), [(3600.0, (100,)), (DAY - 60.0, (100, 101)), (60.0, (99, 100))])
def test_a_new_instance_is_checked_absent_in_redis_today_and_near_midnight_the_other_day(
    make_worker, settings, r, into_day, checked_days
):
    """One 'n' (absent, then set) in today's hash, plus a '!' in the neighbouring day's within
    CLOCK_STEP_S of midnight; older hashes are read (live days) but get no conditions."""
    store = InstanceStore(
        r, Keys(settings.key_prefix), "robustness", 4 * DAY, 100, offset_s=_at(r, 100 * DAY + into_day)
    )
    inst = SEP.join(("s", "em", "q"))
    plan = store.plan("m", SPEC, [Row(inst, "o", 1.0, 5)], 0)
    keys = Keys(settings.key_prefix)
    conditions = {
        k: [(op, field) for op, field in zip(ops[0::3], ops[1::3], strict=True) if op in "!n"]
        for k, (_, ops) in plan.hashes.items()
    }
    today = keys.instances("m", "robustness", 100)
    assert conditions.pop(today) == [("n", inst)]
    assert {k: v for k, v in conditions.items() if v} == {
        keys.instances("m", "robustness", d): [("!", inst)] for d in checked_days if d != 100
    }
    assert len(store.live_days(100 * DAY + into_day)) == 6  # 96..101


def test_the_day_is_redis_s_whatever_the_worker_s_clock_says(make_worker, settings, r, monkeypatch):
    """A worker whose clock is a day ahead still creates instances in Redis's today (its first guess
    of the days to read is wrong, and read again), so it and an on-time replica agree on the hash."""
    worker = make_worker("robustness")
    keys = Keys(settings.key_prefix)
    real = time.time
    monkeypatch.setattr("holistic.stats.instances.time.time", lambda: real() + DAY)
    store = InstanceStore(r, keys, "robustness", 2 * DAY, 100)
    inst = SEP.join(("s", "em", "q"))
    assert _apply(worker, store, [Row(inst, "o", 1.0, 5)], 1) == 1
    today = int(r.time()[0] // DAY)
    assert r.hexists(keys.instances("m", "robustness", today), inst)
    assert not r.exists(keys.instances("m", "robustness", today + 1))


def test_state_hashes_expire_after_the_ttl_and_count_their_instances(make_worker, settings, r):
    worker = make_worker("robustness")
    now = 100 * DAY + 3600.0
    store = InstanceStore(r, Keys(settings.key_prefix), "robustness", 2 * DAY, 100, offset_s=_at(r, now))
    assert store.live_days(now) == [98, 99, 100, 101]
    rows = [Row(SEP.join(("s", "em", f"q{i}")), "o", 1.0, 5) for i in range(3)]
    assert _apply(worker, store, rows, 1) == 1
    key = Keys(settings.key_prefix).instances("m", "robustness", 100)
    assert int(r.hget(key, COUNT_FIELD)) == 3
    assert abs(r.ttl(key) - (101 * DAY + 2 * DAY - int(now))) <= 2  # lives until its day ends, then the TTL


def test_the_cap_leaves_new_instances_out_and_counts_their_rows(make_worker, settings, r):
    worker = make_worker("robustness")
    store = InstanceStore(r, Keys(settings.key_prefix), "robustness", settings.instance_ttl_s, 2)
    rows = [Row(SEP.join(("s", "em", q)), slot, 1.0, 5) for q in ("a", "b", "c") for slot in ("o", "p:t")]
    assert _apply(worker, store, rows, 1) == 1
    f = Folded.from_hashes([r.hgetall(Keys(settings.key_prefix).stats("m", "robustness", "all"))])
    assert f["s|em|worst|n"] == 2  # a and b (sorted first) fit under the cap of 2
    assert f[OVER_CAP] == 2  # both rows of c
    # an existing instance still takes rows past the cap
    assert _apply(worker, store, [Row(SEP.join(("s", "em", "a")), "p:t", 0.0, 5)], 2) == 1
    f = Folded.from_hashes([r.hgetall(Keys(settings.key_prefix).stats("m", "robustness", "all"))])
    assert f["s|em|worst|sum"] == 1.0  # a: min(1, 1, 0) = 0, b: 1


def test_rows_older_than_the_ttl_are_counted_late(make_worker, settings, r):
    worker = make_worker("robustness")
    store = InstanceStore(r, Keys(settings.key_prefix), "robustness", DAY, 100)
    accept_s = 10 * DAY
    rows = [Row(SEP.join(("s", "em", "a")), "p:t", 1.0, (accept_s - DAY - 120) // 60)]
    assert _apply(worker, store, rows, 1, accept_s) == 1
    f = Folded.from_hashes([r.hgetall(Keys(settings.key_prefix).stats("m", "robustness", "all"))])
    assert f[LATE] == 1


def test_concurrent_replicas_give_the_one_pass_aggregates(gateway, make_worker, make_settings, r):
    """Originals and variants of the same instances in different batches, applied by 3 threads."""
    from holistic.v1 import prediction_pb2 as pb

    preds = []
    for i in range(60):
        preds.append(prediction(f"q{i}", output="Paris" if i % 3 else "Rome", produced_at_s=NOW + i))
        for name in ("typos", "lowercase"):
            v = prediction(f"q{i}~{name}", output="Rome" if i % 2 else "Paris", produced_at_s=NOW + i + 1)
            v.perturbation.name, v.perturbation.original_id = name, f"q{i}"
            v.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
            preds.append(v)
    settings = make_settings(read_count=1)
    with gateway.client() as client:
        for b in range(0, len(preds), 7):
            client.submit(preds[b : b + 7], batch_id=f"b{b}", model="m")
    workers = [make_worker("robustness", settings) for _ in range(3)]
    threads = [threading.Thread(target=drain, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(w.counters.applied for w in workers) == len(range(0, len(preds), 7))
    env = BatchEnvelope(model="m", predictions=preds)
    expected = dict(Folded.from_stats(one_pass(workers[0].family, env, settings)))
    got, signatures = Folded.from_hashes(
        [r.hgetall(Keys(settings.key_prefix).stats("m", "robustness", "all"))]
    ).split_signatures()
    assert signatures == {signature_id(workers[0].family.signature("m", settings)): len(preds)}
    nonzero = {k: v for k, v in got.items() if v}
    assert set(nonzero) == {k for k, v in expected.items() if v}, set(nonzero) ^ {k for k, v in expected.items() if v}
    assert nonzero == pytest.approx({k: v for k, v in expected.items() if v})
    # 60 instances; worst is 1 only where the original and both variants are right:
    # original right unless i % 3 == 0, variants right when i is even -> i in {2,4,8,10,...}: 20 of 60
    assert got["mmlu|exact_match|worst|n"] == 60 and got["mmlu|exact_match|worst|sum"] == 20


# --- segment cells (holistic/stats/segments.py) ---------------------------------------------------------


@pytest.mark.parametrize("value", ["=eu", "*", "=a\x1eb\x1fc", "=%251E;x=1.0", "=;=|"])
def test_a_state_keeps_its_cells_and_a_state_without_cells_reads_and_writes_as_before(value):
    state = State(7, {"o": 1.0, "p:typos": 0.5}, {"region": value, "tier": "=pro"})
    assert State.decode(state.encode()) == state
    assert State(7, {"o": 1.0}).encode() == "7;o=1.0"  # the text of every state written before cells
    assert State.decode("7;o=1.0;p:typos=0.5") == State(7, {"o": 1.0, "p:typos": 0.5})


def test_an_instance_is_in_the_least_cell_its_rows_carry_in_any_order():
    """Rows of one instance that disagree (or lack the key): per key the least cell, whatever the order."""
    inst = SEP.join(("s", "em", "q"))
    parts = [
        (Row(inst, "o", 1.0, 5), {"region": "=us"}),
        (Row(inst, "p:typos", 0.0, 4), {"region": "=eu", "tier": "=pro"}),
        (Row(inst, "p:dialect", 1.0, 6), {}),
    ]
    seen = set()
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        state = None
        for i in order:
            row, cells = parts[i]
            state = merge(SPEC, state, fold_rows(SPEC, [row], {inst: cells})[inst])
        seen.add(state.encode())
    assert len(seen) == 1 and State.decode(seen.pop()).cells == {"region": "=eu", "tier": "=pro"}


def test_an_old_instance_row_without_cells_moves_into_its_cell_and_the_whole_is_unchanged(make_worker, settings, r):
    """A state written before cells (no cells in its text) meets a row with a cell that changes no value:
    the instance's contribution is added under the cell, and the whole's sums are what they were."""
    worker = make_worker("robustness")
    keys = Keys(settings.key_prefix)
    store = InstanceStore(r, keys, "robustness", settings.instance_ttl_s, 100)
    inst = SEP.join(("s", "em", "q"))
    assert _apply(worker, store, [Row(inst, "o", 0.5, 5)], 1) == 1  # as an old worker wrote it
    day = int(r.time()[0]) // DAY
    assert b"5;o=0.5" in [r.hget(keys.instances("m", "robustness", d), inst) for d in (day - 1, day)]
    plan = store.plan("m", SPEC, [Row(inst, "o", 0.5, 5)], 0, {inst: {"region": "=eu"}})
    f = flat(plan.by_minute)[5]
    assert {k: v for k, v in f.items() if k.startswith("#seg")} == {
        "#seg|region|=eu|s|em|worst|n": 1, "#seg|region|=eu|s|em|worst|sum": 0.5,
        "#seg|region|=eu|s|em|worst|sumsq": 0.25, "#seg|region|=eu|s|em|orig|n": 1,
        "#seg|region|=eu|s|em|orig|sum": 0.5, "#seg|region|=eu|s|em|orig|sumsq": 0.25,
    }  # fmt: skip
    assert all(v == 0 for k, v in f.items() if not k.startswith("#seg"))  # taken back and added again
    w = Work("0-2", type("E", (), {"model": "m", "seq": 2})(), "b2", 1, {}, None, 0)
    k, args = worker._apply_args(w, plan.by_minute, plan.hashes)
    assert int(worker.queue.scripts.apply(keys=k, args=args)) == 1
    stats = Folded.from_hashes([r.hgetall(keys.stats("m", "robustness", "all"))])
    assert (stats["s|em|worst|n"], stats["s|em|worst|sum"]) == (1, 0.5)
    assert (stats["#seg|region|=eu|s|em|worst|n"], stats["#seg|region|=eu|s|em|worst|sum"]) == (1, 0.5)
    # the same row again changes nothing: no op, no delta
    assert store.plan("m", SPEC, [Row(inst, "o", 0.5, 5)], 0, {inst: {"region": "=eu"}}).by_minute == {}


def test_a_cell_gets_the_quantities_thresholds():
    rows = [Row("a", "c", 0.7, 1), Row("b", "c", 0.2, 1)]
    f = flat(aggregate(MaxToxicity(), fold_rows(MaxToxicity(), rows, {"a": {"k": "=x"}, "b": {"k": "=x"}})))
    assert {k: v for k, v in f[1].items() if k.startswith("#seg")} == {
        "#seg|k|=x|tox|n": 2, "#seg|k|=x|tox|sum": pytest.approx(0.9), "#seg|k|=x|tox|sumsq": pytest.approx(0.53),
        "#seg|k|=x|tox|ge:0.5": 1,
    }  # fmt: skip
