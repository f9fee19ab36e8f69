"""DeleteModel: every key of the model gone, its batches off the streams, the others untouched; idempotent;
admin tokens only; the CLI asks first."""

from __future__ import annotations

import time

import grpc
import pytest
import redis
from click.testing import CliRunner

from holistic.keys import Keys
from holistic.tenants import hash_token
from holistic.workqueue import WorkQueue
from holistic_app.cli import main
from holistic_client import ClientError
from tests.conftest import drain
from tests.deletion import traces_of
from tests.factories import prediction

FAMILIES = "accuracy,efficiency"
ADMIN, TEAM = "admin-token", "team-a-token"
T0 = (time.time() // 3600) * 3600 - 1800  # one minute for every prediction: one bucket per tier


def preds(prefix: str, n: int, **kwargs: object) -> list:
    return [prediction(f"{prefix}{i}", produced_at_s=T0, latency_s=0.1, **kwargs) for i in range(n)]


def scored_model(gw, make_worker, r: redis.Redis, model: str) -> None:
    """Two batches applied by both families (one with a group tag), a third still on the stream and
    dead-lettered by accuracy."""
    with gw.client() as c:
        c.submit(preds("a", 2, groups={"lang": "en"}), batch_id="b1", model=model)
        c.submit(preds("b", 1), batch_id="b2", model=model)
        drain(make_worker("accuracy"), make_worker("efficiency"))
        c.submit(preds("c", 1), batch_id="b3", model=model)
    queue = WorkQueue(r, Keys())
    (third,) = [eid for eid, f in r.xrange(Keys().stream) if f[b"m"] == model.encode()][2:]
    r.xreadgroup("accuracy", "test", {Keys().stream: ">"}, count=10)
    assert queue.deadletter("accuracy", third.decode(), 1, "a test's dead letter")


def own_keys(r: redis.Redis, model: str) -> dict[str, bytes]:
    return {k.decode(): r.dump(k) for k in r.scan_iter(match=f"hl:{{m:{model}}}:*")}


def test_delete_model_removes_every_key_and_entry_of_the_model_and_nothing_else(make_gateway, make_worker, r):
    gw = make_gateway(families=FAMILIES)
    scored_model(gw, make_worker, r, "gpt-x")
    scored_model(gw, make_worker, r, "other")
    before = own_keys(r, "other")
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
    assert [f[b"m"] for _, f in r.xrange(Keys().stream)] == [b"other"] * 3
    assert [f[b"m"] for _, f in r.xrange(Keys().dead_letters)] == [b"other"]


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
