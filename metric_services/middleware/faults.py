"""Fault injection for the crash tests (HOLISTIC_FAULTS, metric_services/fault_plan.py): SIGKILL of the worker
before a read's batches are applied, or between the apply and the acknowledgement."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metric_services.fault_plan import Faults
from metric_services.middleware import Hooks

if TYPE_CHECKING:
    from metric_services.runner import Worker


class FaultInjection(Hooks):
    def __init__(self, faults: Faults) -> None:
        self.faults = faults

    def before_apply(self, worker: Worker, batch_ids: list[str]) -> None:
        self.faults.at("before_apply", batch_ids)

    def before_ack(self, worker: Worker, batch_ids: list[str]) -> None:
        self.faults.at("after_apply", batch_ids)
