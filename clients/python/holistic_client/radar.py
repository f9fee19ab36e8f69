"""Radar charts of profiles: one polygon per model over the profile's axes, all on one [0, 1] scale.

An absent dimension is never drawn as 0: a model's outline is broken at the axis it has no score
for (the neighbouring scores are not joined across it), and an axis no model has a score for is
drawn dashed and labelled "no data". Rendering uses matplotlib's object API (no pyplot, no global
state) with fixed SVG ids and no dates or software stamps, so the same profiles give the same bytes.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.projections.polar import PolarAxes
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from holistic.v1 import profile_pb2 as pp
from holistic_client.display import axis_title, dimension_name

FORMATS = ("svg", "png")
# Line lengths (characters) labels are wrapped to: a plugin's axis or a model may have any name.
AXIS_LABEL_CHARS, LEGEND_CHARS, TITLE_CHARS = 22, 90, 70
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
    no_data = [all(s.values[i] is None for s in series) for i in range(n)]
    shown = [wrap(axis_title(profiles, a, "\n"), AXIS_LABEL_CHARS) for a in axes_names]  # toxicity: what it measures
    ax.set_xticks(angles, labels=[])
    for i, angle in enumerate(angles):  # each label grows away from the circle: left of it, right of it, above, below
        x, y = math.sin(angle), math.cos(angle)  # where the axis points, first axis up, clockwise
        ax.text(
            angle, 1.07, f"{shown[i]}\n(no data)" if no_data[i] else shown[i], gid=f"axis-{axes_names[i]}",
            color="#999999" if no_data[i] else "#222222", fontsize=10, clip_on=False, multialignment="center",
            ha="left" if x > 0.1 else "right" if x < -0.1 else "center",
            va="bottom" if y > 0.1 else "top" if y < -0.1 else "center",
        )  # fmt: skip
    ax.xaxis.grid(False)
    for i, angle in enumerate(angles):  # spokes: dashed for an axis nobody has data for
        ax.plot([angle, angle], [0, 1], color="#bbbbbb", lw=0.8, ls="--" if no_data[i] else "-", zorder=0)

    for k, s in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        missing = [axes_names[i] for i, v in enumerate(s.values) if v is None]
        label = f"{s.model} (n={s.predictions:,})" + (f"; absent: {', '.join(missing)}" if missing else "")
        label = wrap(label, LEGEND_CHARS)
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
    ax.set_title(wrap(title, TITLE_CHARS), pad=36, fontsize=12)
    legend = fig.legend(loc="lower center", ncols=1, fontsize=9, frameon=False)
    fit(fig, ax, legend)
    return fig


def axis_labels(ax: PolarAxes) -> list[Text]:
    """The axes' names around the circle, in axis order."""
    return [t for t in ax.texts if (t.get_gid() or "").startswith("axis-")]


def wrap(text: str, width: int) -> str:
    """Each line of `text` broken at spaces (or, in a long word, anywhere) to at most `width` characters."""
    return "\n".join(
        textwrap.fill(line, width, break_long_words=True, break_on_hyphens=False) or line for line in text.split("\n")
    )


def fit(fig: Figure, ax: PolarAxes, legend: Legend, margin_px: float = 6.0, rounds: int = 12) -> None:
    """Shrink the chart until every label, the scale and the title lie inside the image above the legend.

    Text keeps its size while the chart shrinks, so each round measures the drawn text (matplotlib's own
    renderer, the same measure the tests use) and moves the axes in by what still sticks out."""
    canvas = FigureCanvasAgg(fig)
    width, height = fig.bbox.width, fig.bbox.height
    for _ in range(rounds):
        canvas.draw()
        renderer = canvas.get_renderer()
        floor = legend.get_window_extent(renderer).y1 if legend.get_texts() else 0.0
        texts = [*axis_labels(ax), *ax.get_yticklabels(), ax.title]
        boxes = [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text()]
        if not boxes:
            return
        left = max(0.0, margin_px - min(b.x0 for b in boxes))
        right = max(0.0, max(b.x1 for b in boxes) - (width - margin_px))
        bottom = max(0.0, floor + margin_px - min(b.y0 for b in boxes))
        top = max(0.0, max(b.y1 for b in boxes) - (height - margin_px))
        if not (left or right or bottom or top):
            return
        pos = ax.get_position()
        ax.set_position(
            Bbox.from_extents(
                pos.x0 + (left + 1) / width if left else pos.x0,
                pos.y0 + (bottom + 1) / height if bottom else pos.y0,
                pos.x1 - (right + 1) / width if right else pos.x1,
                pos.y1 - (top + 1) / height if top else pos.y1,
            )
        )


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
