"""Evaluations family (client and judge scores): the evaluations a client or an external judge sends for predictions.

An evaluation (Prediction.evaluations; OpenTelemetry's gen_ai.evaluation.result through `holistic
otlp-receiver`) is a named metric's score of one prediction. It comes with the prediction, or later,
in an evaluation-only prediction (no output) under the prediction's id; the gateway sends batches of
evaluation-only predictions to this family alone, so they count in no other. Each evaluation counts
once in its metric's mean, for the scenario it names, at the minute it was produced: an evaluation
of an id never submitted, or submitted under another scenario, still counts, as a score of that
scenario (nothing accepted is dropped). Per scenario and metric: the mean with its normal 95 %
interval; per metric over the model: the unweighted mean over scenarios (HELM's group cells), with
its propagated interval. Labels and explanations are kept on the stream, not folded. No radar axis:
a client's metric has no known scale or direction.
"""

from __future__ import annotations

import math
from collections import defaultdict

from holistic.family import (
    BatchEnvelope,
    FamilyBase,
    FamilyFold,
    FamilyReport,
    Folded,
    MetricMetadata,
    MetricSignature,
    ScenarioPart,
    Settings,
    Stats,
    key,
    make_signature,
    prediction_minute,
)
from holistic.stats.intervals import mean_var
from holistic.stats.metric_values import macro_mean, mean

NAME = "evaluations"
UNBOUNDED = (-math.inf, math.inf)  # a client's metric has its own scale
SCENARIO = "scn"  # "scn|<scenario>|<metric>|n" (sum, sumsq): a scenario's evaluations of one metric


class EvaluationsFamily(FamilyBase):
    name = NAME
    version = "1"
    reads_text = False
    samples = True  # every metric is a mean over evaluations
    reads_evaluations = True  # the gateway sends it the batches of evaluation-only predictions
    metrics = (
        MetricMetadata(
            "*", "Client score", "Mean of the scores a client or judge sent for this metric (gen_ai.evaluation.result)."
        ),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        out: dict[int, Stats] = defaultdict(Stats)
        accept_s = envelope.accept_time.seconds
        for p in envelope.predictions:
            st = out[prediction_minute(p.produced_at.seconds, p.produced_at.nanos, accept_s)]
            st.incr("n")  # every prediction it applied, as every family counts
            if not p.evaluations:
                st.incr("unscored")
                continue
            for e in p.evaluations:
                st.incr(key(SCENARIO, p.scenario, e.name, "n"))
                st.add(key(SCENARIO, p.scenario, e.name, "sum"), e.score)
                st.add(key(SCENARIO, p.scenario, e.name, "sumsq"), e.score * e.score)
        return dict(out)

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        unscored = int(stats.num("unscored"))
        report = FamilyReport(family=self.name, count=int(stats.num("n")), skipped=unscored)
        if unscored:
            report.skipped_reason = "no evaluations (Prediction.evaluations)"
        parts: dict[str, ScenarioPart] = {}
        per_metric: dict[str, list[tuple[float, float, float, bool]]] = defaultdict(list)
        for scn, f in sorted(stats.groups(SCENARIO).items()):
            part = parts[scn] = ScenarioPart()
            for metric, g in sorted(f.groups().items()):
                n, total, sumsq = g.num("n"), g.num("sum"), g.num("sumsq")
                if not n:
                    continue
                part.metrics.append(mean(metric, self.name, n, total, sumsq))
                part.count = max(part.count, int(n))
                value, var = mean_var(n, total, sumsq)
                per_metric[metric].append((value, var, n, False))
        for metric, moments in sorted(per_metric.items()):
            report.metrics.append(macro_mean(metric, self.name, moments, clip=UNBOUNDED))
        return FamilyFold(report=report, scenarios=parts)

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        return make_signature(self.name, self.version, {})


FAMILY = EvaluationsFamily()
