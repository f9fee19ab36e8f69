"""The retrieval family: compute and fold on hand-worked queries, every ranking form, the scenario's
accuracy in the profile, the main-metric setting, HELM's topk variants, and late judgments in one pass.

Fixture (regular track, scenario "msmarco"):
  q1 scores a=0.9 b=0.5 c=0.1, judged b=1          run a b c: RR@10 1/2, Success@1 0, Recall@1 0
  q2 order [c, a], documents a b c, judged a=1 c=0  run c a:   RR@10 1/2
  q3 binary: a No(-0.1) b Yes(-0.3) c Yes(-0.2), judged c=1
                                                   run c b a: RR@10 1
  q4 scores, no judgment                           pending, not scored
  msmarco RR@10 = (1/2 + 1/2 + 1) / 3 = 2/3; Success@1 = 1/3; Recall@2 = 1
"""

from __future__ import annotations

import random

import pytest

from holistic.families import one_pass
from holistic.profile import fold as profile_mod
from holistic.settings import load_settings
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from metric_services.accuracy import FAMILY as ACCURACY
from metric_services.retrieval import FAMILY
from metric_services.shared.ranking_measures import names
from tests.factories import prediction
from tests.metric_services.retrieval.support import envelope, helm_measure, judgments_only, ranking_prediction


def settings(**overrides):
    return load_settings(redis_url="unix:///nowhere", **overrides)


def fixture():
    return [
        ranking_prediction("q1", scores={"a": 0.9, "b": 0.5, "c": 0.1}, rels={"b": 1}),
        ranking_prediction("q2", order=["c", "a"], rels={"a": 1, "c": 0, "b": 0}),
        ranking_prediction("q3", answers={"a": ("No", -0.1), "b": ("Yes", -0.3), "c": ("Yes", -0.2)}, rels={"c": 1}),
        ranking_prediction("q4", scores={"a": 1.0}),
        prediction("m1", scenario="mmlu", output="B", references=["B"]),
    ]


def fold(preds, family=FAMILY, s=None):
    s = s or settings()
    return family.fold(Folded.from_stats(one_pass(family, envelope(preds), s)), "m", s)


def metrics(part):
    return {m.name: m for m in part.metrics}


def test_hand_worked_scenario_means_and_report():
    f = fold(fixture())
    part = f.scenarios["msmarco"]
    m = metrics(part)
    assert part.task == pb.TASK_RANKING and part.main_metric == "RR@10" and part.count == 4
    assert m["RR@10"].value == pytest.approx(2 / 3) and m["RR@10"].count == 3
    assert m["RR@10"].HasField("interval") and m["RR@10"].interval.lower < 2 / 3 < m["RR@10"].interval.upper
    assert m["Success@1"].value == pytest.approx(1 / 3) and m["Success@1"].interval.method == "wilson"
    assert m["Recall@1"].value == pytest.approx(1 / 3)
    assert m["Recall@2"].value == pytest.approx(1.0)
    assert m["queries_pending_judgments"].value == 1
    assert "NDCG@10" not in m  # regular track: HELM does not compute it
    assert part.accuracy.source == "RR@10" and part.accuracy.metric.value == pytest.approx(2 / 3)
    rep = f.report
    assert rep.count == 5 and rep.skipped == 1 and "1 not ranking tasks" in rep.skipped_reason
    assert {x.name: x.value for x in rep.metrics}["RR@10"] == pytest.approx(2 / 3)


def test_scenario_accuracy_feeds_the_accuracy_axis():
    s = settings()
    env = envelope(fixture())
    folds = {fam.name: fam.fold(Folded.from_stats(one_pass(fam, env, s)), "m", s) for fam in (ACCURACY, FAMILY)}
    scenarios = profile_mod.merge_scenarios(folds)
    msmarco = next(sp for sp in scenarios if sp.scenario == "msmarco")
    assert msmarco.main_metric == "RR@10"  # the accuracy family leaves a ranking task's main metric to us
    dim = profile_mod.accuracy_dimension(folds, scenarios)
    # mmlu exact_match 1, msmarco RR@10 2/3: the axis is their mean
    assert dim.score == pytest.approx((1 + 2 / 3) / 2)
    assert "accuracy[msmarco:RR@10]" in {m.name for m in dim.metrics}


