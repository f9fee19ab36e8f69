"""The worker loop's hooks: what a middleware sees, in order, for applied, skipped and dead-lettered batches."""

from __future__ import annotations

from metric_services.middleware import Hooks
from metric_services.runner import Applied
from tests.holistic.test_workqueue import add_batch


class Recorder(Hooks):
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def after_compute(self, worker, seconds):
        assert seconds >= 0
        self.calls.append(("compute",))

    def before_apply(self, worker, batch_ids):
        self.calls.append(("before_apply", tuple(batch_ids)))

    def after_apply(self, worker, applied: list[Applied], seconds):
        self.calls.append(("after_apply", tuple((a.batch_id, a.seq, a.predictions, a.merged) for a in applied)))

    def before_ack(self, worker, batch_ids):
        self.calls.append(("before_ack", tuple(batch_ids)))

    def after_skip(self, worker, count):
        self.calls.append(("skip", count))

    def after_dead_letter(self, worker, entry_id, reason):
        self.calls.append(("dead_letter", reason.split(":")[0]))


def test_hooks_see_each_step_in_order(r, make_settings, make_worker):
    rec = Recorder()
    w = make_worker("accuracy", make_settings(read_ahead_ms=0), middleware=[rec])  # a read takes up to 16
    add_batch(r, "m", 1, n=3)
    add_batch(r, "m", 1, n=3, batch_id="b1-again")  # a re-added copy of sequence 1: skipped by the done bit
    assert w.step(block_ms=1) == 2  # both in one read
    assert rec.calls == [
        ("compute",),
        ("skip", 1),
        ("before_apply", ("b1",)),
        ("after_apply", (("b1", 1, 3, True),)),
        ("before_ack", ("b1",)),
    ]
    assert (w.counters.applied, w.counters.skipped) == (1, 1)


def test_a_poison_batch_reaches_the_dead_letter_hook(r, make_worker, monkeypatch):
    rec = Recorder()
    w = make_worker("accuracy", middleware=[rec])

    def broken(envelope, settings):
        raise ValueError("a family bug")

    monkeypatch.setattr(w.family, "compute", broken)
    add_batch(r, "m", 1)
    w.step(block_ms=1)
    assert ("dead_letter", "accuracy failed 3 times") in rec.calls
    assert not any(c[0] == "after_apply" for c in rec.calls) and w.counters.dead_lettered == 1
