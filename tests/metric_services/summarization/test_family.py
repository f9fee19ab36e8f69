"""The summarization family: compute() and fold() worked by hand, the profile's accuracy, the settings.

The fixture batch (semantic similarity off unless a test turns it on):

  news (summarization)
    s1 "the cat sat on the mat" / ["the cat sat on the mat"], source "the cat sat on the mat today"
         rouge 1 everywhere; fragments: one of 6 tokens: coverage 1, density 6, compression 7/6
    s2 "the dog ran" / ["a cat sat"], no source           rouge 0 everywhere (no shared token)
    s3 "x" / no references, source "y"                     fragments: coverage 0, density 0, compression 1
    s4 no references, no source                            unscored
    s5 "the cat" / ["the cat"], correct=True               rouge 1 (raw); accuracy: the judgement, 1
  mmlu (multiple choice): m1, m2                            not summarization: skipped

  news rouge_2 (raw, over s1 s2 s5)             (1 + 0 + 1) / 3 = 2/3
  news accuracy (rouge_2 F of s1 s2, judged s5)  (1 + 0 + 1) / 3 = 2/3
  coverage (s1 s3) 1/2, density 3, compression (7/6 + 1) / 2 = 13/12
  report: count 7, skipped 3 (2 other tasks, 1 with nothing to score against)
"""

from __future__ import annotations

import random

import pytest
import sacrebleu

from holistic.profile import fold as profile_mod
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import prediction_pb2 as pb
from metric_services.accuracy import FAMILY as ACCURACY
from metric_services.summarization import FAMILY
from tests.factories import prediction
from tests.metric_services.summarization.support import needs_semantic

SUM = pb.TASK_SUMMARIZATION
ACCEPT = 1_700_000_000


def settings(**overrides):
    return load_settings(redis_url="unix:///nowhere", **overrides)


LEXICAL = FAMILY.configured(semantic="off")


def news(pid, output, refs, source=None, **kw):
    p = prediction(pid, scenario="news", task=SUM, output=output, references=refs, **kw)
    if source is not None:
        p.source = source
    return p


def fixture_predictions():
    return [
        news("s1", "the cat sat on the mat", ["the cat sat on the mat"], "the cat sat on the mat today"),
        news("s2", "the dog ran", ["a cat sat"]),
        news("s3", "x", [], "y"),
        news("s4", "nothing to compare", []),
        news("s5", "the cat", ["the cat"], correct=True),
        prediction("m1", scenario="mmlu", output="B", references=["B"]),
        prediction("m2", scenario="mmlu", output="C", references=["B"]),
    ]


def envelope(preds, seq=1):
    env = BatchEnvelope(model="m", sequence=seq, predictions=preds)
    env.accept_time.FromSeconds(ACCEPT)
    return env


def fold(preds, settings_=None, batches=1, family=LEXICAL):
    s = settings_ or settings()
    merged = Stats()
    for i in range(batches):
        for st in family.compute(envelope(preds[i::batches], i + 1), s).values():
            merged.merge(st)
    return family.fold(Folded.from_stats(merged), "m", s)


def by_name(metrics):
    return {m.name: m for m in metrics}


