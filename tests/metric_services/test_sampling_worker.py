"""A worker that scores a sample (HOLISTIC_<FAMILY>_SAMPLE_RATE): its share, its profile, its rules."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from holistic.errors import ConfigError
from holistic_app.cli import main
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
