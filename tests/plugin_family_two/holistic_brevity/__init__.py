"""A second example family from outside the project: is an output brief?

`short_outputs` is the share of outputs of at most HOLISTIC_BREVITY_MAX_WORDS words; it is this
family's own radar axis, "brevity". It exports `short_outputs` and `words_mean` to Prometheus
(`exported_metrics`), the second only so that a test sees a declared choice honoured.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from holistic.family import (
    Axis,
    BatchEnvelope,
    Dimension,
    FamilyBase,
    FamilyConfig,
    FamilyFold,
    FamilyReport,
    Folded,
    Metric,
    MetricMetadata,
    MetricSignature,
    Settings,
    Stats,
    make_signature,
    prediction_minute,
    proportion,
)


class BrevityConfig(FamilyConfig):
    model_config = SettingsConfigDict(env_prefix="HOLISTIC_BREVITY_", extra="ignore", frozen=True)

    max_words: int = Field(default=3, ge=1, description="Words an output may have to count as short.")


class BrevityFamily(FamilyBase):
    name = "brevity"
    version = "1"
    Config = BrevityConfig
    config: BrevityConfig
    axis = Axis("brevity", "Share of outputs of at most HOLISTIC_BREVITY_MAX_WORDS words.", order=11)
    metrics = (
        MetricMetadata("short_outputs", "Short outputs", "Share of outputs of at most a few words."),
        MetricMetadata("words_mean", "Words", "Mean words per output.", unit="words"),
        MetricMetadata("words_total", "Words in all", "Words over all outputs.", unit="words"),
    )
    exported_metrics = ("short_outputs", "words_mean")

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        out: dict[int, Stats] = defaultdict(Stats)
        accept_s = envelope.accept_time.seconds
        for p in envelope.predictions:
            st = out[prediction_minute(p.produced_at.seconds, p.produced_at.nanos, accept_s)]
            words = len(p.output.split())
            st.incr("n")
            st.incr("words", words)
            if words <= self.config.max_words:
                st.incr("short")
        return dict(out)

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        n, words = stats.num("n"), stats.num("words")
        report = FamilyReport(family=self.name, count=int(n))
        dim = Dimension(definition=self.axis.definition)  # type: ignore[union-attr]
        if n:
            metric = proportion("short_outputs", self.name, stats.num("short"), n)
            report.metrics.extend([
                metric,
                Metric(name="words_mean", family=self.name, value=words / n, count=int(n)),
                Metric(name="words_total", family=self.name, value=words, count=int(n)),
            ])  # fmt: skip
            dim.score, dim.count = metric.value, metric.count
            dim.interval.CopyFrom(metric.interval)
            dim.metrics.append(metric)
        else:
            dim.absent_reason = "no output in this window"
        return FamilyFold(report=report, dimensions=[dim])

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        return make_signature(self.name, self.version, {"max_words": self.config.max_words})


FAMILY = BrevityFamily()
