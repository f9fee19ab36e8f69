"""Scoring queries through per-query state, so that judgments join their ranking whenever they come.

Every ranking and every judgments-only row is a row of a query instance of holistic/instances.py,
keyed (scenario, prediction id), so they join in any order, batch or replica, exactly once. The
instance's slots: "r:<doc>,<doc>,..." (1) the run's first MAX_K document ids (no measure looks
further), "t:<...>" (1) the same for the run cut to the retriever's top valid_topk, and per
prediction with judgments one slot "J:<doc>=<relevance>,..." (one row a prediction, however many
documents it judges); a document's relevance is its largest over the slots, so a repeated row
changes nothing. `derive` scores the query from its slots
into the scenario's statistics (per minute: `<metric>|n`, `|sum`, `|sumsq`); when judgments arrive
for a query already scored (sent with its ranking or earlier), the store subtracts the query's old
values and adds those on the union of its judgments in the same apply, so a query counts once, on
all its judgments. A query with a ranking and no judgment counts as `pending`, judgments without a
ranking as `unranked`; neither is scored. A ranking resent under its id (a client's retry) changes
nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache

from holistic.families import Partial, prediction_minute
from holistic.instances import SEP, Reducer, Row
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats import Stats
from holistic.v1 import prediction_pb2 as pb
from metric_services.retrieval.config import RetrievalConfig
from metric_services.shared.ranking_measures import MAX_K, Track, measures, names, topk_name
from metric_services.shared.ranking_runs import form, judgments, run, scan

PENDING, UNRANKED = "pending", "unranked"


def _slot_id(doc: str) -> str:
    """A document id safe in a slot name: ',' separates a run's ids, ';' an encoded state's slots."""
    return doc.replace("%", "%25").replace(";", "%3B").replace(",", "%2C")


def _judgments_slot(rels: Mapping[str, int]) -> str:
    """One prediction's judgments as one slot, "J:<doc>=<relevance>,..." (sorted: the same judgments
    resent are the same slot). A document's relevance is the last '=' field: ids may contain '='."""
    return "J:" + ",".join(f"{_slot_id(d)}={r}" for d, r in sorted(rels.items()))


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
            if kind == "J:":
                for pair in slot[2:].split(","):
                    doc, _, rel = pair.rpartition("=")
                    r = int(rel)
                    if r > rels.get(doc, -1):
                        rels[doc] = r
            elif kind == "j:":  # one judgment a slot: states written before judgments were packed
                r = int(v)
                if r > rels.get(slot[2:], -1):
                    rels[slot[2:]] = r
            elif kind == "r:":
                runs.append(slot[2:])
            elif kind == "t:":
                cuts.append(slot[2:])
        if not runs:
            return {f"{scn}|{UNRANKED}": 1.0}
        if not rels:
            return {f"{scn}|{PENDING}": 1.0}
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
    return tuple(f"{scn}|{n if topk is None else topk_name(n, topk)}" for n in names(track))


def compute(envelope: BatchEnvelope, spec: QuerySpec) -> Partial:
    """The batch's rankings and judgments as instance rows; per scenario counts of rankings, judgment-only
    rows, documents and perturbed rows; `other` for predictions of other tasks."""
    config = spec.config
    accept_s = envelope.accept_time.seconds
    out: dict[int, Stats] = defaultdict(Stats)
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
            out[minute].incr(f"{scn}|perturbed")
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
            out[minute].incr(f"{scn}|judgment_rows")
            if rels:
                rows.append(Row(instance, _judgments_slot(rels), 1.0, minute))
            continue
        c = counts.get((minute, scn))
        if c is None:
            c = counts[(minute, scn)] = [0, 0]
        c[0] += 1
        c[1] += len(ranking.documents)
        rows.append(Row(instance, "r:" + ",".join(_slot_id(d) for d in ids[:MAX_K]), 1.0, minute))
        if topk is not None:
            cut = _cut(ranking, ids, topk)
            if cut is not None:
                rows.append(Row(instance, "t:" + ",".join(_slot_id(d) for d in cut[:MAX_K]), 1.0, minute))
        if rels:
            rows.append(Row(instance, _judgments_slot(rels), 1.0, minute))
    for (minute, scn), (n_rankings, n_documents) in counts.items():
        st = out[minute]
        st.incr(f"{scn}|rankings", n_rankings)
        st.incr(f"{scn}|documents", n_documents)
    return Partial(dict(out), spec, rows)


def _cut(ranking: pb.Ranking, ids: list[str], topk: int) -> list[str] | None:
    """HELM's rank_limit: the run restricted to documents the retriever ranked at most topk (None
    when the ranking carries no retriever ranks: no topk variant for it)."""
    retriever = {d.id: d.retriever_rank for d in ranking.documents if d.HasField("retriever_rank")}
    if not retriever:
        return None
    return [doc for doc in ids if 0 < retriever.get(doc, 0) <= topk]
