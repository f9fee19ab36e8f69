"""One computed batch on its way to apply.lua, and batches of one read applied together.

Every batch writes its statistics to every time tier (a minute bucket, the hour, day, 16 days, 256
days and all time): under a backlog most of Redis's work, and much of the worker's, is those coarse
tiers, the same for every batch of a model. The batches of one read that share a model are applied by
one script (`coalesce`): their statistics summed per minute, the tiers written once, every one of
their done bits checked and set together, so the exactly-once rule is per batch as before. Where one
of them turns out to be applied already (a redelivery, another replica), the script writes nothing
and the runner applies them one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from holistic import envelope as env_mod
from holistic.families import Partial
from holistic.stats import Stats


@dataclass
class Work:
    entry_id: str
    entry: env_mod.Entry
    batch_id: str
    n: int
    by_minute: dict[int, Stats]
    partial: Partial | None = None
    accept_s: float = 0.0
    traceparent: str = ""
    stream: str = ""  # the work stream it was read from; "" skips apply.lua's pending check (a cluster)
    per_minute: dict[int, int] = field(default_factory=dict)  # predictions per minute, for the signature count
    members: list[Work] = field(default_factory=list)  # batches applied together (coalesce); empty: itself

    @property
    def batches(self) -> list[Work]:
        return self.members or [self]


def coalesce(work: list[Work], max_predictions: int) -> list[Work]:
    """The works of one read grouped per model (in read order) into applies of at most max_predictions
    predictions (a bigger batch goes alone); a group of one is the work itself."""
    open_: dict[tuple[str, bool], list[Work]] = {}
    groups: list[list[Work]] = []
    for w in work:
        kind = (w.entry.model, w.partial is None)
        group = open_.get(kind)
        if group is None or sum(g.n for g in group) + w.n > max_predictions:
            group = open_[kind] = []
            groups.append(group)
        group.append(w)
    return [g[0] if len(g) == 1 else merged(g) for g in groups]


def merged(ws: list[Work]) -> Work:
    """One work for several batches of one model: statistics summed per minute in batch order,
    instance rows concatenated (their late rows are counted per batch, see InstanceStore.late)."""
    first = ws[0]
    by_minute: dict[int, Stats] = {}
    per_minute: dict[int, int] = {}
    for w in ws:
        for minute, st in w.by_minute.items():
            by_minute.setdefault(minute, Stats()).merge(st)
        for minute, count in w.per_minute.items():
            per_minute[minute] = per_minute.get(minute, 0) + count
    partial = None
    if first.partial is not None:
        partial = Partial(by_minute, first.partial.spec, [r for w in ws for r in w.partial.rows if w.partial])
    return Work(
        first.entry_id, first.entry, first.batch_id, sum(w.n for w in ws), by_minute, partial, first.accept_s,
        first.traceparent, first.stream, per_minute, members=list(ws),
    )  # fmt: skip
