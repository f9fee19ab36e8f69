"""Accuracy family: compute() on a BatchEnvelope, merge the minute Stats, fold; values worked by hand.

The fixture batch (ACCEPT = 1_700_000_000, epoch minute 28_333_333):

  mmlu  (multiple choice, main exact_match), refs ["B"] unless noted
    m1 "B"                  em 1  qem 1  pem 1  qpem 1  f1 1
    m2 "b"                  em 0  qem 1  pem 0  qpem 1  f1 1
    m3 "C"                  em 0  qem 0  pem 0  qpem 0  f1 0
    m4 "D"  correct=True    em 0  qem 0  pem 0  qpem 0  f1 0   (client judged: counts 1 for accuracy)
    m5 refs [] no correct   unscored
  imdb  (classification, main quasi_exact_match), refs ["positive"]
    i1 "Positive."          em 0  qem 1  pem 0  qpem 1  f1 1
    i2 "negative"           em 0  qem 0  pem 0  qpem 0  f1 0
    i3 "The positive"       em 0  qem 1  pem 0  qpem 1  f1 1
    i4 "POSITIVE!!"         em 0  qem 1  pem 0  qpem 1  f1 1
    i5 "positive" correct=False  em 1  qem 1  pem 1  qpem 1  f1 1  (client judged: counts 0)
  qa    (open QA, main f1_score)
    q1 "the cat sat" / ["cat sat on mat"]  f1: {cat,sat} vs {cat,sat,on,mat}: P 1, R 1/2 -> 2/3; others 0
    q2 "Paris" / ["Paris"]                 all 1
    q3 "x y y" / ["y y z"]                 f1: {x,y} vs {y,z}: P 1/2, R 1/2 -> 1/2; others 0
  news  (summarization, main rouge_2: not this family's)
    n1 "the summary" / ["a summary text"]  em 0 qem 0 pem 0 qpem 0, f1 {summary} vs {summary,text} -> 2/3
    n2 refs [] correct=True                 client judged 1

Scenario accuracy (main metric over unjudged predictions, plus client judgements):
  mmlu  (em 1+0+0 + judged 1) / 4 = 1/2
  imdb  (qem 1+0+1+1 + judged 0) / 5 = 3/5
  qa    (f1 2/3 + 1 + 1/2) / 3 = 13/18
  news  rouge_2 is not computed here, so only the judgement: 1/1
Accuracy dimension = (1/2 + 3/5 + 13/18 + 1) / 4 = (45 + 54 + 65 + 90) / 360 = 254/360 = 127/180.
"""

from __future__ import annotations

import math
import random
import warnings

import pytest

from holistic.profile import fold as profile_mod
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.stats.intervals import Z95
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import DIMENSION_KIND_ACCURACY
from metric_services.accuracy import FAMILY
from tests.factories import prediction

ACCEPT = 1_700_000_000  # epoch minute 28_333_333 (20 s into it)
MC, CLS, QA, SUM = pb.TASK_MULTIPLE_CHOICE, pb.TASK_CLASSIFICATION, pb.TASK_OPEN_QA, pb.TASK_SUMMARIZATION


def settings(**overrides):
    return load_settings(redis_url="unix:///nowhere", **overrides)


def envelope(predictions, *, sequence=1, accept_s=ACCEPT):
    env = BatchEnvelope(model="m", sequence=sequence, predictions=predictions)
    env.accept_time.FromSeconds(accept_s)
    return env


def fixture_predictions():
    def mc(pid, output, **kw):
        return prediction(pid, scenario="mmlu", task=MC, output=output, references=kw.pop("references", ["B"]), **kw)

    def cls(pid, output, **kw):
        return prediction(pid, scenario="imdb", task=CLS, output=output, references=["positive"], **kw)

    def qa(pid, output, refs):
        return prediction(pid, scenario="qa", task=QA, output=output, references=refs)

    return [
        # spread over three minutes: 28_333_331, 28_333_332 and (no produced_at) the accept minute.
        mc("m1", "B", produced_at_s=ACCEPT - 125),
        mc("m2", "b", produced_at_s=ACCEPT - 65),
        mc("m3", "C"),
        mc("m4", "D", correct=True),
        mc("m5", "B", references=[]),
        cls("i1", "Positive.", produced_at_s=ACCEPT - 125),
        cls("i2", "negative"),
        cls("i3", "The positive", produced_at_s=ACCEPT - 65),
        cls("i4", "POSITIVE!!"),
        cls("i5", "positive", correct=False),
        qa("q1", "the cat sat", ["cat sat on mat"]),
        qa("q2", "Paris", ["Paris"]),
        qa("q3", "x y y", ["y y z"]),
        prediction("n1", scenario="news", task=SUM, output="the summary", references=["a summary text"]),
        prediction("n2", scenario="news", task=SUM, output="A summary.", references=[], correct=True),
    ]


