"""One family's numbers when its scenarios are sampled at different rates (holistic/families/sampling.py).

The worker keeps the predictions of each rate apart (a rate group), so each group folds alone into
metrics whose sampling weights cancel: a share or mean over its sampled predictions, with the
interval of its own sample. The family's number over all of them is the Horvitz–Thompson (Hájek)
ratio, every sampled prediction weighing 1/rate. Grouped, that is a weighted mean of the groups'
values: group g's weight is its estimated size N_g = n_g / r_g (n_g: the metric's sampled count)
over the sum, so

    R = Σ W_g · v_g,   W_g = (n_g / r_g) / Σ_h (n_h / r_h)

Its variance, by linearization of the ratio (Poisson sampling, without the finite-population
correction, as the single-rate case): Σ_g W_g² · (var_g + (v_g − R)² / n_g), where var_g is the
variance of group g's value, read back from its 95 % interval, and the second term is the randomness
of the groups' estimated sizes. The interval is R ± 1.96 · its square root, kept within the span of
the groups' intervals (R is inside their values' span, its standard error below the largest
group's). A scenario lies in one group per rate, so its own row needs no weights (a scenario folded
under two rates in one window, across a rate change, is combined the same way).

What cannot be weighted is left out: a metric or axis some group with data does not report (a
per-input metric from instance state, which the worker cannot keep apart by rate), and breakdowns by
client group (GroupBreakdown), which would cover one rate group only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from holistic.families import FamilyFold, ScenarioPart
from holistic.stats.intervals import Z95
from holistic.v1 import profile_pb2 as pp

METHOD = "stratified by sample rate (Horvitz–Thompson weights 1/rate)"
_PARTIAL = "scenarios sampled at different rates, and some rate group has no score for this axis"


def combine_values(parts: Sequence[tuple[float, float, float, float | None]]) -> tuple[float, float | None]:
    """(rate, count, value, variance or None) per group into the weighted value and its variance
    (None when a group has none)."""
    sizes = [count / rate for rate, count, _, _ in parts]
    total = sum(sizes)
    weights = [s / total for s in sizes]
    value = sum(w * v for w, (_, _, v, _) in zip(weights, parts, strict=True))
    if any(var is None for *_, var in parts):
        return value, None
    var = sum(
        w * w * (part_var + (v - value) ** 2 / count)
        for w, (_, count, v, part_var) in zip(weights, parts, strict=True)
        if part_var is not None
    )
    return value, var


def _variance(interval: pp.Interval) -> float:
    z = Z95 if not interval.level or abs(interval.level - 0.95) < 1e-9 else _z(interval.level)
    return ((interval.upper - interval.lower) / (2 * z)) ** 2


def _z(level: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2)


def combine_metric(parts: Sequence[tuple[float, pp.Metric]]) -> pp.Metric | None:
    """The metrics of one name from each group (rate, metric) as one; None when one has no count."""
    usable = [(rate, m) for rate, m in parts if m.count > 0]
    if len(usable) != len(parts) or not usable:
        return None
    if len(usable) == 1:
        return usable[0][1]
    rows = [(r, float(m.count), m.value, _variance(m.interval) if m.HasField("interval") else None) for r, m in usable]
    value, var = combine_values(rows)
    out = pp.Metric()
    out.CopyFrom(usable[0][1])
    out.value = value
    out.count = sum(m.count for _, m in usable)
    out.ClearField("interval")
    if var is not None:
        half = Z95 * math.sqrt(var)
        low = min(m.interval.lower for _, m in usable)
        high = max(m.interval.upper for _, m in usable)
        out.interval.CopyFrom(
            pp.Interval(lower=max(value - half, low), upper=min(value + half, high), level=0.95, method=METHOD)
        )
    return out


def _combine_list(groups: Sequence[tuple[float, Sequence[pp.Metric]]]) -> list[pp.Metric]:
    """Metric by metric, in the first group's order, those every group reports."""
    by_name = [{m.name: m for m in metrics} for _, metrics in groups]
    out = []
    for m in groups[0][1]:
        if all(m.name in names for names in by_name):
            combined = combine_metric([(rate, names[m.name]) for (rate, _), names in zip(groups, by_name, strict=True)])
            if combined is not None:
                out.append(combined)
    return out


