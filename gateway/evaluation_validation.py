"""The rules of a prediction's evaluations (gen_ai.evaluation.result), and what makes one evaluation-only."""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING

from gateway.request_rules import NAME_RE, NAME_RULE
from holistic.families import registry
from holistic.v1 import prediction_pb2 as pb

if TYPE_CHECKING:
    from gateway.validation import Violations

MAX_LABEL_CHARS = 256


def evaluation_only(p: pb.Prediction) -> bool:
    """Evaluations and no output: scores of a prediction submitted under the same id, before or after."""
    return bool(p.evaluations) and not p.output


def check_evaluations(v: Violations, path: str, p: pb.Prediction, max_entries: int, max_text: int) -> None:
    evaluations = p.evaluations
    if len(evaluations) > max_entries:
        v.add(f"{path}.evaluations", f"has {len(evaluations)} entries; at most {max_entries}")
    seen: set[str] = set()
    for j, e in enumerate(evaluations):
        epath = f"{path}.evaluations[{j}]"
        if not e.name:
            v.add(f"{epath}.name", "is required (the metric, gen_ai.evaluation.name)")
        elif not NAME_RE.fullmatch(e.name):
            v.add(f"{epath}.name", f"must be {NAME_RULE}")
        elif e.name in seen:
            v.add(f"{epath}.name", f"repeats the metric {e.name!r} of an earlier evaluation of this prediction")
        seen.add(e.name)
        if not e.HasField("score"):
            v.add(f"{epath}.score", "is required: a number (gen_ai.evaluation.score.value)")
        elif not math.isfinite(e.score):
            v.add(f"{epath}.score", f"must be a finite number, got {e.score!r}")
        if len(e.label) > MAX_LABEL_CHARS:
            v.add(f"{epath}.label", f"must be at most {MAX_LABEL_CHARS} characters")
        if len(e.explanation.encode("utf-8", "surrogatepass")) > max_text:
            v.add(f"{epath}.explanation", f"is longer than {max_text} bytes")


@cache
def reads_evaluations(family: str) -> bool:
    """Whether a deployed family folds evaluation-only predictions (its `reads_evaluations`); a family not
    installed beside the gateway is not sent them."""
    return registry.is_installed(family) and bool(getattr(registry.load_family(family), "reads_evaluations", False))
