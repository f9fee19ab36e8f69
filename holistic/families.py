"""What a metric family is: a pure `batch -> partial stats` and a pure `stats -> metrics` fold.

Families live in metric_services/; this module names them and the shapes they exchange, so the
worker runner (which calls compute) and the profile fold (which calls fold) share one contract.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Protocol

from holistic.stats import Folded, Stats

if TYPE_CHECKING:
    from holistic.instances import InstanceSpec, Row
    from holistic.queue.v1.envelope_pb2 import BatchEnvelope
    from holistic.settings import Settings
    from holistic.v1.profile_pb2 import Dimension, FamilyReport, GroupBreakdown, Metric, MetricSignature

REGISTRY = {
    "accuracy": "metric_services.accuracy",
    "efficiency": "metric_services.efficiency",
    "calibration": "metric_services.calibration",
    "robustness": "metric_services.robustness",
    "fairness": "metric_services.fairness",
    "summarization": "metric_services.summarization",
    "toxicity": "metric_services.toxicity",
    "bias": "metric_services.bias",
}


@dataclass
class ScenarioAccuracy:
    """A family's candidate for a scenario's accuracy; the profile keeps the one from its main metric."""

    metric: Metric  # named "accuracy", with its count and interval
    source: str  # the metric it was computed from ("exact_match", "rouge_2", "client_judged", ...)
    variance: float  # of the mean, for the interval of the mean over scenarios


@dataclass
class ScenarioPart:
    """What one family says about one scenario."""

    metrics: list[Metric] = field(default_factory=list)
    count: int = 0
    task: int = 0
    main_metric: str = ""
    accuracy: ScenarioAccuracy | None = None


@dataclass
class FamilyFold:
    report: FamilyReport
    scenarios: dict[str, ScenarioPart] = field(default_factory=dict)
    dimensions: list[Dimension] = field(default_factory=list)
    groups: list[GroupBreakdown] = field(default_factory=list)


@dataclass
class Partial:
    """compute's richer result, for a family with per-instance state (holistic/instances.py): the
    batch's ordinary statistics by minute, and its rows for the instances of `spec`."""

    by_minute: dict[int, Stats]
    spec: InstanceSpec
    rows: list[Row] = field(default_factory=list)


def as_partial(result: dict[int, Stats] | Partial) -> tuple[dict[int, Stats], Partial | None]:
    if isinstance(result, Partial):
        return result.by_minute, result
    return result, None


def one_pass(family: Family, envelope: BatchEnvelope, settings: Settings) -> Stats:
    """A family's statistics of a whole stream at once, all time: the reference that any batching,
    order and replica count must reproduce (tests, benchmarks)."""
    from holistic.instances import aggregate, fold_rows

    by_minute, partial = as_partial(family.compute(envelope, settings))
    total = Stats()
    for st in by_minute.values():
        total.merge(st)
    if partial is not None:
        for st in aggregate(partial.spec, fold_rows(partial.spec, partial.rows)).values():
            total.merge(st)
    return total


class Family(Protocol):
    name: str
    version: str

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats] | Partial:
        """Partial statistics of one batch, keyed by the epoch minute of each prediction (and its
        instance rows, for families with per-instance state)."""
        ...

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        """Metrics, per-scenario parts and radar dimensions from merged statistics."""
        ...

    def signature(self, model: str, settings: Settings) -> MetricSignature: ...


@cache
def load_family(name: str) -> Family:
    if name not in REGISTRY:
        raise KeyError(f"unknown metric family {name!r}; known: {sorted(REGISTRY)}")
    module = importlib.import_module(REGISTRY[name])
    family: Family = module.FAMILY
    return family


def prediction_minute(seconds: int, nanos: int, fallback_s: float) -> int:
    """Epoch minute a prediction is bucketed in: produced_at, else the batch's accept time."""
    if seconds or nanos:
        return int(seconds // 60)
    return int(fallback_s // 60)
