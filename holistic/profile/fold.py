"""Folds each deployed family's merged statistics into one Profile: the radar axes, never one number.

The core names no family: the axes, the main-metric providers and the metric metadata come from the
families' declarations (holistic/families/__init__.py), found by name through the registry. HELM's seven axes
(DimensionKind) are always in the profile, present or absent with the reason; a plugin family's own
axis follows them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from holistic.families import Axis, Family, FamilyFold, ScenarioAccuracy, ScenarioPart, sampling, stratified
from holistic.families.registry import installed, load_family
from holistic.families.signature import make_signature
from holistic.redis.keys import NEWEST_MINUTE
from holistic.settings import Settings
from holistic.stats import segments
from holistic.stats.intervals import mean_of_parts
from holistic.stats.mergeable import Folded
from holistic.v1 import profile_pb2 as pp

FamilyLoader = Callable[[str], Family]

# HELM's seven axes, in display order: the API's DimensionKind values.
HELM_AXES: tuple[int, ...] = tuple(k for k in pp.DimensionKind.values() if k != pp.DIMENSION_KIND_UNSPECIFIED)


def axis_name(kind: int) -> str:
    return pp.DimensionKind.Name(kind).removeprefix("DIMENSION_KIND_").lower()


def _loadable(names: list[str], families: FamilyLoader) -> tuple[dict[str, Family], list[str]]:
    """The families this process can fold, and the deployed ones it cannot (not installed here)."""
    found: dict[str, Family] = {}
    missing: list[str] = []
    for name in names:
        try:
            found[name] = families(name)
        except KeyError:
            missing.append(name)
    return found, missing


def fold_families(
    folded: Mapping[str, Folded], model: str, settings: Settings, families: FamilyLoader = load_family
) -> dict[str, FamilyFold]:
    loaded, _ = _loadable(list(folded), families)
    own = {name: segments.split(folded[name].split_signatures()[0])[0] for name in loaded}
    return {name: fam.fold(own[name], model, settings) for name, fam in loaded.items()}


def build(
    model: str,
    window: pp.Window,
    meta: Mapping[str, float],
    folded: Mapping[str, Folded],
    settings: Settings,
    compute_time_s: float,
    signatures: Mapping[str, Mapping[str, bytes]] | None = None,
    families: FamilyLoader | None = None,
) -> pp.Profile:
    """`folded`: each deployed family's statistics over the window (signature counts included);
    `signatures`: each family's recorded signatures by id."""
    load = families or load_family
    profile = pp.Profile(model=model, window=window)
    profile.compute_time.FromNanoseconds(int(compute_time_s * 1e9))
    loaded, missing = _loadable(sorted(folded), load)
    folds: dict[str, FamilyFold] = {}
    rates: dict[str, dict[str, float]] = {}  # per sampled family, its scenarios' rates below 1
    cells: list[pp.SegmentBreakdown] = []
    for name, fam in loaded.items():
        stats, counts = folded[name].split_signatures()
        stats, segment_fields = segments.split(stats)
        main, by_rate = sampling.split_groups(stats)
        by_rate = {r: segments.split(g)[0] for r, g in by_rate.items()}  # a rate group's cells are not shown
        fold = fam.fold(main, model, settings)
        if not by_rate:  # cells of scenarios sampled at their own rates would need their weights: none shown
            cells.extend(segments.breakdowns(fam, fold, segment_fields, model, settings))
        _stamp(fold.report, fam, counts, (signatures or {}).get(name, {}), fold.fold_options)
        family_rate = fold.report.sample_rate if fold.report.HasField("sample_rate") else 1.0
        groups = [(family_rate, fold)] + [(r, fam.fold(g, model, settings)) for r, g in sorted(by_rate.items())]
        if by_rate:
            fold = stratified.combine(groups)
        if family_rate < 1.0 or by_rate:
            rates[name] = {s: r for s, r in stratified.scenario_rates(groups).items() if r < 1.0}
        describe = getattr(fam, "describe_axis", None)  # optional: the axis named after what the workers ran
        if describe is not None and fold.report.HasField("signature"):
            for d in fold.dimensions:
                d.definition += describe(fold.report.signature)
        for d in fold.dimensions:
            d.family = name
            if not d.axis:
                d.axis = fam.axis.name if fam.axis is not None and not d.kind else axis_name(d.kind)
        folds[name] = fold

    axes = _axes(loaded, load)
    scenarios = merge_scenarios(folds)
    for sp in scenarios:
        for name in sorted(rates):
            if sp.scenario in rates[name]:
                sp.sample_rates[name] = rates[name][sp.scenario]
    accuracy_axis = axes.get(axis_name(pp.DIMENSION_KIND_ACCURACY))
    dims: dict[str, pp.Dimension] = {
        axis_name(pp.DIMENSION_KIND_ACCURACY): accuracy_dimension(folds, scenarios, loaded, accuracy_axis)
    }
    for fold in folds.values():
        for d in fold.dimensions:
            dims[d.axis] = d
    for name, (axis, provider) in sorted(axes.items(), key=lambda kv: _display_order(kv[1][0])):
        dim = dims.get(name)
        if dim is None:
            dim = pp.Dimension(kind=axis.kind, axis=name, family=provider or "", definition=axis.definition)
            dim.absent_reason = _absent_reason(name, provider, folds)
        profile.dimensions.append(dim)

    profile.scenarios.extend(scenarios)
    for name in sorted(folds):
        profile.families.append(folds[name].report)
        profile.groups.extend(folds[name].groups)
    profile.segments.extend(sorted(cells, key=lambda b: (b.key, b.family)))
    for name in missing:
        profile.families.append(
            pp.FamilyReport(
                family=name,
                skipped_reason=f"the {name} family runs in this deployment but is not installed where this profile "
                "was folded (install its package beside the gateway)",
            )
        )
    profile.counts.accepted_predictions = int(meta.get("accepted_predictions", 0))
    profile.counts.accepted_batches = int(meta.get("accepted_batches", 0))
    profile.counts.window_predictions = max((f.report.count for f in folds.values()), default=0)
    if NEWEST_MINUTE in meta:
        profile.counts.newest_prediction_time.FromSeconds(int(meta[NEWEST_MINUTE]) * 60)
    return profile


