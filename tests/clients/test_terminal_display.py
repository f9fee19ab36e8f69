"""Profiles in the terminal: user text prints as itself, nothing is cut, numbers carry no float noise."""

from __future__ import annotations

import io
import re

from rich.console import Console

from holistic.v1 import profile_pb2 as pp
from holistic_client import terminal
from holistic_client.display import detail_tables, profiles_table, trust_table

LONG = "atlas-13b-instruct-2026-11-rc3-quantized-int8"


def sample_profile(model: str = "m[eu]") -> pp.Profile:
    p = pp.Profile(model=model)
    p.counts.window_predictions = 12
    acc = p.dimensions.add(kind=pp.DIMENSION_KIND_ACCURACY, score=0.0, count=1, definition="mean of [scenario] means")
    acc.interval.CopyFrom(pp.Interval(lower=2.7755575615628914e-17, upper=0.7934506856, level=0.95))
    p.dimensions.add(kind=pp.DIMENSION_KIND_CALIBRATION, absent_reason="needs [confidence] on predictions")
    p.scenarios.add(scenario="qa[hard]", main_metric="exact_match", count=1)
    fam = p.families.add(family="toxicity", count=1)
    fam.metrics.add(name="toxic_rate[region=eu]", value=0.25, count=4)
    fam.absent_metrics["expected_max[group=x]"] = "no [inputs] seen"
    fam.signature.text = "tox|m:[apc]"
    return p


def render(renderables: list, width: int = 200) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


def test_bracketed_user_text_prints_as_itself():
    out = render([profiles_table([sample_profile()]), *detail_tables(sample_profile())])
    for literal in ("m[eu]", "toxic_rate[region=eu]", "qa[hard]", "needs [confidence] on predictions",
                    "mean of [scenario] means", "expected_max[group=x] absent:", "[inputs] seen",
                    "tox|m:[apc]"):  # fmt: skip
        assert literal in out, literal


def test_bounds_print_without_float_noise():
    out = render([profiles_table([sample_profile()])])
    assert "e-17" not in out
    assert "0.000 (0.000–0.793)" in out  # an asymmetric (Wilson) interval shows its bounds, not a ±


def test_not_a_terminal_means_no_width_limit(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr("sys.stdout", buf)
    monkeypatch.setenv("COLUMNS", "40")
    out_console = terminal.console()
    assert out_console.width == terminal.UNLIMITED
    p = sample_profile(LONG)
    out_console.print(profiles_table([p]))
    out_console.print(trust_table([p]))
    out = buf.getvalue()
    assert "…" not in out
    assert LONG in out and "calibration" in out and "ece_10_bin" in out


def first_cells(out: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^[│┃] (.*?) [│┃]", out, flags=re.M)]


def test_a_narrow_terminal_folds_rather_than_cuts():
    out = render([profiles_table([sample_profile(LONG)])], width=40)
    assert "…" not in out
    assert LONG in "".join(first_cells(out))
    assert max(len(line) for line in out.splitlines()) <= 40


def test_counts_are_plural_only_above_one():
    cases = ((1, "batch"), (2, "batch"), (1_000, "prediction"), (2, "summary"), (0, "day"))
    got = [terminal.count(n, w) for n, w in cases]
    assert got == ["1 batch", "2 batches", "1,000 predictions", "2 summaries", "0 days"]
