"""Loading the classifier a deployment chose, once per process, behind one small interface."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from holistic.classifiers.model_dir import DEFAULT_MODEL_DIR, ModelDir, load_model_dir
from holistic.cores import available_cores

if TYPE_CHECKING:
    import onnxruntime as ort


@dataclass
class Scores:
    """Per text: one probability per label (rows follow the texts), and whether it was truncated."""

    probs: np.ndarray  # float64 [n, labels]
    truncated: np.ndarray  # bool [n]


class Classifier(Protocol):
    model: ModelDir

    def predict(self, texts: Sequence[str]) -> Scores: ...


class ClassifierChoice(Protocol):
    """What a family that runs a classifier configures (its own settings carry these three)."""

    @property
    def model(self) -> Path | None: ...
    @property
    def threads(self) -> int: ...
    @property
    def batch_size(self) -> int: ...


def resolve_threads(threads: int) -> int:
    """0 means: the cores this process may use (affinity, a container's CPU limit), at most 4 (more
    rarely helps one ORT session here). Replicas sharing a machine without limits: set it to cores / replicas."""
    if threads > 0:
        return threads
    return min(available_cores(), 4)


def session_options(threads: int) -> ort.SessionOptions:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = resolve_threads(threads)
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle ORT threads spin by default, burning the cores the other families' workers need.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def open_classifier(model: ModelDir, threads: int = 0, batch_size: int = 32, engine: str = "auto") -> Classifier:
    """The runtime for a model directory: numpy for the TF-IDF default (engine "onnx" forces ORT)."""
    if model.spec.kind == "tfidf-linear":
        from holistic.classifiers.tfidf_linear import NumpyTfidfLinear, OrtTfidfLinear

        return OrtTfidfLinear(model, threads) if engine == "onnx" else NumpyTfidfLinear(model)
    from holistic.classifiers.transformer import TransformerClassifier

    return TransformerClassifier(model, threads, batch_size)


@lru_cache(maxsize=4)
def _cached(path: str, threads: int, batch_size: int) -> Classifier:
    return open_classifier(load_model_dir(path or None), threads, batch_size)


def _path(choice: ClassifierChoice) -> str:
    return str(choice.model) if choice.model else ""


def classifier_for(choice: ClassifierChoice) -> Classifier:
    """The family's classifier (its model directory, else the bundled default), loaded once."""
    return _cached(_path(choice), choice.threads, choice.batch_size)


@lru_cache(maxsize=4)
def _model_dir(path: str, stamp: tuple[float, ...]) -> ModelDir:
    return load_model_dir(path or None)


def model_for(choice: ClassifierChoice) -> ModelDir:
    """The chosen model directory, validated and hashed, without loading a session; re-hashed when a
    file changes."""
    path = _path(choice)
    root = Path(path) if path else DEFAULT_MODEL_DIR
    stamp = tuple(f.stat().st_mtime for f in sorted(root.iterdir()) if f.is_file()) if root.is_dir() else ()
    return _model_dir(path, stamp)
