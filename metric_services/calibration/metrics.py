"""HELM's calibration metrics (uncertainty-calibration 0.1.4, as crfm-helm 0.5.16 calls it), computed
from weighted points instead of one array entry per prediction.

A point is a distinct confidence with its count n, correct count y and confidence sum s (exact
mode: s = value * n), or a grid cell holding several confidences (grid mode: value = s / n, and
the results carry an error bound). Definitions, for N predictions:
- ece_10_bin: equal-mass bins. Sorted confidences split like np.array_split into min(10, N) chunks;
  edges at the midpoints between chunks, then 1.0; duplicate edges removed; a confidence goes to
  the first edge >= it (np.searchsorted, left). ECE = sum_b |sum_b(p) - sum_b(y)| / N.
- ece_1_bin = |mean p - accuracy|; equal-width ECE: edges i/10.
- selective_cov_acc_area = mean over k of the accuracy of the k most confident; selective_acc@10 =
  that accuracy at k = int(0.1 N) + 1. HELM orders by np.argsort(-p), which puts tied confidences in
  an order that depends on the input order; we use the expectation over all orders of the ties
  (a tie group of m with c correct adds c/m per position), which no longer depends on order.
- Platt scaling: 1-D logistic regression of y on logit(clip(p, 1e-12, 1 - 1e-12)), scikit-learn's
  LogisticRegression(C=1e10) objective (log loss + coef^2 / 2C), by Newton's method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CLIP = 1e-12
PLATT_C = 1e10
_EULER = 0.5772156649015329


@dataclass
class Points:
    """Sorted ascending by value; cell bounds (lo, hi] only in grid mode."""

    value: np.ndarray
    n: np.ndarray
    y: np.ndarray
    s: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    @property
    def total(self) -> float:
        return float(self.n.sum())

    @classmethod
    def exact(cls, counts: dict[float, float], correct: dict[float, float]) -> Points:
        value = np.array(sorted(counts), dtype=float)
        n = np.array([counts[v] for v in value], dtype=float)
        y = np.array([correct.get(v, 0.0) for v in value], dtype=float)
        return cls(value, n, y, value * n)

    @classmethod
    def grid(cls, counts: dict[int, float], correct: dict[int, float], sums: dict[int, float], cells: int) -> Points:
        keys = np.array(sorted(k for k, c in counts.items() if c > 0), dtype=float)
        n = np.array([counts[int(k)] for k in keys], dtype=float)
        s = np.array([sums.get(int(k), 0.0) for k in keys], dtype=float)
        y = np.array([correct.get(int(k), 0.0) for k in keys], dtype=float)
        value = np.clip(s / n, np.maximum(keys - 1, 0) / cells, keys / cells)
        return cls(value, n, y, s, np.maximum(keys - 1, 0) / cells, keys / cells)


@dataclass
class EqualMass:
    ece: float
    edges: list[float]
    bins: list[tuple[float, float, float, float, float]]  # lower, upper, count, sum p, sum y
    error_bound: float


def _value_at(points: Points, cum: np.ndarray, index: int) -> tuple[float, int]:
    i = int(np.searchsorted(cum, index, side="right"))
    return float(points.value[i]), i


def ece_equal_mass(points: Points, num_bins: int = 10) -> EqualMass:
    total = round(points.total)
    b = min(num_bins, total)
    q, r = divmod(total, b)
    ends = np.cumsum([q + 1] * r + [q] * (b - r))
    cum = np.cumsum(points.n)
    edges = []
    ambiguous: set[int] = set()
    for end in ends[:-1]:
        last, i = _value_at(points, cum, int(end) - 1)
        first, j = _value_at(points, cum, int(end))
        edges.append((last + first) / 2.0)
        if i == j and points.lo is not None and points.n[i] > 1:
            ambiguous.add(i)  # the chunk boundary falls inside one grid cell
    edges.append(1.0)
    edges = sorted(set(edges))
    idx = np.searchsorted(np.array(edges), points.value, side="left")
    count = np.bincount(idx, weights=points.n, minlength=len(edges))
    sum_p = np.bincount(idx, weights=points.s, minlength=len(edges))
    sum_y = np.bincount(idx, weights=points.y, minlength=len(edges))
    ece = float(np.abs(sum_p - sum_y).sum() / total)
    bound = 0.0
    for i in ambiguous:  # its points may split any way between the bins around the edge
        lo, hi = float(points.lo[i]), float(points.hi[i])  # type: ignore[index]
        bound += 2 * (points.y[i] * (1 - lo) + (points.n[i] - points.y[i]) * hi)
    lowers = [0.0, *edges[:-1]]
    bins = [
        (lowers[k], edges[k], float(count[k]), float(sum_p[k]), float(sum_y[k]))
        for k in range(len(edges))
        if count[k] > 0
    ]
    return EqualMass(ece, edges, bins, min(bound / total, 1.0))


def ece_equal_width(points: Points, num_bins: int = 10) -> float:
    edges = np.array([i * 1.0 / num_bins for i in range(1, num_bins + 1)])
    idx = np.searchsorted(edges, points.value, side="left")
    sum_p = np.bincount(idx, weights=points.s, minlength=num_bins)
    sum_y = np.bincount(idx, weights=points.y, minlength=num_bins)
    return float(np.abs(sum_p - sum_y).sum() / points.total)


def _harmonic(k: int) -> float:
    if k < 64:
        return math.fsum(1.0 / i for i in range(1, k + 1))
    inv = 1.0 / k
    inv2 = inv * inv
    return math.log(k) + _EULER + inv / 2 - inv2 / 12 + inv2 * inv2 / 120 - inv2 * inv2 * inv2 / 252


def _harmonic_span(start: int, end: int) -> float:
    """sum of 1/k for k in (start, end]."""
    if end - start <= 64:
        return math.fsum(1.0 / k for k in range(start + 1, end + 1))
    return _harmonic(end) - _harmonic(start)


@dataclass
class Selective:
    area: float
    acc_at_10: float
    area_bound: float
    acc_bound: float


def selective(points: Points) -> Selective:
    """Coverage-accuracy area and selective_acc@10, tie groups (or grid cells) spread evenly."""
    total = round(points.total)
    target = int(0.1 * total) + 1
    start = 0
    correct_before = 0.0
    area = bound = 0.0
    acc = acc_bound = 0.0
    for i in range(len(points.value) - 1, -1, -1):  # most confident first
        m, c = round(points.n[i]), float(points.y[i])
        rate = c / m
        area += (correct_before - rate * start) * _harmonic_span(start, start + m) + c
        if start < target <= start + m:
            acc = (correct_before + rate * (target - start)) / target
            if points.lo is not None:
                j = target - start
                acc_bound = min(j, m - j, c, m - c) / target
        if points.lo is not None and m > 1:
            bound += min(c, m - c) * _harmonic_span(start, start + m)
        start += m
        correct_before += c
    return Selective(area / total, acc, bound / total, acc_bound)


def platt_fit(points: Points) -> tuple[float, float]:
    """(coef, intercept) minimising weighted log loss + coef^2 / (2 C) on logit(clip(p))."""
    p = np.clip(points.value, CLIP, 1 - CLIP)
    x = np.log(p / (1 - p))
    n, c = points.n, points.y
    theta = np.zeros(2)

    def loss(t: np.ndarray) -> float:
        z = t[0] * x + t[1]
        return float((n * np.logaddexp(0.0, z) - c * z).sum() + t[0] * t[0] / (2 * PLATT_C))

    current = loss(theta)
    for _ in range(200):
        z = theta[0] * x + theta[1]
        sig = np.exp(-np.logaddexp(0.0, -z))  # 1 / (1 + e^-z) without overflow when separable data push |z| up
        r = n * sig - c
        grad = np.array([(r * x).sum() + theta[0] / PLATT_C, r.sum()])
        w = n * sig * (1 - sig)
        hess = np.array([[(w * x * x).sum() + 1 / PLATT_C, (w * x).sum()], [(w * x).sum(), w.sum()]])
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            step = grad
        t = 1.0
        while t > 1e-12:
            candidate = theta - t * step
            value = loss(candidate)
            if value <= current:
                break
            t /= 2
        else:
            break
        moved = float(np.abs(candidate - theta).max())
        theta, current = candidate, value
        if moved <= 1e-12 * (1 + float(np.abs(theta).max())):
            break
    return float(theta[0]), float(theta[1])


def recalibrated(points: Points, coef: float, intercept: float) -> Points:
    """The points with Platt-scaled confidences (grid cells as their mean: approximate)."""
    p = np.clip(points.value, CLIP, 1 - CLIP)
    z = coef * np.log(p / (1 - p)) + intercept
    value = np.exp(-np.logaddexp(0.0, -z))  # 1 / (1 + e^-z) without overflow for very negative z
    order = np.argsort(value, kind="stable")
    return Points(value[order], points.n[order], points.y[order], value[order] * points.n[order])
