"""`holistic radar`: one polygon per model, absent axes drawn as gaps (never 0), identical bytes per profile."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from holistic.profile.fold import HELM_AXES, axis_name
from holistic.v1 import profile_pb2 as pp
from holistic_app.cli import main
from holistic_client.radar import axis_labels, present_runs, radar_data, radar_figure, render
from tests.conftest import drain
from tests.factories import prediction

AXES = [(kind, axis_name(kind)) for kind in HELM_AXES]


def profile(model: str, scores: dict[str, float], n: int) -> pp.Profile:
    p = pp.Profile(model=model)
    p.counts.window_predictions = n
    for kind, name in AXES:
        d = p.dimensions.add(kind=kind)
        if name in scores:
            d.score = scores[name]
        else:
            d.absent_reason = f"no {name} metric service runs in this deployment"
    return p


ATLAS = profile("atlas", {"accuracy": 0.8, "calibration": 0.7, "fairness": 0.5, "efficiency": 0.6}, 1200)
SWIFT = profile("swift", {"accuracy": 0.6, "efficiency": 0.95}, 900)


@pytest.mark.parametrize(
    ("values", "runs"),
    [
        ([1, 1, 1], [[0, 1, 2]]),  # all present: one closed run
        ([None, None], []),
        # absent at 1: the run starts after it and wraps round: 2, 3, 0
        ([1, None, 1, 1], [[2, 3, 0]]),
        # absent at 1 and 3: two single points
        ([1, None, 1, None], [[2], [0]]),
    ],
)
def test_present_runs_break_at_absent_axes(values, runs):
    assert present_runs(values) == runs


def test_radar_data_keeps_absent_as_none():
    axes, series = radar_data([ATLAS, SWIFT])
    assert axes == ["accuracy", "calibration", "robustness", "fairness", "bias", "toxicity", "efficiency"]
    assert series[0].values == (0.8, 0.7, None, 0.5, None, None, 0.6)
    assert series[1].values == (0.6, None, None, None, None, None, 0.95)
    assert (series[0].predictions, series[1].predictions) == (1200, 900)


def test_absent_axes_are_gaps_and_never_zero():
    fig = radar_figure([ATLAS, SWIFT], "t")
    ax = fig.axes[0]
    step = 2 * math.pi / 7
    lines = {ln.get_gid(): ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith("series-")}
    # atlas: present at 0 (accuracy), 1 (calibration), 3 (fairness), 6 (efficiency).
    # Runs, starting after the first absent axis (2): [3] (fairness alone), then [6, 0, 1]
    # (efficiency -> accuracy -> calibration): nothing joins calibration to fairness across the
    # absent robustness axis, nor fairness to efficiency across bias and toxicity.
    theta, r = lines["series-0-run-0"].get_data()
    assert [round(t / step, 6) for t in theta] == [3] and list(r) == [0.5]
    theta, r = lines["series-0-run-1"].get_data()
    assert [round(t / step, 6) for t in theta] == [6, 0, 1]
    assert list(r) == [0.6, 0.8, 0.7]
    # swift: accuracy and efficiency are neighbours on the circle: one run, efficiency -> accuracy.
    theta, r = lines["series-1-run-0"].get_data()
    assert [round(t / step, 6) for t in theta] == [6, 0] and list(r) == [0.95, 0.6]
    assert set(lines) == {"series-0-run-0", "series-0-run-1", "series-1-run-0"}
    for ln in lines.values():  # no vertex of any model at 0
        assert min(ln.get_data()[1]) > 0
    labels = [t.get_text() for t in axis_labels(ax)]
    assert labels[2] == "robustness\n(no data)" and labels[0] == "accuracy"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [
        "atlas (n=1,200); absent: robustness, bias, toxicity",
        "swift (n=900); absent: calibration, robustness, fairness, bias, toxicity",
    ]


def test_a_complete_profile_is_one_closed_filled_polygon():
    full = profile("full", {name: 0.5 for _, name in AXES}, 10)
    ax = radar_figure([full], "t").axes[0]
    theta, r = next(ln for ln in ax.get_lines() if ln.get_gid() == "series-0-run-0").get_data()
    assert len(theta) == 8 and theta[0] == theta[-1] and list(r) == [0.5] * 8
    assert len(ax.patches) == 1  # the fill


def test_svg_marks_the_absent_axis_and_has_no_date():
    svg = render([ATLAS, SWIFT], "svg").decode()
    assert 'id="series-0-run-0"' in svg and 'id="series-1-run-0"' in svg
    assert "(no data)" in svg and "robustness" in svg
    assert "<dc:date>" not in svg and "Matplotlib" not in svg.split("<dc:format>")[0][-400:]


def test_same_profiles_same_bytes():
    assert render([ATLAS, SWIFT], "svg") == render([ATLAS, SWIFT], "svg")
    png = render([ATLAS, SWIFT], "png")
    assert png == render([ATLAS, SWIFT], "png")
    assert png.startswith(b"\x89PNG") and b"Software" not in png and b"matplotlib" not in png.lower()
    assert render([ATLAS, SWIFT], "svg") != render([SWIFT, ATLAS], "svg")


def test_cli_radar_is_deterministic_across_processes(gateway, make_worker, client, tmp_path):
    client.submit([prediction(f"a{i}", latency_s=0.5 + i) for i in range(4)], model="m-a")
    client.submit([prediction(f"b{i}", output="Rome", latency_s=0.2) for i in range(3)], model="m-b")
    drain(make_worker("accuracy"), make_worker("efficiency"))
    args = ["radar", "m-a", "m-b", "--window", "24h", "--target", gateway.address]
    first = tmp_path / "one.svg"
    result = CliRunner().invoke(main, [*args, "-o", str(first)])
    assert result.exit_code == 0, result.output
    second = tmp_path / "two.svg"
    env = dict(os.environ, PYTHONHASHSEED="12345")
    done = subprocess.run([sys.executable, "-m", "holistic_app", *args, "-o", str(second)], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert first.read_bytes() == second.read_bytes()
    svg = first.read_text()
    assert "m-a (n=4)" in svg and "m-b (n=3)" in svg and "last day" in svg
    png = tmp_path / "r.png"
    assert CliRunner().invoke(main, [*args, "-o", str(png)]).exit_code == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    one = CliRunner().invoke(main, ["radar", "m-a", "--window", "24h", "--target", gateway.address, "-o", str(png)])
    assert one.exit_code == 0 and f"wrote {png} (1 model)" in one.output, one.output
    bad = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "r.pdf")])
    assert bad.exit_code == 2 and ".svg or .png" in bad.output


def long_named() -> pp.Profile:
    p = profile("a-model-with-a-rather-long-name-v2.3.1-instruct", {"accuracy": 0.8}, 10)
    p.dimensions.add(axis="a very long plugin axis name (with a unit)", score=0.4)
    p.dimensions.add(axis="another_plugin_axis_whose_name_never_ends_at_all", score=0.6)
    return p


def with_toxicity_classifier() -> pp.Profile:
    p = profile("m", {name: 0.5 for _, name in AXES}, 10)
    sig = p.families.add(family="toxicity").signature
    sig.options["classifier"], sig.options["primary"] = "alt-profanity-check-1.9.1", "profanity"
    return p


def many_long_axes() -> pp.Profile:
    p = profile("m", {name: 0.5 for _, name in AXES}, 10)
    for i in range(12):
        p.dimensions.add(axis=f"plugin axis number {i} with a long descriptive name (unit)", score=0.5)
    p.dimensions.add(axis="x" * 120, score=0.3)  # one word longer than any line
    return p


CASES = pytest.mark.parametrize(
    "profiles",
    [[ATLAS, SWIFT], [profile("m", {}, 0)], [long_named(), ATLAS], [with_toxicity_classifier(), SWIFT],
     [many_long_axes()]],
    ids=["helm", "no-data", "long-names", "toxicity-classifier", "20-axes"],
)  # fmt: skip


@CASES
def test_every_text_lies_inside_the_image(profiles):
    """Measured by matplotlib's renderer after a draw: axis labels, scale, title and legend, whatever
    their length (these cases clipped "(p" off toxicity, the title with no data, long plugin axes)."""
    fig = radar_figure(profiles, "holistic profiles, last day")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    image = fig.bbox
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert len(texts) >= len(radar_data(profiles)[0]) + len(profiles) + 1  # labels, legend, title at least
    for t in texts:
        box = t.get_window_extent(renderer)
        inside = box.x0 >= 0 and box.x1 <= image.width and box.y0 >= 0 and box.y1 <= image.height
        assert inside, f"{t.get_text()!r} at {box.extents} outside {image.width} x {image.height}"
    legend_top = fig.legends[0].get_window_extent(renderer).y1
    for t in axis_labels(fig.axes[0]):  # the names clear the legend
        assert t.get_window_extent(renderer).y0 >= legend_top, t.get_text()
    png = render(profiles, "png")
    assert int.from_bytes(png[16:20], "big") == image.width and int.from_bytes(png[20:24], "big") == image.height


# Every <text> of the SVG as the browser lays it out (matplotlib keeps text as text: the viewer sets it),
# against the image's own box, in CSS pixels
SVG_TEXT = """
const svg = document.querySelector('svg');
const image = svg.getBoundingClientRect();
return [[image.left, image.top, image.right, image.bottom], [...svg.querySelectorAll('text')].map((t) => {
  const b = t.getBBox(), m = t.getScreenCTM();
  const corners = [[b.x, b.y], [b.x + b.width, b.y + b.height]].map(([x, y]) => new DOMPoint(x, y).matrixTransform(m));
  return [t.textContent, Math.min(corners[0].x, corners[1].x), Math.min(corners[0].y, corners[1].y),
          Math.max(corners[0].x, corners[1].x), Math.max(corners[0].y, corners[1].y)];
})];
"""


@CASES
def test_the_svg_as_chromium_sets_it_keeps_every_text_inside(profiles, browser, tmp_path):
    """The SVG's text is set by its viewer, not by matplotlib: Chromium's boxes must fit too."""
    svg = tmp_path / "radar.svg"
    svg.write_bytes(render(profiles, "svg", "holistic profiles, last day"))
    browser.get(svg.as_uri())
    (left, top, right, bottom), texts = browser.execute_script(SVG_TEXT)
    assert right - left == 720 and bottom - top == 672  # 7.5 x 7 in at 72 pt per inch, in CSS px
    assert len(texts) >= len(radar_data(profiles)[0]) + len(profiles) + 1
    for text, x0, y0, x1, y1 in texts:
        assert left <= x0 and x1 <= right and top <= y0 and y1 <= bottom, (text, x0, y0, x1, y1)
