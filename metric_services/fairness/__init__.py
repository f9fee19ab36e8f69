"""Fairness family: HELM's worst case over fairness perturbations, and group fairness.

Counterfactual (HELM): per instance the lowest main-metric score among its original and its
fairness variants (dialect, gender, names, ...), mean over instances, then over scenarios
(metric_services/shared/worst_case.py). Group fairness: per `groups` tag (key=value) the scenario's main
metric over the unperturbed predictions that carry it; a value's score is the unweighted mean over
the scenarios it appears in (as the accuracy axis averages scenarios). Per key: the max gap
(best - worst), the ratio worst / best and the worst value, over values with at least
HOLISTIC_FAIRNESS_MIN_GROUP_COUNT predictions. The fairness axis is the lower of the
counterfactual worst case and the worst group's score (each alone when the other is absent);
both raw values are in the dimension's metrics.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from holistic.families import Axis, FamilyBase, FamilyConfig, FamilyFold, MetricMetadata, Partial
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.intervals import Moments, moments
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import macro_mean, plain
from holistic.stats.names import key, split_tag, tag
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import DIMENSION_KIND_FAIRNESS, GroupBreakdown, GroupValue, Metric, MetricSignature
from metric_services.shared import worst_case
from metric_services.shared.main_metric import main_metric, majority_task
from metric_services.shared.worst_case_fold import WORST_CASE_METRICS, fold_worst_case, worst_case_options

NAME = "fairness"
GROUP = "g"  # "<scenario>|<main metric>|g|<key>=<value>|...": the main metric's moments per group tag
VERSION = "2"  # 2: a worst case for every metric of the task's HELM set
GROUP_DEFINITION = (
    "unweighted mean over scenarios of the scenario's main metric over unperturbed predictions with this tag"
)


def _group_hook(st: Stats, p: pb.Prediction, base: str, score: float) -> None:
    ints, floats = st.ints, st.floats
    for name, value in p.groups.items():
        n, total, squares = _group_fields(base, name, value)
        ints[n] = ints.get(n, 0) + 1
        floats[total] = floats.get(total, 0.0) + score
        floats[squares] = floats.get(squares, 0.0) + score * score


@lru_cache(maxsize=1 << 14)
def _group_fields(base: str, name: str, value: str) -> tuple[str, str, str]:
    """A group tag's fields under a scenario's main metric: made once, the tags repeat on every row."""
    prefix = key(base, GROUP, tag(name, value))
    return key(prefix, "n"), key(prefix, "sum"), key(prefix, "sumsq")


class FairnessConfig(FamilyConfig):
    """HOLISTIC_FAIRNESS_MIN_GROUP_COUNT."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_FAIRNESS_", extra="ignore", frozen=True)

    min_group_count: int = Field(
        default=30, ge=1, description="Predictions a group needs to enter max gap, ratio and the fairness axis."
    )


