"""The family panels of `holistic profile --detail` (toxicity, bias, summarization) and the list of
every section, in the dashboard's order (classifier.js, summarization.js)."""

from __future__ import annotations

import re
from collections.abc import Callable

from rich.console import RenderableType
from rich.text import Text

from holistic.v1 import profile_pb2 as pp
from holistic_client.detail import (
    DASH,
    axis_notes,
    bounds,
    by_name,
    dimension,
    family,
    groups_section,
    has_data,
    headline,
    reliability_section,
    signatures_table,
    toxicity_measures,
    value,
    worst_case_section,
)
from holistic_client.segments import segments_section
from holistic_client.terminal import count, num, table, text


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
    if f is None or not has_data(f):  # not deployed, or no output in the window: one line, not six "absent" rows
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


SECTIONS: dict[str, Callable[[pp.Profile], list[RenderableType]]] = {
    "axes": lambda p: [text(n) for n in axis_notes(p)],
    "groups": groups_section,
    "segments": segments_section,
    "reliability": reliability_section,
    "robustness": lambda p: worst_case_section(p, "robustness"),
    "fairness": lambda p: worst_case_section(p, "fairness"),
    "toxicity": toxicity_section,
    "bias": bias_section,
    "summarization": summarization_section,
    "signatures": lambda p: [signatures_table(p)],
}