def test_trec_track_main_metric_ndcg_and_the_override():
    fam = FAMILY.configured(tracks={"trec": "trec"})
    preds = [ranking_prediction("t1", scenario="trec", scores={"a": 2, "b": 1}, rels={"a": 1, "b": 3})]
    part = fold(preds, fam).scenarios["trec"]
    m = metrics(part)
    # binarized: only b (3) is relevant for RR; NDCG gains 1, 3: (1 + 3/log2 3) / (3 + 1/log2 3)
    assert m["RR@10"].value == pytest.approx(0.5)
    ndcg = (1 + 3 / 1.584962500721156) / (3 + 1 / 1.584962500721156)
    assert m["NDCG@10"].value == pytest.approx(ndcg)
    assert part.main_metric == "NDCG@10" and part.accuracy.metric.value == pytest.approx(ndcg)
    part = fold(preds, fam, settings(main_metrics={"trec": "Recall@1"})).scenarios["trec"]
    assert part.main_metric == "Recall@1" and part.accuracy.source == "Recall@1" and part.accuracy.metric.value == 0


def test_topk_variants_cut_the_run_to_the_retrievers_top_k():
    fam = FAMILY.configured(valid_topk=2)
    # model ranks c a b d; the retriever ranked a=1 b=2 c=3 d=4: the topk run is a b.
    p = ranking_prediction(
        "q", scores={"c": 4, "a": 3, "b": 2, "d": 1}, rels={"b": 1}, retriever={"a": 1, "b": 2, "c": 3, "d": 4}
    )
    m = metrics(fold([p], fam).scenarios["msmarco"])
    assert m["RR@10"].value == pytest.approx(1 / 3)
    assert m["RR@10 (topk=2)"].value == pytest.approx(1 / 2)
    assert "RR@10 (topk=2)" not in metrics(fold([p]).scenarios["msmarco"])  # only with valid_topk


def test_late_judgments_in_one_pass_equal_judged_rankings():
    ranked = [ranking_prediction(f"q{i}", scores={"a": 1.0, "b": 2.0, "c": 0.5}) for i in range(3)]
    late = [judgments_only("q0", {"a": 1}), judgments_only("q1", {"c": 1}), judgments_only("q1", {"b": 0})]
    together = [
        ranking_prediction("q0", scores={"a": 1.0, "b": 2.0, "c": 0.5}, rels={"a": 1}),
        ranking_prediction("q1", scores={"a": 1.0, "b": 2.0, "c": 0.5}, rels={"c": 1, "b": 0}),
        ranking_prediction("q2", scores={"a": 1.0, "b": 2.0, "c": 0.5}),
    ]
    split = metrics(fold(ranked + late).scenarios["msmarco"])
    whole = metrics(fold(together).scenarios["msmarco"])
    assert split["RR@10"].value == whole["RR@10"].value == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert split["queries_pending_judgments"].value == whole["queries_pending_judgments"].value == 1
    only_late = metrics(fold(late).scenarios["msmarco"])
    assert "RR@10" not in only_late and only_late["judgments_without_ranking"].value == 2
    assert fold(ranked + late).report.count == 6  # every prediction it saw, judgment rows included


def test_empty_ranking_scores_zero_and_ids_with_separators():
    p = ranking_prediction("q", order=[], rels={"a;b=c%": 1}, form=pb.RANKING_FORM_ORDER)
    q = ranking_prediction("r", scores={"a;b=c%": 1.0, "a%3Bb=c%": 2.0}, rels={"a;b=c%": 1})
    m = metrics(fold([p, q]).scenarios["msmarco"])
    assert m["RR@10"].value == pytest.approx((0 + 1 / 2) / 2) and m["RR@10"].count == 2


def test_perturbed_rankings_stay_out_of_the_scenario():
    p = ranking_prediction("v", scores={"a": 1.0}, rels={"a": 0})
    p.perturbation.name, p.perturbation.family, p.perturbation.original_id = "typos", 1, "q1"
    f = fold([ranking_prediction("q1", scores={"a": 1.0}, rels={"a": 1}), p])
    assert metrics(f.scenarios["msmarco"])["RR@10"].value == 1.0 and "perturbed" in f.report.skipped_reason


