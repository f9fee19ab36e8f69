"""Accuracy family: HELM's reference metrics per scenario, and the scenario's main metric.

Per prediction with references: exact_match, quasi_exact_match, prefix_exact_match,
quasi_prefix_exact_match and f1_score, each the max over references (reference_metrics.py).
A prediction with `correct` set counts with the client's judgement for the scenario's accuracy.
The scenario's main metric follows its task, HELM's choice per scenario type, unless
HOLISTIC_MAIN_METRICS overrides it; it is chosen when the profile is folded, so an override
re-scores history. The accuracy axis is the unweighted mean over scenarios of their accuracy,
as HELM's group cells are means of run means.
"""

from __future__ import annotations

from collections import defaultdict

from holistic.families import (
    Axis,
    FamilyBase,
    FamilyFold,
    MetricMetadata,
    ScenarioAccuracy,
    ScenarioPart,
    prediction_minute,
)
from holistic.intervals import mean_var
from holistic.metric_values import macro_mean, mean, proportion
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.signature import make_signature
from holistic.stats import Folded, Stats
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import (
    DIMENSION_KIND_ACCURACY,
    FamilyReport,
    Metric,
    MetricSignature,
)
from metric_services.shared.main_metric import main_metric, majority_task
from metric_services.shared.reference_metrics import BINARY, METRICS, scores

NAME = "accuracy"
VERSION = "1"


ACCURACY_DEFINITION = (
    "Unweighted mean over scenarios of each scenario's accuracy: its main metric (HELM's choice per "
    "task: exact_match for multiple choice, quasi_exact_match for classification, f1_score for QA and "
    "free generation, rouge_2 for summarization), or the client's `correct` where given."
)


