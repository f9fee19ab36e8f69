"""An example family with a percentile: how long outputs are, per scenario and over all, p50 and p95.

A quantile is not a sum, so the family keeps the family API's mergeable sketch: `emit_sketch` in compute,
`quantile_metrics` in fold. Any split of the stream into batches folds to the same percentiles (within the
sketch's 1 %). It has no radar axis: its metrics appear in the family's report and per scenario.
"""

from __future__ import annotations

from collections import defaultdict

from holistic.family import (
    ANY,
    BatchEnvelope,
    Count,
    FamilyBase,
    FamilyFold,
    FamilyReport,
    Folded,
    MetricMetadata,
    MetricSignature,
    Quantity,
    ScenarioPart,
    Settings,
    Stats,
    emit_sketch,
    make_signature,
    prediction_minute,
    quantile_metrics,
)

LENGTH = Quantity("len")  # the sketch over every output; Quantity("len", scenario=s) per scenario
QUANTILES = (0.5, 0.95)


class OutputLengthFamily(FamilyBase):
    name = "output_length"
    version = "1"
    metrics = (MetricMetadata("output_chars_*", "Output length", "Characters of the output (mean, p50, p95).",
                              "characters", True),)  # fmt: skip

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        lengths: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        accept_s = envelope.accept_time.seconds
        for p in envelope.predictions:
            minute = prediction_minute(p.produced_at.seconds, p.produced_at.nanos, accept_s)
            lengths[minute][p.scenario].append(float(len(p.output)))
        out: dict[int, Stats] = {}
        for minute, by_scenario in lengths.items():
            st = out[minute] = Stats()
            for scenario, values in by_scenario.items():
                emit_sketch(st, Quantity("len", scenario=scenario), values)
                emit_sketch(st, LENGTH, values)
        return out

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        report = FamilyReport(family=self.name, count=int(stats.get(LENGTH.count, 0)))
        report.metrics.extend(self._metrics(stats.scope(LENGTH)))
        parts = {}
        for each in stats.find(Count("len", scenario=ANY)):  # each scenario's sketch, by its count
            metrics = self._metrics(stats.scope(each.quantity))
            parts[each.scenario] = ScenarioPart(metrics=metrics, count=int(stats[each]))
        return FamilyFold(report=report, scenarios=parts)

    def _metrics(self, fields: Folded) -> list:
        return quantile_metrics(fields, "output_chars", family=self.name, quantiles=QUANTILES, unit="characters",
                                lower_is_better=True)  # fmt: skip

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        return make_signature(self.name, self.version, {"quantiles": ",".join(map(str, QUANTILES))})


FAMILY = OutputLengthFamily()
