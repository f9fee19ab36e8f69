"""Late judgments through Redis: rankings and their judgments in separate batches, in any order, on two
worker replicas, fill each query in exactly once.

Queries (regular track, run by score b > a > c):
  q0 judged a=1 later                 RR@10 1/2, Recall@1 0
  q1 judged c=1 later, then b=0        RR@10 1/3
  q2 judged with its ranking: b=1      RR@10 1
  q3 never judged                      pending
  q4 judgments only (no ranking)       unranked, not scored
  q5 judged with its ranking: b=0,     RR@10 0 at first, 1/2 once a=1 joins
     later a=1
RR@10 = (1/2 + 1/3 + 1 + 1/2) / 4 = 7/12 over 4 queries, whatever the batching (also when judged
rankings are resent); Recall@1 = (0 + 0 + 1 + 0) / 4.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from tests.conftest import drain
from tests.metric_services.retrieval.support import judgments_only, ranking_prediction

NOW = (int(time.time()) // 60 - 60) * 60
SCORES = {"a": 1.0, "b": 2.0, "c": 0.5}


def at(minutes, p):
    p.produced_at.FromSeconds(NOW + 60 * minutes)
    return p


def rankings():
    return [
        at(0, ranking_prediction("q0", scores=SCORES)),
        at(0, ranking_prediction("q1", scores=SCORES)),
        at(1, ranking_prediction("q2", scores=SCORES, rels={"b": 1})),
        at(1, ranking_prediction("q3", scores=SCORES)),
        at(1, ranking_prediction("q5", scores=SCORES, rels={"b": 0})),
    ]


def judgments():
    return [
        at(5, judgments_only("q0", {"a": 1})),
        at(6, judgments_only("q1", {"c": 1})),
        at(7, judgments_only("q1", {"b": 0})),
        at(7, judgments_only("q4", {"a": 1})),
        at(7, judgments_only("q5", {"a": 1})),
    ]


def batchings():
    r, j = rankings(), judgments()
    return {
        "all_in_one_batch": [r + j],
        "rankings_first": [r, j[:2] + j[3:], j[2:3]],
        "judgments_first": [j[:2] + j[3:], [j[2]], r],
        "one_per_batch_interleaved": [[j[0]], [r[3]], [j[4]], [r[0]], [j[1]], [r[2]], [j[3]], [r[4]], [r[1]], [j[2]]],
        "judgment_repeated": [r, j[:2], j[:2], j[2:]],  # the same judgments twice, new batch ids
        "judged_rankings_resent": [r, j, [r[2], r[4]], [r[4]]],  # a client's retries, new batch ids
    }


def minutes(start, end):
    return datetime.fromtimestamp(NOW + 60 * start, UTC), datetime.fromtimestamp(NOW + 60 * end, UTC)


def stream(gateway, make_worker, model, batches, window="all"):
    workers = [make_worker("retrieval"), make_worker("retrieval")]
    with gateway.client() as client:
        for i, batch in enumerate(batches):
            client.submit(batch, batch_id=f"{model}-{i}", model=model)
            workers[i % 2].step(block_ms=1)
        drain(*workers)
        profile = client.get_profile(model, window)
    scn = next(s for s in profile.scenarios if s.scenario == "msmarco")
    return {m.name: m for m in scn.metrics}, profile


@pytest.mark.parametrize("name", sorted(batchings()))
def test_late_judgments_fill_each_query_in_exactly_once(gateway, make_worker, name):
    m, profile = stream(gateway, make_worker, f"m-{name}", batchings()[name])
    assert m["RR@10"].value == pytest.approx(7 / 12) and m["RR@10"].count == 4
    assert m["Recall@1"].value == pytest.approx(1 / 4)
    assert m["queries_pending_judgments"].value == 1
    assert m["judgments_without_ranking"].value == 1
    assert m["accuracy"].value == pytest.approx(7 / 12) and m["accuracy"].family == "retrieval"
    axis = next(d for d in profile.dimensions if d.axis == "accuracy")
    assert "accuracy[msmarco:RR@10]" in {x.name for x in axis.metrics}


def test_a_judged_query_stays_in_its_rankings_minute(gateway, make_worker):
    """A query is attributed to its earliest row's minute (the ranking's, when judged later): a window
    holding only the judgments' minutes holds none of the scored queries, only q4's orphan judgment."""
    batches = [rankings(), judgments()[:2] + judgments()[3:], judgments()[2:3]]
    m, _ = stream(gateway, make_worker, "m-window", batches, window=minutes(0, 2))
    assert m["RR@10"].value == pytest.approx(7 / 12) and m["RR@10"].count == 4
    late, _ = stream(gateway, make_worker, "m-window", [], window=minutes(5, 8))
    assert "RR@10" not in late and late["judgments_without_ranking"].value == 1
