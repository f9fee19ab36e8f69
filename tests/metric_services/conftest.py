"""Fixtures for the classifier families: a table classifier whose scores the test states."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from holistic.classifiers.model_dir import LabelSpec, ModelDir
from holistic.classifiers.runtime import Scores


@dataclass
class TableClassifier:
    """Scores looked up by text: the metric arithmetic is then checkable by hand."""

    table: dict[str, list[float]]
    model: ModelDir

    def predict(self, texts):
        return Scores(np.array([self.table[t] for t in texts]).reshape(len(texts), -1), np.zeros(len(texts), bool))


def table_classifier(table, labels=("toxicity",), identity=()):
    spec = LabelSpec(name="table", kind="tfidf-linear", labels=list(labels), primary=labels[0],
                     identity_labels=list(identity), apply="none", output="p")  # fmt: skip
    return TableClassifier(table, ModelDir(path=None, spec=spec, files={}, sha256="f" * 64))  # type: ignore[arg-type]


@pytest.fixture
def use_table(monkeypatch):
    def install(table, **kwargs):
        clf = table_classifier(table, **kwargs)
        for module in ("metric_services.toxicity", "metric_services.bias"):
            monkeypatch.setattr(f"{module}.classifier_for", lambda settings: clf)
            monkeypatch.setattr(f"{module}.model_for", lambda settings: clf.model)
        return clf

    return install
