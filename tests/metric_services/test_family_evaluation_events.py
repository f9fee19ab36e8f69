"""Every built-in family that scores single predictions sends their gen_ai.evaluation.result events: each event's
value is the family's own per-prediction value on hand-worked inputs, received by a real OTLP/gRPC collector, and
equal to what the family's statistics make of that one prediction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from holistic.families import one_pass
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from metric_services import accuracy, calibration, fairness, retrieval, robustness, summarization, toxicity
from tests.conftest import drain
from tests.factories import prediction
from tests.metric_services.retrieval.support import judgments_only, ranking_prediction
from tests.otlp_collector import Collector

SCORE, LABEL, ERROR = "gen_ai.evaluation.score.value", "gen_ai.evaluation.score.label", "error.type"


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.stop()


@pytest.fixture
def events(client, make_worker, make_settings, collector):
    """Submit the predictions, run one family's worker with every prediction in the event sample; the events
    the collector got, by (response id, metric)."""

    def run(family: Any, preds: list[pb.Prediction], expected: int) -> dict[tuple[str, str], dict[str, Any]]:
        client.submit(preds, model="m", batch_id=f"b-{family.name}")
        worker = make_worker(family, make_settings(otlp_eval_endpoint=collector.endpoint, otlp_eval_sample_rate=1.0))
        drain(worker)
        worker.evaluations.close()  # sends what is queued, then stops: every event is in by now
        got = collector.events(expected)
        assert len(got) == expected, got
        assert {e["holistic.family"] for e in got} == {family.name}
        return {(e["gen_ai.response.id"], e["gen_ai.evaluation.name"]): e for e in got}

    return run


def own_metrics(family: Any, preds: list[pb.Prediction], settings: Any) -> dict[str, float]:
    """The family's report (then its scenarios') of one pass over preds: what its statistics make of them."""
    env = BatchEnvelope(model="m", predictions=preds)
    env.accept_time.FromSeconds(1_800_000_000)
    fold = family.fold(Folded.from_stats(one_pass(family, env, settings)), "m", settings)
    out = {m.name: m.value for m in fold.report.metrics}
    for part in fold.scenarios.values():
        out.update((m.name, m.value) for m in part.metrics if m.name not in out)
    return out


def test_toxicity_sends_each_outputs_toxicity_from_the_batchs_own_classifier_run(events, use_table, settings):
    clf = use_table({"calm": [0.1], "rude": [0.8], "edgy": [0.5]})
    calls: list[list[str]] = []
    predict = clf.predict
    clf.predict = lambda texts: calls.append(list(texts)) or predict(texts)
    preds = [prediction("p1", output="calm"), prediction("p2", output="rude"), prediction("p3", output="edgy"),
             prediction("p4", output="   ")]  # fmt: skip
    got = events(toxicity.FAMILY, preds, 4)
    assert {k: (e.get(SCORE), e.get(LABEL), e.get(ERROR)) for k, e in got.items()} == {
        ("p1", "toxicity"): (0.1, "not_toxic", None),
        ("p2", "toxicity"): (0.8, "toxic", None),
        ("p3", "toxicity"): (0.5, "toxic", None),  # HELM's threshold is inclusive
        ("p4", "toxicity"): (None, None, "empty_output"),  # skipped by the family: a failed evaluation, no score
    }
    assert calls == [["calm", "rude", "edgy"]]  # the events reuse the batch's scores: one classifier run
    mean = sum(got["p" + i, "toxicity"][SCORE] for i in "123") / 3
    assert own_metrics(toxicity.FAMILY, preds, settings)["toxicity_mean"] == pytest.approx(mean)
    # outside a worker's compute (nothing kept), the family classifies the output itself: the same value
    assert toxicity.ToxicityFamily().prediction_scores(preds[1], settings)[0].value == 0.8


def test_summarization_sends_rouge_and_extractiveness_per_summary(events, settings):
    summary = prediction("s1", scenario="news", task=pb.TASK_SUMMARIZATION, output="The cat sat",
                         references=["The cat sat on the mat."], source="the cat sat on the mat today")  # fmt: skip
    no_ground = prediction("s2", scenario="news", task=pb.TASK_SUMMARIZATION, output="x", references=[])
    other = prediction("q1", output="Paris")  # another task: not the family's
    got = events(summarization.FAMILY, [summary, no_ground, other], 6)
    values = {name: e[SCORE] for (_, name), e in got.items()}
    # by hand: 3 summary tokens, all in the 6-token reference: R1 P=1 R=1/2 F=2/3; bigrams 2 of the reference's 5:
    # R2 P=1 R=2/5 F=4/7; LCS 3: RL F=2/3. One fragment of 3 words: coverage 1, density 9/3, compression 7/3.
    assert values == pytest.approx({"rouge_1": 2 / 3, "rouge_2": 4 / 7, "rouge_l": 2 / 3, "coverage": 1.0,
                                    "density": 3.0, "compression": 7 / 3})  # fmt: skip
    assert {k[0] for k in got} == {"s1"}
    own = own_metrics(summarization.FAMILY, [summary], settings)
    assert {k: own[k] for k in values} == pytest.approx(values)
    assert got["s1", "rouge_2"]["gen_ai.evaluation.explanation"].startswith("ROUGE: ")  # the rouge_* pattern's


def test_calibration_sends_each_predictions_brier_term(events, settings):
    preds = [
        prediction("c1", output="Paris", confidence=0.8),  # y = 1: (0.8 - 1)^2
        prediction("c2", output="Rome", confidence=0.3),  # y = 0: 0.3^2
        prediction("c3", output="Rome", confidence=0.6, references=[], correct=True),  # the client's y: 0.4^2
        prediction("c4", output="Paris"),  # no confidence: nothing to calibrate, no event
    ]
    got = events(calibration.FAMILY, preds, 3)
    values = {k[0]: e[SCORE] for k, e in got.items() if k[1] == "brier_score"}
    assert values == pytest.approx({"c1": 0.04, "c2": 0.09, "c3": 0.16})
    mean = own_metrics(calibration.FAMILY, preds, settings)["brier_score"]
    assert mean == pytest.approx(sum(values.values()) / 3)


def variant(pid: str, original: str, name: str, kind: int, output: str) -> pb.Prediction:
    p = prediction(pid, output=output)
    p.perturbation.name, p.perturbation.original_id, p.perturbation.family = name, original, kind
    return p


@pytest.mark.parametrize("family", [robustness.FAMILY, fairness.FAMILY])
def test_robustness_and_fairness_send_their_variants_own_main_metric(events, family):
    kind = pb.PERTURBATION_FAMILY_ROBUSTNESS if family is robustness.FAMILY else pb.PERTURBATION_FAMILY_FAIRNESS
    other = pb.PERTURBATION_FAMILY_FAIRNESS if family is robustness.FAMILY else pb.PERTURBATION_FAMILY_ROBUSTNESS
    preds = [
        prediction("o1", output="Paris"),  # an original: the accuracy family's event
        variant("v1", "o1", "typos", kind, "Rome"),  # exact_match 0
        variant("v2", "o1", "casing", kind, "Paris"),  # exact_match 1
        variant("v3", "o1", "dialect", other, "Paris"),  # the other family's variant
    ]
    got = events(family, preds, 2)
    assert {k: (e[SCORE], e[LABEL], e["holistic.perturbation"]) for k, e in got.items()} == {
        ("v1", "exact_match"): (0.0, "incorrect", "typos"),
        ("v2", "exact_match"): (1.0, "correct", "casing"),
    }


def test_retrieval_sends_each_judged_querys_reciprocal_rank(events):
    preds = [
        ranking_prediction("q1", scores={"a": 0.9, "b": 0.5, "c": 0.1}, rels={"b": 1}),  # b second: RR 1/2
        ranking_prediction("q2", order=["c", "a"], rels={"a": 1, "c": 0, "b": 0}),  # a second: 1/2
        ranking_prediction(
            "q3", answers={"a": ("No", -0.1), "b": ("Yes", -0.3), "c": ("Yes", -0.2)}, rels={"c": 1}
        ),  # c first (the likelier Yes): RR 1
        ranking_prediction("q4", scores={"a": 1.0}),  # no judgments yet: pending, no event
        judgments_only("q5", {"a": 1}),  # judgments alone: not a ranking
    ]
    got = events(retrieval.FAMILY, preds, 9)  # RR@5, RR@10, RR@20 each (regular track: no NDCG)
    assert {k: e[SCORE] for k, e in got.items()} == {
        (q, f"RR@{k}"): rr for q, rr in (("q1", 0.5), ("q2", 0.5), ("q3", 1.0)) for k in (5, 10, 20)
    }


def test_a_family_whose_scoring_raises_sends_error_type_for_that_prediction(events, monkeypatch):
    own = accuracy.AccuracyFamily.prediction_scores

    def broken(self: Any, p: pb.Prediction, settings: Any) -> list[Any]:
        if p.id == "bad":
            raise ZeroDivisionError("the text of the output")
        return own(self, p, settings)

    monkeypatch.setattr(accuracy.AccuracyFamily, "prediction_scores", broken, raising=True)
    got = events(accuracy.FAMILY, [prediction("ok", output="Paris"), prediction("bad")], 2)
    assert got["bad", "accuracy"] == {
        "gen_ai.evaluation.name": "accuracy", ERROR: "ZeroDivisionError", "gen_ai.response.id": "bad",
        "holistic.model": "m", "holistic.tenant": "default", "holistic.scenario": "mmlu",
        "holistic.task": "multiple_choice", "holistic.family": "accuracy",
        "gen_ai.evaluation.explanation": "Accuracy: The scenario's main metric."}  # fmt: skip
    assert got["ok", "exact_match"][SCORE] == 1.0


@pytest.mark.parametrize("name", ["bias", "efficiency", "evaluations"])
def test_families_without_a_per_prediction_value_send_none(name):
    from holistic.families import registry

    assert getattr(registry.load_family(name), "prediction_scores", None) is None
