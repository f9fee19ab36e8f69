"""CompareProfiles's paired cells: the instances both models scored, read from their per-instance state.

Where a family keeps per-instance state (holistic/stats/instances.py: robustness and fairness's worst case,
toxicity's inputs, bias's pairs, retrieval's queries), an instance key names the same instance for
every model (its scenario, metric and id). Both models' states are joined on that key, kept when the
instance's minute lies in the window. Each slot both states hold (the original "o", a variant
"p:typos", ...) for at least MIN_PAIRS shared instances becomes one paired cell
"<family>/paired:<slot>": the mean of the slot's values over the shared instances, before and after,
tested per instance (holistic/compare/significance.py: McNemar for 0/1 values, a paired z test otherwise). A
slot's meaning is the family's: its optional `paired_direction(slot)` (holistic/families/__init__.py) says
whether higher is better (+1: robustness and fairness's correctness slots), lower (-1: toxicity's "max"),
or neither (0, the default: a plugin that does not say, bias's and retrieval's slots). With a direction a
paired cell is better or worse and a gate can fail on it; without one it says whether the two models
differ on the same instances, not which is better.

Bounded before it reads: a family whose state holds more than HOLISTIC_COMPARE_MAX_INSTANCES instances
for either model is not paired, and the read is charged to the tenant as one bucket per
INSTANCES_PER_BUCKET instances. The state lives HOLISTIC_INSTANCE_TTL_S: older instances are not paired.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import redis.asyncio as aioredis

from holistic.compare import significance
from holistic.redis.keys import Keys
from holistic.settings import Settings
from holistic.stats.instance_state import State
from holistic.stats.instances import COUNT_FIELD, DAY

MIN_PAIRS = 10  # a slot fewer shared instances hold is no cell (a slot named per instance, e.g. a variant's hash)
INSTANCES_PER_BUCKET = 100  # an instance's state is a field of a few dozen bytes; a bucket, hundreds of fields
CHUNK = 1000  # fields an HSCAN round trip


@dataclass(frozen=True)
class PairedCell:
    name: str  # "<family>/paired:<slot>"
    before: float
    after: float
    count: int
    test: significance.Test | None
    direction: int = 0  # the family's paired_direction(slot): +1 higher is better, -1 lower, 0 none

    @property
    def slot(self) -> str:
        return self.name.partition("/paired:")[2]


def live_days(now: float, ttl_s: int) -> list[int]:
    """The days whose instance hashes may still exist (holistic/stats/instances.py's InstanceStore.live_days)."""
    return list(range(math.floor((now - ttl_s) / DAY), math.floor(now / DAY) + 2))


async def sizes(r: aioredis.Redis, keys: Keys, model: str, families: list[str], days: list[int]) -> dict[str, int]:
    """Per family, the instances the model's state holds (each day's hash counts its own in "#n")."""
    pipe = r.pipeline(transaction=False)
    for fam in families:
        for day in days:
            pipe.hget(keys.instances(model, fam, day), COUNT_FIELD)
    replies = iter(await pipe.execute())
    return {fam: sum(int(next(replies) or 0) for _ in days) for fam in families}


async def states(
    r: aioredis.Redis, keys: Keys, model: str, family: str, days: list[int], span: tuple[float, float] | None
) -> dict[str, State]:
    """The model's instance states of the family whose minute lies in span ([start, end) seconds; None:
    any), by instance key."""
    out: dict[str, State] = {}
    for day in days:
        async for name, value in r.hscan_iter(keys.instances(model, family, day), count=CHUNK):
            field = name.decode()
            if field == COUNT_FIELD:
                continue
            state = State.decode(value.decode())
            if span is None or span[0] <= state.minute * 60 < span[1]:
                out[field] = state
    return out


def cells(family: str, before: dict[str, State], after: dict[str, State]) -> list[PairedCell]:
    """One cell per slot that both states hold for at least MIN_PAIRS shared instances, in slot order."""
    pairs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key in before.keys() & after.keys():
        b, a = before[key].slots, after[key].slots
        for slot in b.keys() & a.keys():
            pairs[slot].append((b[slot], a[slot]))
    out = []
    for slot in sorted(pairs):
        values = pairs[slot]
        n = len(values)
        if n < MIN_PAIRS:
            continue
        mean_b = math.fsum(b for b, _ in values) / n
        mean_a = math.fsum(a for _, a in values) / n
        out.append(PairedCell(f"{family}/paired:{slot}", mean_b, mean_a, n, test(values)))
    return out


def test(values: list[tuple[float, float]]) -> significance.Test | None:
    """McNemar where every value is 0 or 1, else the paired z test on the differences."""
    if all(b in (0.0, 1.0) and a in (0.0, 1.0) for b, a in values):
        only_before = sum(1 for b, a in values if b > a)
        only_after = sum(1 for b, a in values if a > b)
        both = sum(1 for b, a in values if a == b == 1.0)
        return significance.mcnemar(only_before, only_after, both, len(values) - only_before - only_after - both)
    return significance.paired_mean([a - b for b, a in values])


def within_bounds(settings: Settings, *counts: int) -> bool:
    return all(c <= settings.compare_max_instances for c in counts)
