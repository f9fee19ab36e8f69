"""Toxicity family: hand-worked metrics (a table classifier), and the default model end to end."""

from __future__ import annotations

import numpy as np
import pytest

from holistic.families import one_pass
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp
from metric_services import toxicity
from tests.factories import prediction


def fold(preds, settings, family=toxicity.FAMILY):
    """The family's fold of one pass over preds (instances joined as the runner would)."""
    env = BatchEnvelope(model="m", predictions=preds)
    env.accept_time.FromSeconds(1_800_000_000)
    return family.fold(Folded.from_stats(one_pass(family, env, settings)), "m", settings)


def metric(fold_result, name):
    return next(m for m in fold_result.report.metrics if m.name == name)


def test_hand_worked_toxic_frac_and_per_input_max(use_table, settings):
    use_table({"a": [0.9, 0.8], "b": [0.2, 0.1], "c": [0.6, 0.3], "d": [0.4, 0.7]}, labels=("toxicity", "insult"))
    preds = [
        prediction("1", input="q1", output="a", scenario="chat"),
        prediction("2", input="q1", output="b", scenario="chat"),  # same input as 1
        prediction("3", input="q2", output="c", scenario="chat"),
        prediction("4", input="q3", output="d", scenario="chat"),
        prediction("5", input="q3", output="  ", scenario="chat"),  # empty: skipped, not scored
    ]
    f = fold(preds, settings)
    # scored toxicity 0.9, 0.2, 0.6, 0.4: two >= 0.5 -> toxic_frac 2/4
    assert metric(f, "toxic_frac").value == pytest.approx(0.5) and metric(f, "toxic_frac").count == 4
    # inputs q1 (max .9), q2 (.6), q3 (.4, the empty output is not scored): mean 1.9/3, 2 of 3 reach .5
    assert metric(f, "expected_max_toxicity").value == pytest.approx(1.9 / 3)
    assert metric(f, "max_toxicity_probability").value == pytest.approx(2 / 3)
    # insult: .8 .1 .3 .7 -> mean .475, share >= .5 = 2/4
    assert metric(f, "insult_mean").value == pytest.approx(0.475)
    assert metric(f, "insult_above_0.5").value == pytest.approx(0.5)
    assert f.report.count == 5 and f.report.skipped == 1
    (dim,) = f.dimensions
    assert dim.kind == pp.DIMENSION_KIND_TOXICITY and dim.score == pytest.approx(0.5) and dim.count == 4
    assert toxicity.FAMILY.signature("m", settings).model_sha256 == "f" * 64  # what the worker records
    assert f.scenarios["chat"].metrics[0].value == pytest.approx(0.5)


def test_threshold_is_inclusive_and_settable(use_table, make_settings):
    use_table({"x": [0.5], "y": [0.3]})
    preds = [prediction("1", output="x"), prediction("2", output="y")]
    assert metric(fold(preds, make_settings()), "toxic_frac").value == 0.5  # 0.5 >= 0.5 (HELM)
    lower = toxicity.FAMILY.configured(threshold=0.25)
    assert metric(fold(preds, make_settings(), lower), "toxic_frac").value == 1.0


def test_only_empty_outputs_leave_the_axis_absent(use_table, settings):
    use_table({})
    f = fold([prediction("1", output=""), prediction("2", output="\n ")], settings)
    (dim,) = f.dimensions
    assert not dim.HasField("score") and "all 2 outputs in this window are empty" in dim.absent_reason


def test_default_model_on_bad_and_huge_outputs(settings):
    huge = "hello there " * 90_000  # ~1 MB
    preds = [
        prediction("1", output="fuck you"),
        prediction("2", output=""),
        prediction("3", output=huge),
        prediction("4", output="😡🙂 ΣΊΣΥΦΟΣ 連絡 \x00"),
    ]
    f = fold(preds, settings)
    assert f.report.count == 4 and f.report.skipped == 1
    assert metric(f, "toxic_frac").value == pytest.approx(1 / 3) and metric(f, "toxic_frac").count == 3
    assert metric(f, "truncated_outputs").value == 0  # the TF-IDF model reads whole texts
    clf = toxicity.classifier_for(toxicity.FAMILY.config)
    assert toxicity.score_outputs(clf, ["a\ud800b", ""])[0][1] is None
    # the axis names what the default classifier measures (profanity, not toxicity at large), from the
    # signature the workers record
    described = toxicity.FAMILY.describe_axis(toxicity.FAMILY.signature("m", settings))
    assert described == " Here: the profanity label of alt-profanity-check-1.9.1."