def merged_stats(*envelopes, settings_=None):
    s = settings_ or settings()
    merged = Stats()
    for env in envelopes:
        for minute_stats in FAMILY.compute(env, s).values():
            merged.merge(minute_stats)
    return merged


def fold(*envelopes, settings_=None):
    """The family's fold, with each scenario's accuracy and the accuracy axis as the profile makes them."""
    s = settings_ or settings()
    return finish(FAMILY.fold(Folded.from_stats(merged_stats(*envelopes, settings_=s)), "m", s))


def finish(f):
    for part in f.scenarios.values():
        if part.accuracy is not None:
            part.metrics.append(part.accuracy.metric)
    folds = {"accuracy": f}
    f.dimensions = [profile_mod.accuracy_dimension(folds, profile_mod.merge_scenarios(folds))]
    return f


def by_name(metrics):
    out = {m.name: m for m in metrics}
    assert len(out) == len(metrics), "metric names repeat"
    return out


def wilson_by_hand(k, n):
    # p = k/n; centre = (p + z^2/2n) / (1 + z^2/n); half = z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n)
    z = Z95
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.fixture(scope="module")
def folded():
    return fold(envelope(fixture_predictions()))


# --- compute(): minute buckets ------------------------------------------------------------------


def test_compute_buckets_by_produced_minute_else_accept_minute():
    out = FAMILY.compute(envelope(fixture_predictions()), settings())
    # ACCEPT - 125 = 1_699_999_875 -> minute 28_333_331; ACCEPT - 65 -> 28_333_332; no produced_at -> 28_333_333.
    assert sorted(out) == [28_333_331, 28_333_332, 28_333_333]
    # m1 and i1 in the first minute, m2 and i3 in the second, the other 11 in the accept minute.
    assert out[28_333_331].ints["mmlu|n"] == 1
    assert out[28_333_331].ints["imdb|n"] == 1
    assert out[28_333_332].ints["mmlu|n"] == 1
    assert out[28_333_333].ints["mmlu|n"] == 3
    assert out[28_333_333].ints["qa|n"] == 3
    assert out[28_333_333].ints["mmlu|unscored"] == 1
    assert out[28_333_333].ints["mmlu|judged|n"] == 1
    assert out[28_333_333].ints["mmlu|judged|sum"] == 1
    assert out[28_333_333].ints["imdb|judged|sum"] == 0


# --- fold(): per-scenario values ----------------------------------------------------------------


def test_main_metric_per_task(folded):
    assert {s: p.main_metric for s, p in folded.scenarios.items()} == {
        "imdb": "quasi_exact_match",
        "mmlu": "exact_match",
        "news": "rouge_2",
        "qa": "f1_score",
    }
    assert {s: p.task for s, p in folded.scenarios.items()} == {"imdb": CLS, "mmlu": MC, "news": SUM, "qa": QA}
    # counts include the unscored m5.
    assert {s: p.count for s, p in folded.scenarios.items()} == {"imdb": 5, "mmlu": 5, "news": 2, "qa": 3}


def test_scenario_accuracy_values(folded):
    acc = {s: by_name(p.metrics).get("accuracy") for s, p in folded.scenarios.items()}
    # see the module docstring.
    assert acc["mmlu"].value == pytest.approx(1 / 2, abs=1e-12)
    assert acc["mmlu"].count == 4
    assert acc["imdb"].value == pytest.approx(3 / 5, abs=1e-12)
    assert acc["imdb"].count == 5
    assert acc["qa"].value == pytest.approx(13 / 18, abs=1e-12)
    assert acc["qa"].count == 3
    # news: rouge_2 is another family's, so only the client's judgement n2 counts: 1/1.
    assert acc["news"].value == pytest.approx(1.0, abs=1e-12)
    assert acc["news"].count == 1