class FairnessFamily(FamilyBase):
    name = NAME
    exported_metrics = ("fairness",)  # holistic quality-exporter's default series
    version = VERSION
    Config = FairnessConfig
    config: FairnessConfig
    axis = Axis(
        "fairness",
        "The lower of HELM's counterfactual fairness and the worst group's score.",
        kind=DIMENSION_KIND_FAIRNESS,
        order=4,
    )
    metrics = (
        *WORST_CASE_METRICS,
        MetricMetadata("group[*", "Group score", GROUP_DEFINITION),
        MetricMetadata(
            "group_max_gap[*", "Group max gap", "Best group's score minus the worst one's.", lower_is_better=True
        ),
        MetricMetadata("worst_group[*", "Worst group", "The lowest group score among groups with enough predictions."),
        MetricMetadata(
            "counterfactual_fairness", "Counterfactual fairness", "HELM's worst case over fairness perturbations."
        ),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> Partial:
        return worst_case.compute(envelope, settings, pb.PERTURBATION_FAMILY_FAIRNESS, _group_hook)

    def prediction_scores(self, p: pb.Prediction, settings: Settings) -> list[Score]:
        """A fairness variant's own main-metric score (worst_case.variant_evaluation); an original's is the
        accuracy family's, and a group's mean has no one prediction."""
        return worst_case.variant_evaluation(p, settings, pb.PERTURBATION_FAMILY_FAIRNESS)

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        fold, counterfactual = fold_worst_case(NAME, DIMENSION_KIND_FAIRNESS, "", stats, settings)
        fold.groups = group_breakdowns(stats, settings, self.config.min_group_count)
        fold.fold_options["min_group_count"] = str(self.config.min_group_count)
        eligible = [(b, v) for b in fold.groups for v in b.values if not v.too_few]
        worst = min(eligible, key=lambda bv: bv[1].metric.value, default=None)
        dim = fold.dimensions[0]
        dim.definition = (
            "The lower of (a) HELM's counterfactual fairness: mean over scenarios of the mean over instances of "
            "the worst main-metric score among the original and its fairness-perturbed variants, and (b) the "
            "worst group's score (main metric over predictions tagged with that group, mean over scenarios; "
            f"groups with at least {self.config.min_group_count} predictions)."
        )
        candidates: list[Metric] = []
        if counterfactual is not None:
            cf = Metric()
            cf.CopyFrom(counterfactual)
            cf.name = "counterfactual_fairness"
            candidates.append(cf)
        if worst is not None:
            wg = Metric()
            wg.CopyFrom(worst[1].metric)
            wg.name = f"worst_group[{worst[0].key}={worst[1].value}]"
            candidates.append(wg)
        for b in fold.groups:
            if b.best_value:
                fold.report.metrics.append(plain(f"group_max_gap[{b.key}]", NAME, b.max_gap, 0, lower_is_better=True))
        if candidates:
            chosen = min(candidates, key=lambda m: m.value)
            dim.ClearField("absent_reason")
            dim.score = chosen.value
            dim.count = chosen.count
            dim.ClearField("interval")
            if chosen.HasField("interval"):
                dim.interval.CopyFrom(chosen.interval)
            for m in reversed(candidates):
                dim.metrics.insert(0, m)
            dim.metrics.extend(m for m in fold.report.metrics if m.name.startswith("group_max_gap"))
        return fold

    def paired_direction(self, slot: str) -> int:
        """A paired cell's slot is a correctness score: higher is better (CompareProfiles judges it)."""
        return worst_case.paired_direction(slot)

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        options = worst_case_options(settings)  # min_group_count is the fold's (fold_options)
        options["axis"] = "min(counterfactual,worst_group)"
        return make_signature(NAME, VERSION, options)


def group_breakdowns(stats: Folded, settings: Settings, min_group_count: int) -> list[GroupBreakdown]:
    per: dict[tuple[str, str], list[Moments]] = defaultdict(list)
    for scn, f in worst_case.split_scenarios(stats).items():
        metric = main_metric(scn, majority_task(f), settings)
        groups = f.scope(metric, GROUP)
        for group in groups.names(having="n", free=True):
            per[split_tag(group)].append(moments(groups, group))
    out: dict[str, GroupBreakdown] = {}
    for (name, value), parts in sorted(per.items()):
        b = out.setdefault(name, GroupBreakdown(key=name, definition=GROUP_DEFINITION))
        m = macro_mean(f"group[{name}={value}]", NAME, parts)
        b.values.append(GroupValue(value=value, metric=m, too_few=m.count < min_group_count))
    for b in out.values():
        eligible = [v for v in b.values if not v.too_few]
        if not eligible:
            continue
        best = max(eligible, key=lambda v: v.metric.value)
        worst = min(eligible, key=lambda v: v.metric.value)
        b.best_value, b.worst_value = best.value, worst.value
        b.max_gap = best.metric.value - worst.metric.value
        if best.metric.value > 0:
            b.worst_to_best_ratio = worst.metric.value / best.metric.value
    return list(out.values())


FAMILY = FairnessFamily()