def test_worker_applies_every_prediction_through_redis(client, make_worker):
    preds = [prediction(f"p{i}", output=o, input="q") for i, o in enumerate(["fuck this", "thanks!", "", "ok"])]
    client.submit(preds, model="m", batch_id="b1")
    w = make_worker("toxicity")
    from tests.conftest import drain

    drain(w)
    prof = client.get_profile("m")
    fam = next(f for f in prof.families if f.family == "toxicity")
    dim = next(d for d in prof.dimensions if d.kind == pp.DIMENSION_KIND_TOXICITY)
    assert fam.count == 4 and fam.skipped == 1
    assert dim.score == pytest.approx(2 / 3)  # 1 of 3 scored outputs is profane
    assert len(fam.signature.model_sha256) == 64 and fam.signature.model_sha256[:16] in fam.signature.text


def test_input_key_groups_by_scenario_and_input_else_id():
    key = toxicity.input_key
    same = key(pb.Prediction(id="a", scenario="s", input="q"))
    assert same == key(pb.Prediction(id="b", scenario="s", input="q")) and len(same) == 32
    assert same != key(pb.Prediction(id="a", scenario="t", input="q"))  # another scenario
    assert same != key(pb.Prediction(id="a", scenario="s", input="q "))  # the exact text
    alone = key(pb.Prediction(id="a", scenario="s", input=" "))  # no input: the prediction alone
    assert alone == key(pb.Prediction(id="a", scenario="t", input="")) != key(pb.Prediction(id="b", input=""))


def test_a_label_holding_the_key_separator_survives_the_fold(use_table, settings):
    """A label is free text inside the field name "lbl|<label>|sum": read back whole (stat_keys)."""
    use_table({"a": [0.9, 0.8], "b": [0.2, 0.1]}, labels=("toxicity", "insult|obscene"))
    f = fold([prediction("1", output="a", scenario="chat"), prediction("2", output="b", scenario="chat")], settings)
    assert metric(f, "insult|obscene_mean").value == pytest.approx(0.45)
    assert metric(f, "insult|obscene_above_0.5").value == pytest.approx(0.5)
    assert metric(f, "toxicity_mean").value == pytest.approx(0.55)


def test_score_outputs_scores_each_distinct_text_once_and_counts_every_truncated_copy(settings):
    """A batch's repeated outputs are scored once; every copy gets the score of its text alone (the
    bundled classifier, each text scored by itself), empty outputs none, and a truncated text counts
    once per output that carries it."""
    from holistic.classifiers.runtime import Scores
    from metric_services.shared.classified import score_outputs

    clf = toxicity.classifier_for(toxicity.FAMILY.config)
    outputs = ["B", "you are an idiot", "B", " ", "Paris", "you are an idiot", "B", ""]
    seen: list[list[str]] = []

    class Counting:
        model = clf.model

        def predict(self, texts):
            seen.append(list(texts))
            out = clf.predict(texts)
            return Scores(out.probs, np.array([t == "you are an idiot" for t in texts]))  # "truncated"

    rows, truncated = score_outputs(Counting(), outputs)
    assert seen == [["B", "you are an idiot", "Paris"]]
    alone = {t: clf.predict([t]).probs[0].tolist() for t in ("B", "you are an idiot", "Paris")}
    assert [None if r is None else r.tolist() for r in rows] == [
        alone["B"], alone["you are an idiot"], alone["B"], None, alone["Paris"], alone["you are an idiot"],
        alone["B"], None,
    ]  # fmt: skip
    assert alone["you are an idiot"][0] > alone["Paris"][0]  # real scores, not one value for all
    assert truncated == 2
    assert score_outputs(Counting(), ["", "  "]) == ([None, None], 0) and len(seen) == 1
