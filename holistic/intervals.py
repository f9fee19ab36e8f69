"""Confidence intervals for the numbers in a profile, from mergeable sufficient statistics."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion: well-behaved near 0, 1 and for small n."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


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
