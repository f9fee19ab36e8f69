"""One profile against another (a window against the one before it, or one model against another):
what moved, and which moves matter. The gateway's CompareProfiles uses this one rule, and so the dashboard
and every client's `compare`, which ask it.

A move matters when the two 95 % intervals do not overlap; where either side has no interval, when
a radar score moves by at least `min_score_change` or a raw metric by at least `min_relative_change`
of its earlier value. A move of at most `ABS_TOLERANCE` is no move at all, whatever the intervals say
(BLEU's 2.2e-308 against 2.8e-309 is 0 against 0: floating-point dust, neither better nor worse). A
radar axis that gains or loses its data always matters. Axes and unitless metrics are better higher,
`lower_is_better` metrics lower; other metrics with a unit (tokens, tokens/s) move without a direction,
and `*_total` volumes are left out: the prediction counts already say how busy it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from holistic.compare import margin as margin_rule
from holistic.compare import significance
from holistic.v1 import profile_pb2 as pp

ABS_TOLERANCE = 1e-9  # an absolute move this small is no move (floating-point dust around 0)


@dataclass(frozen=True)
class Change:
    # "accuracy" for an axis, "efficiency/latency_p90" for a family's metric, "accuracy/exact_match[region=eu]"
    # for a segment's cell
    name: str
    kind: str  # "dimension", "metric" or "segment"
    before: float | None
    after: float | None
    delta: float | None
    better: bool | None  # None when there is no direction (data appeared or vanished, or no move)
    matters: bool
    why: str
    # The significance test of after - before (holistic/compare/significance.py), where both sides have
    # a count and an interval: the difference's 95 % interval, the cell's p-value and Holm's over every
    # cell tested in this comparison.
    diff_lower: float | None = None
    diff_upper: float | None = None
    p: float | None = None
    p_holm: float | None = None
    method: str = ""
    direction: int = 0  # +1 higher is better, -1 lower is better, 0 none
    # The margin test (holistic/compare/margin.py): one-sided p of "worse by at most the margin", and
    # adjusted over the judged cells (set where the gateway's response says it)
    p_margin: float | None = None
    p_margin_adjusted: float | None = None


def dimension_name(d: pp.Dimension) -> str:
    """The axis's name: a plugin family's own axis has no DimensionKind, only its name. (Not
    holistic.profile.fold's axis_name: that module loads the settings, which a CLI's start must not.)"""
    return d.axis or pp.DimensionKind.Name(d.kind).removeprefix("DIMENSION_KIND_").lower()


def previous_range(window: pp.Window) -> tuple[float, float] | None:
    """The span of equal length just before a resolved window; None for all time."""
    if not window.HasField("range"):
        return None
    start = window.range.start_time.seconds + window.range.start_time.nanos * 1e-9
    end = window.range.end_time.seconds + window.range.end_time.nanos * 1e-9
    return (start - (end - start), start)


def _interval(msg: pp.Dimension | pp.Metric) -> tuple[float, float] | None:
    return (msg.interval.lower, msg.interval.upper) if msg.HasField("interval") else None


def _move(
    name: str, kind: str, before: float, after: float, intervals: tuple[tuple[float, float] | None, ...],
    direction: int, matters_without_intervals: bool, threshold_text: str,
) -> Change:  # fmt: skip
    """direction: +1 higher is better, -1 lower is better, 0 none."""
    delta = after - before
    if abs(delta) <= ABS_TOLERANCE:
        return Change(name, kind, before, after, delta, None, False, f"no move (within {ABS_TOLERANCE:g})",
                      direction=direction)  # fmt: skip
    better = None if direction == 0 else (delta > 0) == (direction > 0)
    a, b = intervals
    if a is not None and b is not None:
        disjoint = a[1] < b[0] or b[1] < a[0]
        why = "95% intervals do not overlap" if disjoint else "within the intervals"
        return Change(name, kind, before, after, delta, better, disjoint, why, direction=direction)
    why = threshold_text if matters_without_intervals else "small move (no interval)"
    return Change(name, kind, before, after, delta, better, matters_without_intervals, why, direction=direction)


def compare(
    current: pp.Profile,
    previous: pp.Profile,
    min_score_change: float = 0.05,
    min_relative_change: float = 0.10,
) -> list[Change]:
    changes: list[Change] = []
    tests: list[significance.Test | None] = []
    before_dims = {dimension_name(d): d for d in previous.dimensions}
    for d in current.dimensions:
        name = dimension_name(d)
        p = before_dims.get(name)
        had, has = p is not None and p.HasField("score"), d.HasField("score")
        if had and has:
            assert p is not None
            moved = abs(d.score - p.score) >= min_score_change
            changes.append(_move(name, "dimension", p.score, d.score, (_interval(p), _interval(d)), 1, moved,
                                 f"moved by at least {min_score_change:g}"))  # fmt: skip
            tests.append(significance.difference(p, d))
        elif had != has:
            before = p.score if had and p is not None else None
            after = d.score if has else None
            why = "data appeared" if has else "data vanished: " + d.absent_reason
            changes.append(Change(name, "dimension", before, after, None, None, True, why))
            tests.append(None)
    before_metrics = {(f.family, m.name): m for f in previous.families for m in f.metrics}
    for f in current.families:
        for m in f.metrics:
            p_m = before_metrics.get((f.family, m.name))
            if p_m is None or m.name.endswith("_total"):
                continue
            direction = -1 if m.lower_is_better else 0 if m.unit else 1
            scale = max(abs(p_m.value), 1e-12)
            moved = abs(m.value - p_m.value) / scale >= min_relative_change
            intervals = (_interval(p_m), _interval(m))
            why = f"moved by at least {min_relative_change:.0%}"
            name = f"{f.family}/{m.name}"
            changes.append(_move(name, "metric", p_m.value, m.value, intervals, direction, moved, why))
            tests.append(significance.difference(p_m, m) if direction else None)  # tokens: no better or worse to test
    before_cells = {segment_cell(b, v): v.metric for b in previous.segments for v in b.values}
    for b in current.segments:  # a segment's cell is one more metric, tested like the others
        for v in b.values:
            name = segment_cell(b, v)
            p_m = before_cells.get(name)
            if p_m is None:
                continue
            m = v.metric
            direction = -1 if b.lower_is_better else 0 if m.unit else 1
            moved = abs(m.value - p_m.value) / max(abs(p_m.value), 1e-12) >= min_relative_change
            why = f"moved by at least {min_relative_change:.0%}"
            changes.append(_move(name, "segment", p_m.value, m.value, (_interval(p_m), _interval(m)), direction,
                                 moved, why))  # fmt: skip
            tests.append(significance.difference(p_m, m) if direction else None)
    return _with_tests(changes, tests)


def segment_cell(b: pp.SegmentBreakdown, v: pp.SegmentValue) -> str:
    """A segment cell's name: "accuracy/exact_match[region=eu]"; the other cell "[region=(other)]"."""
    return f"{b.family}/{b.metric}[{b.key}={'(other)' if v.other else v.value}]"


