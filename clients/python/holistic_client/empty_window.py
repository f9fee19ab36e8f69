"""Where a model's data is when a window holds none of it: the window's resolved UTC range and the
newest prediction's time (Counts.newest_prediction_time), so an empty table is never a silent one."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from holistic.v1 import profile_pb2 as pp


def utc(ts: Timestamp) -> str:
    return datetime.fromtimestamp(ts.seconds, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")


def range_text(window: pp.Window) -> str:
    """The resolved range, e.g. 2026-12-05T10:49Z..2026-12-05T11:50Z; "all time" for all time."""
    if not window.HasField("range"):
        return "all time"
    return f"{utc(window.range.start_time)}..{utc(window.range.end_time)}"


def ago(seconds: float) -> str:
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "in the last minute" if seconds >= 0 else "ahead of this clock"


def newest_text(profile: pp.Profile, now_s: float) -> str:
    """e.g. "newest prediction 34 days ago, 2026-11-01T12:34Z"."""
    if not profile.counts.HasField("newest_prediction_time"):
        if profile.counts.accepted_predictions:
            return f"{profile.counts.accepted_predictions:,} predictions accepted, none applied yet"
        return "no predictions accepted for this model"
    newest = profile.counts.newest_prediction_time
    return f"newest prediction {ago(now_s - newest.seconds)}, {utc(newest)}"


def empty_note(profile: pp.Profile, now_s: float) -> str | None:
    """A line for a profile whose window holds no predictions; None when it holds some."""
    if profile.counts.window_predictions:
        return None
    return f"{profile.model}: no predictions in the window {range_text(profile.window)}; {newest_text(profile, now_s)}"
