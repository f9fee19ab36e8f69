"""HELM's open-ended generation metrics beyond matching: rouge_l, bleu_1 and bleu_4 (crfm-helm 0.5.16,
evaluate_reference_metrics.py), each the max over references of one stripped output.

- rouge_l: rouge-score's RougeL F with the Porter stemmer (shared/rouge.py, bit-exact).
- bleu_1 / bleu_4: nltk's `sentence_bleu([word_tokenize(gold)], word_tokenize(pred), weights)` with
  weights (1,0,0,0) and (0,0,0,1): BP·p1 and BP·p4 (4-gram precision only, not cumulative BLEU-4), no
  smoothing, so no 4-gram match gives BP·sys.float_info.min (≈ 2.2e-308), as HELM reports it.

One departure, in the tokenizer: nltk's `word_tokenize` splits sentences with Punkt's English
parameters (`punkt_tab`, a data download we do not make at run time); we split with Punkt without
trained parameters, then apply the same Treebank word tokenizer to each sentence. The two differ only
where English abbreviations decide a sentence break (e.g. "Mr. Smith" at a period + capital), which
changes whether that period is a token of its own.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

GENERATION_METRICS = ("rouge_l", "bleu_1", "bleu_4")
BLEU_1 = (1.0, 0.0, 0.0, 0.0)
BLEU_4 = (0.0, 0.0, 0.0, 1.0)


@lru_cache(maxsize=1)
def _tokenizers() -> tuple[PunktSentenceTokenizer, NLTKWordTokenizer]:
    """Made on first use: importing nltk costs about a second, which a worker (re)start should not pay
    before it has an open-ended prediction to score."""
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(), NLTKWordTokenizer()


# Plain text: words of ASCII letters and digits, one space apart, a comma right after a word (before
# its space) and a period at the very end allowed. Punkt finds one sentence in it (no period inside)
# and of Treebank's rules only three apply: ", " -> " , ", the final "." split off, and the split of
# these six words (its CONTRACTIONS2 without an apostrophe: "cannot" -> "can not", ...).
_PLAIN = re.compile(r"[A-Za-z0-9]+(?:,? [A-Za-z0-9]+)*\.?\Z")
_SPLIT_WORDS = re.compile(r"(?i)\b(?:cannot|gimme|gonna|gotta|lemme|wanna)\b")


@lru_cache(maxsize=4096)
def word_tokenize(text: str) -> tuple[str, ...]:
    """nltk.word_tokenize (Punkt sentences, then Treebank words), with untrained Punkt. Plain text
    (most short answers) is split directly: nltk's ~40 regular expressions cost ~85 us a short
    text, the split under 1 (tests/metric_services/test_generation_metrics.py holds both equal)."""
    if _PLAIN.match(text) and not _SPLIT_WORDS.search(text):
        end = text.endswith(".")
        tokens = (text[:-1] if end else text).replace(",", " ,").split()
        return (*tokens, ".") if end else tuple(tokens)
    return nltk_word_tokenize(text)


def nltk_word_tokenize(text: str) -> tuple[str, ...]:
    """word_tokenize through nltk, whatever the text."""
    sentences, words = _tokenizers()
    return tuple(tok for sent in sentences.tokenize(text) for tok in words.tokenize(sent))


class _Grams(NamedTuple):
    """A text's tokens and its 1- and 4-gram counts: what BLEU_1 and BLEU_4 read of it. Unigrams are
    counted by the token itself, not a 1-tuple, and 4-grams by zipping four shifted views: the same
    counts under other keys (both sides of a precision are made here), ~2x and ~1.4x faster."""

    tokens: tuple[str, ...]
    ones: Counter[str]
    fours: Counter[tuple[str, str, str, str]]


def _grams(text: str) -> _Grams:
    t = word_tokenize(text)
    return _Grams(t, Counter(t), Counter(zip(t, t[1:], t[2:], t[3:], strict=False)))


# A reference is scored against every output of its instance (the original, its variants, every model's),
# by three families (accuracy and both worst cases): its counts are kept, the outputs' are not.
_reference_grams = lru_cache(maxsize=1 << 12)(_grams)  # the instances of the last few batches


def _precision(h: Counter[Any], ref: Counter[Any]) -> tuple[int, float]:
    """nltk's modified precision p_n: (clipped matches, p_n with method0's float_info.min for none).
    A loop with dict.get: `ref[gram]` calls Counter.__missing__, Python code, for every gram the
    reference lacks (most 4-grams), and the generator and min() cost as much again (~3x in all)."""
    get = ref.get
    numerator = 0
    for gram, c in h.items():
        r = get(gram)
        if r:
            numerator += c if c < r else r
    return numerator, (numerator / max(1, sum(h.values())) if numerator else sys.float_info.min)


def bleu_1_4(gold: str, pred: str) -> tuple[float, float]:
    """nltk's `sentence_bleu([gold], pred, weights)` for BLEU_1 and BLEU_4 at once, computed as nltk
    computes it (corpus_bleu of one pair: clipped n-gram counts, 0 without a unigram match, method0's
    sys.float_info.min for a zero count, brevity penalty against the one reference), from one set of
    counts instead of two full passes (tests/metric_services/test_generation_metrics.py checks it
    against nltk). p_2 and p_3 are left out: both weight vectors give them 0, and nltk's
    exp(fsum(w_n · log p_n)) adds only signed zeros for them (log p_n is finite), so the sum is
    log p_1 (BLEU_1) or log p_4 (BLEU_4) exactly."""
    return _bleu_1_4(_reference_grams(gold), _grams(pred))


def _bleu_1_4(g: _Grams, h: _Grams) -> tuple[float, float]:
    matches, p1 = _precision(h.ones, g.ones)
    if matches == 0:
        return 0.0, 0.0
    _, p4 = _precision(h.fours, g.fours)
    c, r = len(h.tokens), len(g.tokens)
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(math.log(p1)), bp * math.exp(math.log(p4))


def bleu(gold: str, pred: str, weights: tuple[float, float, float, float]) -> float:
    """One of HELM's two BLEUs of one output against one reference."""
    if weights not in (BLEU_1, BLEU_4):
        raise ValueError(f"weights {weights}: HELM uses BLEU_1 {BLEU_1} and BLEU_4 {BLEU_4}")
    b1, b4 = bleu_1_4(gold, pred)
    return b1 if weights == BLEU_1 else b4


def generation_scores(references: Sequence[str], output: str) -> tuple[float, float, float]:
    """(rouge_l, bleu_1, bleu_4), each the max over references, of the stripped output."""
    from metric_services.shared import rouge  # nltk's Porter stemmer: on first use (see _tokenizers)

    pred = output.strip()
    rl = b1 = b4 = 0.0
    tokens = rouge.tokenize(pred)  # rouge_l only: no n-gram counts (rouge.Prepared's) are needed
    grams = _grams(pred)  # once for all references
    for gold in references:
        rl = max(rl, rouge.rouge_l(_reference_tokens(gold), tokens))
        g1, g4 = _bleu_1_4(_reference_grams(gold), grams)
        b1, b4 = max(b1, g1), max(b4, g4)
    return rl, b1, b4


@lru_cache(maxsize=1 << 12)
def _reference_tokens(gold: str) -> list[str]:
    """rouge.tokenize of a reference, kept (read only: rouge_l does not change its arguments)."""
    from metric_services.shared import rouge

    return rouge.tokenize(gold)
