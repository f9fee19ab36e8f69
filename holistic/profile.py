"""Folds each family's merged statistics into one Profile: the radar axes, never one number."""

from __future__ import annotations

from collections.abc import Mapping

from holistic.families import FamilyFold, ScenarioAccuracy, ScenarioPart, load_family
from holistic.intervals import mean_of_parts
from holistic.settings import Settings
from holistic.stats import Folded
from holistic.v1 import profile_pb2 as pp

# Radar axes in display order, with the family that scores each.
AXES: tuple[tuple[int, str], ...] = (
    (pp.DIMENSION_KIND_ACCURACY, "accuracy"),
    (pp.DIMENSION_KIND_CALIBRATION, "calibration"),
    (pp.DIMENSION_KIND_ROBUSTNESS, "robustness"),
    (pp.DIMENSION_KIND_FAIRNESS, "fairness"),
    (pp.DIMENSION_KIND_BIAS, "bias"),
    (pp.DIMENSION_KIND_TOXICITY, "toxicity"),
    (pp.DIMENSION_KIND_EFFICIENCY, "efficiency"),
)


# Main metrics that another family than accuracy computes.
MAIN_METRIC_FAMILY = {"rouge_1": "summarization", "rouge_2": "summarization", "rouge_l": "summarization"}

ACCURACY_DEFINITION = (
    "Unweighted mean over scenarios of each scenario's accuracy: its main metric (HELM's choice per "
    "task: exact_match for multiple choice, quasi_exact_match for classification, f1_score for QA and "
    "free generation, rouge_2 for summarization), or the client's `correct` where given."
)


def axis_name(kind: int) -> str:
    return pp.DimensionKind.Name(kind).removeprefix("DIMENSION_KIND_").lower()


def fold_families(folded: Mapping[str, Folded], model: str, settings: Settings) -> dict[str, FamilyFold]:
    return {name: load_family(name).fold(stats, model, settings) for name, stats in folded.items()}


def build(
    model: str,
    window: pp.Window,
    meta: Mapping[str, float],
    folded: Mapping[str, Folded],
    settings: Settings,
    compute_time_s: float,
) -> pp.Profile:
    profile = pp.Profile(model=model, window=window)
    profile.compute_time.FromNanoseconds(int(compute_time_s * 1e9))
    folds = fold_families(folded, model, settings)

    scenarios = merge_scenarios(folds)
    dims: dict[int, pp.Dimension] = {pp.DIMENSION_KIND_ACCURACY: accuracy_dimension(folds, scenarios)}
    for fold in folds.values():
        for d in fold.dimensions:
            dims[d.kind] = d
    for kind, family in AXES:
        dim = dims.get(kind)
        if dim is None:
            dim = pp.Dimension(kind=kind)
            if family in folds:
                dim.absent_reason = f"the {family} family has no data in this window"
            else:
                dim.absent_reason = f"no {family} metric service runs in this deployment"
        profile.dimensions.append(dim)

    profile.scenarios.extend(scenarios)
    for name in sorted(folds):
        profile.families.append(folds[name].report)
        profile.groups.extend(folds[name].groups)
    profile.counts.accepted_predictions = int(meta.get("accepted_predictions", 0))
    profile.counts.accepted_batches = int(meta.get("accepted_batches", 0))
    profile.counts.window_predictions = max((f.report.count for f in folds.values()), default=0)
    return profile


def merge_scenarios(folds: Mapping[str, FamilyFold]) -> list[pp.ScenarioProfile]:
    merged: dict[str, pp.ScenarioProfile] = {}
    for name in sorted(folds):
        part: ScenarioPart
        for scn, part in folds[name].scenarios.items():
            sp = merged.setdefault(scn, pp.ScenarioProfile(scenario=scn))
            if part.task and not sp.task:
                sp.task = part.task  # type: ignore[assignment]
            if part.main_metric and not sp.main_metric:
                sp.main_metric = part.main_metric
            sp.count = max(sp.count, part.count)
            sp.metrics.extend(part.metrics)
    return [merged[s] for s in sorted(merged)]


def _chosen_accuracy(folds: Mapping[str, FamilyFold], scn: str, main: str) -> ScenarioAccuracy | None:
    """The candidate computed from the scenario's main metric, else the client's judgements."""
    candidates = [f.scenarios[scn].accuracy for f in folds.values() if scn in f.scenarios]
    present = [c for c in candidates if c is not None]
    for c in present:
        if c.source == main:
            return c
    return next((c for c in present if c.source == "client_judged"), None)


def accuracy_dimension(folds: Mapping[str, FamilyFold], scenarios: list[pp.ScenarioProfile]) -> pp.Dimension:
    dim = pp.Dimension(kind=pp.DIMENSION_KIND_ACCURACY, definition=ACCURACY_DEFINITION)
    chosen: list[tuple[pp.ScenarioProfile, ScenarioAccuracy]] = []
    for sp in scenarios:
        acc = _chosen_accuracy(folds, sp.scenario, sp.main_metric)
        if acc is not None:
            sp.metrics.append(acc.metric)
            chosen.append((sp, acc))
    if not chosen:
        waiting = sorted(
            {f"{sp.scenario} needs {sp.main_metric} from the {MAIN_METRIC_FAMILY[sp.main_metric]} family"
             for sp in scenarios if MAIN_METRIC_FAMILY.get(sp.main_metric, "") not in folds and
             sp.main_metric in MAIN_METRIC_FAMILY}
        )  # fmt: skip
        dim.absent_reason = (
            "no scored predictions: " + "; ".join(waiting)
            if waiting
            else "no predictions with references or a client judgement in this window"
        )
        return dim
    value, lo, hi = mean_of_parts(
        [(a.metric.value, a.variance, a.metric.count, a.metric.interval.method == "wilson") for _, a in chosen]
    )
    dim.score = value
    dim.count = sum(acc.metric.count for _, acc in chosen)
    if lo > float("-inf"):
        dim.interval.CopyFrom(pp.Interval(lower=max(lo, 0.0), upper=min(hi, 1.0), level=0.95, method="propagated"))
    for sp, acc in chosen:
        m = pp.Metric()
        m.CopyFrom(acc.metric)
        m.name = f"accuracy[{sp.scenario}:{acc.source}]"
        dim.metrics.append(m)
    return dim
