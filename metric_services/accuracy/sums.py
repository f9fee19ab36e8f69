"""One (minute, scenario)'s accuracy sums for a batch: what compute() emits as Stats fields.

Per scenario (fields prefixed "<scenario>|"): n, task:<t>, perturbed (left out of the run cell),
unscored; ref|… (the five reference metrics of every unperturbed prediction with references),
unjudged|… (those without the client's `correct`), judged|… and judged_norefs|… (the client's
judgements, all and those without references), gen|… (rouge_l, bleu_1, bleu_4 of open-ended tasks),
and the per-class histograms cls_true / cls_pred / cls_tp of classification.
"""

from __future__ import annotations

from holistic.stats.mergeable import Stats
from holistic.stats.names import key
from holistic.v1 import prediction_pb2 as pb
from metric_services.shared.classification import BOTH, PRED, TRUE, label_counts
from metric_services.shared.generation_metrics import GENERATION_METRICS, generation_scores
from metric_services.shared.helm_sets import GENERATION_TASKS
from metric_services.shared.main_metric import TASK
from metric_services.shared.reference_metrics import BINARY, METRICS, scores


class Sums:
    """One (minute, scenario)'s sums, added up locally before they become Stats fields."""

    __slots__ = (
        "cls",
        "gen",
        "gen_n",
        "judged_n",
        "judged_norefs_n",
        "judged_norefs_sum",
        "judged_sum",
        "n",
        "perturbed",
        "ref",
        "ref_n",
        "tasks",
        "unjudged",
        "unjudged_n",
        "unscored",
    )

    def __init__(self) -> None:
        self.n = self.ref_n = self.unjudged_n = self.judged_n = self.judged_sum = self.unscored = 0
        self.perturbed = self.gen_n = self.judged_norefs_n = self.judged_norefs_sum = 0
        self.tasks: dict[int, int] = {}
        self.ref = [0.0] * 6  # the five METRICS, then f1 squared
        self.unjudged = [0.0] * 6
        self.gen = [0.0] * 6  # the three GENERATION_METRICS' sums, then their squares
        self.cls: dict[str, dict[str, int]] = {TRUE: {}, PRED: {}, BOTH: {}}

    def add(self, p: pb.Prediction) -> None:
        self.n += 1
        self.tasks[p.task] = self.tasks.get(p.task, 0) + 1
        if p.HasField("perturbation"):
            self.perturbed += 1  # HELM's run cell: perturbation=None only
            return
        refs = p.references
        judged = p.HasField("correct")
        if refs:
            values = scores(refs, p.output)
            self.ref_n += 1
            ref = self.ref
            for i, v in enumerate(values):
                ref[i] += v
            ref[5] += values[4] * values[4]
            if not judged:
                self.unjudged_n += 1
                unj = self.unjudged
                for i, v in enumerate(values):
                    unj[i] += v
                unj[5] += values[4] * values[4]
            if p.task in GENERATION_TASKS:
                self._generation(list(refs), p.output)
            elif p.task == pb.TASK_CLASSIFICATION:
                self._classification(list(refs), p.output)
        if judged:
            self.judged_n += 1
            self.judged_sum += 1 if p.correct else 0
            if not refs:
                self.judged_norefs_n += 1
                self.judged_norefs_sum += 1 if p.correct else 0
        elif not refs:
            self.unscored += 1

    def _generation(self, refs: list[str], output: str) -> None:
        self.gen_n += 1
        for i, v in enumerate(generation_scores(refs, output)):
            self.gen[i] += v
            self.gen[3 + i] += v * v

    def _classification(self, refs: list[str], output: str) -> None:
        true, pred = label_counts(refs, output)
        for c in true:
            self.cls[TRUE][c] = self.cls[TRUE].get(c, 0) + 1
        if pred is not None:
            self.cls[PRED][pred] = self.cls[PRED].get(pred, 0) + 1
            if pred in true:
                self.cls[BOTH][pred] = self.cls[BOTH].get(pred, 0) + 1

    def emit(self, st: Stats, scn: str) -> None:
        st.incr(key(scn, "n"), self.n)
        for task, count in self.tasks.items():
            st.incr(key(scn, f"{TASK}{task}"), count)
        for part, n, sums in (("ref", self.ref_n, self.ref), ("unjudged", self.unjudged_n, self.unjudged)):
            if n:
                st.incr(key(scn, part, "n"), n)
                for metric, value in zip(METRICS, sums, strict=False):
                    if metric in BINARY:  # counts of 0/1 outcomes: exact integers, and cheaper in Redis
                        st.incr(key(scn, part, metric, "sum"), round(value))
                    else:
                        st.add(key(scn, part, metric, "sum"), value)
                st.add(key(scn, part, "f1_score", "sumsq"), sums[5])
        if self.gen_n:
            st.incr(key(scn, "gen", "n"), self.gen_n)
            for i, metric in enumerate(GENERATION_METRICS):
                st.add(key(scn, "gen", metric, "sum"), self.gen[i])
                st.add(key(scn, "gen", metric, "sumsq"), self.gen[3 + i])
        for kind, counts in self.cls.items():
            for c, k in counts.items():
                st.bump(key(scn, kind), c, k)  # the class label is the bin: free text, the key's last part
        if self.judged_n:
            st.incr(key(scn, "judged", "n"), self.judged_n)
            st.incr(key(scn, "judged", "sum"), self.judged_sum)
        if self.judged_norefs_n:
            st.incr(key(scn, "judged_norefs", "n"), self.judged_norefs_n)
            st.incr(key(scn, "judged_norefs", "sum"), self.judged_norefs_sum)
        if self.unscored:
            st.incr(key(scn, "unscored"), self.unscored)
        if self.perturbed:
            st.incr(key(scn, "perturbed"), self.perturbed)
