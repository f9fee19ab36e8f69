"""sacrebleu's corpus BLEU and chrF from sufficient statistics that add across batches and workers.

Both metrics are corpus-level: the score is a function of per-segment counts *summed* over the
corpus (BLEU: hypothesis and closest-reference lengths, matched and total n-grams for n = 1..4;
chrF: hypothesis, reference and matched character n-gram counts for n = 1..6). So a worker keeps
the per-segment counts, Redis adds them, and the fold hands the sums to sacrebleu's own
`_compute_score_from_stats`: the streamed value equals `sacrebleu.corpus_bleu` / `corpus_chrf` on
the whole window, whatever the batching. Options are sacrebleu's defaults (BLEU: 13a tokenizer,
case-sensitive, exp smoothing; chrF: char order 6, word order 0, beta 2, whitespace excluded), so
the signatures are sacrebleu's own.

The per-segment counts are those of sacrebleu's `_extract_corpus_statistics`, computed faster:
sacrebleu's own preprocessing and 13a tokenizer, closest-reference rule and chrF F-score (to pick
the best reference), but BLEU's n-grams counted with C-level zips instead of a Python loop, and
chrF's character n-grams as integer keys in numpy (characters mapped to a small alphabet, n-grams
packed into int64) instead of one Python string per n-gram, every segment of a batch in one pass
(`chrf_segments`: the pair in the key, one sort): about 4x less time than sacrebleu, and equal to it
segment by segment (tests/metric_services/summarization/test_corpus_scores.py). A batch whose
alphabet is too wide to pack with its pairs goes segment by segment, and a segment whose own alphabet
is too large (over 1,024 distinct characters) through sacrebleu.

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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from holistic.stats.intervals import Z95

GROUPS = 16
_BLEU = BLEU(force=True)  # force: no warnings about tokenized-looking periods; scores are unchanged
_CHRF = CHRF()
BLEU_WIDTH = 2 + 2 * _BLEU.max_ngram_order  # hyp length, ref length, correct[1..4], total[1..4]
CHRF_WIDTH = 3 * (_CHRF.char_order + _CHRF.word_order)  # (hyp, ref, match) per order
_LOOKUP_LIMIT = 1 << 17  # chrf_segments maps characters by a table below this code point, by search above
_ORDER_SHIFT = 60  # chrF n-gram keys: order in bits 60-62, up to 6 characters of 10 bits below
assert _CHRF.word_order == 0  # chrF, not chrF++: only character n-grams are counted here


def group_of(prediction_id: str) -> int:
    return zlib.crc32(prediction_id.encode("utf-8", "surrogatepass")) % GROUPS


def segment_statistics(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[list, list]:
    """Per-segment (BLEU, chrF) statistics; every segment needs at least one reference."""
    bleu = [bleu_segment(h, r) for h, r in zip(hypotheses, references, strict=True)]
    return bleu, chrf_segments(hypotheses, references)


def _word_ngrams(tokens: list[str], max_n: int) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter(zip(tokens, strict=False))
    for n in range(2, max_n + 1):
        counts.update(zip(*[tokens[i:] for i in range(n)], strict=False))
    return counts


@lru_cache(maxsize=4096)
def _bleu_reference(ref: str) -> tuple[int, Counter[tuple[str, ...]]]:
    """A reference's token count and n-gram counts, kept (read only): every model's output of an
    instance is scored against it."""
    tokens = _BLEU._preprocess_segment(ref).split()
    return len(tokens), _word_ngrams(tokens, _BLEU.max_ngram_order)


def bleu_segment(hypothesis: str, references: Sequence[str]) -> list[int]:
    """[hyp length, closest ref length, correct 1..4, total 1..4], as sacrebleu's BLEU extracts them."""
    preprocess, max_n = _BLEU._preprocess_segment, _BLEU.max_ngram_order
    ref_counts: Counter[tuple[str, ...]] = Counter()
    ref_lens = []
    for i, ref in enumerate(references):
        length, counts = _bleu_reference(ref)
        ref_lens.append(length)
        if i == 0:
            ref_counts = counts if len(references) == 1 else Counter(counts)  # the kept one stays as it is
        else:  # clipped by the most frequent reference, as sacrebleu merges them
            for gram, k in counts.items():
                if k > ref_counts[gram]:
                    ref_counts[gram] = k
    tokens = preprocess(hypothesis).split()
    correct, total = [0] * max_n, [0] * max_n
    for gram, k in _word_ngrams(tokens, max_n).items():
        n = len(gram) - 1
        total[n] += k
        r = ref_counts.get(gram)
        if r:
            correct[n] += k if k < r else r
    return [len(tokens), _BLEU._get_closest_ref_len(len(tokens), ref_lens), *correct, *total]


