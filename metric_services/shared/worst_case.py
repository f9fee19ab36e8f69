"""HELM's worst case over perturbations (metric.py compute_worst_case_metrics), shared by the
robustness and fairness families, on holistic/stats/instances.py's per-instance state.

A prediction's score is its scenario's main metric (metric_services/main_metric.py: the client's
`correct` where given). An instance is (scenario, main metric, id): the unperturbed row has slot
"o", a variant of the family's kind (perturbation.family) slot "p:<name>" under its original_id.
Per instance, with S its slots' scores:
- worst = min(S): an instance without variants counts with its own score (HELM), one without its
  original (never sent, not yet arrived, or expired) with its variants' worst;
- per perturbation name: worst = min(original, variant), before = original (when both arrived),
  perturbed = the variant alone.
Run value = mean over instances.

HELM reports the worst case of every per-instance metric of the run, not only the main one. So a
prediction with references also gives its instance one slot per other per-instance metric of its
task's HELM set (shared/helm_sets.py: the exact-match set, or exact_match, quasi_exact_match,
f1_score, rouge_l, bleu_1, bleu_4 for open-ended tasks; a ranking's track's trec_eval measures,
HELM's RankingMetric stats), scored by the references (a ranking's judgments) alone: slot
"<metric>/o" or "<metric>/p:<name>", and per instance `+<metric>|worst` (min over that metric's
slots) and `+<metric>|orig`. Classification's macro/micro F1 are corpus-level, so HELM has no
worst case of them. State cost: an instance keeps 4 to 6 slots per row kind instead of 1 (a few
dozen bytes each in its Redis hash field; a ranking 15 or 18), and each scenario as many more mean
quantities; the
per-perturbation breakdown stays the main metric's. The number of instances (HOLISTIC_INSTANCE_CAP)
does not change. A duplicate row (same instance, same slot) is folded with min,
not counted twice (HELM asserts there is none). The main metric is fixed when a row is applied
(it is part of the instance key): a HOLISTIC_MAIN_METRICS change applies to rows applied after it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from functools import lru_cache

from holistic.families import Partial, ScenarioPart, prediction_minute
from holistic.process.evaluation_events import Score
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings
from holistic.stats.instances import SEP, Reducer, Row, new_row
from holistic.stats.intervals import Moments, all_zero_or_one, mean_var, moments, wilson
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import macro_mean, mean
from holistic.stats.names import Fields, key
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import Interval, Metric
from metric_services.shared.generation_metrics import GENERATION_METRICS
from metric_services.shared.helm_sets import task_metrics
from metric_services.shared.main_metric import (
    TASK,
    ReferenceScores,
    main_metric,
    main_metric_evaluation,
    majority_task,
    prediction_score,
)
from metric_services.shared.reference_metrics import METRICS

ORIGINAL = "o"
VARIANT = "p:"
OTHER = "/"  # "<metric>/<slot>": another metric of the task's HELM set
OTHER_METRIC = "+"  # "+<metric>": a statistics part of another metric of the task's HELM set
UNSCORED = "unscored:"  # "unscored:<metric>": rows without a score for the scenario's main metric
PER_INSTANCE = frozenset(METRICS) | frozenset(GENERATION_METRICS)


class WorstCaseSpec:
    """InstanceSpec: every slot reduced with min; quantities as in the module docstring."""

    thresholded = False  # holistic/stats/instances.py: no quantity has thresholds

    def reducer(self, slot: str) -> Reducer:
        return "min"

    def derive(self, instance: str, slots: Mapping[str, float]) -> dict[str, float]:
        # One pass over the slots with each field name built once per (scenario, metric, slot): this
        # runs twice per changed instance, and the names repeat across every instance of a scenario.
        scn, metric, _ = instance.split(SEP, 2)
        main_worst, main_orig, table = _fields_of(scn, metric)
        worst: float | None = None
        others: dict[str, float] = {}  # "+<metric>|worst" -> min so far, in first-seen order
        other_origs: list[tuple[str, float]] = []
        variants: list[tuple[tuple[str, str, str], float]] = []
        for slot, v in slots.items():
            fields = table.get(slot)
            if fields is None:
                if len(table) >= _MOST_SLOTS:
                    table.clear()
                fields = table[slot] = _slot_fields(scn, metric, slot)
            kind, names = fields
            if kind is _MAIN:
                if worst is None or v < worst:
                    worst = v
                if names:
                    variants.append((names, v))  # type: ignore[arg-type]
            else:
                w = names[0]
                if w not in others or v < others[w]:
                    others[w] = v
                if kind is _OTHER_ORIGINAL:
                    other_origs.append((names[1], v))
        out: dict[str, float] = {}
        if worst is not None:
            out[main_worst] = worst
        out.update(other_origs)
        out.update(others)
        o = slots.get(ORIGINAL)
        if o is not None:
            out[main_orig] = o
        for (w, p, b), v in variants:
            out[w] = v if o is None else min(o, v)
            out[p] = v
            if o is not None:
                out[b] = o
        return out

    def thresholds(self, quantity: str) -> tuple[float, ...]:
        return ()


_MAIN, _OTHER_ORIGINAL, _OTHER_VARIANT = "main", "other original", "other variant"


_MOST_SLOTS = 4096  # slot names kept per (scenario, metric): perturbation names are the client's


@lru_cache(maxsize=1 << 14)
def _fields_of(scn: str, metric: str) -> tuple[str, str, dict[str, tuple[str, tuple[str, ...]]]]:
    """A (scenario, main metric)'s worst and orig fields, and its slots' fields as they are met: one
    lookup by slot name per slot instead of a cached call on three arguments."""
    return key(scn, metric, "worst"), key(scn, metric, "orig"), {}


def _slot_fields(scn: str, metric: str, slot: str) -> tuple[str, tuple[str, ...]]:
    """What a slot feeds: the main metric (a variant: its worst/perturbed/before fields), or another
    metric of the task's set (its worst field, and its orig field for the original)."""
    name, sep, kind = slot.partition(OTHER)
    if sep:
        fields = (key(scn, metric, OTHER_METRIC + name, "worst"),)
        if kind == ORIGINAL:
            return _OTHER_ORIGINAL, (*fields, key(scn, metric, OTHER_METRIC + name, "orig"))
        return _OTHER_VARIANT, fields
    if slot.startswith(VARIANT):
        return _MAIN, tuple(key(scn, metric, slot, what) for what in ("worst", "perturbed", "before"))
    return _MAIN, ()


