"""Per-query state: a ranking and its judgments joined in any order, batch or replica, exactly once.

A query is an instance of holistic/instances.py, keyed (scenario, prediction id). Its slots:
"run" (1 once a ranking arrived: an empty ranking is a ranking), "p:<doc>" the document's rank
in the run (its first MAX_K only: no measure looks further), "t:<doc>" its rank in the run cut to
the retriever's top valid_topk and "tk" (1) when the ranking carried retriever ranks, and
"j:<doc>" its judged relevance. Ranks reduce with min, judgments and markers with max, so a
repeated row changes nothing. `derive` scores the query from its slots: when a later prediction
brings judgments, the store subtracts the query's old values and adds the new ones, so a window
always holds each query once with its current judgments. A query with a ranking and no judgment
counts as `pending`, judgments without a ranking as `unranked`; neither is scored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import cache

from holistic.families import Partial, prediction_minute
from holistic.instances import SEP, Reducer, Row
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats import Stats
from holistic.v1 import prediction_pb2 as pb
from metric_services.retrieval.config import RetrievalConfig, Track
from metric_services.retrieval.measures import MAX_K, measures, names, topk_name
from metric_services.retrieval.runs import form, judgments, run

RUN, TOPK = "run", "tk"
PENDING, UNRANKED = "pending", "unranked"


def _slot_id(doc: str) -> str:
    """A document id safe inside an encoded instance state (holistic.instances.State: ';' separates)."""
    return doc.replace("%", "%25").replace(";", "%3B")


class QuerySpec:
    """InstanceSpec of a ranking query; `derive` applies the family's settings (track, valid_topk)."""

    def __init__(self, config: RetrievalConfig) -> None:
        self.config = config

    def reducer(self, slot: str) -> Reducer:
        return "min" if slot[:2] in ("p:", "t:") else "max"

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return ()

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        scn = instance.split(SEP, 1)[0]
        if RUN not in slots:
            return {f"{scn}|{UNRANKED}": 1.0}
        rels: dict[str, int] = {}
        ranks: list[tuple[float, str]] = []
        cut: list[tuple[float, str]] = []
        for slot, v in slots.items():
            kind = slot[:2]
            if kind == "j:":
                rels[slot[2:]] = int(v)
            elif kind == "p:":
                ranks.append((v, slot[2:]))
            elif kind == "t:":
                cut.append((v, slot[2:]))
        if not rels:
            return {f"{scn}|{PENDING}": 1.0}
        track = self.config.track(scn)
        judged = list(rels.values())
        ranks.sort()
        values = measures([rels.get(d, 0) for _, d in ranks], judged, track)
        out = dict(zip(_fields(scn, track, None), values, strict=True))
        topk = self.config.valid_topk
        if topk is not None and TOPK in slots:
            cut.sort()
            values = measures([rels.get(d, 0) for _, d in cut], judged, track)
            out.update(zip(_fields(scn, track, topk), values, strict=True))
        return out


@cache
def _fields(scn: str, track: Track, topk: int | None) -> tuple[str, ...]:
    return tuple(f"{scn}|{n if topk is None else topk_name(n, topk)}" for n in names(track))


def compute(envelope: BatchEnvelope, spec: QuerySpec) -> Partial:
    """Rows of the batch's unperturbed ranking predictions; per scenario counts of rankings,
    judgment-only rows, documents and perturbed rows; `other` for predictions of other tasks."""
    config = spec.config
    accept_s = envelope.accept_time.seconds
    out: dict[int, Stats] = defaultdict(Stats)
    rows: list[Row] = []
    topk = config.valid_topk
    for p in envelope.predictions:
        at = p.produced_at
        minute = prediction_minute(at.seconds, at.nanos, accept_s)
        st = out[minute]
        if p.task != pb.TASK_RANKING:
            st.incr("other")
            continue
        scn = p.scenario
        if p.HasField("perturbation"):
            st.incr(f"{scn}|perturbed")
            continue
        ranking = p.ranking
        instance = scn + SEP + p.id
        kind = form(ranking)
        if kind == pb.RANKING_FORM_JUDGMENTS_ONLY:
            st.incr(f"{scn}|judgment_rows")
        else:
            st.incr(f"{scn}|rankings")
            st.incr(f"{scn}|documents", len(ranking.documents))
            ids = run(ranking, kind, config.correct_output, config.wrong_output)
            rows.append(Row(instance, RUN, 1.0, minute))
            for i, doc in enumerate(ids[:MAX_K]):
                rows.append(Row(instance, "p:" + _slot_id(doc), float(i + 1), minute))
            if topk is not None:
                _topk_rows(rows, instance, ranking, ids, topk, minute)
        for doc, rel in judgments(ranking).items():
            rows.append(Row(instance, "j:" + _slot_id(doc), float(rel), minute))
    return Partial(dict(out), spec, rows)


def _topk_rows(rows: list[Row], instance: str, ranking: pb.Ranking, ids: list[str], topk: int, minute: int) -> None:
    """HELM's rank_limit: the run restricted to documents the retriever ranked at most topk."""
    retriever = {d.id: d.retriever_rank for d in ranking.documents if d.HasField("retriever_rank")}
    if not retriever:
        return
    rows.append(Row(instance, TOPK, 1.0, minute))
    kept = [doc for doc in ids if 0 < retriever.get(doc, 0) <= topk]
    for i, doc in enumerate(kept[:MAX_K]):
        rows.append(Row(instance, "t:" + _slot_id(doc), float(i + 1), minute))
