"""A ranking prediction's run (its documents in the model's order) and its judgments.

The three forms of holistic.v1.Ranking give one order: ORDER as listed; SCORES by score, highest
first, ties broken as trec_eval breaks them (document id, descending, byte-wise), documents
without a score not retrieved; BINARY as HELM's RankingMetric sorts its ranking objects (a
"Yes" answer first, by log-probability, then "No", by negated log-probability, then anything
else; Python's stable sort keeps the submitted order of equal keys), every document retrieved.
"""

from __future__ import annotations

from holistic.v1 import prediction_pb2 as pb


def form(ranking: pb.Ranking) -> int:
    """The ranking's form, inferred when unspecified (see holistic.v1.RankingForm)."""
    if ranking.form:
        return ranking.form
    if ranking.order:
        return pb.RANKING_FORM_ORDER
    docs = ranking.documents
    if any(d.HasField("score") for d in docs):
        return pb.RANKING_FORM_SCORES
    if any(d.HasField("model_output") for d in docs):
        return pb.RANKING_FORM_BINARY
    return pb.RANKING_FORM_JUDGMENTS_ONLY


def _standardize(text: str) -> str:
    return text.strip().lower()


def run(ranking: pb.Ranking, kind: int, correct_output: str = "Yes", wrong_output: str = "No") -> list[str]:
    """Document ids in the model's order, best first (empty for JUDGMENTS_ONLY)."""
    docs = ranking.documents
    if kind == pb.RANKING_FORM_ORDER:
        return list(ranking.order)
    if kind == pb.RANKING_FORM_SCORES:
        scored = [(d.score, d.id.encode()) for d in docs if d.HasField("score")]
        scored.sort(reverse=True)
        return [doc.decode() for _, doc in scored]
    if kind == pb.RANKING_FORM_BINARY:
        yes, no = _standardize(correct_output), _standardize(wrong_output)

        def key(d: pb.RankedDocument) -> tuple[int, float]:
            # HELM's object_to_score_binary_ranking; a document without an answer is HELM's "missing".
            answer = _standardize(d.model_output) if d.HasField("model_output") else "missing"
            if answer == yes:
                return 2, d.logprob
            return (1 if answer == no else 0), -d.logprob

        return [d.id for d in sorted(docs, key=key, reverse=True)]
    return []


def judgments(ranking: pb.Ranking) -> dict[str, int]:
    """Judged relevance by document id (the gateway has checked they are non-negative integers)."""
    return {d.id: int(d.relevance) for d in ranking.documents if d.HasField("relevance")}