def _with_tests(changes: list[Change], tests: list[significance.Test | None]) -> list[Change]:
    """Each change with its test, Holm-adjusted over every cell tested here."""
    tested = [i for i, t in enumerate(tests) if t is not None]
    adjusted = dict(zip(tested, significance.holm([tests[i].p for i in tested]), strict=True))  # type: ignore[union-attr]
    out = []
    for i, (c, t) in enumerate(zip(changes, tests, strict=True)):
        if t is None:
            out.append(c)
            continue
        out.append(replace(c, diff_lower=t.lower, diff_upper=t.upper, p=t.p, p_holm=adjusted[i], method=t.method))
    return out


def significantly_worse(
    changes: list[Change], judged: Sequence[str], margin: float = 0.0, level: float = significance.LEVEL,
    method: str = significance.HOLM,
) -> list[Change]:  # fmt: skip
    """The judged changes (by name; "any": every axis) that got significantly worse beyond `margin`: the
    gateway's rule (holistic/compare/margin.py), one-sided p adjusted over the judged cells with a test. A
    judged change without a test falls back on `matters` (its intervals do not overlap, or it moved past
    the threshold) when it is worse."""
    chosen = set(judged)
    picked = [c for c in changes if c.name in chosen or ("any" in chosen and c.kind == "dimension")]
    tests = {
        c.name: (significance.Test(c.delta or 0.0, c.diff_lower, c.diff_upper, c.p or 1.0, c.method), c.direction)
        for c in picked
        if c.diff_lower is not None and c.diff_upper is not None and c.direction
    }
    failing = set(margin_rule.worse(tests, margin, level, method)[2])
    return [c for c in picked if c.name in failing or (c.name not in tests and c.better is False and c.matters)]
