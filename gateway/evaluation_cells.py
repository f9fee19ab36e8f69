"""A profile's cells as `gen_ai.evaluation.result` events, sent when a cell changes (holistic quality-exporter).

A cell is what the quality exporter exports for a model and window: each radar axis's score, and
each picked metric of each family. Every snapshot (HOLISTIC_QUALITY_REFRESH_S) the exporter compares
the current window's cells with the previous snapshot's and sends an event for each cell that is new
or whose value or sample count changed; an unchanged cell sends nothing. The convention's
`gen_ai.response.id` is left out: a cell scores a model, not one response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from opentelemetry.proto.logs.v1 import logs_pb2

from gateway.quality import axis_name, default_metrics, picked
from holistic.process import evaluation_events
from holistic.v1 import profile_pb2 as pp


class CellKey(NamedTuple):
    tenant: str
    model: str
    window: str
    family: str  # "" for a radar axis
    name: str  # the axis or the metric


class Cell(NamedTuple):
    value: float
    count: int
    lower: float | None
    upper: float | None


def profile_cells(
    profile: pp.Profile, tenant: str, window: str, metrics: Mapping[str, Sequence[str]] | None
) -> dict[CellKey, Cell]:
    """The cells of one profile: the axes with a score, and the metrics the exporter exports."""
    cells: dict[CellKey, Cell] = {}
    for dim in profile.dimensions:
        if dim.HasField("score"):
            bounds = (dim.interval.lower, dim.interval.upper) if dim.HasField("interval") else (None, None)
            cells[CellKey(tenant, profile.model, window, "", axis_name(dim))] = Cell(dim.score, dim.count, *bounds)
    for report in profile.families:
        named = default_metrics(report.family) if metrics is None else metrics.get(report.family, ())
        for m in picked(report.metrics, set(named)):
            bounds = (m.interval.lower, m.interval.upper) if m.HasField("interval") else (None, None)
            cells[CellKey(tenant, profile.model, window, report.family, m.name)] = Cell(m.value, m.count, *bounds)
    return cells


def changed(before: Mapping[CellKey, Cell], now: Mapping[CellKey, Cell]) -> list[CellKey]:
    """The cells that are new or whose value or count moved since `before`, in a stable order."""
    return sorted(key for key, cell in now.items() if before.get(key) != cell)


def cell_record(key: CellKey, cell: Cell, floors: Mapping[str, float]) -> logs_pb2.LogRecord:
    """The event of one cell. An axis with a floor (HOLISTIC_QUALITY_AXIS_FLOORS) is labelled pass or fail."""
    label = None
    if not key.family and key.name in floors:
        label = "pass" if cell.value >= floors[key.name] else "fail"
    what = f"{key.name} axis" if not key.family else f"{key.family} {key.name}"
    explanation = f"{what} of {key.model} over {key.window}: {cell.value:.4g} from {cell.count} predictions"
    if cell.lower is not None and cell.upper is not None:
        explanation += f", 95 % interval [{cell.lower:.4g}, {cell.upper:.4g}]"
    attributes: dict[str, evaluation_events.Value] = {
        "holistic.model": key.model,
        "holistic.tenant": key.tenant,
        "holistic.window": key.window,
        "holistic.sample_count": cell.count,
    }
    if key.family:
        attributes["holistic.family"] = key.family
    else:
        attributes["holistic.axis"] = key.name
    score = evaluation_events.Score(key.name, cell.value, label)
    return evaluation_events.record(score, explanation=explanation, attributes=attributes)
