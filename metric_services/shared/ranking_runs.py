"""A ranking prediction's run (its documents in the model's order) and its judgments.

The three forms of holistic.v1.Ranking give one order: ORDER as listed; SCORES by score, highest
first, ties broken as trec_eval breaks them (document id, descending, byte-wise), documents
without a score not retrieved; BINARY as HELM's RankingMetric sorts its ranking objects (a
"Yes" answer first, by log-probability, then "No", by negated log-probability, then anything
else; Python's stable sort keeps the submitted order of equal keys), every document retrieved.
"""

from __future__ import annotations

import heapq

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


def run(
    ranking: pb.Ranking, kind: int, correct_output: str = "Yes", wrong_output: str = "No", limit: int | None = None
) -> list[str]:
    """Document ids in the model's order, best first (empty for JUDGMENTS_ONLY); its first `limit` only
    when given (cheaper: no measure looks past its top 20)."""
    docs = ranking.documents
    if kind == pb.RANKING_FORM_ORDER:
        return list(ranking.order[:limit] if limit is not None else ranking.order)
    if kind == pb.RANKING_FORM_SCORES:
        # (score, id) descending: str order is code-point order, which is UTF-8 byte order (trec_eval's strcmp).
        scored = [(d.score, d.id) for d in docs if d.HasField("score")]
        top = heapq.nlargest(limit, scored) if limit is not None else sorted(scored, reverse=True)
        return [doc for _, doc in top]
    if kind == pb.RANKING_FORM_BINARY:
        yes, no = _standardize(correct_output), _standardize(wrong_output)

        def key(d: pb.RankedDocument) -> tuple[int, float]:
            # HELM's object_to_score_binary_ranking; a document without an answer is HELM's "missing".
            answer = _standardize(d.model_output) if d.HasField("model_output") else "missing"
            if answer == yes:
                return 2, d.logprob
            return (1 if answer == no else 0), -d.logprob

        return [d.id for d in sorted(docs, key=key, reverse=True)[:limit]]
    return []


def judgments(ranking: pb.Ranking) -> dict[str, int]:
    """Judged relevance by document id (the gateway has checked they are non-negative integers)."""
    return {d.id: int(d.relevance) for d in ranking.documents if d.HasField("relevance")}


def scan(ranking: pb.Ranking, limit: int | None) -> tuple[list[str], dict[str, int], bool]:
    """The SCORES run (its first `limit` when given) and the judgments in one pass over the documents
    (each pass over a repeated field materializes every document: most of the cost at 100 documents),
    and whether any document has a score (the form, when unspecified and without an order)."""
    scored: list[tuple[float, str]] = []
    rels: dict[str, int] = {}
    for d in ranking.documents:
        if d.HasField("score"):
            scored.append((d.score, d.id))
        if d.HasField("relevance"):
            rels[d.id] = int(d.relevance)
    top = heapq.nlargest(limit, scored) if limit is not None else sorted(scored, reverse=True)
    return [doc for _, doc in top], rels, bool(scored)
