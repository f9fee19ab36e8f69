"""`holistic profile --detail`: the dashboard's panels as terminal tables, read from Profile fields
(the family panels and the list of sections are in detail_panels.py).

Each section mirrors one panel of clients/web/holistic_dashboard (groups.js, reliability.js,
classifier.js): per-group scores with the gap, reliability bins with a text plot, the worst case
over perturbations, toxicity and bias, signatures; `axis_notes` says why an axis is absent or equals
another. Every name from the profile goes through `text` (no markup), every number through `num`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.console import RenderableType
from rich.text import Text

from holistic.v1 import profile_pb2 as pp
from holistic_client.axes import dimension_name
from holistic_client.terminal import count, num, table, text

DASH = "[dim]—[/dim]"
PLOT_WIDTH = 41  # columns of the reliability text plot: 0, 0.025, ..., 1
# The plot's header: its scale from 0 (first column) to 1 (last), exactly as wide as the plot below it.
PLOT_HEADER = "0" + " accuracy ● vs confidence │ ".center(PLOT_WIDTH - 2, "─") + "1"


def family(p: pp.Profile, name: str) -> pp.FamilyReport | None:
    return next((f for f in p.families if f.family == name), None)


def has_data(f: pp.FamilyReport) -> bool:
    """Whether a family's report holds anything to show: some metric, over some predictions (bias
    reports its word counts as 0 over 0 outputs in an empty window, a table of nothing)."""
    return bool(f.metrics) and (f.count > 0 or any(m.count for m in f.metrics))


def dimension(p: pp.Profile, kind: int) -> pp.Dimension | None:
    return next((d for d in p.dimensions if d.kind == kind), None)


def by_name(metrics: Sequence[pp.Metric]) -> dict[str, pp.Metric]:
    return {m.name: m for m in metrics}


def bounds(m: pp.Metric | None, spec: str = ".3f") -> str:
    if m is None or not m.HasField("interval"):
        return ""
    return f"{num(m.interval.lower, spec)}–{num(m.interval.upper, spec)}"


def value(m: pp.Metric | None, spec: str = ".4g") -> str:
    if m is None:
        return DASH
    return f"{num(m.value, spec)}{' ' + text(m.unit) if m.unit else ''}"


def headline(m: pp.Metric | None, label: str) -> str:
    """`toxic_frac 0.012 (95% 0.006–0.021, n=2,217)`, or `toxic_frac —`."""
    if m is None:
        return f"{text(label)} {DASH}"
    iv = bounds(m)
    return f"{text(label)} [bold]{num(m.value, '.4g')}[/bold] [dim](95% {iv + ', ' if iv else ''}n={m.count:,})[/dim]"


def toxicity_measures(p: pp.Profile) -> str:
    """What the toxicity axis measures: the classifier's primary label and its name."""
    f = family(p, "toxicity")
    opts = f.signature.options if f is not None else {}
    parts = [opts[k] for k in ("primary", "classifier") if opts.get(k)]
    return ", ".join(parts)


def _worst_metrics(f: pp.FamilyReport | None) -> dict[str, dict[str, pp.Metric]]:
    out: dict[str, dict[str, pp.Metric]] = {}
    for m in f.metrics if f is not None else []:
        g = re.fullmatch(r"(.+)_(worst|before|perturbed)", m.name)
        if g:
            out.setdefault(g.group(1), {})[g.group(2)] = m
    return out


def axis_notes(p: pp.Profile) -> list[str]:
    """Why each axis is absent, what the fairness axis is the minimum of, and why two axes are equal."""
    notes: list[str] = []
    for d in p.dimensions:
        if not d.HasField("score"):
            notes.append(f"{dimension_name(d)} is absent: {d.absent_reason}")
    why: dict[str, str] = {}
    for name in ("robustness", "fairness"):
        f = family(p, name)
        if f is not None and not _worst_metrics(f):
            why[name] = f"no {name} perturbation in this window, so every instance counts with its own score"
    fair = dimension(p, pp.DIMENSION_KIND_FAIRNESS)
    if fair is not None and fair.HasField("score"):
        parts = [m for m in fair.metrics if m.name == "counterfactual_fairness" or m.name.startswith("worst_group[")]
        if parts:
            terms = ", ".join(f"{m.name} {num(m.value, '.4f')}" for m in parts)
            notes.append(f"fairness = min({terms}) = {num(fair.score, '.4f')}")
        minimum = (family(p, "fairness") or pp.FamilyReport()).signature.options.get("min_group_count", "the minimum")
        if not any(m.name.startswith("worst_group[") for m in parts):
            reason = (
                f"every group value has fewer than {minimum} predictions, so no worst group counts"
                if p.groups
                else "no prediction carries a groups tag, so no worst group counts"
            )
            why["fairness"] = "; ".join(x for x in (why.get("fairness"), reason) if x)
    tox = toxicity_measures(p)
    if tox:
        notes.append(f"toxicity measures {tox}: 1 − the share of outputs at or above the threshold")
    scored = [d for d in p.dimensions if d.HasField("score")]
    for i, a in enumerate(scored):
        for b in scored[i + 1 :]:
            if abs(a.score - b.score) < 1e-12:
                pair = (dimension_name(a), dimension_name(b))
                reasons = [f"{n}: {why[n]}" for n in pair if n in why]
                notes.append(
                    f"{pair[0]} = {pair[1]} = {num(a.score, '.4f')}" + (f" ({'; '.join(reasons)})" if reasons else "")
                )
    return notes