@pytest.mark.parametrize("judged_final", [False, True])
def test_judged_at_once_and_judged_later_fold_to_the_same_numbers(judged_final):
    """A ranking sent with its judgments and one whose judgments come after it agree on random
    queries: both tracks, topk variants, empty runs, ties, nothing relevant."""
    rng = random.Random(5)
    fam = FAMILY.configured(tracks={"dl": "trec"}, valid_topk=3, judged_final=judged_final)
    at_once, later = [], []
    for i in range(300):
        scn = rng.choice(["web", "dl"])
        docs = [f"d{j}" for j in range(rng.choice([0, 1, 4, 12, 25]))]
        scores = {d: float(rng.randrange(5)) for d in docs}
        rels = {d: rng.choice([0, 1, 2, 3]) for d in docs if rng.random() < 0.5} or {"x": rng.choice([0, 1, 2])}
        retriever = {d: k + 1 for k, d in enumerate(rng.sample(docs, len(docs)))}
        form = pb.RANKING_FORM_SCORES
        at_once.append(
            ranking_prediction(f"q{i}", scenario=scn, scores=scores, rels=rels, retriever=retriever, form=form)
        )
        later.append(ranking_prediction(f"q{i}", scenario=scn, scores=scores, retriever=retriever, form=form))
        later.append(judgments_only(f"q{i}", rels, scenario=scn, form=pb.RANKING_FORM_JUDGMENTS_ONLY))
    rng.shuffle(later)
    a, b = fold(at_once, fam), fold(later, fam)
    for scn in ("web", "dl"):
        ma, mb = metrics(a.scenarios[scn]), metrics(b.scenarios[scn])
        assert {n for n in ma if "@" in n} == {n for n in mb if "@" in n} and any("topk=3" in n for n in ma)
        for name, m in ma.items():
            if "@" in name:
                assert mb[name].value == pytest.approx(m.value, abs=1e-12) and mb[name].count == m.count, name


def test_judgments_for_a_ranking_sent_judged_join_its_judgments():
    """Later judgments join those a ranking came with: run b a, judged b=0 then a=1: RR@10 1/2, once."""
    f = fold([ranking_prediction("q", scores={"a": 1.0, "b": 2.0}, rels={"b": 0}), judgments_only("q", {"a": 1})])
    m = metrics(f.scenarios["msmarco"])
    assert m["RR@10"].value == 0.5 and m["RR@10"].count == 1 and "judgments_without_ranking" not in m


def test_scenario_means_and_topk_variants_equal_helm_through_pytrec_eval():
    """Per-scenario means over random queries equal the mean of HELM's per-query pytrec_eval values,
    for the whole run and for HELM's rank_limit (documents the retriever ranked within valid_topk)."""
    rng = random.Random(21)
    fam = FAMILY.configured(tracks={"dl": "trec"}, valid_topk=4)
    preds, expected = [], {}
    for i in range(200):
        scn = rng.choice(["web", "dl"])
        docs = [f"d{j}" for j in range(rng.choice([1, 3, 8, 30]))]
        scores = {d: float(rng.randrange(4)) for d in docs}
        rels = {d: rng.choice([0, 1, 2, 3]) for d in docs if rng.random() < 0.6} or {"x": 2}
        retriever = {d: k + 1 for k, d in enumerate(rng.sample(docs, len(docs)))}
        preds.append(ranking_prediction(f"q{i}", scenario=scn, scores=scores, rels=rels, retriever=retriever))
        track = "trec" if scn == "dl" else "regular"
        cut = {d: s for d, s in scores.items() if retriever[d] <= 4}
        for name in names(track):
            expected.setdefault((scn, name), []).append(helm_measure(rels, scores, name, track))
            expected.setdefault((scn, f"{name} (topk=4)"), []).append(helm_measure(rels, cut, name, track))
    f = fold(preds, fam)
    for (scn, name), values in expected.items():
        m = metrics(f.scenarios[scn])[name]
        assert m.value == pytest.approx(sum(values) / len(values), abs=1e-12) and m.count == len(values), name


