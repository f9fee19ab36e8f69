"""Confidence intervals for the numbers in a profile, from mergeable sufficient statistics."""

from __future__ import annotations

import math
from collections.abc import Mapping

from holistic.stats.names import key

Z95 = 1.959963984540054


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion: well-behaved near 0, 1 and for small n."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    # At p = 0 (or 1) the bound is centre - half = 0 (or 1) exactly; computed, it is rounding noise.
    lower = 0.0 if successes <= 0 else max(0.0, centre - half)
    upper = 1.0 if successes >= n else min(1.0, centre + half)
    return (lower, upper)


def mean_var(n: float, total: float, sumsq: float) -> tuple[float, float]:
    """Mean and the variance of that mean (sample variance / n) from count, sum, sum of squares."""
    mean = total / n
    if n < 2:
        return mean, math.inf
    spread = sumsq - n * mean * mean
    # Sums merged in different orders differ in their last bits; below this floor the difference of
    # two large sums is rounding, not spread (it would make intervals depend on the batching).
    if spread <= 1e-9 * sumsq:
        spread = 0.0
    return mean, spread / (n - 1) / n


def normal(n: float, total: float, sumsq: float, z: float = Z95) -> tuple[float, float]:
    """Normal-approximation interval for a mean."""
    mean, var_of_mean = mean_var(n, total, sumsq)
    if math.isinf(var_of_mean):
        return (-math.inf, math.inf)
    half = z * math.sqrt(var_of_mean)
    return (mean - half, mean + half)


def mean_of_means(parts: list[tuple[float, float]], z: float = Z95) -> tuple[float, float, float]:
    """Unweighted mean of several means (value, variance of each) and its propagated interval."""
    k = len(parts)
    value = sum(v for v, _ in parts) / k
    var = sum(var for _, var in parts) / (k * k)
    if math.isinf(var):
        return value, -math.inf, math.inf
    half = z * math.sqrt(var)
    return value, value - half, value + half


Moments = tuple[float, float, float, bool]  # mean, variance of the mean, count, every value 0 or 1


def all_zero_or_one(n: float, total: float, sumsq: float) -> bool:
    """Values in [0, 1], where v² ≤ v with equality only at 0 and 1: Σv² = Σv means a proportion."""
    return n > 0 and abs(sumsq - total) <= 1e-9 * max(1.0, total)


def moments(f: Mapping[str, float], prefix: str) -> Moments:
    """(mean, variance of the mean, count, whether every value is 0 or 1) of the quantity whose count,
    sum and sum of squares are the fields `<prefix>|n`, `|sum` and `|sumsq`."""
    n = f[key(prefix, "n")]
    total, sumsq = f[key(prefix, "sum")], f.get(key(prefix, "sumsq"), 0.0)
    value, var = mean_var(n, total, sumsq)
    return value, var, n, all_zero_or_one(n, total, sumsq)


def part_bounds(value: float, var: float, n: float, proportion: bool, z: float = Z95) -> tuple[float, float] | None:
    """One part's own interval: normal from its variance, Wilson for a proportion whose normal
    interval collapses (p = 0 or 1) or does not exist (n = 1); None when it has none."""
    if proportion and (var == 0.0 or math.isinf(var)) and n > 0:
        return wilson(value * n, n, z)
    if math.isinf(var):
        return None
    half = z * math.sqrt(var)
    return (value - half, value + half)


def mean_of_parts(parts: list[tuple[float, float, float, bool]], z: float = Z95) -> tuple[float, float, float]:
    """Unweighted mean of parts (value, variance of it, count, is a proportion) and its interval
    by MOVER (Zou & Donner 2008): each side adds the parts' own distances to their bounds in
    quadrature. With only normal parts this is exactly `mean_of_means`; a part at 0 or 1 brings
    its Wilson interval instead of a point, so an edge is never falsely certain."""
    k = len(parts)
    value = sum(p[0] for p in parts) / k
    bounds = [part_bounds(v, var, n, prop, z) for v, var, n, prop in parts]
    if any(b is None for b in bounds):
        return value, -math.inf, math.inf
    below = math.sqrt(sum((v - b[0]) ** 2 for (v, *_), b in zip(parts, bounds, strict=True) if b)) / k
    above = math.sqrt(sum((b[1] - v) ** 2 for (v, *_), b in zip(parts, bounds, strict=True) if b)) / k
    return value, value - below, value + above