SPEC = WorstCaseSpec()


def paired_direction(slot: str) -> int:
    """Every slot holds a correctness score (the main metric's, or another of the task's HELM set: exact
    match, F1, ROUGE, BLEU, a ranking's measures), each higher-is-better: +1."""
    name, sep, kind = slot.partition(OTHER)
    part = kind if sep else name
    return 1 if part == ORIGINAL or part.startswith(VARIANT) else 0


RowHook = Callable[[Stats, pb.Prediction, str, float], None]


def compute(envelope: BatchEnvelope, settings: Settings, kind: int, hook: RowHook | None = None) -> Partial:
    """Rows of the batch for the instances, and per scenario: rows, tasks, unscored, other kind."""
    accept_s = envelope.accept_time.seconds
    out: dict[int, Stats] = defaultdict(Stats)
    # (minute, scenario, task) -> rows, and (minute, scenario, part) -> rows, both added at the end
    tasks: Counter[tuple[int, str, int]] = Counter()
    counts: Counter[tuple[int, str, str]] = Counter()
    metrics: dict[tuple[str, int], str] = {}  # (scenario, task) -> main metric: once per batch
    rows: list[Row] = []
    append = rows.append
    for p in envelope.predictions:
        at = p.produced_at
        minute = prediction_minute(at.seconds, at.nanos, accept_s)
        st = out[minute]  # minutes in order of first appearance, as the hook's sums are
        scn, task = p.scenario, p.task
        tasks[minute, scn, task] += 1
        perturbed = p.HasField("perturbation")
        if perturbed and p.perturbation.family != kind:
            counts[minute, scn, "other_kind"] += 1
            continue
        metric = metrics.get((scn, task))
        if metric is None:
            metric = metrics[scn, task] = main_metric(scn, task, settings)
        by_refs = ReferenceScores(p)
        score = prediction_score(p, metric, settings.references_win, by_refs)
        if score is None:
            counts[minute, scn, UNSCORED + metric] += 1
            continue
        slot = VARIANT + p.perturbation.name if perturbed else ORIGINAL
        instance = SEP.join((scn, metric, p.perturbation.original_id if perturbed else p.id))
        append(new_row(Row, (instance, slot, score, minute)))
        for prefix, value in _other_scores(p, metric, by_refs):
            append(new_row(Row, (instance, prefix + slot, value, minute)))
        if not perturbed and hook is not None:
            hook(st, p, key(scn, metric), score)
    for (minute, scn, task), n in tasks.items():
        st = out[minute]
        st.incr(key(scn, "rows"), n)
        st.incr(key(scn, f"{TASK}{task}"), n)
    for (minute, scn, part), n in counts.items():
        out[minute].incr(key(scn, part), n)
    return Partial(dict(out), SPEC, rows)


def variant_evaluation(p: pb.Prediction, settings: Settings, kind: int) -> list[Score]:
    """A variant of the family's kind: its own main-metric score, the one compute gives its instance slot
    (the worst case is the instance's, across batches: no one prediction has it). None for an original (the
    accuracy family sends its score) or another kind's variant."""
    if not p.HasField("perturbation") or p.perturbation.family != kind:
        return []
    score = main_metric_evaluation(p, settings)
    return [] if score is None else [score]


def _other_scores(p: pb.Prediction, main: str, by_refs: ReferenceScores) -> list[tuple[str, float]]:
    """The prediction's other per-instance metrics of its task's HELM set, by its references (a
    ranking's: its track's other measures, by its judgments): (slot prefix "<metric>/", value) each."""
    if p.task == pb.TASK_RANKING:
        values = by_refs.ranking() or {}
        return [(_prefix(m), v) for m, v in values.items() if m != main]
    wanted, generation = _wanted(p.task, main)
    if not wanted or not p.references:
        return []
    exact = by_refs.exact()
    generated = by_refs.generation() if generation else ()
    return [(prefix, (generated if is_generation else exact)[i]) for prefix, is_generation, i in wanted]