def groups_section(p: pp.Profile) -> list[RenderableType]:
    minimum = (family(p, "fairness") or pp.FamilyReport()).signature.options.get("min_group_count", "the minimum")
    if not p.groups:
        return [Text("Fairness across groups: not available (no prediction in this window carries a groups tag)")]
    out: list[RenderableType] = []
    for b in p.groups:
        if not b.worst_value:
            summary = f"no value has {minimum} predictions yet: no gap"
        elif b.worst_value == b.best_value:
            summary = f"only {b.worst_value} has enough predictions: no gap"
        else:
            summary = f"max gap {num(b.max_gap, '.4f')} (best {b.best_value}, worst {b.worst_value})"
            if b.HasField("worst_to_best_ratio"):
                summary += f", worst/best {num(b.worst_to_best_ratio, '.4f')}"
        t = table(
            "value",
            "score",
            "95% interval",
            "n",
            "",
            "note",
            right=("score", "95% interval", "n"),
            title=f"group {text(b.key)}: {text(summary)}",
            caption=text(b.definition),
        )
        spread = bool(b.worst_value) and b.worst_value != b.best_value
        for v in sorted(b.values, key=lambda v: (v.too_few, -v.metric.value)):
            note = f"too few (< {minimum})" if v.too_few else ""
            if spread and not v.too_few:
                note = "worst" if v.value == b.worst_value else "best" if v.value == b.best_value else ""
            bar = "█" * round(max(0.0, min(1.0, v.metric.value)) * 20)
            t.add_row(text(v.value), value(v.metric), bounds(v.metric), f"{v.metric.count:,}", bar, note)
        out.append(t)
    return out


def plot_row(confidence: float, accuracy: float) -> str:
    """One bin on a 0–1 line: `│` where calibration would put it (its confidence), `●` its accuracy."""
    cells = [" "] * PLOT_WIDTH
    at = lambda x: round(max(0.0, min(1.0, x)) * (PLOT_WIDTH - 1))  # noqa: E731
    cells[at(confidence)] = "│"
    cells[at(accuracy)] = "●"
    return "".join(cells)


def reliability_section(p: pp.Profile) -> list[RenderableType]:
    f = family(p, "calibration")
    curves = [c for c in (f.reliability_curves if f is not None else []) if c.bins]
    if not curves:
        reason = (dimension(p, pp.DIMENSION_KIND_CALIBRATION) or pp.Dimension()).absent_reason
        return [Text(f"Reliability: not available{f' ({reason})' if reason else ''}")]
    out: list[RenderableType] = []
    for c in curves:
        scn = by_name(
            [m for s in p.scenarios if s.scenario == c.scenario for m in s.metrics if m.family == "calibration"]
        )
        ece = scn.get("ece_10_bin")
        n = sum(b.count for b in c.bins)
        title = f"reliability of {text(c.scenario)}: {count(n, 'prediction')} in {len(c.bins)} "
        title += ("equal-mass " if c.binning == "equal_mass" else "") + "bins"
        title += f"; ece_10_bin {num(ece.value, '.4f')}" if ece else ""
        if not c.exact:
            title += f" (from the confidence grid, error ≤ {value(scn.get('ece_10_bin_error_bound'))})"
        t = table(
            "bin (lower, upper]",
            "n",
            "confidence",
            "accuracy",
            "gap",
            PLOT_HEADER,
            right=("n", "confidence", "accuracy", "gap"),
            title=title,
        )
        for b in c.bins:
            t.add_row(
                f"({num(b.lower, '.3f')}, {num(b.upper, '.3f')}]",
                f"{b.count:,}",
                num(b.mean_confidence, ".3f"),
                num(b.accuracy, ".3f"),
                num(b.accuracy - b.mean_confidence, "+.3f"),
                plot_row(b.mean_confidence, b.accuracy),
            )
        out.append(t)
    return out


def worst_case_section(p: pp.Profile, name: str) -> list[RenderableType]:
    f = family(p, name)
    metrics = by_name(f.metrics) if f is not None else {}
    overall = metrics.get(name)
    if overall is None:
        kind = pp.DIMENSION_KIND_ROBUSTNESS if name == "robustness" else pp.DIMENSION_KIND_FAIRNESS
        reason = (dimension(p, kind) or pp.Dimension()).absent_reason or f"no {name} report in this profile"
        return [Text(f"{name.capitalize()}: worst case over perturbations not available ({reason})")]
    inst = metrics.get("instances")
    lost = metrics.get("instances_without_original")
    instances = count(int(inst.value) if inst else 0, "instance")
    head = f"{name} {num(overall.value, '.4f')} (95% {bounds(overall)}) over {instances}"
    if lost is not None and lost.value:
        head += f", {int(lost.value):,} without their original"
    perts = _worst_metrics(f)
    if not perts:
        return [Text(f"{head}: no {name} perturbation in this window (every instance counts with its own score)")]
    t = table(
        "perturbation",
        "before",
        "perturbed",
        "worst",
        "change",
        "n",
        right=("before", "perturbed", "worst", "change", "n"),
        title=f"{name.capitalize()}: worst case over perturbations",
        caption=text(head),
    )
    for pert, m in perts.items():
        before, perturbed, worst = m.get("before"), m.get("perturbed"), m.get("worst")
        change = num(perturbed.value - before.value, "+.4f") if before and perturbed else ""
        t.add_row(
            text(pert), value(before), value(perturbed), value(worst), change, f"{worst.count:,}" if worst else ""
        )
    return [t]


def signatures_table(p: pp.Profile) -> RenderableType:
    t = table("family", "version", "options", "model sha256", title="signatures")
    for f in p.families:
        s = f.signature
        opts = "\n".join(f"{k}={v}" for k, v in sorted(s.options.items()))
        t.add_row(text(f.family), text(s.version), text(opts), s.model_sha256 or "—")
    return t
