"""Efficiency family: latency and time-to-first-token percentiles, tokens, throughput, objective.

Percentiles come from the core's mergeable DDSketch (holistic/stats/sketches.py, the one any family uses):
every reported quantile is within 1 % of the exact order statistic of the data, whatever the batching.
The relative accuracy is fixed by the family version (changing it would mix incompatible bins).
The efficiency axis is the share of requests whose latency is within
the model's objective (HOLISTIC_EFFICIENCY_LATENCY_OBJECTIVE_S, or per model HOLISTIC_EFFICIENCY_LATENCY_OBJECTIVES),
read from the same bins: only requests within 1 % of the objective can be misclassified.
"""

from __future__ import annotations

import math

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import SettingsConfigDict

from holistic.families import Axis, FamilyBase, FamilyConfig, FamilyFold, MetricMetadata, ScenarioPart
from holistic.families.signature import make_signature
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import mean, plain, proportion
from holistic.stats.names import Fields, key
from holistic.stats.sketches import (
    RELATIVE_ACCURACY,
    bin_keys,
    count_at_most,
    emit_moments,
    emit_sketch,
    quantile_metrics,
)
from holistic.v1.profile_pb2 import (
    DIMENSION_KIND_EFFICIENCY,
    Dimension,
    FamilyReport,
    Metric,
    MetricSignature,
)
from metric_services.efficiency import helm_cell

NAME = "efficiency"
VERSION = "1"
QUANTILES = (0.5, 0.9, 0.99)
LATENCY = "lat"  # a sketch: "<name>|n", "|sum", "|sumsq" and bins "<name>|k:<key>", "<name>|z"
SKETCHES = {LATENCY: "latency", "ttft": "time_to_first_token"}


class _Minute:
    """One minute's values of a batch, binned and summed locally before they become Stats fields."""

    __slots__ = (
        "completion", "gen_s", "gen_tokens", "helm", "lat", "n", "prompt", "t_max", "t_min", "ttft", "untimed",
    )  # fmt: skip

    def __init__(self) -> None:
        self.n = self.untimed = 0
        self.t_min, self.t_max = math.inf, -math.inf
        self.lat: list[tuple[str, float]] = []
        self.ttft: list[float] = []
        self.prompt: list[float] = []
        self.completion: list[float] = []
        self.gen_tokens = self.gen_s = 0.0
        self.helm: helm_cell.Cells = {}

    def add(self, p: object, produced: float) -> None:
        self.n += 1
        self.t_min = min(self.t_min, produced)
        self.t_max = max(self.t_max, produced)
        if not p.HasField("timing"):  # type: ignore[attr-defined]
            self.untimed += 1
            return
        t = p.timing  # type: ignore[attr-defined]
        latency = ttft = None
        if t.HasField("latency"):
            latency = t.latency.seconds + t.latency.nanos * 1e-9
            self.lat.append((p.scenario, latency))  # type: ignore[attr-defined]
        if t.HasField("time_to_first_token"):
            ttft = t.time_to_first_token.seconds + t.time_to_first_token.nanos * 1e-9
            self.ttft.append(ttft)
        prompt = float(t.prompt_tokens) if t.HasField("prompt_tokens") else None
        completion = float(t.completion_tokens) if t.HasField("completion_tokens") else None
        if not p.HasField("perturbation"):  # type: ignore[attr-defined]
            helm_cell.add(self.helm, p.scenario, latency, prompt, completion)  # type: ignore[attr-defined]
        if prompt is not None:
            self.prompt.append(prompt)
        if completion is not None:
            tokens = completion
            self.completion.append(tokens)
            if latency is not None:
                gen = latency - ttft if ttft is not None and ttft < latency else latency
                if gen > 0:
                    self.gen_tokens += tokens
                    self.gen_s += gen

    def emit(self, st: Stats) -> None:
        st.incr("n", self.n)
        st.low("t", self.t_min)
        st.high("t", self.t_max)
        if self.untimed:
            st.incr("untimed", self.untimed)
        if self.lat:
            values = [v for _, v in self.lat]
            keys = bin_keys(values)
            emit_sketch(st, LATENCY, values, keys)
            by_scenario: dict[str, tuple[list[int | None], list[float]]] = {}
            for (scn, v), k in zip(self.lat, keys, strict=True):
                ks, vs = by_scenario.setdefault(scn, ([], []))
                ks.append(k)
                vs.append(v)
            for scn, (ks, vs) in by_scenario.items():
                emit_sketch(st, key(scn, LATENCY), vs, ks)
        if self.ttft:
            emit_sketch(st, "ttft", self.ttft)
        for prefix, values in (("tok_prompt", self.prompt), ("tok_completion", self.completion)):
            if values:
                emit_moments(st, prefix, values)
        helm_cell.emit(st, self.helm)
        if self.gen_s > 0:
            st.add(key("gen", "tokens"), self.gen_tokens)
            st.add(key("gen", "seconds"), self.gen_s)


