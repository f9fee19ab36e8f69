"""The demo sample's retrieval scenario (`kb_search`, TASK_RANKING), for tools/make_demo_data.py.

Why a separate module: the retrieval rows draw from their own random stream, so adding them leaves
every other row of the sample, and every number computed from those rows, exactly as it was.

150 support-knowledge-base queries, 10 candidate passages each, 1-2 of them relevant. Each model ranks
the same candidates with its own skill (the relevant passages' score lift over noise) and in its own
form: atlas-70b sends scores (rounded to 2 decimals, so some tie), gale-mix an explicit order,
swift-8b HELM's binary adapter (Yes/No with a log-probability). Judgments (binary) cover the relevant
passages and 2-3 others; 20 % of the queries get them late, in a second prediction with the same id
half an hour later; 5 % are never judged. No timing: the efficiency numbers stay those of the rest.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from holistic.v1 import prediction_pb2 as pb

SCENARIO = "kb_search"
QUERIES = 150
DOCS = 10
LIFT = {"atlas-70b": 2.6, "gale-mix": 1.6, "swift-8b": 0.9}
ACTIONS = ["reset", "change", "export", "cancel", "renew", "verify", "delete", "transfer", "update", "recover"]
OBJECTS = ["my password", "the billing address", "an invoice", "my subscription", "two-factor login",
           "a team workspace", "the API key", "my order history", "a refund request", "the account email"]  # fmt: skip


@dataclass
class Query:
    pid: str
    text: str
    t: float  # seconds after the sample's start
    relevant: set[int]
    judged: dict[int, int] = field(default_factory=dict)
    late: bool = False
    retriever: list[int] = field(default_factory=list)  # first-stage rank per passage


def build_queries(rng: random.Random, span_s: float) -> list[Query]:
    out = []
    for i in range(QUERIES):
        text = f"how do I {rng.choice(ACTIONS)} {rng.choice(OBJECTS)}"
        relevant = set(rng.sample(range(DOCS), rng.choice([1, 1, 2])))
        # Inside the other rows' time span (late judgments too), so windows and throughput stay as they were.
        q = Query(f"{SCENARIO}-{i:06d}", text, rng.uniform(120, span_s - 2700), relevant)
        roll = rng.random()
        if roll >= 0.05:  # 5 %: never judged
            others = [d for d in range(DOCS) if d not in relevant]
            q.judged = {d: 1 for d in relevant} | {d: 0 for d in rng.sample(others, rng.choice([2, 3]))}
            q.late = roll < 0.25
        first_stage = sorted(range(DOCS), key=lambda d: -(1.0 * (d in relevant) + rng.gauss(0, 1)))
        q.retriever = [first_stage.index(d) + 1 for d in range(DOCS)]
        out.append(q)
    return out


def _doc_id(q: Query, d: int) -> str:
    return f"{q.pid}-p{d}"


def answer(model: str, q: Query, rng: random.Random, start_ms: int) -> list[pb.Prediction]:
    """The model's ranking of q (with its judgments unless late) and, when late, the judgments alone."""
    p = pb.Prediction(id=q.pid, model=model, scenario=SCENARIO, task=pb.TASK_RANKING, input=q.text)
    scores = [LIFT[model] * (d in q.relevant) + rng.gauss(0, 1) for d in range(DOCS)]
    for d in range(DOCS):
        doc = p.ranking.documents.add(id=_doc_id(q, d), retriever_rank=q.retriever[d])
        if model == "atlas-70b":
            doc.score = round(scores[d], 2)
        elif model == "swift-8b":
            yes = 1 / (1 + math.exp(-(scores[d] - 0.8)))
            doc.model_output = "Yes" if yes >= 0.5 else "No"
            doc.logprob = round(math.log(max(yes, 1 - yes)), 4)
        if d in q.judged and not q.late:
            doc.relevance = q.judged[d]
    if model == "gale-mix":
        p.ranking.order.extend(_doc_id(q, d) for d in sorted(range(DOCS), key=lambda d: -scores[d]))
    at_ms = start_ms + round((q.t + rng.uniform(0, 30)) * 1000)
    p.produced_at.FromMilliseconds(at_ms)
    out = [p]
    if q.late:
        j = pb.Prediction(id=q.pid, model=model, scenario=SCENARIO, task=pb.TASK_RANKING)
        j.ranking.form = pb.RANKING_FORM_JUDGMENTS_ONLY
        for d, rel in sorted(q.judged.items()):
            j.ranking.documents.add(id=_doc_id(q, d), relevance=rel)
        j.produced_at.FromMilliseconds(at_ms + round(rng.uniform(1200, 2400) * 1000))
        out.append(j)
    return out


def predictions(models: list[str], seed: int, start_ms: int, span_s: float) -> list[pb.Prediction]:
    queries = build_queries(random.Random(seed), span_s)
    out: list[pb.Prediction] = []
    for k, model in enumerate(models):
        rng = random.Random(seed + 1 + k)
        for q in queries:
            out.extend(answer(model, q, rng, start_ms))
    return out
