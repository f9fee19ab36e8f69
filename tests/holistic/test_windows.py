"""holistic.profile.windows: which buckets of which tier a window reads; counts worked out by hand.

NOW = 1_700_000_000 s is 20 s into epoch minute 28_333_333 (= 1_699_999_980 / 60) and
13 min 20 s into epoch hour 472_222 (which starts at minute 28_333_320, second 1_699_999_200).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from holistic.profile.windows import (
    ALL_TIME,
    EARLIEST_DATA_S,
    HOUR,
    MINUTE,
    TIERS,
    Resolved,
    max_buckets,
    minute_of,
    resolve,
    resolve_preset,
    tier_buckets,
)

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
    # older than retention: the start rounds out to hour 472_054 (second 1_699_394_400).
    # Then hours 472_054, 472_055 up to day 19_669 (second 1_699_401_600), whole days 19_669 .. 19_674,
    # hours 472_200 .. 472_221 of day 19_675, and the trailing 14 minutes 28_333_320 .. 28_333_333.
    assert r.start_s == 28_323_240 * 60 == 1_699_394_400
    assert r.start_s < NOW - 7 * DAY
    assert r.end_s == 1_700_000_040
    assert list(r.buckets) == (
        [("h", 472_054), ("h", 472_055)]
        + [("d", d) for d in range(19_669, 19_675)]
        + [("h", h) for h in range(472_200, 472_222)]
        + [("m", m) for m in range(28_333_320, 28_333_334)]
    )
    assert len(r.buckets) == 44
    assert r.resolution_s == HOUR
    assert (r.start_grid_s, r.end_grid_s) == (HOUR, MINUTE)
    assert (r.requested_start_s, r.requested_end_s) == (NOW - 7 * DAY, NOW)


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


def test_1970_to_9999_costs_a_bounded_number_of_buckets():
    # Clamped to [2000-01-01, NOW + 300 s skew) = [946_684_800, ceil(1_700_000_300 / 60) * 60 = 1_700_000_340).
    # Left edge: 2000-01-01 is day 10_957; days 10_957 .. 10_959 up to the 16-day grid (day 10_960 = 685 * 16),
    # 16-day buckets 685 .. 687 up to the 256-day grid (day 11_008 = 43 * 256).
    # Right edge: minutes 28_333_320 .. 28_333_338 of hour 472_222; hours 472_200 .. 472_221 of day 19_675;
    # days 19_664 .. 19_674 (19_664 = 1229 * 16); 16-day buckets 1216 .. 1228 (19_456 = 76 * 256 days).
    # Middle: 256-day buckets 43 .. 75. Total 3 + 3 + 33 + 13 + 11 + 22 + 19 = 104.
    r = resolve(0, 253_402_300_800, NOW, RETENTION, latest_s=NOW + 300)  # 1970-01-01 .. 9999-12-31
    assert list(r.buckets) == (
        [("d", d) for d in range(10_957, 10_960)]
        + [("d16", b) for b in range(685, 688)]
        + [("d256", b) for b in range(43, 76)]
        + [("d16", b) for b in range(1216, 1229)]
        + [("d", d) for d in range(19_664, 19_675)]
        + [("h", h) for h in range(472_200, 472_222)]
        + [("m", m) for m in range(28_333_320, 28_333_339)]
    )
    assert len(r.buckets) == 104
    assert (r.start_s, r.end_s) == (EARLIEST_DATA_S, 1_700_000_340)
    assert (r.start_grid_s, r.end_grid_s, r.resolution_s) == (MINUTE, MINUTE, MINUTE)
    assert (r.requested_start_s, r.requested_end_s) == (0, 253_402_300_800)


def test_edge_older_than_hour_retention_rounds_out_to_its_day():
    start = NOW - 500 * DAY + 1234  # 500 days ago: minute and hour buckets there have expired
    r = resolve(start, NOW - 499 * DAY, NOW, RETENTION, hour_retention_s=400 * DAY)
    # NOW - 500 days = 1_656_800_000 is in day 19_175 (which starts 1_656_720_000); the end,
    # 1_656_886_400, is in day 19_176: both edges round out to their days, two day buckets.
    assert r.buckets == (("d", 19_175), ("d", 19_176))
    assert (r.start_s, r.end_s) == (19_175 * DAY, 19_177 * DAY)
    assert (r.start_grid_s, r.end_grid_s, r.resolution_s) == (DAY, DAY, DAY)


def test_tier_buckets_of_a_minute():
    # minute 28_333_333 = second 1_699_999_980: hour 472_222, day 19_675, 16-day 1229, 256-day 76.
    assert tier_buckets(28_333_333) == [("m", 28_333_333), ("h", 472_222), ("d", 19_675), ("d16", 1229), ("d256", 76)]


def _kept(tier, index, now, minute_ret, hour_ret):
    ret = {"m": minute_ret, "h": hour_ret}.get(tier)
    if ret is None:
        return True
    secs = dict(TIERS)[tier]
    return index >= math.floor((now - ret) / secs) + 1


def test_random_ranges_cover_exactly_once_with_kept_buckets_and_a_bounded_count():
    rng = random.Random(14)
    secs = dict(TIERS)
    for _ in range(3000):
        now = rng.uniform(1.2e9, 1.8e9)
        minute_ret = rng.choice([3600, DAY, 3 * DAY])
        hour_ret = rng.choice([3 * DAY, 30 * DAY, 400 * DAY])
        a = rng.uniform(0, now + 1000)
        b = a + rng.choice([1, 59, 61, 3599, 7201, 2 * DAY + 17, 400 * DAY, 30 * 365 * DAY]) * rng.random() + 1
        r = resolve(a, b, now, minute_ret, hour_ret, latest_s=now + 300)
        spans = [(i * secs[t], (i + 1) * secs[t]) for t, i in r.buckets]
        assert all(left[1] == right[0] for left, right in itertools.pairwise(spans)), "contiguous"
        assert (spans[0][0], spans[-1][1]) == (r.start_s, r.end_s)
        lo, hi = max(a, EARLIEST_DATA_S), min(b, now + 300)
        if lo < hi:  # the range overlaps where data can exist: all of that overlap is covered
            assert r.start_s <= lo and r.end_s >= hi
            assert r.start_s > lo - r.start_grid_s and r.end_s < hi + r.end_grid_s
        assert all(_kept(t, i, now, minute_ret, hour_ret) for t, i in r.buckets)
        assert len(r.buckets) <= max_buckets(r.end_s - r.start_s) <= max_buckets(now + 360 - EARLIEST_DATA_S)
    # the bound for the next decades stays far under the default ceiling of 512
    assert max_buckets((2100 - 1970) * 365.25 * DAY - EARLIEST_DATA_S) < 512  # until the year 2100
