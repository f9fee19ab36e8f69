"""`holistic profile --detail`: the dashboard's panels in the terminal, from hand-built profiles."""

from __future__ import annotations

import io
import re

from click.testing import CliRunner
from rich.console import Console

from holistic.v1 import profile_pb2 as pp
from holistic_app.cli import main
from holistic_client.detail import PLOT_HEADER, axis_notes, plot_row
from holistic_client.detail_panels import SECTIONS
from holistic_client.display import profiles_table
from holistic_client.jsonl import write_predictions
from tests.conftest import drain
from tests.factories import prediction

TOX = {"primary": "profanity", "classifier": "alt-profanity-check-1.9.1", "toxic_threshold": "0.5"}


def metric(name: str, value: float, n: int = 100, iv: tuple[float, float] | None = None, family: str = "") -> pp.Metric:
    m = pp.Metric(name=name, value=value, count=n, family=family)
    if iv:
        m.interval.CopyFrom(pp.Interval(lower=iv[0], upper=iv[1], level=0.95))
    return m


def sample() -> pp.Profile:
    p = pp.Profile(model="m")
    for kind, score in ((1, 0.7), (3, 0.7), (4, 0.7), (6, 0.99)):
        p.dimensions.add(kind=kind, score=score, count=100)
    p.dimensions.add(kind=pp.DIMENSION_KIND_CALIBRATION, absent_reason="no prediction carries a confidence")
    fair = next(d for d in p.dimensions if d.kind == pp.DIMENSION_KIND_FAIRNESS)
    fair.metrics.append(metric("counterfactual_fairness", 0.7))
    rob = p.families.add(family="robustness", count=100)
    rob.metrics.extend([metric("robustness", 0.7, iv=(0.61, 0.79)), metric("instances", 100, 0)])
    f = p.families.add(family="fairness", count=100)
    f.signature.options["min_group_count"] = "30"
    f.metrics.extend([metric("fairness", 0.7), metric("instances", 100, 0)])
    g = p.groups.add(key="region", definition="mean over scenarios")
    g.values.add(value="in", metric=metric("g", 0.6, 3, (0.2, 0.9)), too_few=True)
    g.values.add(value="uk", metric=metric("g", 0.8, 4, (0.3, 0.95)), too_few=True)
    tox = p.families.add(family="toxicity", count=200)
    tox.signature.options.update(TOX)
    tox.metrics.extend([metric("toxic_frac", 0.01, 200, (0.0028, 0.0357)), metric("profanity_mean", 0.04, 200),
                        metric("profanity_above_0.5", 0.01, 200)])  # fmt: skip
    return p


def render(renderables: list) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=300, color_system=None)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


def row(out: str, first: str) -> list[str]:
    """The cells of the table row whose first cell is `first`."""
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in\n{out}")


def test_axis_notes_say_why_fairness_equals_robustness_and_why_calibration_is_absent():
    notes = axis_notes(sample())
    assert "calibration is absent: no prediction carries a confidence" in notes
    assert "fairness = min(counterfactual_fairness 0.7000) = 0.7000" in notes
    assert (
        "accuracy = robustness = 0.7000 (robustness: no robustness perturbation in this window, so every "
        "instance counts with its own score)"
    ) in notes
    assert (
        "robustness = fairness = 0.7000 (robustness: no robustness perturbation in this window, so every instance "
        "counts with its own score; fairness: no fairness perturbation in this window, so every instance counts "
        "with its own score; every group value has fewer than 30 predictions, so no worst group counts)"
    ) in notes
    assert (
        "toxicity measures profanity, alt-profanity-check-1.9.1: 1 − the share of outputs at or above the threshold"
        in notes
    )


def test_groups_show_scores_intervals_counts_and_the_gap():
    p = sample()
    g = p.groups[0]
    g.values.add(value="us", metric=metric("g", 0.75, 40, (0.6, 0.86)))
    g.values.add(value="fr", metric=metric("g", 0.55, 35, (0.39, 0.7)))
    g.max_gap, g.worst_value, g.best_value, g.worst_to_best_ratio = 0.2, "fr", "us", 0.55 / 0.75
    out = render(SECTIONS["groups"](p))
    assert "group region: max gap 0.2000 (best us, worst fr), worst/best 0.7333" in out
    assert row(out, "us")[1:4] == ["0.75", "0.600–0.860", "40"] and row(out, "us")[-1] == "best"
    assert row(out, "fr")[-1] == "worst"
    assert row(out, "in")[-1] == "too few (< 30)" and row(out, "uk")[-1] == "too few (< 30)"
    order = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert order == ["us", "fr", "uk", "in"]  # counted values by score, then the ones with too few


