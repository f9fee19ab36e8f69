"""The statistics field-name grammar (holistic/stat_keys.py): built by parts, read back by parts."""

from __future__ import annotations

import pytest

from holistic.instances import OVER_CAP
from holistic.stat_keys import Fields, key, split_tag, tag
from holistic.stats import Folded, Stats, signature_field


def test_key_joins_parts_with_the_separator():
    assert key("mmlu", "ref", "exact_match", "sum") == "mmlu|ref|exact_match|sum"
    assert key("n") == "n"
    assert tag("dialect", "AAE") == "dialect=AAE"
    assert split_tag("identity=a=b") == ("identity", "a=b")


def folded() -> Folded:
    st = Stats()
    for scn in ("mmlu", "boolq"):
        st.incr(key(scn, "n"), 3)
        st.incr(key(scn, "task:2"), 3)
        st.incr(key(scn, "ref", "n"), 2)
        st.add(key(scn, "ref", "f1_score", "sum"), 1.5)
        st.bump(key(scn, "cls_true"), "yes|no", 2)  # a free-text label with the separator: the last part
        st.bump(key(scn, "cls_true"), "maybe", 1)
    st.incr(key("lbl", "a|b", "sum"))  # free text before a known leaf
    st.incr(key("lbl", "a|b", "above"))
    st.incr(key("lbl", "a", "sum"), 2)
    st.incr(key("in:0.5", "n"), 4)
    st.incr(key("in:0.5", "ge:0.5"), 1)
    st.incr(key("in:0.7", "sum"), 1)  # no "n": not a quantity with a count
    st.incr(OVER_CAP, 5)
    st.incr(signature_field("abc"), 3)
    st.high("t", 9.0)
    return Folded.from_stats(st)


def test_scope_cuts_the_prefix_and_keeps_free_text_whole():
    f = folded()
    assert dict(f.scope("mmlu", "cls_true")) == {"yes|no": 2.0, "maybe": 1.0}
    assert dict(f.scope("mmlu", "ref")) == {"n": 2.0, "f1_score|sum": 1.5}
    assert f.scope("mmlu").num("ref", "f1_score", "sum") == 1.5
    assert dict(f.scope("nothing")) == {}


def test_names_are_the_parts_under_a_prefix_with_a_leaf():
    f = folded()
    assert f.names(having="n") == ["boolq", "in:0.5", "mmlu"]  # not "mmlu|ref", whose "n" is deeper
    assert f.names("mmlu") == ["cls_true", "n", "ref", "task:2"]
    assert f.names("mmlu", having=key("f1_score", "sum")) == ["ref"]  # the leaf may be a key
    assert f.names("mmlu", "ref", having="sum") == ["f1_score"]
    assert f.names(having="n", marker="in:") == ["0.5"]
    assert f.names(marker="in:") == ["0.5", "0.7"]
    # a single-part read cuts a label holding the separator; free=True keeps it whole
    assert f.names("lbl", having="sum") == ["a"]
    assert f.names("lbl", having="sum", free=True) == ["a", "a|b"]
    assert f.scope("lbl", "a|b").num("above") == 1.0
    with pytest.raises(ValueError):
        f.names("lbl", free=True)


def test_groups_split_by_the_next_part_in_one_pass_without_the_cores_fields():
    f = folded()
    groups = f.groups()
    assert "#inst" not in groups and "#sig" not in groups  # the core's "#" parts
    assert set(groups) == {"mmlu", "boolq", "lbl", "in:0.5", "in:0.7", "t"}
    assert dict(groups["boolq"].scope("cls_true")) == {"yes|no": 2.0, "maybe": 1.0}
    assert groups["t"].num("max") == 9.0
    assert set(f.groups(marker="in:")) == {"0.5", "0.7"}
    # groups split at the next separator: free text before a leaf is read with names(free=True)
    assert dict(f.groups("lbl")["a"]) == {"sum": 2.0, "b|sum": 1.0, "b|above": 1.0}


def test_num_and_marked():
    f = folded()
    assert f.num("mmlu", "ref", "n") == 2.0
    assert f.num("mmlu", "missing") == 0.0
    assert f.num("mmlu", "missing", default=-1.0) == -1.0
    assert f.scope("mmlu").marked("task:") == {"2": 3.0}
    assert f.scope("in:0.5").marked("ge:") == {"0.5": 1.0}


def test_fields_is_a_read_only_mapping():
    f = Fields({"a|n": 1.0})
    assert f["a|n"] == 1.0 and "a|n" in f and len(f) == 1 and f.get("b") is None
    assert f == {"a|n": 1.0}
    with pytest.raises(KeyError):
        f["b"]
