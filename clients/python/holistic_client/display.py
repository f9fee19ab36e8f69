"""Profiles as terminal tables: one row per model, one column per radar axis, never one score."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp
from holistic_client.axes import dimension_name
from holistic_client.detail import has_data, toxicity_measures
from holistic_client.terminal import count, num, table, text


def axis_title(profiles: Sequence[pp.Profile], name: str, sep: str = " ") -> str:
    """The axis name, and for toxicity what it measures: `toxicity (profanity, alt-profanity-check-1.9.1)`."""
    if name == "toxicity":
        measures = next((m for p in profiles if (m := toxicity_measures(p))), "")
        if measures:
            return f"{name}{sep}({measures})"
    return name


def pending_of(profile: pp.Profile) -> dict[str, int]:
    """Family -> accepted predictions it has not applied yet (only those with some)."""
    return {p.family: p.pending_predictions for p in profile.pending if p.pending_predictions}


def sampled_of(profile: pp.Profile) -> dict[str, float]:
    """Family -> the share of predictions its workers score, for those that score a sample."""
    return {f.family: f.sample_rate for f in profile.families if f.HasField("sample_rate")}


def rate_text(rate: float) -> str:
    """`sampled 5 %`, `sampled 0.5 %`."""
    return f"sampled {rate * 100:.3g} %"


def scenario_sampled(s: pp.ScenarioProfile) -> str:
    """`toxicity sampled 5 %` per family that scored a sample of the scenario; empty when none did."""
    return ", ".join(f"{family} {rate_text(rate)}" for family, rate in sorted(s.sample_rates.items()))


def _cell(d: pp.Dimension, pending: dict[str, int] | None = None, sampled: dict[str, float] | None = None) -> str:
    if not d.HasField("score"):
        n = (pending or {}).get(d.family)
        return f"[yellow]pending {n:,}[/yellow]" if n else "[dim]—[/dim]"
    out = f"{d.score:.3f}"
    if d.HasField("interval"):
        lo, hi = d.interval.lower, d.interval.upper
        if abs((hi - d.score) - (d.score - lo)) < 1e-9:
            out += f" [dim]±{num((hi - lo) / 2, '.3f')}[/dim]"
        else:  # asymmetric (Wilson at an edge, or clipped to [0, 1]): the bounds themselves
            out += f" [dim]({num(lo, '.3f')}–{num(hi, '.3f')})[/dim]"
    if d.low_confidence:
        out += " [yellow]*[/yellow]"
    rate = (sampled or {}).get(d.family)
    if rate is not None:
        out += f" [cyan]{rate_text(rate)}[/cyan]"
    return out


def profiles_table(profiles: Sequence[pp.Profile], title: str = "holistic profiles") -> Table:
    names = list(dict.fromkeys(dimension_name(d) for p in profiles for d in p.dimensions))
    shown = [text(axis_title(profiles, n)) for n in names]
    t = table(
        "model", "predictions", *shown, right=("predictions", *shown), title=title,
        caption="score ± 95% half-width (or its bounds); — absent (no data); * low confidence;"
        " pending N: accepted, not yet applied; sampled: the share of predictions the family scores",
    )  # fmt: skip
    for p in profiles:
        by_name = {dimension_name(d): d for d in p.dimensions}
        pending, sampled = pending_of(p), sampled_of(p)
        t.add_row(
            f"[bold]{text(p.model)}[/bold]",
            f"{p.counts.window_predictions:,}"
            + (f" [yellow]pending {max(pending.values()):,}[/yellow]" if pending else ""),
            *(_cell(by_name[n], pending, sampled) if n in by_name else "—" for n in names),
        )
    return t


def _metric_text(m: pp.Metric) -> str:
    unit = f" {m.unit}" if m.unit else ""
    out = f"{num(m.value)}{text(unit)}"
    if m.HasField("interval"):
        out += f" [dim]({num(m.interval.lower)}–{num(m.interval.upper)})[/dim]"
    return out


def family_table(profiles: Sequence[pp.Profile], family: str, names: Sequence[str]) -> Table | None:
    """One family's metrics side by side: a row per model, a column per metric (— where absent)."""
    reports = {p.model: next((f for f in p.families if f.family == family), None) for p in profiles}
    if not any(reports.values()):
        return None
    caption = text(next((r.signature.text for r in reports.values() if r is not None), ""))
    absent = {k: v for r in reports.values() if r is not None for k, v in r.absent_metrics.items()}
    for name, why in sorted(absent.items()):
        caption = f"{caption}\n{text(name)} absent: {text(why)}"
    t = table("model", *(text(n) for n in names), right=tuple(text(n) for n in names),
              title=f"{text(family)} (family report)", caption=caption)  # fmt: skip
    for model, report in reports.items():
        metrics = {m.name: m for m in report.metrics} if report is not None else {}
        cells = [num(metrics[n].value) if n in metrics else "[dim]—[/dim]" for n in names]
        t.add_row(f"[bold]{text(model)}[/bold]", *cells)
    return t