def _codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _ngram_keys(ids: np.ndarray, bits: int, orders: int) -> np.ndarray:
    """Every character n-gram, n = 1..orders, as an int64: the order above bit 60, the characters below."""
    parts, prev = [], ids
    for n in range(1, orders + 1):
        if n > 1:
            prev = (prev[:-1] << bits) | ids[n - 1 :]
        parts.append(prev | (n << _ORDER_SHIFT))
    return np.concatenate(parts)


def chrf_segment(hypothesis: str, references: Sequence[str]) -> list[int]:
    """[hyp, ref, match] per character order, for the reference sacrebleu's chrF picks (best F, first)."""
    orders = _CHRF.char_order
    texts = ["".join(_CHRF._preprocess_segment(t).split()) for t in (hypothesis, *references)]
    codes = [_codes(t) for t in texts]
    alphabet, inverse = np.unique(np.concatenate(codes), return_inverse=True)
    bits = max(len(alphabet) - 1, 1).bit_length()
    if bits * orders > _ORDER_SHIFT:
        return list(_CHRF._extract_corpus_statistics([hypothesis], [[r] for r in references])[0])
    inverse = inverse.astype(np.int64)
    ends = np.cumsum([len(c) for c in codes])
    ids = np.split(inverse, ends[:-1])
    hyp_keys, hyp_len = _ngram_keys(ids[0], bits, orders), len(texts[0])
    best: list[int] = []
    best_f = -1.0
    for ref_ids in ids[1:]:
        unique, which = np.unique(np.concatenate([hyp_keys, _ngram_keys(ref_ids, bits, orders)]), return_inverse=True)
        in_hyp = np.bincount(which[: len(hyp_keys)], minlength=len(unique))
        in_ref = np.bincount(which[len(hyp_keys) :], minlength=len(unique))
        match = np.bincount(unique >> _ORDER_SHIFT, weights=np.minimum(in_hyp, in_ref), minlength=orders + 1)
        stats = _pair_stats(hyp_len, len(ref_ids), match.astype(np.int64).tolist())
        f = _CHRF._compute_f_score(stats)
        if f > best_f:
            best, best_f = stats, f
    return best


def _pair_stats(hyp_len: int, ref_len: int, match: Sequence[int]) -> list[int]:
    """sacrebleu's [hyp, ref, match] per character order of one pair; match[n]: its matched n-grams. A
    reference too short for order n counts no hypothesis n-grams either (sacrebleu's extraction)."""
    stats: list[int] = []
    for n in range(1, _CHRF.char_order + 1):
        ref_n = max(ref_len - n + 1, 0)
        stats += [max(hyp_len - n + 1, 0) if ref_n else 0, ref_n, match[n]]
    return stats


