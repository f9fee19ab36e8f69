"""Histogram fields in Redis (apply.lua, holistic/stats.py): each apply's bins appended as a line,
merged into a new base once the lines are as long as it. Read back, any sequence of applies is the
sum of its bins, over exactly when a capped histogram's union is past its cap; a field stays under
about three times its merged size; an apply that does not merge writes the old text plus its own line
(nothing of the history decoded); fields written before (one JSON object, or "over") go on."""

from __future__ import annotations

import json
from itertools import count

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holistic.scripts import Scripts
from holistic.stats import Folded, Stats

FIELD = "s|x|hist"
HIST_LINES = 2  # apply.lua merges once the lines are this many times the base's length
_seq = count(1)


def apply(r: redis.Redis, key: str, stats: Stats) -> None:
    ops = stats.lua_ops()
    keys = [key + ":done", key + ":updates", key]
    args = [str(next(_seq)), 100, "fam", "1", "", 0, len(ops) // 3, *ops]
    assert Scripts(r).apply(keys=keys, args=args) == 1


def read(r: redis.Redis, key: str) -> dict[str, float]:
    return dict(Folded.from_hashes([r.hgetall(key)]))


def expected(batches: list[dict[str, int]], cap: int | None) -> dict[str, float]:
    total: dict[str, int] = {}
    for bins in batches:
        for b, n in bins.items():
            total[b] = total.get(b, 0) + n
    if cap is not None and len(total) > cap:
        return {"s|x|over": 1.0}
    return {f"s|x|{b}": float(n) for b, n in total.items()}


batches = st.lists(
    st.dictionaries(st.sampled_from([f"{i / 100!r}" for i in range(40)] + ["é", 'a"b', "\\"]), st.integers(1, 99),
                    min_size=1, max_size=12),
    min_size=1, max_size=25,
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=batches, cap=st.sampled_from([None, 3, 10, 25, 1000]))
def test_any_sequence_of_applies_reads_as_its_sum(r, batches, cap):
    key = f"t:hist:{next(_seq)}"
    for i, bins in enumerate(batches):
        before = r.hget(key, FIELD)
        st_ = Stats()
        for b, n in bins.items():
            st_.bump("s|x", b, n, cap=cap)
        apply(r, key, st_)
        assert read(r, key) == expected(batches[: i + 1], cap)
        now = r.hget(key, FIELD).decode()
        if now == "over":
            continue
        line = json.dumps(bins, separators=(",", ":"))
        body = now.partition("\n")[2] if cap is not None else now
        if before is not None and body.count("\n") > 0:  # not merged: the old lines and this one, as sent
            old = before.decode()
            assert body == (old.partition("\n")[2] if cap is not None else old) + "\n" + line
        base = body.split("\n")[0]
        assert len(body) - len(base) < HIST_LINES * len(base) + len(line) + 1  # lines: under twice the base


def test_a_field_written_before_reads_and_grows_the_same(r):
    key = "t:hist:legacy"
    r.hset(key, mapping={FIELD: json.dumps({"0.5": 3, "0.25": 1}), "s|y|hist": "over"})
    st_ = Stats()
    st_.bump("s|x", "0.5", 2, cap=3)
    st_.bump("s|x", "0.75", 1, cap=3)
    st_.bump("s|y", "0.1", 1, cap=3)
    apply(r, key, st_)
    assert read(r, key) == {"s|x|0.5": 5.0, "s|x|0.25": 1.0, "s|x|0.75": 1.0, "s|y|over": 1.0}
    st_ = Stats()
    st_.bump("s|x", "0.9", 1, cap=3)  # a fourth bin: past the cap
    apply(r, key, st_)
    assert read(r, key) == {"s|x|over": 1.0, "s|y|over": 1.0}


def test_many_applies_stay_bounded_and_merge_rarely(r):
    """A coarse tier's field: 2,000 bins, then 200 applies of 30 bins each. The field never exceeds about
    three times its merged size, and applies only append until their lines are twice as long as the base:
    ~360 bytes an apply against a ~26 KB base merges about every 140 applies, not on every one as before."""
    key = "t:hist:coarse"
    first = Stats()
    for i in range(2000):
        first.bump("s|x", repr(i / 2000), 1)
    apply(r, key, first)
    merges, longest, total = 0, 0, {repr(i / 2000): 1 for i in range(2000)}
    for a in range(200):
        st_ = Stats()
        for j in range(30):
            b = repr(((a * 37 + j * 11) % 2000) / 2000)
            st_.bump("s|x", b, 1)
            total[b] += 1
        before = r.hget(key, FIELD)
        apply(r, key, st_)
        now = r.hget(key, FIELD)
        merges += now.count(b"\n") == 0 and before.count(b"\n") > 0
        longest = max(longest, len(now))
    merged = len(json.dumps(total, separators=(",", ":")))
    assert longest < 3.2 * merged
    assert 1 <= merges <= 5
    assert read(r, key) == {f"s|x|{b}": float(n) for b, n in total.items()}