def _axes(deployed: Mapping[str, Family], load: FamilyLoader) -> dict[str, tuple[Axis, str | None]]:
    """Axis name -> (declaration, the family that provides it, None when no installed family does):
    the deployed families' axes, and HELM's seven from whichever installed family declares each."""
    out: dict[str, tuple[Axis, str | None]] = {}
    for name, fam in deployed.items():
        if fam.axis is not None:
            out[fam.axis.name] = (fam.axis, name)
    missing = {axis_name(k) for k in HELM_AXES} - set(out)
    if missing:
        for name in installed():
            if name in deployed:
                continue
            try:
                axis = load(name).axis
            except KeyError:
                continue
            if axis is not None and axis.name in missing:
                out[axis.name] = (axis, name)
                missing.discard(axis.name)
    for kind in HELM_AXES:
        out.setdefault(axis_name(kind), (Axis(axis_name(kind), "", kind=kind), None))
    return out


def _display_order(axis: Axis) -> tuple[int, int, str]:
    """HELM's seven first, by kind; then the others by their declared order and name."""
    return (0, axis.kind, "") if axis.kind else (1, axis.order, axis.name)


def _absent_reason(axis: str, provider: str | None, folds: Mapping[str, FamilyFold]) -> str:
    if provider is None:
        return f"no installed metric family provides the {axis} axis"
    if provider in folds:
        return f"the {provider} family has no data in this window"
    return f"no {provider} metric service runs in this deployment"


def _stamp(
    report: pp.FamilyReport,
    family: Family,
    counts: Mapping[str, float],
    known: Mapping[str, bytes],
    fold_options: Mapping[str, str],
) -> None:
    """The family's metric metadata, the signatures its workers recorded with each share, and the
    options of the fold in the main signature."""
    for md in family.metrics:
        report.metric_metadata.append(
            pp.MetricMetadata(
                name=md.name,
                display_name=md.display_name,
                description=md.description,
                unit=md.unit,
                lower_is_better=md.lower_is_better,
            )
        )
    total = sum(counts.values())
    for sid, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        share = report.signatures.add(count=int(count), share=count / total if total else 0.0)
        raw = known.get(sid)
        if raw is not None:
            share.signature.ParseFromString(raw)
        else:  # recorded before its counts by design; missing only if that hash was deleted
            share.signature.family = family.name
            share.signature.text = f"{family.name}|id:{sid} (signature not found)"
    if report.signatures and not report.HasField("signature"):
        report.signature.CopyFrom(report.signatures[0].signature)
    rate = report.signature.options.get(sampling.SIGNATURE_OPTION)
    if rate:
        report.sample_rate = float(rate)
    if fold_options:
        sig = report.signature
        options = {**sig.options, **fold_options}
        report.signature.CopyFrom(make_signature(family.name, sig.version or family.version, options, sig.model_sha256))


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


def main_metric_providers(families: Mapping[str, Family]) -> dict[str, str]:
    """Main metric -> the family that computes it, from the declarations."""
    return {metric: name for name, fam in sorted(families.items()) for metric in fam.main_metrics}


def accuracy_dimension(
    folds: Mapping[str, FamilyFold],
    scenarios: list[pp.ScenarioProfile],
    deployed: Mapping[str, Family] | None = None,
    axis: tuple[Axis, str | None] | None = None,
) -> pp.Dimension:
    """The mean over scenarios of each scenario's accuracy, from whichever family computed its main metric."""
    name = axis_name(pp.DIMENSION_KIND_ACCURACY)
    declared, provider = axis if axis is not None else (None, None)
    dim = pp.Dimension(
        kind=pp.DIMENSION_KIND_ACCURACY,
        axis=name,
        family=provider or "",
        definition=declared.definition if declared is not None else "",
    )
    chosen: list[tuple[pp.ScenarioProfile, ScenarioAccuracy]] = []
    for sp in scenarios:
        acc = _chosen_accuracy(folds, sp.scenario, sp.main_metric)
        if acc is not None:
            sp.metrics.append(acc.metric)
            for source, count in sorted(acc.sources.items()):
                sp.metrics.append(pp.Metric(name=f"accuracy_source_{source}", family=acc.metric.family,
                                            value=count, count=count))  # fmt: skip
            chosen.append((sp, acc))
    if not chosen:
        providers = main_metric_providers(_declared(deployed))
        waiting = sorted(
            {f"{sp.scenario} needs {sp.main_metric} from the {providers[sp.main_metric]} family"
             for sp in scenarios if sp.main_metric in providers and providers[sp.main_metric] not in folds}
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


def _declared(deployed: Mapping[str, Family] | None) -> dict[str, Family]:
    """Every installed family's declaration (the deployed ones as given), for main-metric providers."""
    out: dict[str, Family] = dict(deployed or {})
    for name in installed():
        if name not in out:
            try:
                out[name] = load_family(name)
            except KeyError:
                continue
    return out
