"""HELM's classification metrics (ClassificationMetric, crfm-helm 0.5.16 classification_metrics.py):
classification_macro_f1 and classification_micro_f1 over a label set, from per-label counts.

HELM's class of an output or a reference is its `normalize_text(..., should_remove_articles=False)`
(lowercase, ASCII punctuation removed, whitespace collapsed); an empty reference is left out, an
empty output predicts nothing. The label set is the references' classes (HELM infers them from the
correct references when a run spec names none); an output outside it is a negative for every class.
scikit-learn's F1 with MultiLabelBinarizer: per class F1 = 2TP / (2TP + FP + FN), 0 when the class
was neither true nor predicted; macro = mean over classes, micro = 2ΣTP / (2ΣTP + ΣFP + ΣFN).

Mergeable: a batch adds, per class string, how often it was true, predicted, and both. Predicted
classes longer than MAX_LABEL_CHARS are not counted (a label is short; this bounds the state that
free text would otherwise grow); they can only matter when a reference is that long too.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

_PUNCTUATION = str.maketrans("", "", string.punctuation)
MAX_LABEL_CHARS = 200
CLASSIFICATION_METRICS = ("classification_macro_f1", "classification_micro_f1")
TRUE, PRED, BOTH = "cls_true", "cls_pred", "cls_tp"


def label(text: str) -> str:
    """HELM's _normalize_label_text: QuAC normalization without removing articles."""
    return " ".join(text.lower().translate(_PUNCTUATION).split())


def label_counts(references: Sequence[str], output: str) -> tuple[set[str], str | None]:
    """The prediction's true classes and its predicted class (None when the output is empty)."""
    true = {label(r) for r in references if r}
    pred = label(output) if output else None
    if pred is not None and len(pred) > MAX_LABEL_CHARS:
        pred = None
    return true, pred


def f1_scores(counts: Mapping[str, Mapping[str, float]]) -> tuple[float, float] | None:
    """(macro F1, micro F1) from {TRUE: {class: n}, PRED: {...}, BOTH: {...}}; None with no class."""
    classes = sorted(c for c, n in counts.get(TRUE, {}).items() if n > 0)
    if not classes:
        return None
    per_class = []
    tp_all = fp_all = fn_all = 0.0
    for c in classes:
        tp = counts.get(BOTH, {}).get(c, 0.0)
        fp = counts.get(PRED, {}).get(c, 0.0) - tp
        fn = counts[TRUE][c] - tp
        denom = 2 * tp + fp + fn
        per_class.append(2 * tp / denom if denom else 0.0)
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
    denom = 2 * tp_all + fp_all + fn_all
    return sum(per_class) / len(per_class), (2 * tp_all / denom if denom else 0.0)
