"""Scoring queries through per-query state, so that judgments join their ranking whenever they come.

Every ranking and every judgments-only row is a row of a query instance of holistic/stats/instances.py,
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

With HOLISTIC_RETRIEVAL_JUDGED_FINAL a ranking that arrives with judgments is scored at once in
`compute` into the same statistics, with no per-query state (1.4-4.4x the queries a second in
benchmarks/retrieval.py: no state read, compare-and-set or derive per query); judgments sent later
for it are then counted apart, as `unranked`, and a resent judged ranking counts again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache
from operator import mul

import numpy as np

from holistic.families import Partial, prediction_minute
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.instances import SEP, Reducer, Row
from holistic.stats.mergeable import Stats
from holistic.stats.names import key
from holistic.v1 import prediction_pb2 as pb
from metric_services.retrieval import columns
from metric_services.retrieval.config import RetrievalConfig
from metric_services.shared.ranking_measures import MAX_K, Track, measures, measures_batch, names, topk_name
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

    thresholded = False  # holistic/stats/instances.py: no quantity has thresholds

    def __init__(self, config: RetrievalConfig) -> None:
        self.config = config
        # compute's values of the batch's judged rankings, by instance, with the slots they are of:
        # an instance first seen in this batch derives them without scoring again.
        self.known: dict[str, tuple[dict[str, float], dict[str, float]]] = {}

    def reducer(self, slot: str) -> Reducer:
        return "max"

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return ()

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        known = self.known.get(instance)
        if known is not None and known[0] == slots:
            return known[1]
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


def compute(envelope: BatchEnvelope, spec: QuerySpec) -> Partial:
    """The batch's rankings and judgments as instance rows; per scenario counts of rankings, judgment-only
    rows, documents and perturbed rows; `other` for predictions of other tasks. Rankings by scores
    and judgments-only rows are read in bulk (columns.py) when no topk cut is configured."""
    config = spec.config
    accept_s = envelope.accept_time.seconds
    batch = _Batch(spec)
    bulk: list[tuple[pb.Prediction, int]] = []
    for p in envelope.predictions:
        at = p.produced_at
        minute = prediction_minute(at.seconds, at.nanos, accept_s)
        if p.task != pb.TASK_RANKING:
            batch.out[minute].incr("other")
            continue
        if p.HasField("perturbation"):
            batch.out[minute].incr(key(p.scenario, "perturbed"))
            continue
        ranking = p.ranking
        kind = ranking.form or (pb.RANKING_FORM_ORDER if ranking.order else pb.RANKING_FORM_UNSPECIFIED)
        if kind in _BULK_FORMS and config.valid_topk is None:
            bulk.append((p, minute))
        else:
            _one(batch, p, minute, kind, config)
    if bulk:
        _bulk(batch, bulk, config)
    batch.emit()
    return Partial(dict(batch.out), spec, batch.rows)


_BULK_FORMS = frozenset((pb.RANKING_FORM_UNSPECIFIED, pb.RANKING_FORM_SCORES, pb.RANKING_FORM_JUDGMENTS_ONLY))


class _Batch:
    """What compute gathers: statistics by minute, (rankings, documents) by (minute, scenario), rows,
    and with `judged_final` the metric values of judged rankings (summed per metric at the end)."""

    def __init__(self, spec: QuerySpec) -> None:
        self.spec = spec
        self.config = spec.config
        self.out: dict[int, Stats] = defaultdict(Stats)
        self.counts: dict[tuple[int, str], list[int]] = {}
        self.rows: list[Row] = []
        self.scored: dict[tuple[int, str, int | None], list[list[float]]] = {}

    def ranking(
        self,
        instance: str,
        minute: int,
        scn: str,
        documents: int,
        ids: list[str],
        rels: Mapping[str, int],
        values: list[float] | None = None,
    ) -> bool:
        """Count the ranking; score it at once (judged_final and judged: True) or leave it to its rows
        (`values`: its metric values already computed, for `derive`)."""
        self.count(minute, scn, documents)
        if rels and self.config.judged_final:
            self.score(minute, scn, None, ids, rels)
            return True
        run_slot = _run_slot(ids)
        self.rows.append(Row(instance, run_slot, 1.0, minute))
        if rels:
            judgments_slot = _judgments_slot(rels)
            self.rows.append(Row(instance, judgments_slot, 1.0, minute))
            if values is not None:
                slots = {run_slot: 1.0, judgments_slot: 1.0}
                known = dict(zip(fields(scn, self.config.track(scn), None), values, strict=True))
                self.spec.known[instance] = (slots, known)
        return False

    def count(self, minute: int, scn: str, documents: int) -> None:
        c = self.counts.get((minute, scn))
        if c is None:
            c = self.counts[(minute, scn)] = [0, 0]
        c[0] += 1
        c[1] += documents

    def score(self, minute: int, scn: str, topk: int | None, ids: list[str], rels: Mapping[str, int]) -> None:
        values = measures([rels.get(d, 0) for d in ids[:MAX_K]], list(rels.values()), self.config.track(scn))
        acc = self.scored.get((minute, scn, topk))
        if acc is None:
            acc = self.scored[(minute, scn, topk)] = []
        acc.append(values)

    def judgments(self, instance: str, minute: int, rels: Mapping[str, int]) -> None:
        if rels:
            self.rows.append(Row(instance, _judgments_slot(rels), 1.0, minute))

    def emit(self) -> None:
        for (minute, scn), (n_rankings, n_documents) in self.counts.items():
            st = self.out[minute]
            st.incr(key(scn, "rankings"), n_rankings)
            st.incr(key(scn, "documents"), n_documents)
        for (minute, scn, topk), values in self.scored.items():
            st = self.out[minute]
            n = len(values)
            for prefix, col in zip(fields(scn, self.config.track(scn), topk), zip(*values, strict=True), strict=True):
                st.incr(key(prefix, "n"), n)
                st.add(key(prefix, "sum"), sum(col))
                st.add(key(prefix, "sumsq"), sum(map(mul, col, col)))


def _run_slot(ids: list[str]) -> str:
    text = ",".join(ids)
    if "%" in text or ";" in text or text.count(",") != max(len(ids) - 1, 0):
        text = ",".join(_slot_id(d) for d in ids)
    return "r:" + text


def _one(batch: _Batch, p: pb.Prediction, minute: int, kind: int, config: RetrievalConfig) -> None:
    """One ranking prediction read message by message (every form, and the topk cut)."""
    topk = config.valid_topk
    limit = None if topk is not None else MAX_K
    yes, no = config.correct_output, config.wrong_output
    ranking = p.ranking
    scn = p.scenario
    instance = scn + SEP + p.id
    if kind in (pb.RANKING_FORM_UNSPECIFIED, pb.RANKING_FORM_SCORES):
        ids, rels, any_score = scan(ranking, limit)
        if not any_score and kind == pb.RANKING_FORM_UNSPECIFIED:
            kind = form(ranking)  # BINARY or JUDGMENTS_ONLY
            if kind == pb.RANKING_FORM_BINARY:
                ids = run(ranking, kind, yes, no, limit)
    else:
        ids, rels = run(ranking, kind, yes, no, limit), judgments(ranking)
    if kind == pb.RANKING_FORM_JUDGMENTS_ONLY:
        batch.out[minute].incr(key(scn, "judgment_rows"))
        batch.judgments(instance, minute, rels)
        return
    scored = batch.ranking(instance, minute, scn, len(ranking.documents), ids[:MAX_K], rels)
    if topk is not None:
        cut = _cut(ranking, ids, topk)
        if cut is None:
            pass
        elif scored:
            batch.score(minute, scn, topk, cut, rels)
        else:
            batch.rows.append(Row(instance, "t:" + ",".join(_slot_id(d) for d in cut[:MAX_K]), 1.0, minute))


def _bulk(batch: _Batch, preds: list[tuple[pb.Prediction, int]], config: RetrievalConfig) -> None:
    """Rankings by scores (explicit or inferred) and judgments-only rows, their documents read at once."""
    cols = columns.read([p.ranking for p, _ in preds])
    if cols is None:
        for p, minute in preds:
            _one(batch, p, minute, p.ranking.form, config)
        return
    first = cols.first
    scored, answered = (_per_ranking(cols, flags) for flags in (cols.has_score, cols.has_output))
    ranked: list[int] = []
    for q, (p, minute) in enumerate(preds):
        kind = p.ranking.form
        if kind == pb.RANKING_FORM_UNSPECIFIED and not scored[q]:
            if answered[q]:
                _one(batch, p, minute, pb.RANKING_FORM_BINARY, config)
                continue
            kind = pb.RANKING_FORM_JUDGMENTS_ONLY
        if kind == pb.RANKING_FORM_JUDGMENTS_ONLY:
            batch.out[minute].incr(key(p.scenario, "judgment_rows"))
        else:
            ranked.append(q)
    tops = columns.top_runs(cols, np.array(ranked, np.int64), MAX_K)
    judged_docs = np.flatnonzero(cols.has_relevance)
    judged_at = np.searchsorted(judged_docs, first)
    scores = _judged_values(batch.config, cols, preds, ranked, tops, judged_docs, judged_at)
    final = _sum_judged(batch, preds, scores) if config.judged_final else set()
    runs = dict(zip(ranked, columns.run_lists(tops), strict=True))
    relevance = cols.relevance[judged_docs].tolist()
    judged_list = judged_docs.tolist()
    at = judged_at.tolist()
    doc_ids = cols.doc_ids
    for q, (p, minute) in enumerate(preds):
        if q in final:
            batch.count(minute, p.scenario, int(first[q + 1] - first[q]))
        elif q in runs or p.ranking.form == pb.RANKING_FORM_JUDGMENTS_ONLY or not (scored[q] or answered[q]):
            instance = p.scenario + SEP + p.id
            a, b = at[q], at[q + 1]
            rels = dict(zip(doc_ids(judged_list[a:b]), map(int, relevance[a:b]), strict=True))
            if q in runs:
                ids = doc_ids(runs[q])
                batch.ranking(instance, minute, p.scenario, int(first[q + 1] - first[q]), ids, rels, scores.get(q))
            else:
                batch.judgments(instance, minute, rels)


def _per_ranking(cols: columns.Columns, flags: np.ndarray) -> list[int]:
    """How many of each ranking's documents have the flag."""
    cum = np.concatenate(([0], np.cumsum(flags)))
    return (cum[cols.first[1:]] - cum[cols.first[:-1]]).tolist()


