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

import warnings
from collections.abc import Sequence
from functools import lru_cache

from nltk.tokenize.destructive import NLTKWordTokenizer
from nltk.tokenize.punkt import PunktSentenceTokenizer
from nltk.translate.bleu_score import sentence_bleu

from metric_services.shared import rouge

GENERATION_METRICS = ("rouge_l", "bleu_1", "bleu_4")
_SENTENCES = PunktSentenceTokenizer()
_WORDS = NLTKWordTokenizer()
BLEU_1 = (1.0, 0.0, 0.0, 0.0)
BLEU_4 = (0.0, 0.0, 0.0, 1.0)


@lru_cache(maxsize=4096)
def word_tokenize(text: str) -> tuple[str, ...]:
    """nltk.word_tokenize (Punkt sentences, then Treebank words), with untrained Punkt."""
    return tuple(tok for sent in _SENTENCES.tokenize(text) for tok in _WORDS.tokenize(sent))


def bleu(gold: str, pred: str, weights: tuple[float, float, float, float]) -> float:
    """nltk's sentence_bleu of one output against one reference, as HELM calls it."""
    with warnings.catch_warnings():  # nltk warns on every zero n-gram count
        warnings.simplefilter("ignore")
        return float(sentence_bleu([list(word_tokenize(gold))], list(word_tokenize(pred)), weights=weights))


def generation_scores(references: Sequence[str], output: str) -> tuple[float, float, float]:
    """(rouge_l, bleu_1, bleu_4), each the max over references, of the stripped output."""
    pred = output.strip()
    rl = b1 = b4 = 0.0
    prepared = rouge.Prepared(pred)
    for gold in references:
        rl = max(rl, rouge.score_prepared(rouge.Prepared(gold), prepared)[2].fmeasure)
        b1 = max(b1, bleu(gold, pred, BLEU_1))
        b4 = max(b4, bleu(gold, pred, BLEU_4))
    return rl, b1, b4
