"""Profile quality as Prometheus series: what a profile says, flattened into labelled gauges.

One profile (a model over a window, or over the window just before it) gives, per present radar
axis, its score, its 95 % interval bounds and its sample count, and, per family, the metrics a team
picked or the family declares as exported (with their bounds and counts). An absent axis gives no
series at all, never a 0, so alerts on it stay silent rather than fire. Labels: tenant, model,
window ("1h", ...), period ("current" or "previous") and axis (the name the profile carries, a
plugin family's own axis included), or family and metric; per segment cell (docs/segments.md), each
family's main metric with family, metric, segment_key and segment_value ("(other)" for the other cell):
at most HOLISTIC_SEGMENT_MAX_KEYS × (HOLISTIC_SEGMENT_TOP_K + 1) values per family. The alert evidence
read from the all-time profile: per axis (labels axis, and baseline against a pinned version) and per
scenario metric (scenario, family, metric: gateway/metric_evidence.py) and per segment cell (family, metric,
segment_key, segment_value: gateway/segment_evidence.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily, Metric

from gateway import baseline_evidence, metric_evidence, segment_evidence, sequential
from holistic.families import exported_metrics
from holistic.families.registry import is_installed, load_family
from holistic.v1 import profile_pb2 as pp

AXIS_LABELS = ("tenant", "model", "axis", "window", "period")
METRIC_LABELS = ("tenant", "model", "family", "metric", "window", "period")
PROFILE_LABELS = ("tenant", "model", "window", "period")
# better: "higher" or "lower" (the metric's direction, so one alert rule covers both)
SEGMENT_LABELS = ("tenant", "model", "family", "metric", "segment_key", "segment_value", "better", "window", "period")
OTHER_VALUE = segment_evidence.OTHER_VALUE  # the segment_value of a key's other cell
EVIDENCE_LABELS = ("tenant", "model", "axis")
BASELINE_EVIDENCE_LABELS = ("tenant", "model", "baseline", "axis")
METRIC_EVIDENCE_LABELS = ("tenant", "model", "scenario", "family", "metric")
METRIC_BASELINE_EVIDENCE_LABELS = ("tenant", "model", "baseline", "scenario", "family", "metric")
SEGMENT_EVIDENCE_LABELS = ("tenant", "model", "family", "metric", "segment_key", "segment_value")
SEGMENT_BASELINE_EVIDENCE_LABELS = ("tenant", "model", "baseline", "family", "metric", "segment_key", "segment_value")


def axis_name(dim: pp.Dimension) -> str:
    """The axis's name as the profile carries it (a plugin family's own axis has no DimensionKind)."""
    return dim.axis or pp.DimensionKind.Name(dim.kind).removeprefix("DIMENSION_KIND_").lower()


def default_metrics(family: str) -> tuple[str, ...]:
    """The metrics a family exports unless HOLISTIC_QUALITY_METRICS is set: its own declaration."""
    return exported_metrics(load_family(family)) if is_installed(family) else ()


@dataclass
class QualitySeries:
    """Gauges being filled for one scrape snapshot; `families()` hands them to prometheus_client."""

    axis_score: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_axis_score", "Radar axis score in [0, 1], higher is better.", labels=AXIS_LABELS
        )
    )
    axis_lower: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_axis_lower", "Lower bound of the axis score's 95 % interval.", labels=AXIS_LABELS
        )
    )
    axis_upper: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_axis_upper", "Upper bound of the axis score's 95 % interval.", labels=AXIS_LABELS
        )
    )
    axis_samples: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_axis_samples", "Predictions behind the axis score.", labels=AXIS_LABELS
        )
    )
    metric_value: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_metric", "A family's metric as the profile reports it.", labels=METRIC_LABELS
        )
    )
    metric_lower: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_metric_lower", "Lower bound of the metric's interval.", labels=METRIC_LABELS
        )
    )
    metric_upper: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_metric_upper", "Upper bound of the metric's interval.", labels=METRIC_LABELS
        )
    )
    metric_samples: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_metric_samples", "Samples behind the metric.", labels=METRIC_LABELS
        )
    )
    segment_value: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_segment",
            "A family's main metric over one segment value's predictions.",
            labels=SEGMENT_LABELS,
        )
    )
    segment_lower: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_segment_lower", "Lower bound of the segment metric's interval.", labels=SEGMENT_LABELS
        )
    )
    segment_upper: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_segment_upper", "Upper bound of the segment metric's interval.", labels=SEGMENT_LABELS
        )
    )
    segment_samples: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_segment_samples", "Samples behind the segment metric.", labels=SEGMENT_LABELS
        )
    )
    predictions: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_window_predictions",
            "Predictions in the window (the most any family scored).",
            labels=PROFILE_LABELS,
        )
    )

    alert_evidence: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_alert_evidence",
            "E-value that the axis is below its floor over all time (gateway/sequential.py): at or above 20, "
            "the chance of a false alarm over the stream's whole life is at most 5 %, however often it is read.",
            labels=EVIDENCE_LABELS,
        )
    )

    baseline_evidence: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_alert_baseline_evidence",
            "Evidence that the model's all-time axis is below its pinned baseline's, the baseline's uncertainty "
            "included (gateway/baseline_evidence.py): at or above 20, the chance of a false alarm over the pair's "
            "whole life is at most 5 %, however often it is read.",
            labels=BASELINE_EVIDENCE_LABELS,
        )
    )

    metric_evidence: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_metric_alert_evidence",
            "E-value that a scenario's metric is below its floor (above its ceiling, lower-is-better) over all time "
            "(gateway/metric_evidence.py): at or above 20, at most a 5 % chance of a false alarm over the stream's "
            "whole life, however often it is read.",
            labels=METRIC_EVIDENCE_LABELS,
        )
    )

    metric_baseline_evidence: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_metric_alert_baseline_evidence",
            "Evidence that a scenario's main metric is worse than its pinned baseline's over all time, the "
            "baseline's uncertainty included (gateway/metric_evidence.py): at or above 20, at most a 5 % chance of "
            "a false alarm over the pair's whole life, however often it is read.",
            labels=METRIC_BASELINE_EVIDENCE_LABELS,
        )
    )

    segment_evidence: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_segment_alert_evidence",
            "E-value that a segment cell's main metric is below its floor (above its ceiling, lower-is-better) over "
            "all time (gateway/segment_evidence.py): at or above 20, at most a 5 % chance of a false alarm over the "
            "stream's whole life, however often it is read.",
            labels=SEGMENT_EVIDENCE_LABELS,
        )
    )

    segment_baseline_evidence: GaugeMetricFamily = field(
        default_factory=lambda: GaugeMetricFamily(
            "holistic_quality_segment_alert_baseline_evidence",
            "Evidence that a segment cell's main metric is worse than the pinned baseline's same cell over all "
            "time, the baseline's uncertainty included (gateway/segment_evidence.py): at or above 20, at most a "
            "5 % chance of a false alarm over the pair's whole life, however often it is read.",
            labels=SEGMENT_BASELINE_EVIDENCE_LABELS,
        )
    )

    def families(self) -> list[Metric]:
        return [
            self.axis_score, self.axis_lower, self.axis_upper, self.axis_samples, self.metric_value,
            self.metric_lower, self.metric_upper, self.metric_samples, self.segment_value, self.segment_lower,
            self.segment_upper, self.segment_samples, self.predictions, self.alert_evidence, self.baseline_evidence,
            self.metric_evidence, self.metric_baseline_evidence, self.segment_evidence,
            self.segment_baseline_evidence,
        ]  # fmt: skip

    def add_evidence(self, profile: pp.Profile, tenant: str, floors: Mapping[str, float]) -> None:
        """Per axis with a floor and a score in the all-time profile, the evidence that it is below it."""
        for dim in profile.dimensions:
            name = axis_name(dim)
            if dim.HasField("score") and name in floors and dim.count:
                value = sequential.evidence(dim.count, dim.score, floors[name])
                self.alert_evidence.add_metric([tenant, profile.model, name], value)

    def add_baseline_evidence(self, current: pp.Profile, baseline: pp.Profile, tenant: str) -> None:
        """Per axis both all-time profiles score, the evidence that the current's is below the baseline's."""
        pinned = {axis_name(d): d for d in baseline.dimensions if d.HasField("score") and d.count}
        for dim in current.dimensions:
            name = axis_name(dim)
            if dim.HasField("score") and dim.count and name in pinned:
                base = pinned[name]
                value = baseline_evidence.evidence(dim.count, dim.score, base.count, base.score)
                self.baseline_evidence.add_metric([tenant, current.model, baseline.model, name], value)

    def add_metric_evidence(self, profile: pp.Profile, tenant: str, floors: Mapping[str, float]) -> None:
        """Per scenario metric with a floor that the e-process may read (metric_evidence.py), the evidence
        that the all-time profile's value is below it."""
        for s in metric_evidence.scenario_scores(profile).values():
            floor = metric_evidence.floor_of(floors, s.scenario, s.metric)
            if floor is not None:
                value = metric_evidence.floor_evidence(s, floor)
                self.metric_evidence.add_metric([tenant, profile.model, *s.key], value)

    def add_metric_baseline_evidence(self, current: pp.Profile, baseline: pp.Profile, tenant: str) -> None:
        """Per scenario whose main metric both all-time profiles have (same family, readable by the
        e-process), the evidence that the current's is worse than the baseline's."""
        pinned = metric_evidence.scenario_scores(baseline)
        for key, s in metric_evidence.scenario_scores(current).items():
            base = pinned.get(key)
            if s.main and base is not None and base.main:
                value = metric_evidence.against_baseline(s, base)
                self.metric_baseline_evidence.add_metric([tenant, current.model, baseline.model, *key], value)

    def add_segment_evidence(self, profile: pp.Profile, tenant: str, floors: Mapping[str, float]) -> None:
        """Per segment cell with a floor that the e-process may read, the evidence it is below the floor."""
        for key, value in segment_evidence.floor_series(profile, floors):
            self.segment_evidence.add_metric([tenant, profile.model, *key], value)

    def add_segment_baseline_evidence(self, current: pp.Profile, baseline: pp.Profile, tenant: str) -> None:
        """Per named segment cell both all-time profiles have, the evidence the current's is below the baseline's."""
        for key, value in segment_evidence.baseline_series(current, baseline):
            self.segment_baseline_evidence.add_metric([tenant, current.model, baseline.model, *key], value)

    def add_profile(
        self,
        profile: pp.Profile,
        tenant: str,
        window: str,
        period: str,
        metrics: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """The series of one profile; `metrics` names, per family, the metrics to export (None: each
        family's declared `exported_metrics`)."""
        base = [tenant, profile.model]
        self.predictions.add_metric([*base, window, period], profile.counts.window_predictions)
        for dim in profile.dimensions:
            if not dim.HasField("score"):
                continue
            labels = [*base, axis_name(dim), window, period]
            self.axis_score.add_metric(labels, dim.score)
            self.axis_samples.add_metric(labels, dim.count)
            if dim.HasField("interval"):
                self.axis_lower.add_metric(labels, dim.interval.lower)
                self.axis_upper.add_metric(labels, dim.interval.upper)
        for report in profile.families:
            named = default_metrics(report.family) if metrics is None else metrics.get(report.family, ())
            wanted = set(named)
            for m in picked(report.metrics, wanted):
                labels = [*base, report.family, m.name, window, period]
                self.metric_value.add_metric(labels, m.value)
                self.metric_samples.add_metric(labels, m.count)
                if m.HasField("interval"):
                    self.metric_lower.add_metric(labels, m.interval.lower)
                    self.metric_upper.add_metric(labels, m.interval.upper)
        for b in profile.segments:
            for v in b.values:
                m = v.metric
                value = OTHER_VALUE if v.other else v.value
                better = "lower" if b.lower_is_better else "higher"
                labels = [*base, b.family, b.metric, b.key, value, better, window, period]
                self.segment_value.add_metric(labels, m.value)
                self.segment_samples.add_metric(labels, m.count)
                if m.HasField("interval"):
                    self.segment_lower.add_metric(labels, m.interval.lower)
                    self.segment_upper.add_metric(labels, m.interval.upper)


def picked(metrics: Iterable[pp.Metric], wanted: set[str]) -> Iterable[pp.Metric]:
    seen: set[str] = set()
    for m in metrics:
        if m.name in wanted and m.name not in seen:  # one series per name, whatever a report repeats
            seen.add(m.name)
            yield m


def floor_family(floors: Mapping[str, float]) -> GaugeMetricFamily:
    """The per-axis floors from the settings, so alert rules compare against what the team set."""
    help_text = "The lowest acceptable axis score (HOLISTIC_QUALITY_AXIS_FLOORS)."
    g = GaugeMetricFamily("holistic_quality_axis_floor", help_text, labels=["axis"])
    for axis in sorted(floors):
        g.add_metric([axis], floors[axis])
    return g