def _judged_values(
    config: RetrievalConfig,
    cols: columns.Columns,
    preds: list[tuple[pb.Prediction, int]],
    ranked: list[int],
    tops: np.ndarray,
    judged_docs: np.ndarray,
    judged_at: np.ndarray,
) -> dict[int, list[float]]:
    """The metric values of the judged rankings among `ranked`, all in numpy (measures_batch: the
    same floats as `measures`), by ranking."""
    judged_n = np.diff(judged_at)
    rows = np.flatnonzero(judged_n[ranked] > 0)
    if not len(rows):
        return {}
    qs = np.asarray(ranked, np.int64)[rows]
    top = tops[rows]
    relevance = np.where(cols.has_relevance, cols.relevance, 0.0)
    ranked_rel = np.where(top >= 0, relevance[np.maximum(top, 0)], 0.0)
    n = judged_n[qs]
    j_row = np.repeat(np.arange(len(qs)), n)
    j_col = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    judged = np.zeros((len(qs), int(n.max())))
    judged[j_row, j_col] = cols.relevance[judged_docs[judged_at[qs][j_row] + j_col]]
    by_track: dict[str, list[int]] = defaultdict(list)
    q_list = qs.tolist()
    for i, q in enumerate(q_list):
        by_track[config.track(preds[q][0].scenario)].append(i)
    out: dict[int, list[float]] = {}
    for track, members in by_track.items():
        got = measures_batch(ranked_rel[members], judged[members], track)  # type: ignore[arg-type]
        out.update(zip((q_list[i] for i in members), got.tolist(), strict=True))
    return out