class AccuracyFamily(FamilyBase):
    name = NAME
    version = VERSION
    # The profile computes this axis itself from every family's scenario candidates (main_metrics).
    axis = Axis("accuracy", ACCURACY_DEFINITION, kind=DIMENSION_KIND_ACCURACY, order=1)
    main_metrics = tuple(METRICS)
    metrics = (
        MetricMetadata("exact_match", "Exact match", "Output equals a reference exactly (after stripping)."),
        MetricMetadata(
            "quasi_exact_match", "Quasi-exact match", "Equal after HELM's normalization (case, punctuation, articles)."
        ),
        MetricMetadata("prefix_exact_match", "Prefix exact match", "Output starts with a reference."),
        MetricMetadata(
            "quasi_prefix_exact_match",
            "Quasi-prefix exact match",
            "Normalized output starts with a normalized reference.",
        ),
        MetricMetadata("f1_score", "F1", "Token-set F1 against the best reference (HELM's)."),
        MetricMetadata(
            "client_judged_correct", "Client-judged correct", "Share of predictions the client marked correct."
        ),
        MetricMetadata("accuracy", "Accuracy", "The scenario's main metric."),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        accept_s = envelope.accept_time.seconds
        groups: dict[tuple[int, str], _Sums] = {}
        for p in envelope.predictions:
            at = p.produced_at
            key = (prediction_minute(at.seconds, at.nanos, accept_s), p.scenario)
            acc = groups.get(key)
            if acc is None:
                acc = groups[key] = _Sums()
            acc.add(p)
        out: dict[int, Stats] = defaultdict(Stats)
        for (minute, scn), acc in groups.items():
            acc.emit(out[minute], scn)
        return dict(out)

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        scenarios = sorted({k.split("|", 1)[0] for k in stats if k.endswith("|n") and k.count("|") == 1})
        parts: dict[str, ScenarioPart] = {}
        per_metric: dict[str, list[tuple[float, float, float, bool]]] = defaultdict(list)
        total = unscored = 0
        for scn in scenarios:
            f = stats.with_prefix(scn + "|")
            n = int(f.get("n", 0))
            total += n
            unscored += int(f.get("unscored", 0))
            task = majority_task(f)
            main = main_metric(scn, task, settings)
            part = ScenarioPart(count=n, task=task, main_metric=main)
            ref_n = f.get("ref|n", 0.0)
            for metric in METRICS:
                if ref_n:
                    s = f.get(f"ref|{metric}|sum", 0.0)
                    ss = s if metric in BINARY else f.get(f"ref|{metric}|sumsq", 0.0)
                    part.metrics.append(_mean(metric, ref_n, s, ss, metric in BINARY))
                    per_metric[metric].append((*mean_var(ref_n, s, ss), ref_n, metric in BINARY))
            judged_n, judged_sum = f.get("judged|n", 0.0), f.get("judged|sum", 0.0)
            if judged_n:
                part.metrics.append(proportion("client_judged_correct", NAME, judged_sum, judged_n))
            part.accuracy = _scenario_accuracy(f, main, judged_n, judged_sum)
            parts[scn] = part

        report = FamilyReport(
            family=NAME,
            count=total,
            skipped=unscored,
            skipped_reason="no references and no client judgement" if unscored else "",
        )
        for metric, mv in per_metric.items():
            report.metrics.append(macro_mean(metric, NAME, mv))
        return FamilyFold(report=report, scenarios=parts)

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        options = {"normalize": "helm-quac", "f1": "token-set", "references": "max", "strip": "output"}
        if settings.main_metrics:
            options["main_overrides"] = ",".join(f"{k}={v}" for k, v in sorted(settings.main_metrics.items()))
        return make_signature(NAME, VERSION, options)


class _Sums:
    """One (minute, scenario)'s sums, added up locally before they become Stats fields."""

    __slots__ = ("judged_n", "judged_sum", "n", "ref", "ref_n", "tasks", "unjudged", "unjudged_n", "unscored")

    def __init__(self) -> None:
        self.n = self.ref_n = self.unjudged_n = self.judged_n = self.judged_sum = self.unscored = 0
        self.tasks: dict[int, int] = {}
        self.ref = [0.0] * 6  # the five METRICS, then f1 squared
        self.unjudged = [0.0] * 6

    def add(self, p: pb.Prediction) -> None:
        self.n += 1
        self.tasks[p.task] = self.tasks.get(p.task, 0) + 1
        refs = p.references
        judged = p.HasField("correct")
        if refs:
            values = scores(list(refs), p.output)
            self.ref_n += 1
            ref = self.ref
            for i, v in enumerate(values):
                ref[i] += v
            ref[5] += values[4] * values[4]
            if not judged:
                self.unjudged_n += 1
                unj = self.unjudged
                for i, v in enumerate(values):
                    unj[i] += v
                unj[5] += values[4] * values[4]
        if judged:
            self.judged_n += 1
            self.judged_sum += 1 if p.correct else 0
        elif not refs:
            self.unscored += 1

    def emit(self, st: Stats, scn: str) -> None:
        st.incr(f"{scn}|n", self.n)
        for task, count in self.tasks.items():
            st.incr(f"{scn}|task:{task}", count)
        for part, n, sums in (("ref", self.ref_n, self.ref), ("unjudged", self.unjudged_n, self.unjudged)):
            if n:
                st.incr(f"{scn}|{part}|n", n)
                for metric, value in zip(METRICS, sums, strict=False):
                    if metric in BINARY:  # counts of 0/1 outcomes: exact integers, and cheaper in Redis
                        st.incr(f"{scn}|{part}|{metric}|sum", round(value))
                    else:
                        st.add(f"{scn}|{part}|{metric}|sum", value)
                st.add(f"{scn}|{part}|f1_score|sumsq", sums[5])
        if self.judged_n:
            st.incr(f"{scn}|judged|n", self.judged_n)
            st.incr(f"{scn}|judged|sum", self.judged_sum)
        if self.unscored:
            st.incr(f"{scn}|unscored", self.unscored)


def _mean(metric: str, n: float, s: float, ss: float, binary: bool) -> Metric:
    if binary:
        return proportion(metric, NAME, s, n)
    return mean(metric, NAME, n, s, ss, clip=(0.0, 1.0))


def _sumsq_of(f: dict[str, float], main: str, judged_sum: float) -> float:
    ss = f.get(f"unjudged|{main}|sum", 0.0) if main in BINARY else f.get(f"unjudged|{main}|sumsq", 0.0)
    return ss + judged_sum


def _scenario_accuracy(f: dict[str, float], main: str, judged_n: float, judged_sum: float) -> ScenarioAccuracy | None:
    """The scenario's main metric over unjudged predictions, plus the client's judgements."""
    unjudged_n = f.get("unjudged|n", 0.0) if main in METRICS else 0.0
    n = unjudged_n + judged_n
    if not n:
        return None
    s = (f.get(f"unjudged|{main}|sum", 0.0) if unjudged_n else 0.0) + judged_sum
    ss = _sumsq_of(f, main, judged_sum)
    binary = main in BINARY or not unjudged_n  # client judgements alone are 0/1
    return ScenarioAccuracy(
        metric=_mean("accuracy", n, s, ss, binary),
        source=main if unjudged_n else "client_judged",
        variance=mean_var(n, s, ss)[1],
    )


FAMILY = AccuracyFamily()
