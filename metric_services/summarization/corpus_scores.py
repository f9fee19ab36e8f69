"""sacrebleu's corpus BLEU and chrF from sufficient statistics that add across batches and workers.

Both metrics are corpus-level: the score is a function of per-segment counts *summed* over the
corpus (BLEU: hypothesis and closest-reference lengths, matched and total n-grams for n = 1..4;
chrF: hypothesis, reference and matched character n-gram counts for n = 1..6). So a worker keeps
the per-segment counts that sacrebleu itself extracts (`_extract_corpus_statistics`), Redis adds
them, and the fold hands the sums to sacrebleu's own `_compute_score_from_stats`: the streamed
value equals `sacrebleu.corpus_bleu` / `corpus_chrf` on the whole window, whatever the batching.
Options are sacrebleu's defaults (BLEU: 13a tokenizer, case-sensitive, exp smoothing; chrF: char
order 6, word order 0, beta 2, whitespace excluded), so the signatures are sacrebleu's own.

References: sacrebleu wants reference *streams* of equal length and lets a segment skip a stream
with None. A prediction with k references fills streams 1..k and None elsewhere, which is what
sacrebleu does for a variable number of references (signature `nrefs:var`); per-segment
statistics depend only on the segment's own references, so padding a batch to its widest
prediction gives the same counts as padding the whole window.

Interval: a corpus score is no mean of per-prediction values, so each prediction's counts also
go to one of 16 groups by a hash of its id (fixed whatever the batching), and the interval is the
delete-a-group jackknife: score ± 1.96·√((G−1)/G · Σ(θ₋g − θ̄)²) over the G non-empty groups.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Sequence

from sacrebleu.metrics import BLEU, CHRF

from holistic.intervals import Z95

GROUPS = 16
_BLEU = BLEU(force=True)  # force: no warnings about tokenized-looking periods; scores are unchanged
_CHRF = CHRF()
BLEU_WIDTH = 2 + 2 * _BLEU.max_ngram_order  # hyp length, ref length, correct[1..4], total[1..4]
CHRF_WIDTH = 3 * (_CHRF.char_order + _CHRF.word_order)  # (hyp, ref, match) per order


def group_of(prediction_id: str) -> int:
    return zlib.crc32(prediction_id.encode("utf-8", "surrogatepass")) % GROUPS


def segment_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[list, list]:
    """Per-segment (BLEU, chrF) statistics; every segment needs at least one reference."""
    width = max(len(refs) for refs in references)
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(width)]
    return (
        _BLEU._extract_corpus_statistics(hypotheses, streams),
        _CHRF._extract_corpus_statistics(hypotheses, streams),
    )


def bleu_from_stats(stats: Sequence[float]) -> float:
    return float(_BLEU._compute_score_from_stats([round(x) for x in stats]).score)


def chrf_from_stats(stats: Sequence[float]) -> float:
    return float(_CHRF._compute_score_from_stats([round(x) for x in stats]).score)


def signatures(nrefs: Iterable[int]) -> tuple[str, str]:
    """sacrebleu's BLEU and chrF signatures for a window whose predictions had these reference counts."""
    counts = set(nrefs)
    num_refs = counts.pop() if len(counts) == 1 else -1
    out = []
    for metric in (BLEU(force=True), CHRF()):
        metric.num_refs = num_refs
        out.append(metric.get_signature().format())
    return out[0], out[1]


def jackknife(
    groups: dict[int, list[float]], score: Callable[[Sequence[float]], float], bounds: tuple[float, float]
) -> tuple[float, float, float]:
    """The corpus score over all groups and its delete-a-group jackknife 95 % interval (±inf if < 2 groups)."""
    width = len(next(iter(groups.values())))
    total = [sum(g[k] for g in groups.values()) for k in range(width)]
    value = score(total)
    if len(groups) < 2:
        return value, -math.inf, math.inf
    left_out = [score([t - g for t, g in zip(total, grp, strict=True)]) for grp in groups.values()]
    n = len(left_out)
    centre = sum(left_out) / n
    half = Z95 * math.sqrt((n - 1) / n * sum((x - centre) ** 2 for x in left_out))
    return value, max(value - half, bounds[0]), min(value + half, bounds[1])
