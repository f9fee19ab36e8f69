"""Rankings in the robustness and fairness worst cases: a query variant's own run, scored on the
judgments it carries, its track's main metric (RR@10 regular, NDCG@10 TREC), min per instance.

Robustness, regular track, scenario "msmarco" (judgments travel with the variants, as `holistic
perturb` keeps them):
  q1 scores a b c, judged b=1       RR@10 1/2   Success@1 0
  q1~typos scores b a               RR@10 1     Success@1 1
  q1~synonym scores c a b           RR@10 1/3   Success@1 0     q1 worst: 1/3, Success@1 0
  q2 order c a, judged a=1          RR@10 1/2   ~typos order a: 1                q2 worst: 1/2
  q3 binary: c Yes first, judged c=1  RR@10 1, no variant                          q3: 1
  q4 no judgment (they come later)  not scored by the worst case
  robustness = (1/3 + 1/2 + 1) / 3 = 11/18; typos_worst (1/2 + 1/2) / 2; typos_perturbed 1
"""

from __future__ import annotations

import math

import pytest

from metric_services.shared.ranking_score import ranking_config
from tests.metric_services.retrieval.support import ranking_prediction
from tests.metric_services.test_robustness_fairness import FAIR, ROB, fold


def ranked(pid, original="", name="", kind=ROB, groups=None, **kw):
    p = ranking_prediction(pid, **kw)
    if original:
        p.perturbation.name, p.perturbation.family, p.perturbation.original_id = name, kind, original
    for k, v in (groups or {}).items():
        p.groups[k] = v
    return p


def robustness_rows():
    return [
        ranked("q1", scores={"a": 0.9, "b": 0.5, "c": 0.1}, rels={"b": 1}),
        ranked("q1~t", "q1", "typos", scores={"b": 0.9, "a": 0.5}, rels={"b": 1}),
        ranked("q1~s", "q1", "synonym", scores={"c": 0.9, "a": 0.5, "b": 0.1}, rels={"b": 1}),
        ranked("q2", order=["c", "a"], rels={"a": 1, "c": 0}),
        ranked("q2~t", "q2", "typos", order=["a"], rels={"a": 1, "c": 0}),
        ranked("q3", answers={"a": ("No", -0.1), "b": ("Yes", -0.3), "c": ("Yes", -0.2)}, rels={"c": 1}),
        ranked("q4", scores={"a": 1.0}),
    ]


def test_rankings_worst_case_over_perturbations_by_hand(settings):
    f = fold("robustness", robustness_rows(), settings)
    part = f.scenarios["msmarco"]
    m = {x.name: x.value for x in part.metrics}
    assert part.main_metric == "RR@10"
    assert m["robustness"] == pytest.approx(11 / 18) and m["robustness[RR@10]"] == pytest.approx(11 / 18)
    assert m["typos_worst"] == pytest.approx(1 / 2) and m["typos_perturbed"] == 1.0
    assert m["typos_before"] == pytest.approx(1 / 2) and m["synonym_worst"] == pytest.approx(1 / 3)
    assert m["robustness[Success@1]"] == pytest.approx(1 / 3)  # q1 0, q2 0, q3 1
    assert m["robustness[Recall@2]"] == pytest.approx(2 / 3)  # q1 min(1, 1, 0: c a), q2 1, q3 1
    assert "RR@10" in f.report.skipped_reason and "unscored" not in m  # q4: no judgment yet
    assert f.dimensions[0].score == pytest.approx(11 / 18)


def test_trec_rankings_fairness_worst_case_and_groups(settings, monkeypatch):
    """Scenario "dl" on the TREC track: NDCG@10 on graded judgments a=1 b=3 c=2; RR binarized (a not
    relevant). Original run a b c: DCG 1 + 3/log2 3 + 2/2; ideal 3 + 2/log2 3 + 1/2. The dialect
    variant's run c a: DCG 2 + 1/log2 3 (b not retrieved); RR@10 1/2 (original), 1 (variant)."""
    monkeypatch.setenv("HOLISTIC_RETRIEVAL_TRACKS", '{"dl": "trec"}')
    ranking_config.cache_clear()
    try:
        rels = {"a": 1, "b": 3, "c": 2}
        rows = [
            ranked("q5", scenario="dl", scores={"a": 3.0, "b": 2.0, "c": 1.0}, rels=rels, groups={"dialect": "x"}),
            ranked("q5~d", "q5", "dialect", FAIR, scenario="dl", order=["c", "a"], rels=rels),
        ]
        f = fold("fairness", rows, settings, min_group_count=1)
    finally:
        ranking_config.cache_clear()
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    before = (1 + 3 / math.log2(3) + 2 / 2) / ideal
    after = (2 + 1 / math.log2(3)) / ideal
    part = f.scenarios["dl"]
    m = {x.name: x.value for x in part.metrics}
    assert part.main_metric == "NDCG@10"
    assert m["fairness"] == pytest.approx(min(before, after), abs=1e-12)
    assert m["dialect_before"] == pytest.approx(before, abs=1e-12)
    assert m["dialect_perturbed"] == pytest.approx(after, abs=1e-12)
    assert m["fairness[RR@10]"] == pytest.approx(1 / 2)
    (dialect,) = f.groups
    assert dialect.values[0].metric.value == pytest.approx(before, abs=1e-12)  # the unperturbed query's
