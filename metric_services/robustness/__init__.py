"""Robustness family: HELM's worst case of the main metric over robustness perturbations.

Per instance, the lowest score among its original and its robustness variants (typos, casing,
contractions, whitespace, ...); per scenario the mean over instances; the robustness axis is the
unweighted mean over scenarios, as the accuracy axis is. metric_services/shared/worst_case.py has the
definitions and holistic/stats/instances.py the per-instance state that joins rows in any order.
"""

from __future__ import annotations

from holistic.families import Axis, FamilyBase, FamilyFold, Partial
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import DIMENSION_KIND_ROBUSTNESS, MetricSignature
from metric_services.shared import worst_case
from metric_services.shared.worst_case_fold import WORST_CASE_METRICS, fold_worst_case, worst_case_options

NAME = "robustness"
VERSION = "2"  # 2: a worst case for every metric of the task's HELM set
DEFINITION = (
    "Mean over scenarios of the mean over instances of the worst main-metric score among the original "
    "and its robustness-perturbed variants (HELM); an instance without variants counts with its own score."
)


class RobustnessFamily(FamilyBase):
    name = NAME
    exported_metrics = ("robustness",)  # holistic quality-exporter's default series
    version = VERSION
    axis = Axis("robustness", DEFINITION, kind=DIMENSION_KIND_ROBUSTNESS, order=3)
    metrics = WORST_CASE_METRICS

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> Partial:
        return worst_case.compute(envelope, settings, pb.PERTURBATION_FAMILY_ROBUSTNESS)

    def prediction_scores(self, p: pb.Prediction, settings: Settings) -> list[Score]:
        """A robustness variant's own main-metric score (worst_case.variant_evaluation)."""
        return worst_case.variant_evaluation(p, settings, pb.PERTURBATION_FAMILY_ROBUSTNESS)

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        fold, _ = fold_worst_case(NAME, DIMENSION_KIND_ROBUSTNESS, DEFINITION, stats, settings)
        return fold

    def paired_direction(self, slot: str) -> int:
        """A paired cell's slot is a correctness score: higher is better (CompareProfiles judges it)."""
        return worst_case.paired_direction(slot)

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        return make_signature(NAME, VERSION, worst_case_options(settings))


FAMILY = RobustnessFamily()
