"""A worker that scores a sample (HOLISTIC_<FAMILY>_SAMPLE_RATE): its share, its profile, its rules."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from holistic.errors import ConfigError
from holistic.redis.keys import Keys
from holistic.stats.mergeable import Folded
from holistic_app.cli import main
from metric_services.toxicity import INPUT
from tests.conftest import drain
from tests.factories import prediction
from tests.holistic.test_sampling import reference_position


def test_a_sampling_worker_scores_its_share_says_so_and_replicas_agree(
    use_table, gateway, client, make_worker, monkeypatch
):
    outputs = {"bad": [0.9], "good": [0.1]}
    use_table(outputs)
    preds = [prediction(f"p{i}", output="bad" if i % 4 == 0 else "good", scenario="chat") for i in range(400)]
    client.submit(preds[:200], model="m", batch_id="b1")
    client.submit(preds[200:], model="m", batch_id="b2")
    monkeypatch.setenv("HOLISTIC_TOXICITY_SAMPLE_RATE", "0.25")
    drain(make_worker("toxicity"), make_worker("toxicity"))  # two replicas share the batches
    fam = next(f for f in client.get_profile("m").families if f.family == "toxicity")

    kept = [p for p in preds if reference_position("m", "chat", p.id) < 0.25]
    toxic = sum(p.output == "bad" for p in kept)
    assert fam.sample_rate == 0.25 and "|sample_rate:0.25" in fam.signature.text
    assert fam.count == len(kept)  # the family's count is the sample; the window's predictions are all 400
    assert [s.count for s in fam.signatures] == [400]
    frac = next(m for m in fam.metrics if m.name == "toxic_frac")
    assert frac.count == len(kept) and frac.value == pytest.approx(toxic / len(kept))
    assert frac.interval.lower < frac.value < frac.interval.upper

    env = {"COLUMNS": "250"}
    table = CliRunner().invoke(main, ["profile", "m", "--target", gateway.address], env=env)
    row = next(line for line in table.output.splitlines() if "│ m " in line)
    assert "sampled 25 %" in row and "sampled: the share of predictions the family scores" in table.output
    detail = CliRunner().invoke(main, ["profile", "m", "--detail", "--target", gateway.address], env=env)
    assert f"m: toxicity ({len(kept)} predictions), sampled 25 %" in detail.output


def test_a_family_that_cannot_be_sampled_stops_its_worker_naming_the_variable(make_worker, monkeypatch):
    monkeypatch.setenv("HOLISTIC_EFFICIENCY_SAMPLE_RATE", "0.5")
    with pytest.raises(ConfigError, match=r"HOLISTIC_EFFICIENCY_SAMPLE_RATE=0\.5: the efficiency family"):
        make_worker("efficiency")


def test_scenarios_at_their_own_rates_are_weighted_in_the_familys_numbers(use_table, client, make_worker, monkeypatch):
    from holistic.families import stratified

    use_table({"bad": [0.9], "good": [0.1]})
    # chat: 1 in 10 toxic, sampled at 25 %; qa: 1 in 2 toxic, every prediction
    chat = [prediction(f"c{i}", output="bad" if i % 10 == 0 else "good", scenario="chat") for i in range(400)]
    qa = [prediction(f"q{i}", output="bad" if i % 2 == 0 else "good", scenario="qa") for i in range(100)]
    client.submit(chat[:200] + qa[:50], model="m", batch_id="b1")
    client.submit(chat[200:] + qa[50:], model="m", batch_id="b2")
    monkeypatch.setenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES", "chat=0.25")
    drain(make_worker("toxicity"), make_worker("toxicity"))
    profile = client.get_profile("m")
    fam = next(f for f in profile.families if f.family == "toxicity")

    kept = [p for p in chat if reference_position("m", "chat", p.id) < 0.25]
    chat_toxic = sum(p.output == "bad" for p in kept) / len(kept)
    # Horvitz–Thompson: each kept chat prediction weighs 4, each qa one 1
    by_hand = (4 * len(kept) * chat_toxic + 100 * 0.5) / (4 * len(kept) + 100)
    frac = next(m for m in fam.metrics if m.name == "toxic_frac")
    assert frac.value == pytest.approx(by_hand) and frac.count == len(kept) + 100 == fam.count
    assert frac.interval.method == stratified.METHOD and frac.interval.lower < by_hand < frac.interval.upper
    assert not fam.HasField("sample_rate") and "|scenario_sample_rates:chat=0.25" in fam.signature.text
    assert "expected_max_toxicity" not in {m.name for m in fam.metrics}  # per input: not kept apart by rate
    axis = next(d for d in profile.dimensions if d.axis == "toxicity")
    assert axis.score == pytest.approx(1 - by_hand) and axis.count == len(kept) + 100
    rows = {s.scenario: s for s in profile.scenarios}
    assert dict(rows["chat"].sample_rates) == {"toxicity": 0.25} and not rows["qa"].sample_rates
    chat_frac = next(m for m in rows["chat"].metrics if m.family == "toxicity")
    assert chat_frac.value == pytest.approx(chat_toxic) and chat_frac.count == len(kept)


def test_segments_beside_scenario_rates_leave_the_weighted_numbers_alone_and_show_no_mixed_cells(
    use_table, make_gateway, make_worker, monkeypatch, r
):
    """The same stream as above with a segment key: the family's Horvitz–Thompson numbers are unchanged (the
    segment split runs inside each rate's part), and no toxicity cell is shown, since a cell would mix weights."""
    use_table({"bad": [0.9], "good": [0.1]})
    gw = make_gateway(families=["toxicity"], segment_keys=["region"])
    chat = [prediction(f"c{i}", output="bad" if i % 10 == 0 else "good", scenario="chat") for i in range(400)]
    qa = [prediction(f"q{i}", output="bad" if i % 2 == 0 else "good", scenario="qa") for i in range(100)]
    for i, p in enumerate(chat + qa):
        p.metadata["region"] = "eu" if i % 3 else "us"
    monkeypatch.setenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES", "chat=0.25")
    with gw.client() as client:
        client.submit(chat + qa, model="m", batch_id="b1")
        drain(make_worker("toxicity", gw.settings))
        profile = client.get_profile("m")
    kept = [p for p in chat if reference_position("m", "chat", p.id) < 0.25]
    chat_toxic = sum(p.output == "bad" for p in kept) / len(kept)
    by_hand = (4 * len(kept) * chat_toxic + 100 * 0.5) / (4 * len(kept) + 100)
    fam = next(f for f in profile.families if f.family == "toxicity")
    assert next(m for m in fam.metrics if m.name == "toxic_frac").value == pytest.approx(by_hand)
    assert not [b for b in profile.segments if b.family == "toxicity"]
    # the per-input max's instances (joined over both rates' parts) are in their cells all the same
    stored = Folded.from_hashes([r.hgetall(Keys(gw.settings.key_prefix).stats("m", "toxicity", "all"))])
    whole = sum(v for f, v in stored.items() if f.startswith(INPUT) and f.endswith("|n"))
    in_cells = sum(v for f, v in stored.items() if f.startswith("#seg|") and f"|{INPUT}" in f and f.endswith("|n"))
    assert whole > 0 and in_cells == whole

    monkeypatch.delenv("HOLISTIC_TOXICITY_SCENARIO_SAMPLE_RATES")  # one rate: the cells are shown
    with gw.client() as client:
        client.submit(qa, model="one", batch_id="b2")
        drain(make_worker("toxicity", gw.settings))
        one = client.get_profile("one")
    cells = {v.value: v.metric for b in one.segments if b.family == "toxicity" for v in b.values}
    assert sorted(cells) == ["eu", "us"] and sum(m.count for m in cells.values()) == 100
