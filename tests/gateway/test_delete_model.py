"""DeleteModel: every key of the model gone, its batches off the streams, the others untouched; idempotent;
admin tokens only; the CLI asks first."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import grpc
import pytest
import redis
from click.testing import CliRunner

from gateway.deletion import Deleter
from holistic.families.registry import installed
from holistic.queue.work import WorkQueue, shard_of
from holistic.redis.keys import NEWEST_MINUTE, Keys
from holistic.redis.stored import INVENTORY, Inventory
from holistic.tenancy.tenants import hash_token
from holistic_app.cli import main
from holistic_app.demo import SAMPLE
from holistic_client import ClientError
from holistic_client.jsonl import read_predictions
from metric_services.middleware import Hooks
from metric_services.runner import Worker
from tests.conftest import drain
from tests.deletion import ENTRY_ROWS, MODEL_ROWS, NAME_ROWS, traces_of
from tests.factories import prediction

FAMILIES = "accuracy,efficiency"
ADMIN, TEAM = "admin-token", "team-a-token"
T0 = (time.time() // 3600) * 3600 - 1800  # one minute for every prediction: one bucket per tier
WorkerFactory = Callable[..., Worker]  # (family, middleware=...) -> a worker on the test's Redis


def preds(prefix: str, n: int, **kwargs: object) -> list:
    return [prediction(f"{prefix}{i}", produced_at_s=T0, latency_s=0.1, **kwargs) for i in range(n)]


def scored_model(gw, worker: WorkerFactory, r: redis.Redis, model: str) -> None:
    """Two batches applied by both families (one with a group tag), a third still on the stream and
    dead-lettered by accuracy."""
    with gw.client() as c:
        c.submit(preds("a", 2, groups={"lang": "en"}), batch_id="b1", model=model)
        c.submit(preds("b", 1), batch_id="b2", model=model)
        drain(worker("accuracy"), worker("efficiency"))
        c.submit(preds("c", 1), batch_id="b3", model=model)
    queue = WorkQueue(r, Keys(), shard=shard_of(model, gw.settings.queue_shards))
    (third,) = [eid for eid, f in r.xrange(queue.stream) if f[b"m"] == model.encode()][2:]
    r.xreadgroup("accuracy", "test", {queue.stream: ">"}, count=10)
    assert queue.deadletter("accuracy", third.decode(), 1, "a test's dead letter")


def own_keys(r: redis.Redis, model: str) -> dict[str, bytes]:
    return {k.decode(): r.dump(k) for k in r.scan_iter(match=f"hl:{{m:{model}}}:*")}


def entries_of(r: redis.Redis, stream_of: Callable[[int], str], shards: int) -> list[bytes]:
    return [f[b"m"] for n in range(shards) for _, f in r.xrange(stream_of(n))]


def deletes_every_key_and_entry_of_the_model_and_nothing_else(gw, worker: WorkerFactory, r: redis.Redis) -> None:
    """Two models scored alike; one deleted: the answer counts what it had, hand-worked; nothing of it is left
    in any key (a walk of them all), the other's keys are byte for byte as they were."""
    scored_model(gw, worker, r, "gpt-x")
    scored_model(gw, worker, r, "other")
    before = own_keys(r, "other")
    shards = gw.settings.queue_shards
    with gw.client() as c:
        profile = c.get_profile("other")
        removed = c.delete_model("gpt-x")
        assert [(x.key_family, x.count) for x in removed.removed] == [
            ("hl:{q<shard>}:preds", 3),  # b1, b2 (acknowledged, not yet trimmed) and b3
            ("hl:{q<shard>}:dlq", 1),  # b3, dead-lettered by accuracy
            ("hl:models", 1),
            ("hl:models:by_name", 1),
            ("hl:{m:<model>}:seq", 1),
            ("hl:{m:<model>}:ingest:<batch_id>", 3),
            ("hl:{m:<model>}:meta", 1),
            ("hl:{m:<model>}:done:<family>", 2),
            ("hl:{m:<model>}:st:<family>:<tier>", 12),  # per family: minute, hour, day, 16, 256 days, all time
            ("hl:{m:<model>}:sig:<family>", 2),
            ("hl:{m:<model>}:groups", 1),
            ("hl:{m:<model>}:groups:<key>", 1),
            ("hl:{m:<model>}:updates", 1),
        ]
        assert traces_of(r, "gpt-x") == []
        assert c.delete_model("gpt-x").removed == []  # idempotent: nothing left, and no error
        assert [m.model for m in c.list_models()] == ["other"]
        with pytest.raises(ClientError) as exc:
            c.get_profile("gpt-x")
        assert exc.value.code == grpc.StatusCode.NOT_FOUND
        assert c.get_profile("other").dimensions == profile.dimensions
    assert own_keys(r, "other") == before
    assert entries_of(r, Keys().stream_for, shards) == [b"other"] * 3
    assert entries_of(r, Keys().dead_letters_for, shards) == [b"other"]


