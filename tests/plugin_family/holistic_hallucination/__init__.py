"""An example metric family from outside the project: are the numbers an output states grounded?

Per prediction, the numbers in the output (digits, with a decimal part) are compared with those in
its input, source and references; an output with fewer than HOLISTIC_HALLUCINATION_MIN_NUMBERS
numbers is not scored. `grounded_numbers` is the share of scored outputs whose every number is
grounded; it is this family's own radar axis, "hallucination" (higher is better, as every axis).
Each scored output's own verdict is its gen_ai.evaluation.result event (`prediction_scores`, optional).
Nothing in the core or the gateway names this family: it is found by its entry point.
"""

from __future__ import annotations

import re
from collections import defaultdict

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from holistic.family import (
    ANY,
    Axis,
    BatchEnvelope,
    Count,
    Dimension,
    EvaluationScore,
    FamilyBase,
    FamilyConfig,
    FamilyFold,
    FamilyReport,
    Folded,
    MetricMetadata,
    MetricSignature,
    Prediction,
    ScenarioPart,
    Settings,
    Stats,
    make_signature,
    prediction_minute,
    proportion,
)

NUMBER = re.compile(r"\d+(?:\.\d+)?")


class HallucinationConfig(FamilyConfig):
    model_config = SettingsConfigDict(env_prefix="HOLISTIC_HALLUCINATION_", extra="ignore", frozen=True)

    min_numbers: int = Field(default=1, ge=1, description="Numbers an output needs to be scored.")


class HallucinationFamily(FamilyBase):
    name = "hallucination"
    version = "1"
    Config = HallucinationConfig
    config: HallucinationConfig
    axis = Axis(
        "hallucination", "Share of outputs whose every number appears in the input, source or references.", order=10
    )
    metrics = (
        MetricMetadata("grounded_numbers", "Grounded numbers", "Share of outputs whose numbers are all grounded."),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        out: dict[int, Stats] = defaultdict(Stats)
        accept_s = envelope.accept_time.seconds
        for p in envelope.predictions:
            st = out[prediction_minute(p.produced_at.seconds, p.produced_at.nanos, accept_s)]
            st.incr(Count("outputs"))
            grounded = self.grounded(p)
            if grounded is None:
                st.incr(Count("unscored"))
                continue
            st.incr(Count("scored", scenario=p.scenario))
            if grounded:
                st.incr(Count("grounded", scenario=p.scenario))
        return dict(out)

    def grounded(self, p: Prediction) -> bool | None:
        """Whether every number of the output is grounded; None with too few numbers to score."""
        numbers = set(NUMBER.findall(p.output))
        if len(numbers) < self.config.min_numbers:
            return None
        return numbers <= set(NUMBER.findall(" ".join([p.input, p.source, *p.references])))

    def prediction_scores(self, p: Prediction, settings: Settings) -> list[EvaluationScore]:
        """The output's verdict, 1 or 0, as compute counts it: what a worker sends as its event."""
        grounded = self.grounded(p)
        if grounded is None:
            return []
        return [EvaluationScore("grounded_numbers", float(grounded), "grounded" if grounded else "ungrounded")]

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        unscored = int(stats.get(Count("unscored"), 0))
        report = FamilyReport(family=self.name, count=int(stats.get(Count("outputs"), 0)), skipped=unscored)
        if unscored:
            report.skipped_reason = "fewer numbers than HOLISTIC_HALLUCINATION_MIN_NUMBERS"
        parts: dict[str, ScenarioPart] = {}
        scored = grounded = 0.0
        for each in stats.find(Count("scored", scenario=ANY)):
            n, k = stats[each], stats.get(Count("grounded", scenario=each.scenario), 0)
            parts[each.scenario] = ScenarioPart(metrics=[proportion("grounded_numbers", self.name, k, n)], count=int(n))
            scored, grounded = scored + n, grounded + k
        dim = Dimension(definition=self.axis.definition)  # type: ignore[union-attr]
        if scored:
            metric = proportion("grounded_numbers", self.name, grounded, scored)
            report.metrics.append(metric)
            dim.score, dim.count = metric.value, metric.count
            dim.interval.CopyFrom(metric.interval)
            dim.metrics.append(metric)
        else:
            dim.absent_reason = "no output with numbers in this window"
        return FamilyFold(report=report, scenarios=parts, dimensions=[dim])

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        return make_signature(
            self.name, self.version, {"numbers": NUMBER.pattern, "min_numbers": self.config.min_numbers}
        )


FAMILY = HallucinationFamily()
