"""Accuracy family: HELM's reference metrics per scenario, and the scenario's main metric.

Per unperturbed prediction with references: exact_match, quasi_exact_match, prefix_exact_match,
quasi_prefix_exact_match and f1_score, each the max over references (reference_metrics.py); for open
QA and free generation also rouge_l, bleu_1 and bleu_4 (generation_metrics.py); for classification
the per-class counts of classification_macro_f1 / classification_micro_f1 (classification.py).
A scenario shows, and the family report averages, only the metrics HELM's run specs define for its
task (shared/helm_sets.py), so a model-level mean is over the scenarios that define it.

HELM's run cell is computed over unperturbed instances only (perturbation=None): a perturbed
variant is counted (`perturbed`) and left out here; the robustness and fairness families score it.
A prediction with `correct` set counts with the client's judgement for the scenario's accuracy.
The scenario's main metric follows its
task, HELM's choice per scenario type, unless HOLISTIC_MAIN_METRICS overrides it; it is chosen when
the profile is folded, so an override re-scores history. The accuracy axis is the unweighted mean
over scenarios of their accuracy, as HELM's group cells are means of run means.
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
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.intervals import Moments, mean_var
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import macro_mean, mean, plain, proportion
from holistic.stats.names import Fields, key
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import (
    DIMENSION_KIND_ACCURACY,
    FamilyReport,
    Metric,
    MetricSignature,
)
from metric_services.accuracy.sums import Sums
from metric_services.shared.classification import BOTH, CLASSIFICATION_METRICS, PRED, TRUE, f1_scores
from metric_services.shared.generation_metrics import GENERATION_METRICS
from metric_services.shared.helm_sets import task_metrics
from metric_services.shared.main_metric import main_metric, main_metric_evaluation, majority_task
from metric_services.shared.reference_metrics import BINARY, METRICS

NAME = "accuracy"
VERSION = "2"  # 2: HELM's run cell (unperturbed only), HELM's metric set per task


ACCURACY_DEFINITION = (
    "Unweighted mean over scenarios of each scenario's accuracy: its main metric (HELM's choice per "
    "task: exact_match for multiple choice, quasi_exact_match for classification, f1_score for QA and "
    "free generation, rouge_2 for summarization), or the client's `correct` where given."
)


class AccuracyFamily(FamilyBase):
    name = NAME
    exported_metrics = ("exact_match", "quasi_exact_match", "f1_score")  # holistic quality-exporter's default series
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
        MetricMetadata("rouge_l", "ROUGE-L", "rouge-score's ROUGE-L F (stemmed), best reference (open-ended tasks)."),
        MetricMetadata("bleu_1", "BLEU-1", "nltk sentence BLEU, unigram precision times brevity penalty."),
        MetricMetadata("bleu_4", "BLEU-4", "nltk sentence BLEU with weights (0,0,0,1): 4-gram precision only."),
        MetricMetadata("classification_macro_f1", "Macro-F1", "Mean over classes of each class's F1 (HELM)."),
        MetricMetadata("classification_micro_f1", "Micro-F1", "F1 of all classes' pooled counts (HELM)."),
        MetricMetadata(
            "client_judged_correct", "Client-judged correct", "Share of predictions the client marked correct."
        ),
        MetricMetadata("accuracy", "Accuracy", "The scenario's main metric."),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        accept_s = envelope.accept_time.seconds
        groups: dict[tuple[int, str], Sums] = {}
        for p in envelope.predictions:
            at = p.produced_at
            cell = (prediction_minute(at.seconds, at.nanos, accept_s), p.scenario)
            acc = groups.get(cell)
            if acc is None:
                acc = groups[cell] = Sums()
            acc.add(p)
        out: dict[int, Stats] = defaultdict(Stats)
        for (minute, scn), acc in groups.items():
            acc.emit(out[minute], scn)
        return dict(out)

    def prediction_scores(self, p: pb.Prediction, settings: Settings) -> list[Score]:
        """The prediction's value of its scenario's main metric, as its run cell counts it: none for a
        perturbed variant or one with neither references nor `correct`. A 0/1 outcome is labelled."""
        if p.HasField("perturbation"):
            return []
        score = main_metric_evaluation(p, settings)
        return [] if score is None else [score]

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        parts: dict[str, ScenarioPart] = {}
        per_metric: dict[str, list[Moments]] = defaultdict(list)
        total = unscored = perturbed = 0
        by_scn = stats.groups()
        for scn in stats.names(having="n"):
            f = by_scn[scn]
            n = int(f.get("n", 0))
            total += n
            unscored += int(f.get("unscored", 0))
            perturbed += int(f.get("perturbed", 0))
            task = majority_task(f)
            main = main_metric(scn, task, settings)
            part = ScenarioPart(count=n, task=task, main_metric=main)
            shown = task_metrics(task)
            if main in METRICS and main not in shown:
                shown = (*shown, main)
            for metric, value in _scenario_metrics(f, shown):
                part.metrics.append(value)
                per_metric[metric].append(_part_moments(f, metric, value))
            judged_n, judged_sum = f.num("judged", "n"), f.num("judged", "sum")
            if judged_n:
                part.metrics.append(proportion("client_judged_correct", NAME, judged_sum, judged_n))
            if f.get("perturbed"):
                part.metrics.append(plain("perturbed_predictions", NAME, f["perturbed"], f["perturbed"]))
            part.accuracy = _scenario_accuracy(f, main, settings.references_win)
            parts[scn] = part

        reasons = []
        if unscored:
            reasons.append(f"{unscored} with no references and no client judgement")
        if perturbed:
            reasons.append(
                f"{perturbed} perturbed variants (HELM's run cell is over unperturbed instances; "
                "the robustness and fairness worst cases score them)"
            )
        report = FamilyReport(family=NAME, count=total, skipped=unscored + perturbed, skipped_reason="; ".join(reasons))
        for metric, mv in per_metric.items():
            report.metrics.append(macro_mean(metric, NAME, mv))
        if perturbed:
            report.metrics.append(plain("perturbed_predictions", NAME, perturbed, perturbed))
        return FamilyFold(report=report, scenarios=parts)

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        options = {"normalize": "helm-quac", "f1": "token-set", "references": "max", "strip": "output"}
        if settings.main_metrics:
            options["main_overrides"] = ",".join(f"{k}={v}" for k, v in sorted(settings.main_metrics.items()))
        return make_signature(NAME, VERSION, options)


def _scenario_metrics(f: Fields, shown: tuple[str, ...]) -> list[tuple[str, Metric]]:
    """The scenario's value of each metric its task defines, where it has data for it."""
    out: list[tuple[str, Metric]] = []
    ref_n, gen_n = f.num("ref", "n"), f.num("gen", "n")
    f1s = None
    if any(m in CLASSIFICATION_METRICS for m in shown):
        counts = {kind: dict(f.scope(kind)) for kind in (TRUE, PRED, BOTH)}  # class label -> count
        f1s = f1_scores(counts)
    for metric in shown:
        if metric in METRICS and ref_n:
            s = f.num("ref", metric, "sum")
            ss = s if metric in BINARY else f.num("ref", metric, "sumsq")
            out.append((metric, _mean(metric, ref_n, s, ss, metric in BINARY)))
        elif metric in GENERATION_METRICS and gen_n:
            s, ss = f.num("gen", metric, "sum"), f.num("gen", metric, "sumsq")
            out.append((metric, _mean(metric, gen_n, s, ss, False)))
        elif metric in CLASSIFICATION_METRICS and f1s is not None:
            value = f1s[CLASSIFICATION_METRICS.index(metric)]
            out.append((metric, plain(metric, NAME, value, ref_n)))
    return out


