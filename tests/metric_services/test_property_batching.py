"""Any split into batches, in any order, on 1 or 3 workers per family: the same profile as one pass."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holistic.families import one_pass
from holistic.families.registry import load_family
from holistic.profile import fold as profile_mod
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.stats.mergeable import Folded
from holistic.v1 import prediction_pb2 as pb
from holistic.v1 import profile_pb2 as pp
from tests.conftest import drain

pytestmark = pytest.mark.slow

SCENARIOS = {"mmlu": pb.TASK_MULTIPLE_CHOICE, "boolq": pb.TASK_CLASSIFICATION, "qa": pb.TASK_OPEN_QA}
WORDS = ["Paris", "paris.", "the cat", "a cat sat", "Yes", "no", "", "  Rome "]
INPUTS = ["q", "q", "r", ""]
CONFIDENCES = [0.0, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]
NOW = time.time()
FAMILIES = {pb.PERTURBATION_FAMILY_ROBUSTNESS: ["typos", "lowercase"], pb.PERTURBATION_FAMILY_FAIRNESS: ["dialect"]}


@st.composite
def predictions(draw: st.DrawFn) -> list[pb.Prediction]:
    n = draw(st.integers(1, 60))
    out = []
    for i in range(n):
        scenario = draw(st.sampled_from(sorted(SCENARIOS)))
        # shared inputs (toxicity's per-input max joins their outputs), and empty ones (each its own input)
        p = pb.Prediction(id=f"p{i}", scenario=scenario, task=SCENARIOS[scenario], input=draw(st.sampled_from(INPUTS)))
        p.output = draw(st.sampled_from(WORDS))
        p.references.extend(draw(st.lists(st.sampled_from(WORDS[:6]), max_size=2)))
        if draw(st.booleans()) and draw(st.booleans()):
            p.correct = draw(st.booleans())
        if draw(st.booleans()):  # ties on purpose, and full floats
            p.confidence = draw(st.one_of(st.sampled_from(CONFIDENCES), st.floats(0.0, 1.0)))
        if i and draw(st.integers(0, 3)) == 0:  # a variant of an earlier id, or of one never sent
            kind = draw(st.sampled_from(sorted(FAMILIES)))
            p.perturbation.family = kind
            p.perturbation.name = draw(st.sampled_from(FAMILIES[kind]))
            p.perturbation.original_id = draw(st.sampled_from([f"p{j}" for j in range(i)] + ["gone"]))
            p.id = f"{p.perturbation.original_id}~{p.perturbation.name}~{i}"
        elif draw(st.booleans()):
            p.groups["dialect"] = draw(st.sampled_from(["aae", "sae"]))
        if draw(st.booleans()):
            latency = draw(st.floats(0.0, 20.0))
            p.timing.latency.FromNanoseconds(int(latency * 1e9))
            if draw(st.booleans()):
                p.timing.time_to_first_token.FromNanoseconds(int(latency * draw(st.floats(0, 1)) * 1e9))
            if draw(st.booleans()):
                p.timing.completion_tokens = draw(st.integers(0, 500))
                p.timing.prompt_tokens = draw(st.integers(0, 500))
        p.produced_at.FromNanoseconds(int((NOW - draw(st.floats(0, 3 * 3600))) * 1e9))
        out.append(p)
    return out


def flatten(profile: pp.Profile) -> dict[str, float]:
    """Every number of a profile that the batching must not change."""
    out: dict[str, float] = {"window_predictions": profile.counts.window_predictions}
    for d in profile.dimensions:
        if d.HasField("score"):
            out[f"dim/{d.kind}"] = d.score
            out[f"dim/{d.kind}/n"] = d.count
            out[f"dim/{d.kind}/low"] = d.low_confidence
            for m in d.metrics:
                out[f"dim/{d.kind}/{m.name}"] = m.value
    for f in profile.families:
        out[f"fam/{f.family}/n"] = f.count
        out[f"fam/{f.family}/skipped"] = f.skipped
        for m in f.metrics:
            out[f"fam/{f.family}/{m.name}"] = m.value
            out[f"fam/{f.family}/{m.name}/n"] = m.count
            if m.HasField("interval"):
                out[f"fam/{f.family}/{m.name}/lo"] = m.interval.lower
        for c in f.reliability_curves:
            for i, b in enumerate(c.bins):
                out[f"curve/{c.scenario}/{i}"] = (b.count, b.mean_confidence, b.accuracy, b.upper)  # type: ignore[assignment]
    for s in profile.scenarios:
        for m in s.metrics:
            out[f"scn/{s.scenario}/{m.family}/{m.name}"] = m.value
    for g in profile.groups:
        out[f"group/{g.key}/gap"] = g.max_gap
        for v in g.values:
            out[f"group/{g.key}/{v.value}"] = v.metric.value
    return out


def one_pass_profile(preds: list[pb.Prediction], settings_obj) -> pp.Profile:
    env = BatchEnvelope(model="m", predictions=preds)
    env.accept_time.FromSeconds(int(NOW))
    folded = {name: Folded.from_stats(one_pass(load_family(name), env, settings_obj)) for name in settings_obj.families}
    return profile_mod.build("m", pp.Window(), {}, folded, settings_obj, NOW)


@pytest.mark.parametrize("replicas", [1, 3])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(preds=predictions(), data=st.data())
def test_batching_and_workers_do_not_change_the_profile(replicas, preds, data, gateway, r, settings, make_worker):
    r.flushall()
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    order = list(range(len(preds)))
    rng.shuffle(order)
    cuts = sorted(rng.sample(range(1, len(preds)), k=min(len(preds) - 1, rng.randint(0, 6)))) if len(preds) > 1 else []
    chunks = [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(preds)], strict=True)]
    workers = [make_worker(f) for f in settings.families for _ in range(replicas)]
    with gateway.client() as client:
        for i, chunk in enumerate(chunks):
            client.submit([preds[j] for j in chunk], batch_id=f"b{i}", model="m")
            if rng.random() < 0.5:  # interleave applies with submissions, in random worker order
                rng.shuffle(workers)
                workers[0].step(block_ms=1)
        rng.shuffle(workers)
        drain(*workers)
        streamed = flatten(client.get_profile("m"))
    expected = flatten(one_pass_profile(preds, settings))
    assert streamed.keys() == expected.keys()
    for key, value in expected.items():
        # An interval bound is mean - z*sqrt(var/n): when all values are equal, var is the float noise
        # of sumsq - n*mean^2 (~1e-17, from the order of additions), which the sqrt turns into ~1e-9.
        tol = 1e-6 if key.endswith("/lo") else 1e-9
        assert streamed[key] == pytest.approx(value, rel=1e-9, abs=tol), key
