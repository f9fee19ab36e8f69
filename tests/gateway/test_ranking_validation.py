"""A ranking's bad fields get INVALID_ARGUMENT naming the field, through the real gateway; a good
ranking in each form, and judgments alone, are accepted."""

from __future__ import annotations

import grpc
import pytest

from holistic.redis.keys import Keys
from holistic.v1 import prediction_pb2 as pb
from holistic_client import InvalidPredictions
from tests.factories import prediction
from tests.metric_services.retrieval.support import judgments_only, ranking_prediction


def violations(client, preds, batch_id="rb-1"):
    with pytest.raises(InvalidPredictions) as exc:
        client.submit(preds, batch_id=batch_id, model="m1")
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
    return dict(exc.value.violations)


def good():
    return ranking_prediction("q", scores={"a": 1.0, "b": 0.5}, rels={"a": 1})


def dup(p):
    p.ranking.documents.add(id="a", score=0.1)


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (dup, "predictions[1].ranking.documents[2].id", "duplicates the document id 'a'"),
        (lambda p: setattr(p.ranking.documents[0], "relevance", -1), "predictions[1].ranking.documents[0].relevance",
         "non-negative integer, got -1.0"),
        (lambda p: setattr(p.ranking.documents[0], "relevance", 1.5), "predictions[1].ranking.documents[0].relevance",
         "non-negative integer, got 1.5"),
        (lambda p: setattr(p.ranking.documents[0], "relevance", float("nan")),
         "predictions[1].ranking.documents[0].relevance", "non-negative integer"),
        (lambda p: p.ranking.order.extend(["a", "zz"]), "predictions[1].ranking.order[1]", "'zz', which is not among"),
        (lambda p: p.ranking.order.extend(["a", "a"]), "predictions[1].ranking.order[1]", "repeats the document 'a'"),
        (lambda p: setattr(p.ranking.documents[1], "id", ""), "predictions[1].ranking.documents[1].id", "required"),
        (lambda p: setattr(p.ranking.documents[1], "score", float("inf")), "predictions[1].ranking.documents[1].score",
         "finite"),
        (lambda p: setattr(p.ranking.documents[1], "logprob", float("-inf")),
         "predictions[1].ranking.documents[1].logprob", "finite"),
        (lambda p: setattr(p.ranking.documents[1], "retriever_rank", 0),
         "predictions[1].ranking.documents[1].retriever_rank", "at least 1"),
        (lambda p: p.ClearField("ranking"), "predictions[1].ranking", "required for TASK_RANKING"),
        (lambda p: setattr(p, "task", pb.TASK_OPEN_QA), "predictions[1].ranking", "only for TASK_RANKING"),
        (lambda p: setattr(p.ranking, "form", pb.RANKING_FORM_BINARY), "predictions[1].ranking.documents",
         "no document has a model_output"),
        # a form this version does not know (the fuzz test's find: it crashed naming the enum)
        (lambda p: setattr(p.ranking, "form", 99), "predictions[1].ranking.form", "unknown ranking form 99"),
    ],
)  # fmt: skip
def test_ranking_field_violation_names_the_field(gateway, r, mutate, path, words):
    p = good()
    mutate(p)
    with gateway.client() as client:
        v = violations(client, [prediction("ok"), p])
    assert path in v, v
    assert words in v[path]
    assert r.xlen(Keys().stream) == 0 and not r.exists(Keys().meta("m1"))  # nothing written


def test_too_many_documents_is_a_setting(make_gateway):
    gw = make_gateway(max_ranking_documents=3)
    p = ranking_prediction("q", scores={d: 1.0 for d in "abcd"})
    with gw.client() as client:
        v = violations(client, [p])
        assert "has 4 documents; at most 3" in v["predictions[0].ranking.documents"]
        client.submit([ranking_prediction("q", scores={d: 1.0 for d in "abc"})], batch_id="rb-2", model="m1")


def test_every_form_and_judgments_alone_are_accepted(client):
    preds = [
        ranking_prediction("s", scores={"a": 1.0, "b": 1.0}, rels={"a": 2, "b": 0}),
        ranking_prediction("o", order=["b"], rels={"a": 1}),
        ranking_prediction("e", order=[], form=pb.RANKING_FORM_ORDER),
        ranking_prediction("y", answers={"a": ("Yes", -0.2), "b": ("No", -1.0)}, retriever={"a": 1, "b": 2}),
        judgments_only("s2", {"a": 3}),
    ]
    assert client.submit(preds, batch_id="rb-ok", model="m1").accepted_count == 5


def test_judgments_share_their_rankings_id_even_in_one_batch(client):
    preds = [judgments_only("q", {"a": 1}), ranking_prediction("q", scores={"a": 1.0}), judgments_only("q", {"b": 0})]
    assert client.submit(preds, batch_id="rb-share", model="m1").accepted_count == 3
    v = violations(client, [ranking_prediction("q", scores={"a": 1.0}), ranking_prediction("q", order=["a"])])
    assert "duplicates the id 'q'" in v["predictions[1].id"]  # two rankings of one query: refused