def _part_moments(f: Fields, metric: str, m: Metric) -> Moments:
    """(value, variance of the mean, predictions, a proportion) of one scenario's metric, for the
    interval of the mean over scenarios."""
    if metric in METRICS:
        n = f[key("ref", "n")]
        s = f.num("ref", metric, "sum")
        ss = s if metric in BINARY else f.num("ref", metric, "sumsq")
        return (*mean_var(n, s, ss), n, metric in BINARY)
    if metric in GENERATION_METRICS:
        n, s, ss = f[key("gen", "n")], f.num("gen", metric, "sum"), f.num("gen", metric, "sumsq")
        return (*mean_var(n, s, ss), n, False)
    return m.value, float("inf"), m.count, False  # a corpus-level F1: no per-instance variance


def _mean(metric: str, n: float, s: float, ss: float, binary: bool) -> Metric:
    if binary:
        return proportion(metric, NAME, s, n)
    return mean(metric, NAME, n, s, ss, clip=(0.0, 1.0))


def _scenario_accuracy(f: Fields, main: str, references_win: bool) -> ScenarioAccuracy | None:
    """The scenario's main metric by reference matching, plus the client's judgements: by default a
    judgement wins over the references; with HOLISTIC_REFERENCES_WIN (HELM) only predictions without
    references count by their judgement."""
    by_refs = main in METRICS
    refs_part, judged_part = ("ref", "judged_norefs") if references_win else ("unjudged", "judged")
    ref_n = f.num(refs_part, "n") if by_refs else 0.0
    judged_n, judged_sum = f.num(judged_part, "n"), f.num(judged_part, "sum")
    n = ref_n + judged_n
    if not n:
        return None
    s = (f.num(refs_part, main, "sum") if ref_n else 0.0) + judged_sum
    ss = f.num(refs_part, main, "sum" if main in BINARY else "sumsq") if ref_n else 0.0
    ss += judged_sum
    binary = main in BINARY or not ref_n  # client judgements alone are 0/1
    return ScenarioAccuracy(
        metric=_mean("accuracy", n, s, ss, binary),
        source=main if ref_n else "client_judged",
        variance=mean_var(n, s, ss)[1],
        sources={"references": int(ref_n), "client": int(judged_n)},
    )


FAMILY = AccuracyFamily()
