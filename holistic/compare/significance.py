"""Whether a cell moved between two windows (or two versions) beyond chance: the one place both the
gateway's CompareProfiles and the clients' `compare` take their tests from.

Each test fits what is stored for the cell:

- a share of 0/1 outcomes (a Wilson interval, e.g. exact_match, toxic_frac, and the axes made from
  them): the difference's interval is Newcombe's hybrid score interval (method 10, from the two Wilson
  intervals), its p-value the pooled two-proportion z test on the two counts;
- anything else with an interval (a mean, a mean of scenario means): Welch's z test, each side's
  standard error read back from its interval (half-width / 1.96), the difference's interval d ± 1.96·se.
  A clipped interval (a mean near 0 or 1) reads back narrower than it was: the test is then a little
  eager there;
- the same instances scored by both versions (per-instance state, holistic/stats/instances.py): McNemar's
  test on the discordant pairs (exact binomial up to EXACT_MCNEMAR_MAX of them) with the Agresti-Min
  interval for 0/1 values, a paired z test on the per-instance differences otherwise;
- a corpus-level value (classification F1, ECE, a gap: no interval, as the fold has no
  per-prediction spread): Welch's z test on the two bootstrap standard errors of the stored time
  buckets (holistic/compare/bootstrap.py).

The cells compared at once are one family of tests: Holm's step-down adjustment keeps the chance of any
false "significant" among them at or below the level (5 %); Benjamini-Hochberg's keeps the expected
share of false ones among those called significant at or below it. A cell without a test is "not
enough data".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from holistic.v1 import profile_pb2 as pp

Z95 = 1.959963984540054
LEVEL = 0.05
HOLM = "Holm"
BH = "Benjamini-Hochberg"
NEWCOMBE = "Newcombe/two-proportion z"
WELCH = "Welch z"
MCNEMAR_EXACT = "paired: McNemar exact/Agresti-Min"
MCNEMAR_Z = "paired: McNemar z/Agresti-Min"
PAIRED_Z = "paired z"
BOOTSTRAP = "bucket bootstrap/Welch z"
EXACT_MCNEMAR_MAX = 1000  # discordant pairs up to which McNemar's p-value is the exact binomial one


@dataclass(frozen=True)
class Test:
    difference: float  # after - before
    lower: float  # the difference's 95 % interval
    upper: float
    p: float  # two-sided, for this cell alone
    method: str  # one of the names above


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
        return Test(d, lower, upper, p if d else 1.0, NEWCOMBE)
    se = math.hypot((bu - bl) / (2 * Z95), (au - al) / (2 * Z95))
    if not math.isfinite(se):
        return None
    p = 1.0 if se == 0 else _p_two_sided(d / se)
    return Test(d, d - Z95 * se, d + Z95 * se, p if d else 1.0, WELCH)


def _value(x: pp.Metric | pp.Dimension) -> float:
    return x.score if isinstance(x, pp.Dimension) else x.value


def welch_from_se(
    before: float, after: float, se_before: float, se_after: float, method: str = BOOTSTRAP
) -> Test | None:
    """Welch's z test from each side's standard error (a bootstrap's); None when either is unknown."""
    se = math.hypot(se_before, se_after)
    if not math.isfinite(se):
        return None
    d = after - before
    p = 1.0 if se == 0 or not d else _p_two_sided(d / se)
    return Test(d, d - Z95 * se, d + Z95 * se, p, method)


def mcnemar(only_before: int, only_after: int, both: int, neither: int) -> Test | None:
    """Paired 0/1 outcomes of the same instances: `only_before` were 1 before and 0 after, `only_after`
    the reverse. The difference is (only_after - only_before) / n; its p-value McNemar's (exact binomial
    on the discordant pairs up to EXACT_MCNEMAR_MAX, else the z form); its interval Agresti and Min's
    (2005: a Wald interval after adding 1/2 to each of the four cells), which keeps its level at small n."""
    n = only_before + only_after + both + neither
    if n <= 0:
        return None
    d = (only_after - only_before) / n
    discordant = only_before + only_after
    if discordant == 0:
        p = 1.0
        method = MCNEMAR_EXACT
    elif discordant <= EXACT_MCNEMAR_MAX:
        k = min(only_before, only_after)
        tail = sum(math.comb(discordant, i) for i in range(k + 1))
        p = min(1.0, 2 * tail / 2**discordant)
        method = MCNEMAR_EXACT
    else:
        p = _p_two_sided((only_after - only_before) / math.sqrt(discordant))
        method = MCNEMAR_Z
    b, c, m = only_before + 0.5, only_after + 0.5, n + 2
    centre = (c - b) / m
    var = ((b + c) - (c - b) ** 2 / m) / (m * m)
    half = Z95 * math.sqrt(max(var, 0.0))
    return Test(d, max(-1.0, centre - half), min(1.0, centre + half), p, method)


def paired_mean(differences: Sequence[float]) -> Test | None:
    """Paired z test on the per-instance differences (after - before); None below two instances."""
    n = len(differences)
    if n < 2:
        return None
    d = math.fsum(differences) / n
    var = math.fsum((x - d) ** 2 for x in differences) / (n - 1) / n
    se = math.sqrt(var)
    p = 1.0 if se == 0 or not d else _p_two_sided(d / se)
    return Test(d, d - Z95 * se, d + Z95 * se, p, PAIRED_Z)


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


def benjamini_hochberg(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg's step-up adjusted p-values (q-values), in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for k, i in enumerate(order):
        running = min(running, ps[i] * m / (m - k))
        adjusted[i] = running
    return adjusted


ADJUSTMENTS = {HOLM: holm, BH: benjamini_hochberg}
