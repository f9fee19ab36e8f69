"""How many entries a worker read claims: hand-worked pacing, and replicas sharing a backlog on a real Redis."""

from __future__ import annotations

import time

import pytest

from metric_services.read_pace import ReadPace
from tests.holistic.test_workqueue import add_batch


def test_the_first_read_claims_one_then_what_fits_the_read_ahead():
    pace = ReadPace(most=16, ahead_s=0.2)
    assert pace.count() == 1  # nothing known yet: one entry
    pace.observe(1, 0.01)  # 10 ms an entry: 0.2 s holds 20, capped at 16
    assert pace.count() == 16
    pace.observe(4, 0.2)  # 50 ms an entry: the running figure is (50 + 10) / 2 = 30 ms -> 6 entries
    assert pace.per_entry_s == pytest.approx(0.03) and pace.count() == 6
    pace.observe(1, 1.57)  # a slow batch: (1570 + 30) / 2 = 800 ms -> one at a time
    assert pace.count() == 1


def test_no_read_ahead_means_the_fixed_count():
    pace = ReadPace(most=16, ahead_s=0)
    assert pace.count() == 16
    pace.observe(1, 100.0)
    assert pace.count() == 16


def slow(worker, seconds: float):
    compute = worker.family.compute

    def slowed(envelope, settings):
        end = time.process_time() + seconds  # at least this much CPU: the pacing does not depend on the machine
        while time.process_time() < end:
            pass
        return compute(envelope, settings)

    worker.family.compute = slowed
    return worker


def test_replicas_of_a_slow_family_share_a_backlog(r, make_settings, make_worker):
    for seq in range(1, 7):
        add_batch(r, "m", seq, families=("accuracy",))
    s = make_settings(read_count=16, read_ahead_ms=20)  # each batch takes >= 50 ms of CPU: one at a time
    a = slow(make_worker("accuracy", s), 0.05)
    b = slow(make_worker("accuracy", s), 0.05)
    handled = {a.consumer: 0, b.consumer: 0}
    for _ in range(3):
        for w in (a, b):
            handled[w.consumer] += w.step(block_ms=1)
    assert list(handled.values()) == [3, 3]  # with a fixed count of 16, a would take all six at once
    assert a.step(block_ms=1) == 0 and a.counters.applied == b.counters.applied == 3


def test_a_cheap_family_still_reads_many_at_a_time(r, make_settings, make_worker):
    for seq in range(1, 12):
        add_batch(r, "m", seq, families=("accuracy",))
    w = make_worker("accuracy", make_settings(read_count=4, read_ahead_ms=60_000))
    assert [w.step(block_ms=1) for _ in range(5)] == [1, 4, 4, 2, 0]
