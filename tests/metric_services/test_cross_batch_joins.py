"""Toxicity's per-input max and bias's counterfactual pairs, joined across batches through Redis.

Each case is streamed through the gateway and two worker replicas in several batchings (all in one
batch, one prediction per batch in reverse order, and a mixed cut), each under its own model: the
hand-worked values must come out of every one of them.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from holistic.v1 import prediction_pb2 as pb
from tests.conftest import drain
from tests.factories import prediction

NOW = (int(time.time()) // 60 - 60) * 60  # a whole minute, an hour ago


def at(minutes: int, p: pb.Prediction) -> pb.Prediction:
    p.produced_at.FromSeconds(NOW + 60 * minutes)
    return p


def minutes(start: int, end: int) -> tuple[datetime, datetime]:
    return datetime.fromtimestamp(NOW + 60 * start, UTC), datetime.fromtimestamp(NOW + 60 * end, UTC)


def fair(pid: str, original: str, output: str, name: str = "gender", scenario: str = "chat") -> pb.Prediction:
    p = prediction(pid, output=output, scenario=scenario)
    p.perturbation.family = pb.PERTURBATION_FAMILY_FAIRNESS
    p.perturbation.name = name
    p.perturbation.original_id = original
    return p


def batchings(preds: list[pb.Prediction]) -> dict[str, list[list[pb.Prediction]]]:
    return {
        "one": [preds],
        "reversed": [[p] for p in reversed(preds)],
        "mixed": [preds[1::2], preds[::4], [p for i, p in enumerate(preds) if i % 4 == 2]],
    }


def stream(gateway, make_worker, family: str, model: str, batches, tag: str = "", window="all") -> dict:
    """Submit the batches one by one, each applied by the next of two replicas; the family's metrics."""
    workers = [make_worker(family), make_worker(family)]
    with gateway.client() as client:
        for i, batch in enumerate(batches):
            client.submit(batch, batch_id=f"{model}-{tag}{i}", model=model)
            workers[i % 2].step(block_ms=1)
        drain(*workers)
        profile = client.get_profile(model, window)
    report = next(f for f in profile.families if f.family == family)
    return {m.name: m for m in report.metrics}


TOXICITY = {"a": [0.9], "b": [0.2], "c": [0.6], "d": [0.4], "e": [0.1], "f": [0.5]}


def test_per_input_max_across_three_batches_in_any_order(gateway, make_worker, use_table):
    use_table(TOXICITY)
    preds = [
        at(2, prediction("1", input="q1", output="a", scenario="chat")),
        at(1, prediction("2", input="q1", output="b", scenario="chat")),
        at(3, prediction("3", input="q1", output="c", scenario="chat")),
        at(0, prediction("4", input="q2", output="d", scenario="chat")),
        at(4, prediction("5", input="q2", output="e", scenario="chat")),
        at(0, prediction("6", input="q1", output="f", scenario="other")),  # another scenario: another input
        at(5, prediction("7", input="q2", output="  ", scenario="chat")),  # empty: not scored
    ]
    for name, batches in batchings(preds).items():
        if name == "mixed":  # q1's outputs in 3 batches: 1 in the 1st, 2 in the 3rd, 3 in the 2nd
            assert [[p.id for p in b if p.input == "q1" and p.scenario == "chat"] for b in batches] == [
                ["2"],
                ["1"],
                ["3"],
            ]
        m = stream(gateway, make_worker, "toxicity", f"m-{name}", batches)
        # inputs: chat/q1 max(.9, .2, .6) = .9; chat/q2 max(.4, .1) = .4; other/q1 .5
        # expected_max_toxicity = (.9 + .4 + .5) / 3 = .6; max ≥ .5: q1 and other/q1 -> 2/3
        assert m["expected_max_toxicity"].value == pytest.approx(1.8 / 3), name
        assert m["expected_max_toxicity"].count == 3, name
        assert m["max_toxicity_probability"].value == pytest.approx(2 / 3), name
        # per output, unchanged: .9 .2 .6 .4 .1 .5 -> 3 of 6 at or above .5
        assert m["toxic_frac"].value == pytest.approx(0.5) and m["toxic_frac"].count == 6, name


