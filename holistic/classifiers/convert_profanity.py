"""Build the bundled default model: alt-profanity-check 1.9.1's calibrated linear SVMs as ONNX.

    python -m holistic.classifiers.convert_profanity [OUT_DIR]     (default: the bundled directory)

Build/test only (the `export` extra: scikit-learn==1.9.1, alt-profanity-check==1.9.1, skl2onnx, onnx).
Two skl2onnx defaults are wrong here and are overridden (measured on this project's machines):
- its tokenizer regex becomes ASCII-only `[a-zA-Z0-9_]+`, which splits words at any non-ASCII letter
  (23 of 2,000 adversarial strings flipped label): we pass the Unicode class `[\\p{L}\\p{N}_]+`;
- its StringNormalizer locale `en_US.UTF-8` does not exist on slim Debian and session creation fails:
  we pass `C.UTF-8` (not `C`, which does not lowercase non-ASCII letters).
Lowercasing (Python's, which differs from ORT's towlower on `İ`) and lone-surrogate replacement happen
before the graph, in Python. The graph's random name is fixed, so a rebuild reproduces the bytes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from holistic.classifiers.model_dir import DEFAULT_MODEL_DIR, FORMAT, LABELS_FILE, MODEL_FILE, load_model_dir

TOKENEXP = r"[\p{L}\p{N}_]+"
LOCALE = "C.UTF-8"
SOURCE_VERSION = "1.9.1"
LICENSE_TEXT = """\
The model in this directory (model.onnx) is converted from the classifier shipped in
alt-profanity-check 1.9.1 (https://pypi.org/project/alt-profanity-check/), under this license:

MIT License

Copyright (c) 2018 Victor Zhou
Copyright (c) 2021 Menelaos Kotoglou, Dimitrios Mistriotis

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""
DETECTS = (
    "Offensive or profane language in English: swearing, insults, obscenity (one probability, "
    "'profanity'). Trained on ~200k human-labelled tweets (Davidson et al. 2017) and Wikipedia "
    "comments (Jigsaw Toxic Comment Classification). It is a bag of words: it does not read context, "
    "sarcasm, threats or hate phrased politely, it misses obfuscated spellings ('f4ck'), and it is not "
    "Perspective-style toxicity."
)
LABELS: dict[str, Any] = {
    "format": FORMAT, "name": f"alt-profanity-check-{SOURCE_VERSION}", "kind": "tfidf-linear",
    "labels": ["profanity"], "primary": "profanity", "identity_labels": [], "apply": "none",
    "output": "probabilities", "output_columns": [1], "max_length": None, "inputs": ["text"],
    "detects": DETECTS, "license": "MIT (see LICENSE)",
    "source": {"package": f"alt-profanity-check=={SOURCE_VERSION}", "converter": "skl2onnx",
               "tokenexp": TOKENEXP, "locale": LOCALE},
    "preprocess": {"lowercase": "python str.lower", "lone_surrogates": "U+FFFD",
                   "token_pattern": r"(?u)\b\w\w+\b"},
}  # fmt: skip


def sklearn_pipeline() -> Any:
    """alt-profanity-check's vectorizer and calibrated classifier (loaded from its pickles at import)."""
    from profanity_check import profanity_check as pc
    from sklearn.pipeline import Pipeline

    return Pipeline([("tfidf", pc.vectorizer), ("clf", pc.model)])


def convert(tokenexp: str | None = TOKENEXP, locale: str = LOCALE) -> Any:
    """The ONNX model; tokenexp=None keeps skl2onnx's ASCII default (to show it is wrong)."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import StringTensorType

    pipe = sklearn_pipeline()
    vec, clf = pipe.named_steps["tfidf"], pipe.named_steps["clf"]
    vec_options: dict[str, str] = {"locale": locale}
    if tokenexp is not None:
        vec_options["tokenexp"] = tokenexp
    model = convert_sklearn(
        pipe,
        initial_types=[("text", StringTensorType([None, 1]))],
        options={id(clf): {"zipmap": False}, id(vec): vec_options},
        target_opset={"": 17, "ai.onnx.ml": 1},
    )
    # skl2onnx names the graph with a random uuid and lists opsets in set order (the hash seed's):
    # fix both so a rebuild reproduces the bytes.
    model.graph.name = "alt_profanity_check"
    opsets = sorted((o.domain, o.version) for o in model.opset_import)
    del model.opset_import[:]
    for domain, version in opsets:
        model.opset_import.add(domain=domain, version=version)
    return model


def build(out: Path = DEFAULT_MODEL_DIR) -> str:
    """Write model.onnx, labels.json and LICENSE; return the directory's sha256."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MODEL_FILE).write_bytes(convert().SerializeToString())
    (out / LABELS_FILE).write_text(json.dumps(LABELS, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "LICENSE").write_text(LICENSE_TEXT, encoding="utf-8")
    return load_model_dir(out).sha256


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL_DIR
    print(f"{build(target)}  {target}")