def _sum_judged(batch: _Batch, preds: list[tuple[pb.Prediction, int]], scores: dict[int, list[float]]) -> set[int]:
    """judged_final: the judged rankings' values summed per (minute, scenario); returns them."""
    groups: dict[tuple[int, str], list[list[float]]] = defaultdict(list)
    for q, values in scores.items():
        p, minute = preds[q]
        groups[(minute, p.scenario)].append(values)
    for (minute, scn), rows in groups.items():
        sub = np.array(rows)
        st = batch.out[minute]
        sums, squares = sub.sum(axis=0).tolist(), (sub * sub).sum(axis=0).tolist()
        for prefix, total, sq in zip(fields(scn, batch.config.track(scn), None), sums, squares, strict=True):
            st.incr(key(prefix, "n"), len(rows))
            st.add(key(prefix, "sum"), total)
            st.add(key(prefix, "sumsq"), sq)
    return set(scores)


def _cut(ranking: pb.Ranking, ids: list[str], topk: int) -> list[str] | None:
    """HELM's rank_limit: the run restricted to documents the retriever ranked at most topk (None
    when the ranking carries no retriever ranks: no topk variant for it)."""
    retriever = {d.id: d.retriever_rank for d in ranking.documents if d.HasField("retriever_rank")}
    if not retriever:
        return None
    return [doc for doc in ids if 0 < retriever.get(doc, 0) <= topk]