def test_per_input_max_is_attributed_to_the_inputs_earliest_minute(gateway, make_worker, use_table):
    use_table(TOXICITY)
    # q1's outputs at minutes 0 and 10: its max (.9, from minute 10) belongs to minute 0 whichever arrives first
    late, early = at(10, prediction("1", input="q1", output="a")), at(0, prediction("2", input="q1", output="e"))
    stream(gateway, make_worker, "toxicity", "m", [[late], [early]])
    first = stream(gateway, make_worker, "toxicity", "m", [], window=minutes(0, 5))
    second = stream(gateway, make_worker, "toxicity", "m", [], window=minutes(9, 11))
    assert first["expected_max_toxicity"].value == pytest.approx(0.9)
    assert first["toxic_frac"].value == 0.0  # only "e" (.1) was produced in minutes 0-4
    assert "expected_max_toxicity" not in second and second["toxic_frac"].value == 1.0  # only "a" (.9)


BIAS = {"o1": [0.9], "o2": [0.2], "o3": [0.1], "v1": [0.3], "v2g": [0.4], "v2d": [0.8], "v9": [0.5], "vx": [0.7]}


def test_counterfactual_pairs_across_batches(gateway, make_worker, use_table):
    use_table(BIAS)
    preds = [
        fair("o1~g", "o1", "v1"),  # the variant first ...
        fair("o2~g", "o2", "v2g"),
        fair("o9~g", "o9", "v9"),  # its original never arrives
        prediction("o2", output="o2", scenario="chat"),
        fair("o3~g", "o3", ""),  # an empty variant: unscored
        fair("o1~x", "o1", "vx", scenario="other"),  # the same original_id in another scenario: no pair
        prediction("o3", output="o3", scenario="chat"),
        fair("o2~d", "o2", "v2d", name="dialect"),  # o2's second variant, after its original
        prediction("o1", output="o1", scenario="chat"),  # ... its original last
    ]
    for name, batches in batchings(preds).items():
        m = stream(gateway, make_worker, "bias", f"m-{name}", batches)
        # o1: |.9 - .3| = .6;  o2: (|.2 - .4| + |.2 - .8|) / 2 = (.2 + .6) / 2 = .4  ->  (.6 + .4) / 2 = .5
        gap = m["counterfactual_toxicity_gap"]
        assert gap.value == pytest.approx(0.5) and gap.count == 2, name
        assert m["counterfactual_toxicity_gap[gender]"].value == pytest.approx((0.6 + 0.2) / 2), name
        assert m["counterfactual_toxicity_gap[dialect]"].value == pytest.approx(0.6), name
        assert m["counterfactual_toxicity_gap[dialect]"].count == 1, name
        assert m["counterfactual_unpaired"].value == 2, name  # o9~g, and o1~x (scenario "other")
        assert m["counterfactual_unscored"].value == 1, name  # o3~g


def test_unpaired_variants_move_into_the_gap_when_the_original_arrives(gateway, make_worker, use_table):
    use_table(BIAS)
    first = stream(gateway, make_worker, "bias", "m", [[fair("o1~g", "o1", "v1"), fair("o1~d", "o1", "v2d", "d")]])
    assert first["counterfactual_unpaired"].value == 2 and "counterfactual_toxicity_gap" not in first
    then = stream(gateway, make_worker, "bias", "m", [[prediction("o1", output="o1", scenario="chat")]], "later")
    # |.9 - .3| = .6 and |.9 - .8| = .1 -> one original, gap (.6 + .1) / 2 = .35
    assert then["counterfactual_toxicity_gap"].value == pytest.approx(0.35)
    assert then["counterfactual_toxicity_gap"].count == 1 and "counterfactual_unpaired" not in then
