"""Ranking predictions for the retrieval tests, and HELM's per-query reference values."""

from __future__ import annotations

from typing import Any

import pytrec_eval

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


def helm_measure(qrels: dict[str, int], scores: dict[str, float], name: str, track: str) -> float:
    """HELM 0.5.16 ranking_metrics.RankingMetric.compute_measure, with pytrec_eval's measure names."""
    measure, _, k = name.partition("@")
    measure = {"RR": "recip_rank", "NDCG": "ndcg_cut"}.get(measure, measure.lower())
    if measure in ("recip_rank", "recall", "success") and track == "trec":
        qrels = {d: 0 if r == 1 else r for d, r in qrels.items()}  # helm.common.general.binarize_dict
    evaluator_name = f"{measure}.{k}"
    if measure == "recip_rank":
        evaluator_name = measure
        # limit_relevance_dict: the run's top k; trec_eval's order (score desc, id desc) on ties.
        top = sorted(scores.items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)[: int(k)]
        scores = dict(top)
    evaluator = pytrec_eval.RelevanceEvaluator({"q": qrels}, {evaluator_name})
    result = evaluator.evaluate({"q": scores})
    return next(iter(result["q"].values()))
