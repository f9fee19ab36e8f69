"""Folds merged retrieval statistics: per scenario the mean over queries of each measure with its
95 % interval (Wilson for Success@k, a 0/1 outcome; normal otherwise), the scenario's accuracy
candidate from its main metric, and per model the unweighted mean over scenarios (HELM's group
cells are means of run means) by `macro_mean`, as the accuracy family: n is the queries behind it,
and a scenario at 0 or 1 brings its Wilson interval (no certain 1 (1–1))."""

from __future__ import annotations

from collections import defaultdict

from holistic.families import ScenarioAccuracy, ScenarioPart
from holistic.settings import Settings
from holistic.stats.instances import LATE, OVER_CAP
from holistic.stats.intervals import Moments, all_zero_or_one, mean_var
from holistic.stats.mergeable import Folded
from holistic.stats.metric_values import macro_mean, mean, plain, proportion
from holistic.stats.names import Fields
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.profile_pb2 import FamilyReport, Metric
from metric_services.retrieval.config import RetrievalConfig
from metric_services.retrieval.queries import PENDING, UNRANKED
from metric_services.shared.ranking_measures import MAIN_METRIC, names, topk_name

NAME = "retrieval"


def by_scenario(stats: Folded) -> dict[str, Fields]:
    return stats.groups()


def _metric(name: str, f: Fields) -> tuple[Metric, Moments] | None:
    """A scenario's measure, and its moments for the mean over scenarios."""
    n = f.num(name, "n")
    if n <= 0:
        return None
    s, ss = f.num(name, "sum"), f.num(name, "sumsq")
    if name.startswith("Success@"):
        m = proportion(name, NAME, round(s), n)
    else:
        m = mean(name, NAME, n, s, ss, clip=(0.0, 1.0))
    return m, (*mean_var(n, s, ss), n, all_zero_or_one(n, s, ss))


def scenario_part(
    scn: str, f: Fields, config: RetrievalConfig, settings: Settings
) -> tuple[ScenarioPart, list[tuple[Metric, Moments]]]:
    track = config.track(scn)
    main = settings.main_metrics.get(scn) or MAIN_METRIC[track]
    part = ScenarioPart(count=int(f.get("rankings", 0)), task=pb.TASK_RANKING, main_metric=main)
    metric_names = list(names(track))
    if config.valid_topk is not None:
        metric_names += [topk_name(n, config.valid_topk) for n in names(track)]
    found: list[tuple[Metric, Moments]] = []
    for name in metric_names:
        got = _metric(name, f)
        if got is not None:
            found.append(got)
            part.metrics.append(got[0])
    for field, label in ((PENDING, "queries_pending_judgments"), (UNRANKED, "judgments_without_ranking")):
        n = f.num(field, "n")
        if n:
            part.metrics.append(plain(label, NAME, n, n))
    n = f.num(main, "n")
    if n > 0:
        s, ss = f.num(main, "sum"), f.num(main, "sumsq")
        part.accuracy = ScenarioAccuracy(
            metric=mean("accuracy", NAME, n, s, ss, clip=(0.0, 1.0)), source=main, variance=mean_var(n, s, ss)[1]
        )
    return part, found


def family_report(stats: Folded, parts: dict[str, tuple[ScenarioPart, list[tuple[Metric, Moments]]]]) -> FamilyReport:
    other = int(stats.num("other"))
    by_scn = by_scenario(stats)
    perturbed = sum(int(f.get("perturbed", 0)) for f in by_scn.values())
    judgment_rows = sum(int(f.get("judgment_rows", 0)) for f in by_scn.values())
    over_cap, late = int(stats.num(OVER_CAP)), int(stats.num(LATE))
    rankings = sum(p.count for p, _ in parts.values())
    reasons = []
    if other:
        reasons.append(f"{other} not ranking tasks")
    if perturbed:
        reasons.append(f"{perturbed} perturbed rankings (for robustness and fairness, not the scenario's metrics)")
    if over_cap:
        reasons.append(f"{over_cap} rows of new queries past HOLISTIC_INSTANCE_CAP")
    rep = FamilyReport(
        family=NAME,
        count=rankings + judgment_rows + other + perturbed,  # every prediction the family saw
        skipped=other + perturbed + over_cap,
        skipped_reason="; ".join(reasons),
    )
    per_metric: dict[str, list[Moments]] = defaultdict(list)
    for _, found in parts.values():
        for m, part in found:
            per_metric[m.name].append(part)
    for name, metric_parts in per_metric.items():
        rep.metrics.append(macro_mean(name, NAME, metric_parts))
    pending = sum(f.num(PENDING, "n") for f in by_scn.values())
    if pending:
        rep.metrics.append(plain("queries_pending_judgments", NAME, pending, pending))
    if late:
        rep.metrics.append(plain("rows_later_than_instance_ttl", NAME, late, late))
    return rep
