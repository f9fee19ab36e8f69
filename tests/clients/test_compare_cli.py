"""`holistic compare`: this window against the one before, the dashboard's rule, an exit status to gate on."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime

from click.testing import CliRunner

from holistic.compare.profiles import Change
from holistic_app.cli import main
from holistic_client.compare_cli import regressions
from holistic_client.jsonl import write_predictions
from tests.conftest import drain
from tests.factories import classified, prediction


def test_regressions_are_worse_moves_that_matter_on_chosen_names():
    worse = Change("accuracy", "dimension", 0.9, 0.5, -0.4, False, True, "95% intervals do not overlap")
    small = Change("toxicity", "dimension", 0.9, 0.89, -0.01, False, False, "within the intervals")
    better = Change("efficiency", "dimension", 0.5, 0.9, 0.4, True, True, "95% intervals do not overlap")
    gone = Change("calibration", "dimension", 0.8, None, None, None, True, "data vanished: no confidences")
    lat = Change("efficiency/latency_p90", "metric", 1.0, 2.0, 1.0, False, True, "95% intervals do not overlap")
    changes = [worse, small, better, gone, lat]
    assert regressions(changes, ["accuracy", "toxicity"]) == [worse]
    assert regressions(changes, ["toxicity", "efficiency", "calibration"]) == []
    assert regressions(changes, ["any"]) == [worse]  # every axis, not the raw metrics
    assert regressions(changes, ["efficiency/latency_p90"]) == [lat]
    assert regressions(changes, []) == []


def test_compare_exits_non_zero_when_a_chosen_axis_got_worse(gateway, make_worker, tmp_path):
    now = time.time()
    before = [prediction(f"b{i}", model="m", latency_s=0.5, produced_at_s=now - 80 * 60) for i in range(40)]
    after = [prediction(f"a{i}", model="m", latency_s=0.5, produced_at_s=now, output="Paris" if i % 2 else "Rome")
             for i in range(40)]  # fmt: skip
    path = tmp_path / "p.jsonl"
    write_predictions(path, before + after)
    runner = CliRunner()
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"), make_worker("efficiency"))
    args = ["compare", "m", "--window", "1h", "--target", gateway.address]

    # accuracy 40/40 = 1 (Wilson 0.912–1) before, 20/40 = 0.5 (0.352–0.648) now: disjoint, worse.
    gated = runner.invoke(main, [*args, "--fail-on", "accuracy,toxicity"])
    assert gated.exit_code == 1, gated.output
    assert "changes that matter (previous window: 40 predictions)" in gated.output
    assert "worse: 95% intervals do not overlap" in gated.output
    said = " ".join(gated.output.split())
    assert "m: accuracy got significantly worse (1 → 0.5; -0.5 (95% -0.663 to -0.337), p 1.8e-09, Holm 2e-08" in said
    # --margin: one-sided H0 "worse by at most the margin". se = (upper - d) / 1.96 = 0.16292 / 1.96 = 0.08313;
    # margin 0.3: z = (-0.5 + 0.3) / 0.08313 = -2.41, p 0.0081 (one judged cell: Holm is p): fails.
    assert runner.invoke(main, [*args, "--fail-on", "accuracy", "--margin", "0.6"]).exit_code == 0
    beyond = runner.invoke(main, [*args, "--fail-on", "accuracy", "--margin", "0.3"])
    assert beyond.exit_code == 1 and "; margin 0.3: p 0.0081, Holm 0.0081" in " ".join(beyond.output.split())
    # margin 0.4: z = -0.1 / 0.08313 = -1.20, p 0.11: worse by 0.5, but not *significantly* beyond 0.4: passes
    assert runner.invoke(main, [*args, "--fail-on", "accuracy", "--margin", "0.4"]).exit_code == 0
    # efficiency (every request within the objective, both windows) did not move: exit 0.
    assert runner.invoke(main, [*args, "--fail-on", "efficiency"]).exit_code == 0
    assert runner.invoke(main, args).exit_code == 0

    shown = runner.invoke(main, [*args, "--json", "--fail-on", "any"])
    assert shown.exit_code == 1
    record = json.loads(shown.output.splitlines()[0])
    acc = next(c for c in record["changes"] if c["name"] == "accuracy")
    assert (acc["before"], acc["after"], acc["matters"], acc["better"]) == (1.0, 0.5, True, False)
    assert acc["p"] < acc["p_holm"] < 0.05 and acc["method"] == "Welch z"
    assert record["regressions"] == ["accuracy"]

    bad = runner.invoke(main, [*args, "--fail-on", "acuracy"])
    assert bad.exit_code == 2 and "unknown axis acuracy" in bad.output


def _submit(gateway, tmp_path, preds) -> None:
    path = tmp_path / "p.jsonl"
    write_predictions(path, preds)
    result = CliRunner().invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"])
    assert result.exit_code == 0, result.output


def test_a_gate_with_nothing_to_judge_fails_closed(gateway, make_worker, tmp_path):
    """Every prediction 34 days old: the last hour and the hour before are empty, so --fail-on has
    nothing to judge: exit 3 naming the window and where the data is, unless --allow-empty."""
    old = (int(time.time()) // 60 - 34 * 1440 - 5) * 60  # 34 days and 5 minutes ago, on a minute
    newest = datetime.fromtimestamp(old, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")
    _submit(gateway, tmp_path, [prediction(f"p{i}", model="m", produced_at_s=old - 60 * (i % 3)) for i in range(9)])
    drain(make_worker("accuracy"))
    args = ["compare", "m", "--window", "1h", "--target", gateway.address, "--fail-on", "accuracy,toxicity"]
    runner = CliRunner()
    gated = runner.invoke(main, args)
    assert gated.exit_code == 3, gated.output
    line = " ".join(gated.output.split())  # a narrow terminal folds the line
    assert "m: nothing to judge for accuracy, toxicity: the window 20" in line
    assert "has 0 predictions, the one before (" in line
    assert f"newest prediction 34 days ago, {newest}" in line
    assert runner.invoke(main, [*args, "--allow-empty"]).exit_code == 0
    assert runner.invoke(main, args[:-2]).exit_code == 0  # no --fail-on: not a gate
    record = json.loads(runner.invoke(main, [*args, "--json"]).output.splitlines()[0])
    assert record["nothing_to_judge"] == ["accuracy", "toxicity"]


def test_an_axis_without_data_on_one_side_is_nothing_to_judge(gateway, make_worker, tmp_path):
    """Predictions in this hour only: the hour before has no accuracy to compare with, so the gate
    does not pass (exit 3); the exit 1 of a real regression still wins (test above)."""
    now = time.time()
    _submit(gateway, tmp_path, [prediction(f"a{i}", model="m", produced_at_s=now - 60) for i in range(5)])
    drain(make_worker("accuracy"))
    args = ["compare", "m", "--window", "1h", "--target", gateway.address, "--fail-on", "accuracy"]
    gated = CliRunner().invoke(main, args)
    assert gated.exit_code == 3, gated.output
    line = " ".join(gated.output.split())
    assert "m: nothing to judge for accuracy: the window 20" in line
    assert "has 5 predictions, the one before (" in line and ") 0; newest prediction " in line
    assert CliRunner().invoke(main, [*args, "--allow-empty"]).exit_code == 0


def test_compare_a_against_b(gateway, make_worker):
    """Two models over the same hour (the gateway's CompareProfiles): b is wrong on a third of its
    predictions, a on a tenth, so b's accuracy and its F1 (bucket bootstrap) are significantly worse."""
    now = time.time()
    client = gateway.client()
    client.submit(classified("a", 400, 10, now), model="a")
    client.submit(classified("b", 400, 3, now), model="b")
    client.close()
    drain(make_worker("accuracy"))
    runner = CliRunner()
    # 15 minutes: read in minute buckets (a window holding a whole clock hour reads it as one bucket)
    args = ["compare", "a", "b", "--window", "15m", "--target", gateway.address]
    gated = runner.invoke(main, [*args, "--fail-on", "accuracy,accuracy/classification_macro_f1"])
    assert gated.exit_code == 1, gated.output
    said = " ".join(gated.output.split())
    assert re.search(r"b against a: \d+ and \d+ predictions", said)
    assert "a vs b: accuracy/classification_macro_f1 got significantly worse" in said
    assert "Holm" in said and "bucket bootstrap/Welch z" in said
    record = json.loads(runner.invoke(main, [*args, "--json", "--fail-on", "accuracy"]).output.splitlines()[0])
    assert (record["decision"], record["regressions"], record["multiplicity"]) == ("worse", ["accuracy"], "Holm")
    bh = json.loads(runner.invoke(main, [*args, "--json", "--multiplicity", "bh"]).output.splitlines()[0])
    assert bh["multiplicity"] == "Benjamini-Hochberg" and bh["regressions"] == []  # no --fail-on: not a gate
    # all time is one stored bucket: F1 has nothing to resample, not enough data to decide (exit 3)
    whole = runner.invoke(main, [*args[:3], "--window", "all", "--target", gateway.address,
                                 "--fail-on", "accuracy/classification_macro_f1"])  # fmt: skip
    assert whole.exit_code == 3, whole.output
    assert "a vs b: nothing to judge for accuracy/classification_macro_f1" in " ".join(whole.output.split())
    assert runner.invoke(main, ["compare", "a", "b", "c", "--target", gateway.address]).exit_code == 2
    assert runner.invoke(main, ["compare", "a", "--window", "all", "--target", gateway.address]).exit_code == 2