def _combine_dimension(groups: Sequence[tuple[float, pp.Dimension]]) -> pp.Dimension:
    dim = pp.Dimension()
    dim.CopyFrom(groups[0][1])
    scored = [(rate, d) for rate, d in groups if d.HasField("score") and d.count]
    if len(scored) != len(groups):
        return dim if len(groups) == 1 else _absent(dim, _PARTIAL)
    as_metrics = [
        (rate, pp.Metric(value=d.score, count=d.count, interval=d.interval if d.HasField("interval") else None))
        for rate, d in scored
    ]
    combined = combine_metric(as_metrics)
    assert combined is not None  # every part has a count
    dim.score, dim.count = combined.value, combined.count
    dim.ClearField("interval")
    if combined.HasField("interval"):
        dim.interval.CopyFrom(combined.interval)
    del dim.metrics[:]
    dim.metrics.extend(_combine_list([(rate, d.metrics) for rate, d in scored]))
    return dim


def _absent(dim: pp.Dimension, reason: str) -> pp.Dimension:
    dim.ClearField("score")
    dim.ClearField("interval")
    dim.count = 0
    del dim.metrics[:]
    dim.absent_reason = reason
    return dim


def combine(groups: Sequence[tuple[float, FamilyFold]]) -> FamilyFold:
    """The family's fold over its rate groups (rate, fold), the family-rate group first."""
    live = [(rate, f) for rate, f in groups if f.report.count] or list(groups[:1])
    if len(live) == 1 and len(groups) == 1:
        return live[0][1]
    first = live[0][1]
    report = pp.FamilyReport()
    report.CopyFrom(groups[0][1].report)  # the family-rate group's: what the profile stamped (signatures)
    report.count = sum(f.report.count for _, f in groups)
    report.skipped = sum(f.report.skipped for _, f in groups)
    del report.metrics[:]
    report.metrics.extend(_combine_list([(rate, f.report.metrics) for rate, f in live]))
    dims: list[pp.Dimension] = []
    for d in first.dimensions:
        present = [(rate, e) for rate, f in live for e in f.dimensions if (e.kind, e.axis) == (d.kind, d.axis)]
        if len(present) != len(live):  # over some rate groups only, it would pass for the whole
            dims.append(_absent(pp.Dimension.FromString(d.SerializeToString()), _PARTIAL))
            continue
        dims.append(_combine_dimension(present))
    return FamilyFold(
        report=report,
        scenarios=_combine_scenarios(groups),
        dimensions=dims,
        groups=[],  # a breakdown by client group over one rate group would pass for the whole: none
        fold_options=dict(groups[0][1].fold_options),
    )


def _combine_scenarios(groups: Sequence[tuple[float, FamilyFold]]) -> dict[str, ScenarioPart]:
    seen: dict[str, list[tuple[float, ScenarioPart]]] = {}
    for rate, f in groups:
        for scn, part in f.scenarios.items():
            seen.setdefault(scn, []).append((rate, part))
    out: dict[str, ScenarioPart] = {}
    for scn, parts in seen.items():
        if len(parts) == 1:
            out[scn] = parts[0][1]
            continue
        live = [(rate, p) for rate, p in parts if p.count] or parts[:1]
        merged = ScenarioPart(
            metrics=_combine_list([(rate, p.metrics) for rate, p in live]),
            count=sum(p.count for _, p in parts),
            task=live[0][1].task,
            main_metric=live[0][1].main_metric,
            accuracy=None,  # a scenario's accuracy is accuracy's, a family that is not sampled
        )
        out[scn] = merged
    return out


def scenario_rates(groups: Sequence[tuple[float, FamilyFold]]) -> dict[str, float]:
    """Each scenario's rate in the window (the lowest, if it changed within it)."""
    out: dict[str, float] = {}
    for rate, f in groups:
        for scn in f.scenarios:
            out[scn] = min(rate, out.get(scn, rate))
    return out
