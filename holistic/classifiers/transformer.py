"""A transformer classifier (an exported Detoxify model) under onnxruntime with `tokenizers`.

Texts are truncated to the model's max_length tokens (counted: `Scores.truncated`), sorted by length
and run in batches of similar lengths (`length_buckets`) padded to the longest text of the batch, so
short texts do not pay for long ones. One `predict` call over all of an envelope's outputs is what lets
the sort work: called on 32 texts at a time, every batch is padded to its own longest text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from holistic.classifiers.model_dir import MODEL_FILE, TOKENIZER_FILE, ModelDir, ModelError
from holistic.classifiers.session import Scores, session_options
from holistic.classifiers.text import sanitize


def apply_output(logits: np.ndarray, apply: str) -> np.ndarray:
    if apply == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    if apply == "softmax":
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)
    return logits


# A run takes texts up to this many tokens beyond twice its shortest: its padding then stays under
# about half its work, while short texts still fill whole batches (3..14 tokens share one run).
PAD_SLACK = 8


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Positions grouped into runs of at most batch_size texts of similar length (shortest first).

    Each run is padded to its longest text, so sorting first is what keeps the padding small: on 128
    demo outputs (mean 19 tokens, a tail up to 93) batches of 32 in arrival order are padded to 76-93
    tokens (3,584 token positions for 2,373 real ones); sorted batches of 32 to 3, 5, 11 and 93
    (3,584 again: the last one spans 11 to 93 tokens); a new run also when a text is longer than
    2 x the run's shortest + PAD_SLACK: 2,855. The caller writes each run's rows back at these
    positions, which restores the original order.
    """
    runs: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if not runs or len(runs[-1]) >= batch_size or lengths[i] > 2 * lengths[runs[-1][0]] + PAD_SLACK:
            runs.append([])
        runs[-1].append(i)
    return runs


class TransformerClassifier:
    def __init__(self, model: ModelDir, threads: int = 0, batch_size: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model = model
        spec = model.spec
        self.batch_size = batch_size
        try:
            self.tokenizer = Tokenizer.from_file(str(model.path / TOKENIZER_FILE))
            self.session = ort.InferenceSession(
                str(model.path / MODEL_FILE), session_options(threads), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # tokenizers and onnxruntime raise their own untyped errors
            raise ModelError(f"cannot load {model.path}: {exc}") from exc
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(spec.max_length or 512)
        graph_inputs = {i.name for i in self.session.get_inputs()}
        if graph_inputs != set(spec.inputs):
            raise ModelError(
                f"{model.path}: labels.json inputs {spec.inputs} but the graph takes {sorted(graph_inputs)}"
            )
        outputs = {o.name: o for o in self.session.get_outputs()}
        if spec.output not in outputs:
            raise ModelError(f"{model.path}: no graph output {spec.output!r} (has {sorted(outputs)})")
        self.columns = spec.output_columns or list(range(len(spec.labels)))

    def encode(self, texts: Sequence[str]) -> tuple[list[list[int]], np.ndarray]:
        encodings = self.tokenizer.encode_batch([sanitize(t) for t in texts])
        ids = [e.ids for e in encodings]
        truncated = np.asarray([bool(e.overflowing) for e in encodings], dtype=bool)
        return ids, truncated

    def run_ids(self, ids: list[list[int]]) -> np.ndarray:
        """Probabilities, one row per token id list, one column per label."""
        return apply_output(self.run_logits(ids), self.model.spec.apply)[:, self.columns]

    def run_logits(self, ids: list[list[int]]) -> np.ndarray:
        """The graph's raw output for token id lists, padded to the longest."""
        spec = self.model.spec
        width = max(len(x) for x in ids)
        input_ids = np.full((len(ids), width), spec.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in spec.inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        (out,) = self.session.run([spec.output], feed)
        return np.asarray(out, dtype=np.float64)

    def predict(self, texts: Sequence[str]) -> Scores:
        n = len(texts)
        probs = np.zeros((n, len(self.columns)))
        if not n:
            return Scores(probs, np.zeros(0, dtype=bool))
        ids, truncated = self.encode(texts)
        for chunk in length_buckets([len(x) for x in ids], self.batch_size):
            probs[chunk] = self.run_ids([ids[i] for i in chunk])
        return Scores(probs, truncated)