@lru_cache(maxsize=1024)
def _prefix(metric: str) -> str:
    return metric + OTHER


@lru_cache(maxsize=1024)
def _wanted(task: int, main: str) -> tuple[tuple[tuple[str, bool, int], ...], bool]:
    """The task's other per-instance metrics, in its set's order, each as its slot prefix with where its
    value is (the exact-match scores or the generation scores, and its index there); and whether any is
    generated."""
    wanted = []
    for m in task_metrics(task):
        if m in PER_INSTANCE and m != main:
            generated = m in GENERATION_METRICS
            wanted.append((_prefix(m), generated, (GENERATION_METRICS if generated else tuple(METRICS)).index(m)))
    return tuple(wanted), any(g for _, g, _ in wanted)


def split_scenarios(stats: Folded) -> dict[str, Fields]:
    return stats.groups()


def mean_metric(name: str, family: str, f: Mapping[str, float], prefix: str) -> Metric | None:
    n = f.get(key(prefix, "n"), 0.0)
    if n <= 0:
        return None
    total, sumsq = f.get(key(prefix, "sum"), 0.0), f.get(key(prefix, "sumsq"), 0.0)
    m = mean(name, family, n, total, sumsq, clip=(0.0, 1.0))
    var = mean_var(n, total, sumsq)[1]
    if all_zero_or_one(n, total, sumsq) and (var == 0.0 or math.isinf(var)):  # at 0 or 1, or one instance
        lo, hi = wilson(total, n)
        m.interval.CopyFrom(Interval(lower=lo, upper=hi, level=0.95, method="wilson"))
    return m


def _field_order(name: str) -> str:
    """The order of the names' fields ("typos_2|..." before "typos|..."): the metrics' order in a part."""
    return key(name, "")


class ScenarioWorst:
    """One scenario's worst case (and per perturbation) under its current main metric."""

    def __init__(self, scn: str, f: Fields, settings: Settings, family: str, label: str) -> None:
        self.scn = scn
        self.task = majority_task(f)
        self.metric = main_metric(scn, self.task, settings)
        self.rows = int(f.get("rows", 0))
        self.unscored = int(sum(f.marked(UNSCORED).values()))
        self.part = ScenarioPart(count=self.rows, task=self.task, main_metric=self.metric)
        q = f.scope(self.metric)
        self.value: Moments | None = None
        self.variants: dict[str, dict[str, Moments]] = {}
        # HELM's worst case of each metric of the task's set (the main one included), by name.
        self.per_metric: dict[str, Moments] = {}
        if q.num("worst", "n") > 0:
            self.value = moments(q, "worst")
            self.part.metrics.append(mean_metric(label, family, q, "worst"))  # type: ignore[arg-type]
            self.per_metric[self.metric] = self.value
            self.part.metrics.append(mean_metric(f"{label}[{self.metric}]", family, q, "worst"))  # type: ignore[arg-type]
            worst_n = key("worst", "n")
            for name in sorted(q.names(having=worst_n, marker=OTHER_METRIC), key=_field_order):
                if q.num(OTHER_METRIC + name, worst_n) > 0:
                    other = q.scope(OTHER_METRIC + name)
                    self.per_metric[name] = moments(other, "worst")
                    self.part.metrics.append(mean_metric(f"{label}[{name}]", family, other, "worst"))  # type: ignore[arg-type]
            self.instances = int(q.num("worst", "n"))
            self.with_original = int(q.num("orig", "n"))
            for name in sorted(q.names(having=worst_n, marker=VARIANT), key=_field_order):
                vq = q.scope(VARIANT + name)
                entry = self.variants.setdefault(name, {})
                for what in ("worst", "before", "perturbed"):
                    if vq.num(what, "n") > 0:
                        entry[what] = moments(vq, what)
                        self.part.metrics.append(mean_metric(f"{name}_{what}", family, vq, what))  # type: ignore[arg-type]


def metric_macros(scenarios: list[ScenarioWorst], family: str) -> list[Metric]:
    """Per HELM metric: its worst case averaged over the scenarios whose task defines it."""
    names = sorted({n for s in scenarios for n in s.per_metric})
    return [
        macro_mean(f"{family}[{n}]", family, [s.per_metric[n] for s in scenarios if n in s.per_metric]) for n in names
    ]


def variant_macros(scenarios: list[ScenarioWorst], family: str) -> list[Metric]:
    """Per perturbation name: worst / before / perturbed, averaged over the scenarios that have it."""
    names = sorted({n for s in scenarios for n in s.variants})
    out = []
    for name in names:
        for what in ("worst", "before", "perturbed"):
            parts = [s.variants[name][what] for s in scenarios if what in s.variants.get(name, {})]
            if parts:
                out.append(macro_mean(f"{name}_{what}", family, parts))
    return out
