"""`holistic dlq list/replay` and `holistic janitor`'s sweep, as an operator uses them."""

from __future__ import annotations

from click.testing import CliRunner

from holistic.queue.janitor import STALE_CONSUMER_MS, sweep
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic_app.cli import main
from tests.conftest import drain
from tests.holistic.test_workqueue import add_batch, applied_count


def test_list_and_replay_dead_letters(r, redis_url, make_worker):
    add_batch(r, "m", 1, n=4)
    acc = make_worker("accuracy")
    eid = acc.queue.read("accuracy", acc.consumer, 1, 1)[0][0]
    acc.queue.deadletter("accuracy", eid, 6, "delivered 6 times without an ack")
    env = {"REDIS_URL": redis_url, "COLUMNS": "200"}
    runner = CliRunner()
    listed = runner.invoke(main, ["dlq", "list"], env=env)
    assert listed.exit_code == 0, listed.output
    assert "accuracy" in listed.output and "delivered 6 times" in listed.output
    dl_id = WorkQueue(r, Keys()).dead_letters()[0][0]
    missing = runner.invoke(main, ["dlq", "replay", "0-1"], env=env)
    assert missing.exit_code == 1 and "no dead letter 0-1" in missing.output
    replayed = runner.invoke(main, ["dlq", "replay", "--all"], env=env)
    assert replayed.exit_code == 0 and replayed.output.startswith(f"{dl_id} -> ")
    drain(acc)
    assert applied_count(r, "m", "accuracy") == 4
    assert WorkQueue(r, Keys()).dead_letters() == []


def test_janitor_removes_idle_consumers_with_nothing_pending(r):
    q = WorkQueue(r, Keys())
    add_batch(r, "m", 1)
    q.read("accuracy", "gone-for-good", 1, 1)
    q.ack("accuracy", [e[0].decode() for e in r.xrange(Keys().stream)])
    q.read("efficiency", "still-busy", 1, 1)  # pending: must stay
    assert sweep(q, ["accuracy", "efficiency"], stale_ms=0) == (0, 1)
    names = {c["name"].decode() for c in r.xinfo_consumers(Keys().stream, "accuracy")}
    assert "gone-for-good" not in names
    assert {c["name"].decode() for c in r.xinfo_consumers(Keys().stream, "efficiency")} == {"still-busy"}
    assert STALE_CONSUMER_MS == 24 * 3600 * 1000


def test_dlq_finds_the_private_redis_of_holistic_up_in_the_working_directory(tmp_path, monkeypatch):
    from holistic.redis.embedded import EmbeddedRedis

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("HOLISTIC_REDIS_URL", raising=False)
    monkeypatch.delenv("HOLISTIC_DATA_DIR", raising=False)
    private = EmbeddedRedis(tmp_path / ".holistic", persist=False)  # where a default `holistic up` runs it
    private.start()
    try:
        import redis as redis_lib

        r = redis_lib.Redis(unix_socket_path=str(private.socket))
        add_batch(r, "m", 1, n=2)
        q = WorkQueue(r, Keys())
        eid = q.read("accuracy", "c1", 1, 1)[0][0]
        q.deadletter("accuracy", eid, 6, "gave up on [m]")
        listed = CliRunner().invoke(main, ["dlq", "list"])
        assert listed.exit_code == 0, listed.output
        assert "accuracy" in listed.output and "gave up on [m]" in listed.output
    finally:
        private.stop()


def test_commands_needing_redis_fail_in_one_line_when_there_is_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("REDIS_URL", "HOLISTIC_REDIS_URL", "HOLISTIC_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    every = (["dlq", "list"], ["dlq", "replay", "--all"], ["janitor"], ["quality-exporter"], ["worker", "accuracy"])
    for args in every:  # one rule for all of them (holistic/redis/local.py)
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.output, result.output
        assert "REDIS_URL is not set" in lines[0]
    listed = CliRunner().invoke(main, ["dlq", "list"])
    assert "no `holistic up` runs here (.holistic/run.json does not exist)" in " ".join(listed.output.split())


def test_an_unreachable_redis_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("REDIS_URL", f"unix://{tmp_path}/nothing-here.sock")
    result = CliRunner().invoke(main, ["dlq", "list"])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot reach Redis") and len(result.output.strip().splitlines()) == 1
