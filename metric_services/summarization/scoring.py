"""One batch's summarization statistics: what compute() emits, per minute and scenario.

Per scenario (fields prefixed "<scenario>|"):
  n, unscored                        summarization predictions; those with neither references nor source
  ref|n, ref|<type>_<p|r|f>|sum/sumsq  ROUGE (rouge.py), max over references
  unjudged|n, unjudged|<type>_f|...  ROUGE F of predictions without the client's `correct`
  judged|n, judged|sum               the client's judgements (they count for accuracy instead)
  judged_norefs|n, judged_norefs|sum those without references (with HOLISTIC_REFERENCES_WIN only these count)
  src|n, src|<fragment stat>|...     coverage, density, compression against `source`
  sem_ref|…, sem_src|…               cosine of sentence embeddings (count, sum, sum of squares)
  corpus histogram                   BLEU/chrF sufficient statistics, bin "<group>:b<k>" / "<group>:c<k>"
  nrefs histogram                    predictions by number of references (the sacrebleu signature)
Family-wide: other (predictions of other tasks), perturbed (perturbed summarization variants, left out
as HELM's run cell is over perturbation=None), sem|texts, sem|truncated, and histograms
sem_off (predictions left without semantic similarity, by reason) and impl (the sacrebleu
version and the embedding model's sha256 that made the numbers).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import sacrebleu

from holistic.families import prediction_minute
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import HIST_SUFFIX, Stats
from holistic.stats.names import key
from holistic.v1 import prediction_pb2 as pb
from metric_services.shared import rouge
from metric_services.summarization import corpus_scores
from metric_services.summarization.config import SummarizationConfig
from metric_services.summarization.encoder import encoder_for
from metric_services.summarization.fragments import fragment_stats

if TYPE_CHECKING:
    from holistic.families.shared_memo import SharedMemo

log = logging.getLogger("holistic.summarization")

FRAGMENT_STATS = ("coverage", "density", "compression")
_PARTS = ("precision", "recall", "fmeasure")
_SUFFIX = {"precision": "p", "recall": "r", "fmeasure": "f"}
CORPUS = "corpus"  # histogram of BLEU/chrF sufficient statistics, bins corpus_bin(group, stat)
NREFS = "nrefs"  # histogram of predictions by number of references
IMPL = "impl"  # histogram of what made the numbers: bins "sacrebleu:<version>", "model:<sha256>"
SACREBLEU = "sacrebleu:"
MODEL = "model:"
SEM_OFF = "sem_off"  # histogram of predictions left without semantic similarity, by reason


def corpus_bin(group: int, stat: str) -> str:
    """The corpus histogram's bin of one statistic ("b<k>" BLEU, "c<k>" chrF) of one jackknife group."""
    return f"{group}:{stat}"


def split_corpus_bin(bin_: str) -> tuple[int, str]:
    group, _, stat = bin_.partition(":")
    return int(group), stat


@dataclass
class _Row:
    minute: int
    scenario: str
    id: str
    output: str
    references: list[str]
    source: str | None
    judged: bool | None


def _moment_fields(field: str) -> tuple[str, str]:
    return key(field, "sum"), key(field, "sumsq")


def _moments(st: Stats, fields: tuple[str, str], value: float) -> None:
    """Sum and sum of squares of value into fields (_moment_fields)."""
    total, squares = fields
    st.add(total, value)
    st.add(squares, value * value)


# Field names made once (a summary adds ~15 moments and ~27 corpus bins: their names were most of its
# bookkeeping): per ROUGE type, its (sum, sumsq) fields of precision, recall and F (Score's order),
# and of the unjudged F; the extractive statistics'.
_REF_FIELDS = tuple(
    tuple(_moment_fields(key("ref", f"{name}_{_SUFFIX[part]}")) for part in _PARTS) for name in rouge.TYPES
)
_UNJUDGED_FIELDS = tuple(_moment_fields(key("unjudged", f"{name}_f")) for name in rouge.TYPES)
_SRC_FIELDS = tuple(_moment_fields(key("src", name)) for name in FRAGMENT_STATS)
_SEM_REF, _SEM_SRC = _moment_fields("sem_ref"), _moment_fields("sem_src")


@lru_cache(maxsize=corpus_scores.GROUPS)
def _corpus_bins(group: int) -> tuple[str, ...]:
    """A jackknife group's corpus bins: BLEU's statistics b0.., then chrF's c0.. (segment_statistics' order)."""
    return (
        *(corpus_bin(group, f"b{k}") for k in range(corpus_scores.BLEU_WIDTH)),
        *(corpus_bin(group, f"c{k}") for k in range(corpus_scores.CHRF_WIDTH)),
    )


def _row(p: pb.Prediction, minute: int) -> _Row | str:
    """The summary as the family scores it, or why it is not one: "other" task, "perturbed" variant (HELM's run
    cell is over unperturbed instances only)."""
    if p.task != pb.TASK_SUMMARIZATION:
        return "other"
    if p.HasField("perturbation"):
        return "perturbed"
    source = p.source if p.HasField("source") and p.source.strip() else None
    judged = p.correct if p.HasField("correct") else None
    return _Row(minute, p.scenario, p.id, p.output.strip(), list(p.references), source, judged)


def summary_values(p: pb.Prediction) -> list[tuple[str, float]]:
    """One summary's own values, computed as score_batch computes them: ROUGE-1/2/L F (max over references)
    and coverage, density and compression against its source. Not BLEU and chrF (corpus-level: sacrebleu's
    sufficient statistics pooled over the window) nor semantic similarity (an encoder pass of its own)."""
    row = _row(p, 0)
    if isinstance(row, str):
        return []
    out: list[tuple[str, float]] = []
    if row.references:
        out.extend(
            (name, s.fmeasure) for name, s in zip(rouge.TYPES, rouge.score(row.references, row.output), strict=True)
        )
    if row.source is not None:
        frag = fragment_stats(row.output, row.source)
        out.extend((name, float(getattr(frag, name))) for name in FRAGMENT_STATS)
    return out


