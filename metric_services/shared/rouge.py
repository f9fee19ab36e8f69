"""ROUGE-1, ROUGE-2 and ROUGE-L exactly as `rouge-score` computes them for HELM, only faster.

HELM calls `RougeScorer([t], use_stemmer=True).score(gold, pred)` (rouge-score 0.1.2). Its
semantics, kept here to the last bit of the float:
- tokens: lowercase (Python's str.lower, so "İ" becomes an ASCII "i"), every run of characters
  outside [a-z0-9] becomes a space (any other non-ASCII text vanishes), split, and nltk's Porter
  stemmer (NLTK_EXTENSIONS mode) on tokens longer than 3 characters;
- ROUGE-N: clipped n-gram overlap, P = overlap / max(#pred n-grams, 1), R = overlap / max(#ref, 1);
- ROUGE-L: sentence-level LCS (not rougeLsum), P = LCS / |pred|, R = LCS / |ref|, 0 if either is empty;
- F = 2PR / (P + R), 0 when P + R = 0.
Across references HELM keeps the max F of each type; precision and recall are those of the
reference that gives it (the first on ties, as rouge-score's score_multi picks it).

Why faster: a stem is computed once per distinct word (rouge-score stems every token every time),
the prediction is tokenized once for all references, and the LCS length comes from the
bit-parallel algorithm (Allison and Dix 1986; Hyyrö 2004) over Python integers instead of the
O(|ref|·|pred|) table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from nltk.stem.porter import PorterStemmer

_NON_ALPHANUM = re.compile(r"[^a-z0-9]+")
_VALID = re.compile(r"^[a-z0-9]+$")
_STEMMER = PorterStemmer()
_CACHE_LIMIT = 200_000
_stems: dict[str, str | None] = {}

TYPES = ("rouge_1", "rouge_2", "rouge_l")


class Score(NamedTuple):
    precision: float
    recall: float
    fmeasure: float


ZERO = Score(0.0, 0.0, 0.0)


def _token(word: str) -> str | None:
    """The word's final token (stemmed when longer than 3 characters), None when it is dropped."""
    if word in _stems:
        return _stems[word]
    stemmed = _STEMMER.stem(word) if len(word) > 3 else word
    result = stemmed if _VALID.match(stemmed) else None
    if len(_stems) >= _CACHE_LIMIT:  # bounded: a long-running worker sees an open vocabulary
        _stems.clear()
    _stems[word] = result
    return result


def tokenize(text: str) -> list[str]:
    """rouge-score's tokenizer with its Porter stemmer."""
    out = []
    for word in _NON_ALPHANUM.sub(" ", text.lower()).split():
        token = _token(word)
        if token is not None:
            out.append(token)
    return out


def fmeasure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _ngram_score(target: Counter[object], target_total: int, pred: Counter[object], pred_total: int) -> Score:
    overlap = 0
    for gram, count in target.items():
        other = pred.get(gram)
        if other:
            overlap += count if count < other else other
    precision = overlap / max(pred_total, 1)
    recall = overlap / max(target_total, 1)
    return Score(precision, recall, fmeasure(precision, recall))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel: O(|b|) big-integer operations."""
    if len(a) < len(b):
        a, b = b, a
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        m = masks.get(tok)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def _lcs_score(target: list[str], pred: list[str]) -> Score:
    if not target or not pred:
        return ZERO
    lcs = lcs_length(target, pred)
    precision = lcs / len(pred)
    recall = lcs / len(target)
    return Score(precision, recall, fmeasure(precision, recall))


def rouge_l(target: list[str], pred: list[str]) -> float:
    """ROUGE-L F of two token lists (tokenize's)."""
    return _lcs_score(target, pred).fmeasure


class Prepared:
    """A text's tokens and n-gram counts, computed once and scored against many others."""

    __slots__ = ("bigram_total", "bigrams", "tokens", "unigrams")

    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.unigrams: Counter[object] = Counter(self.tokens)
        self.bigrams: Counter[object] = Counter(zip(self.tokens, self.tokens[1:], strict=False))
        self.bigram_total = max(len(self.tokens) - 1, 0)


def score_prepared(target: Prepared, pred: Prepared) -> tuple[Score, Score, Score]:
    """(rouge_1, rouge_2, rouge_l) of one prediction against one reference."""
    return (
        _ngram_score(target.unigrams, len(target.tokens), pred.unigrams, len(pred.tokens)),
        _ngram_score(target.bigrams, target.bigram_total, pred.bigrams, pred.bigram_total),
        _lcs_score(target.tokens, pred.tokens),
    )


# A reference is scored against every model's output of its instance: its tokens and counts are kept
# (read only: scoring reads a Counter's missing keys without adding them).
_prepared_reference = lru_cache(maxsize=4096)(Prepared)


def score(references: Sequence[str], prediction: str) -> tuple[Score, Score, Score]:
    """Max-F (rouge_1, rouge_2, rouge_l) over the references, each type on its own."""
    pred = Prepared(prediction)
    best = [ZERO, ZERO, ZERO]
    first = True
    for ref in references:
        scores = score_prepared(_prepared_reference(ref), pred)
        for i, s in enumerate(scores):
            if first or s.fmeasure > best[i].fmeasure:
                best[i] = s
        first = False
    return best[0], best[1], best[2]
