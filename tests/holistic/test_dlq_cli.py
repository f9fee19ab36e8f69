"""`holistic dlq list/replay` and `holistic janitor`'s sweep, as an operator uses them."""

from __future__ import annotations

from click.testing import CliRunner

from holistic.janitor import STALE_CONSUMER_MS, sweep
from holistic.keys import Keys
from holistic.workqueue import WorkQueue
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
