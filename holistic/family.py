"""A metric family author's whole API, in one module: `from holistic.family import ...`.

A family (a plugin: one distribution, one `holistic.families` entry point) needs only what is named here:
the declaration (FamilyBase and its parts), the statistics it returns and reads (Stats, Folded, the
typed names Count, Sum, SumSq and Quantity, key), metric values with their intervals, the quantile
sketch, per-instance state, signatures, the messages it reads and writes, and the offline helpers its
tests use. The modules behind these names may move; this
module's names do not. An import-linter contract (tests/plugin_contract.toml) keeps the example plugins
under tests/ on it, and docs/writing-a-family.md imports from nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from google.protobuf.timestamp_pb2 import Timestamp

from holistic.families import (
    Axis,
    Family,
    FamilyBase,
    FamilyConfig,
    FamilyFold,
    MetricMetadata,
    Partial,
    ScenarioAccuracy,
    ScenarioPart,
    as_partial,
    load_config,
    one_pass,
    prediction_minute,
)
from holistic.families.shared_memo import SharedMemo
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score as EvaluationScore
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings, load_settings
from holistic.stats.instances import InstanceSpec, Row, aggregate, at_least, fold_rows
from holistic.stats.intervals import mean_of_means, normal, wilson
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import macro_mean, mean, plain, proportion, with_interval
from holistic.stats.names import ANY, Count, Fields, Quantity, Sum, SumSq, Totals, key, split_tag, tag
from holistic.stats.sketches import RELATIVE_ACCURACY, count_at_most, emit_moments, emit_sketch, quantile_metrics
from holistic.v1.prediction_pb2 import Prediction
from holistic.v1.profile_pb2 import Dimension, FamilyReport, GroupBreakdown, Metric, MetricSignature

__all__ = [
    "ANY",
    "RELATIVE_ACCURACY",
    "Axis",
    "BatchEnvelope",
    "Count",
    "Dimension",
    "EvaluationScore",
    "Family",
    "FamilyBase",
    "FamilyConfig",
    "FamilyFold",
    "FamilyReport",
    "Fields",
    "Folded",
    "GroupBreakdown",
    "InstanceSpec",
    "Metric",
    "MetricMetadata",
    "MetricSignature",
    "Partial",
    "Prediction",
    "Quantity",
    "Row",
    "ScenarioAccuracy",
    "ScenarioPart",
    "Settings",
    "SharedMemo",
    "Stats",
    "Sum",
    "SumSq",
    "Totals",
    "at_least",
    "count_at_most",
    "emit_moments",
    "emit_sketch",
    "envelope_of",
    "fold_offline",
    "key",
    "load_config",
    "load_settings",
    "macro_mean",
    "make_signature",
    "mean",
    "mean_of_means",
    "normal",
    "one_pass",
    "plain",
    "prediction_minute",
    "proportion",
    "quantile_metrics",
    "split_tag",
    "tag",
    "wilson",
    "with_interval",
]


def envelope_of(predictions: Iterable[Prediction], model: str = "m", accept_s: int = 1_800_000_000) -> BatchEnvelope:
    """A batch as a worker receives it, for tests: the predictions, their model and an accept time."""
    return BatchEnvelope(
        batch_id="offline", model=model, predictions=list(predictions), accept_time=Timestamp(seconds=accept_s)
    )


def fold_offline(
    family: Family, batches: Sequence[Iterable[Prediction]], model: str = "m", settings: Settings | None = None
) -> FamilyFold:
    """compute over each batch, the statistics merged as Redis would merge them, then fold: a family's
    whole path without Redis. Any split of the same predictions into batches must give the same fold."""
    settings = settings or load_settings()
    total = Stats()
    spec, rows = None, []
    for predictions in batches:
        by_minute, partial = as_partial(family.compute(envelope_of(predictions, model), settings))
        for st in by_minute.values():
            total.merge(st)
        if partial is not None:  # instance rows join across batches, as apply.lua joins them
            spec = partial.spec
            rows.extend(partial.rows)
    if spec is not None:
        for st in aggregate(spec, fold_rows(spec, rows)).values():
            total.merge(st)
    return family.fold(Folded.from_stats(total), model, settings)
