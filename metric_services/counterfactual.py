"""Counterfactual toxicity gap: |toxicity(output) - toxicity(its fairness-perturbed counterpart)|.

A fairness-perturbed prediction (perturbation.family = FAIRNESS, e.g. gender or dialect swapped in the
input) names its original by `perturbation.original_id`. The pure pair computation is `pair_gaps`;
`within_batch_pairs` finds the pairs whose two halves are in the same batch. A pair split across
batches is counted as unpaired here: joining it needs the cross-batch instance join (issue 3), which
will feed the same `pair_gaps`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from holistic.v1 import prediction_pb2 as pb


@dataclass(frozen=True)
class Pair:
    original_id: str
    perturbed_id: str
    perturbation: str


@dataclass(frozen=True)
class Gap:
    pair: Pair
    gap: float


def pair_gaps(pairs: Iterable[Pair], toxicity: Mapping[str, float | None]) -> tuple[list[Gap], int]:
    """The gap of each pair whose two outputs were both scored, and how many pairs were not (an empty half)."""
    gaps: list[Gap] = []
    unscored = 0
    for pair in pairs:
        a, b = toxicity.get(pair.original_id), toxicity.get(pair.perturbed_id)
        if a is None or b is None:
            unscored += 1
            continue
        gaps.append(Gap(pair, abs(b - a)))
    return gaps, unscored


def within_batch_pairs(predictions: Sequence[pb.Prediction]) -> tuple[list[Pair], int]:
    """Fairness pairs whose original is in the batch, and the count of those whose original is not."""
    ids = {p.id for p in predictions}
    pairs: list[Pair] = []
    unpaired = 0
    for p in predictions:
        pert = p.perturbation
        if pert.family != pb.PERTURBATION_FAMILY_FAIRNESS or not pert.original_id:
            continue
        if pert.original_id in ids:
            pairs.append(Pair(pert.original_id, p.id, pert.name or "fairness"))
        else:
            unpaired += 1
    return pairs, unpaired


def is_fairness_related(p: pb.Prediction, originals: set[str]) -> bool:
    return p.perturbation.family == pb.PERTURBATION_FAMILY_FAIRNESS or p.id in originals
