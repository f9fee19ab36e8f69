"""Radar charts of profiles: one polygon per model over the profile's axes, all on one [0, 1] scale.

An absent dimension is never drawn as 0: a model's outline is broken at the axis it has no score
for (the neighbouring scores are not joined across it), and an axis no model has a score for is
drawn dashed and labelled "no data". Rendering uses matplotlib's object API (no pyplot, no global
state) with fixed SVG ids and no dates or software stamps, so the same profiles give the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.projections.polar import PolarAxes

from holistic.v1 import profile_pb2 as pp
from holistic_client.display import axis_title, dimension_name

FORMATS = ("svg", "png")
# Colour-blind-safe (Okabe-Ito), in a fixed order so a model keeps its colour between runs.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_RC = {
    "svg.hashsalt": "holistic-radar",  # element ids from a fixed salt, not a random uuid
    "svg.fonttype": "none",  # text stays text: searchable, small, and independent of font caching
    "font.family": "DejaVu Sans",  # ships with matplotlib
    "path.simplify": False,
}


@dataclass(frozen=True)
class Series:
    """One model's scores in axis order; None where the dimension is absent."""

    model: str
    values: tuple[float | None, ...]
    predictions: int


def radar_data(profiles: Sequence[pp.Profile]) -> tuple[list[str], list[Series]]:
    """The axes (every axis any profile carries, in the server's order: HELM's seven, then plugin
    families' axes) and one series per model."""
    names = list(dict.fromkeys(dimension_name(d) for p in profiles for d in p.dimensions))
    series = []
    for p in profiles:
        by_name = {dimension_name(d): d for d in p.dimensions}
        values = tuple(by_name[n].score if n in by_name and by_name[n].HasField("score") else None for n in names)
        series.append(Series(p.model, values, p.counts.window_predictions))
    return names, series


def present_runs(values: Sequence[float | None]) -> list[list[int]]:
    """Indices of consecutive present values, going round the circle; one run of all n when none is absent."""
    n = len(values)
    if n == 0 or all(v is None for v in values):
        return []
    if all(v is not None for v in values):
        return [list(range(n))]
    start = next(i for i in range(n) if values[i] is None)  # begin just after an absent axis
    runs: list[list[int]] = []
    current: list[int] = []
    for step in range(1, n + 1):
        i = (start + step) % n
        if values[i] is None:
            if current:
                runs.append(current)
            current = []
        else:
            current.append(i)
    if current:
        runs.append(current)
    return runs


def radar_figure(profiles: Sequence[pp.Profile], title: str) -> Figure:
    axes_names, series = radar_data(profiles)
    n = len(axes_names)
    angles = [2 * math.pi * i / n for i in range(n)]
    fig = Figure(figsize=(7.5, 7), dpi=100)
    ax: PolarAxes = fig.add_subplot(projection="polar")  # type: ignore[assignment]
    ax.set_theta_offset(math.pi / 2)  # first axis up, then clockwise
    ax.set_theta_direction(-1)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], labels=["0.25", "0.5", "0.75", "1"], fontsize=8, color="#666666")
    ax.set_rlabel_position(180 / n)  # the scale between the first two axes, clear of both
    ax.tick_params(axis="x", pad=12)
    no_data = [all(s.values[i] is None for s in series) for i in range(n)]
    shown = [axis_title(profiles, a, "\n") for a in axes_names]  # toxicity says what it measures
    ax.set_xticks(angles, labels=[f"{a}\n(no data)" if no_data[i] else a for i, a in enumerate(shown)])
    for i, label in enumerate(ax.get_xticklabels()):
        label.set_color("#999999" if no_data[i] else "#222222")
        label.set_gid(f"axis-{axes_names[i]}")
    ax.xaxis.grid(False)
    for i, angle in enumerate(angles):  # spokes: dashed for an axis nobody has data for
        ax.plot([angle, angle], [0, 1], color="#bbbbbb", lw=0.8, ls="--" if no_data[i] else "-", zorder=0)

    for k, s in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        missing = [axes_names[i] for i, v in enumerate(s.values) if v is None]
        label = f"{s.model} (n={s.predictions:,})" + (f"; absent: {', '.join(missing)}" if missing else "")
        runs = present_runs(s.values)
        for j, run in enumerate(runs):
            closed = len(run) == n
            idx = [*run, run[0]] if closed else run
            theta = [angles[i] for i in idx]
            r = [s.values[i] for i in idx]
            (line,) = ax.plot(theta, r, color=colour, lw=2, marker="o", ms=4, label=label if j == 0 else None)
            line.set_gid(f"series-{k}-run-{j}")
            if closed:
                ax.fill(theta, r, color=colour, alpha=0.12)
        if not runs:  # keep the model in the legend even with no score at all
            ax.plot([], [], color=colour, lw=2, label=label)
    ax.set_xlim(0, 2 * math.pi)  # the whole circle, whatever the plotted angles
    ax.set_title(title, pad=36, fontsize=12)
    fig.legend(loc="lower center", ncols=1, fontsize=9, frameon=False)
    fig.subplots_adjust(top=0.86, bottom=0.08 + 0.045 * len(series))
    return fig


def render(profiles: Sequence[pp.Profile], fmt: str, title: str = "holistic profiles") -> bytes:
    """The chart as SVG or PNG bytes; the same profiles give the same bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")
    with matplotlib.rc_context(_RC):
        fig = radar_figure(profiles, title)
        buf = io.BytesIO()
        if fmt == "svg":
            FigureCanvasSVG(fig).print_svg(buf, metadata={"Date": None, "Creator": None})
        else:
            FigureCanvasAgg(fig).print_png(buf, metadata={"Software": None})
    return buf.getvalue()


def format_for(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"cannot tell the format of {path}: name it .svg or .png")
    return fmt
