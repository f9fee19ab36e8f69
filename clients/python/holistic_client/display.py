"""Profiles as terminal tables: one row per model, one column per radar axis, never one score."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp


def axis_name(kind: int) -> str:
    return pp.DimensionKind.Name(kind).removeprefix("DIMENSION_KIND_").lower()


def dimension_name(d: pp.Dimension) -> str:
    """The axis's name: a plugin family's own axis has no DimensionKind, only its name."""
    return d.axis or axis_name(d.kind)


def _cell(d: pp.Dimension) -> str:
    if not d.HasField("score"):
        return "[dim]—[/dim]"
    text = f"{d.score:.3f}"
    if d.HasField("interval"):
        text += f" [dim]±{(d.interval.upper - d.interval.lower) / 2:.3f}[/dim]"
    if d.low_confidence:
        text += " [yellow]*[/yellow]"
    return text


def profiles_table(profiles: Sequence[pp.Profile], title: str = "holistic profiles") -> Table:
    table = Table(title=title, caption="score ± 95% half-width; — absent (no data); * low confidence")
    table.add_column("model", style="bold")
    table.add_column("predictions", justify="right")
    names = list(dict.fromkeys(dimension_name(d) for p in profiles for d in p.dimensions))
    for name in names:
        table.add_column(name, justify="right")
    for p in profiles:
        by_name = {dimension_name(d): d for d in p.dimensions}
        table.add_row(
            p.model, f"{p.counts.window_predictions:,}", *(_cell(by_name[n]) if n in by_name else "—" for n in names)
        )
    return table


def _metric_text(m: pp.Metric) -> str:
    unit = f" {m.unit}" if m.unit else ""
    text = f"{m.value:.4g}{unit}"
    if m.HasField("interval"):
        text += f" [dim]({m.interval.lower:.4g}–{m.interval.upper:.4g})[/dim]"
    return text


def family_table(profiles: Sequence[pp.Profile], family: str, names: Sequence[str]) -> Table | None:
    """One family's metrics side by side: a row per model, a column per metric (— where absent)."""
    reports = {p.model: next((f for f in p.families if f.family == family), None) for p in profiles}
    if not any(reports.values()):
        return None
    caption = next((r.signature.text for r in reports.values() if r is not None), "")
    table = Table(title=f"{family} (family report)", caption=caption)
    table.add_column("model", style="bold")
    for name in names:
        table.add_column(name, justify="right")
    for model, report in reports.items():
        metrics = {m.name: m for m in report.metrics} if report is not None else {}
        cells = [f"{metrics[n].value:.4g}" if n in metrics else "[dim]—[/dim]" for n in names]
        table.add_row(model, *cells)
    absent = {k: v for r in reports.values() if r is not None for k, v in r.absent_metrics.items()}
    for name, why in sorted(absent.items()):
        table.caption = f"{table.caption}\n{name} absent: {why}"
    return table


def detail_tables(profile: pp.Profile) -> list[Table]:
    """Axes with their reasons, scenarios, and each family's metrics and signature."""
    axes = Table(title=f"{profile.model}: dimensions")
    axes.add_column("axis")
    axes.add_column("score", justify="right")
    axes.add_column("n", justify="right")
    axes.add_column("definition / why absent")
    for d in profile.dimensions:
        note = d.definition if d.HasField("score") else f"[dim]{d.absent_reason}[/dim]"
        axes.add_row(dimension_name(d), _cell(d), f"{d.count:,}" if d.count else "", note)
    scenarios = Table(title=f"{profile.model}: scenarios")
    for col in ("scenario", "task", "main metric", "n", "accuracy", "latency p50"):
        scenarios.add_column(col)
    for s in profile.scenarios:
        metrics = {m.name: m for m in s.metrics}
        acc = metrics.get("accuracy")
        lat = metrics.get("latency_p50")
        scenarios.add_row(
            s.scenario,
            pb.Task.Name(s.task).removeprefix("TASK_").lower() if s.task else "",
            s.main_metric,
            f"{s.count:,}",
            _metric_text(acc) if acc else "[dim]—[/dim]",
            _metric_text(lat) if lat else "[dim]—[/dim]",
        )
    out = [axes, scenarios]
    for fam in profile.families:
        t = Table(title=f"{profile.model}: {fam.family} ({fam.count:,} predictions)", caption=fam.signature.text)
        t.add_column("metric")
        t.add_column("value", justify="right")
        t.add_column("n", justify="right")
        for m in fam.metrics:
            t.add_row(m.name, _metric_text(m), f"{m.count:,}")
        out.append(t)
    return out


def _named(metrics: Sequence[pp.Metric], prefix: str) -> pp.Metric | None:
    return next((m for m in metrics if m.name.startswith(prefix)), None)


def trust_table(profiles: Sequence[pp.Profile], title: str = "calibration, robustness, fairness") -> Table:
    """The raw numbers behind three axes, side by side: ECE, worst cases per perturbation, worst group."""
    table = Table(
        title=title, caption="worst = HELM's min over the original and its variants; gap = best - worst group"
    )
    for col in ("model", "ece_10_bin", "robustness (worst per perturbation)", "counterfactual", "worst group (gap)"):
        table.add_column(col)
    for p in profiles:
        dims = {d.kind: d for d in p.dimensions}
        cal, rob, fair = (dims.get(k) for k in (2, 3, 4))
        ece = _named(cal.metrics, "ece_10_bin") if cal else None
        worst = [m for m in rob.metrics if m.name.endswith("_worst")] if rob else []
        fair_worst = [m for m in fair.metrics if m.name.endswith("_worst")] if fair else []
        cf = _named(fair.metrics, "counterfactual") if fair else None
        group = _named(fair.metrics, "worst_group") if fair else None
        gaps = {g.key: g.max_gap for g in p.groups}
        key = group.name.split("[", 1)[1].split("=", 1)[0] if group else ""
        table.add_row(
            p.model,
            f"{ece.value:.3f}{' *' if cal and cal.low_confidence else ''}" if ece else "—",
            ", ".join(f"{m.name.removesuffix('_worst')} {m.value:.3f}" for m in worst) or "—",
            (
                f"{cf.value:.3f} ("
                + ", ".join(f"{m.name.removesuffix('_worst')} {m.value:.3f}" for m in fair_worst)
                + ")"
            )
            if cf
            else "—",
            escape(f"{group.name.removeprefix('worst_group')} {group.value:.3f} (gap {gaps.get(key, 0):.3f})")
            if group
            else "—",
        )
    return table
