"""Scoring queries: at once when a ranking carries its judgments, through per-query state when they
come later.

Fast path: a ranking that arrives with judgments is scored in `compute` and added to the batch's
ordinary statistics (per minute and scenario: `<metric>|n`, `|sum`, `|sumsq`), like any family's.
Late path: a ranking without judgments, and a judgments-only row, are rows of a query instance of
holistic/instances.py, keyed (scenario, prediction id), so they join in any order, batch or replica,
exactly once. The instance's slots: "r:<doc>,<doc>,..." (1) the run's first MAX_K document ids (no
measure looks further), "t:<...>" (1) the same for the run cut to the retriever's top valid_topk,
"j:<doc>" the judged relevance (max: a repeated row changes nothing). `derive` scores the query from
its slots into the same statistics fields as the fast path; when judgments arrive the store
subtracts the query's old values and adds the new ones. A query with a ranking and no judgment
counts as `pending`, judgments without a ranking as `unranked`; neither is scored.

So a ranking sent with some judgments is final: judgments sent later for it are counted as
`judgments_without_ranking`, not joined (send a ranking without judgments to have them joined).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache
from operator import mul

from holistic.families import Partial, prediction_minute
from holistic.instances import SEP, Reducer, Row
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stat_keys import key
from holistic.stats import Stats
from holistic.v1 import prediction_pb2 as pb
from metric_services.retrieval.config import RetrievalConfig, Track
from metric_services.retrieval.measures import MAX_K, measures, names, topk_name
from metric_services.retrieval.runs import form, judgments, run, scan

PENDING, UNRANKED = "pending", "unranked"


def _slot_id(doc: str) -> str:
    """A document id safe in a slot name: ',' separates a run's ids, ';' an encoded state's slots."""
    return doc.replace("%", "%25").replace(";", "%3B").replace(",", "%2C")


class QuerySpec:
    """InstanceSpec of a ranking query; `derive` applies the family's settings (track, valid_topk)."""

    def __init__(self, config: RetrievalConfig) -> None:
        self.config = config

    def reducer(self, slot: str) -> Reducer:
        return "max"

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return ()

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        scn = instance.split(SEP, 1)[0]
        rels: dict[str, int] = {}
        runs: list[str] = []
        cuts: list[str] = []
        for slot, v in slots.items():
            kind = slot[:2]
            if kind == "j:":
                rels[slot[2:]] = int(v)
            elif kind == "r:":
                runs.append(slot[2:])
            elif kind == "t:":
                cuts.append(slot[2:])
        if not runs:
            return {key(scn, UNRANKED): 1.0}
        if not rels:
            return {key(scn, PENDING): 1.0}
        track = self.config.track(scn)
        judged = list(rels.values())
        best = min(runs)  # one run per id; a different one resent under it: the least, whatever the order
        ids = best.split(",") if best else []
        values = measures([rels.get(d, 0) for d in ids], judged, track)
        out = dict(zip(fields(scn, track, None), values, strict=True))
        topk = self.config.valid_topk
        if topk is not None and cuts:
            kept = min(cuts)
            values = measures([rels.get(d, 0) for d in kept.split(",")] if kept else [], judged, track)
            out.update(zip(fields(scn, track, topk), values, strict=True))
        return out


@lru_cache(maxsize=4096)
def fields(scn: str, track: Track, topk: int | None) -> tuple[str, ...]:
    """The statistics field prefixes of the scenario's metrics."""
    return tuple(key(scn, n if topk is None else topk_name(n, topk)) for n in names(track))


