"""Summarization family: ROUGE, sacrebleu BLEU and chrF, extractiveness, offline semantic similarity.

Scores predictions whose task is TASK_SUMMARIZATION; the others are acknowledged and counted as
skipped, and so are perturbed variants (HELM's run cell is over unperturbed instances).
shared/rouge.py (rouge-score's ROUGE, exactly), corpus_scores.py (sacrebleu from sufficient
statistics), fragments.py (coverage, density, compression against `source`), encoder.py (the
sentence-embedding proxy), scoring.py (a batch's statistics) and report.py (the fold). A
summarization scenario's accuracy is its mean ROUGE-2 F (HELM's choice); the rest goes to the
family report and the per-scenario breakdown.
"""

from __future__ import annotations

from dataclasses import replace

from holistic.families import FamilyBase, FamilyFold, MetricMetadata, ScenarioPart
from holistic.families.shared_memo import SharedMemo
from holistic.families.signature import make_signature
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import plain
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import FamilyReport, Metric, MetricSignature
from metric_services.summarization import corpus_scores, report
from metric_services.summarization.config import SummarizationConfig
from metric_services.summarization.encoder import INSTALL_HINT, MAX_TOKENS, MODEL_NAME
from metric_services.summarization.scoring import IMPL, MODEL, NREFS, SACREBLEU, SEM_OFF, score_batch, summary_values

NAME = report.NAME
VERSION = "2"  # 2: HELM's run cell: perturbed summaries left out
MAIN_METRIC = "rouge_2"
SEMANTIC_OFF = {
    "disabled": "the worker runs with HOLISTIC_SUMMARIZATION_SEMANTIC=off",
    "unavailable": f"no sentence-embedding model on the worker ({INSTALL_HINT}, or HOLISTIC_SUMMARIZATION_MODEL)",
}