def test_reference_metrics_per_scenario(folded):
    mmlu = by_name(folded.scenarios["mmlu"].metrics)
    imdb = by_name(folded.scenarios["imdb"].metrics)
    qa = by_name(folded.scenarios["qa"].metrics)
    news = by_name(folded.scenarios["news"].metrics)
    # Each scenario shows HELM's metric set for its task, and only that (shared/helm_sets.py).
    assert set(mmlu) == {
        "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match",
        "client_judged_correct", "accuracy",
    }  # fmt: skip
    assert set(imdb) == {
        "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match",
        "classification_macro_f1", "classification_micro_f1", "client_judged_correct", "accuracy",
    }  # fmt: skip
    assert set(qa) == {"exact_match", "quasi_exact_match", "f1_score", "rouge_l", "bleu_1", "bleu_4", "accuracy"}
    # summarization: HELM's ROUGE is the summarization family's; nothing of this family's but the judgement.
    assert set(news) == {"client_judged_correct", "accuracy"}
    # mmlu over the 4 predictions with references (judged m4 included, unscored m5 not):
    # em 1/4, qem 2/4, pem 1/4, qpem 2/4.
    assert mmlu["exact_match"].value == pytest.approx(0.25, abs=1e-12)
    assert mmlu["exact_match"].count == 4
    assert mmlu["quasi_exact_match"].value == pytest.approx(0.5, abs=1e-12)
    assert mmlu["prefix_exact_match"].value == pytest.approx(0.25, abs=1e-12)
    assert mmlu["quasi_prefix_exact_match"].value == pytest.approx(0.5, abs=1e-12)
    # imdb over 5: em 1/5 (only "positive"), qem 4/5, pem 1/5 (case-sensitive), qpem 4/5.
    assert imdb["exact_match"].value == pytest.approx(0.2, abs=1e-12)
    assert imdb["quasi_exact_match"].value == pytest.approx(0.8, abs=1e-12)
    assert imdb["prefix_exact_match"].value == pytest.approx(0.2, abs=1e-12)
    assert imdb["quasi_prefix_exact_match"].value == pytest.approx(0.8, abs=1e-12)
    # classes (articles kept): positive x5 true; predicted positive (i1, i4, i5), "negative" and
    # "the positive" are outside the label set. TP 3, FP 0, FN 2: F1 = 6/8 for the one class.
    assert imdb["classification_macro_f1"].value == pytest.approx(0.75, abs=1e-12)
    assert imdb["classification_micro_f1"].value == pytest.approx(0.75, abs=1e-12)
    # qa over 3: em/qem 1/3 (only q2), f1 13/18.
    assert qa["exact_match"].value == pytest.approx(1 / 3, abs=1e-12)
    assert qa["quasi_exact_match"].value == pytest.approx(1 / 3, abs=1e-12)
    assert qa["f1_score"].value == pytest.approx(13 / 18, abs=1e-12)
    # rouge_l: q1 [the cat sat] vs [cat sat on mat] LCS 2, P 2/3, R 1/2 -> 4/7; q2 1; q3 LCS 2 of 3 -> 2/3.
    assert qa["rouge_l"].value == pytest.approx((4 / 7 + 1 + 2 / 3) / 3, abs=1e-12)
    # bleu_1: q1 2/3 unigrams, BP exp(1 - 4/3); q2 1; q3 x y y vs y y z: 2/3, BP 1.
    assert qa["bleu_1"].value == pytest.approx((2 / 3 * math.exp(-1 / 3) + 1 + 2 / 3) / 3, abs=1e-12)
    # bleu_4: no output has 4 tokens, so each is BP x sys.float_info.min (nltk without smoothing).
    assert 0 < qa["bleu_4"].value < 1e-300


def test_client_judged_share(folded):
    # mmlu: m4 correct=True -> 1/1; imdb: i5 correct=False -> 0/1; news: n2 -> 1/1; qa: none judged.
    judged = {s: by_name(p.metrics).get("client_judged_correct") for s, p in folded.scenarios.items()}
    assert judged["mmlu"].value == 1.0
    assert judged["imdb"].value == 0.0
    assert judged["news"].value == 1.0
    assert judged["qa"] is None