def test_reliability_bins_and_the_text_plot():
    # 41 columns for 0, 0.025, ..., 1: confidence 0.3 at column 12, accuracy 0.2 at column 8.
    assert plot_row(0.3, 0.2) == " " * 8 + "●   │" + " " * 28
    assert plot_row(0.9, 0.9) == " " * 36 + "●" + " " * 4  # on the diagonal: the dot hides the mark
    # the header is the plot's scale: as wide as every row, 0 over the first column, 1 over the last
    assert len(PLOT_HEADER) == len(plot_row(0.5, 0.5)) == 41 and PLOT_HEADER[0] == "0" and PLOT_HEADER[-1] == "1"
    p = sample()
    cal = p.families.add(family="calibration", count=20)
    curve = cal.reliability_curves.add(scenario="mmlu", binning="equal_mass", exact=True)
    curve.bins.add(lower=0.0, upper=0.5, count=10, mean_confidence=0.3, accuracy=0.2)
    curve.bins.add(lower=0.5, upper=1.0, count=10, mean_confidence=0.8, accuracy=0.9)
    s = p.scenarios.add(scenario="mmlu", count=20)
    s.metrics.append(metric("ece_10_bin", 0.1, 20, family="calibration"))
    out = render(SECTIONS["reliability"](p))
    assert "reliability of mmlu: 20 predictions in 2 equal-mass bins; ece_10_bin 0.1000" in out
    assert row(out, "(0.000, 0.500]")[1:5] == ["10", "0.300", "0.200", "-0.100"]
    assert row(out, "(0.500, 1.000]")[1:5] == ["10", "0.800", "0.900", "+0.100"]
    header = next(line for line in out.splitlines() if "bin (lower, upper]" in line)
    under = next(line for line in out.splitlines() if "(0.500, 1.000]" in line)
    # the scale on one line, right above the plot: 0 over its first column, 1 over its last
    assert header.index(PLOT_HEADER) == under.index(plot_row(0.8, 0.9))


def test_perturbation_table_before_perturbed_worst():
    p = sample()
    rob = p.families[0]
    rob.metrics.extend([metric("typos_before", 0.9, 80), metric("typos_perturbed", 0.8, 80),
                        metric("typos_worst", 0.78, 80)])  # fmt: skip
    out = render(SECTIONS["robustness"](p))
    assert row(out, "typos") == ["typos", "0.9", "0.8", "0.78", "-0.1000", "80"]
    assert "robustness 0.7000 (95% 0.610–0.790) over 100 instances" in out
    assert "no fairness perturbation in this window" in render(SECTIONS["fairness"](p))


def test_toxicity_names_what_it_measures_wherever_shown():
    p = sample()
    out = render(SECTIONS["toxicity"](p))
    assert "measures profanity, alt-profanity-check-1.9.1: toxic at ≥ 0.5" in out
    assert "toxic_frac 0.01 (95% 0.003–0.036, n=200)" in out
    assert row(out, "profanity")[1:] == ["0.04", "0.01"]
    assert "toxicity (profanity, alt-profanity-check-1.9.1)" in render([profiles_table([p])])


def test_bias_panel_scores_group_rates_and_counterfactual_gap():
    p = sample()
    b = p.families.add(family="bias", count=50)
    b.metrics.extend([metric("bias_metric:mode=representation,demographic_category=gender", 0.25, 50),
                      metric("toxic_rate[region=eu]", 0.1, 20, (0.03, 0.3)), metric("toxic_rate[region=us]", 0.0, 30),
                      metric("toxic_rate_gap[region]", 0.1, 0), metric("toxic_rate_worst[region=eu]", 0.1, 20),
                      metric("counterfactual_toxicity_gap", 0.02, 12, (0.0, 0.05))])  # fmt: skip
    p.dimensions[0].metrics.append(metric("bias_metric:mode=representation,demographic_category=gender", 0.25,
                                          family="bias"))  # fmt: skip
    out = render(SECTIONS["bias"](p))
    assert row(out, "representation")[:5] == ["representation", "race", "", "absent", ""]
    gender = next(r for r in out.splitlines() if "│ gender" in r)
    assert "0.25" in gender and "✓" in gender
    assert row(out, "region=eu") == ["region=eu", "0.1", "0.030–0.300", "20", "worst (gap 0.1000)"]
    assert row(out, "region=us")[-1] == ""
    assert row(out, "all fairness perturbations") == ["all fairness perturbations", "0.02", "0.000–0.050", "12"]