def test_judged_final_scores_a_judged_ranking_at_once_and_keeps_later_judgments_apart():
    """HOLISTIC_RETRIEVAL_JUDGED_FINAL: run b a judged b=0 is scored at once (RR@10 0) and stays so;
    the later a=1 is a query without a ranking. No per-query row for the judged ranking."""
    fam = FAMILY.configured(judged_final=True)
    preds = [ranking_prediction("q", scores={"a": 1.0, "b": 2.0}, rels={"b": 0}), judgments_only("q", {"a": 1})]
    m = metrics(fold(preds, fam).scenarios["msmarco"])
    assert m["RR@10"].value == 0.0 and m["RR@10"].count == 1 and m["judgments_without_ranking"].value == 1
    assert [r.slot for r in fam.compute(envelope(preds[:1]), settings()).rows] == []


def test_a_querys_judgments_are_the_largest_over_its_judgment_slots():
    """Judgment slots of several predictions (and one-judgment slots of states written before they
    were packed) join per document by their largest relevance: run b a c, a=1 wins over a=0."""
    spec = FAMILY.compute(envelope([]), settings()).spec
    slots = {"r:b,a,c": 1.0, "J:a=0,b=0": 1.0, "J:a=1": 1.0, "j:c": 0.0}
    out = spec.derive("msmarco\x1fq", slots)
    assert out["msmarco|RR@10"] == 0.5 and out["msmarco|Recall@3"] == 1.0
    assert spec.derive("msmarco\x1fq", {"r:b,a,c": 1.0, "j:a": 1.0})["msmarco|RR@10"] == 0.5


def _random_batch(rng: random.Random, n: int) -> list[pb.Prediction]:
    """Rankings of every form, judgments-only rows, ties, empty rankings, ids with the slot separators,
    non-ASCII ids and ids past 127 bytes (a two-byte length on the wire)."""
    names_pool = ["a", "b,c", "d;e", "f%g", "é", "x" * 130, "h=1", "ß" * 70, "z"]
    preds = []
    for i in range(n):
        docs = rng.sample(names_pool, rng.randrange(len(names_pool) + 1)) + [f"d{j}" for j in range(rng.randrange(30))]
        scores = {d: float(rng.randrange(4)) for d in docs if rng.random() < 0.9}
        rels = {d: rng.choice([0, 1, 2, 3]) for d in docs if rng.random() < 0.4}
        kind = rng.choice(["scores", "scores", "explicit", "order", "binary", "judgments", "judgments_explicit"])
        pid, scn = f"q{i % (n // 2)}", rng.choice(["web", "dl"])
        if kind == "scores":
            preds.append(ranking_prediction(pid, scenario=scn, scores=scores, rels=rels or None))
        elif kind == "explicit":
            p = ranking_prediction(pid, scenario=scn, scores=scores, rels=rels, form=pb.RANKING_FORM_SCORES)
            preds.append(p)
        elif kind == "order":
            preds.append(ranking_prediction(pid, scenario=scn, order=docs[:5], rels=rels))
        elif kind == "binary":
            answers = {d: (rng.choice(["Yes", "No", "maybe"]), -rng.random()) for d in docs}
            preds.append(ranking_prediction(pid, scenario=scn, answers=answers, rels=rels))
        else:
            form = pb.RANKING_FORM_JUDGMENTS_ONLY if kind == "judgments_explicit" else pb.RANKING_FORM_UNSPECIFIED
            preds.append(judgments_only(pid, rels or {"a": 1}, scenario=scn, form=form))
    return preds


@pytest.mark.parametrize("judged_final", [False, True])
def test_documents_read_in_bulk_give_the_rows_and_counts_read_one_by_one(monkeypatch, judged_final):
    """columns.py's bulk reading against the message-by-message reading, on random batches."""
    from metric_services.retrieval import columns

    rng = random.Random(8)
    fam = FAMILY.configured(tracks={"dl": "trec"}, judged_final=judged_final)
    for _ in range(5):
        env = envelope(_random_batch(rng, 60))
        bulk = fam.compute(env, settings())
        with monkeypatch.context() as m:
            m.setattr(columns, "read", lambda rankings: None)
            one = fam.compute(env, settings())
        assert sorted(bulk.rows, key=repr) == sorted(one.rows, key=repr) and len(bulk.rows) > 10
        assert {k: v.ints for k, v in bulk.by_minute.items()} == {k: v.ints for k, v in one.by_minute.items()}
        for minute, st in bulk.by_minute.items():  # the same values, summed in another order
            assert st.floats == pytest.approx(one.by_minute[minute].floats, abs=1e-12)