def test_summarization_without_judgement_has_no_accuracy():
    preds = [prediction("n1", scenario="news", task=SUM, output="the summary", references=["a summary text"])]
    part = fold(envelope(preds)).scenarios["news"]
    # HELM's summarization run specs define no exact_match or f1_score: this family shows nothing.
    assert [m.name for m in part.metrics] == []


def test_binary_accuracy_has_wilson_interval(folded):
    acc = by_name(folded.scenarios["mmlu"].metrics)["accuracy"]
    # k = 2, n = 4, z = 1.959963984540054, z^2 = 3.8414588206941254:
    # denom = 1 + z^2/4 = 1.9603647051735314; centre = (0.5 + z^2/8) / denom = 0.5;
    # half = z sqrt(0.25/4 + z^2/64) / denom = z sqrt(0.12252279...) / denom = 0.34996101...
    # -> [0.15003898915, 0.84996101085].
    lo, hi = wilson_by_hand(2, 4)
    assert acc.interval.method == "wilson"
    assert acc.interval.level == 0.95
    assert acc.interval.lower == pytest.approx(lo, abs=1e-12)
    assert acc.interval.upper == pytest.approx(hi, abs=1e-12)
    assert acc.interval.lower == pytest.approx(0.15003898915, abs=1e-9)
    assert acc.interval.upper == pytest.approx(0.84996101085, abs=1e-9)
    # imdb: 3 of 5 -> Wilson by the same formula.
    imdb = by_name(folded.scenarios["imdb"].metrics)["accuracy"]
    lo, hi = wilson_by_hand(3, 5)
    assert (imdb.interval.lower, imdb.interval.upper) == pytest.approx((lo, hi), abs=1e-12)


def test_graded_accuracy_has_clipped_normal_interval(folded):
    acc = by_name(folded.scenarios["qa"].metrics)["accuracy"]
    # f1 values 2/3, 1, 1/2: sum 13/6, sum of squares 4/9 + 1 + 1/4 = 61/36, mean 13/18.
    # sample var = (61/36 - 3 (13/18)^2) / 2 = (183/108 - 169/108) / 2 = 7/108; var of mean = 7/324.
    # half = z sqrt(7/324) = 0.28808...; [0.43413, 1.01031] clipped to [0.43413, 1].
    half = Z95 * math.sqrt(7 / 324)
    assert acc.interval.method == "normal"
    assert acc.interval.lower == pytest.approx(13 / 18 - half, abs=1e-12)
    assert acc.interval.lower == pytest.approx(0.4341345955, abs=1e-9)
    assert acc.interval.upper == 1.0


# --- fold(): report and dimension ---------------------------------------------------------------


def test_report_counts_and_skipped(folded):
    r = folded.report
    assert r.family == "accuracy"
    assert r.count == 15  # 5 + 5 + 3 + 2 predictions
    assert r.skipped == 1  # m5: no references, no correct
    assert r.skipped_reason == "1 with no references and no client judgement"
    # the worker records this signature beside the statistics it applies
    sig = FAMILY.signature("m", settings())
    assert sig.text == "accuracy|v:2|f1:token-set|normalize:helm-quac|references:max|strip:output"


def test_report_metrics_are_unweighted_means_over_scenarios(folded):
    report = by_name(folded.report.metrics)
    # exact_match over the scenarios whose task defines it (not news, summarization):
    # (1/4 + 1/5 + 1/3) / 3 = (15 + 12 + 20)/60 / 3 = 47/180.
    assert report["exact_match"].value == pytest.approx(47 / 180, abs=1e-12)
    # n counts the predictions behind the mean (mmlu 4 + imdb 5 + qa 3), as every other table's n does
    assert report["exact_match"].count == 4 + 5 + 3
    # prefix_exact_match: multiple choice and classification only: (1/4 + 1/5) / 2 = 9/40.
    assert report["prefix_exact_match"].value == pytest.approx(9 / 40, abs=1e-12)
    assert report["prefix_exact_match"].count == 4 + 5
    # f1_score: open QA only (not mmlu, imdb nor news) -> 13/18 from qa alone.
    assert report["f1_score"].value == pytest.approx(13 / 18, abs=1e-12)
    assert report["f1_score"].count == 3
    assert report["classification_macro_f1"].count == 5  # imdb's predictions
    assert report["rouge_l"].count == 3  # qa's


