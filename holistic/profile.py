"""Folds each family's merged statistics into one Profile: the radar axes, never one number."""

from __future__ import annotations

from collections.abc import Mapping

from holistic.families import FamilyFold, ScenarioPart, load_family
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

    dims: dict[int, pp.Dimension] = {}
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

    profile.scenarios.extend(_scenarios(folds))
    for name in sorted(folds):
        profile.families.append(folds[name].report)
    profile.counts.accepted_predictions = int(meta.get("accepted_predictions", 0))
    profile.counts.accepted_batches = int(meta.get("accepted_batches", 0))
    profile.counts.window_predictions = max((f.report.count for f in folds.values()), default=0)
    return profile


def _scenarios(folds: Mapping[str, FamilyFold]) -> list[pp.ScenarioProfile]:
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
