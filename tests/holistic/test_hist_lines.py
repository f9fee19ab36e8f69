"""Histogram fields in Redis (apply.lua, holistic/stats/mergeable.py): a merged base in "<name>|hist", each
apply's bins since in a chunk field of their own ("<name>|hist+<k>", their count and sizes in
"<name>|hist#"), merged into a new base once the chunks are four times as long as it (or 64 of them). Read
back, any sequence of applies is the sum of its bins, over exactly when a capped histogram's union is
past its cap; a histogram's fields stay under about five times its merged size; an apply that does not
merge leaves the base as it was and writes its own bins as sent (nothing of the history read, decoded or
rewritten); fields written before (one JSON object, lines appended to it, or "over") go on."""

from __future__ import annotations

import json
from itertools import count

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holistic.redis.scripts import Scripts
from holistic.stats.mergeable import Folded, Stats

FIELD = "s|x|hist"
HIST_LINES = 4  # apply.lua merges once the chunks are this many times the base's length
MOST_CHUNKS = 64  # or this many chunks
_seq = count(1)


def chunks(r: redis.Redis, key: str, field: str = FIELD) -> list[str]:
    """The histogram's chunk fields' texts, in order, checked against its meta field."""
    meta = r.hget(key, field + "#")
    if meta is None or meta == b"over":
        assert not [f for f in r.hkeys(key) if f.startswith((field + "+").encode())]
        return []
    k, size, base = map(int, meta.split())
    texts = [r.hget(key, f"{field}+{i}").decode() for i in range(1, k + 1)]
    assert sum(map(len, texts)) == size and len(r.hget(key, field)) == base
    assert r.hget(key, f"{field}+{k + 1}") is None
    return texts


def apply(r: redis.Redis, key: str, stats: Stats) -> None:
    ops = stats.lua_ops()
    keys = [key + ":done", key + ":updates", key + ":deleted", key]  # apply.lua: done, updates, tombstone, hashes
    args = [str(next(_seq)), 100, "fam", "1", "", 0, len(ops) // 3, *ops]
    assert Scripts(r).apply(keys=keys, args=args) == 1


def read(r: redis.Redis, key: str) -> dict[str, float]:
    return dict(Folded.from_hashes([r.hgetall(key)]))


def expected(batches: list[dict[str, int]], cap: int | None) -> dict[str, float]:
    total = _sum(batches)
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
            assert r.hget(key, FIELD + "#") == b"over" and chunks(r, key) == []
            continue
        line = json.dumps(bins, separators=(",", ":"))
        got = chunks(r, key)
        if got:  # not merged: the base as it was, this apply's bins as sent in the next chunk
            assert before is not None and now == before.decode() and got[-1] == line
        else:  # merged (or the first apply): the base holds every bin
            assert json.loads(now.partition("\n")[2] if cap is not None else now) == _sum(batches[: i + 1])
        assert sum(map(len, got)) < HIST_LINES * len(now) + len(line) and len(got) <= MOST_CHUNKS


def _sum(batches: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for bins in batches:
        for b, n in bins.items():
            total[b] = total.get(b, 0) + n
    return total


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


def test_a_field_with_lines_appended_before_reads_and_merges_into_a_base(r):
    """The format before chunk fields: the lines appended to the base (a capped one behind "#<cap>")."""
    key = "t:hist:lines"
    r.hset(key, mapping={FIELD: '#3\n{"0.5":3}\n{"0.25":1}', "s|z|hist": '{"1":2}\n{"1":1,"2":4}'})
    assert read(r, key) == {"s|x|0.5": 3.0, "s|x|0.25": 1.0, "s|z|1": 3.0, "s|z|2": 4.0}
    st_ = Stats()
    st_.bump("s|x", "0.5", 2, cap=3)
    st_.bump("s|z", "3", 1)
    apply(r, key, st_)
    assert read(r, key) == {"s|x|0.5": 5.0, "s|x|0.25": 1.0, "s|z|1": 3.0, "s|z|2": 4.0, "s|z|3": 1.0}
    assert json.loads(r.hget(key, FIELD).decode().partition("\n")[2]) == {"0.5": 5, "0.25": 1}  # merged
    assert json.loads(r.hget(key, "s|z|hist")) == {"1": 3, "2": 4, "3": 1} and chunks(r, key, "s|z|hist") == []


def test_many_applies_stay_bounded_and_merge_rarely(r):
    """A coarse tier's field: 2,000 bins, then 200 applies of 30 bins each. The histogram's fields never
    exceed about five times its merged size; an apply that does not merge leaves the ~26 KB base as it
    was and writes only its own ~400 bytes; a merge comes every 64 applies (the chunk count's bound, as
    the chunks stay under four times the base), not on every one."""
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
        now, got = r.hget(key, FIELD), chunks(r, key)
        if got:
            assert now == before and got[-1] == json.dumps(st_.hists[FIELD], separators=(",", ":"))
        else:
            merges += 1
        longest = max(longest, len(now) + sum(map(len, got)))
    merged = len(json.dumps(total, separators=(",", ":")))
    assert longest < 3.2 * merged  # here the chunk bound merges first (64 x ~400 bytes)
    assert merges == 200 // (MOST_CHUNKS + 1)
    assert read(r, key) == {f"s|x|{b}": float(n) for b, n in total.items()}
