"""The model contract: a directory with model.onnx, its tokenizer (or an in-graph featurizer), labels.json.

Loading validates the directory and fails with a message naming the file and the problem. The model's
identity is one sha256 over the files that decide its scores (the manifest below), stamped into every
metric signature and shown by `holistic models show`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from holistic.errors import ConfigError

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "data" / "models" / "profanity"
MODEL_FILE = "model.onnx"
LABELS_FILE = "labels.json"
TOKENIZER_FILE = "tokenizer.json"
FORMAT = 1


class ModelError(ConfigError):
    """A model directory that cannot be used; the worker stops with this message."""


class LabelSpec(BaseModel):
    """labels.json: what the model's outputs mean and how to turn them into probabilities."""

    model_config = ConfigDict(extra="allow", frozen=True)

    format: int = FORMAT
    name: str = Field(min_length=1)
    # "tfidf-linear": the featurizer is inside the graph (string input); "transformer": tokenizer.json + ids.
    kind: Literal["tfidf-linear", "transformer"]
    labels: list[str] = Field(min_length=1)
    # The label whose probability is "toxicity" for toxic_frac and the toxicity axis.
    primary: str
    # Labels that say which identity a text mentions (Detoxify unbiased: male, female, ...).
    identity_labels: list[str] = Field(default_factory=list)
    # "none": the graph outputs probabilities; "sigmoid": independent labels; "softmax": one of the labels.
    apply: Literal["none", "sigmoid", "softmax"]
    output: str = Field(min_length=1, description="graph output holding the scores")
    output_columns: list[int] | None = Field(default=None, description="columns of output, one per label")
    max_length: int | None = Field(default=None, ge=1, description="tokens; None: the whole text is read")
    inputs: list[str] = Field(default_factory=list)
    pad_id: int = 0
    detects: str = ""
    quantization: str = "none"

    @model_validator(mode="after")
    def _consistent(self) -> LabelSpec:
        if self.format != FORMAT:
            raise ValueError(f"format {self.format} is not {FORMAT}")
        if self.primary not in self.labels:
            raise ValueError(f"primary label {self.primary!r} is not one of labels {self.labels}")
        missing = [lb for lb in self.identity_labels if lb not in self.labels]
        if missing:
            raise ValueError(f"identity_labels {missing} are not in labels")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("labels repeat")
        if self.output_columns is not None and len(self.output_columns) != len(self.labels):
            raise ValueError("output_columns must name one column per label")
        if self.kind == "transformer" and (self.max_length is None or not self.inputs):
            raise ValueError("a transformer model needs max_length and inputs")
        return self


@dataclass(frozen=True)
class ModelDir:
    path: Path
    spec: LabelSpec
    files: dict[str, str]  # file name -> sha256, the files that decide the scores
    sha256: str  # over the manifest of files

    @property
    def is_default(self) -> bool:
        return self.path.resolve() == DEFAULT_MODEL_DIR


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest_sha256(files: dict[str, str]) -> str:
    """sha256 of the lines "<sha256>  <name>" sorted by name (the output of `sha256sum` on them)."""
    text = "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def load_model_dir(path: Path | str | None) -> ModelDir:
    """Validate a model directory (None: the bundled default) and hash it."""
    root = Path(path) if path else DEFAULT_MODEL_DIR
    if not root.is_dir():
        raise ModelError(f"model directory {root} does not exist (HOLISTIC_TOXICITY_MODEL)")
    labels_path = root / LABELS_FILE
    if not labels_path.is_file():
        raise ModelError(f"{labels_path} is missing: a model directory needs {MODEL_FILE} and {LABELS_FILE}")
    try:
        spec = LabelSpec.model_validate(json.loads(labels_path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise ModelError(f"{labels_path} is not JSON: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'labels.json'}: {e['msg']}" for e in exc.errors())
        raise ModelError(f"{labels_path} is invalid: {problems}") from exc
    needed = [MODEL_FILE, LABELS_FILE] + ([TOKENIZER_FILE] if spec.kind == "transformer" else [])
    for name in needed:
        if not (root / name).is_file():
            raise ModelError(f"{root / name} is missing (a {spec.kind} model needs {', '.join(needed)})")
    files = {name: file_sha256(root / name) for name in needed}
    return ModelDir(root, spec, files, manifest_sha256(files))
