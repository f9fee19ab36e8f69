"""Robustness and fairness: HELM's worst case on hand-worked instances, and group fairness."""

from __future__ import annotations

import time

import pytest

from holistic.families import one_pass
from holistic.families.registry import load_family
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from tests.conftest import drain
from tests.factories import prediction

NOW = time.time() - 600
ROB, FAIR = pb.PERTURBATION_FAMILY_ROBUSTNESS, pb.PERTURBATION_FAMILY_FAIRNESS


def variant(original: str, name: str, right: bool, kind: int = ROB, suffix: str = "") -> pb.Prediction:
    p = prediction(f"{original}~{name}{suffix}", output="Paris" if right else "Rome", produced_at_s=NOW)
    p.perturbation.name, p.perturbation.family, p.perturbation.original_id = name, kind, original
    return p


def original(pid: str, right: bool, **fields) -> pb.Prediction:
    return prediction(pid, output="Paris" if right else "Rome", produced_at_s=NOW, **fields)


# q1 right, its typo wrong -> 0;  q2 wrong, its typo right -> 0;  q3 right, no variant -> 1 (its own score);
# q4 never sent, its typo right -> 1 (missing original);  q5 right, typo right and a duplicate typo wrong -> 0.
ROWS = [
    original("q1", True), variant("q1", "typos", False),
    original("q2", False), variant("q2", "typos", True),
    original("q3", True),
    variant("q4", "typos", True),
    original("q5", True), variant("q5", "typos", True), variant("q5", "typos", False, suffix="-again"),
    variant("q1", "dialect", False, FAIR),  # the other kind: robustness ignores it
]  # fmt: skip


def fold(name: str, preds: list[pb.Prediction], settings, **config):
    family = load_family(name).configured(**config) if config else load_family(name)
    env = BatchEnvelope(model="m", predictions=preds)
    env.accept_time.FromSeconds(int(time.time()))
    return family.fold(Folded.from_stats(one_pass(family, env, settings)), "m", settings)


def test_worst_case_by_hand(settings):
    f = fold("robustness", ROWS, settings)
    m = {x.name: x for x in f.report.metrics}
    assert m["robustness"].value == pytest.approx((0 + 0 + 1 + 1 + 0) / 5)  # 0.4 over 5 instances
    assert m["typos_worst"].value == pytest.approx((0 + 0 + 1 + 0) / 4)  # instances with a typo variant
    assert m["typos_before"].value == pytest.approx((1 + 0 + 1) / 3)  # ... and their original
    assert m["typos_perturbed"].value == pytest.approx((0 + 1 + 1 + 0) / 4)  # q5's duplicate folded by min
    assert m["instances"].value == 5 and m["instances_without_original"].value == 1
    assert f.dimensions[0].score == pytest.approx(0.4)
    assert f.scenarios["mmlu"].main_metric == "exact_match"


def test_worst_case_at_an_edge_has_a_wilson_interval_not_a_point(settings):
    # five instances, each right with its typo right too: worst = 1 everywhere (0/1 values, no spread).
    # Wilson(5, 5) = (5/(5 + z^2), 1) = (0.5655175, 1), for the scenario, the perturbation and the axis.
    from holistic.stats.intervals import wilson

    rows = [r for i in range(5) for r in (original(f"e{i}", True), variant(f"e{i}", "typos", True))]
    f = fold("robustness", rows, settings)
    m = {x.name: x for x in f.report.metrics}
    lo = wilson(5, 5)[0]
    assert lo == pytest.approx(0.5655175352, abs=1e-9)
    for metric in (m["robustness"], m["typos_worst"], f.scenarios["mmlu"].metrics[0]):
        assert metric.value == 1.0
        assert (metric.interval.lower, metric.interval.upper) == pytest.approx((lo, 1.0), abs=1e-12), metric.name
    assert (f.dimensions[0].interval.lower, f.dimensions[0].interval.upper) == pytest.approx((lo, 1.0), abs=1e-12)
    # a graded spread is untouched: the by-hand case above keeps its normal intervals
    mixed = {x.name: x for x in fold("robustness", ROWS, settings).report.metrics}
    # worst values 0, 0, 1, 1, 0: variance of the mean (2 - 5 * 0.16) / 4 / 5 = 0.06, clipped below at 0
    rob = mixed["robustness"].interval
    assert (rob.lower, rob.upper) == pytest.approx((0.0, 0.4 + 1.959963984540054 * 0.06**0.5), abs=1e-12)