def test_delete_model_removes_every_key_and_entry_of_the_model_and_nothing_else(make_gateway, make_worker, r):
    deletes_every_key_and_entry_of_the_model_and_nothing_else(make_gateway(families=FAMILIES), make_worker, r)


def test_only_admin_tokens_may_delete_and_they_may_do_nothing_else(make_gateway, make_worker, r):
    gw = make_gateway(
        families=FAMILIES, tokens=f"team-a:sha256:{hash_token(TEAM)}", admin_tokens=f"ops:sha256:{hash_token(ADMIN)}"
    )
    with gw.client(TEAM) as team:
        team.submit(preds("a", 1), batch_id="b1", model="gpt-x")
    with gw.client(TEAM) as team, gw.client(ADMIN) as admin, gw.client("stranger") as stranger:
        for client, code in ((team, "PERMISSION_DENIED"), (stranger, "UNAUTHENTICATED")):
            with pytest.raises(ClientError) as exc:
                client.delete_model("gpt-x", "team-a")
            assert exc.value.code.name == code
        with pytest.raises(ClientError) as exc:
            admin.list_models()  # an admin token is no tenant's
        assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert admin.delete_model("gpt-x").removed == []  # the default tenant has no gpt-x
        assert [m.model for m in team.list_models()] == ["gpt-x"]
        assert {x.key_family for x in admin.delete_model("gpt-x", "team-a").removed} >= {"hl:{t:<tenant>}:models"}
        assert team.list_models() == []
    assert traces_of(r, "team-a|gpt-x") == []


def test_without_admin_tokens_only_an_open_gateway_deletes(make_gateway):
    gw = make_gateway(families=FAMILIES, tokens=f"team-a:sha256:{hash_token(TEAM)}")
    with gw.client(TEAM) as team, pytest.raises(ClientError) as exc:
        team.delete_model("gpt-x", "team-a")
    assert exc.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert "HOLISTIC_ADMIN_TOKENS" in exc.value.message


@pytest.mark.parametrize(
    ("model", "tenant", "field"), [("", "", "model"), ("bad name", "", "model"), ("gpt-x", "Team A", "tenant")]
)
def test_a_bad_name_is_invalid_argument_naming_the_field(gateway, model, tenant, field):
    with gateway.client() as c, pytest.raises(ClientError) as exc:
        c.delete_model(model, tenant)
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in exc.value.violations] == [field]


