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
from holistic.instances import LATE, OVER_CAP
from holistic.metric_values import plain
from holistic.stats import Folded
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
    """Label probabilities per output (None for an empty one), and how many were truncated."""
    keep = [i for i, text in enumerate(outputs) if text.strip()]
    rows: list[np.ndarray | None] = [None] * len(outputs)
    if not keep:
        return rows, 0
    scores = clf.predict([outputs[i] for i in keep])
    for row, i in enumerate(keep):
        rows[i] = scores.probs[row]
    return rows, int(scores.truncated.sum())


def instance_bounds(family: str, stats: Folded, what: str) -> list[Metric]:
    """The per-instance state's bounds, when they bit: rows left out past HOLISTIC_INSTANCE_CAP, and
    rows older than HOLISTIC_INSTANCE_TTL_S (their partners' state may have expired)."""
    out = []
    for field, name in ((OVER_CAP, f"{what}_past_instance_cap"), (LATE, "rows_later_than_instance_ttl")):
        if stats.num(field):
            out.append(plain(name, family, stats.num(field), stats.num(field)))
    return out
