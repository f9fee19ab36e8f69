"""holistic.windows: which minute and hour buckets a window reads; counts worked out by hand.

NOW = 1_700_000_000 s is 20 s into epoch minute 28_333_333 (= 1_699_999_980 / 60) and
13 min 20 s into epoch hour 472_222 (which starts at minute 28_333_320, second 1_699_999_200).
"""

from __future__ import annotations

import math

import pytest

from holistic.windows import ALL_TIME, HOUR, MINUTE, Resolved, minute_of, resolve, resolve_preset

NOW = 1_700_000_000
DAY = 86_400
RETENTION = 3 * DAY


def kinds(r):
    return [k for k, _ in r.buckets]


def test_last_15_minutes_mid_minute():
    r = resolve_preset("last_15_minutes", NOW, RETENTION)
    # start = NOW - 900 = 1_699_999_100 -> minute 28_333_318 (floor(1_699_999_100/60)) -> 1_699_999_080;
    # end = ceil(NOW/60) * 60 = 28_333_334 * 60 = 1_700_000_040.
    assert r.start_s == math.floor((NOW - 900) / 60) * 60 == 1_699_999_080
    assert r.end_s == math.ceil(NOW / 60) * 60 == 1_700_000_040
    # minutes 28_333_318 .. 28_333_333 inclusive: 16 buckets; the hour starting at 28_333_320 is not
    # whole inside the window, so every bucket is a minute.
    assert r.buckets == tuple(("m", m) for m in range(28_333_318, 28_333_334))
    assert len(r.buckets) == 16
    assert r.resolution_s == MINUTE
    assert not r.all_time


def test_last_15_minutes_on_a_minute_boundary():
    now = 28_333_334 * 60  # 1_700_000_040, exactly on a minute
    r = resolve_preset("last_15_minutes", now, RETENTION)
    # [now - 900, now) = minutes 28_333_319 .. 28_333_333: 15 buckets, no rounding.
    assert len(r.buckets) == 15
    assert r.buckets[0] == ("m", 28_333_319)
    assert r.buckets[-1] == ("m", 28_333_333)
    assert (r.start_s, r.end_s) == (now - 900, now)


def test_last_hour_mid_minute():
    r = resolve_preset("last_hour", NOW, RETENTION)
    # start 1_699_996_400 -> minute 28_333_273; last minute 28_333_333: 61 minute buckets (no whole hour:
    # hour 472_221 starts at minute 28_333_260, before the window).
    assert len(r.buckets) == 61
    assert set(kinds(r)) == {"m"}
    assert r.start_s == 28_333_273 * 60


def test_last_day_uses_hours_inside_and_minutes_at_the_edges():
    r = resolve_preset("last_day", NOW, RETENTION)
    # start = NOW - 86_400 = 1_699_913_600 -> minute 28_331_893, 13 minutes into hour 472_198
    # (minutes 28_331_880 .. 28_331_939).
    # leading edge: minutes 28_331_893 .. 28_331_939 = 47 minute buckets;
    # whole hours 472_199 .. 472_221 = 23 hour buckets;
    # trailing edge: hour 472_222 is not whole (its last minute 28_333_379 > 28_333_333), so minutes
    # 28_333_320 .. 28_333_333 = 14 minute buckets. Total 47 + 23 + 14 = 84.
    expected = (
        [("m", m) for m in range(28_331_893, 28_331_940)]
        + [("h", h) for h in range(472_199, 472_222)]
        + [("m", m) for m in range(28_333_320, 28_333_334)]
    )
    assert list(r.buckets) == expected
    assert kinds(r).count("m") == 61
    assert kinds(r).count("h") == 23
    assert len(r.buckets) == 84
    assert r.start_s == 28_331_893 * 60 == 1_699_913_580
    assert r.end_s == 1_700_000_040
    # everything is inside minute retention, so the edges are exact to the minute.
    assert r.resolution_s == MINUTE


