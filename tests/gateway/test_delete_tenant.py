"""DeleteTenantData: every model of the tenant deleted (a model missing from its set too), its set, index and
rate counters gone, other tenants' models of the same names untouched; idempotent; admin tokens only."""

from __future__ import annotations

import grpc
import pytest
import redis
from click.testing import CliRunner

from holistic.redis.keys import Keys
from holistic.tenancy.tenants import hash_token
from holistic_app.cli import main
from holistic_client import ClientError
from tests.conftest import drain
from tests.deletion import traces_of
from tests.gateway.test_delete_model import FAMILIES, WorkerFactory, own_keys, preds

A, B, DEFAULT, ADMIN = "team-a-token", "team-b-token", "default-token", "admin-token"
TOKENS = f"team-a:sha256:{hash_token(A)},team-b:sha256:{hash_token(B)},{DEFAULT}"
KEYS = Keys()


SETTINGS = {"families": FAMILIES, "tokens": TOKENS, "admin_tokens": f"ops:sha256:{hash_token(ADMIN)}"}


def tenants(make_gateway, make_worker: WorkerFactory, r: redis.Redis, **overrides: object):
    """team-a: x (two batches, one with a group tag), y, and z, whose name a crashed cluster gateway never
    added to the tenant's set and index; team-b and the default tenant: an x each. All applied."""
    gw = make_gateway(**{**SETTINGS, **overrides})
    with gw.client(A) as a, gw.client(B) as b, gw.client(DEFAULT) as d:
        a.submit(preds("a", 2, groups={"lang": "en"}), batch_id="b1", model="x")
        a.submit(preds("b", 1), batch_id="b2", model="x")
        a.submit(preds("a", 1), batch_id="b1", model="y")
        a.submit(preds("a", 1), batch_id="b1", model="z")
        b.submit(preds("a", 1), batch_id="b1", model="x")
        d.submit(preds("a", 1), batch_id="b1", model="x")
    drain(make_worker("accuracy"), make_worker("efficiency"))
    r.srem(KEYS.models("team-a"), "z")
    r.zrem(KEYS.models_index("team-a"), "z")
    r.set(KEYS.rate("team-a", 1_800_000_000), 3, ex=60)
    return gw


def test_delete_tenant_data_removes_every_model_and_key_of_the_tenant_and_nothing_else(make_gateway, make_worker, r):
    deletes_every_model_and_key_of_the_tenant_and_nothing_else(tenants(make_gateway, make_worker, r), r)


def deletes_every_model_and_key_of_the_tenant_and_nothing_else(gw, r: redis.Redis) -> None:
    others = {m: own_keys(r, m) for m in ("team-b|x", "x")}
    with gw.client(ADMIN) as admin, gw.client(A) as a, gw.client(B) as b:
        reply = admin.delete_tenant_data("team-a")
        assert list(reply.models) == ["x", "y", "z"]
        assert [(x.key_family, x.count) for x in reply.removed] == [
            ("hl:{q<shard>}:preds", 4),  # x's two batches, y's and z's
            ("hl:{t:<tenant>}:models", 1),  # the keys themselves
            ("hl:{t:<tenant>}:models:by_name", 1),
            ("hl:{t:<tenant>}:rate:<second>", 1),
            ("hl:{m:<model>}:seq", 3),
            ("hl:{m:<model>}:ingest:<batch_id>", 4),
            ("hl:{m:<model>}:meta", 3),
            ("hl:{m:<model>}:done:<family>", 6),  # 3 models, 2 families
            ("hl:{m:<model>}:st:<family>:<tier>", 36),  # 3 models, 2 families, 6 tiers (one bucket each)
            ("hl:{m:<model>}:sig:<family>", 6),
            ("hl:{m:<model>}:groups", 1),
            ("hl:{m:<model>}:groups:<key>", 1),
            ("hl:{m:<model>}:updates", 3),
        ]
        for model in ("x", "y", "z"):
            assert traces_of(r, f"team-a|{model}") == []
        assert list(r.scan_iter(match="hl:{t:team-a}:*")) == []
        assert {m: own_keys(r, m) for m in others} == others
        again = admin.delete_tenant_data("team-a")
        assert (list(again.models), list(again.removed)) == ([], [])
        assert a.list_models() == [] and [m.model for m in b.list_models()] == ["x"]
        assert a.submit(preds("c", 1), batch_id="b3", model="x").sequence == 3  # after the deleted batches

        assert list(admin.delete_tenant_data("default").models) == ["x"]
        assert traces_of(r, "x") == [] and own_keys(r, "team-b|x") == others["team-b|x"]
        assert [m.model for m in a.list_models()] == ["x"]


@pytest.mark.parametrize("tenant", ["", "Team A"])
def test_a_missing_or_bad_tenant_is_invalid_argument_naming_it(gateway, tenant):
    with gateway.client() as c, pytest.raises(ClientError) as exc:
        c.delete_tenant_data(tenant)
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert [f for f, _ in exc.value.violations] == ["tenant"]


def test_a_tenants_token_may_not_delete_even_its_own_data(make_gateway, make_worker, r):
    gw = tenants(make_gateway, make_worker, r)
    with gw.client(A) as a, pytest.raises(ClientError) as exc:
        a.delete_tenant_data("team-a")
    assert exc.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert traces_of(r, "team-a|x") != []


def test_the_cli_deletes_a_tenant_after_asking(make_gateway, make_worker, r):
    gw = tenants(make_gateway, make_worker, r)
    runner = CliRunner()
    args = ["delete-tenant", "team-b", "--target", gw.address, "--token", ADMIN]
    refused = runner.invoke(main, args)
    assert refused.exit_code == 2 and "without --yes" in refused.output
    done = runner.invoke(main, [*args, "--yes"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "deleted tenant team-b: 1 model" in done.output and "hl:{m:<model>}:st:<family>:<tier>" in done.output
    assert traces_of(r, "team-b|x") == []
