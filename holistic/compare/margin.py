"""The gate's one rule: a judged cell fails only when it got significantly worse *beyond the margin*.
The gateway's CompareProfiles and `holistic.compare.profiles.significantly_worse` (the clients' local
form) both decide with this module, so there is one rule in one place.

Each judged cell with a test and a direction (+1 higher is better, -1 lower is better) is tested
one-sided against H0 "the worsening is at most the margin": for a higher-is-better cell H0 is
after - before >= -margin, mirrored for lower-is-better. The statistic is the shifted z

    z = (direction * d + margin) / se,    p_margin = Phi(z)   (small when the cell is worse beyond the margin)

where d = after - before is the cell's difference and se the standard error its 95 % interval implies
on the *better* side: (upper - d) / 1.96 for a higher-is-better cell, (d - lower) / 1.96 for a
lower-is-better one. For Welch, paired z and bootstrap cells the interval is d +- 1.96 se, so this is
their se; for the asymmetric Newcombe and Agresti-Min intervals it is the side the null lies on, the
bound that says how far the cell might really be from worse. The one-sided p-values of the judged
cells are then adjusted (Holm or Benjamini-Hochberg) over the judged cells, and a cell fails when its
adjusted p_margin is below the level.

The test is one-sided at the level (not two-sided): with margin 0 a cell whose 95 % interval lies on
the worse side of 0 (two-sided significant at 5 %) has p_margin < 0.025, below the level, so it still
fails; a single judged cell at the boundary fails about `level` of the time (5 %), where the former
rule (two-sided p and a worse sign) spent half of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from holistic.compare import significance


def margin_p(t: significance.Test, direction: int, margin: float) -> float | None:
    """One-sided p of H0 "worse by at most `margin`" for a cell of `direction`; None without a direction."""
    if direction == 0:
        return None
    d = t.difference
    slack = direction * d + margin  # how far the cell is from worse-beyond-the-margin; < 0: past it
    half = (t.upper - d) if direction > 0 else (d - t.lower)
    se = half / significance.Z95
    if not (math.isfinite(se) and se > 0):
        return 0.0 if slack < 0 else 1.0
    return 0.5 * math.erfc(-slack / se / math.sqrt(2.0))  # Phi(slack / se)


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