def test_accuracy_dimension_is_mean_over_scored_scenarios(folded):
    (dim,) = folded.dimensions
    assert dim.kind == DIMENSION_KIND_ACCURACY
    assert dim.HasField("score")
    # (1/2 + 3/5 + 13/18 + 1) / 4 = 127/180 = 0.70555...
    assert dim.score == pytest.approx(127 / 180, abs=1e-12)
    assert dim.count == 4 + 5 + 3 + 1
    assert dim.absent_reason == ""
    named = {m.name: m.value for m in dim.metrics}
    assert named == pytest.approx(
        {
            "accuracy[imdb:quasi_exact_match]": 3 / 5,
            "accuracy[mmlu:exact_match]": 1 / 2,
            "accuracy[news:client_judged]": 1.0,
            "accuracy[qa:f1_score]": 13 / 18,
        },
        abs=1e-12,
    )
    # news (one client judgement, correct) has no normal interval (n = 1); as a proportion it brings
    # Wilson(1, 1) = (1/(1 + z^2), 1) = (0.2065493144, 1) instead, combined by MOVER with the others'
    # normal halves: below = sqrt(z^2 (1/12 + 0.06 + 7/324) + (1 - 0.20655)^2) / 4, above = z sqrt(...) / 4.
    var = 1 / 12 + 0.06 + 7 / 324
    low1 = 1 / (1 + Z95 * Z95)
    assert dim.interval.method == "propagated"
    assert dim.interval.lower == pytest.approx(127 / 180 - math.sqrt(Z95 * Z95 * var + (1 - low1) ** 2) / 4)
    assert dim.interval.upper == pytest.approx(min(1.0, 127 / 180 + Z95 * math.sqrt(var) / 4), abs=1e-12)


def test_accuracy_dimension_propagated_interval():
    preds = [p for p in fixture_predictions() if p.scenario != "news"]
    (dim,) = fold(envelope(preds)).dimensions
    # mean = (1/2 + 3/5 + 13/18) / 3 = 0.6074074...
    # variances of the means: mmlu (sumsq = 2 of 0/1 values) (2 - 4/4)/3/4 = 1/12;
    # imdb (3 - 5 * 0.36)/4/5 = 0.06; qa 7/324 (see above). var = (1/12 + 0.06 + 7/324) / 9.
    mean = (1 / 2 + 3 / 5 + 13 / 18) / 3
    half = Z95 * math.sqrt((1 / 12 + 0.06 + 7 / 324) / 9)
    assert dim.score == pytest.approx(mean, abs=1e-12)
    assert dim.interval.method == "propagated"
    assert dim.interval.lower == pytest.approx(mean - half, abs=1e-12)
    assert dim.interval.upper == pytest.approx(mean + half, abs=1e-12)
    assert (dim.interval.lower, dim.interval.upper) == pytest.approx((0.3420766749, 0.8727381399), abs=1e-9)


def test_dimension_absent_when_nothing_is_scored():
    preds = [prediction(f"u{i}", scenario="mmlu", references=[]) for i in range(3)]
    f = fold(envelope(preds))
    (dim,) = f.dimensions
    assert not dim.HasField("score")
    assert dim.absent_reason == "no predictions with references or a client judgement in this window"
    assert f.report.count == 3
    assert f.report.skipped == 3
    assert f.report.skipped_reason == "3 with no references and no client judgement"
    assert not f.report.metrics


def test_dimension_absent_names_scenarios_waiting_for_another_family():
    preds = [prediction("n1", scenario="news", task=SUM, output="x", references=["y"])]
    f = fold(envelope(preds))
    (dim,) = f.dimensions
    assert not dim.HasField("score")
    assert dim.absent_reason == "no scored predictions: news needs rouge_2 from the summarization family"
    assert f.report.skipped == 0
    assert f.report.skipped_reason == ""


# --- main metric overrides and task choice ------------------------------------------------------


