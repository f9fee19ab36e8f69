"""What every classifier runtime shares: its scores, its interface and its ONNX Runtime session options.

The bottom of holistic/classifiers: the runtimes (tfidf_linear, transformer) import it, and runtime.py,
which picks one, imports them; nothing here imports a runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from holistic.classifiers.model_dir import ModelDir
from holistic.process.cores import available_cores

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