def test_buckets_cover_the_window_once_and_contiguously():
    r = resolve_preset("last_day", NOW, RETENTION)
    covered = []
    for kind, idx in r.buckets:
        covered.extend(range(idx * 60, idx * 60 + 60) if kind == "h" else [idx])
    assert covered == list(range(int(r.start_s) // 60, int(r.end_s) // 60))


def test_window_beyond_minute_retention_rounds_out_to_hours():
    retention = DAY
    r = resolve_preset("last_week", NOW, retention)
    # oldest kept minute = minute_of(NOW - 86_400) + 1 = 28_331_894.
    # start = NOW - 604_800 = 1_699_395_200 -> minute 28_323_253 in hour 472_054 (starts 28_323_240),
    # older than retention: the whole hour 472_054 is read, start rounds out to 28_323_240 * 60.
    # Then whole hours through 472_221 (168 hours: 472_054 .. 472_221), and the trailing 14 minutes.
    assert r.start_s == 28_323_240 * 60 == 1_699_394_400
    assert r.start_s < NOW - 7 * DAY
    assert r.end_s == 1_700_000_040
    assert kinds(r).count("h") == 168
    assert kinds(r).count("m") == 14
    assert r.buckets[0] == ("h", 472_054)
    assert r.resolution_s == HOUR


def test_old_short_window_is_one_hour_bucket():
    hour = 472_000  # far older than NOW - 3 days
    start = hour * HOUR + 1250  # 20 min 50 s into the hour
    r = resolve(start, start + 600, NOW, RETENTION)  # ends 30 min 50 s in
    assert r.buckets == (("h", hour),)
    assert (r.start_s, r.end_s) == (hour * HOUR, (hour + 1) * HOUR)
    assert r.resolution_s == HOUR


def test_old_window_across_an_hour_boundary_is_two_hour_buckets():
    hour = 472_000
    r = resolve(hour * HOUR + 3000, (hour + 1) * HOUR + 600, NOW, RETENTION)
    assert r.buckets == (("h", hour), ("h", hour + 1))
    assert (r.start_s, r.end_s) == (hour * HOUR, (hour + 2) * HOUR)
    assert r.resolution_s == HOUR


def test_retention_boundary_minute():
    retention = DAY
    oldest = minute_of(NOW - retention) + 1  # 28_331_893 + 1 = 28_331_894 (hour 472_198 starts at 28_331_880)
    assert oldest == 28_331_894
    # starting at the oldest kept minute: 10 minute buckets, minute resolution.
    r = resolve(oldest * 60, (oldest + 10) * 60, NOW, retention)
    assert r.buckets == tuple(("m", m) for m in range(oldest, oldest + 10))
    assert r.resolution_s == MINUTE
    # one minute earlier: that minute may be gone, so its whole hour 472_198 is read instead.
    r = resolve((oldest - 1) * 60, (oldest + 10) * 60, NOW, retention)
    assert r.buckets == (("h", 472_198),)
    assert (r.start_s, r.end_s) == (28_331_880 * 60, 28_331_940 * 60)
    assert r.resolution_s == HOUR


def test_whole_hour_window_is_one_hour_bucket():
    hour = 472_221
    r = resolve(hour * HOUR, (hour + 1) * HOUR, NOW, RETENTION)
    assert r.buckets == (("h", hour),)
    # hours inside retention keep minute resolution: the edges are exact.
    assert r.resolution_s == MINUTE


def test_sub_minute_window_is_one_minute_bucket():
    # [NOW, NOW + 10) lies in minute 28_333_333.
    r = resolve(NOW, NOW + 10, NOW, RETENTION)
    assert r.buckets == (("m", 28_333_333),)
    assert (r.start_s, r.end_s) == (28_333_333 * 60, 28_333_334 * 60)


@pytest.mark.parametrize(("start", "end"), [(NOW, NOW), (NOW, NOW - 1), (NOW + 60, NOW)])
def test_end_not_after_start_raises(start, end):
    with pytest.raises(ValueError, match="after its start"):
        resolve(start, end, NOW, RETENTION)


def test_all_time_and_unknown_preset():
    r = resolve_preset("all_time", NOW, RETENTION)
    assert r is ALL_TIME
    assert r.all_time
    assert r.buckets == (("all", None),)
    assert r.resolution_s == 0
    with pytest.raises(KeyError):
        resolve_preset("last_month", NOW, RETENTION)


def test_resolved_is_frozen():
    r = Resolved(0.0, 60.0, (("m", 0),), MINUTE)
    with pytest.raises(AttributeError):
        r.start_s = 1.0  # type: ignore[misc]
