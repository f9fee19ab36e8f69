"""Time buckets in tiers, and the windows a profile is folded over.

Statistics land in every tier per family: all time plus buckets of a minute, an hour, a day, 16 days
and 256 days (epoch-aligned, each tier's length a multiple of the one below, indexed by the
prediction's produced_at). A window resolves greedily: the coarsest whole buckets inside it, finer
ones only at its ragged edges, so any range costs at most 2 x (59 + 23 + 15 + 15) edge buckets
plus one 256-day bucket per 256 days of the range, and ranges are first clamped to where data can
exist (produced_at is refused before 2000-01-01 or further than the allowed skew ahead). Minute and
hour buckets expire after their retention; where a window's edge needs a bucket that may be gone it
rounds out to the next tier, and the resolved window says which edge and to what.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MINUTE = 60
HOUR = 3600
DAY = 86_400
EARLIEST_DATA_S = 946_684_800  # 2000-01-01: produced_at before it is refused at ingest

# (key tier name, seconds); each length divides the next.
TIERS: tuple[tuple[str, int], ...] = (("m", MINUTE), ("h", HOUR), ("d", DAY), ("d16", 16 * DAY), ("d256", 256 * DAY))

PRESET_SECONDS = {
    "last_15_minutes": 15 * MINUTE,
    "last_hour": HOUR,
    "last_day": 24 * HOUR,
    "last_week": 7 * 24 * HOUR,
}


@dataclass(frozen=True)
class Resolved:
    """Bucket keys to read: ("all", None) or (tier, bucket index) in time order, and the edges they cover.

    start_grid_s / end_grid_s: the grid each edge was cut on (60 when exact to the minute; a coarser
    tier's length where the finer buckets at that edge may have expired). requested_*: the range
    asked for, before rounding and clamping.
    """

    start_s: float | None
    end_s: float | None
    buckets: tuple[tuple[str, int | None], ...]
    resolution_s: int
    start_grid_s: int = 0
    end_grid_s: int = 0
    requested_start_s: float | None = None
    requested_end_s: float | None = None

    @property
    def all_time(self) -> bool:
        return self.start_s is None


ALL_TIME = Resolved(None, None, (("all", None),), 0)


def minute_of(ts: float) -> int:
    return int(ts // MINUTE)


def hour_of_minute(minute: int) -> int:
    return minute // 60


def tier_buckets(minute: int) -> list[tuple[str, int]]:
    """The bucket of every tier that epoch minute `minute` falls in, finest first."""
    return [(name, minute * MINUTE // seconds) for name, seconds in TIERS]


def max_buckets(span_s: float) -> int:
    """The most buckets any range of at most span_s seconds can resolve to."""
    edges = sum(TIERS[i + 1][1] // TIERS[i][1] - 1 for i in range(len(TIERS) - 1))
    return 2 * edges + math.ceil(span_s / TIERS[-1][1]) + 1


def resolve(
    start_s: float,
    end_s: float,
    now_s: float,
    minute_retention_s: float,
    hour_retention_s: float = 400 * DAY,
    latest_s: float | None = None,
    day_retention_s: float | None = None,
) -> Resolved:
    """Cover [start_s, end_s) with the coarsest whole buckets inside and finer buckets at the edges.

    latest_s: no data exists after it (default: no clamp at the end); the start is clamped to 2000-01-01.
    day_retention_s: how long day buckets are kept (a tenant's retention); None: for good.
    """
    if end_s <= start_s:
        raise ValueError("window end must be after its start")
    lo = max(math.floor(start_s / MINUTE), math.floor(EARLIEST_DATA_S / MINUTE)) * MINUTE
    hi = math.ceil(end_s / MINUTE) * MINUTE
    if latest_s is not None:
        hi = min(hi, math.ceil(latest_s / MINUTE) * MINUTE)
    if hi <= lo:  # entirely outside where data can exist: one minute at the nearest end
        lo, hi = (hi - MINUTE, hi) if start_s >= hi else (lo, lo + MINUTE)
    retention: tuple[float, ...] = (minute_retention_s, max(hour_retention_s, minute_retention_s))
    if day_retention_s is not None:
        retention += (max(day_retention_s, retention[1]),)
    # The oldest bucket index of each tier that is surely still kept; longer tiers are kept for good.
    oldest = [math.floor((now_s - r) / secs) + 1 for r, (_, secs) in zip(retention, TIERS, strict=False)]

    def kept(tier: int, at: int) -> bool:
        return tier >= len(oldest) or at // TIERS[tier][1] >= oldest[tier]

    start_grid = end_grid = MINUTE
    left: list[tuple[str, int | None]] = []
    right: list[tuple[str, int | None]] = []
    middle: list[tuple[str, int | None]] = []
    for j, (name, secs) in enumerate(TIERS):
        if j == len(TIERS) - 1:
            middle = [(name, b) for b in range(lo // secs, hi // secs)]
            break
        up = TIERS[j + 1][1]
        if lo % up and not kept(j, lo):
            lo -= lo % up
            start_grid = up
        if hi % up and not kept(j, max(hi - hi % up, lo)):
            hi += up - hi % up
            end_grid = up
        inner_lo, inner_hi = -(-lo // up) * up, hi // up * up
        if inner_lo >= inner_hi:  # no whole bucket of the next tier inside: this tier covers the rest
            middle = [(name, b) for b in range(lo // secs, hi // secs)]
            break
        left += [(name, b) for b in range(lo // secs, inner_lo // secs)]
        right = [(name, b) for b in range(inner_hi // secs, hi // secs)] + right
        lo, hi = inner_lo, inner_hi
    buckets = tuple(left + middle + right)
    first, last = buckets[0], buckets[-1]
    tier_secs = dict(TIERS)
    start = first[1] * tier_secs[first[0]]  # type: ignore[operator]
    end = (last[1] + 1) * tier_secs[last[0]]  # type: ignore[operator]
    return Resolved(float(start), float(end), buckets, max(start_grid, end_grid), start_grid, end_grid, start_s, end_s)


def resolve_preset(
    name: str,
    now_s: float,
    minute_retention_s: float,
    hour_retention_s: float = 400 * DAY,
    latest_s: float | None = None,
    day_retention_s: float | None = None,
) -> Resolved:
    if name == "all_time":
        return ALL_TIME
    span = PRESET_SECONDS[name]
    return resolve(now_s - span, now_s, now_s, minute_retention_s, hour_retention_s, latest_s, day_retention_s)
