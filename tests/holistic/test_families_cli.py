"""`holistic families list/add/remove`: what runs is what has a consumer group."""

from __future__ import annotations

from click.testing import CliRunner

from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic_app.cli import main
from tests.holistic.test_workqueue import add_batch


def test_add_list_and_remove_a_familys_group(r, redis_url):
    env = {"REDIS_URL": redis_url, "COLUMNS": "200"}
    runner = CliRunner()
    q = WorkQueue(r, Keys())
    added = runner.invoke(main, ["families", "add", "accuracy"], env=env)
    assert added.exit_code == 0 and added.output == f"{q.stream}: accuracy created\n"
    assert [g["name"] for g in q.groups()] == ["accuracy"]
    again = runner.invoke(main, ["families", "add", "accuracy"], env=env)
    assert again.output == f"{q.stream}: accuracy exists\n"

    add_batch(r, "m", 1)  # as the gateway writes it, with accuracy's and efficiency's groups
    listed = runner.invoke(main, ["families", "list"], env=env)
    assert listed.exit_code == 0, listed.output
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in listed.output.splitlines() if line.startswith("│")}  # fmt: skip
    assert rows["accuracy"] == ["2", "accuracy", "yes", "yes", "1"]  # one batch not yet applied
    assert rows["efficiency"] == ["1", "efficiency", "yes", "yes", "1"]
    assert rows["toxicity"] == ["2", "toxicity", "yes", "no", ""]
    assert rows["summarization"][1] == ""  # no axis of its own: it feeds accuracy

    removed = runner.invoke(main, ["families", "remove", "accuracy", "--yes"], env=env)
    assert removed.exit_code == 0 and removed.output == f"{q.stream}: accuracy removed\n"
    assert [g["name"] for g in q.groups()] == ["efficiency"]


def test_an_uninstalled_family_is_refused_with_the_installed_ones(redis_url):
    result = CliRunner().invoke(main, ["families", "add", "astrology"], env={"REDIS_URL": redis_url})
    assert result.exit_code == 2
    assert "'astrology' is not installed; installed: accuracy, bias, calibration" in " ".join(result.output.split())


def test_the_command_starts_without_redis_or_pydantic():
    """`holistic submit` (and --help) loads neither redis nor pydantic settings: ~0.25 s of a CLI start
    that every call paid, on the critical path of a file's first batch."""
    import subprocess
    import sys

    heavy = ("redis", "pydantic", "pydantic_settings", "holistic.settings", "numpy")
    code = f"import sys, holistic_app.cli; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_list_asks_the_gateway_with_target(make_gateway):
    """No Redis for the command: the gateway says what it folds, what its deployment runs, each backlog."""
    import time

    from tests.factories import prediction

    gw = make_gateway(families="accuracy,efficiency", tokens="fam-token")
    gw.client("fam-token").submit([prediction("p1")], model="m")  # no worker runs: one batch waits for each
    env = {"COLUMNS": "200", "HOLISTIC_TOKEN": "fam-token", "REDIS_URL": ""}
    deadline = time.monotonic() + 30
    while True:  # the backlog is the gateway's last poll (every 0.25 s)
        listed = CliRunner().invoke(main, ["families", "list", "--target", gw.address], env=env)
        assert listed.exit_code == 0, listed.output
        rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
                for line in listed.output.splitlines() if line.startswith("│")}  # fmt: skip
        if rows["accuracy"][-1] == "1" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert f"metric families (gateway {gw.address})" in listed.output
    assert rows["accuracy"] == ["2", "accuracy", "yes", "yes", "1"]
    assert rows["efficiency"] == ["1", "efficiency", "yes", "yes", "1"]
    assert rows["toxicity"] == ["2", "toxicity", "yes", "no", ""]
    refused = CliRunner().invoke(main, ["families", "list", "--target", gw.address], env={"HOLISTIC_TOKEN": "bad"})
    assert refused.exit_code == 2 and "UNAUTHENTICATED" in refused.output


def test_list_without_redis_shows_the_installed_families_and_why_deployment_is_unknown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("REDIS_URL", "HOLISTIC_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    listed = CliRunner().invoke(main, ["families", "list"], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in listed.output.splitlines() if line.startswith("│")}  # fmt: skip
    assert rows["accuracy"] == ["2", "accuracy", "yes", "?", ""] and rows["toxicity"][2:4] == ["yes", "?"]
    assert (
        "deployed and backlog unknown: no Redis: REDIS_URL is not set and no `holistic up` runs here" in listed.output
    )
