"""How many stream entries one worker read claims: what this replica expects to finish soon.

Every entry a read returns is this replica's until it acknowledges it; its sibling replicas cannot
have it. A fixed count of 16 lets the first replica of a slow family that reads a backlog take 16
batches of tens of seconds of work while the others idle. So a replica claims as many entries as it
expects to finish within `ahead_s`, from the seconds per entry of its recent reads, between 1 and
`most`. Seconds are this process's CPU seconds, not wall: on a busy machine, or while waiting for
Redis, wall time per entry grows, smaller reads pay more round trips per entry, and reads would
shrink further; CPU time measures the work itself. A cheap family (milliseconds per batch) still
reads `most` at a time and keeps its round trips few; a CPU-bound one reads one batch at a time and
its replicas share the backlog.
The first read of a replica claims one entry: its cost is not known yet.
"""

from __future__ import annotations

SMOOTHING = 0.5  # weight of the newest read in the running seconds per entry


class ReadPace:
    def __init__(self, most: int, ahead_s: float) -> None:
        """`ahead_s` 0: always `most` (no pacing)."""
        self.most = most
        self.ahead_s = ahead_s
        self.per_entry_s: float | None = None  # none yet: nothing read

    def count(self) -> int:
        if self.ahead_s <= 0:
            return self.most
        if self.per_entry_s is None:
            return 1
        if self.per_entry_s <= 0:
            return self.most
        return max(1, min(self.most, int(self.ahead_s / self.per_entry_s)))

    def observe(self, entries: int, seconds: float) -> None:
        """A read of `entries` took `seconds` of CPU to process (compute, apply, acknowledge)."""
        if entries <= 0:
            return
        latest = max(0.0, seconds) / entries
        prior = self.per_entry_s
        self.per_entry_s = latest if prior is None else SMOOTHING * latest + (1 - SMOOTHING) * prior
