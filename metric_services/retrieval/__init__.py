"""Retrieval family: HELM's information-retrieval metrics (trec_eval's, as HELM calls pytrec_eval).

Scores TASK_RANKING predictions: a query (`input`), its candidate documents, the model's ranking
(an explicit order, per-document scores, or HELM's binary ranking adapter's Yes/No answers with
log-probabilities) and judged relevance, complete, partial, or arriving later under the same id.
runs.py turns a ranking into a run, measures.py computes trec_eval's measures for one query,
queries.py joins rankings and judgments per query (holistic/stats/instances.py), report.py folds.
A scenario's main metric is HELM's for its track (RR@10 regular, NDCG@10 TREC) unless
HOLISTIC_MAIN_METRICS names another of its metrics; it is the scenario's accuracy candidate.
The family is a plugin like any other: nothing in the core or the gateway names it.
"""

from __future__ import annotations

from holistic.families import FamilyBase, FamilyFold, MetricMetadata, Partial
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import MetricSignature
from metric_services.retrieval import queries, report
from metric_services.retrieval.config import RetrievalConfig
from metric_services.shared.ranking_measures import NDCG_KS, RECALL_KS, RR_KS, SUCCESS_KS
from metric_services.shared.ranking_runs import form
from metric_services.shared.ranking_score import ranking_scores

NAME = report.NAME
VERSION = "1"
PER_QUERY = ("RR@", "NDCG@")  # the rank-sensitive measures a query's gen_ai.evaluation.result events carry


class RetrievalFamily(FamilyBase):
    name = NAME
    version = VERSION
    Config = RetrievalConfig
    config: RetrievalConfig
    reads_text = False  # ids, scores, relevance; a binary answer's presence, not its text
    main_metrics = (
        *(f"RR@{k}" for k in RR_KS),
        *(f"NDCG@{k}" for k in NDCG_KS),
        *(f"Recall@{k}" for k in RECALL_KS),
        *(f"Success@{k}" for k in SUCCESS_KS),
    )
    metrics = (
        MetricMetadata("RR@*", "RR@k", "Reciprocal rank of the first relevant document within the top k (trec_eval)."),
        MetricMetadata("NDCG@*", "NDCG@k", "Normalized discounted cumulative gain at k (trec_eval ndcg_cut)."),
        MetricMetadata("Recall@*", "Recall@k", "Share of the relevant documents retrieved in the top k (trec_eval)."),
        MetricMetadata("Success@*", "Success@k", "A relevant document is in the top k (trec_eval success)."),
        MetricMetadata(
            "queries_pending_judgments", "Queries pending judgments", "Rankings with no judgment yet (not scored)."
        ),
        MetricMetadata(
            "judgments_without_ranking", "Judgments without ranking", "Judged queries whose ranking has not arrived."
        ),
        MetricMetadata("accuracy", "Accuracy", "The scenario's main metric."),
    )

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> Partial:
        return queries.compute(envelope, queries.QuerySpec(self.config))

    def prediction_scores(self, p: pb.Prediction, settings: Settings) -> list[Score]:
        """A ranking that carries its judgments: its query's RR@k (and NDCG@k on the TREC track), trec_eval's
        measures as shared/ranking_score.py computes them for the statistics. None for a judgments-only row, a
        ranking whose judgments come in another prediction (the per-query state joins them across batches: no
        one prediction has the value) or a perturbed variant (the worst cases score those)."""
        if p.task != pb.TASK_RANKING or p.HasField("perturbation") or form(p.ranking) == pb.RANKING_FORM_JUDGMENTS_ONLY:
            return []
        values = ranking_scores(p, self.config)
        return [Score(name, v) for name, v in (values or {}).items() if name.startswith(PER_QUERY)]

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        parts = {
            scn: report.scenario_part(scn, f, self.config, settings)
            for scn, f in sorted(report.by_scenario(stats).items())
            if f.get("rankings") or f.names(having="n")
        }
        rep = report.family_report(stats, parts)
        return FamilyFold(report=rep, scenarios={scn: part for scn, (part, _) in parts.items()})

    def paired_direction(self, slot: str) -> int:
        """None (0): a query's slots name its ranked documents or its judgments, each with the marker value
        1 (queries.py), so a slot's mean is no score, and slots are named per query (they rarely pair)."""
        return 0

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        cfg = self.config
        options = {
            "measures": "trec_eval(pytrec_eval)|helm-0.5.16",
            "default_track": cfg.default_track,
            "tracks": ",".join(f"{k}={v}" for k, v in sorted(cfg.tracks.items())),
            "valid_topk": str(cfg.valid_topk or ""),
            "binary_answers": f"{cfg.correct_output}/{cfg.wrong_output}",
            "judged": "final" if cfg.judged_final else "joined",
        }
        return make_signature(NAME, VERSION, options)


FAMILY = RetrievalFamily()
