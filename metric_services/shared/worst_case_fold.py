"""The fold robustness and fairness share: scenarios' worst cases, the report and the dimension."""

from __future__ import annotations

from holistic.families import FamilyFold, MetricMetadata
from holistic.settings import Settings
from holistic.stats.instances import LATE, OVER_CAP
from holistic.stats.mergeable import Folded
from holistic.stats.metric_values import macro_mean, plain
from holistic.v1.profile_pb2 import Dimension, FamilyReport, Metric
from metric_services.shared.worst_case import ScenarioWorst, metric_macros, split_scenarios, variant_macros

WORST_CASE_METRICS = (
    MetricMetadata("robustness", "Robustness", "Mean over scenarios of the per-instance worst main-metric score."),
    MetricMetadata("fairness", "Fairness (counterfactual)", "Mean over scenarios of the per-instance worst score."),
    MetricMetadata("robustness[*", "Robustness per metric", "Worst case of one HELM metric of the task's set."),
    MetricMetadata("fairness[*", "Fairness per metric", "Worst case of one HELM metric of the task's set."),
    MetricMetadata("*_worst", "Worst case per perturbation", "Per instance min(original, variant), averaged."),
    MetricMetadata("*_before", "Before perturbation", "The originals' score, over instances with this variant."),
    MetricMetadata("*_perturbed", "Perturbed", "The variants' score, over instances with this variant."),
    MetricMetadata("instances", "Instances", "Instances (original and variants) in the window."),
    MetricMetadata(
        "instances_without_original", "Instances without original", "Variants whose original has not arrived."
    ),
    MetricMetadata(
        "rows_later_than_instance_ttl", "Rows past the instance TTL", "Rows whose partners' state may have expired."
    ),
)


def fold_worst_case(
    family: str, kind: int, definition: str, stats: Folded, settings: Settings
) -> tuple[FamilyFold, Metric | None]:
    """The family's fold; also the macro worst-case metric (None when no scenario has one)."""
    by_scn = split_scenarios(stats)
    report = FamilyReport(family=family)
    scenarios: list[ScenarioWorst] = []
    unscored: dict[str, int] = {}
    for scn in sorted(by_scn):  # the core's "#" fields are not a scenario's (stat_keys.groups)
        sw = ScenarioWorst(scn, by_scn[scn], settings, family, family)
        report.count += sw.rows
        if sw.unscored:
            unscored[f"{scn} ({sw.metric})"] = sw.unscored
        scenarios.append(sw)
    over_cap, late = int(stats.num(OVER_CAP)), int(stats.num(LATE))
    report.skipped = sum(unscored.values()) + over_cap
    reasons = []
    if unscored:
        reasons.append(
            "no score for the main metric (no references or client judgement, or a metric another family "
            "computes): " + ", ".join(f"{k}: {v}" for k, v in unscored.items())
        )
    if over_cap:
        reasons.append(f"{over_cap} rows of new instances past HOLISTIC_INSTANCE_CAP")
    report.skipped_reason = "; ".join(reasons)
    scored = [s for s in scenarios if s.value is not None]
    parts = {s.scn: s.part for s in scenarios}
    dim = Dimension(kind=kind, definition=definition)
    overall = None
    if scored:
        overall = macro_mean(family, family, [s.value for s in scored])  # type: ignore[misc]
        report.metrics.append(overall)
        report.metrics.extend(variant_macros(scored, family))
        report.metrics.extend(metric_macros(scored, family))
        instances = sum(s.instances for s in scored)
        report.metrics.append(plain("instances", family, instances, instances))
        report.metrics.append(
            plain("instances_without_original", family, instances - sum(s.with_original for s in scored), instances)
        )
        report.metrics.append(plain("rows_later_than_instance_ttl", family, late, late))
        dim.score = overall.value
        dim.count = overall.count
        if overall.HasField("interval"):
            dim.interval.CopyFrom(overall.interval)
        for s in scored:
            m = Metric()
            m.CopyFrom(s.part.metrics[0])
            m.name = f"{family}[{s.scn}:{s.metric}]"
            dim.metrics.append(m)
        dim.metrics.extend(m for m in report.metrics if m.name.endswith("_worst"))
    else:
        dim.absent_reason = f"no scored predictions for the {family} family in this window" + (
            f" ({report.skipped_reason})" if report.skipped_reason else ""
        )
    return FamilyFold(report=report, scenarios=parts, dimensions=[dim]), overall


def worst_case_options(settings: Settings) -> dict[str, str]:
    """The signature options robustness and fairness share."""
    options = {
        "score": "main-metric|references-first" if settings.references_win else "main-metric|correct",
        "worst": "min(original,variants)",
        "instance_ttl_s": str(settings.instance_ttl_s),
        "instance_cap": str(settings.instance_cap),
    }
    if settings.main_metrics:
        options["main_overrides"] = ",".join(f"{k}={v}" for k, v in sorted(settings.main_metrics.items()))
    return options
