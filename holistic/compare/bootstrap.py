"""Standard errors of corpus-level values (classification F1, ECE, a bias or group gap) from what is
stored: the window's time buckets. (A percentile has its own order-statistic interval: holistic/stats/sketches.py.)

A corpus-level value has no interval in a profile: the fold sees sums, counts, confusion counts,
calibration bins and sketch bins, never one prediction's spread. But a window is stored as many time
buckets (a minute or an hour each), each a complete set of the family's mergeable statistics. Resampling
the window's non-empty buckets with replacement (a cluster bootstrap: the buckets are the clusters),
merging each draw as Redis would (additive fields times their multiplicity, min and max kept) and
folding it again gives the value's sampling spread, for any fold, without a family-specific rule. The
spread is scaled by sqrt(k/(k-1)) for k buckets, the usual small-sample correction of a cluster bootstrap.

Buckets rather than predictions are resampled, so predictions that share a minute (one batch, one burst)
count as one draw: the spread is not understated when they are alike. With fewer than MIN_BUCKETS
non-empty buckets there is no estimate (the window is one burst, or all time, which is one stored
bucket): the cell is "not enough data". The seed is fixed, so the same stored data gives the same answer.
tests/holistic/test_bucket_bootstrap.py simulates the interval's coverage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from holistic.stats.mergeable import Folded, merge_rule

REPLICATES = 200
MIN_BUCKETS = 10
SEED = 35  # fixed: the same stored buckets give the same standard errors


class Stack:
    """The buckets as a matrix of their additive fields (and their min/max fields apart), so that a draw
    merges in one matrix product rather than a dictionary update per field and bucket."""

    def __init__(self, buckets: Sequence[Folded]) -> None:
        self.names = sorted({name for b in buckets for name in b if merge_rule(name) == "+"})
        column = {name: i for i, name in enumerate(self.names)}
        self.sums = np.zeros((len(buckets), len(self.names)))
        self.present = np.zeros((len(buckets), len(self.names)))
        self.extremes: list[list[tuple[str, float, str]]] = []
        for row, bucket in enumerate(buckets):
            extremes = []
            for name, value in bucket.items():
                rule = merge_rule(name)
                if rule == "+":
                    self.sums[row, column[name]] = value
                    self.present[row, column[name]] = 1.0
                else:
                    extremes.append((name, value, rule))
            self.extremes.append(extremes)

    def draw(self, weights: Sequence[int]) -> Folded:
        """The buckets merged as Redis merges them, bucket i counted weights[i] times (a field no drawn
        bucket has stays absent)."""
        w = np.asarray(weights, dtype=float)
        totals = w @ self.sums
        present = (w > 0) @ self.present
        out = {self.names[i]: float(totals[i]) for i in np.flatnonzero(present)}
        for bucket, times in zip(self.extremes, weights, strict=True):
            if not times:
                continue
            for name, value, rule in bucket:
                if name not in out:
                    out[name] = value
                elif rule == "<":
                    out[name] = min(out[name], value)
                else:
                    out[name] = max(out[name], value)
        return Folded(out)


def merged(buckets: Sequence[Folded], weights: Sequence[int]) -> Folded:
    """The buckets merged as Redis merges them, bucket i counted weights[i] times."""
    return Stack(buckets).draw(weights)


def standard_errors(
    buckets: Sequence[Folded],
    values: Callable[[Folded], dict[str, float]],
    replicates: int = REPLICATES,
    seed: int = SEED,
) -> dict[str, float]:
    """Per name that `values` gives on every replicate: the standard deviation of its replicates. Empty
    below MIN_BUCKETS non-empty buckets."""
    full = [b for b in buckets if len(b)]
    k = len(full)
    if k < MIN_BUCKETS:
        return {}
    stack = Stack(full)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for weights in rng.multinomial(k, [1.0 / k] * k, size=replicates):
        for name, v in values(stack.draw(weights.tolist())).items():
            if math.isfinite(v):
                draws.setdefault(name, []).append(v)
    inflate = math.sqrt(k / (k - 1))  # the bootstrap's plug-in variance is (k-1)/k of the unbiased one
    return {name: inflate * float(np.std(vs, ddof=1)) for name, vs in draws.items() if len(vs) == replicates}
