"""An instance's stored state (holistic/stats/instances.py): its minute, its reduced slots and its segment
cells, and their text in the day's hash.

Segment cells (holistic/stats/segments.py): the runner tags a batch's instances with the cells of the
predictions their rows came from (Partial.cells); a state keeps one cell per segment key, the least its rows
carried (min: the same in any order, batch or replica), after its slots in its text, so a state without
cells (every one written before them) reads and writes as ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# An instance's segment cells (holistic/stats/segments.py): segment key -> cell part ("=<value>" or the `other`
# cell), the least part of each key among the instance's rows that carry it
Cells = dict[str, str]
CELLS = "\x1e"  # in a state's text, before each "<key>\x1f<cell>" (the cell's own \x1e and \x1f escaped)


def join_cells(into: Cells, cells: Mapping[str, str]) -> None:
    """Each key's least cell: min is commutative, so the result is the same in any order, batch or replica."""
    for k, part in cells.items():
        was = into.get(k)
        if was is None or part < was:
            into[k] = part


@dataclass
class State:
    minute: int
    slots: dict[str, float] = field(default_factory=dict)
    cells: Cells | None = None  # None, not an empty dict: no dict made per state without cells (~4 % of a plan)

    def encode(self) -> str:
        slots = self.slots
        if not slots:
            text = str(self.minute)
        elif len(slots) == 1:  # one prediction an instance (the bias family's originals): nothing to sort
            ((s, v),) = slots.items()
            text = f"{self.minute};{s}={v!r}"
        else:  # the names sorted, then looked up: ~15% less than sorting the pairs
            text = f"{self.minute};" + ";".join([f"{s}={slots[s]!r}" for s in sorted(slots)])
        if self.cells:  # after the slots: a state without cells (every one written before them) reads as ever
            cells = self.cells
            text += "".join([f"{CELLS}{k}\x1f{_escape(cells[k])}" for k in sorted(cells)])
        return text

    @classmethod
    def decode(cls, text: str) -> State:
        cells: Cells | None = None
        if CELLS in text:
            cells = {}
            text, *tagged = text.split(CELLS)
            for t in tagged:
                k, _, part = t.partition("\x1f")
                cells[k] = _unescape(part)
        minute, *pairs = text.split(";")
        slots = {}
        for pair in pairs:
            slot, _, value = pair.rpartition("=")
            slots[slot] = float(value)
        return cls(int(minute), slots, cells)


def _escape(part: str) -> str:
    # a cell part's "%" is escaped already (segments.cell_part), so "%1E" and "%1F" come only from here
    return part.replace("\x1e", "%1E").replace("\x1f", "%1F") if "\x1e" in part or "\x1f" in part else part


def _unescape(part: str) -> str:
    return part.replace("%1E", "\x1e").replace("%1F", "\x1f") if "%1" in part else part
