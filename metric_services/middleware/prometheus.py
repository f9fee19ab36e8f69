"""Prometheus counters and histograms of a worker, labelled by family (holistic/process/observability.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from holistic.process.observability import (
    APPLIED,
    APPLIED_PREDICTIONS,
    APPLY_SECONDS,
    CLAIMED,
    COMPUTE_SECONDS,
    DEAD_LETTERED,
    SKIPPED,
)
from metric_services.middleware import Hooks

if TYPE_CHECKING:
    from metric_services.runner import Applied, Worker


class Prometheus(Hooks):
    def after_compute(self, worker: Worker, seconds: float) -> None:
        COMPUTE_SECONDS.labels(worker.group).observe(seconds)

    def after_apply(self, worker: Worker, applied: list[Applied], seconds: float) -> None:
        APPLY_SECONDS.labels(worker.group).observe(seconds)
        for a in applied:
            if a.merged:
                APPLIED.labels(worker.group).inc()
                APPLIED_PREDICTIONS.labels(worker.group).inc(a.predictions)
            else:
                SKIPPED.labels(worker.group).inc()

    def after_skip(self, worker: Worker, count: int) -> None:
        SKIPPED.labels(worker.group).inc(count)

    def after_claim(self, worker: Worker, entry_id: str) -> None:
        CLAIMED.labels(worker.group).inc()

    def after_dead_letter(self, worker: Worker, entry_id: str, reason: str) -> None:
        DEAD_LETTERED.labels(worker.group).inc()