def test_fold_hand_worked():
    f = fold(fixture_predictions())
    assert set(f.scenarios) == {"news"}  # mmlu is another family's business
    part = f.scenarios["news"]
    assert (part.count, part.task, part.main_metric) == (5, SUM, "rouge_2")
    m = by_name(part.metrics)
    assert m["rouge_2"].value == pytest.approx(2 / 3) and m["rouge_2"].count == 3
    assert m["rouge_1_precision"].value == pytest.approx(2 / 3) and m["rouge_l_recall"].value == pytest.approx(2 / 3)
    assert (m["coverage"].value, m["density"].value, m["compression"].value) == pytest.approx((0.5, 3.0, 13 / 12))
    assert m["coverage"].count == 2
    hyps, refs = (
        ["the cat sat on the mat", "the dog ran", "the cat"],
        [["the cat sat on the mat", "a cat sat", "the cat"]],
    )
    assert m["bleu"].value == sacrebleu.corpus_bleu(hyps, refs).score
    assert m["chrf"].value == sacrebleu.corpus_chrf(hyps, refs).score
    assert part.accuracy is not None and part.accuracy.source == "rouge_2"
    assert part.accuracy.metric.value == pytest.approx(2 / 3) and part.accuracy.metric.count == 3

    report = f.report
    assert (report.count, report.skipped) == (7, 3)
    assert report.skipped_reason == "2 not summarization tasks; 1 with neither references nor source"
    fam = by_name(report.metrics)
    assert fam["rouge_2"].value == pytest.approx(2 / 3) and fam["bleu"].value == m["bleu"].value
    assert "semantic_similarity_reference" not in fam
    assert "HOLISTIC_SUMMARIZATION_SEMANTIC=off" in report.absent_metrics["semantic_similarity_source"]
    sig = report.signature
    assert sig.options["bleu"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert sig.options["semantic"] == "off" and sig.model_sha256 == ""


def test_scenario_accuracy_in_the_profile_is_rouge_2():
    s = settings()
    env = envelope(fixture_predictions())
    folds = {}
    for family in (ACCURACY, LEXICAL):
        merged = Stats()
        for st in family.compute(env, s).values():
            merged.merge(st)
        folds[family.name] = family.fold(Folded.from_stats(merged), "m", s)
    scenarios = profile_mod.merge_scenarios(folds)
    dim = profile_mod.accuracy_dimension(folds, scenarios)
    news_acc = by_name(next(sp for sp in scenarios if sp.scenario == "news").metrics)["accuracy"]
    assert news_acc.family == "summarization" and news_acc.value == pytest.approx(2 / 3)
    # mmlu exact_match 1/2; the axis is the mean of scenario accuracies: (2/3 + 1/2) / 2 = 7/12
    assert dim.score == pytest.approx(7 / 12)
    assert "accuracy[news:rouge_2]" in {m.name for m in dim.metrics}


def test_main_metric_override_picks_another_rouge():
    f = fold(fixture_predictions(), settings(main_metrics={"news": "rouge_l"}))
    acc = f.scenarios["news"].accuracy
    assert acc.source == "rouge_l" and acc.metric.value == pytest.approx(2 / 3)
    f = fold(fixture_predictions(), settings(main_metrics={"news": "f1_score"}))
    assert f.scenarios["news"].accuracy is None  # the accuracy family's metric then


def test_batching_does_not_change_the_numbers():
    rng = random.Random(3)
    words = [
        "the",
        "council",
        "voted",
        "to",
        "approve",
        "a",
        "plan",
        "for",
        "road",
        "repairs",
        "money",
        "bonds",
        "grants",
        "taxes",
        "😀",
        "東京",
    ]
    preds = []
    for i in range(60):
        refs = [" ".join(rng.choices(words, k=rng.randint(3, 15))) for _ in range(rng.randint(0, 3))]
        source = " ".join(rng.choices(words, k=40)) if rng.random() < 0.8 else None
        preds.append(news(f"p{i}", " ".join(rng.choices(words, k=rng.randint(0, 12))), refs, source))
    one = {m.name: m for m in fold(preds).report.metrics}
    for batches in (2, 7):
        many = {m.name: m for m in fold(preds, batches=batches).report.metrics}
        assert many.keys() == one.keys()
        for name, metric in one.items():
            assert many[name].value == pytest.approx(metric.value, rel=1e-12), name
            assert many[name].interval.lower == pytest.approx(metric.interval.lower, rel=1e-12), name
        assert many["bleu"].value == one["bleu"].value and many["chrf"].value == one["chrf"].value


def test_semantic_similarity_when_on():
    needs_semantic()
    from metric_services.summarization.encoder import Encoder, packaged_model

    f = fold(fixture_predictions(), family=FAMILY.configured(semantic="on"))
    m = by_name(f.scenarios["news"].metrics)
    v = (
        Encoder(packaged_model())
        .encode(["the dog ran", "a cat sat", "the cat sat on the mat", "the cat sat on the mat today", "x", "y"])
        .vectors
    )
    # s1 and s5 equal their references (cosine 1); s2 against "a cat sat": c
    ref = m["semantic_similarity_reference"]
    assert ref.count == 3 and ref.value == pytest.approx((1 + float(v[0] @ v[1]) + 1) / 3, abs=1e-5)
    # s1 against its source, s3 "x" against "y"
    src = m["semantic_similarity_source"]
    assert src.count == 2 and src.value == pytest.approx((float(v[2] @ v[3]) + float(v[4] @ v[5])) / 2, abs=1e-5)
    report = f.report
    assert not report.absent_metrics
    assert report.signature.model_sha256 and report.signature.options["semantic"].startswith("all-MiniLM-L6-v2")
    assert by_name(report.metrics)["semantic_truncated_share"].value == 0.0


def test_empty_summary_scores_zero_not_an_error():
    preds = [news("e1", "   ", ["a reference"], "a source"), news("e2", "😀 東京", ["東京 😀"], "東京 😀 source")]
    m = by_name(fold(preds).scenarios["news"].metrics)
    # e1: no tokens: rouge 0, fragments 0; e2: rouge-score's tokenizer drops both tokens: rouge 0;
    # fragments: tokens [😀, 東京] both found, in two fragments of 1: coverage 1, density 1, compression 3/2.
    assert m["rouge_2"].value == 0.0 and m["rouge_l"].value == 0.0
    assert (m["coverage"].value, m["density"].value, m["compression"].value) == pytest.approx((0.5, 0.5, 0.75))


def test_fragments_drop_the_braces_helm_strips():
    """HELM's SummarizationMetric strips one leading "{" and trailing "}" from the prediction and the source
    before SummEval's data stats (tests/test_helm_conformance.py compares with HELM itself)."""
    preds = [news("b1", "{the park opened}", ["x"], "{the park opened today}")]
    m = by_name(fold(preds).scenarios["news"].metrics)
    # tokens: the park opened / the park opened today: one fragment of 3 of 3 tokens (with the braces kept,
    # 5 summary tokens of 6 in fragments of 4 and 1: density 17/5, compression 6/5)
    assert (m["coverage"].value, m["density"].value, m["compression"].value) == pytest.approx((1.0, 3.0, 4 / 3))


def test_perturbed_summaries_are_left_out_of_the_run_cell():
    """HELM's run cell is over unperturbed instances: a variant scores 0 here, it does not count."""
    base = [news("s1", "the cat sat on the mat", ["the cat sat on the mat"]), news("s2", "the dog ran", ["a cat sat"])]
    v = news("s2~t", "the cat sat on the mat", ["the cat sat on the mat"])
    v.perturbation.name, v.perturbation.original_id = "typos", "s2"
    v.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
    f = fold([*base, v])
    m = by_name(f.scenarios["news"].metrics)
    # (1 + 0) / 2; today's code counted the variant: (1 + 0 + 1) / 3.
    assert m["rouge_2"].value == pytest.approx(0.5) and m["rouge_2"].count == 2
    assert f.scenarios["news"].accuracy.metric.value == pytest.approx(0.5)
    assert (f.report.count, f.report.skipped) == (3, 1)
    assert f.report.skipped_reason == "1 perturbed variants (HELM's run cell is over unperturbed instances)"
    assert by_name(f.report.metrics)["perturbed_predictions"].value == 1


def test_references_win_setting_scores_judged_summaries_by_rouge():
    preds = [
        news("a", "the cat sat", ["the cat sat"], correct=False),  # rouge_2 1, judged 0
        news("b", "the dog ran", ["a cat sat"]),  # rouge_2 0
        news("c", "x", [], correct=True),  # no references: its judgement
    ]
    client = fold(preds).scenarios["news"].accuracy
    helm = fold(preds, settings_=settings(references_win=True)).scenarios["news"].accuracy
    assert client.metric.value == pytest.approx((0 + 0 + 1) / 3)  # the judgements win
    assert client.sources == {"references": 1, "client": 2}
    assert helm.metric.value == pytest.approx((1 + 0 + 1) / 3)  # HELM: a's references win
    assert helm.sources == {"references": 2, "client": 1}


def test_rouge_precision_recall_and_f_each_in_their_own_metric():
    """A summary longer than its reference: ROUGE-1 precision 3/6 (the, cat, sat of six tokens), recall 3/3,
    F 2PR/(P+R) = 2/3; ROUGE-2 2/5, 2/2, 4/7; ROUGE-L (LCS "the cat sat") as ROUGE-1."""
    f = fold([news("s1", "the cat sat on the mat", ["the cat sat"])])
    m = by_name(f.scenarios["news"].metrics)
    assert m["rouge_1_precision"].value == pytest.approx(1 / 2) and m["rouge_1_recall"].value == 1.0
    assert m["rouge_1"].value == pytest.approx(2 / 3)
    assert m["rouge_2_precision"].value == pytest.approx(2 / 5) and m["rouge_2_recall"].value == 1.0
    assert m["rouge_2"].value == pytest.approx(4 / 7)
    assert m["rouge_l_precision"].value == pytest.approx(1 / 2) and m["rouge_l_recall"].value == 1.0
    assert m["rouge_l"].value == pytest.approx(2 / 3)