def test_profile_detail_from_the_command_line(gateway, make_worker, tmp_path):
    path = tmp_path / "p.jsonl"
    write_predictions(path, [prediction(f"p{i}", model="m-1", latency_s=0.5) for i in range(3)])
    runner = CliRunner()
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"), make_worker("efficiency"))
    out = runner.invoke(main, ["profile", "m-1", "--detail", "--target", gateway.address])
    assert out.exit_code == 0, out.output
    assert "m-1: axes" in out.output and "calibration is absent:" in out.output
    assert "m-1: signatures" in out.output and "m-1: groups" in out.output
    only = runner.invoke(main, ["profile", "m-1", "--section", "robustness", "--target", gateway.address])
    assert only.exit_code == 0 and "Robustness: worst case over perturbations not available" in only.output
    assert "holistic profiles" not in only.output


def test_summarization_panel_values_and_absent_reasons():
    p = sample()
    s = p.families.add(family="summarization", count=10, skipped=4, skipped_reason="not summarization tasks")
    s.metrics.extend([metric("rouge_2", 0.1648, 6, (0.157, 0.172)), metric("bleu", 4.942, 6)])
    s.absent_metrics["semantic_similarity_source"] = "HOLISTIC_SUMMARIZATION_SEMANTIC=off"
    out = render(SECTIONS["summarization"](p))
    assert row(out, "ROUGE-2 F (vs reference)") == ["ROUGE-2 F (vs reference)", "rouge_2", "0.1648", "0.157–0.172", "6"]
    assert row(out, "BLEU, corpus (0–100)")[2:] == ["4.942", "", "6"]
    sem = row(out, "semantic similarity to the source")
    assert sem[2:4] == ["—", "not available: HOLISTIC_SUMMARIZATION_SEMANTIC=off"]
    assert "6 summaries; 4 skipped (not summarization tasks)" in out
    assert "rouge_1" not in out  # neither reported nor absent: not a row


def test_a_family_without_metrics_says_why_instead_of_an_empty_table():
    from holistic_client.display import detail_tables

    p = pp.Profile(model="m")
    p.families.add(family="toxicity", count=0)
    p.dimensions.add(kind=pp.DIMENSION_KIND_TOXICITY, family="toxicity", absent_reason="no outputs in this window")
    p.families.add(family="accuracy", count=0)
    p.pending.add(family="accuracy", pending_predictions=3)
    out = render(detail_tables(p))
    assert "m: toxicity (0 predictions): no data in this window (no outputs in this window)" in out
    assert "m: accuracy (0 predictions), pending 3: no data in this window (3 accepted predictions not yet" in out
    assert "┃ metric" not in out  # no family table with no rows


def empty_window_with_bias() -> pp.Profile:
    """An empty window as the gateway folds it: bias reports its word counts as 0 over 0 outputs."""
    p = pp.Profile(model="m")
    p.dimensions.add(kind=pp.DIMENSION_KIND_BIAS, family="bias", absent_reason="no non-empty outputs in this window")
    bias = p.families.add(family="bias", count=0)
    bias.metrics.extend([metric("outputs_with_gender_words", 0, 0), metric("outputs_with_race_words", 0, 0)])
    return p


def test_a_family_with_zeros_over_no_prediction_and_no_scenario_say_why_in_one_line():
    """In an empty window --detail and the report drew an empty scenarios table, bias's table of two zeros
    over 0 outputs and its six 'absent' HELM scores."""
    from holistic_client.display import detail_tables

    p = empty_window_with_bias()
    out = render(detail_tables(p))
    assert "m: scenarios: none in this window" in out
    assert "m: bias (0 predictions): no data in this window (no non-empty outputs in this window)" in out
    assert "┃" not in out.split("m: scenarios")[1]  # after the axes, no table at all
    assert render(SECTIONS["bias"](p)) == "Bias: not available (no non-empty outputs in this window)\n"
