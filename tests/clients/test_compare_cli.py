"""`holistic compare`: this window against the one before, the dashboard's rule, an exit status to gate on."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

import holistic_dashboard.compare as dashboard_compare
from holistic_app.cli import main
from holistic_client import compare as client_compare
from holistic_client.compare import Change
from holistic_client.compare_cli import regressions
from holistic_client.jsonl import write_predictions
from tests.conftest import drain
from tests.factories import prediction


def test_the_dashboard_and_the_command_share_one_rule():
    assert dashboard_compare.compare is client_compare.compare
    assert dashboard_compare.previous_range is client_compare.previous_range


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
    assert "m: accuracy got significantly worse (1 → 0.5; 95% intervals do not overlap)" in gated.output
    # efficiency (every request within the objective, both windows) did not move: exit 0.
    assert runner.invoke(main, [*args, "--fail-on", "efficiency"]).exit_code == 0
    assert runner.invoke(main, args).exit_code == 0

    shown = runner.invoke(main, [*args, "--json", "--fail-on", "any"])
    assert shown.exit_code == 1
    record = json.loads(shown.output.splitlines()[0])
    acc = next(c for c in record["changes"] if c["name"] == "accuracy")
    assert (acc["before"], acc["after"], acc["matters"], acc["better"]) == (1.0, 0.5, True, False)
    assert record["regressions"] == ["accuracy"]

    bad = runner.invoke(main, [*args, "--fail-on", "acuracy"])
    assert bad.exit_code == 2 and "unknown axis acuracy" in bad.output


def test_a_gate_with_nothing_to_judge_fails_closed(gateway, make_worker, tmp_path):
    """Predictions produced 30 days ago: the last hour and the hour before are empty. --fail-on must not
    pass on that: exit 3, naming the window and where the data is; --allow-empty opts out."""
    now = time.time()
    old = [prediction(f"o{i}", model="m", latency_s=0.5, produced_at_s=now - 30 * 86_400) for i in range(20)]
    path = tmp_path / "old.jsonl"
    write_predictions(path, old)
    runner = CliRunner()
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"), make_worker("efficiency"))
    args = ["compare", "m", "--window", "1h", "--target", gateway.address, "--fail-on", "accuracy"]

    gated = runner.invoke(main, args)
    assert gated.exit_code == 3, gated.output
    message = " ".join(gated.output.split())
    assert "m: nothing to judge for accuracy: the window " in message
    assert "has 0 predictions and the one before" in message
    assert "20 predictions accepted in all, the newest batch at " in message and "(just now)" in message
    assert "windows count each prediction at its produced_at" in message
    assert runner.invoke(main, [*args, "--allow-empty"]).exit_code == 0
    assert runner.invoke(main, ["compare", "m", "--window", "1h", "--target", gateway.address]).exit_code == 0


def test_an_axis_without_data_on_one_side_is_undecided_not_passed(gateway, make_worker, tmp_path):
    """Both windows have accuracy, neither has toxicity (no toxicity worker ran): a gate on toxicity
    cannot pass, and a regression elsewhere still wins (exit 1)."""
    now = time.time()
    rows = [prediction(f"b{i}", model="m", produced_at_s=now - 80 * 60) for i in range(10)]
    rows += [prediction(f"a{i}", model="m", produced_at_s=now) for i in range(10)]
    path = tmp_path / "p.jsonl"
    write_predictions(path, rows)
    runner = CliRunner()
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"))
    args = ["compare", "m", "--window", "1h", "--target", gateway.address]
    assert runner.invoke(main, [*args, "--fail-on", "accuracy"]).exit_code == 0  # 1 → 1: judged, not worse
    toxic = runner.invoke(main, [*args, "--fail-on", "toxicity", "--json"])
    assert toxic.exit_code == 3
    assert json.loads(toxic.output.splitlines()[0])["undecided"] == ["toxicity"]


def test_values_within_the_tolerance_are_no_move():
    """BLEU-4 of 2.2e-308 against 2.8e-309, each with a degenerate interval: 0 against 0, not worse."""
    from holistic.v1 import profile_pb2 as pp

    def profile(value: float) -> pp.Profile:
        p = pp.Profile(model="m")
        fam = p.families.add(family="accuracy")
        m = fam.metrics.add(name="bleu_4", value=value)
        m.interval.lower = m.interval.upper = value
        return p

    (change,) = client_compare.compare(profile(2.8e-309), profile(2.2e-308))
    assert (change.matters, change.better, change.delta) == (False, None, 0.0)
    assert change.why == "no move (within 1e-09)"
    (real,) = client_compare.compare(profile(0.25), profile(0.5))
    assert real.matters and real.better is False