def test_main_metric_override_changes_the_fold():
    s = settings(main_metrics={"qa": "exact_match", "news": "f1_score"})
    f = fold(envelope(fixture_predictions()), settings_=s)
    assert f.scenarios["qa"].main_metric == "exact_match"
    assert f.scenarios["news"].main_metric == "f1_score"
    assert f.scenarios["mmlu"].main_metric == "exact_match"
    qa = by_name(f.scenarios["qa"].metrics)["accuracy"]
    # qa by exact match: only q2 -> 1/3, binary now, so Wilson.
    assert qa.value == pytest.approx(1 / 3, abs=1e-12)
    assert (qa.interval.lower, qa.interval.upper) == pytest.approx(wilson_by_hand(1, 3), abs=1e-12)
    news = by_name(f.scenarios["news"].metrics)["accuracy"]
    # news by f1: unjudged n1 f1 2/3, plus judged n2 1 -> (2/3 + 1)/2 = 5/6.
    assert news.value == pytest.approx(5 / 6, abs=1e-12)
    assert news.count == 2
    # dimension: (1/2 + 3/5 + 1/3 + 5/6) / 4 = (15 + 18 + 10 + 25)/30 / 4 = 68/120 = 17/30.
    assert f.dimensions[0].score == pytest.approx(17 / 30, abs=1e-12)
    assert FAMILY.signature("m", s).options["main_overrides"] == "news=f1_score,qa=exact_match"


def test_override_to_another_familys_metric_leaves_only_judgements():
    s = settings(main_metrics={"mmlu": "rouge_2"})
    f = fold(envelope(fixture_predictions()), settings_=s)
    acc = by_name(f.scenarios["mmlu"].metrics)["accuracy"]
    # only m4 (correct=True) counts -> 1/1.
    assert acc.value == 1.0
    assert acc.count == 1


def test_main_metric_follows_the_most_common_task_ties_to_the_lower_task_number():
    # 2 classification vs 1 multiple choice -> classification -> quasi_exact_match.
    preds = [
        prediction("a", scenario="s", task=CLS),
        prediction("b", scenario="s", task=CLS),
        prediction("c", scenario="s", task=MC),
    ]
    assert fold(envelope(preds)).scenarios["s"].main_metric == "quasi_exact_match"
    # 1 vs 1: the lower enum value wins, MULTIPLE_CHOICE (1) over CLASSIFICATION (4) -> exact_match.
    assert fold(envelope(preds[1:])).scenarios["s"].main_metric == "exact_match"


# --- merge invariance ---------------------------------------------------------------------------


def flatten(f):
    out = {}

    def put(prefix, m):
        out[prefix + m.name] = (m.value, m.count, m.interval.lower, m.interval.upper, m.HasField("interval"))

    for m in f.report.metrics:
        put("report/", m)
    for scn, part in f.scenarios.items():
        out[f"{scn}/main"] = part.main_metric
        out[f"{scn}/count"] = part.count
        for m in part.metrics:
            put(f"{scn}/", m)
    for dim in f.dimensions:
        out["dim/score"] = dim.score if dim.HasField("score") else None
        out["dim/interval"] = (dim.interval.lower, dim.interval.upper)
        out["dim/count"] = dim.count
        for m in dim.metrics:
            put("dim/", m)
    out["report/count"] = (f.report.count, f.report.skipped, f.report.skipped_reason)
    return out


def assert_same_fold(a, b):
    fa, fb = flatten(a), flatten(b)
    assert fa.keys() == fb.keys()
    for key, va in fa.items():
        vb = fb[key]
        if isinstance(va, tuple):
            assert len(va) == len(vb)
            for x, y in zip(va, vb, strict=True):
                if isinstance(x, float):
                    assert y == pytest.approx(x, abs=1e-12, rel=0), key
                else:
                    assert x == y, key
        elif isinstance(va, float):
            assert vb == pytest.approx(va, abs=1e-12, rel=0), key
        else:
            assert va == vb, key


