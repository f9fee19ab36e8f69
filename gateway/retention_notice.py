"""What part of a window is past its tenant's retention, in words (Window.retention_notice)."""

from __future__ import annotations

from datetime import UTC, datetime

from holistic.profile import windows
from holistic.tenancy.retention import Retention

GRID_NAMES = {windows.HOUR: "hour", windows.DAY: "day", 16 * windows.DAY: "16 days", 256 * windows.DAY: "256 days"}


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")


def duration(seconds: int) -> str:
    """e.g. 30 days, 36 hours, 90 s: the largest unit that divides it."""
    for unit, size in (("day", windows.DAY), ("hour", windows.HOUR), ("minute", windows.MINUTE)):
        if seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'' if n == 1 else 's'}"
    return f"{seconds} s"


def notice(retention: Retention, resolved: windows.Resolved, now_s: float) -> str:
    """Empty when the window asked for lies within every tier's retention (and for all time)."""
    if resolved.all_time or resolved.requested_start_s is None:
        return ""
    gone = [
        f"{name} buckets before {_utc(now_s - kept)} are past retention ({duration(kept)}) and gone"
        for name, kept in (("minute", retention.minute_s), ("hour", retention.hour_s), ("day", retention.day_s))
        if kept is not None and resolved.requested_start_s < now_s - kept
    ]
    if not gone:
        return ""
    edges = [
        f"the {edge} rounded out to a whole {GRID_NAMES.get(grid, f'{grid} s')}"
        for edge, grid in (("start", resolved.start_grid_s), ("end", resolved.end_grid_s))
        if grid > windows.MINUTE
    ]
    return "; ".join(gone) + (": " + " and ".join(edges) if edges else "")
