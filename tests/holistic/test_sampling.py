"""Scoring a sample (holistic/families/sampling.py): which predictions, the rate's rules, and honest intervals."""

from __future__ import annotations

import hashlib

import pytest

from holistic.errors import ConfigError
from holistic.families import sampling
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import Folded, Stats
from holistic.stats.metric_values import mean, proportion
from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp


def reference_position(model: str, scenario: str, instance: str) -> float:
    """Written out by hand: blake2b-64 of "<len>:<part>" for each part, big-endian, over 2^64."""
    text = f"{len(model)}:{model}{len(scenario)}:{scenario}{len(instance)}:{instance}"
    return int(hashlib.blake2b(text.encode(), digest_size=8).hexdigest(), 16) / 2**64


def test_position_is_the_hash_of_model_scenario_and_instance():
    assert sampling.position("m", "s", "1") == reference_position("m", "s", "1")
    # the length prefixes: ("ab", "c") and ("a", "bc") are different instances
    assert sampling.position("m", "ab", "c") != sampling.position("m", "a", "bc")
    assert 0.0 <= sampling.position("m", "s", "x") < 1.0


def test_a_perturbed_variant_goes_where_its_original_goes():
    original = pb.Prediction(id="q7", scenario="s")
    variant = pb.Prediction(id="q7-typos", scenario="s")
    variant.perturbation.original_id = "q7"
    assert sampling.instance_id(variant) == "q7" == sampling.instance_id(original)
    for rate in (0.1, 0.5, 0.9):
        assert sampling.in_sample(variant, "m", rate) == sampling.in_sample(original, "m", rate)


def test_sample_keeps_exactly_the_predictions_below_the_rate_and_the_rest_of_the_envelope():
    env = BatchEnvelope(batch_id="b", model="m", sequence=7, families=["toxicity"], tenant="t")
    env.predictions.extend(pb.Prediction(id=str(i), scenario="s", output=f"o{i}") for i in range(400))
    kept = sampling.sample(env, 0.25)
    expected = [str(i) for i in range(400) if reference_position("m", "s", str(i)) < 0.25]
    assert [p.id for p in kept.predictions] == expected
    assert 70 <= len(expected) <= 130  # 400 × 0.25 = 100 expected
    same = (kept.batch_id, kept.model, kept.sequence, list(kept.families), kept.tenant)
    assert same == ("b", "m", 7, ["toxicity"], "t")
    assert len(env.predictions) == 400  # the worker's envelope is untouched
    assert sampling.sample(env, 1.0) is env


def test_the_rate_comes_from_the_family_variable_and_is_checked(monkeypatch):
    assert sampling.rate_for("toxicity", samples=True) == 1.0
    monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", "0.05")
    assert sampling.rate_for("toxicity", samples=True) == 0.05
    with pytest.raises(ConfigError, match=r"HOLISTIC_TOXICITY_SAMPLE_RATE=0\.05: the toxicity family does not score"):
        sampling.rate_for("toxicity", samples=False)
    for bad in ("0", "1.5", "-0.1", "often"):
        monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", bad)
        with pytest.raises(ConfigError, match=r"HOLISTIC_TOXICITY_SAMPLE_RATE: .*\(a share in \(0, 1\]\)"):
            sampling.rate_for("toxicity", samples=True)
    monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", "1")
    assert sampling.rate_for("efficiency", samples=False) == 1.0  # another family's variable: not this one's


def coverage(rate: float, reps: int, population: int, value, interval) -> float:
    """Share of `reps` streams (each its own ids, so its own sample) whose sampled interval covers the
    stream's known truth."""
    covered = 0
    for r in range(reps):
        values = [value(i) for i in range(population)]
        truth = sum(values) / population
        ids = [f"r{r}-{i}" for i in range(population)]
        sampled = [v for i, v in zip(ids, values, strict=True) if sampling.position("m", "s", i) < rate]
        iv = interval(sampled)
        covered += iv.lower <= truth <= iv.upper
    return covered / reps


# 1,000 streams: a 95 % interval covers in 950 of them on average; 3 binomial standard deviations
# (sqrt(0.95 × 0.05 / 1000) = 0.0069) below that is 0.929. The samples are fixed by the ids, so the
# figures are the same on every run: printed for the docs (pytest -s).
NOMINAL_FLOOR = 0.95 - 3 * (0.95 * 0.05 / 1000) ** 0.5


