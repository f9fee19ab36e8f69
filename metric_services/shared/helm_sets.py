"""Which metrics HELM's run specs compute for each kind of scenario (crfm-helm 0.5.16
common_metric_specs.py and classic_run_specs.py), with HELM's names. A scenario shows, and a
model-level mean averages, a metric only where the scenario's task defines it.

- multiple choice (MMLU, HellaSwag, ...): get_exact_match_metric_specs
- classification (IMDB, RAFT, CivilComments): exact-match specs + get_classification_metric_specs
- open QA and free generation: get_open_ended_generation_metric_specs
- summarization (CNN/DM, XSum): SummarizationMetric's ROUGE (the summarization family)
"""

from __future__ import annotations

from holistic.v1 import prediction_pb2 as pb

EXACT_MATCH_SET = ("exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match")
CLASSIFICATION_SET = (*EXACT_MATCH_SET, "classification_macro_f1", "classification_micro_f1")
OPEN_ENDED_SET = ("exact_match", "quasi_exact_match", "f1_score", "rouge_l", "bleu_1", "bleu_4")
SUMMARIZATION_SET = ("rouge_1", "rouge_2", "rouge_l")

TASK_METRICS: dict[int, tuple[str, ...]] = {
    pb.TASK_UNSPECIFIED: EXACT_MATCH_SET,
    pb.TASK_MULTIPLE_CHOICE: EXACT_MATCH_SET,
    pb.TASK_CLASSIFICATION: CLASSIFICATION_SET,
    pb.TASK_OPEN_QA: OPEN_ENDED_SET,
    pb.TASK_FREE_GENERATION: OPEN_ENDED_SET,
    pb.TASK_SUMMARIZATION: SUMMARIZATION_SET,
}
GENERATION_TASKS = frozenset((pb.TASK_OPEN_QA, pb.TASK_FREE_GENERATION))


def task_metrics(task: int) -> tuple[str, ...]:
    """HELM's metric names for a task (the exact-match set for an unknown one)."""
    return TASK_METRICS.get(task, EXACT_MATCH_SET)