def test_fairness_counterfactual_and_groups_by_hand(settings):
    preds = [
        original("g1", False, groups={"dialect": "aae"}), original("g2", True, groups={"dialect": "aae"}),
        original("g3", True, groups={"dialect": "sae"}), original("g4", True, groups={"dialect": "sae"}),
        original("g5", True, groups={"dialect": "sae", "region": "uk"}),
        variant("g3", "dialect", False, FAIR), variant("g4", "dialect", True, FAIR),
    ]  # fmt: skip
    f = fold("fairness", preds, settings, min_group_count=2)
    (dialect,) = [b for b in f.groups if b.key == "dialect"]
    scores = {v.value: v.metric.value for v in dialect.values}
    assert scores == {"aae": 0.5, "sae": 1.0}  # aae: (0 + 1) / 2; sae: 3 of 3
    assert (dialect.worst_value, dialect.best_value, dialect.max_gap) == ("aae", "sae", 0.5)
    assert dialect.worst_to_best_ratio == 0.5
    (region,) = [b for b in f.groups if b.key == "region"]
    assert region.values[0].too_few and not region.worst_value  # 1 prediction < 2
    # counterfactual: g1 0, g2 1, g3 min(1, 0) = 0, g4 1, g5 1 -> 3 / 5 = 0.6; worst group 0.5 -> axis 0.5
    dim = f.dimensions[0]
    named = {m.name: m.value for m in dim.metrics}
    assert named["counterfactual_fairness"] == pytest.approx(0.6)
    assert named["worst_group[dialect=aae]"] == pytest.approx(0.5)
    assert dim.score == pytest.approx(0.5)


def test_summarization_without_judgements_is_absent_with_a_reason(settings):
    p = prediction("s1", scenario="news", task=pb.TASK_SUMMARIZATION, output="A summary.", references=["Ref."])
    f = fold("robustness", [p], settings)
    assert not f.dimensions[0].HasField("score")
    assert "rouge_2" in f.dimensions[0].absent_reason and f.report.skipped == 1
    judged = prediction("s2", scenario="news", task=pb.TASK_SUMMARIZATION, correct=True)
    assert fold("robustness", [p, judged], settings).dimensions[0].score == 1.0


def test_variants_before_their_original_in_later_batches(gateway, make_worker):
    """Any order, any batch: the variants arrive first, the original last, on 2 replicas."""
    workers = [make_worker("robustness"), make_worker("robustness")]
    with gateway.client() as client:
        for i, p in enumerate(reversed(ROWS)):
            client.submit([p], batch_id=f"b{i}", model="m")
            workers[i % 2].step(block_ms=1)
        drain(*workers)
        profile = client.get_profile("m")
    (dim,) = [d for d in profile.dimensions if d.kind == 3]
    assert dim.score == pytest.approx(0.4)
    report = next(f for f in profile.families if f.family == "robustness")
    assert {m.name: m.value for m in report.metrics}["typos_worst"] == pytest.approx(0.25)


def test_references_win_setting_scores_worst_cases_by_the_references(make_settings):
    # q1 "Paris" (right by its reference) judged wrong by the client; its typo variant "Paris" too.
    rows = [original("q1", True, correct=False), variant("q1", "typos", True), original("q2", False, references=[])]
    rows[2].correct = True  # no references: only the judgement can score it
    client = fold("robustness", rows, make_settings())
    helm = fold("robustness", rows, make_settings(references_win=True))
    # default: q1 min(0, 1) = 0, q2 1 -> 1/2; references first: q1 min(1, 1) = 1, q2 1 -> 1.
    assert {m.name: m.value for m in client.report.metrics}["robustness"] == pytest.approx(0.5)
    assert {m.name: m.value for m in helm.report.metrics}["robustness"] == pytest.approx(1.0)