class SummarizationFamily(FamilyBase):
    samples = (
        True  # its metrics are shares and means over outputs: a sample estimates them (holistic/families/sampling.py)
    )
    name = NAME
    exported_metrics = ("rouge_2", "bleu", "chrf")  # holistic quality-exporter's default series
    version = VERSION
    Config = SummarizationConfig
    config: SummarizationConfig
    _memo: SharedMemo | None = None
    main_metrics = ("rouge_1", "rouge_2", "rouge_l")
    metrics = (
        MetricMetadata("rouge_*", "ROUGE", "rouge-score's ROUGE F, max over references, mean over summaries."),
        MetricMetadata("bleu*", "BLEU", "sacrebleu's corpus BLEU."),
        MetricMetadata("chrf*", "chrF", "sacrebleu's corpus chrF."),
        MetricMetadata("summac*", "SummaC", "Faithfulness."),
        MetricMetadata("coverage*", "Coverage", "Share of summary words in extractive fragments of the source."),
        MetricMetadata("density*", "Density", "Mean squared extractive fragment length."),
        MetricMetadata("compression*", "Compression", "Source words over summary words."),
        MetricMetadata(
            "semantic_*", "Semantic similarity", "Cosine similarity of sentence embeddings (a proxy, not BERTScore)."
        ),
    )

    def prepare(self, settings: Settings) -> None:
        """Load the embedding model at worker start: with HOLISTIC_SUMMARIZATION_SEMANTIC=on, fail there."""
        from metric_services.summarization.encoder import encoder_for

        encoder_for(self.config)

    def share(self, memo: SharedMemo) -> None:
        """The replicas embed each source and reference once between them (a worker calls this)."""
        if self.config.shared_cache_s:
            self._memo = replace(memo, ttl_s=self.config.shared_cache_s, lease_s=self.config.shared_lease_s)

    def compute(self, envelope: BatchEnvelope, settings: Settings) -> dict[int, Stats]:
        return score_batch(envelope, self.config, self._memo)

    def prediction_scores(self, p: pb.Prediction, settings: Settings) -> list[Score]:
        """The summary's own values (scoring.summary_values); none for a summary with neither references nor
        a source (nothing to compare it with: not a failed evaluation) or a prediction the family skips."""
        return [Score(name, value) for name, value in summary_values(p)]

    def fold(self, stats: Folded, model: str, settings: Settings) -> FamilyFold:
        by_scn = stats.groups()
        parts: dict[str, ScenarioPart] = {}
        per_metric: dict[str, list[tuple[Metric, float]]] = {}
        all_bleu: dict[int, list[float]] = {}
        all_chrf: dict[int, list[float]] = {}
        summaries = unscored = with_refs = 0
        for scn in stats.names(having="n"):
            f = by_scn[scn]
            n = int(f.num("n"))
            summaries += n
            unscored += int(f.num("unscored"))
            ref_n = f.num("ref", "n")
            with_refs += int(ref_n)
            main = settings.main_metrics.get(scn) or MAIN_METRIC
            part = ScenarioPart(count=n, task=pb.TASK_SUMMARIZATION, main_metric=main)
            for m, var in report.scenario_means(f):
                part.metrics.append(m)
                per_metric.setdefault(m.name, []).append((m, var))
            bleu, chrf = report.corpus_groups(f)
            part.metrics.extend(report.corpus_metrics(bleu, chrf, ref_n))
            report.merge_groups(all_bleu, bleu)
            report.merge_groups(all_chrf, chrf)
            part.accuracy = report.scenario_accuracy(f, main, settings.references_win)
            parts[scn] = part

        other = int(stats.num("other"))
        perturbed = int(stats.num("perturbed"))
        skipped = unscored + other + perturbed
        reasons = []
        if other:
            reasons.append(f"{other} not summarization tasks")
        if perturbed:
            reasons.append(f"{perturbed} perturbed variants (HELM's run cell is over unperturbed instances)")
        if unscored:
            reasons.append(f"{unscored} with neither references nor source")
        rep = FamilyReport(
            family=NAME,
            count=summaries + other + perturbed,
            skipped=skipped,
            skipped_reason="; ".join(reasons),
            signature=self.signature_of(stats, settings),
        )
        for name, mv in per_metric.items():
            rep.metrics.append(report.macro(name, mv))
        rep.metrics.extend(report.corpus_metrics(all_bleu, all_chrf, with_refs))
        if perturbed:
            rep.metrics.append(plain("perturbed_predictions", NAME, perturbed, perturbed))
        truncation = report.truncation_metric(stats.num("sem", "texts"), stats.num("sem", "truncated"))
        if truncation is not None:
            rep.metrics.append(truncation)
        if summaries and not any(m.startswith("semantic_") for m in per_metric):
            off = stats.scope(SEM_OFF)
            why = "; ".join(f"{SEMANTIC_OFF.get(code, code)} ({int(c)} predictions)" for code, c in sorted(off.items()))
            why = why or "no summary with a reference or a source to compare with"
            for metric in report.SEMANTIC.values():
                rep.absent_metrics[metric] = why
        return FamilyFold(report=rep, scenarios=parts)

    def signature(self, model: str, settings: Settings) -> MetricSignature:
        """The worker's: its sacrebleu version and embedding model (the window's reference counts, which
        sacrebleu's signature also names, are the fold's: see signature_of)."""
        import sacrebleu

        from metric_services.summarization.encoder import encoder_for

        available = encoder_for(self.config)
        options = {"sacrebleu": sacrebleu.__version__, "semantic": self.config.semantic}
        sha = available.encoder.sha256 if available.encoder is not None else ""
        return make_signature(NAME, VERSION, options, sha)

    def signature_of(self, stats: Folded, settings: Settings) -> MetricSignature:
        """How the numbers were made, from what the workers recorded (sacrebleu version, model hash)."""
        nrefs = [int(k) for f in stats.groups().values() for k in f.scope(NREFS)]
        impl = stats.scope(IMPL)
        versions = sorted(impl.marked(SACREBLEU))
        bleu_sig, chrf_sig = corpus_scores.signatures(nrefs or [1], versions)
        by_model = impl.marked(MODEL)
        models = sorted(by_model, key=lambda h: -by_model[h])
        options = {
            "rouge": "rouge-score-0.1.2|porter-stem|max-over-references|rougeL:sentence-lcs",
            "bleu": bleu_sig,
            "chrf": chrf_sig,
            "fragments": "newsroom-greedy|tokens:regex-lowercase|source",
            "semantic": f"{MODEL_NAME}|mean-pool|l2|max-tokens:{MAX_TOKENS}|cosine" if models else "off",
        }
        if len(models) > 1:
            options["semantic_models"] = ",".join(models)
        return make_signature(NAME, VERSION, options, models[0] if models else "")


FAMILY = SummarizationFamily()