def score_batch(
    envelope: BatchEnvelope, config: SummarizationConfig, memo: SharedMemo | None = None
) -> dict[int, Stats]:
    accept_s = envelope.accept_time.seconds
    out: dict[int, Stats] = defaultdict(Stats)
    rows: list[_Row] = []
    for p in envelope.predictions:
        at = p.produced_at
        minute = prediction_minute(at.seconds, at.nanos, accept_s)
        row = _row(p, minute)
        if isinstance(row, str):
            out[minute].incr(row)
            continue
        rows.append(row)
    accs: dict[tuple[int, str], Stats] = defaultdict(Stats)
    for row in rows:
        acc = accs[(row.minute, row.scenario)]
        acc.incr("n")
        if not row.references and row.source is None:
            acc.incr("unscored")
        if row.judged is not None:
            acc.incr(key("judged", "n"))
            acc.incr(key("judged", "sum"), int(row.judged))
            if not row.references:
                acc.incr(key("judged_norefs", "n"))
                acc.incr(key("judged_norefs", "sum"), int(row.judged))
    _lexical(rows, accs)
    _corpus(rows, accs)
    _semantic(rows, accs, out, config, memo)
    for (minute, scn), acc in accs.items():
        _emit(out[minute], scn, acc)
    return dict(out)


def _lexical(rows: list[_Row], accs: dict[tuple[int, str], Stats]) -> None:
    for row in rows:
        acc = accs[(row.minute, row.scenario)]
        if row.references:
            scores = rouge.score(row.references, row.output)
            acc.incr(key("ref", "n"))
            unjudged = row.judged is None
            if unjudged:
                acc.incr(key("unjudged", "n"))
            for fields, unjudged_fields, s in zip(_REF_FIELDS, _UNJUDGED_FIELDS, scores, strict=True):
                for part_fields, value in zip(fields, s, strict=True):  # precision, recall, F
                    _moments(acc, part_fields, value)
                if unjudged:
                    _moments(acc, unjudged_fields, s.fmeasure)
        if row.source is not None:
            frag = fragment_stats(row.output, row.source)
            acc.incr(key("src", "n"))
            for fields, name in zip(_SRC_FIELDS, FRAGMENT_STATS, strict=True):
                _moments(acc, fields, getattr(frag, name))


def _corpus(rows: list[_Row], accs: dict[tuple[int, str], Stats]) -> None:
    scored = [r for r in rows if r.references]
    if not scored:
        return
    bleu, chrf = corpus_scores.segment_statistics([r.output for r in scored], [r.references for r in scored])
    for row, b, c in zip(scored, bleu, chrf, strict=True):
        acc = accs[(row.minute, row.scenario)]
        for bin_, v in zip(_corpus_bins(corpus_scores.group_of(row.id)), (*b, *c), strict=True):
            if v:
                acc.bump(CORPUS, bin_, int(v))
        acc.bump(NREFS, str(len(row.references)))


def _semantic(
    rows: list[_Row],
    accs: dict[tuple[int, str], Stats],
    out: dict[int, Stats],
    config: SummarizationConfig,
    memo: SharedMemo | None,
) -> None:
    wanted = [r for r in rows if any(r.references) or r.source is not None]
    if not wanted:
        return
    available = encoder_for(config)
    if available.encoder is None:
        code = available.reason.split(":", 1)[0]
        if code != "disabled":
            log.warning("semantic similarity off: %s", available.reason)
        for r in wanted:
            out[r.minute].bump(SEM_OFF, code)
        return
    encoder = available.encoder
    index: dict[str, int] = {}
    for r in wanted:
        if r.output:
            for text in (r.output, *[t for t in r.references if t], *([r.source] if r.source else [])):
                index.setdefault(text, len(index))
    vectors = np.zeros((0, 0), dtype=np.float32)
    if index:
        encoded = encoder.encode(list(index), memo)
        vectors = encoded.vectors
        minute = wanted[0].minute
        out[minute].incr(key("sem", "texts"), encoded.computed)
        if encoded.truncated:
            out[minute].incr(key("sem", "truncated"), encoded.truncated)
    for r in wanted:
        acc = accs[(r.minute, r.scenario)]
        out[r.minute].bump(IMPL, MODEL + encoder.sha256)
        refs = [t for t in r.references if t]
        out_vec = vectors[index[r.output]] if r.output else None
        if refs:
            best = max(float(vectors[index[t]] @ out_vec) for t in refs) if out_vec is not None else 0.0
            acc.incr(key("sem_ref", "n"))
            _moments(acc, _SEM_REF, best)
        if r.source is not None:
            value = float(vectors[index[r.source]] @ out_vec) if out_vec is not None else 0.0
            acc.incr(key("sem_src", "n"))
            _moments(acc, _SEM_SRC, value)


def _emit(st: Stats, scn: str, acc: Stats) -> None:
    for f, n in acc.ints.items():
        st.incr(key(scn, f), n)
    for f, v in acc.floats.items():
        st.add(key(scn, f), v)
    for f, bins in acc.hists.items():
        for b, n in bins.items():
            st.bump(key(scn, f.removesuffix(HIST_SUFFIX)), b, n)
    ref_n = acc.ints.get(key("ref", "n"))
    if ref_n:
        st.bump(IMPL, SACREBLEU + sacrebleu.__version__, ref_n)