def chrf_segments(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[list[int]]:
    """chrf_segment of every segment, counted in one numpy pass over the batch's n-grams: the ~15 numpy
    calls a segment made cost more than its counting (a summary's chrF ~105 µs, most of it fixed). Keys
    carry their (hypothesis, reference) pair above the order and the characters, over one alphabet for
    the batch; a batch whose alphabet is too large to pack goes segment by segment."""
    orders = _CHRF.char_order
    prep = _CHRF._preprocess_segment
    texts: list[str] = []  # per pair: its hypothesis, then its reference
    owner: list[int] = []  # the segment of each pair
    for i, (hypothesis, refs) in enumerate(zip(hypotheses, references, strict=True)):
        hyp = "".join(prep(hypothesis).split())
        for ref in refs:
            texts += (hyp, "".join(prep(ref).split()))
            owner.append(i)
    if not texts:
        return [[] for _ in hypotheses]
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    codes = _codes("".join(texts))
    alphabet = np.unique(codes)  # sorted: a character's id is its rank
    bits = max(len(alphabet) - 1, 1).bit_length()
    chars = bits * orders  # the characters' bits; the order's 3 above them, then the pair's
    pair_shift = chars + 3
    pairs = len(owner)
    if pair_shift + max(pairs - 1, 1).bit_length() + 1 > 63:  # + 1: the side bit below the key
        return [chrf_segment(h, r) for h, r in zip(hypotheses, references, strict=True)]
    if len(alphabet) and alphabet[-1] < _LOOKUP_LIMIT:
        rank = np.zeros(int(alphabet[-1]) + 1, dtype=np.int64)
        rank[alphabet] = np.arange(len(alphabet), dtype=np.int64)
        ids = rank[codes]
    else:
        ids = np.searchsorted(alphabet, codes).astype(np.int64)
    end_of = np.repeat(np.cumsum(lens), lens)  # the end of each position's text
    text_of = np.repeat(np.arange(len(texts), dtype=np.int64), lens)
    tagged = ((text_of >> 1) << (pair_shift + 1)) | (text_of & 1)  # the pair; bit 0: a reference's n-gram
    keys, grams = [], ids
    for n in range(1, orders + 1):
        if n > 1:
            grams = (grams[:-1] << bits) | ids[n - 1 :]
        m = len(grams)
        inside = np.arange(n, m + n, dtype=np.int64) <= end_of[:m]  # the n-gram ends inside its text
        keys.append((((grams | (n << chars)) << 1) | tagged[:m])[inside])
    # One sort: an n-gram's hypothesis run (bit 0 clear), then its reference run; matched = the smaller.
    runs, counts = np.unique(np.concatenate(keys), return_counts=True)  # no inverse: a sort, not an argsort
    gram = runs >> 1
    both = gram[1:] == gram[:-1]
    slot = gram[:-1][both] >> chars  # (pair << 3) | order
    weights = np.minimum(counts[:-1][both], counts[1:][both])
    match = np.bincount(slot, weights=weights, minlength=pairs * 8).reshape(pairs, 8)
    out: list[list[int]] = [[] for _ in hypotheses]
    best_f = [-1.0] * len(hypotheses)
    hyp_lens, ref_lens = lens[0::2].tolist(), lens[1::2].tolist()
    matched = match.astype(np.int64).tolist()
    for k, i in enumerate(owner):
        stats = _pair_stats(hyp_lens[k], ref_lens[k], matched[k])
        f = _CHRF._compute_f_score(stats)
        if f > best_f[i]:
            out[i], best_f[i] = stats, f
    return out


def bleu_from_stats(stats: Sequence[float]) -> float:
    return float(_BLEU._compute_score_from_stats([round(x) for x in stats]).score)


def chrf_from_stats(stats: Sequence[float]) -> float:
    return float(_CHRF._compute_score_from_stats([round(x) for x in stats]).score)


def signatures(nrefs: Iterable[int], versions: Sequence[str] = ()) -> tuple[str, str]:
    """sacrebleu's BLEU and chrF signatures for a window whose predictions had these reference counts,
    with the sacrebleu versions the workers ran (joined by "+" if they differed) when known."""
    counts = set(nrefs)
    num_refs = counts.pop() if len(counts) == 1 else -1
    out = []
    for metric in (BLEU(force=True), CHRF()):
        metric.num_refs = num_refs
        signature = metric.get_signature()
        if versions:
            signature.update("version", "+".join(versions))
        out.append(signature.format())
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