def detail_tables(profile: pp.Profile) -> list[Table | str]:
    """Axes with their reasons, scenarios, and each family's metrics and signature."""
    model = text(profile.model)
    axes = table("axis", "score", "n", "definition / why absent", right=("score", "n"), title=f"{model}: dimensions")
    pending, sampled = pending_of(profile), sampled_of(profile)
    for d in profile.dimensions:
        note = text(d.definition) if d.HasField("score") else f"[dim]{text(d.absent_reason)}[/dim]"
        axes.add_row(
            text(axis_title([profile], dimension_name(d))),
            _cell(d, pending, sampled),
            f"{d.count:,}" if d.count else "",
            note,
        )
    cols = ("scenario", "task", "main metric", "n", "accuracy", "latency p50")
    scenarios = table(*cols, right=("n",), title=f"{model}: scenarios")
    for s in profile.scenarios:
        metrics = {m.name: m for m in s.metrics}
        acc = metrics.get("accuracy")
        lat = metrics.get("latency_p50")
        rates = scenario_sampled(s)
        scenarios.add_row(
            text(s.scenario) + (f" [cyan]{text(rates)}[/cyan]" if rates else ""),
            pb.Task.Name(s.task).removeprefix("TASK_").lower() if s.task else "",
            text(s.main_metric),
            f"{s.count:,}",
            _metric_text(acc) if acc else "[dim]—[/dim]",
            _metric_text(lat) if lat else "[dim]—[/dim]",
        )
    none = f"[bold]{model}: scenarios[/bold]: none in this window"  # one line, not a table with no rows
    out: list[Table | str] = [axes, scenarios if profile.scenarios else none]
    for fam in profile.families:
        title = f"{model}: {text(fam.family)} ({count(fam.count, 'prediction')})"
        if fam.family in pending:
            title += f", pending {pending[fam.family]:,}"
        if fam.HasField("sample_rate"):
            title += f", {rate_text(fam.sample_rate)}"
        if not has_data(fam):  # one line saying why, not a table with no rows (or of zeros over nothing)
            out.append(f"[bold]{title}[/bold]: no data in this window ({text(_why_empty(profile, fam, pending))})")
            continue
        caption = "\n".join([text(fam.signature.text)] + [f"{text(k)} absent: {text(v)}" for k, v in
                                                           sorted(fam.absent_metrics.items())])  # fmt: skip
        t = table("metric", "value", "n", right=("value", "n"), title=title, caption=caption)
        for m in fam.metrics:
            t.add_row(text(m.name), _metric_text(m), f"{m.count:,}")
        out.append(t)
    return out


def _why_empty(profile: pp.Profile, fam: pp.FamilyReport, pending: dict[str, int]) -> str:
    """Why a family reports nothing: what is on its way, its axis's reason, or what it skipped."""
    if fam.family in pending:
        return f"{pending[fam.family]:,} accepted predictions not yet applied"
    reason = next((d.absent_reason for d in profile.dimensions if d.family == fam.family and d.absent_reason), "")
    return reason or fam.skipped_reason or "no predictions in this window"


def _named(metrics: Sequence[pp.Metric], prefix: str) -> pp.Metric | None:
    return next((m for m in metrics if m.name.startswith(prefix)), None)


def trust_table(profiles: Sequence[pp.Profile], title: str = "calibration, robustness, fairness") -> Table:
    """The raw numbers behind three axes, side by side: ECE, worst cases per perturbation, worst group."""
    cols = ("model", "ece_10_bin", "robustness (worst per perturbation)", "counterfactual", "worst group (gap)")
    out = table(
        *cols, title=title, caption="worst = HELM's min over the original and its variants; gap = best - worst group"
    )
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
        out.add_row(
            f"[bold]{text(p.model)}[/bold]",
            f"{ece.value:.3f}{' *' if cal and cal.low_confidence else ''}" if ece else "—",
            text(", ".join(f"{m.name.removesuffix('_worst')} {m.value:.3f}" for m in worst) or "—"),
            text(
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
    return out
