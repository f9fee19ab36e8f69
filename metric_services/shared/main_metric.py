"""A scenario's main metric (HELM's choice per task) and one prediction's score on it.

Shared by the accuracy family (which picks the main metric at fold time) and the families that
need a per-prediction score: robustness and fairness take the worst case of this score over an
instance's perturbations, and group fairness averages it per group. main_metric_evaluation is that
score as the gen_ai.evaluation.result those families send (accuracy for an original, robustness and
fairness for a variant of their kind).
"""

from __future__ import annotations

from holistic.process.evaluation_events import Score
from holistic.settings import Settings
from holistic.stats.names import Fields
from holistic.v1 import prediction_pb2 as pb
from metric_services.shared.generation_metrics import generation_scores
from metric_services.shared.ranking_score import ranking_main_metric, ranking_scores
from metric_services.shared.reference_metrics import BINARY, METRICS, scores

MAIN_METRIC_BY_TASK = {
    pb.TASK_MULTIPLE_CHOICE: "exact_match",
    pb.TASK_CLASSIFICATION: "quasi_exact_match",
    pb.TASK_OPEN_QA: "f1_score",
    pb.TASK_FREE_GENERATION: "f1_score",
    pb.TASK_SUMMARIZATION: "rouge_2",
    # By the scenario's track (shared/ranking_score.py): RR@10 regular, NDCG@10 TREC.
}
DEFAULT_MAIN_METRIC = "quasi_exact_match"
TASK = "task:"  # a scenario's part "task:<n>": its predictions of task n
_INDEX = {name: i for i, name in enumerate(METRICS)}


def main_metric(scenario: str, task: int, settings: Settings) -> str:
    """HOLISTIC_MAIN_METRICS' choice for the scenario, else HELM's choice for the task (for a ranking,
    its track's)."""
    chosen = settings.main_metrics.get(scenario)
    if chosen:
        return chosen
    if task == pb.TASK_RANKING:
        return ranking_main_metric(scenario)
    return MAIN_METRIC_BY_TASK.get(task, DEFAULT_MAIN_METRIC)


class ReferenceScores:
    """One prediction's scores by its references (a ranking's by its judgments), each computed at
    most once: a worst case reads its main metric and the other metrics of its task's set from the
    same values (they scored every prediction twice)."""

    __slots__ = ("_exact", "_generation", "_ranked", "_ranking", "_refs", "p")

    def __init__(self, p: pb.Prediction) -> None:
        self.p = p
        self._refs: tuple[str, ...] | None = None
        self._exact: tuple[float, ...] | None = None
        self._generation: tuple[float, float, float] | None = None
        self._ranking: dict[str, float] | None = None
        self._ranked = False

    @property
    def references(self) -> tuple[str, ...]:
        """A tuple: reference_metrics.scores keys its cache on one (tuple() of a tuple is itself)."""
        if self._refs is None:
            self._refs = tuple(self.p.references)
        return self._refs

    def exact(self) -> tuple[float, ...]:
        """reference_metrics.METRICS, in their order."""
        if self._exact is None:
            self._exact = scores(self.references, self.p.output)
        return self._exact

    def generation(self) -> tuple[float, float, float]:
        """generation_metrics.GENERATION_METRICS (rouge_l, bleu_1, bleu_4), in their order."""
        if self._generation is None:
            self._generation = generation_scores(self.references, self.p.output)
        return self._generation

    def ranking(self) -> dict[str, float] | None:
        """trec_eval's measures of the ranking's run; None without judgments."""
        if not self._ranked:
            self._ranking, self._ranked = ranking_scores(self.p), True
        return self._ranking


def prediction_score(
    p: pb.Prediction, metric: str, references_win: bool = False, by_refs: ReferenceScores | None = None
) -> float | None:
    """The prediction's value of `metric`: the client's `correct` where given (1 or 0), else the
    reference metric over its references; None when neither applies (no references, or a metric
    such as rouge_2 that another family computes). With `references_win` (HELM's behaviour,
    HOLISTIC_REFERENCES_WIN) the references come first and `correct` only scores a prediction
    without them. A ranking scores by its judgments alone (trec_eval's measure of its run), None
    without any (its judgments may come later: the retrieval family joins them, a worst case does not).
    `by_refs`: the prediction's scores where the caller keeps them for other metrics too."""
    if p.task == pb.TASK_RANKING:
        values = by_refs.ranking() if by_refs is not None else ranking_scores(p)
        return None if values is None else values.get(metric)
    i = _INDEX.get(metric)
    by_references = i is not None and bool(p.references)
    if p.HasField("correct") and not (references_win and by_references):
        return 1.0 if p.correct else 0.0
    if not by_references:
        return None
    values = by_refs.exact() if by_refs is not None else scores(p.references, p.output)
    return values[i]  # type: ignore[index]


def majority_task(fields: Fields) -> int:
    """The task most of a scenario's predictions carry, from its "task:<n>" counts (ties: lowest)."""
    tasks = {int(t): v for t, v in fields.marked(TASK).items()}
    return max(tasks, key=lambda t: (tasks[t], -t)) if tasks else pb.TASK_UNSPECIFIED


def main_metric_evaluation(
    p: pb.Prediction, settings: Settings, by_refs: ReferenceScores | None = None
) -> Score | None:
    """The prediction's score on its scenario's main metric, as prediction_score gives it to the statistics;
    a 0/1 outcome (the client's judgement or a binary metric) labelled correct/incorrect. None: unscored."""
    metric = main_metric(p.scenario, p.task, settings)
    value = prediction_score(p, metric, settings.references_win, by_refs)
    if value is None:
        return None
    by_references = metric in METRICS and bool(p.references)
    judged = p.HasField("correct") and not (settings.references_win and by_references)
    label = ("correct" if value == 1.0 else "incorrect") if judged or metric in BINARY else None
    return Score(metric, value, label)
