"""Fault injection for crash tests (HOLISTIC_FAULTS), off unless set.

Syntax: comma-separated `point=probability` for points before_apply and after_apply (between the
apply script and XACK), and `poison=<text>` to crash on every batch whose id contains <text>.
A crash is SIGKILL of the worker itself: no cleanup, no ack, exactly what a dead host looks like.
"""

from __future__ import annotations

import os
import random
import signal
import sys

POINTS = ("before_apply", "after_apply")


class Faults:
    def __init__(self, spec: str, rng: random.Random | None = None) -> None:
        self.rates: dict[str, float] = {}
        self.poison: list[str] = []
        self.rng = rng or random.Random()
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, _, value = part.partition("=")
            if name == "poison":
                self.poison.append(value)
            elif name in POINTS:
                self.rates[name] = float(value)
            else:
                raise ValueError(f"HOLISTIC_FAULTS: unknown fault {name!r}; use {POINTS} or poison")

    @property
    def enabled(self) -> bool:
        return bool(self.rates or self.poison)

    def at(self, point: str, batch_ids: list[str]) -> None:
        if any(p in b for p in self.poison for b in batch_ids):
            self._die("poison")
        rate = self.rates.get(point, 0.0)
        if rate and self.rng.random() < rate:
            self._die(point)

    @staticmethod
    def _die(point: str) -> None:
        print(f"holistic fault injected: {point}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
