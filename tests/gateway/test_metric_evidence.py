"""Alert evidence per scenario metric (gateway/metric_evidence.py): which metrics the e-process may read,
by hand, and the false-alarm rate and detection delay of the per-metric series, simulated with the floor's
and the baseline's own helpers (pytest -s prints the figures)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import pytest

from gateway import baseline_evidence, sequential
from gateway.metric_evidence import (
    Scored,
    against_baseline,
    bounded_score,
    declared_means,
    floor_evidence,
    floor_of,
    scenario_scores,
)
from gateway.quality import QualitySeries
from holistic.families import FamilyBase, registry
from holistic.stats.metric_values import mean, plain, proportion, with_interval
from holistic.v1 import profile_pb2 as pp
from tests.gateway import test_baseline_evidence as pairs
from tests.gateway import test_sequential as streams

SLACK = 3 * math.sqrt(0.05 * 0.95 / streams.STREAMS)  # 3 binomial standard deviations of the simulation's noise


def profile(model: str, *scenarios: pp.ScenarioProfile, families: tuple[str, ...] = ("accuracy",)) -> pp.Profile:
    return pp.Profile(model=model, scenarios=scenarios, families=[pp.FamilyReport(family=name) for name in families])


def scenario(name: str, main: str, *metrics: pp.Metric) -> pp.ScenarioProfile:
    return pp.ScenarioProfile(scenario=name, main_metric=main, metrics=metrics)


MEANS = declared_means(profile("m", families=("accuracy", "summarization", "evaluations", "efficiency")))


def test_the_declared_main_metrics_are_the_families_own_never_a_built_in_list():
    assert {("accuracy", "exact_match"), ("accuracy", "f1_score"), ("summarization", "rouge_2")} <= MEANS
    assert not {f for f, _ in MEANS} & {"evaluations", "efficiency"}  # they declare no main metric
    assert declared_means(profile("m", families=("not-installed",))) == frozenset()


def test_a_plugin_familys_main_metric_is_read_as_a_built_in_ones(monkeypatch):
    """Found by name through the registry (here a family put in its cache, as an entry point would load it)."""

    class Judge(FamilyBase):
        name, version, main_metrics = "judge", "1", ("judge_score",)

    monkeypatch.setitem(registry._loaded, "judge", Judge())
    p = profile("m", scenario("chat", "judge_score", mean("judge_score", "judge", 4, 3.0, 2.5)), families=("judge",))
    assert scenario_scores(p) == {
        ("chat", "judge", "judge_score"): Scored("chat", "judge", "judge_score", 4, 0.75, True, False)
    }


def test_shares_and_declared_means_in_0_1_are_read_the_rest_is_skipped():
    # a share of 0/1 outcomes, any family's (a plugin's: no declaration needed)
    assert bounded_score(proportion("exact_match", "accuracy", 7, 10), MEANS) == 0.7
    assert bounded_score(proportion("grounded_numbers", "hallucination", 2, 3), MEANS) == pytest.approx(2 / 3)
    # lower is better: mirrored
    assert bounded_score(proportion("toxic_frac", "toxicity", 1, 4, lower_is_better=True), MEANS) == 0.75
    # a mean over predictions of a declared main metric (per-prediction scores in [0, 1] by contract)
    f1 = mean("f1_score", "accuracy", 4, 2.0, 1.5, clip=(0.0, 1.0))
    assert bounded_score(f1, MEANS) == 0.5
    # the same kind of mean from a family that does not declare it: may leave [0, 1] per prediction
    assert bounded_score(mean("helpfulness", "evaluations", 4, 2.0, 1.5), MEANS) is None
    assert bounded_score(mean("semantic_similarity_reference", "summarization", 4, 2.0, 1.5), MEANS) is None
    # corpus-level, a unit, outside [0, 1], no count, no interval
    bleu = with_interval(plain("bleu", "summarization", 0.3, 50), 0.2, 0.4, "jackknife")
    assert bounded_score(bleu, MEANS) is None
    assert bounded_score(plain("classification_macro_f1", "accuracy", 0.6, 40), MEANS) is None
    assert bounded_score(mean("latency_mean", "efficiency", 4, 2.0, 1.5, unit="s"), MEANS) is None
    assert bounded_score(mean("f1_score", "accuracy", 4, 5.0, 7.0), MEANS) is None  # 1.25
    assert bounded_score(pp.Metric(name="exact_match", family="accuracy", value=0.5), MEANS) is None
    assert bounded_score(mean("f1_score", "accuracy", 1, 0.5, 0.25), MEANS) is None  # one score: no interval yet


def test_scenario_scores_key_by_scenario_family_metric_and_mark_the_main_metric():
    p = profile(
        "m",
        scenario("qa", "f1_score", mean("f1_score", "accuracy", 4, 2.0, 1.5),
                 proportion("exact_match", "accuracy", 1, 4), proportion("exact_match", "accuracy", 3, 4),
                 plain("bleu_4", "accuracy", 0.1, 4)),
        scenario("chat", "quasi_exact_match", proportion("toxic_frac", "toxicity", 1, 5, lower_is_better=True)),
        families=("accuracy", "toxicity"),
    )  # fmt: skip
    got = scenario_scores(p)
    assert got == {
        ("qa", "accuracy", "f1_score"): Scored("qa", "accuracy", "f1_score", 4, 0.5, True, False),
        ("qa", "accuracy", "exact_match"): Scored("qa", "accuracy", "exact_match", 4, 0.25, False, False),  # first
        ("chat", "toxicity", "toxic_frac"): Scored("chat", "toxicity", "toxic_frac", 5, 0.8, False, True),
    }


def test_a_scenarios_own_floor_wins_over_the_metrics():
    floors = {"exact_match": 0.7, "qa/exact_match": 0.9, "a/b/f1_score": 0.4}
    assert floor_of(floors, "qa", "exact_match") == 0.9
    assert floor_of(floors, "mmlu", "exact_match") == 0.7
    assert floor_of(floors, "a/b", "f1_score") == 0.4 and floor_of(floors, "b", "f1_score") is None


def test_the_evidence_is_the_floors_and_the_baselines_mirrored_for_lower_is_better():
    em = Scored("qa", "accuracy", "exact_match", 400, 0.6, True, False)
    assert floor_evidence(em, 0.7) == sequential.evidence(400, 0.6, 0.7)
    assert 51 < floor_evidence(em, 0.7) < 53  # by hand in tests/gateway/test_sequential.py
    # toxic_frac 0.4 over 400 against a ceiling of 0.3: 1 - 0.4 = 0.6 against 1 - 0.3 = 0.7, the same evidence
    tox = Scored("chat", "toxicity", "toxic_frac", 400, 0.6, False, True)
    assert floor_evidence(tox, 0.3) == pytest.approx(floor_evidence(em, 0.7), rel=1e-12)
    assert floor_evidence(tox, 0.5) < 1  # 0.4 is under a ceiling of 0.5
    base = Scored("qa", "accuracy", "exact_match", 5000, 0.7, True, False)
    assert against_baseline(em, base) == baseline_evidence.evidence(400, 0.6, 5000, 0.7)


def test_the_series_floors_per_scenario_metric_and_baselines_per_shared_main_metric():
    cur = profile(
        "chat-v2",
        scenario("qa", "exact_match", proportion("exact_match", "accuracy", 240, 400),
                 mean("f1_score", "accuracy", 400, 280.0, 210.0)),
        scenario("news", "rouge_2", mean("rouge_2", "summarization", 300, 60.0, 20.0)),
        scenario("chat", "quasi_exact_match", proportion("toxic_frac", "toxicity", 160, 400, lower_is_better=True)),
        families=("accuracy", "summarization", "toxicity"),
    )  # fmt: skip
    pinned = profile(
        "chat-v1",
        scenario("qa", "exact_match", proportion("exact_match", "accuracy", 3500, 5000)),
        scenario("news", "rouge_1", mean("rouge_2", "summarization", 300, 60.0, 20.0)),  # another main metric
        families=("accuracy", "summarization"),
    )  # fmt: skip
    series = QualitySeries()
    series.add_metric_evidence(cur, "t", {"exact_match": 0.7, "qa/f1_score": 0.5, "toxic_frac": 0.3, "bleu": 0.1})
    series.add_metric_baseline_evidence(cur, pinned, "t")
    floor = {tuple(s.labels.values()): s.value for s in series.metric_evidence.samples}
    assert floor == {
        ("t", "chat-v2", "qa", "accuracy", "exact_match"): sequential.evidence(400, 0.6, 0.7),
        ("t", "chat-v2", "qa", "accuracy", "f1_score"): sequential.evidence(400, 0.7, 0.5),
        ("t", "chat-v2", "chat", "toxicity", "toxic_frac"): pytest.approx(sequential.evidence(400, 0.6, 0.7)),
    }
    base = {tuple(s.labels.values()): s.value for s in series.metric_baseline_evidence.samples}
    assert base == {
        ("t", "chat-v2", "chat-v1", "qa", "accuracy", "exact_match"): baseline_evidence.evidence(400, 0.6, 5000, 0.7)
    }  # news: the main metrics differ; f1_score is not qa's main metric


def metric_floor_evidence(metric: str, lower_is_better: bool = False) -> Callable[[int, int, float], float]:
    """The per-metric series' reader for the simulations: one scenario's metric after n predictions, through
    scenario_scores, floor_of and floor_evidence, as the exporter reads it. f1_score is a mean over
    predictions (of 0/1 scores here: sum and sum of squares are the hits), the others shares."""

    family = "toxicity" if lower_is_better else "accuracy"

    def read(n: int, hits: int, floor: float) -> float:
        if metric == "f1_score":
            value = mean(metric, family, n, hits, hits, clip=(0.0, 1.0))
        else:
            value = proportion(metric, family, hits, n, lower_is_better=lower_is_better)
        (scored,) = scenario_scores(profile("m", scenario("qa", "exact_match", value))).values()
        level = floor_of({metric: floor}, "qa", metric)
        assert level is not None
        return floor_evidence(scored, level)

    return read


def metric_pair_evidence(n_c: int, hits_c: int, n_b: int, hits_b: int) -> float:
    """The per-metric baseline series' reader: both profiles' main metric, through scenario_scores."""
    cur = scenario_scores(
        profile("v2", scenario("qa", "exact_match", proportion("exact_match", "accuracy", hits_c, n_c)))
    )
    base = scenario_scores(
        profile("v1", scenario("qa", "exact_match", proportion("exact_match", "accuracy", hits_b, n_b)))
    )
    key = ("qa", "accuracy", "exact_match")
    return against_baseline(cur[key], base[key])


@pytest.mark.parametrize("metric", ["exact_match", "f1_score"], ids=["share", "mean"])
def test_equal_streams_of_a_main_metric_watched_at_every_batch_rarely_alarm(metric):
    alarms = sum(c is not None for c in streams.watch(0.7, 0.7, 41, metric_floor_evidence(metric)))
    rate = alarms / streams.STREAMS
    print(f"{metric} at its floor 0.7, read after every batch: {rate:.1%} of {streams.STREAMS} alarmed (bound 5 %)")
    assert rate <= 0.05 + SLACK  # Ville


@pytest.mark.parametrize("metric", ["exact_match", "f1_score"], ids=["share", "mean"])
def test_a_main_metric_below_its_floor_is_caught_and_the_delay_reported(metric):
    found = [c for c in streams.watch(0.6, 0.7, 42, metric_floor_evidence(metric)) if c is not None]
    delay = statistics.median(found)
    print(f"{metric} 0.6 against a floor of 0.7: {len(found)} of {streams.STREAMS} caught, median {delay:g}")
    assert len(found) == streams.STREAMS and 200 <= delay <= 600


def test_a_lower_is_better_share_is_watched_against_its_ceiling():
    """toxic_frac: outcome 1 is a toxic output; at its ceiling 0.3 rarely alarms, at 0.4 is caught."""
    read = metric_floor_evidence("toxic_frac", lower_is_better=True)
    rate = sum(c is not None for c in streams.watch(0.3, 0.3, 43, read)) / streams.STREAMS
    found = [c for c in streams.watch(0.4, 0.3, 44, read) if c is not None]
    delay = statistics.median(found)
    print(f"toxic_frac at its ceiling 0.3: {rate:.1%} alarmed; at 0.4: {len(found)} caught, median {delay:g}")
    assert rate <= 0.05 + SLACK and len(found) == streams.STREAMS and 200 <= delay <= 600


@pytest.mark.parametrize("frozen", [2000, None], ids=["frozen-baseline", "growing-baseline"])
def test_equal_pairs_of_a_main_metric_watched_at_every_batch_rarely_alarm(frozen):
    rate = sum(c is not None for c in pairs.watch(0.7, 0.7, frozen, 45, metric_pair_evidence)) / pairs.PAIRS
    print(f"exact_match, equal pairs (0.7), baseline {frozen or 'growing'}: {rate:.1%} of {pairs.PAIRS} alarmed")
    assert rate <= 0.05 + SLACK


@pytest.mark.parametrize(
    ("frozen", "fastest", "slowest"), [(5000, 350, 900), (None, 400, 1500)], ids=["frozen-baseline", "growing-baseline"]
)
def test_a_main_metric_drop_against_its_baseline_is_caught_and_the_delay_reported(frozen, fastest, slowest):
    found = [c for c in pairs.watch(0.6, 0.7, frozen, 46, metric_pair_evidence) if c is not None]
    delay = statistics.median(found)
    print(f"exact_match 0.6 against a baseline of 0.7 ({frozen or 'growing'}): {len(found)} caught, median {delay:g}")
    assert len(found) == pairs.PAIRS and fastest <= delay <= slowest
