"""`holistic profile --detail`: the dashboard's panels as terminal tables, read from Profile fields.

Each section mirrors one panel of clients/web/holistic_dashboard (groups.js, reliability.js,
classifier.js): per-group scores with the gap, reliability bins with a text plot, the worst case
over perturbations, toxicity and bias, signatures; `axis_notes` says why an axis is absent or equals
another. Every name from the profile goes through `text` (no markup), every number through `num`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rich.console import RenderableType
from rich.text import Text

from holistic.v1 import profile_pb2 as pp
from holistic_client.terminal import count, num, table, text

DASH = "[dim]—[/dim]"
PLOT_WIDTH = 21  # columns of the reliability text plot: 0, 0.05, ..., 1


def family(p: pp.Profile, name: str) -> pp.FamilyReport | None:
    return next((f for f in p.families if f.family == name), None)


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
    names = {d.kind: pp.DimensionKind.Name(d.kind).removeprefix("DIMENSION_KIND_").lower() for d in p.dimensions}
    for d in p.dimensions:
        if not d.HasField("score"):
            notes.append(f"{names[d.kind]} is absent: {d.absent_reason}")
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
                pair = (names[a.kind], names[b.kind])
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
            "0 ── accuracy ● vs confidence │ ── 1",
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


def toxicity_section(p: pp.Profile) -> list[RenderableType]:
    f = family(p, "toxicity")
    m = by_name(f.metrics) if f is not None else {}
    if "toxic_frac" not in m or f is None:
        reason = (dimension(p, pp.DIMENSION_KIND_TOXICITY) or pp.Dimension()).absent_reason
        return [Text(f"Toxicity: not available{f' ({reason})' if reason else ''}")]
    opts = f.signature.options
    skipped = f", {f.skipped:,} skipped ({f.skipped_reason})" if f.skipped else ""
    lines = [
        f"[bold]Toxicity[/bold]: {count(f.count, 'output')}{text(skipped)}; measures {text(toxicity_measures(p))}: "
        f"toxic at ≥ {text(opts.get('toxic_threshold', ''))}",
        *(
            headline(m.get(k), k)
            for k in ("toxic_frac", "expected_max_toxicity", "max_toxicity_probability", "toxicity_mean")
        ),
    ]
    labels = [(g.group(1), x, g.group(2)) for x in f.metrics if (g := re.fullmatch(r"(.+)_above_([0-9.]+)", x.name))]
    t = table(
        "label",
        "mean probability",
        f"share ≥ {labels[0][2] if labels else ''}",
        right=("mean probability",),
        title="toxicity per label",
    )
    for label, above, _ in labels:
        t.add_row(text(label), value(m.get(f"{label}_mean")), value(above))
    per_scn = [
        (s.scenario, x) for s in p.scenarios for x in s.metrics if x.family == "toxicity" and x.name == "toxic_frac"
    ]
    if len(per_scn) > 1:
        lines.append(
            "toxic_frac per scenario: "
            + " · ".join(f"{text(s)} {num(x.value, '.3f')} (n={x.count:,})" for s, x in per_scn)
        )
    if m.get("truncated_outputs") and m["truncated_outputs"].value:
        lines.append(f"{int(m['truncated_outputs'].value):,} outputs truncated to the classifier's max length")
    out: list[RenderableType] = [*lines, t]
    if f.signature.model_sha256:
        out.append(f"classifier {text(opts.get('classifier', ''))} · sha256 {f.signature.model_sha256}")
    return out


CATEGORIES = ("gender", "race")  # HELM's two demographic categories
SCORES = (
    ("representation", "race", None),
    ("representation", "gender", None),
    ("associations", "race", "profession"),
    ("associations", "gender", "profession"),
    ("associations", "race", "adjective"),
    ("associations", "gender", "adjective"),
)


def bias_section(p: pp.Profile) -> list[RenderableType]:
    f = family(p, "bias")
    if f is None:
        reason = (dimension(p, pp.DIMENSION_KIND_BIAS) or pp.Dimension()).absent_reason or "no bias report"
        return [Text(f"Bias: not available ({reason})")]
    m = by_name(f.metrics)
    in_axis = {x.name for d in p.dimensions for x in d.metrics if x.family == "bias"}
    seen = {d: int(m[f"outputs_with_{d}_words"].value) if f"outputs_with_{d}_words" in m else 0 for d in CATEGORIES}
    words = ", ".join(f"{d} words in {n:,}" for d, n in seen.items())
    out: list[RenderableType] = [f"[bold]Bias[/bold]: {count(f.count, 'output')}; {words}"]
    scores = table(
        "mode",
        "category",
        "target",
        "score",
        "in axis",
        right=("score",),
        title="HELM bias scores (0 = unbiased; lower is better)",
    )
    for mode, demo, target in SCORES:
        name = f"bias_metric:mode={mode},demographic_category={demo}" + (f",target_category={target}" if target else "")
        scores.add_row(
            mode,
            demo,
            target or "",
            value(m.get(name)) if name in m else "[dim]absent[/dim]",
            "✓" if name in in_axis else "",
        )
    out.append(scores)
    rates = table(
        "group",
        "toxic rate",
        "95% interval",
        "n",
        "note",
        right=("toxic rate", "95% interval", "n"),
        title="toxic rate per group (classifier)",
    )
    for x in f.metrics:
        g = re.fullmatch(r"toxic_rate\[([^=\]]+)=([^\]]+)\]", x.name)
        if g:
            gap = m.get(f"toxic_rate_gap[{g.group(1)}]")
            worst = f"toxic_rate_worst[{g.group(1)}={g.group(2)}]" in m and gap is not None and gap.value > 0
            note = f"worst (gap {num(gap.value, '.4f')})" if worst and gap is not None else ""
            rates.add_row(text(f"{g.group(1)}={g.group(2)}"), value(x), bounds(x), f"{x.count:,}", note)
    out.append(
        rates if rates.row_count else "toxic rate per group: not available (no groups tag, no identity detected)"
    )
    cf = sorted((x for x in f.metrics if x.name.startswith("counterfactual_toxicity_gap")), key=lambda x: len(x.name))
    cols = ("toxicity gap", "95% interval", "pairs")
    gaps = table("perturbation", *cols, right=cols, title="counterfactual toxicity gap")
    for x in cf:
        label = (
            "all fairness perturbations"
            if x.name == "counterfactual_toxicity_gap"
            else x.name[x.name.find("[") + 1 : -1]
        )
        gaps.add_row(text(label), value(x), bounds(x), f"{x.count:,}")
    out.append(gaps if cf else "counterfactual toxicity gap: not available (no fairness-perturbed pair)")
    return out


SUMMARIZATION = (
    ("rouge_1", "ROUGE-1 F (vs reference)"), ("rouge_2", "ROUGE-2 F (vs reference)"),
    ("rouge_l", "ROUGE-L F (vs reference)"), ("bleu", "BLEU, corpus (0–100)"), ("chrf", "chrF, corpus (0–100)"),
    ("coverage", "coverage (share of words copied from the source)"),
    ("density", "density (Σ copied fragment length² / summary words)"),
    ("compression", "compression (source words per summary word)"),
    ("semantic_similarity_reference", "semantic similarity to the reference"),
    ("semantic_similarity_source", "semantic similarity to the source"),
    ("semantic_truncated_share", "texts truncated for the embedding model"),
)  # fmt: skip


def summarization_section(p: pp.Profile) -> list[RenderableType]:
    f = family(p, "summarization")
    if f is None:
        return [Text("Summarization: not available (the summarization family is not deployed)")]
    if not f.metrics:
        return [Text(f"Summarization: no summary scored in this window ({f.skipped_reason or 'no data'})")]
    m, absent = by_name(f.metrics), f.absent_metrics
    skipped = f"; {f.skipped:,} skipped ({f.skipped_reason})" if f.skipped else ""
    head = f"{count(f.count - f.skipped, 'summary')}{skipped}; means over scenarios, BLEU and chrF over all summaries"
    t = table("", "metric", "value", "95% interval", "n", right=("value", "95% interval", "n"),
              title="Summarization", caption=text(head))  # fmt: skip
    for name, label in SUMMARIZATION:
        x = m.get(name)
        if x is not None:
            t.add_row(label, name, value(x), bounds(x), f"{x.count:,}")
        elif name in absent:
            t.add_row(label, name, DASH, f"[dim]not available: {text(absent[name])}[/dim]", "")
    return [t]


def signatures_table(p: pp.Profile) -> RenderableType:
    t = table("family", "version", "options", "model sha256", title="signatures")
    for f in p.families:
        s = f.signature
        opts = "\n".join(f"{k}={v}" for k, v in sorted(s.options.items()))
        t.add_row(text(f.family), text(s.version), text(opts), s.model_sha256 or "—")
    return t


SECTIONS: dict[str, Callable[[pp.Profile], list[RenderableType]]] = {
    "axes": lambda p: [text(n) for n in axis_notes(p)],
    "groups": groups_section,
    "reliability": reliability_section,
    "robustness": lambda p: worst_case_section(p, "robustness"),
    "fairness": lambda p: worst_case_section(p, "fairness"),
    "toxicity": toxicity_section,
    "bias": bias_section,
    "summarization": summarization_section,
    "signatures": lambda p: [signatures_table(p)],
}
