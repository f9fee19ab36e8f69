"""trec_eval's measures as HELM calls them, against pytrec-eval-terrier on random queries.

The reference is HELM's RankingMetric.compute_measure written out: the run as {doc: score}, the
judgments binarized (1 -> 0) for RR/Recall/Success on the TREC track, recip_rank on the run cut
to its top k, one RelevanceEvaluator per measure. Documents are ranked from scores by
metric_services.shared.ranking_runs (trec_eval's tie-break), so score ties exercise both sides.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import pytrec_eval

from holistic.v1 import prediction_pb2 as pb
from metric_services.shared.ranking_measures import MAIN_METRIC, MAX_K, measures, measures_batch, names
from metric_services.shared.ranking_runs import run
from tests.metric_services.retrieval.support import helm_measure

TOL = 1e-12


def random_query(rng: random.Random, track: str) -> tuple[dict[str, int], dict[str, float]]:
    n_docs = rng.choice([0, 1, 2, 5, 10, 15, 30])
    docs = [f"d{rng.randrange(1000)}x{i}" for i in range(n_docs)]
    levels = [0, 1, 2, 3] if track == "trec" else [0, 1]
    scores = {d: float(rng.choice([1, 2, 3, 4])) if rng.random() < 0.5 else rng.random() for d in docs}
    qrels = {d: rng.choice(levels) for d in docs if rng.random() < 0.6}  # some unjudged
    for i in range(rng.choice([0, 0, 1, 3])):  # judged documents the model never saw
        qrels[f"unseen{i}"] = rng.choice(levels)
    if not qrels:
        qrels["unseen-none"] = 0  # a judged query with nothing relevant (pytrec_eval scores it 0)
    return qrels, scores


def ours(qrels: dict[str, int], scores: dict[str, float], track: str) -> dict[str, float]:
    ranking = pb.Ranking(documents=[pb.RankedDocument(id=d, score=s) for d, s in scores.items()])
    order = run(ranking, pb.RANKING_FORM_SCORES, limit=MAX_K if len(scores) % 2 else None)  # both paths
    values = measures([qrels.get(d, 0) for d in order], list(qrels.values()), track)
    return dict(zip(names(track), values, strict=True))


@pytest.mark.parametrize("track", ["regular", "trec"])
def test_random_queries_equal_pytrec_eval(track):
    rng = random.Random(12 if track == "regular" else 13)
    kinds = {"ties": 0, "empty": 0, "no_relevant": 0, "unjudged": 0, "short": 0}
    for _ in range(400):
        qrels, scores = random_query(rng, track)
        got = ours(qrels, scores, track)
        for name in names(track):
            assert got[name] == pytest.approx(helm_measure(qrels, scores, name, track), abs=TOL), (name, qrels, scores)
        kinds["ties"] += len(set(scores.values())) < len(scores)
        kinds["empty"] += not scores
        kinds["no_relevant"] += not any(r >= (2 if track == "trec" else 1) for r in qrels.values())
        kinds["unjudged"] += any(d not in qrels for d in scores)
        kinds["short"] += 0 < len(scores) < 20
    assert all(kinds.values()), kinds  # every edge case was drawn


@pytest.mark.parametrize("track", ["regular", "trec"])
def test_measures_of_many_queries_at_once_are_the_same_floats(track):
    """measures_batch (the judged_final bulk path) against measures, bit for bit, on the random queries
    above (so against pytrec_eval too), runs padded with 0 and judgments with 0 to the widest."""
    rng = random.Random(14)
    ranked, judged, expected = [], [], []
    for _ in range(400):
        qrels, scores = random_query(rng, track)
        if not qrels:
            continue
        order = run(pb.Ranking(documents=[pb.RankedDocument(id=d, score=v) for d, v in scores.items()]), 2, limit=MAX_K)
        row = [qrels.get(d, 0) for d in order]
        ranked.append(row + [0] * (MAX_K - len(row)))
        judged.append(list(qrels.values()))
        expected.append(measures(row, judged[-1], track))
    width = max(map(len, judged))
    padded = np.array([j + [0] * (width - len(j)) for j in judged], np.float64)
    got = measures_batch(np.array(ranked, np.float64), padded, track)
    assert got.tolist() == expected


def test_helm_names_and_main_metrics():
    assert names("regular") == (
        *(f"Success@{k}" for k in (1, 2, 3, 5, 10, 20)),
        *(f"Recall@{k}" for k in (1, 2, 3, 5, 10, 20)),
        "RR@5",
        "RR@10",
        "RR@20",
    )
    assert names("trec")[-3:] == ("NDCG@5", "NDCG@10", "NDCG@20")
    assert MAIN_METRIC == {"regular": "RR@10", "trec": "NDCG@10"}


def test_hand_worked_trec_query():
    # Run a, b, c, d; judgments a=1, c=3, e=2 (e not retrieved). TREC binarizes 1 -> 0: relevant c, e.
    got = dict(zip(names("trec"), measures([1, 0, 3, 0], [1, 3, 2], "trec"), strict=True))
    assert got["RR@5"] == pytest.approx(1 / 3)
    assert got["Success@2"] == 0.0 and got["Success@3"] == 1.0
    assert got["Recall@3"] == pytest.approx(0.5) and got["Recall@1"] == 0.0
    dcg = 1 + 3 / 2  # a at rank 1 (discount 1), c at rank 3 (1 / log2 4)
    ideal = 3 + 2 / 1.584962500721156 + 1 / 2
    assert got["NDCG@5"] == pytest.approx(dcg / ideal, abs=1e-15)
    regular = dict(zip(names("regular"), measures([1, 0, 3, 0], [1, 3, 2], "regular"), strict=True))
    assert regular["RR@5"] == 1.0 and regular["Recall@1"] == pytest.approx(1 / 3)


def test_binary_adapter_order_is_helms():
    # HELM: Yes by logprob desc, then No by -logprob desc, then other answers; stable on ties.
    docs = [
        pb.RankedDocument(id="no_confident", model_output="No", logprob=-0.1),
        pb.RankedDocument(id="yes_unsure", model_output=" yes ", logprob=-2.0),
        pb.RankedDocument(id="maybe", model_output="Maybe", logprob=-0.5),
        pb.RankedDocument(id="yes_sure", model_output="Yes", logprob=-0.2),
        pb.RankedDocument(id="no_unsure", model_output="No", logprob=-3.0),
        pb.RankedDocument(id="yes_tie", model_output="Yes", logprob=-2.0),
    ]
    order = run(pb.Ranking(documents=docs), pb.RANKING_FORM_BINARY)
    assert order == ["yes_sure", "yes_unsure", "yes_tie", "no_unsure", "no_confident", "maybe"]


def test_score_ties_break_by_document_id_descending_like_trec_eval():
    ranking = pb.Ranking(documents=[pb.RankedDocument(id=d, score=1.0) for d in ("b", "c", "a")])
    assert run(ranking, pb.RANKING_FORM_SCORES) == ["c", "b", "a"]
    got = pytrec_eval.RelevanceEvaluator({"q": {"b": 1}}, {"recip_rank"}).evaluate(
        {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    )
    assert got["q"]["recip_rank"] == 0.5  # trec_eval agrees: c, then b


def test_ties_between_non_ascii_ids_follow_trec_eval():
    ids = ["é", "z", "ｚ", "Z", "e\u0301", "😀", "a"]
    ranking = pb.Ranking(documents=[pb.RankedDocument(id=d, score=1.0) for d in ids])
    order = run(ranking, pb.RANKING_FORM_SCORES, limit=3)
    for relevant in ids:
        got = pytrec_eval.RelevanceEvaluator({"q": {relevant: 1}}, {"recip_rank"}).evaluate(
            {"q": dict.fromkeys(ids, 1.0)}
        )
        full = run(ranking, pb.RANKING_FORM_SCORES)
        assert got["q"]["recip_rank"] == pytest.approx(1 / (full.index(relevant) + 1), abs=TOL), relevant
    assert order == full[:3]