@pytest.mark.parametrize("judged_final", [False, True])
def test_scenario_means_read_in_bulk_equal_helm_through_pytrec_eval(judged_final):
    """Without a topk cut (the bulk reading): per-scenario means equal HELM's pytrec_eval values,
    on random scores with ties, graded and binary judgments, queries with nothing relevant; scored
    through the per-query state or, judged_final, at once."""
    rng = random.Random(33)
    fam = FAMILY.configured(tracks={"dl": "trec"}, judged_final=judged_final)
    preds, expected = [], {}
    for i in range(200):
        scn = rng.choice(["web", "dl"])
        docs = [f"d{j}" for j in range(rng.choice([1, 3, 10, 30, 100]))]
        scores = {d: float(rng.randrange(6)) for d in docs}
        rels = {d: rng.choice([0, 1, 2, 3]) for d in docs if rng.random() < 0.3} or {"x": 2}
        preds.append(ranking_prediction(f"q{i}", scenario=scn, scores=scores, rels=rels))
        track = "trec" if scn == "dl" else "regular"
        for name in names(track):
            expected.setdefault((scn, name), []).append(helm_measure(rels, scores, name, track))
    f = fold(preds, fam)
    for (scn, name), values in expected.items():
        m = metrics(f.scenarios[scn])[name]
        assert m.value == pytest.approx(sum(values) / len(values), abs=1e-12) and m.count == len(values), name


def test_family_level_counts_queries_and_never_claims_certainty():
    """The family's value is the mean over scenarios (macro_mean, as the accuracy family); its n is the
    queries behind it (it was the number of scenarios), and a scenario every query met brings Wilson's
    interval, not a certain 1 (1–1)."""
    z2 = 1.959964**2
    one = {m.name: m for m in fold(fixture()).report.metrics}
    scenario = metrics(fold(fixture()).scenarios["msmarco"])
    # one scenario: its value, count and bounds. RR@10 of q1..q3 = 0.5, 0.5, 1: 2/3 ± z·(1/6)
    assert one["RR@10"].value == pytest.approx(2 / 3) and one["RR@10"].count == 3 == scenario["RR@10"].count
    assert one["RR@10"].interval.lower == pytest.approx(2 / 3 - 1.959964 / 6) == scenario["RR@10"].interval.lower
    assert one["RR@10"].interval.upper == pytest.approx(2 / 3 + 1.959964 / 6) == scenario["RR@10"].interval.upper
    # Success@10 3 of 3: Wilson's lower bound at p = 1 is 1 / (1 + z²/n)
    assert one["Success@10"].value == 1.0 and one["Success@10"].count == 3
    assert one["Success@10"].interval.lower == pytest.approx(1 / (1 + z2 / 3)) == pytest.approx(0.4385, abs=1e-4)

    trec = [ranking_prediction(f"t{i}", scenario="trec", scores={"a": 0.9, "b": 0.1}, rels={"a": 1}) for i in range(2)]
    two = {m.name: m for m in fold(fixture() + trec).report.metrics}
    success = two["Success@10"]
    assert success.value == 1.0 and success.count == 5  # 3 msmarco + 2 trec queries
    # MOVER over the two scenarios' Wilson intervals, 3 of 3 and 2 of 2: each side in quadrature, over 2
    below = ((1 - 1 / (1 + z2 / 3)) ** 2 + (1 - 1 / (1 + z2 / 2)) ** 2) ** 0.5 / 2
    assert success.interval.lower == pytest.approx(1 - below) == pytest.approx(0.5676, abs=1e-4)
    assert success.interval.upper == 1.0
    # RR@10: msmarco 2/3 ± z/6 (normal), trec 1 of 1, 1 (every query at 1: Wilson for 2)
    rr = two["RR@10"]
    assert rr.value == pytest.approx((2 / 3 + 1) / 2) and rr.count == 5
    below = ((1.959964 / 6) ** 2 + (1 - 1 / (1 + z2 / 2)) ** 2) ** 0.5 / 2
    assert rr.interval.lower == pytest.approx(5 / 6 - below) and rr.interval.upper == pytest.approx(
        5 / 6 + 1.959964 / 12
    )
