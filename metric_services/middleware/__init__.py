"""What hangs around the worker loop (dramatiq's middleware is the model): metrics, logs and fault
injection hook in before and after the loop's steps, and the loop (metric_services/runner.py) keeps
only the loop. A hook that does nothing costs a method call; Worker(middleware=[...]) chooses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from metric_services.runner import Applied, Worker


class Middleware(Protocol):
    def after_compute(self, worker: Worker, seconds: float) -> None:
        """A batch's statistics were computed in `seconds`."""

    def before_apply(self, worker: Worker, batch_ids: list[str]) -> None:
        """The read's batches are about to be applied (a crash here leaves them pending)."""

    def after_apply(self, worker: Worker, applied: list[Applied], seconds: float) -> None:
        """The apply scripts ran: each batch with whether it was merged (False: another replica's)."""

    def before_ack(self, worker: Worker, batch_ids: list[str]) -> None:
        """Applied, not yet acknowledged (a crash here redelivers batches already applied)."""

    def after_skip(self, worker: Worker, count: int) -> None:
        """Entries applied before (done bit), or of a model deleted since (its tombstone), were acknowledged
        without work."""

    def after_claim(self, worker: Worker, entry_id: str) -> None:
        """A crashed consumer's entry was claimed."""

    def after_dead_letter(self, worker: Worker, entry_id: str, reason: str) -> None:
        """An entry went to the dead-letter stream."""


class Hooks:
    """Default no-op hooks to subclass."""

    def after_compute(self, worker: Worker, seconds: float) -> None: ...
    def before_apply(self, worker: Worker, batch_ids: list[str]) -> None: ...
    def after_apply(self, worker: Worker, applied: list[Applied], seconds: float) -> None: ...
    def before_ack(self, worker: Worker, batch_ids: list[str]) -> None: ...
    def after_skip(self, worker: Worker, count: int) -> None: ...
    def after_claim(self, worker: Worker, entry_id: str) -> None: ...
    def after_dead_letter(self, worker: Worker, entry_id: str, reason: str) -> None: ...
