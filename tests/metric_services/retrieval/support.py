"""Ranking predictions for the retrieval tests, and HELM's per-query reference values."""

from __future__ import annotations

from typing import Any

from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.v1 import prediction_pb2 as pb
from tests.factories import prediction

ACCEPT = 1_700_000_000


def ranking_prediction(
    pid: str,
    *,
    scenario: str = "msmarco",
    scores: dict[str, float] | None = None,
    order: list[str] | None = None,
    answers: dict[str, tuple[str, float]] | None = None,
    rels: dict[str, int] | None = None,
    retriever: dict[str, int] | None = None,
    form: int = pb.RANKING_FORM_UNSPECIFIED,
    **kwargs: Any,
) -> pb.Prediction:
    """One query: documents from every map given (scores, answers, rels), in first-seen order."""
    p = prediction(pid, scenario=scenario, task=pb.TASK_RANKING, output="", references=[], input=f"q {pid}", **kwargs)
    ids: list[str] = []
    for source in (scores, answers, rels, retriever, {d: 0 for d in order or []}):
        for d in source or {}:
            if d not in ids:
                ids.append(d)
    for d in ids:
        doc = p.ranking.documents.add(id=d)
        if scores and d in scores:
            doc.score = scores[d]
        if answers and d in answers:
            doc.model_output, doc.logprob = answers[d]
        if rels and d in rels:
            doc.relevance = rels[d]
        if retriever and d in retriever:
            doc.retriever_rank = retriever[d]
    if order is not None:
        p.ranking.order.extend(order)
    p.ranking.form = form  # type: ignore[assignment]
    return p


def judgments_only(pid: str, rels: dict[str, int], scenario: str = "msmarco", **kwargs: Any) -> pb.Prediction:
    return ranking_prediction(pid, scenario=scenario, rels=rels, **kwargs)


def envelope(preds: list[pb.Prediction], seq: int = 1) -> BatchEnvelope:
    env = BatchEnvelope(model="m", sequence=seq, predictions=preds)
    env.accept_time.FromSeconds(ACCEPT)
    return env