def test_splitting_the_batch_gives_the_same_fold():
    preds = fixture_predictions()
    whole = fold(envelope(preds))
    # interleaved split, the second envelope accepted 30 s later, folded in both merge orders.
    first = envelope(preds[::2], sequence=1)
    second = envelope(preds[1::2], sequence=2, accept_s=ACCEPT + 30)
    assert_same_fold(whole, fold(first, second))
    assert_same_fold(whole, fold(second, first))
    # and one prediction per envelope.
    singles = [envelope([p], sequence=i + 1) for i, p in enumerate(preds)]
    assert_same_fold(whole, fold(*singles))


def test_fold_reads_redis_shaped_hashes_the_same():
    # the same Stats as Redis would hold them: bytes fields and values, one hash per minute.
    out = FAMILY.compute(envelope(fixture_predictions()), settings())
    hashes = []
    for st in out.values():
        folded = Folded.from_stats(st)
        hashes.append({k.encode(): repr(v).encode() for k, v in folded.items()})
    s = settings()
    assert_same_fold(fold(envelope(fixture_predictions())), finish(FAMILY.fold(Folded.from_hashes(hashes), "m", s)))


# --- HELM's run cell: unperturbed instances only ------------------------------------------------


def variant(pid, original, output, *, family=pb.PERTURBATION_FAMILY_ROBUSTNESS, name="typos", **kw):
    p = prediction(pid, scenario="mmlu", task=MC, output=output, references=["B"], **kw)
    p.perturbation.name, p.perturbation.family, p.perturbation.original_id = name, family, original
    return p


def test_perturbed_variants_are_left_out_of_the_run_cell():
    # Originals: o1 "B" (em 1), o2 "C" (em 0) -> 1/2. Variants of both, all exact matches, one judged
    # correct, and a variant of an original never sent: counted as perturbed, not scored here.
    preds = [
        prediction("o1", scenario="mmlu", task=MC, output="B", references=["B"]),
        prediction("o2", scenario="mmlu", task=MC, output="C", references=["B"]),
        variant("o1~t", "o1", "B"),
        variant("o2~t", "o2", "B"),
        variant("o2~d", "o2", "B", family=pb.PERTURBATION_FAMILY_FAIRNESS, name="dialect", correct=True),
        variant("gone~t", "gone", "B"),
    ]
    f = fold(envelope(preds))
    part = by_name(f.scenarios["mmlu"].metrics)
    assert part["accuracy"].value == pytest.approx(0.5, abs=1e-12)  # today's code gave 5/6
    assert part["accuracy"].count == 2
    assert part["exact_match"].value == pytest.approx(0.5, abs=1e-12)
    assert part["exact_match"].count == 2
    assert "client_judged_correct" not in part
    assert part["perturbed_predictions"].value == 4
    assert f.scenarios["mmlu"].count == 6
    assert (f.report.count, f.report.skipped) == (6, 4)
    assert f.report.skipped_reason.startswith("4 perturbed variants")
    assert by_name(f.report.metrics)["perturbed_predictions"].value == 4
    assert f.dimensions[0].score == pytest.approx(0.5, abs=1e-12)


# --- HELM's classification metrics --------------------------------------------------------------


def test_classification_macro_and_micro_f1_from_per_class_counts():
    def c(pid, output, gold):
        return prediction(pid, scenario="raft", task=CLS, output=output, references=[gold])

    preds = [
        c("1", "Yes", "yes"),  # yes: TP
        c("2", "yes.", "yes"),  # yes: TP
        c("3", "no", "yes"),  # yes: FN, no: FP
        c("4", "No!", "no"),  # no: TP
        c("5", "maybe", "no"),  # no: FN; "maybe" is no class: a negative for every class
        c("6", "", "unsure"),  # unsure: FN; an empty output predicts nothing
        c("7", "The yes", "yes"),  # articles are kept: "the yes" is no class; yes: FN
    ]
    # classes (from the references): no, unsure, yes.
    # yes: TP 2, FP 0, FN 2 -> 4/6; no: TP 1, FP 1, FN 1 -> 2/4; unsure: TP 0, FN 1 -> 0.
    # macro = (2/3 + 1/2 + 0) / 3 = 7/18; micro: TP 3, FP 1, FN 4 -> 6/11.
    part = by_name(fold(envelope(preds)).scenarios["raft"].metrics)
    assert part["classification_macro_f1"].value == pytest.approx(7 / 18, abs=1e-12)
    assert part["classification_micro_f1"].value == pytest.approx(6 / 11, abs=1e-12)
    # counts merge: one prediction per batch gives the same numbers.
    singles = fold(*[envelope([p], sequence=i + 1) for i, p in enumerate(preds)])
    split = by_name(singles.scenarios["raft"].metrics)
    assert split["classification_macro_f1"].value == pytest.approx(7 / 18, abs=1e-12)
    assert split["classification_micro_f1"].value == pytest.approx(6 / 11, abs=1e-12)


