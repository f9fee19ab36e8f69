"""Time buckets and the windows a profile is folded over.

Statistics land in three tiers per family: all time, hour buckets and minute buckets (epoch
minute/hour of the prediction's produced_at). A window resolves to whole hour buckets inside it
plus minute buckets at its ragged edges; minute buckets older than their retention are gone, so
an old edge rounds out to its hour. The resolved range is reported back in the profile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MINUTE = 60
HOUR = 3600

PRESET_SECONDS = {
    "last_15_minutes": 15 * MINUTE,
    "last_hour": HOUR,
    "last_day": 24 * HOUR,
    "last_week": 7 * 24 * HOUR,
}


@dataclass(frozen=True)
class Resolved:
    """Bucket keys to read: ("all", None) or a list of ("h"|"m", bucket index)."""

    start_s: float | None
    end_s: float | None
    buckets: tuple[tuple[str, int | None], ...]
    resolution_s: int

    @property
    def all_time(self) -> bool:
        return self.start_s is None


ALL_TIME = Resolved(None, None, (("all", None),), 0)


def minute_of(ts: float) -> int:
    return int(ts // MINUTE)


def hour_of_minute(minute: int) -> int:
    return minute // 60


def resolve(start_s: float, end_s: float, now_s: float, minute_retention_s: float) -> Resolved:
    """Cover [start_s, end_s) with hour buckets inside and minute buckets at the edges."""
    if end_s <= start_s:
        raise ValueError("window end must be after its start")
    oldest_minute = minute_of(now_s - minute_retention_s) + 1  # older minute buckets may be gone
    first_min = minute_of(start_s)
    last_min = math.ceil(end_s / MINUTE) - 1  # inclusive
    buckets: list[tuple[str, int | None]] = []
    spans: list[tuple[int, int]] = []  # covered [first, last] minutes per bucket
    m = first_min
    while m <= last_min:
        h = hour_of_minute(m)
        hour_first, hour_last = h * 60, h * 60 + 59
        if (m == hour_first and hour_last <= last_min) or m < oldest_minute:
            buckets.append(("h", h))
            spans.append((hour_first, hour_last))
            m = hour_last + 1
        else:
            buckets.append(("m", m))
            spans.append((m, m))
            m += 1
    resolution = HOUR if any(first < oldest_minute for first, _ in spans) else MINUTE
    start = min(first for first, _ in spans) * MINUTE
    end = (max(last for _, last in spans) + 1) * MINUTE
    return Resolved(float(start), float(end), tuple(buckets), resolution)


def resolve_preset(name: str, now_s: float, minute_retention_s: float) -> Resolved:
    if name == "all_time":
        return ALL_TIME
    span = PRESET_SECONDS[name]
    return resolve(now_s - span, now_s, now_s, minute_retention_s)
