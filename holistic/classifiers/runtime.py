"""Loading the classifier a deployment chose, once per process, behind one small interface.

The implementations (tfidf_linear, transformer) stand below this module and import only session.py, so
loading one never imports this module back."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Protocol

from holistic.classifiers.model_dir import DEFAULT_MODEL_DIR, ModelDir, load_model_dir
from holistic.classifiers.session import Classifier, Scores, resolve_threads, session_options

__all__ = ["Classifier", "ClassifierChoice", "Scores", "classifier_for", "model_for", "open_classifier",
           "resolve_threads", "session_options"]  # fmt: skip


class ClassifierChoice(Protocol):
    """What a family that runs a classifier configures (its own settings carry these three)."""

    @property
    def model(self) -> Path | None: ...
    @property
    def threads(self) -> int: ...
    @property
    def batch_size(self) -> int: ...


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
