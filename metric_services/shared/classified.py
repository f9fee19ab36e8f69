"""What the families that run a classifier share: scoring outputs, and the instance-state bounds
they report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import AliasChoices, Field

from holistic.classifiers.runtime import Classifier
from holistic.families import FamilyConfig
from holistic.stats.instances import LATE, OVER_CAP
from holistic.stats.mergeable import Folded
from holistic.stats.metric_values import plain
from holistic.v1.profile_pb2 import Metric


def threshold_field(description: str, *env: str) -> Any:
    """A probability threshold in (0, 1), 0.5 by default (HELM's), read from the first of `env` set."""
    return Field(default=0.5, gt=0, lt=1, description=description, validation_alias=AliasChoices(*env))


class ClassifierConfig(FamilyConfig):
    """The classifier settings of a family that runs one, under the family's own prefix."""

    model: Path | None = Field(
        default=None, description="Model directory (model.onnx, labels.json, ...). Unset: the bundled default."
    )
    threads: int = Field(default=0, ge=0, le=64, description="ORT threads per worker; 0: cores, <= 4.")
    batch_size: int = Field(default=32, ge=1, le=4096, description="Most texts per ORT run (transformers).")


def score_outputs(clf: Classifier, outputs: Sequence[str]) -> tuple[list[np.ndarray | None], int]:
    """Label probabilities per output (None for an empty one), and how many outputs were truncated.

    Each distinct text is scored once: a batch's outputs repeat (a multiple-choice answer, a yes or a
    no, one completion of several perturbed prompts; 62 % of the sample's outputs within a batch of
    500), and a text's score is its own (the classifiers score texts row by row), so its copies share
    its row."""
    rows: list[np.ndarray | None] = [None] * len(outputs)
    unique: dict[str, int] = {}  # text -> its row in the classifier's batch
    where: list[int] = []  # per output: its text's row, -1 for an empty one
    for text in outputs:
        if text.strip():
            where.append(unique.setdefault(text, len(unique)))
        else:
            where.append(-1)
    if not unique:
        return rows, 0
    scores = clf.predict(list(unique))
    probs = scores.probs
    for i, row in enumerate(where):
        if row >= 0:
            rows[i] = probs[row]
    truncated = scores.truncated
    return rows, sum(1 for row in where if row >= 0 and truncated[row]) if truncated.any() else 0


def instance_bounds(family: str, stats: Folded, what: str) -> list[Metric]:
    """The per-instance state's bounds, when they bit: rows left out past HOLISTIC_INSTANCE_CAP, and
    rows older than HOLISTIC_INSTANCE_TTL_S (their partners' state may have expired)."""
    out = []
    for field, name in ((OVER_CAP, f"{what}_past_instance_cap"), (LATE, "rows_later_than_instance_ttl")):
        if stats.num(field):
            out.append(plain(name, family, stats.num(field), stats.num(field)))
    return out
