"""Anytime-valid evidence against an axis's floor (gateway/sequential.py): the formula by hand, the
false-alarm rate under continuous watching and the detection delay, simulated (pytest -s prints them)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable

import pytest

from gateway.sequential import RHO, SIGMA2, THRESHOLD, evidence

STREAMS = 1000
BATCH, BATCHES = 50, 100  # evidence read after every batch, 5,000 predictions a stream


def test_the_formula_by_hand():
    # n = 400 at 0.6 against 0.7: S = -40, v + rho = 100 + 125 = 225, z = -40/15
    z = -40 / 15
    phi = 0.5 * math.erfc(z / math.sqrt(2))  # Φ(-z) = Φ(2.667) = 0.99617
    expected = 2 * math.sqrt(125 / 225) * math.exp(z * z / 2) * phi
    assert evidence(400, 0.6, 0.7) == pytest.approx(expected, rel=1e-12) and 51 < expected < 53
    assert evidence(0, 0.0, 0.7) == 1.0 and evidence(400, 0.7, 0.7) == pytest.approx(math.sqrt(125 / 225))
    assert evidence(10**9, 1.0, 0.5) == 0.0 and evidence(10**9, 0.0, 0.5) > 1e300  # capped, finite
    assert (SIGMA2, RHO, THRESHOLD) == (0.25, 125.0, 20.0)


def floor_evidence(n: int, hits: int, floor: float) -> float:
    return evidence(n, hits / n, floor)


def watch(
    p: float, floor: float, seed: int, read: Callable[[int, int, float], float] = floor_evidence
) -> list[int | None]:
    """Per stream of 0/1 outcomes (1 with probability p), the predictions seen when the evidence first
    reached the threshold (None: never). `read(n, hits, floor)`: the evidence after n predictions."""
    rng = random.Random(seed)
    out: list[int | None] = []
    for _ in range(STREAMS):
        hits = n = 0
        caught = None
        for _ in range(BATCHES):
            hits += sum(rng.random() < p for _ in range(BATCH))
            n += BATCH
            if read(n, hits, floor) >= THRESHOLD:
                caught = n
                break
        out.append(caught)
    return out


def test_streams_at_their_floor_watched_at_every_batch_rarely_alarm():
    alarms = sum(c is not None for c in watch(0.7, 0.7, seed=21)) / STREAMS
    print(f"at the floor, read after every batch: {alarms:.1%} of {STREAMS} streams alarmed (bound 5 %)")
    # Ville: at most 5 %; 3 binomial standard deviations of slack for the simulation's own noise
    assert alarms <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / STREAMS)


def test_a_stream_below_its_floor_is_caught_and_the_delay_reported():
    caught = watch(0.6, 0.7, seed=22)
    found = [c for c in caught if c is not None]
    delay = statistics.median(found)
    print(f"0.6 against a floor of 0.7: {len(found)} of {STREAMS} caught, median delay {delay:g} predictions")
    assert len(found) == STREAMS and 200 <= delay <= 600
