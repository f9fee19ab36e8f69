"""Which segment cells of a profile the anytime-valid alert evidence may read, their floors and evidence.

A segment cell (docs/segments.md) is a family's main metric over the predictions that carry one value of a
`metadata` key (or the key's other cell). It qualifies exactly as a scenario metric does, by
metric_evidence.bounded_score, with no rule of its own: a share of 0/1 outcomes (toxic_frac, a plugin's
share) or a declared main metric's mean over predictions, in [0, 1], with a count. A family's main metric
that is a mean of scenario means (accuracy's exact_match, summarization's rouge_2: interval "propagated"),
has a unit (latency) or is corpus-level gives no cell evidence.

The floor of a cell is HOLISTIC_QUALITY_METRIC_FLOORS' `family/metric[key=value]` (the name `holistic
compare` gives the cell; `[key=(other)]` for the other cell), else its `metric` floor. A `scenario/metric`
floor is a scenario's: a cell spans scenarios. Against a pinned baseline (HOLISTIC_QUALITY_BASELINES), a
cell is compared with the baseline's cell of the same family, metric, key and value; never the other cells,
whose values are whichever each model's predictions brought after its first HOLISTIC_SEGMENT_TOP_K.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gateway import metric_evidence
from holistic.v1 import profile_pb2 as pp

OTHER_VALUE = "(other)"  # the segment_value of a key's other cell, as the segment gauges and compare name it

CellKey = tuple[str, str, str, str]  # family, metric, segment_key, segment_value


@dataclass(frozen=True)
class Cell:
    """One segment cell as the e-process reads it: n scores in [0, 1] whose mean is `score`, higher better."""

    family: str
    metric: str
    segment_key: str
    segment_value: str  # OTHER_VALUE for the other cell
    other: bool
    n: int
    score: float
    lower_is_better: bool

    @property
    def key(self) -> CellKey:
        return (self.family, self.metric, self.segment_key, self.segment_value)


def cell_scores(profile: pp.Profile) -> dict[CellKey, Cell]:
    """Every segment cell of the profile that the e-process may read (metric_evidence.bounded_score)."""
    means = metric_evidence.declared_means(profile)
    out: dict[CellKey, Cell] = {}
    for b in profile.segments:
        for v in b.values:
            score = metric_evidence.bounded_score(v.metric, means)
            if score is None:
                continue
            value = OTHER_VALUE if v.other else v.value
            cell = Cell(b.family, b.metric, b.key, value, v.other, int(v.metric.count), score,
                        v.metric.lower_is_better)  # fmt: skip
            out.setdefault(cell.key, cell)
    return out


def cell_name(family: str, metric: str, segment_key: str, segment_value: str) -> str:
    """`family/metric[key=value]`: the cell's name in `holistic compare` and its floor's key."""
    return f"{family}/{metric}[{segment_key}={segment_value}]"


def floor_of(floors: Mapping[str, float], cell: Cell) -> float | None:
    """The floor set for the cell (`family/metric[key=value]`), else for its metric everywhere (`metric`)."""
    return floors.get(cell_name(*cell.key), floors.get(cell.metric))


def floor_series(profile: pp.Profile, floors: Mapping[str, float]) -> Iterator[tuple[CellKey, float]]:
    """Per qualifying cell with a floor, the e-value that its all-time mean is worse than the floor."""
    for cell in cell_scores(profile).values():
        floor = floor_of(floors, cell)
        if floor is not None:
            yield cell.key, metric_evidence.floor_evidence(cell, floor)


def baseline_series(current: pp.Profile, pinned: pp.Profile) -> Iterator[tuple[CellKey, float]]:
    """Per named cell both profiles have and may be read, the evidence the current's is worse than the baseline's."""
    base = cell_scores(pinned)
    for key, cell in cell_scores(current).items():
        other = base.get(key)
        if not cell.other and other is not None:
            yield key, metric_evidence.against_baseline(cell, other)
