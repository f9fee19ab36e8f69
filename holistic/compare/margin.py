"""The gate's one rule: a judged cell fails only when it got significantly worse *beyond the margin*.
The gateway's CompareProfiles and `holistic.compare.profiles.significantly_worse` (the clients' local
form) both decide with this module, so there is one rule in one place.

Each judged cell with a test and a direction (+1 higher is better, -1 lower is better) is tested
one-sided against H0 "the worsening is at most the margin": for a higher-is-better cell H0 is
after - before >= -margin, mirrored for lower-is-better. The statistic is the shifted z

    z = (direction * d + margin) / se,    p_margin = Phi(z)   (small when the cell is worse beyond the margin)

where d = after - before is the cell's difference and se the standard error the cell's own test used:
se = |d| / z_p, z_p the normal deviate of its two-sided p. For Welch, paired z and bootstrap cells this is
the se of their interval d +- 1.96 se; for a share it is the pooled two-proportion se of its z test; for
McNemar the se its exact p implies. Where the p says nothing of it (d = 0, p = 1, or p below what a float
holds), se is the one the 95 % interval gives on the *better* side, the side the null lies on:
(upper - d) / 1.96 for a higher-is-better cell, (d - lower) / 1.96 for a lower-is-better one. The
one-sided p-values of the judged cells are then adjusted (Holm or Benjamini-Hochberg) over the judged
cells, and a cell fails when its adjusted p_margin is below the level.

The test is one-sided at the level (not two-sided). With margin 0 it is the cell's own test made one-sided:
p_margin = p / 2 on the worse side, so a cell two-sided significant at 5 % on the worse side has
p_margin < 0.025 and still fails, whatever its test (Newcombe's interval and the pooled z test can disagree
at a handful of events: the se is the test's, not the interval's, so they cannot disagree here). A single
judged cell at the boundary fails about `level` of the time (5 %), where the former rule (two-sided p and
a worse sign) spent half of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist

from holistic.compare import significance

_NORMAL = NormalDist()


def margin_p(t: significance.Test, direction: int, margin: float) -> float | None:
    """One-sided p of H0 "worse by at most `margin`" for a cell of `direction`; None without a direction."""
    if direction == 0:
        return None
    d = t.difference
    slack = direction * d + margin  # how far the cell is from worse-beyond-the-margin; < 0: past it
    se = standard_error(t, direction)
    if not (math.isfinite(se) and se > 0):
        return 0.0 if slack < 0 else 1.0
    return 0.5 * math.erfc(-slack / se / math.sqrt(2.0))  # Phi(slack / se)


def standard_error(t: significance.Test, direction: int) -> float:
    """The standard error the cell's test used (|d| over its p's normal deviate); else its interval's on the
    better side."""
    if t.difference and 0 < t.p < 1:
        z = -_NORMAL.inv_cdf(t.p / 2)
        if z > 0 and math.isfinite(z):
            return abs(t.difference) / z
    half = (t.upper - t.difference) if direction > 0 else (t.difference - t.lower)
    return half / significance.Z95


def adjust(ps: Mapping[str, float], method: str) -> dict[str, float]:
    """The one-sided p-values adjusted over the cells given (the judged ones), by Holm or BH."""
    names = list(ps)
    return dict(zip(names, significance.ADJUSTMENTS[method]([ps[n] for n in names]), strict=True))


def worse(
    tests: Mapping[str, tuple[significance.Test, int]], margin: float, level: float, method: str
) -> tuple[dict[str, float], dict[str, float], list[str]]:
    """Over the judged cells (name -> its test and direction): each one's p_margin, its adjusted value,
    and the names that fail (adjusted p_margin below `level`), in the order given."""
    raw = {name: p for name, (t, direction) in tests.items() if (p := margin_p(t, direction, margin)) is not None}
    adjusted = adjust(raw, method)
    return raw, adjusted, [name for name in raw if adjusted[name] < level]
