"""A log line per applied batch (with its trace context) and per dead letter, structured for JSON logs."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from metric_services.middleware import Hooks

if TYPE_CHECKING:
    from metric_services.runner import Applied, Worker

log = logging.getLogger("holistic.worker")


class Logs(Hooks):
    def after_apply(self, worker: Worker, applied: list[Applied], seconds: float) -> None:
        for a in applied:
            if a.merged:
                log.info(
                    "applied batch_id=%s model=%s family=%s seq=%d n=%d traceparent=%s",
                    a.batch_id, a.model, worker.group, a.seq, a.predictions, a.traceparent,
                    extra={"batch_id": a.batch_id, "model": a.model, "family": worker.group,
                           "seq": a.seq, "predictions": a.predictions, "traceparent": a.traceparent},
                )  # fmt: skip

    def after_dead_letter(self, worker: Worker, entry_id: str, reason: str) -> None:
        log.error("dead-lettered %s for %s: %s", entry_id, worker.group, reason,
                  extra={"family": worker.group, "entry_id": entry_id})  # fmt: skip
