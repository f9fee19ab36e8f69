"""A worker's gen_ai.evaluation.result events (HOLISTIC_OTLP_EVAL_*, opt-in): which predictions, what each says,
and the sender they go out through once their batch is merged."""

from __future__ import annotations

import fnmatch
import logging
from typing import Any

from holistic.families import Family, sampling
from holistic.process import evaluation_events
from holistic.settings import Settings
from holistic.tenancy.tenants import split_model
from holistic.v1 import prediction_pb2 as pb

log = logging.getLogger("holistic.worker")


class EvaluationOut:
    def __init__(self, family: Family, settings: Settings, rates: sampling.Rates) -> None:
        self.family, self.settings, self.rates = family, settings, rates
        self.sender = evaluation_events.sender(settings, f"holistic-{family.name}")
        self.explanations = {md.name: f"{md.display_name}: {md.description}" for md in family.metrics}
        self._explained: dict[str, str] = {}

    def explanation(self, metric: str) -> str:
        """The metric's declared description; a pattern's (`rouge_*`) for a name it matches; else none."""
        found = self._explained.get(metric)
        if found is None:
            found = self.explanations.get(metric) or next(
                (text for name, text in self.explanations.items() if "*" in name and fnmatch.fnmatchcase(metric, name)),
                "",
            )
            self._explained[metric] = found
        return found

    @classmethod
    def of(cls, family: Family, settings: Settings, rates: sampling.Rates) -> EvaluationOut | None:
        """None unless an endpoint is set and the family scores single predictions (`prediction_scores`)."""
        if settings.otlp_eval_endpoint and getattr(family, "prediction_scores", None) is not None:
            return cls(family, settings, rates)
        return None

    def records(self, envelope: Any, model: str, accept_s: float) -> list[Any]:
        """The events of the batch's predictions in the evaluation sample (evaluation_events.in_sample: a retry
        or another replica picks the same ones) that the family's own sample scored: its per-prediction scores.
        A failure here never fails the batch: a prediction whose scoring raised gets one event named by the
        family with error.type (the exception's class), logged."""
        rate = self.settings.otlp_eval_sample_rate
        if rate <= 0:
            return []
        tenant, public = split_model(model)
        out: list[Any] = []
        try:
            for p in envelope.predictions:
                if not evaluation_events.in_sample(model, p.scenario, p.id, rate):
                    continue
                if not sampling.in_sample(p, envelope.model or p.model, self.rates.of(p.scenario)):
                    continue  # not scored: this family's own sample (HOLISTIC_<FAMILY>_SAMPLE_RATE) left it out
                at = p.produced_at
                time_ns = at.seconds * 1_000_000_000 + at.nanos if at.seconds else int(accept_s * 1e9)
                context = {
                    "holistic.model": public, "holistic.tenant": tenant, "holistic.scenario": p.scenario,
                    "holistic.task": pb.Task.Name(p.task).removeprefix("TASK_").lower(),
                    "holistic.family": self.family.name,
                }  # fmt: skip
                if p.HasField("perturbation"):  # a variant's event (robustness, fairness): which one
                    context["holistic.perturbation"] = p.perturbation.name
                for score in self._scores(p, envelope.batch_id):
                    out.append(
                        evaluation_events.record(
                            score,
                            explanation=self.explanation(score.name),
                            response_id=p.id,
                            attributes=context,
                            time_ns=time_ns,
                        )
                    )
        except Exception:
            log.exception("%s: evaluation events of batch %s left out", self.family.name, envelope.batch_id)
            return []
        return out

    def _scores(self, p: Any, batch_id: str) -> list[evaluation_events.Score]:
        try:
            return list(self.family.prediction_scores(p, self.settings))  # type: ignore[attr-defined]
        except Exception as exc:  # the family could not score it: the conventions' failed evaluation
            log.warning("%s: prediction %s of batch %s not scored for its event: %s", self.family.name, p.id,
                        batch_id, type(exc).__name__)  # fmt: skip  # the class only: a message may quote the text
            return [evaluation_events.Score(self.family.name, None, error_type=type(exc).__qualname__)]

    def offer(self, records: list[Any]) -> None:
        for rec in records:
            self.sender.offer(rec)

    def close(self) -> None:
        self.sender.close()
