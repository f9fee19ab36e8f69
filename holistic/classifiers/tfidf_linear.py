"""The default model's two runtimes: numpy over the ONNX graph's own weights, and onnxruntime.

The ONNX file (skl2onnx's TF-IDF -> L2 -> 5 LinearSVC -> Platt sigmoids -> mean) is the portable
contract. The worker runs `NumpyTfidfLinear`, which reads the vocabulary, idf, coefficients and Platt
constants out of that same graph and computes exactly what scikit-learn computes (its token pattern,
Python's lowercasing): onnxruntime's string kernels (StringNormalizer, Tokenizer, TfIdfVectorizer)
are ~3x slower than scikit-learn at batch 256 (measured here), numpy is faster than
both. `OrtTfidfLinear` runs the graph itself; tests hold both within 1e-5 of scikit-learn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from holistic.classifiers.model_dir import MODEL_FILE, ModelDir, ModelError
from holistic.classifiers.session import Scores, session_options
from holistic.classifiers.text import sanitize

# scikit-learn's TfidfVectorizer default, which alt-profanity-check was trained with.
TOKEN_PATTERN = re.compile(r"(?u)\b\w\w+\b")


class TfidfLinearWeights:
    """Vocabulary, idf, per-estimator coefficients/intercepts and Platt (a, b), read from the graph."""

    def __init__(self, path: Path) -> None:
        model = onnx.load(str(path))
        nodes = {n.op_type: n for n in model.graph.node}
        inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        try:
            tfidf = _attrs(nodes["TfIdfVectorizer"])
            if tfidf["mode"] != b"TF" or tfidf["max_gram_length"] != 1:
                raise ModelError(f"{path}: only unigram TF counts are supported")
            pool = [s.decode("utf-8") for s in tfidf["pool_strings"]]
            self.vocab = dict(zip(pool, tfidf["ngram_indexes"], strict=True))
            mul = next(
                n for n in model.graph.node if n.op_type == "Mul" and n.input[0] == nodes["TfIdfVectorizer"].output[0]
            )
            self.idf = inits[mul.input[1]].astype(np.float64)
            if _attrs(nodes["Normalizer"])["norm"] != b"L2":
                raise ModelError(f"{path}: only an L2 Normalizer is supported")
            coefs, intercepts, platt = [], [], []
            linear = [n for n in model.graph.node if n.op_type == "LinearClassifier"]
            for i, node in enumerate(linear):
                a = _attrs(node)
                w = np.asarray(a["coefficients"], dtype=np.float64).reshape(len(a["classlabels_ints"]), -1)
                coefs.append(w[1])  # the positive class
                intercepts.append(float(a["intercepts"][1]))
                suffix = "" if i == 0 else str(i)
                platt.append((float(inits["a" + suffix]), float(inits["b" + suffix])))
        except (KeyError, StopIteration, ValueError) as exc:
            raise ModelError(f"{path} is not a TF-IDF + calibrated linear graph this runtime reads: {exc!r}") from exc
        self.coef = np.stack(coefs, axis=1)  # features x estimators
        self.intercept = np.asarray(intercepts)
        self.platt_a = np.asarray([a for a, _ in platt])
        self.platt_b = np.asarray([b for _, b in platt])
        if self.coef.shape[0] != len(self.idf):
            raise ModelError(f"{path}: {self.coef.shape[0]} coefficients for {len(self.idf)} idf weights")


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class NumpyTfidfLinear:
    """P(positive) = mean_k sigmoid-Platt(w_k . l2(tf * idf) + c_k), as scikit-learn computes it."""

    def __init__(self, model: ModelDir) -> None:
        self.model = model
        self.w = TfidfLinearWeights(model.path / MODEL_FILE)
        # Fold idf into the coefficients: w . (tf*idf)/|tf*idf| = (tf . (idf*w)) / |tf*idf|.
        self.idf = self.w.idf
        self.idf_coef = self.w.coef * self.idf[:, None]

    def predict(self, texts: Sequence[str]) -> Scores:
        vocab = self.w.vocab
        rows: list[int] = []
        cols: list[int] = []
        for i, text in enumerate(texts):
            for token in TOKEN_PATTERN.findall(sanitize(text).lower()):
                j = vocab.get(token)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
        n, f = len(texts), len(self.idf)
        numer = np.zeros((n, self.idf_coef.shape[1]))
        norm2 = np.zeros(n)
        if rows:
            keys, counts = np.unique(np.asarray(rows, dtype=np.int64) * f + np.asarray(cols), return_counts=True)
            r, c = keys // f, keys % f
            v = counts * self.idf[c]
            norm2 = np.bincount(r, weights=v * v, minlength=n)
            numer = np.stack(
                [np.bincount(r, weights=counts * self.idf_coef[c, k], minlength=n) for k in range(numer.shape[1])],
                axis=1,
            )
        norm = np.sqrt(norm2)
        decision = np.divide(numer, norm[:, None], out=np.zeros_like(numer), where=norm[:, None] > 0) + self.w.intercept
        p = 1.0 / (1.0 + np.exp(self.w.platt_a * decision + self.w.platt_b))
        return Scores(p.mean(axis=1, keepdims=True), np.zeros(n, dtype=bool))


class OrtTfidfLinear:
    """The graph under onnxruntime: lowercase and sanitize in Python first (see convert_profanity)."""

    def __init__(self, model: ModelDir, threads: int = 1) -> None:
        import onnxruntime as ort

        self.model = model
        self.session = ort.InferenceSession(
            str(model.path / MODEL_FILE), session_options(threads), providers=["CPUExecutionProvider"]
        )
        spec = model.spec
        self.columns = spec.output_columns or [1]

    def predict(self, texts: Sequence[str]) -> Scores:
        if not texts:
            return Scores(np.zeros((0, 1)), np.zeros(0, dtype=bool))
        batch = np.asarray([[sanitize(t).lower()] for t in texts], dtype=object)
        (probs,) = self.session.run([self.model.spec.output], {"text": batch})
        return Scores(np.asarray(probs, dtype=np.float64)[:, self.columns], np.zeros(len(texts), dtype=bool))
