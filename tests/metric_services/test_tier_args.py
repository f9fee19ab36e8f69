"""The runner's window-tier writes: every tier bucket's ops are its minutes' statistics summed in
minute order, exactly (the same floats, bit for bit) as a plain per-bucket merge gives them, also where
the runner reuses the batch's total for buckets that hold every minute of it."""

from __future__ import annotations

import random

from holistic.profile.windows import tier_buckets
from holistic.redis.keys import NEWEST_MINUTE, Keys
from holistic.stats.mergeable import Stats, signature_field
from metric_services.work import Work

KEYS = Keys()


def reference(by_minute: dict[int, Stats], per_minute: dict[int, int], stamp: str, model: str, fam: str, ttl):
    """Each bucket merged on its own from its minutes, in order (what the runner always wrote)."""
    stamped = {m: Stats().merge(st) for m, st in by_minute.items()}
    for minute, count in per_minute.items():
        stamped.setdefault(minute, Stats()).incr(stamp, count)
    tiers: dict[str, tuple[int, Stats]] = {}
    total = Stats()
    for minute, st in stamped.items():
        for tier, bucket in tier_buckets(minute):
            key = KEYS.stats(model, fam, tier, bucket)
            if key in tiers:
                tiers[key][1].merge(st)
            else:
                tiers[key] = (ttl.get(tier, 0), Stats().merge(st))
        total.merge(st)
    tiers[KEYS.stats(model, fam, "all")] = (0, total)
    return {k: (t, st.lua_ops()) for k, (t, st) in tiers.items()}


def minute_stats(rng: random.Random) -> Stats:
    st = Stats()
    for f in ("a", "b", "c"):
        st.add(f"{f}|sum", rng.random() * 10 ** rng.randint(-3, 3))
        st.incr(f"{f}|n", rng.randint(1, 5))
    st.low("lat", rng.random())
    st.high("lat", rng.random())
    st.bump("conf", str(rng.randint(0, 9)), rng.random())
    return st


def parsed(keys: list[str], args: list) -> tuple[dict[str, tuple[int, list]], int]:
    """Each hash's (ttl, ops), a negative op count -j read as apply.lua does (hash j's ops), and how
    many hashes reused ops."""
    out, a, reused = {}, 5, 0
    for key in keys[3:]:  # after the done bitmap, the updates stream and the tombstone
        ttl, n = args[a], args[a + 1]
        if n < 0:
            out[key] = (ttl, out[keys[3 + (-n) - 1]][1])
            reused += 1
            a += 2
        else:
            out[key] = (ttl, list(args[a + 2 : a + 2 + 3 * n]))
            a += 2 + 3 * n
    assert a == len(args)
    return out, reused


def test_tier_ops_equal_a_plain_per_bucket_merge(make_worker, make_settings):
    settings = make_settings()
    worker = make_worker("efficiency", settings)
    rng = random.Random(7)
    start = 28_333_333 - 28_333_333 % 1440 + 1380  # 23:00 of a day: the batch crosses an hour and a day
    cases = [
        [start + 5],  # one minute
        [start + i for i in range(0, 40, 3)],  # within one hour
        [start + 50 + i for i in range(0, 30, 2)],  # across an hour
        [start + 45 + i for i in range(0, 60, 4)],  # across a day (and a d16 bucket edge maybe)
        [start + i * 97 for i in range(12)],  # spread over many hours
    ]
    sid, _ = worker.signature_of("m")
    ttl = {"m": settings.minute_retention_s, "h": settings.hour_retention_s}
    for seq, minutes in enumerate(cases, start=1):
        by_minute = {m: minute_stats(rng) for m in minutes}
        per_minute = {m: rng.randint(1, 50) for m in minutes} | {minutes[-1] + 1: 3}  # a minute without stats
        work = Work("0-1", type("E", (), {"model": "m", "seq": seq})(), f"b{seq}", 10, by_minute, per_minute=per_minute)
        worker._recorded.add(("m", ""))  # no signature hash: statistics only
        worker._newest["m"] = 10**9  # no newest minute on the meta hash either
        keys, args = worker._apply_args(work)
        got, reused = parsed(keys, args)
        want = reference(by_minute, per_minute, signature_field(sid), "m", worker.group, ttl)
        assert list(got) == list(want)
        for key, (t, ops) in want.items():
            assert got[key] == (t, ops), key  # reprs of the floats: the same bits
        # the tiers that hold every minute of the batch (all, d256, ...) carry the total's ops once
        whole = sum(1 for op in want.values() if op[1] == want[KEYS.stats("m", worker.group, "all")][1])
        assert reused == whole - 1 >= 1


def test_the_newest_minute_is_raised_on_the_meta_hash_only_when_newer(make_worker):
    """A worker raises the model's meta NEWEST_MINUTE (kept at its max by apply.lua's `>`) with an apply
    whose newest minute is past what its earlier applies sent; an older batch sends nothing."""
    worker = make_worker("efficiency")
    worker._recorded.add(("m", ""))

    def meta_ops(per_minute: dict[int, int], seq: int) -> tuple[int, list] | None:
        work = Work("0-1", type("E", (), {"model": "m", "seq": seq})(), f"b{seq}", 1, {}, per_minute=per_minute)
        got, _ = parsed(*worker._apply_args(work))
        return got.get(KEYS.meta("m"))

    assert meta_ops({28_000_005: 2, 28_000_007: 1}, 1) == (0, [">", NEWEST_MINUTE, "28000007"])
    worker._newest["m"] = 28_000_007  # what the runner records once that apply merged
    assert meta_ops({28_000_001: 4}, 2) is None
    assert meta_ops({28_000_007: 4}, 3) is None
    assert meta_ops({28_000_008: 1}, 4) == (0, [">", NEWEST_MINUTE, "28000008"])
