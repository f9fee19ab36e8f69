"""OpenTelemetry's `gen_ai.evaluation.result` event -> an evaluation-only Prediction, or why it cannot be one.

The event (a log record named so, or a span event) carries `gen_ai.evaluation.name` (the metric),
`gen_ai.evaluation.score.value` (a double), `gen_ai.evaluation.score.label`,
`gen_ai.evaluation.explanation`, `gen_ai.response.id` and, when the evaluation itself failed,
`error.type`. It becomes a prediction with no output and one Evaluation, which the gateway sends to
the evaluations family: the score joins the prediction its id names.

Which prediction: `holistic.id` on the event; else the span it is parented to (a span event's span, a
log record's span context), whose prediction id is the span's `holistic.id` or `<trace id>-<span id>`,
the id the receiver gives that span; else `gen_ai.response.id` (the id a client submitted its
prediction under). The model and scenario come the same way as a span's (`holistic.*` on the event,
the span or the resource; then `gen_ai.response.model` / `gen_ai.request.model`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from holistic.v1 import prediction_pb2 as pb
from holistic_client.otlp.mapping import TASKS, Defaults, Unusable

EVALUATION = "gen_ai.evaluation.result"
# A label without a score is read as 1 or 0 when it is one of these (the conventions' examples, and kin).
PASSING = frozenset({"pass", "passed", "correct", "relevant", "true", "yes", "good"})
FAILING = frozenset({"fail", "failed", "incorrect", "not_relevant", "irrelevant", "false", "no", "bad"})


def to_evaluation(
    attrs: Mapping[str, Any],
    context: Mapping[str, Any],
    defaults: Defaults,
    span_id: str | None,
    time_ns: int,
) -> pb.Prediction:
    """The event's evaluation-only prediction. `attrs`: the event's attributes; `context`: what it inherits
    (the resource's `holistic.*`, then its span's attributes); `span_id`: `<trace id>-<span id>` of the
    span it is parented to, if any. Unusable with the reason otherwise."""
    merged = {**context, **attrs}
    name = attrs.get("gen_ai.evaluation.name")
    if not isinstance(name, str) or not name:
        raise Unusable("evaluation_no_name")
    if attrs.get("error.type"):
        raise Unusable("evaluation_error")  # the evaluator failed: there is no score to count
    evaluation = pb.Evaluation(name=name, score=_score(attrs))
    label, explanation = attrs.get("gen_ai.evaluation.score.label"), attrs.get("gen_ai.evaluation.explanation")
    if isinstance(label, str):
        evaluation.label = label
    if isinstance(explanation, str):
        evaluation.explanation = explanation
    pid = attrs.get("holistic.id") or (context.get("holistic.id") if span_id else None) or span_id
    pid = pid or attrs.get("gen_ai.response.id")
    if not pid:
        raise Unusable("evaluation_no_response_id")
    model = merged.get("holistic.model") or merged.get("gen_ai.response.model") or merged.get("gen_ai.request.model")
    if not isinstance(model, str) or not model:
        raise Unusable("evaluation_no_model")
    p = pb.Prediction(id=str(pid), model=model, scenario=str(merged.get("holistic.scenario") or defaults.scenario))
    task = str(merged.get("holistic.task") or "").lower().removeprefix("task_")
    p.task = TASKS.get(task, defaults.task)  # type: ignore[assignment]  # unused by the family: never a reason
    if time_ns:
        p.produced_at.FromNanoseconds(time_ns)
    p.evaluations.append(evaluation)
    return p


def _score(attrs: Mapping[str, Any]) -> float:
    """The score value (a double; an int is one too), else 1 or 0 for a pass/fail-like label."""
    raw = attrs.get("gen_ai.evaluation.score.value")
    if raw is None:
        label = str(attrs.get("gen_ai.evaluation.score.label", "")).strip().lower()
        if label in PASSING:
            return 1.0
        if label in FAILING:
            return 0.0
        raise Unusable("evaluation_no_score")
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise Unusable("evaluation_score_not_a_number")
    return float(raw)
