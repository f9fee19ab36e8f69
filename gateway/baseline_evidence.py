"""Evidence that a model's axis is below its pinned baseline's, valid however often it is looked at.

The floor alert (gateway/sequential.py) compares one stream with a known number. Against a pinned
version (HOLISTIC_QUALITY_BASELINES, "chat-v2=chat-v1") the number is the baseline's all-time mean
μ_b, which is only estimated: a test that took the baseline's observed mean for the truth would alarm
on the baseline's noise. This one spends half of α on the baseline's uncertainty.

The test. The current model's n_c scores in [0, 1] have mean μ_c, the baseline's n_b scores mean μ_b;
the null is μ_c ≥ μ_b. E_c(m) is sequential.py's one-sided normal mixture against "μ_c ≥ m" over the
current's scores; E_b(m) the mirror one against "μ_b ≤ m" over the baseline's (the same formula on
1 − score against 1 − m). L_b = inf{m : E_b(m) < 2/α} is the lower end of the baseline's anytime
confidence sequence at level α/2. The exported value is

    evidence = E_c(L_b) / 2,   and the alert fires at evidence ≥ 1/α (20 for α = 5 %).

The guarantee. Two events have, each, probability at most α/2 over the pair's whole life (Ville's
inequality: E_b(μ_b) and E_c(μ_c) are test supermartingales, the scores being sub-Gaussian with
variance proxy 1/4): (1) L_b ever exceeds μ_b; (2) E_c(μ_c) ever reaches 2/α. Outside both, at every
moment L_b ≤ μ_b ≤ μ_c, and E_c is increasing in m, so E_c(L_b) ≤ E_c(μ_c) < 2/α: no alarm. So while
μ_c ≥ μ_b, the chance the alert *ever* fires is at most α = 5 %, at any scrape rate, whether the
baseline is frozen (a retired version) or still serving, and whatever the dependence between the two
streams (the union bound needs none: the same prompts may feed both). The value is not itself an
e-value (it is the current's e-value against a data-chosen level, halved), but it reads like the
floor's: 20 is the line, and once the baseline is known well it is the floor's evidence against the
baseline's mean, halved. With a baseline of
few scores L_b sits low and the evidence is slow to come: the price of an uncertain baseline.
The tests simulate the false-alarm rate on equal pairs watched at every batch and the delay to catch
a drop.
"""

from __future__ import annotations

import math

from gateway.sequential import ALPHA, RHO, SIGMA2, THRESHOLD

__all__ = ["THRESHOLD", "baseline_lower", "evidence", "log_evidence_below"]

_BASELINE_THRESHOLD = 2 / ALPHA  # the baseline's confidence sequence spends α/2, the current's the other α/2
_STEPS = 60  # bisection: 2^-60 of [0, 1]


def _log_upper_tail(z: float) -> float:
    """log Φ(−z), finite where erfc underflows (the asymptotic series past z = 30, relative error < 1e-9)."""
    if z < 30:
        return math.log(0.5 * math.erfc(z / math.sqrt(2)))
    inv = 1 / (z * z)
    return -z * z / 2 - math.log(z * math.sqrt(2 * math.pi)) + math.log1p(-inv + 3 * inv * inv - 15 * inv**3)


def log_evidence_below(n: float, mean: float, level: float, rho: float = RHO) -> float:
    """log of sequential.evidence(n, mean, level), uncapped: against "these n scores' mean is ≥ level"."""
    if n <= 0:
        return 0.0
    spread = SIGMA2 * n + rho
    z = n * (mean - level) / math.sqrt(spread)
    return math.log(2.0) + 0.5 * math.log(rho / spread) + z * z / 2 + _log_upper_tail(z)


def baseline_lower(n_b: float, mean_b: float) -> float:
    """L_b: the lowest level the baseline's mean may still be at, anytime, with 1 − α/2 confidence."""
    limit = math.log(_BASELINE_THRESHOLD)

    def excluded(m: float) -> bool:  # E_b(m) ≥ 2/α; E_b decreases in m, and E_b(mean_b) < 1
        return log_evidence_below(n_b, 1.0 - mean_b, 1.0 - m) >= limit

    if not excluded(0.0):
        return 0.0
    lo, hi = 0.0, min(max(mean_b, 0.0), 1.0)
    for _ in range(_STEPS):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excluded(mid) else (lo, mid)
    return hi


def evidence(n_c: float, mean_c: float, n_b: float, mean_b: float) -> float:
    """Evidence against "the current's mean (n_c scores, mean_c) is at or above the baseline's (n_b, mean_b)"."""
    log_e = log_evidence_below(n_c, mean_c, baseline_lower(n_b, mean_b)) - math.log(2.0)
    return math.exp(min(log_e, 700.0))  # capped near 1e304, like the floor's evidence