class _Sums:
    """A (minute, scenario)'s fast-path queries: their metric values, summed per metric at the end."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: list[list[float]] = []

    def emit(self, st: Stats, prefixes: tuple[str, ...]) -> None:
        n = len(self.rows)
        for prefix, col in zip(prefixes, zip(*self.rows, strict=True), strict=True):
            st.incr(key(prefix, "n"), n)
            st.add(key(prefix, "sum"), sum(col))
            st.add(key(prefix, "sumsq"), sum(map(mul, col, col)))


def compute(envelope: BatchEnvelope, spec: QuerySpec) -> Partial:
    """The batch's judged rankings scored, the rest as instance rows; per scenario counts of rankings,
    judgment-only rows, documents and perturbed rows; `other` for predictions of other tasks."""
    config = spec.config
    accept_s = envelope.accept_time.seconds
    out: dict[int, Stats] = defaultdict(Stats)
    sums: dict[tuple[int, str, int | None], _Sums] = {}
    counts: dict[tuple[int, str], list[int]] = {}  # rankings, documents
    rows: list[Row] = []
    topk = config.valid_topk
    limit = None if topk is not None else MAX_K
    yes, no = config.correct_output, config.wrong_output
    for p in envelope.predictions:
        at = p.produced_at
        minute = prediction_minute(at.seconds, at.nanos, accept_s)
        if p.task != pb.TASK_RANKING:
            out[minute].incr("other")
            continue
        scn = p.scenario
        if p.HasField("perturbation"):
            out[minute].incr(key(scn, "perturbed"))
            continue
        ranking = p.ranking
        instance = scn + SEP + p.id
        kind = ranking.form or (pb.RANKING_FORM_ORDER if ranking.order else pb.RANKING_FORM_UNSPECIFIED)
        if kind in (pb.RANKING_FORM_UNSPECIFIED, pb.RANKING_FORM_SCORES):
            ids, rels, any_score = scan(ranking, limit)
            if not any_score and kind == pb.RANKING_FORM_UNSPECIFIED:
                kind = form(ranking)  # BINARY or JUDGMENTS_ONLY
                if kind == pb.RANKING_FORM_BINARY:
                    ids = run(ranking, kind, yes, no, limit)
        else:
            ids, rels = run(ranking, kind, yes, no, limit), judgments(ranking)
        if kind == pb.RANKING_FORM_JUDGMENTS_ONLY:
            out[minute].incr(key(scn, "judgment_rows"))
            rows.extend(Row(instance, "j:" + _slot_id(d), float(r), minute) for d, r in rels.items())
            continue
        c = counts.get((minute, scn))
        if c is None:
            c = counts[(minute, scn)] = [0, 0]
        c[0] += 1
        c[1] += len(ranking.documents)
        cut = _cut(ranking, ids, topk) if topk is not None else None
        if rels:
            track = config.track(scn)
            judged = list(rels.values())
            for k, ranked in ((None, ids), (topk, cut)):
                if ranked is None:
                    continue
                acc = sums.get((minute, scn, k))
                if acc is None:
                    acc = sums[(minute, scn, k)] = _Sums()
                acc.rows.append(measures([rels.get(d, 0) for d in ranked[:MAX_K]], judged, track))
            continue
        rows.append(Row(instance, "r:" + ",".join(_slot_id(d) for d in ids[:MAX_K]), 1.0, minute))
        if cut is not None:
            rows.append(Row(instance, "t:" + ",".join(_slot_id(d) for d in cut[:MAX_K]), 1.0, minute))
    for (minute, scn), (n_rankings, n_documents) in counts.items():
        st = out[minute]
        st.incr(key(scn, "rankings"), n_rankings)
        st.incr(key(scn, "documents"), n_documents)
    for (minute, scn, k), acc in sums.items():
        acc.emit(out[minute], fields(scn, config.track(scn), k))
    return Partial(dict(out), spec, rows)


def _cut(ranking: pb.Ranking, ids: list[str], topk: int) -> list[str] | None:
    """HELM's rank_limit: the run restricted to documents the retriever ranked at most topk (None
    when the ranking carries no retriever ranks: no topk variant for it)."""
    retriever = {d.id: d.retriever_rank for d in ranking.documents if d.HasField("retriever_rank")}
    if not retriever:
        return None
    return [doc for doc in ids if 0 < retriever.get(doc, 0) <= topk]