def test_a_sampled_share_covers_the_streams_truth_at_the_nominal_rate():
    def share(sampled: list[float]) -> pp.Interval:
        return proportion("toxic_frac", "toxicity", sum(sampled), len(sampled)).interval

    got = coverage(0.05, 1000, 2000, lambda i: float(i % 10 < 3), share)  # truth 0.3, ~100 sampled
    print(f"toxic_frac at 5 %: 95 % interval covered the truth in {got:.1%} of 1,000 streams")
    assert got >= NOMINAL_FLOOR


def test_a_sampled_mean_covers_the_streams_truth_at_the_nominal_rate():
    def average(sampled: list[float]) -> pp.Interval:
        n = len(sampled)
        return mean("toxicity_mean", "toxicity", n, sum(sampled), sum(v * v for v in sampled)).interval

    got = coverage(0.1, 1000, 1000, lambda i: ((i * 7919) % 1000 / 1000) ** 3, average)  # skewed, ~100 sampled
    print(f"toxicity_mean at 10 %: 95 % interval covered the truth in {got:.1%} of 1,000 streams")
    assert got >= NOMINAL_FLOOR


def test_scenario_rates_are_parsed_recorded_and_a_bad_one_names_its_variable(monkeypatch):
    monkeypatch.setenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES", " chat=0.05, qa = 1 ,")
    rates = sampling.rates_for("toxicity", samples=True)
    assert rates == sampling.Rates(1.0, {"chat": 0.05})  # qa keeps the family's rate, 1: nothing to record
    assert (rates.of("chat"), rates.of("qa"), rates.of("other")) == (0.05, 1.0, 1.0)
    assert rates.signature_options() == {"scenario_sample_rates": "chat=0.05"}
    monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", "0.5")
    assert sampling.rates_for("toxicity", samples=True).signature_options() == {
        "sample_rate": "0.5",
        "scenario_sample_rates": "chat=0.05,qa=1",
    }
    for bad, why in [
        ("chat=0", "a share in"), ("chat=1.5", "a share in"), ("chat", "not scenario=rate"), ("=0.5", "not scenario"),
        ("chat=x", "not a number"), ("chat=0.1,chat=0.2", "given twice"),
    ]:  # fmt: skip
        monkeypatch.setenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES", bad)
        with pytest.raises(ConfigError, match=rf"HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES: .*{why}"):
            sampling.rates_for("toxicity", samples=True)
    monkeypatch.setenv("HOLISTIC_EFFICIENCY_SCENARIO_SAMPLE_RATES", "chat=0.5")
    with pytest.raises(ConfigError, match=r"HOLISTIC_EFFICIENCY_SCENARIO_SAMPLE_RATES=0\.5: the efficiency family"):
        sampling.rates_for("efficiency", samples=False)


def test_each_rate_is_computed_apart_and_a_scenario_rates_fields_carry_its_prefix():
    env = BatchEnvelope(model="m", batch_id="b")
    for i in range(400):
        env.predictions.add(id=f"p{i}", scenario="chat" if i % 2 else "qa", output="x")
    rates = sampling.Rates(1.0, {"chat": 0.25})
    parts = sampling.by_rate(env, rates)
    assert sorted(parts) == [0.25, 1.0] and parts[0.25].batch_id == "b"
    assert [p.id for p in parts[1.0].predictions] == [p.id for p in env.predictions if p.scenario == "qa"]
    chat = [p.id for p in env.predictions if p.scenario == "chat" and reference_position("m", "chat", p.id) < 0.25]
    assert [p.id for p in parts[0.25].predictions] == chat and 0 < len(chat) < 200
    st = Stats()
    st.incr("n", 3)
    st.bump("len", "5")
    moved = sampling.prefixed(st, 0.25)
    assert moved.ints == {"#rate|0.25|n": 3} and moved.hists == {"#rate|0.25|len|hist": {"5": 1}}
    main, groups = sampling.split_groups(Folded({"n": 2.0, "#rate|0.25|n": 3.0, "#rate|0.05|scn|a|n": 1.0}))
    assert dict(main) == {"n": 2.0} and {r: dict(g) for r, g in groups.items()} == {
        0.25: {"n": 3.0},
        0.05: {"scn|a|n": 1.0},
    }