class EfficiencyConfig(FamilyConfig):
    """HOLISTIC_EFFICIENCY_LATENCY_OBJECTIVE_S and _LATENCY_OBJECTIVES (also read without EFFICIENCY_)."""

    model_config = SettingsConfigDict(env_prefix="HOLISTIC_EFFICIENCY_", extra="ignore", frozen=True)

    latency_objective_s: float = Field(
        default=2.0,
        gt=0,
        description="Default per-request objective.",
        validation_alias=AliasChoices("HOLISTIC_EFFICIENCY_LATENCY_OBJECTIVE_S", "HOLISTIC_LATENCY_OBJECTIVE_S"),
    )
    latency_objectives: dict[str, float] = Field(
        default_factory=dict,
        description='Per model, JSON: {"model-a": 1.5}.',
        validation_alias=AliasChoices("HOLISTIC_EFFICIENCY_LATENCY_OBJECTIVES", "HOLISTIC_LATENCY_OBJECTIVES"),
    )

    @field_validator("latency_objectives", mode="before")
    @classmethod
    def _empty(cls, value: object) -> object:
        return {} if isinstance(value, str) and not value.strip() else value

    def objective_for(self, model: str) -> float:
        """Per stored model name, or its name within its tenant, else the default."""
        if model in self.latency_objectives:
            return self.latency_objectives[model]
        public = model.rpartition("|")[2]
        return self.latency_objectives.get(public, self.latency_objective_s)