def test_worst_case_of_every_metric_of_the_tasks_helm_set(settings):
    import math

    QA = pb.TASK_OPEN_QA

    def qa(pid, output, ref, **kw):
        return prediction(pid, scenario="qa", task=QA, output=output, references=[ref], produced_at_s=NOW, **kw)

    typo = qa("q1~typos", "cat sat on mat", "cat sat on mat")
    typo.perturbation.name, typo.perturbation.family, typo.perturbation.original_id = "typos", ROB, "q1"
    lower = qa("q2~lowercase", "paris", "Paris")
    lower.perturbation.name, lower.perturbation.family, lower.perturbation.original_id = "lowercase", ROB, "q2"
    rows = [
        qa("q1", "the cat sat", "cat sat on mat"),  # f1 2/3, em 0, qem 0, rouge_l 4/7, bleu_1 2/3 e^-1/3
        typo,  # all 1: the worst stays the original's
        qa("q2", "Paris", "Paris"),  # all 1
        lower,  # em 0, qem 1, f1 1, rouge_l 1, bleu_1 0 (case-sensitive)
        qa("q3", "x", "y", correct=True),  # main f1 by the judgement: 1; the others by the references: 0
        original("m1", True),  # mmlu: exact-match set, all 1
    ]
    f = fold("robustness", rows, settings)
    part = {m.name: m.value for m in f.scenarios["qa"].metrics}
    assert part["robustness"] == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert part["robustness[f1_score]"] == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert part["robustness[exact_match]"] == 0.0
    assert part["robustness[quasi_exact_match]"] == pytest.approx(1 / 3)
    assert part["robustness[rouge_l]"] == pytest.approx((4 / 7 + 1 + 0) / 3)
    assert part["robustness[bleu_1]"] == pytest.approx((2 / 3 * math.exp(-1 / 3) + 0 + 0) / 3)
    assert part["robustness[bleu_4]"] < 1e-300
    assert "robustness[prefix_exact_match]" not in part  # not in the open-ended set
    report = {m.name: m for m in f.report.metrics}
    # each metric averaged over the scenarios that define it: exact_match over qa (0) and mmlu (1).
    assert report["robustness[exact_match]"].value == pytest.approx(0.5)
    assert report["robustness[prefix_exact_match]"].value == 1.0  # mmlu only
    assert report["robustness[f1_score]"].value == pytest.approx(8 / 9)  # qa only
    # the per-perturbation breakdown stays the main metric's
    assert report["typos_worst"].value == pytest.approx(2 / 3)
    assert report["robustness"].value == pytest.approx((8 / 9 + 1) / 2)


def test_other_metrics_keep_each_variants_own_slot(settings):
    """`+<metric>|orig` is the originals' value of the other metric, `+<metric>|worst` the min over the
    original and its variants: a variant's other metrics go to its own slots, never the original's."""
    QA = pb.TASK_OPEN_QA

    def qa(pid, output, **kw):
        return prediction(pid, scenario="qa", task=QA, output=output, references=["cat sat"], produced_at_s=NOW, **kw)

    typo = qa("q1~typos", "a cat sat")  # em 0; f1 1 (HELM's normalization drops the article)
    typo.perturbation.name, typo.perturbation.family, typo.perturbation.original_id = "typos", ROB, "q1"
    lone = qa("q2~typos", "cat sat")  # a variant whose original never comes: no orig for it
    lone.perturbation.name, lone.perturbation.family, lone.perturbation.original_id = "typos", ROB, "q2"
    family = load_family("robustness")
    env = BatchEnvelope(model="m", predictions=[qa("q1", "cat sat"), typo, lone])  # q1: em 1, f1 1
    env.accept_time.FromSeconds(int(time.time()))
    q = Folded.from_stats(one_pass(family, env, settings)).groups()["qa"].scope("f1_score")
    assert (q.num("+exact_match", "orig", "n"), q.num("+exact_match", "orig", "sum")) == (1, 1.0)
    assert (q.num("+exact_match", "worst", "n"), q.num("+exact_match", "worst", "sum")) == (2, 0.0 + 1.0)
    assert (q.num("orig", "n"), q.num("orig", "sum")) == (1, 1.0)
    assert (q.num("worst", "n"), q.num("worst", "sum")) == (2, 2.0)