def test_classification_f1_equals_scikit_learn():
    """The reference HELM calls: MultiLabelBinarizer fitted on the true classes, then f1_score."""
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    from metric_services.shared.classification import label

    rng = random.Random(11)
    outputs = ["Yes", "no", "No.", "maybe", "", "  ", "yes!", "The no", "Ünsure", "unsure"]
    golds = ["yes", "no", "unsure", "Ünsure"]
    preds = [
        prediction(f"r{i}", scenario="raft", task=CLS, output=rng.choice(outputs), references=[rng.choice(golds)])
        for i in range(40)
    ]
    y_true = [[label(r) for r in p.references if r] for p in preds]
    y_pred = [[label(p.output)] if p.output else [] for p in preds]
    mlb = MultiLabelBinarizer().fit(y_true)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown classes: sklearn warns and ignores them, as HELM's does
        t, pr = mlb.transform(y_true), mlb.transform(y_pred)
    part = by_name(fold(envelope(preds)).scenarios["raft"].metrics)
    assert part["classification_macro_f1"].value == pytest.approx(f1_score(t, pr, average="macro"), abs=1e-12)
    assert part["classification_micro_f1"].value == pytest.approx(f1_score(t, pr, average="micro"), abs=1e-12)


# --- which source wins: the client's `correct` (default) or the references (HELM) --------------


def test_references_win_setting_scores_judged_predictions_by_their_references():
    # m4 "D" (refs ["B"], correct=True) and i5 "positive" (refs ["positive"], correct=False) have both.
    f = fold(envelope(fixture_predictions()), settings_=settings(references_win=True))
    acc = {s: by_name(p.metrics)["accuracy"] for s, p in f.scenarios.items()}
    # mmlu by exact match over the 4 with references: B b C D -> 1/4 (the default gave 1/2).
    assert acc["mmlu"].value == pytest.approx(1 / 4, abs=1e-12) and acc["mmlu"].count == 4
    # imdb by quasi-exact match over 5: 1 + 0 + 1 + 1 + 1 -> 4/5 (the default gave 3/5).
    assert acc["imdb"].value == pytest.approx(4 / 5, abs=1e-12)
    # news: n2 has no references, so its judgement still counts: 1/1.
    assert acc["news"].value == 1.0
    assert f.dimensions[0].score == pytest.approx((1 / 4 + 4 / 5 + 13 / 18 + 1) / 4, abs=1e-12)


def test_profile_says_which_source_each_scenario_used():
    def sources(s):
        f = fold(envelope(fixture_predictions()), settings_=s)
        folds = {"accuracy": f}
        scenarios = profile_mod.merge_scenarios(folds)
        profile_mod.accuracy_dimension(folds, scenarios)
        return {
            sp.scenario: {m.name: m.value for m in sp.metrics if m.name.startswith("accuracy_source_")}
            for sp in scenarios
        }

    client_first = {"accuracy_source_references": None, "accuracy_source_client": None}
    assert sources(settings()) == {
        "mmlu": {**client_first, "accuracy_source_references": 3, "accuracy_source_client": 1},
        "imdb": {**client_first, "accuracy_source_references": 4, "accuracy_source_client": 1},
        "qa": {**client_first, "accuracy_source_references": 3, "accuracy_source_client": 0},
        "news": {**client_first, "accuracy_source_references": 0, "accuracy_source_client": 1},
    }
    assert sources(settings(references_win=True)) == {
        "mmlu": {"accuracy_source_references": 4, "accuracy_source_client": 0},
        "imdb": {"accuracy_source_references": 5, "accuracy_source_client": 0},
        "qa": {"accuracy_source_references": 3, "accuracy_source_client": 0},
        "news": {"accuracy_source_references": 0, "accuracy_source_client": 1},
    }
