"""Counterfactual toxicity gap: |toxicity(original) - toxicity(its fairness-perturbed variant)|.

A fairness-perturbed prediction (perturbation.family = FAIRNESS, e.g. gender or dialect swapped in
the input) names its original by `perturbation.original_id`. The two halves join across batches,
in any order, through holistic/stats/instances.py: the instance is (scenario, original id); an
unperturbed prediction fills its slot "o", a fairness variant the slot "v:<name>:<hash of its id>"
of its original's instance (each slot reduced with max: a resubmitted prediction counts once).
An empty output is kept as EMPTY (-1), so a pair with an empty half is known as unscored.

Per instance, once the original and at least one variant have arrived (`CounterfactualSpec.derive`):
- `cf` = the mean over its scored variants of |o - v|, and `cf:<name>` the same over the variants
  of one perturbation name. The metric is the mean over instances: each original weighs the same
  however many variants it has (as HELM's worst case averages instances, not rows), and pairs that
  share an original are not independent, so the interval is over instances. With one variant per
  original (what `holistic perturb` writes per name) it is the mean over pairs.
- `cf_unscored` = its variants with an empty output on either side (not in the mean).
An instance with variants but no original yet counts its variants in `cf_unpaired` (not in the
mean); when the original arrives they move into the gap. An original alone contributes nothing.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping

from holistic.stats.instances import SEP, Reducer, Row, new_row
from holistic.v1 import prediction_pb2 as pb

ORIGINAL = "o"
VARIANT = "v:"
EMPTY = -1.0  # an empty output: not scored, so no gap
CF_GAP = "cf"  # the instances' quantities (statistics parts)
CF_GAP_OF = "cf:"  # "cf:<perturbation name>"
CF_UNPAIRED = "cf_unpaired"
CF_UNSCORED = "cf_unscored"


class CounterfactualSpec:
    """InstanceSpec of the counterfactual pairs (quantities as in the module docstring)."""

    thresholded = False  # holistic/stats/instances.py: no quantity has thresholds

    def reducer(self, slot: str) -> Reducer:
        return "max"

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        if len(slots) == 1 and ORIGINAL in slots:  # an original alone (most instances): nothing yet
            return {}
        variants = [(slot[len(VARIANT) :].rpartition(":")[0], v) for slot, v in sorted(slots.items())
                    if slot.startswith(VARIANT)]  # fmt: skip
        if not variants:
            return {}
        o = slots.get(ORIGINAL)
        if o is None:
            return {CF_UNPAIRED: float(len(variants))}
        by_name: dict[str, list[float]] = defaultdict(list)
        for name, v in variants:
            if o != EMPTY and v != EMPTY:
                by_name[name].append(abs(o - v))
        gaps = [g for name in sorted(by_name) for g in by_name[name]]
        out: dict[str, float] = {}
        if len(gaps) < len(variants):
            out[CF_UNSCORED] = float(len(variants) - len(gaps))
        if gaps:
            out[CF_GAP] = sum(gaps) / len(gaps)
            for name, values in by_name.items():
                out[CF_GAP_OF + name] = sum(values) / len(values)
        return out

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return ()


SPEC = CounterfactualSpec()


def variant_slot(name: str, prediction_id: str) -> str:
    """A variant's own slot: perturbation names are tags (no ';', which State.encode separates by),
    the id may be anything, so it is hashed."""
    return f"{VARIANT}{name}:{hashlib.blake2b(prediction_id.encode(), digest_size=8).hexdigest()}"


def counterfactual_row(p: pb.Prediction, toxicity: float | None, minute: int) -> Row | None:
    """The prediction's row: an unperturbed one may be an original, a fairness variant joins its
    original; a robustness variant is neither."""
    value = EMPTY if toxicity is None else toxicity
    if not p.HasField("perturbation"):
        return new_row(Row, (SEP.join((p.scenario, p.id)), ORIGINAL, value, minute))  # one a prediction
    pert = p.perturbation
    if pert.family != pb.PERTURBATION_FAMILY_FAIRNESS or not pert.original_id:
        return None
    slot = variant_slot(pert.name or "fairness", p.id)
    return new_row(Row, (SEP.join((p.scenario, pert.original_id)), slot, value, minute))


def takes_part(p: pb.Prediction) -> bool:
    """Whether a prediction needs a row (and so its toxicity): unperturbed, or a fairness variant."""
    return not p.HasField("perturbation") or p.perturbation.family == pb.PERTURBATION_FAMILY_FAIRNESS