class EfficiencyFamily(FamilyBase):
    name = NAME
    exported_metrics = (
        "latency_p50",
        "latency_p99",
        "time_to_first_token_p50",
        "time_to_first_token_p99",
        "output_tokens_per_second",
        "within_latency_objective",
    )  # holistic quality-exporter's default series
    version = VERSION
    Config = EfficiencyConfig
    config: EfficiencyConfig
    reads_text = False  # timings and token counts
    axis = Axis(
        "efficiency",
        "Share of requests with latency within the model's objective.",
        kind=DIMENSION_KIND_EFFICIENCY,
        order=7,
    )
    metrics = (
        MetricMetadata(
            "inference_runtime", "Inference runtime", "HELM's: mean latency of unperturbed requests.", "s", True
        ),
        MetricMetadata("num_*_tokens", "Tokens", "HELM's: mean tokens of unperturbed requests.", "tokens"),
        MetricMetadata("latency_*", "Latency", "Request latency (mean, DDSketch quantiles within 1 %).", "s", True),
        MetricMetadata("time_to_first_token_*", "Time to first token", "Mean and quantiles.", "s", True),
        MetricMetadata("prompt_tokens_*", "Prompt tokens", "Per request (mean) and in all.", "tokens"),
        MetricMetadata("completion_tokens_*", "Completion tokens", "Per request (mean) and in all.", "tokens"),
        MetricMetadata(
            "output_tokens_per_second",
            "Output tokens per second",
            "Completion tokens over generation time.",
            "tokens/s",
        ),
        MetricMetadata(
            "throughput",
            "Throughput",
            "Predictions per second between the first and last produced_at.",
            "predictions/s",
        ),
        MetricMetadata("within_latency_objective", "Within the latency objective", "Share of requests within it."),
        MetricMetadata("latency_objective", "Latency objective", "The model's objective.", "s"),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        accept_s = envelope.accept_time.seconds + envelope.accept_time.nanos * 1e-9
        minutes: dict[int, _Minute] = {}
        for p in envelope.predictions:
            at = p.produced_at
            secs, nanos = at.seconds, at.nanos
            produced = secs + nanos * 1e-9 if (secs or nanos) else accept_s
            minute = int(produced // 60)
            acc = minutes.get(minute)
            if acc is None:
                acc = minutes[minute] = _Minute()
            acc.add(p, produced)
        out: dict[int, Stats] = {}
        for minute, acc in minutes.items():
            acc.emit(st := Stats())
            out[minute] = st
        return out

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        objective = self.config.objective_for(model)
        n = stats.num("n")
        report = FamilyReport(family=NAME, count=int(n))
        untimed = int(stats.num("untimed"))
        if untimed:
            report.skipped = untimed
            report.skipped_reason = "no timing"
        metrics: list[Metric] = []
        for prefix, label in SKETCHES.items():
            metrics.extend(_sketch_metrics(stats.scope(prefix), label))
        for prefix, label in (("tok_prompt", "prompt_tokens"), ("tok_completion", "completion_tokens")):
            c = stats.num(prefix, "n")
            if c:
                s = stats.num(prefix, "sum")
                metrics.append(mean(f"{label}_mean", NAME, c, s, stats.num(prefix, "sumsq"), unit="tokens"))
                metrics.append(plain(f"{label}_total", NAME, s, c, unit="tokens"))
        if stats.num("gen", "seconds") > 0:
            rate = stats.num("gen", "tokens") / stats.num("gen", "seconds")
            metrics.append(plain("output_tokens_per_second", NAME, rate, stats.num("gen", "tokens"), unit="tokens/s"))
        span = stats.num("t", "max") - stats.num("t", "min")
        if n >= 2 and span > 0:
            metrics.append(plain("throughput", NAME, (n - 1) / span, n, unit="predictions/s"))
        within = count_at_most(stats.scope(LATENCY), objective)
        dim = Dimension(
            kind=DIMENSION_KIND_EFFICIENCY,
            definition=f"Share of requests with latency within the objective of {objective:g} s "
            f"(from the sketch: requests within {RELATIVE_ACCURACY:.0%} of the objective may be misplaced).",
        )
        if within is None:
            dim.absent_reason = "no predictions with timing.latency in this window"
        else:
            share = proportion("within_latency_objective", NAME, within[0], within[1])
            metrics.append(share)
            metrics.append(plain("latency_objective", NAME, objective, within[1], unit="s"))
            dim.score = share.value
            dim.count = share.count
            dim.interval.CopyFrom(share.interval)
            dim.metrics.extend(m for m in metrics if m.name.startswith("latency_") or m.name.startswith("within"))
        report.metrics.extend(metrics)

        parts: dict[str, ScenarioPart] = {}
        by_scn = stats.groups()
        for scn in stats.names(having=key(LATENCY, "n")):
            f = by_scn[scn].scope(LATENCY)
            part = ScenarioPart(count=int(f["n"]))
            part.metrics.extend(_sketch_metrics(f, "latency"))
            w = count_at_most(f, objective)
            if w is not None:
                part.metrics.append(proportion("within_latency_objective", NAME, w[0], w[1]))
            parts[scn] = part
        for scn in sorted(s for s, f in by_scn.items() if f.scope(helm_cell.HELM)):
            part = parts.setdefault(scn, ScenarioPart())
            part.metrics.extend(helm_cell.scenario_metrics(by_scn[scn], NAME))
        return FamilyFold(report=report, scenarios=parts, dimensions=[dim])

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        options = {
            "sketch": "ddsketch-logarithmic",
            "relative_accuracy": repr(RELATIVE_ACCURACY),
            "latency_objective_s": repr(self.config.objective_for(model)),
        }
        return make_signature(NAME, VERSION, options)


def _sketch_metrics(fields: Fields, label: str) -> list[Metric]:
    return quantile_metrics(fields, label, family=NAME, quantiles=QUANTILES, unit="s", lower_is_better=True)


FAMILY = EfficiencyFamily()
