"""Which of a profile's scenario metrics the anytime-valid alert evidence may read, and their evidence.

The floor's e-process (gateway/sequential.py) and the pinned baseline's test (gateway/baseline_evidence.py)
hold for the mean of n scores in [0, 1] read over one growing stream. A scenario's metric is such a mean
when its value is in [0, 1], it has no unit and a count, and it is
- a share of 0/1 outcomes (its interval is Wilson's: `proportion`), any family's, a plugin's included; or
- a mean over predictions (a normal interval) of a metric its family declares among `main_metrics`: a
  main metric may become a scenario's accuracy, so by the family contract its per-prediction values are
  scores in [0, 1] (docs/writing-a-family.md). A mean of anything else (a client's evaluation scores,
  semantic similarity in [-1, 1], density) may leave [0, 1] per prediction even when its mean does not.
A lower-is-better one (toxic_frac) is read mirrored: 1 − x against 1 − its ceiling. Everything else is
skipped: corpus-level scores (BLEU, chrF, classification F1: a jackknife interval or none), means of
scenario means, ECE, and values with a unit (latency, tokens): the e-process's guarantee would not hold.

The families' declarations are read by name through the registry, so a plugin's main metric counts as a
built-in one does; a family not installed where the exporter runs gives only its shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from gateway import baseline_evidence, sequential
from holistic.errors import ConfigError
from holistic.families.registry import is_installed, load_family
from holistic.v1 import profile_pb2 as pp

SHARE = "wilson"  # the interval method of a share of 0/1 outcomes (holistic/stats/metric_values.py)
MEAN = "normal"  # of a mean over predictions


class Readable(Protocol):
    """What the evidence reads: n scores in [0, 1] whose mean is `score`, higher better (a Scored, or a
    segment cell: gateway/segment_evidence.py)."""

    @property
    def n(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def lower_is_better(self) -> bool: ...


@dataclass(frozen=True)
class Scored:
    """One scenario metric as the e-process reads it: n scores in [0, 1] whose mean is `score`, higher better."""

    scenario: str
    family: str
    metric: str
    n: int
    score: float
    main: bool  # the scenario's main metric
    lower_is_better: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.family, self.metric)


def declared_means(profile: pp.Profile) -> frozenset[tuple[str, str]]:
    """(family, metric) for each main metric the profile's families declare: means of scores in [0, 1]."""
    out: set[tuple[str, str]] = set()
    for report in profile.families:
        if not is_installed(report.family):
            continue
        try:
            family = load_family(report.family)
        except (KeyError, ConfigError):
            continue
        out.update((report.family, name) for name in family.main_metrics)
    return frozenset(out)


def bounded_score(m: pp.Metric, means: frozenset[tuple[str, str]]) -> float | None:
    """The metric as a mean of scores in [0, 1], higher better; None where the e-process's assumptions fail."""
    if not m.count or m.unit or not 0.0 <= m.value <= 1.0:
        return None
    method = m.interval.method if m.HasField("interval") else ""
    if method != SHARE and not (method == MEAN and (m.family, m.name) in means):
        return None
    return 1.0 - m.value if m.lower_is_better else m.value


def scenario_scores(profile: pp.Profile) -> dict[tuple[str, str, str], Scored]:
    """Every scenario metric of the profile the e-process may read, by (scenario, family, metric);
    a name a family repeats in one scenario counts once (its first)."""
    means = declared_means(profile)
    out: dict[tuple[str, str, str], Scored] = {}
    for sp in profile.scenarios:
        for m in sp.metrics:
            value = bounded_score(m, means)
            if value is None or (sp.scenario, m.family, m.name) in out:
                continue
            scored = Scored(sp.scenario, m.family, m.name, int(m.count), value, m.name == sp.main_metric,
                            m.lower_is_better)  # fmt: skip
            out[scored.key] = scored
    return out


def floor_of(floors: Mapping[str, float], scenario: str, metric: str) -> float | None:
    """The floor set for the scenario's metric (`scenario/metric`), else for the metric in every scenario."""
    return floors.get(f"{scenario}/{metric}", floors.get(metric))


def floor_evidence(scored: Readable, floor: float) -> float:
    """E-value against "the metric's mean is at or above `floor`" (at or below it, for a lower-is-better
    metric, whose floor is its ceiling)."""
    level = 1.0 - floor if scored.lower_is_better else floor
    return sequential.evidence(scored.n, scored.score, level)


def against_baseline(current: Readable, pinned: Readable) -> float:
    """Evidence that the current's metric is worse than its pinned baseline's (baseline_evidence's)."""
    return baseline_evidence.evidence(current.n, current.score, pinned.n, pinned.score)
