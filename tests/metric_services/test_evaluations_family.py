"""The evaluations family: evaluations sent with a prediction or after it, folded per metric; only this family sees
evaluation-only predictions."""

from __future__ import annotations

import math

import grpc
import pytest

from holistic.v1 import prediction_pb2 as pb
from holistic_client.errors import ClientError, InvalidPredictions
from tests.conftest import drain
from tests.factories import prediction


def evaluation_only(pid: str, scenario: str = "chat", **scores: float) -> pb.Prediction:
    p = pb.Prediction(id=pid, scenario=scenario, task=pb.TASK_FREE_GENERATION)
    p.evaluations.extend(pb.Evaluation(name=name, score=score, label="x") for name, score in scores.items())
    return p


def test_evaluations_join_their_metric_and_only_this_family_counts_evaluation_only_predictions(client, make_worker):
    inline = prediction("p3", scenario="chat")
    inline.evaluations.add(name="relevance", score=5.0)
    client.submit([prediction("p1", scenario="chat"), prediction("p2", scenario="chat"), inline], model="m")
    # p1 and p2 scored after the fact; p9 was never submitted: its score still counts (nothing is dropped)
    later = [evaluation_only("p1", relevance=4.0, helpful=1.0), evaluation_only("p2", relevance=2.0)]
    client.submit([*later, evaluation_only("p9", relevance=3.0)], model="m", batch_id="evals-1")
    client.submit([evaluation_only("q1", scenario="other", relevance=1.0)], model="m", batch_id="evals-2")
    drain(make_worker("accuracy"), make_worker("evaluations"))
    profile = client.get_profile("m")
    pending = {f.family: (f.pending_predictions, f.pending_batches) for f in profile.pending}
    # nothing pending for accuracy: it was never sent the evaluations (the families not run have the first batch)
    assert pending["accuracy"] == pending["evaluations"] == (0, 0) and pending["efficiency"] == (3, 1)
    accuracy = next(f for f in profile.families if f.family == "accuracy")
    assert accuracy.count == 3  # the evaluation-only predictions are not predictions to score

    scores = next(f for f in profile.families if f.family == "evaluations")
    chat = next(s for s in profile.scenarios if s.scenario == "chat")
    relevance = next(m for m in chat.metrics if m.family == "evaluations" and m.name == "relevance")
    # by hand: 4, 2, 3, 5: mean 3.5, sample variance 5/3, standard error sqrt(5/12)
    half = 1.959963984540054 * math.sqrt(5 / 12)
    assert (relevance.value, relevance.count) == (3.5, 4)
    assert relevance.interval.lower == pytest.approx(3.5 - half) and relevance.interval.upper == pytest.approx(
        3.5 + half
    )
    helpful = next(m for m in chat.metrics if m.family == "evaluations" and m.name == "helpful")
    assert (helpful.value, helpful.count) == (1.0, 1)
    overall = {m.name: m for m in scores.metrics}
    assert overall["relevance"].value == pytest.approx((3.5 + 1.0) / 2)  # unweighted over the two scenarios
    assert overall["relevance"].count == 5
    assert (scores.count, scores.skipped) == (7, 2)  # every prediction it applied; p1, p2 carried none


def test_bad_evaluations_are_invalid_argument_naming_the_field(client):
    p = evaluation_only("p1", relevance=float("nan"))
    p.evaluations.add(score=1.0)  # no name
    p.evaluations.add(name="rel")  # no score
    with pytest.raises(InvalidPredictions) as err:
        client.submit([p], model="m")
    assert err.value.violations == [
        ("predictions[0].evaluations[0].score", "must be a finite number, got nan"),
        ("predictions[0].evaluations[1].name", "is required (the metric, gen_ai.evaluation.name)"),
        ("predictions[0].evaluations[2].score", "is required: a number (gen_ai.evaluation.score.value)"),
    ]
    with pytest.raises(InvalidPredictions) as err:
        client.submit([prediction("a"), evaluation_only("b", relevance=1.0)], model="m")
    assert [path for path, _ in err.value.violations] == ["predictions[1].evaluations"]
    assert "evaluation-only predictions go in batches of their own" in err.value.violations[0][1]


def test_evaluation_only_batches_need_a_family_that_reads_them(make_gateway):
    gw = make_gateway(families=["accuracy"])
    with gw.client(max_attempts=1) as c:
        with pytest.raises(ClientError) as err:
            c.submit([evaluation_only("p1", relevance=1.0)], model="m")
        assert err.value.code == grpc.StatusCode.UNAVAILABLE and "reads evaluations" in str(err.value)
        c.submit([prediction("p1")], model="m")  # other batches are accepted as before
