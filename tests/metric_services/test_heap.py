"""A worker's own process freezes its heap at start and once more after its first entries
(metric_services/heap.py); a worker run inside another process (tests, embedding) leaves the heap alone."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

import pytest
import redis

from metric_services import heap
from metric_services.runner import Worker
from tests.holistic.test_workqueue import add_batch


def test_settle_freezes_what_exists() -> None:
    before = gc.get_freeze_count()
    kept = [[i] for i in range(1000)]  # tracked objects alive now
    try:
        heap.settle()
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("settle", [True, False])
def test_worker_settles_at_start_and_after_its_first_entries(
    settle: bool,
    make_worker: Callable[..., Worker],
    r: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = make_worker("accuracy")
    calls: list[int] = []  # entries the worker had handled at each settle
    monkeypatch.setattr(heap, "settle", lambda: calls.append(worker.counters.applied))
    thread = threading.Thread(target=worker.run, kwargs={"settle_heap": settle}, daemon=True)
    thread.start()
    try:
        _wait(lambda: worker.counters.applied == 0 and (calls or not settle))
        add_batch(r, "m", 1)
        _wait(lambda: worker.counters.applied == 1)
        add_batch(r, "m", 2)
        _wait(lambda: worker.counters.applied == 2)
    finally:
        worker.stopping.set()
        thread.join(10)
    assert calls == ([0, 1] if settle else [])


def _wait(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout_s / 0.01)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("condition not met in time")
