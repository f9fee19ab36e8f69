"""Summarization family throughput beside the loop a user would write with rouge-score and sacrebleu.

One worker, one core, news-length sources (about 700 words, CNN/DailyMail-like), summaries and
references of three sentences (about 60 words). The texts are real English prose (sentences of
Python's own documentation, shuffled into articles), so the vocabulary has a natural long tail.

  loop      rouge-score RougeScorer([rouge1, rouge2, rougeL], use_stemmer=True).score_multi per
            summary (HELM's max over references), then sacrebleu.corpus_bleu and corpus_chrf
  family    the summarization family's compute() on batches of 500 (ROUGE 1/2/L with P/R, BLEU and chrF
            sufficient statistics, coverage/density/compression against the source) plus its fold;
            semantic similarity off, so it does strictly more than the loop; its caches (word stems,
            sacrebleu's tokenizer) are emptied before each round, as if every text were new
  semantic  the same with the sentence-embedding model on, cache emptied before each round (every
            article new to it): the cost of the offline semantic-similarity proxy
Rounds are interleaved so the machine's noise hits all alike; medians of the rounds.
"""

from __future__ import annotations

import argparse
import random
import re

import sacrebleu
from rouge_score import rouge_scorer
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from benchmarks._common import median, now
from benchmarks._results import Figure, record
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import prediction_pb2 as pb
from metric_services.shared import rouge
from metric_services.summarization import FAMILY, SummarizationFamily
from metric_services.summarization.encoder import encoder_for

BATCH = 500


def sentences() -> list[str]:
    from pydoc_data.topics import topics

    text = " ".join(topics.values())
    out = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text)]
    return [s for s in out if 8 <= len(s.split()) <= 40 and not re.search(r"[{}=<>\[\]_*]|\.\.\.", s)]


def corpus(n: int, seed: int = 2026) -> list[tuple[str, str, str]]:
    """(source, summary, reference) triples."""
    pool = sentences()
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        article: list[str] = []
        while sum(len(s.split()) for s in article) < 700:
            article.append(rng.choice(pool))
        lead = article[: len(article) // 3]
        summary = [*rng.sample(lead, 2), rng.choice(pool)]
        reference = [rng.choice(lead), *rng.sample(pool, 2)]
        out.append((" ".join(article), " ".join(summary), " ".join(reference)))
    return out


def envelopes(data: list[tuple[str, str, str]]) -> list[BatchEnvelope]:
    out = []
    for start in range(0, len(data), BATCH):
        env = BatchEnvelope(model="bench", sequence=start // BATCH + 1)
        env.accept_time.GetCurrentTime()
        for i, (source, summary, reference) in enumerate(data[start : start + BATCH]):
            p = env.predictions.add(id=f"s{start + i}", scenario="news", task=pb.TASK_SUMMARIZATION, output=summary)
            p.references.append(reference)
            p.source = source
        out.append(env)
    return out


def user_loop(data: list[tuple[str, str, str]]) -> float:
    start = now()
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rouge = [scorer.score_multi([reference], summary) for _, summary, reference in data]
    hyps, refs = [s for _, s, _ in data], [[r for _, _, r in data]]
    bleu, chrf = sacrebleu.corpus_bleu(hyps, refs).score, sacrebleu.corpus_chrf(hyps, refs).score
    assert len(rouge) == len(data) and bleu >= 0 and chrf >= 0
    return len(data) / (now() - start)


def cold_caches() -> None:
    """Forget what earlier rounds taught the family: stems (rouge.py) and sacrebleu's 13a tokenizer cache."""
    rouge._stems.clear()
    Tokenizer13a.__call__.cache_clear()


def family(envs: list[BatchEnvelope], fam: SummarizationFamily, clear_cache: bool = False) -> float:
    cold_caches()
    settings = load_settings(redis_url="unix:///unused")
    if clear_cache:
        encoder = encoder_for(fam.config).encoder
        assert encoder is not None, "the semantic benchmark needs the [semantic] extra"
        encoder.cache.clear()
    start = now()
    merged = Stats()
    for env in envs:
        for st in fam.compute(env, settings).values():  # type: ignore[union-attr]
            merged.merge(st)
    fam.fold(Folded.from_stats(merged), "bench", settings)
    return sum(len(e.predictions) for e in envs) / (now() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--summaries", type=int, default=1000)
    ap.add_argument("--semantic-summaries", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = corpus(args.summaries)
    envs = envelopes(data)
    sem_envs = envelopes(data[: args.semantic_summaries])
    lexical = FAMILY.configured(semantic="off")
    semantic = FAMILY.configured(semantic="on", embed_threads=1)
    family(envelopes(data[:20]), lexical)  # warm-up: imports, the stemmer
    family(envelopes(data[:4]), semantic)  # and the ONNX session
    rates: dict[str, list[float]] = {"loop": [], "family": [], "semantic": []}
    for _ in range(args.rounds):
        rates["loop"].append(user_loop(data))
        rates["family"].append(family(envs, lexical))
        rates["semantic"].append(family(sem_envs, semantic, clear_cache=True))
    words = sum(len(s.split()) for s, _, _ in data) / len(data)
    print(f"{args.summaries:,} summaries (sources {words:.0f} words on average), one worker, one core; "
          f"{args.rounds} rounds")  # fmt: skip
    print(f"{'':62}{'summaries/s (median)':>22}   rounds")
    rows = (
        ("rouge-score + sacrebleu loop (ROUGE 1/2/L, corpus BLEU, chrF)", "loop"),
        ("summarization family, lexical (+ P/R, fragments, intervals)", "family"),
        (f"summarization family with semantic similarity ({args.semantic_summaries})", "semantic"),
    )
    for label, key in rows:
        print(f"{label:62}{median(rates[key]):>22,.1f}   {[round(x, 1) for x in rates[key]]}")
    print(f"ratio family / loop: {median(rates['family']) / median(rates['loop']):.1f}x   (goal >= 3x)")
    print(f"ratio semantic / loop: {median(rates['semantic']) / median(rates['loop']):.2f}x")
    loop = "rouge-score score_multi per summary + sacrebleu corpus_bleu + corpus_chrf"
    fam = median(rates["family"])
    record("summarization", [
        Figure(f"{args.summaries:,} summaries, one worker, one core (ROUGE 1/2/L with P/R, BLEU, chrF, fragments)",
               fam, "summaries/s", loop, median(rates["loop"]), True, ">= 3x", fam / median(rates["loop"]) >= 3),
        Figure("the same with semantic similarity on", median(rates["semantic"]), "summaries/s", loop,
               median(rates["loop"]), note="the embedding proxy's cost, which the loop does not do"),
    ])  # fmt: skip


if __name__ == "__main__":
    main()
