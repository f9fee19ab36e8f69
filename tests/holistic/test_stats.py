"""holistic.stats.mergeable: mergeable field -> number maps (Stats) and their read-back form (Folded)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holistic.stats.mergeable import Folded, Stats, merge_rule


def test_incr_add_and_add_moments():
    s = Stats()
    s.incr("n")
    s.incr("n", 4)  # 1 + 4 = 5
    s.incr("zero", 0)  # an explicit 0 is still a field
    s.add("x", 0.25)
    s.add("x", 1.5)  # 1.75
    for v in (1.0, 2.0, 4.0):
        s.add_moments("lat", v)  # n 3, sum 7, sumsq 1 + 4 + 16 = 21
    assert s.ints == {"n": 5, "zero": 0, "lat|n": 3}
    assert s.floats == {"x": 1.75, "lat|sum": 7.0, "lat|sumsq": 21.0}
    assert s.mins == {}
    assert s.maxes == {}
    assert len(s) == 6
    assert bool(s)


def test_empty_stats_is_falsy():
    assert not Stats()
    assert len(Stats()) == 0


def test_low_and_high_keep_extremes_under_suffixed_names():
    s = Stats()
    for v in (5.0, 3.0, 8.0, 4.0):
        s.low("t", v)
        s.high("t", v)
    assert s.mins == {"t|min": 3.0}
    assert s.maxes == {"t|max": 8.0}
    # a negative value is a value, not "unset".
    s.low("t", -1.0)
    assert s.mins == {"t|min": -1.0}


def test_merge_adds_counters_and_keeps_min_max():
    a = Stats()
    a.incr("n", 2)
    a.add("s", 1.5)
    a.low("t", 10.0)
    a.high("t", 20.0)
    b = Stats()
    b.incr("n", 3)
    b.incr("only_b")
    b.add("s", 2.25)
    b.add("only_b_f", 0.5)
    b.low("t", 7.0)
    b.high("t", 15.0)
    b.low("u", 1.0)
    b.high("u", 2.0)
    out = a.merge(b)
    assert out is a  # merges in place and returns self
    assert a.ints == {"n": 5, "only_b": 1}
    assert a.floats == {"s": 3.75, "only_b_f": 0.5}
    assert a.mins == {"t|min": 7.0, "u|min": 1.0}  # min(10, 7) = 7
    assert a.maxes == {"t|max": 20.0, "u|max": 2.0}  # max(20, 15) = 20
    # b is untouched.
    assert b.ints == {"n": 3, "only_b": 1}


def test_lua_ops_triples():
    s = Stats()
    s.incr("n", 3)
    s.add("s", 0.1)
    s.low("t", 3.0)
    s.high("t", 5.5)
    # ints first as ints, then floats, mins, maxes as repr strings (round-trip exact).
    assert s.lua_ops() == ["i", "n", 3, "f", "s", "0.1", "<", "t|min", "3.0", ">", "t|max", "5.5"]
    ops = s.lua_ops()
    assert len(ops) % 3 == 0
    assert Stats().lua_ops() == []


def test_lua_ops_float_repr_round_trips():
    s = Stats()
    s.add("x", 0.1 + 0.2)  # 0.30000000000000004
    (_, _, text) = s.lua_ops()
    assert text == "0.30000000000000004"
    assert float(text) == 0.1 + 0.2


@pytest.mark.parametrize(
    ("field", "rule"),
    [("t|min", "<"), ("t|max", ">"), ("n", "+"), ("lat|sum", "+"), ("min", "+"), ("t|minimum", "+"), ("x|max|n", "+")],
)
def test_merge_rule_by_suffix(field, rule):
    assert merge_rule(field) == rule


def test_folded_from_hashes_merges_by_suffix_with_bytes_keys():
    hashes = [
        {b"n": b"2", b"s": b"1.5", b"t|min": b"5.5", b"t|max": b"7"},
        {"n": "3", "s": "0.25", "t|min": "4", "t|max": "6.5", "x": "1.25"},
        {b"t|min": b"4.5", b"t|max": b"9", b"n": 1},
    ]
    f = Folded.from_hashes(hashes)
    # n 2 + 3 + 1 = 6; s 1.5 + 0.25 = 1.75; t|min min(5.5, 4, 4.5) = 4; t|max max(7, 6.5, 9) = 9.
    assert dict(f) == {"n": 6.0, "s": 1.75, "t|min": 4.0, "t|max": 9.0, "x": 1.25}
    assert all(isinstance(k, str) for k in f)
    assert all(isinstance(v, float) for v in f.values())


def test_folded_from_hashes_min_seen_first_larger():
    # a min field whose first value is the larger must still end at the smaller.
    f = Folded.from_hashes([{b"a|min": b"9"}, {b"a|min": b"-2"}, {b"a|max": b"-5"}, {b"a|max": b"-7"}])
    assert f["a|min"] == -2.0
    assert f["a|max"] == -5.0


def test_folded_from_hashes_of_nothing():
    assert dict(Folded.from_hashes([])) == {}
    assert dict(Folded.from_hashes([{}, {}])) == {}


def test_folded_from_stats_and_accessors():
    s = Stats()
    s.incr("a|n", 2)
    s.add("a|sum", 3.5)
    s.low("t", 1.0)
    s.high("t", 2.0)
    f = Folded.from_stats(s)
    assert dict(f) == {"a|n": 2.0, "a|sum": 3.5, "t|min": 1.0, "t|max": 2.0}
    assert isinstance(f["a|n"], float)
    assert len(f) == 4
    assert f.num("a|n") == 2.0
    assert f.num("missing") == 0.0
    assert f.num("missing", default=7.0) == 7.0
    with pytest.raises(KeyError):
        f["missing"]


def test_with_prefix_cuts_the_prefix_and_needs_the_separator():
    f = Folded({"a|x": 1.0, "a|y|z": 2.0, "ab|x": 3.0, "b|a|x": 4.0, "a": 5.0})
    assert f.with_prefix("a|") == {"x": 1.0, "y|z": 2.0}
    assert f.with_prefix("a|y|") == {"z": 2.0}
    assert f.with_prefix("zz|") == {}
    assert f.with_prefix("") == dict(f)


def test_folded_default_is_empty_and_independent():
    a, b = Folded(), Folded()
    assert len(a) == 0
    assert dict(b) == {}


def test_redis_round_trip_equals_in_memory_merge():
    # lua_ops -> what apply.lua would store -> from_hashes gives the same as merging in memory.
    parts = []
    for i in range(3):
        s = Stats()
        s.incr("n", i + 1)
        s.add("s", 0.5 * i)
        s.low("t", 10.0 - i)
        s.high("t", 10.0 + i)
        parts.append(s)
    merged = Stats()
    for p in parts:
        merged.merge(p)
    hashes = []
    for p in parts:
        ops = p.lua_ops()
        hashes.append({ops[k + 1].encode(): str(ops[k + 2]).encode() for k in range(0, len(ops), 3)})
    assert dict(Folded.from_hashes(hashes)) == dict(Folded.from_stats(merged))
    # n 1+2+3 = 6, s 0 + 0.5 + 1 = 1.5, t|min 8, t|max 12.
    assert dict(Folded.from_stats(merged)) == {"n": 6.0, "s": 1.5, "t|min": 8.0, "t|max": 12.0}


_op = st.one_of(
    st.tuples(st.just("incr"), st.sampled_from(["n", "k"]), st.integers(0, 5)),
    st.tuples(st.just("add"), st.sampled_from(["s", "q"]), st.integers(-8, 8).map(lambda i: i / 4)),
    st.tuples(st.just("low"), st.sampled_from(["t", "u"]), st.integers(-50, 50).map(float)),
    st.tuples(st.just("high"), st.sampled_from(["t", "u"]), st.integers(-50, 50).map(float)),
)


def _apply(ops):
    s = Stats()
    for name, field, value in ops:
        getattr(s, name)(field, value)
    return s


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(_op, max_size=30), cut=st.integers(0, 30))
def test_any_split_merges_to_the_whole(ops, cut):
    # quarters and small integers add exactly, so equality is exact.
    whole = _apply(ops)
    left, right = _apply(ops[:cut]), _apply(ops[cut:])
    ab = Folded.from_stats(_apply(ops[:cut]).merge(right))
    ba = Folded.from_stats(right.merge(left))
    assert dict(ab) == dict(Folded.from_stats(whole))
    assert dict(ba) == dict(Folded.from_stats(whole))
