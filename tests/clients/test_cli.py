"""The `holistic` command as a user runs it: submit a file, read profiles, settings errors, the demo."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from holistic_app.cli import main
from holistic_client.jsonl import write_predictions
from tests.conftest import drain
from tests.factories import prediction


def test_submit_reports_rejected_lines_and_is_idempotent(gateway, make_worker, tmp_path):
    path = tmp_path / "preds.jsonl"
    good = [prediction(f"p{i}", model="m1", latency_s=0.5) for i in range(5)]
    write_predictions(path, good[:2])
    with path.open("a") as fh:
        fh.write("{not json\n")  # line 3
        bad = prediction("bad", model="m1")
        bad.confidence = 2.0
        from google.protobuf import json_format

        fh.write(json_format.MessageToJson(bad, indent=None) + "\n")  # line 4
        fh.write("\n")  # blank lines are skipped
        for p in good[2:]:
            fh.write(json_format.MessageToJson(p, indent=None) + "\n")  # lines 6-8
    runner = CliRunner()
    result = runner.invoke(
        main, ["submit", str(path), "--target", gateway.address, "--no-progress", "--batch-size", "3"]
    )
    assert result.exit_code == 1, result.output
    assert "accepted 5 predictions" in result.output
    assert "rejected 2 lines" in result.output
    assert "line 3:" in result.output and "line 4: predictions[" in result.output
    assert "confidence" in result.output
    again = runner.invoke(
        main, ["submit", str(path), "--target", gateway.address, "--no-progress", "--batch-size", "3"]
    )
    assert "accepted 0 predictions" in again.output and "(5 already accepted earlier)" in again.output

    drain(make_worker("accuracy"), make_worker("efficiency"))
    shown = runner.invoke(main, ["profile", "m1", "--json", "--target", gateway.address])
    assert shown.exit_code == 0, shown.output
    profile = json.loads(shown.output)
    assert profile["model"] == "m1" and profile["counts"]["acceptedPredictions"] == "5"
    table = runner.invoke(main, ["profile", "m1", "--target", gateway.address], env={"COLUMNS": "200"})
    assert "accuracy" in table.output and "efficiency" in table.output and "m1" in table.output
    models = runner.invoke(main, ["models", "--target", gateway.address], env={"COLUMNS": "200"})
    assert "m1" in models.output


def test_unknown_model_is_a_clear_error(gateway):
    result = CliRunner().invoke(main, ["profile", "ghost", "--target", gateway.address])
    assert result.exit_code == 2 and "NOT_FOUND" in result.output


def test_bad_settings_name_the_variable(tmp_path):
    env = dict(os.environ, HOLISTIC_MAX_BATCH_PREDICTIONS="0", HOLISTIC_FAMILIES="accuracy,astrology")
    result = subprocess.run(
        [sys.executable, "-m", "holistic_app", "janitor"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "HOLISTIC_MAX_BATCH_PREDICTIONS" in result.stderr and "HOLISTIC_FAMILIES" in result.stderr
    assert "astrology" in result.stderr


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    env = dict(os.environ, COLUMNS="80")  # a pipe is not a terminal: no width limit whatever COLUMNS says
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "holistic_app", "up", "--demo", "--data-dir", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout
    assert "accepted 7,179" in out
    assert "retrieval (family report)" in out and "kb_search" in out and "RR@10" in out
    for model in ("atlas-70b", "gale-mix", "swift-8b"):
        assert model in out
    assert "holistic profiles, all time" in out and "last hour" in out
    assert "…" not in out  # nothing cut: model names, headers and the summarization table whole
    assert "rouge_l" in out and "1 batches" not in out
    # the demo's segments (HOLISTIC_SEGMENT_KEYS=app_version): every family, those of joined instances included
    segments = out[out.index("segments of atlas-70b") :]
    assert "segment app_version" in segments
    for family in ("accuracy", "robustness", "fairness", "retrieval", "efficiency"):
        assert {v for v in ("2.3", "2.4", "2.5") if re.search(rf"│ {re.escape(v)} +│ {family} ", segments)} == {
            "2.3", "2.4", "2.5"
        }, family  # fmt: skip


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: nothing listens there


def test_waiting_for_a_stopped_gateway_says_so_at_once_and_timeout_bounds_it(tmp_path):
    """With --wait-for-ready (without it: test_unreachable_gateway.py, an error at once)."""
    path = tmp_path / "preds.jsonl"
    write_predictions(path, [prediction("p1", model="m1")])
    target = f"127.0.0.1:{closed_port()}"
    args = ["submit", str(path), "--target", target, "--no-progress", "--timeout", "1", "--wait-for-ready"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"cannot connect to {target}; retrying in ")
    assert "(attempt 2 of 12, giving up at " in lines[0]
    assert lines[-1].startswith("error: ") and "UNAVAILABLE" in lines[-1]
    # the retries stopped at the deadline, long before the 12 attempts (~a minute of backoff) ran out
    assert not any("attempt 12 of 12" in line for line in lines)


def test_small_messages(tmp_path, gateway):
    help_text = CliRunner().invoke(main, ["up", "--help"]).output
    assert "dashboard" in help_text.split("Options:")[0]
    path = tmp_path / "preds.jsonl"
    path.write_text('{"id": "a", "model": "m1", "scenario": "s"\n')  # an object never closed
    p = prediction("b", model="", scenario="s")
    from google.protobuf import json_format

    with path.open("a") as fh:
        fh.write(json_format.MessageToJson(p, indent=None) + "\n")
    result = CliRunner().invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "line 1: not valid JSON at column 43: Expecting ',' delimiter" in result.output
    assert "line 2 column" not in result.output
    assert "line 2: model is required: set it on the request or on every prediction (or give --model)" in result.output
    assert "accepted 0 predictions in 0 batches" in result.output


def test_the_readme_commands_show_the_demo_in_the_last_hour(gateway, make_worker):
    """`holistic submit --demo` (the sample is dated 2026-11-01) shifts its times so the newest is a
    minute old: the README's `profile atlas-70b swift-8b --window 1h` then shows predictions."""
    runner = CliRunner()
    submitted = runner.invoke(main, ["submit", "--demo", "--target", gateway.address, "--no-progress"])
    assert submitted.exit_code == 0, submitted.output
    assert "accepted 7,179 predictions" in submitted.output
    drain(make_worker("accuracy"))
    args = ["profile", "atlas-70b", "swift-8b", "--window", "1h", "--target", gateway.address]
    shown = runner.invoke(main, args)
    assert shown.exit_code == 0, shown.output
    assert "no predictions in the window" not in shown.output
    for p in (json.loads(line) for line in _json_objects(runner.invoke(main, [*args, "--json"]).output)):
        assert int(p["counts"]["windowPredictions"]) > 0, p["model"]
    assert runner.invoke(main, ["submit", "--target", gateway.address]).exit_code == 2  # FILE or --demo


