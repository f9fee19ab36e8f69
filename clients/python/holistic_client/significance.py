"""Whether a cell moved between two windows (or two versions) beyond chance, from what a profile carries.

Each side of a cell has a value, its count and its 95 % interval; the test is chosen by the interval:

- a share of 0/1 outcomes (a Wilson interval, e.g. exact_match, toxic_frac, and the axes made from
  them): the difference's interval is Newcombe's hybrid score interval (method 10, from the two Wilson
  intervals), its p-value the pooled two-proportion z test on the two counts;
- anything else with an interval (a mean, a mean of scenario means): Welch's z test, each side's
  standard error read back from its interval (half-width / 1.96), the difference's interval d ± 1.96·se.
  A clipped interval (a mean near 0 or 1) reads back narrower than it was: the test is then a little
  eager there.

The cells compared at once are one family of tests: Holm's step-down adjustment keeps the chance of any
false "significant" among them at or below the level (5 %). A cell without an interval or a count on
either side has no test. `holistic compare --fail-on` fails on a significant worsening larger than
`--margin`; the tests simulate its false-alarm rate on equal versions and its power on a known shift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from holistic.v1 import profile_pb2 as pp

Z95 = 1.959963984540054
LEVEL = 0.05
HOLM = "Holm"


@dataclass(frozen=True)
class Test:
    difference: float  # after - before
    lower: float  # the difference's 95 % interval
    upper: float
    p: float  # two-sided, for this cell alone
    method: str  # "Newcombe/two-proportion z" or "Welch z"


def _p_two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


def difference(before: pp.Metric | pp.Dimension, after: pp.Metric | pp.Dimension) -> Test | None:
    """The test of `after - before`; None when either side lacks a value, a count or an interval."""
    for side in (before, after):
        if not side.HasField("interval") or side.count <= 0:
            return None
        if isinstance(side, pp.Dimension) and not side.HasField("score"):
            return None
    b, a = _value(before), _value(after)
    d = a - b
    bl, bu, al, au = before.interval.lower, before.interval.upper, after.interval.lower, after.interval.upper
    if before.interval.method == after.interval.method == "wilson":
        lower = d - math.sqrt((a - al) ** 2 + (bu - b) ** 2)
        upper = d + math.sqrt((au - a) ** 2 + (b - bl) ** 2)
        n1, n2 = before.count, after.count
        pooled = (b * n1 + a * n2) / (n1 + n2)
        var = pooled * (1 - pooled) * (1 / n1 + 1 / n2)
        p = 1.0 if var <= 0 else _p_two_sided(d / math.sqrt(var))
        return Test(d, lower, upper, p if d else 1.0, "Newcombe/two-proportion z")
    se = math.hypot((bu - bl) / (2 * Z95), (au - al) / (2 * Z95))
    if not math.isfinite(se):
        return None
    p = 1.0 if se == 0 else _p_two_sided(d / se)
    return Test(d, d - Z95 * se, d + Z95 * se, p if d else 1.0, "Welch z")


def _value(x: pp.Metric | pp.Dimension) -> float:
    return x.score if isinstance(x, pp.Dimension) else x.value


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted
