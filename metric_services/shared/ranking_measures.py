"""trec_eval's measures for one query, exactly as HELM's RankingMetric calls them through pytrec_eval
(shared: the retrieval family's metrics and the robustness and fairness worst cases of rankings).

HELM (crfm-helm 0.5.16, metrics/ranking_metrics.py, scenarios/msmarco_scenario.py) computes, per
query, `success.k` and `recall.k` for k in 1, 2, 3, 5, 10, 20, `recip_rank` on the run cut to its
top k for k in 5, 10, 20 (pytrec_eval has no recip_rank cutoff), and on the TREC track also
`ndcg_cut.k` for k in 5, 10, 20, named Success@k, Recall@k, RR@k and NDCG@k. On the TREC track
(graded judgments 0-3) the binary measures (RR, Recall, Success) see the judgments binarized as
HELM's `binarize_dict` does: 1 becomes 0, other values stay, so a document is relevant at 2 or
above; NDCG uses the graded values as gains. trec_eval counts a document relevant at relevance
>= 1, unjudged documents as not relevant, and `num_rel` over all judged documents, retrieved or
not. Every measure here cuts at k <= 20, so only the run's first MAX_K documents matter.

Inputs: `ranked` is the judged relevance (0 when unjudged) of the run's documents in rank order,
`judged` every judged relevance of the query. An empty run scores 0 everywhere (pytrec_eval does
the same); a query without judgments is not scored at all (pytrec_eval returns nothing for it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

Track = Literal["regular", "trec"]

SUCCESS_KS = (1, 2, 3, 5, 10, 20)
RECALL_KS = (1, 2, 3, 5, 10, 20)
RR_KS = (5, 10, 20)
NDCG_KS = (5, 10, 20)
MAX_K = 20
MAIN_METRIC = {"regular": "RR@10", "trec": "NDCG@10"}
# 1 / log2(rank + 1) for ranks 1..MAX_K, trec_eval's discount.
_DISCOUNT = tuple(1.0 / math.log2(i + 2) for i in range(MAX_K))


def names(track: Track) -> tuple[str, ...]:
    """HELM's metric names for the track, in HELM's order (RankingMetric.measure_to_metric_name)."""
    out = [f"Success@{k}" for k in SUCCESS_KS] + [f"Recall@{k}" for k in RECALL_KS] + [f"RR@{k}" for k in RR_KS]
    if track == "trec":
        out += [f"NDCG@{k}" for k in NDCG_KS]
    return tuple(out)


def topk_name(metric: str, topk: int) -> str:
    """HELM's name of a metric over the documents the first-stage retriever ranked in its top k."""
    return f"{metric} (topk={topk})"


def measures(ranked: Sequence[int], judged: Sequence[int], track: Track) -> list[float]:
    """The query's values of names(track), in that order."""
    threshold = 2 if track == "trec" else 1
    num_rel = 0
    for r in judged:
        if r >= threshold:
            num_rel += 1
    first = 0  # 1-based rank of the first relevant document, 0: none in the top MAX_K
    hits = [0] * MAX_K  # relevant documents within the first i + 1
    count = 0
    for i, r in enumerate(ranked[:MAX_K]):
        if r >= threshold:
            count += 1
            if not first:
                first = i + 1
        hits[i] = count
    n = min(len(ranked), MAX_K)
    for i in range(n, MAX_K):
        hits[i] = count
    out = [1.0 if first and first <= k else 0.0 for k in SUCCESS_KS]
    out += [hits[k - 1] / num_rel if num_rel else 0.0 for k in RECALL_KS]
    out += [1.0 / first if first and first <= k else 0.0 for k in RR_KS]
    if track == "trec":
        out += _ndcg(ranked, judged)
    return out


def _ndcg(ranked: Sequence[int], judged: Sequence[int]) -> list[float]:
    """trec_eval's ndcg_cut: gain = relevance, discount 1 / log2(rank + 1), ideal from all judgments."""
    ideal_gains = sorted((r for r in judged if r > 0), reverse=True)[:MAX_K]
    out = []
    for k in NDCG_KS:
        dcg = 0.0
        for i, r in enumerate(ranked[:k]):
            if r > 0:
                dcg += r * _DISCOUNT[i]
        ideal = 0.0
        for i, r in enumerate(ideal_gains[:k]):
            ideal += r * _DISCOUNT[i]
        out.append(dcg / ideal if ideal > 0 else 0.0)
    return out


def measures_batch(ranked: np.ndarray, judged: np.ndarray, track: Track) -> np.ndarray:
    """`measures` for many queries at once, the same floats: row q of `ranked` (queries x <= MAX_K)
    is query q's run's judged relevance in rank order (0 unjudged, and past its run), row q of
    `judged` its judged relevances padded with 0 (any width). Rows: queries; columns: names(track)."""
    threshold = 2 if track == "trec" else 1
    n = ranked.shape[0]
    full = np.zeros((n, MAX_K))
    full[:, : ranked.shape[1]] = ranked[:, :MAX_K]
    relevant = full >= threshold
    num_rel = np.count_nonzero(judged >= threshold, axis=1).astype(np.float64)
    hits = np.cumsum(relevant, axis=1)
    first = np.where(relevant.any(axis=1), np.argmax(relevant, axis=1) + 1, 0)
    found = first > 0
    cols = [(found & (first <= k)).astype(np.float64) for k in SUCCESS_KS]
    with np.errstate(divide="ignore", invalid="ignore"):
        cols += [np.where(num_rel > 0, hits[:, k - 1] / num_rel, 0.0) for k in RECALL_KS]
        cols += [np.where(found & (first <= k), 1.0 / np.maximum(first, 1), 0.0) for k in RR_KS]
        if track == "trec":
            discount = np.array(_DISCOUNT)
            dcg = np.cumsum(np.where(full > 0, full * discount, 0.0), axis=1)
            gains = -np.sort(-np.where(judged > 0, judged, 0.0), axis=1)[:, :MAX_K]
            ideal_gains = np.zeros((n, MAX_K))
            ideal_gains[:, : gains.shape[1]] = gains
            ideal = np.cumsum(ideal_gains * discount, axis=1)
            cols += [np.where(ideal[:, k - 1] > 0, dcg[:, k - 1] / ideal[:, k - 1], 0.0) for k in NDCG_KS]
    return np.stack(cols, axis=1)
