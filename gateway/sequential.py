"""Evidence that an axis is below its floor, valid however often it is looked at.

An alert that fires the first time a fixed-level test says "below" is wrong far more often than its
level once it is checked at every scrape: every look is another chance. This is an e-process
instead (Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic
confidence sequences", Ann. Statist. 2021): the one-sided normal mixture of the supermartingales
exp(λ·S − λ²·v/2), λ ≤ 0, of the axis's n scores in [0, 1], each sub-Gaussian with variance proxy
1/4 (Hoeffding), S = n·(mean − floor), v = n/4:

    E = 2 · sqrt(ρ / (v + ρ)) · exp(S² / (2 (v + ρ))) · Φ(−S / sqrt(v + ρ))

While the axis's true mean is at or above its floor, E is a nonnegative supermartingale with E[E] ≤ 1,
so by Ville's inequality the chance that it *ever* reaches 1/α is at most α: the alert on E ≥ 20 has
a false-alarm probability of at most 5 % over the whole life of the stream, at any scrape rate. ρ sets
where the evidence grows fastest (here around 500 predictions). The scores are the all-time profile's
(a sliding window would let old data leave and break the guarantee); for a share (toxicity's
1 − toxic_frac, a single scenario's accuracy) n scores are the predictions, for a mean of scenario means
the scenarios' predictions are read as one stream. The tests simulate both the false-alarm rate on
streams at the floor and the delay to detect one below it.
"""

from __future__ import annotations

import math

SIGMA2 = 0.25  # variance proxy of a score in [0, 1] (Hoeffding)
RHO = SIGMA2 * 500  # the mixture's tuning: evidence grows fastest around 500 predictions
ALPHA = 0.05
THRESHOLD = 1 / ALPHA


def evidence(n: float, mean: float, floor: float, rho: float = RHO) -> float:
    """The e-value against "the mean of these n scores in [0, 1] is at or above `floor`"."""
    if n <= 0:
        return 1.0
    s = n * (mean - floor)
    spread = SIGMA2 * n + rho
    z = s / math.sqrt(spread)
    if z > 30:  # far above the floor: E <= sqrt(rho / spread) * (a Mills ratio below 1/(z sqrt(2 pi))), ~0
        return 0.0
    tail = 0.5 * math.erfc(z / math.sqrt(2))  # Φ(−z)
    return 2.0 * math.sqrt(rho / spread) * math.exp(min(z * z / 2, 700.0)) * tail  # capped near 1e304, not inf