def test_the_cli_asks_first_and_deletes_with_yes(make_gateway, make_worker, r):
    gw = make_gateway(families=FAMILIES)
    scored_model(gw, make_worker, r, "gpt-x")
    runner = CliRunner()
    refused = runner.invoke(main, ["delete-model", "gpt-x", "--target", gw.address])
    assert refused.exit_code == 2 and "without --yes" in refused.output
    assert traces_of(r, "gpt-x") != []
    done = runner.invoke(main, ["delete-model", "gpt-x", "--yes", "--target", gw.address], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "hl:{m:<model>}:st:<family>:<tier>" in done.output and "12" in done.output
    assert traces_of(r, "gpt-x") == []
    again = runner.invoke(main, ["delete-model", "gpt-x", "--yes", "--target", gw.address])
    assert again.exit_code == 0 and "nothing left to remove" in again.output


def test_tokens_new_admin_prints_an_entry_that_deletes(make_gateway):
    out = CliRunner().invoke(main, ["tokens", "new", "ops", "--admin"]).output
    token = out.splitlines()[0].split()[-1]
    entry = out.splitlines()[1].split()[-1]
    assert "HOLISTIC_ADMIN_TOKENS" in out and entry == f"ops:sha256:{hash_token(token)}"
    gw = make_gateway(families=FAMILIES, tokens=f"team-a:sha256:{hash_token(TEAM)}", admin_tokens=entry)
    with gw.client(token) as admin:
        assert admin.delete_model("gpt-x", "team-a").removed == []


class PauseBeforeApply(Hooks):
    """Holds the worker between its read (and compute) and its apply, once armed."""

    def __init__(self) -> None:
        self.armed, self.reached, self.go = False, threading.Event(), threading.Event()

    def before_apply(self, worker: Worker, batch_ids: list[str]) -> None:
        if self.armed and batch_ids:
            self.reached.set()
            assert self.go.wait(30)


def test_a_batch_read_before_the_deletion_and_applied_after_it_brings_nothing_back(make_gateway, make_worker, r):
    a_batch_read_before_the_deletion_brings_nothing_back(make_gateway(families="accuracy"), make_worker, r)


def a_batch_read_before_the_deletion_brings_nothing_back(gw, make_worker: WorkerFactory, r: redis.Redis) -> None:
    """A worker reads batch 2 of gpt-x and pauses before its apply; the model is deleted; the worker applies:
    apply.lua refuses it by the tombstone, nothing of the model comes back. The next batch is numbered 3, and
    the worker writes its signature again (it forgets what it wrote of a model deleted since)."""
    pause = PauseBeforeApply()
    worker = make_worker("accuracy", middleware=[pause])
    stream = Keys().stream_for(shard_of("gpt-x", gw.settings.queue_shards))
    with gw.client() as c:
        c.submit(preds("a", 2), batch_id="b1", model="gpt-x")
        drain(worker)  # batch 1 applied: the worker wrote its signature
        c.submit(preds("b", 1), batch_id="b2", model="gpt-x")
        pause.armed = True
        step = threading.Thread(target=worker.step, kwargs={"block_ms": 1})
        step.start()
        assert pause.reached.wait(30)
        removed = {x.key_family: x.count for x in c.delete_model("gpt-x").removed}
        assert removed["hl:{q<shard>}:preds"] == 2 and removed["hl:{m:<model>}:sig:<family>"] == 1
        pause.go.set()
        step.join(30)
        assert worker.counters.applied == 1 and worker.counters.skipped == 1  # batch 2: refused
        assert traces_of(r, "gpt-x") == []
        assert r.xpending(stream, "accuracy")["pending"] == 0  # acknowledged all the same
        assert r.get(Keys().deleted("gpt-x")) == b"2"
        assert 7 * 86_400 - 60 < r.ttl(Keys().deleted("gpt-x")) <= 7 * 86_400

        pause.armed = False
        assert c.submit(preds("c", 3), batch_id="b3", model="gpt-x").sequence == 3
        drain(worker)
        profile = c.get_profile("gpt-x")
        assert profile.counts.accepted_predictions == profile.counts.window_predictions == 3
        assert list(r.hkeys(Keys().signatures("gpt-x", "accuracy"))) == [worker.signature_of("gpt-x")[0].encode()]
        assert int(r.hget(Keys().meta("gpt-x"), NEWEST_MINUTE)) == T0 // 60


def test_submits_wait_for_a_deletion_and_number_after_the_tombstone(make_gateway, r):
    submits_wait_for_a_deletion_and_number_after_the_tombstone(make_gateway(families=FAMILIES), r)


def submits_wait_for_a_deletion_and_number_after_the_tombstone(gw, r: redis.Redis) -> None:
    """While a deletion's lock lives, the model's submits are UNAVAILABLE (retryable) and write nothing, with
    group tags or without (a cluster's groups.lua and ingest.lua); a model with a tombstone numbers its next
    batch after it."""
    r.set(Keys().deleting("gpt-x"), 1, px=60_000)
    r.set(Keys().deleted("gpt-x"), 5)
    with gw.client(max_attempts=1) as c:
        for batch in (preds("a", 1, groups={"lang": "en"}), preds("a", 1)):
            with pytest.raises(ClientError) as exc:
                c.submit(batch, batch_id="b1", model="gpt-x")
            assert exc.value.code == grpc.StatusCode.UNAVAILABLE
            assert exc.value.message == "model 'gpt-x' is being deleted; retry once the deletion has ended (seconds)"
        assert traces_of(r, "gpt-x") == [Keys().deleting("gpt-x")]
        assert entries_of(r, Keys().stream_for, gw.settings.queue_shards) == []
        assert c.submit(preds("a", 1), batch_id="b1", model="other").sequence == 1  # other models are not held
        r.delete(Keys().deleting("gpt-x"))
        assert c.submit(preds("a", 1), batch_id="b1", model="gpt-x").sequence == 6
        assert c.submit(preds("b", 1), batch_id="b2", model="gpt-x").sequence == 7


def test_a_submit_during_a_deletion_is_refused_and_the_next_one_numbered_after_it(make_gateway, r, monkeypatch):
    """A deletion held before it takes the model's batches off the streams: the model's submit is UNAVAILABLE
    and writes nothing; once the deletion ends, the next submit is accepted, numbered after the deleted
    batches."""
    gw = make_gateway(families=FAMILIES)
    reached, go = threading.Event(), threading.Event()
    entries = Deleter._entries

    async def held(self, *args):
        reached.set()
        await asyncio.get_running_loop().run_in_executor(None, go.wait, 30)
        return await entries(self, *args)

    monkeypatch.setattr(Deleter, "_entries", held)
    with gw.client(max_attempts=1) as c:
        c.submit(preds("a", 1), batch_id="b1", model="gpt-x")
        c.submit(preds("b", 1), batch_id="b2", model="gpt-x")
        deleting = threading.Thread(target=c.delete_model, args=("gpt-x",))
        deleting.start()
        assert reached.wait(30)
        with pytest.raises(ClientError) as exc:
            c.submit(preds("c", 1), batch_id="b3", model="gpt-x")
        assert exc.value.code == grpc.StatusCode.UNAVAILABLE
        go.set()
        deleting.join(30)
        assert traces_of(r, "gpt-x") == []
        assert c.submit(preds("c", 1), batch_id="b3", model="gpt-x").sequence == 3


def test_after_the_demo_nothing_of_a_deleted_model_is_left_in_any_key_family(make_gateway, make_worker, r):
    """The demo's predictions (every task, perturbations and their instance state, groups, rankings, summaries)
    scored by every installed family, one of its models dead-lettered once; the model deleted: the answer names
    every key family that holds a model's data, and a walk of every key finds nothing of it."""
    gw = make_gateway(segment_keys=["region_server"])
    lines = [line for line in read_predictions(SAMPLE)][:1500]
    with gw.client() as c:
        assert not c.submit_lines(iter(lines), batch_size=250).rejected
        drain(*(make_worker(name, gw.settings) for name in installed()))
        c.submit(preds("late", 1), batch_id="late", model="atlas-70b")  # read by accuracy, then dead-lettered
        ((_, [(entry, _)]),) = r.xreadgroup("accuracy", "test", {Keys().stream: ">"}, count=1)
        assert WorkQueue(r, Keys()).deadletter("accuracy", entry.decode(), 1, "a test's dead letter")
        before = {m: own_keys(r, m) for m in ("swift-8b", "gale-mix")}
        removed = {x.key_family for x in c.delete_model("atlas-70b").removed}
    inv = Inventory()
    holding = {inv.label(row) for row in INVENTORY if row.builder in MODEL_ROWS - {"deleting"} | ENTRY_ROWS}
    holding |= {inv.label(row) for row in INVENTORY if row.builder in NAME_ROWS and row.args == ("default",)}
    assert holding == removed
    assert traces_of(r, "atlas-70b") == []
    assert {m: own_keys(r, m) for m in before} == before