def _json_objects(out: str) -> list[str]:
    """The indented JSON documents `profile --json` prints one after the other."""
    docs, depth, start = [], 0, 0
    for i, ch in enumerate(out):
        if ch == "{":
            start = i if depth == 0 else start
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                docs.append(out[start : i + 1])
    return docs


def test_an_empty_window_says_where_the_data_is(gateway, make_worker, tmp_path):
    old = (int(time.time()) // 60 - 34 * 1440 - 5) * 60  # 34 days and 5 minutes ago, on a minute
    path = tmp_path / "p.jsonl"
    write_predictions(path, [prediction(f"p{i}", model="m", produced_at_s=old - 120 * i) for i in range(3)])
    runner = CliRunner()
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"))
    shown = runner.invoke(main, ["profile", "m", "--window", "24h", "--target", gateway.address])
    assert shown.exit_code == 0, shown.output
    line = " ".join(shown.output.split())
    newest = datetime.fromtimestamp(old, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")
    assert "m: no predictions in the window 20" in line
    assert f"; newest prediction 34 days ago, {newest}" in line
    everything = runner.invoke(main, ["profile", "m", "--target", gateway.address]).output
    assert "no predictions in the window" not in everything  # all time holds them
    # an older batch, applied by a worker that never raised the newest minute, leaves it where it was
    write_predictions(path, [prediction("older", model="m", produced_at_s=old - 86_400)])
    assert runner.invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    drain(make_worker("accuracy"))
    again = runner.invoke(main, ["profile", "m", "--window", "24h", "--target", gateway.address])
    assert f"; newest prediction 34 days ago, {newest}" in " ".join(again.output.split())
