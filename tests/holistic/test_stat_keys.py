"""The statistics field-name grammar (holistic/stats/names.py): built by parts, read back by parts."""

from __future__ import annotations

import pickle

import pytest

from holistic.stats.instances import OVER_CAP
from holistic.stats.mergeable import Folded, Stats, signature_field
from holistic.stats.names import ANY, Count, Fields, Quantity, Sum, SumSq, key, split_tag, tag


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


def test_typed_names_are_the_stored_strings_built_from_what_they_mean():
    assert Count("scored", scenario="qa") == "scenario=qa|scored|n"
    assert Sum("f1", scenario="qa", group=("dialect", "AAE")) == "scenario=qa|dialect=AAE|f1|sum"
    assert SumSq("f1") == "f1|sumsq"
    assert Quantity("len", scenario="a=b") == "scenario=a=b|len"  # a tag's value keeps its "="
    assert Count("f1", scenario="qa").quantity.sum == Sum("f1", scenario="qa")
    # parse is the inverse, and refuses what is not its kind
    for typed in (Count("scored", scenario="qa"), Count("n"), Count("f1", group=("g", "x")), Sum("f1", scenario="s")):
        back = type(typed).parse(typed)
        assert (back, back.metric, back.scenario, back.group) == (typed, typed.metric, typed.scenario, typed.group)
    assert Count.parse("scenario=qa|f1|sum") is None
    assert Count.parse("#sig|n") is None
    assert Count.parse("a|b|n") is None  # two untagged parts: an older layout, not a typed name
    assert pickle.loads(pickle.dumps(Count("x", scenario="s"))).scenario == "s"


@pytest.mark.parametrize(
    ("build", "why"),
    [
        (lambda: Count("a|b"), "metric"),
        (lambda: Count("a=b"), "metric"),
        (lambda: Count("#sig"), "metric"),
        (lambda: Count("x", scenario="a|b"), "scenario"),
        (lambda: Count("x", group=("scenario", "v")), "group name"),
        (lambda: Count("x", group=("g", "a|b")), "group value"),
    ],
)
def test_typed_names_refuse_parts_that_would_read_back_as_another_name(build, why):
    with pytest.raises(ValueError, match=why.split()[0]):
        build()


def test_a_fold_reads_typed_names_without_assembling_parts():
    """Two scenarios' counts and one group's moments, written through Stats with typed names and read
    back from the merged fields: values by name, each scenario by find, moments as a triple."""
    st = Stats()
    st.incr(Count("scored", scenario="qa"), 3)
    st.incr(Count("scored", scenario="sum"), 1)
    st.incr(Count("scored"), 4)  # the family-wide count, no scenario: not one of find(scenario=ANY)
    for v in (0.5, 1.0):
        st.add_moments(Quantity("f1", scenario="qa", group=("dialect", "AAE")), v)
    st.add_moments(Quantity("f1", scenario="qa", group=("dialect", "SAE")), 0.25)
    f = Folded.from_stats(st.merge(Stats()))
    assert f[Count("scored", scenario="qa")] == 3.0
    assert f.get(Count("scored", scenario="nope"), 0) == 0
    assert f.find(Count("scored", scenario=ANY)) == [Count("scored", scenario="qa"), Count("scored", scenario="sum")]
    assert [c.scenario for c in f.find(Count("scored", scenario=ANY))] == ["qa", "sum"]
    assert f.find(Count("scored")) == [Count("scored")]
    totals = f.moments(Quantity("f1", scenario="qa", group=("dialect", "AAE")))
    assert totals == (2.0, 1.5, 1.25) and totals.mean == 0.75
    by_dialect = f.find(Count("f1", scenario="qa", group=("dialect", ANY)))
    assert [c.group for c in by_dialect] == [("dialect", "AAE"), ("dialect", "SAE")]
    assert f.moments(Quantity("f1", scenario="none")) == (0.0, 0.0, 0.0)
