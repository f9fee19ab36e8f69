"""HELM's reference-matching metrics, exactly as crfm-helm 0.5.16 defines them.

Source: helm/benchmark/metrics/evaluate_reference_metrics.py. Quirks kept on purpose:
punctuation is removed before articles (so "the-cat" normalizes to "thecat"), F1 works on token
*sets* and scores 0 when either side normalizes to nothing, and an empty prediction scores 0 on
every metric. The prediction is stripped first, as HELM strips completions.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from functools import lru_cache

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_text(text: str) -> str:
    """QuAC normalization: lowercase, drop ASCII punctuation, drop articles, collapse spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(gold: str, pred: str) -> float:
    if not pred:
        return 0.0
    return 1.0 if gold.strip() == pred.strip() else 0.0


def quasi_exact_match(gold: str, pred: str) -> float:
    if not pred:
        return 0.0
    return 1.0 if normalize_text(gold) == normalize_text(pred) else 0.0


def prefix_exact_match(gold: str, pred: str) -> float:
    """Gold "1" matches prediction "10": HELM's own caveat."""
    if not pred:
        return 0.0
    return 1.0 if pred.strip().startswith(gold.strip()) else 0.0


def quasi_prefix_exact_match(gold: str, pred: str) -> float:
    if not pred:
        return 0.0
    return 1.0 if normalize_text(pred).startswith(normalize_text(gold)) else 0.0


def f_measure(reference: set[str] | frozenset[str], test: set[str], alpha: float = 0.5) -> float | None:
    """nltk.metrics.scores.f_measure: None when either set is empty."""
    if not reference or not test:
        return None
    overlap = len(reference & test)
    precision = overlap / len(test)
    recall = overlap / len(reference)
    if precision == 0 or recall == 0:
        return 0.0
    return 1.0 / (alpha / precision + (1 - alpha) / recall)


def f1_score(gold: str, pred: str) -> float:
    ret = f_measure(set(normalize_text(gold).split()), set(normalize_text(pred).split()))
    return 0.0 if ret is None else ret


METRICS = {
    "exact_match": exact_match,
    "quasi_exact_match": quasi_exact_match,
    "prefix_exact_match": prefix_exact_match,
    "quasi_prefix_exact_match": quasi_prefix_exact_match,
    "f1_score": f1_score,
}
BINARY = frozenset(METRICS) - {"f1_score"}


def scores(references: Sequence[str], output: str) -> tuple[float, float, float, float, float]:
    """The five metrics in METRICS order, each the max over references, for one output."""
    return _scores(tuple(references), output)


@lru_cache(maxsize=1 << 13)
def _scores(references: tuple[str, ...], output: str) -> tuple[float, float, float, float, float]:
    """scores, kept: a multiple-choice or classification output and its references ("B" against "B",
    "no" against "yes") repeat across most rows, and three families score every row."""
    pred = output.strip()
    if not pred:
        return (0.0, 0.0, 0.0, 0.0, 0.0)
    norm_pred = normalize_text(pred)
    pred_tokens = set(norm_pred.split())
    em = qem = pem = qpem = f1 = 0.0
    for gold in references:
        stripped_gold, norm_gold, gold_tokens = _reference(gold)
        if stripped_gold == pred:
            em = 1.0
        if norm_gold == norm_pred:
            qem = 1.0
        if pred.startswith(stripped_gold):
            pem = 1.0
        if norm_pred.startswith(norm_gold):
            qpem = 1.0
        f = f_measure(gold_tokens, pred_tokens)
        if f is not None and f > f1:
            f1 = f
    return (em, qem, pem, qpem, f1)


@lru_cache(maxsize=1 << 12)
def _reference(gold: str) -> tuple[str, str, frozenset[str]]:
    """A reference stripped, normalized and as a token set: it is matched against every output of its
    instance (the original, its variants, every model's) by three families, so it is kept."""
    norm = normalize_text(gold)
    return gold.strip(), norm, frozenset(norm.split())


def score(references: Sequence[str], output: str) -> dict[str, float]:
    """Every metric by name, each the max over references, for one (stripped) output."""
    return dict(zip(METRICS, scores(references, output), strict=True))
