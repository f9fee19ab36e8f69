"""The audit trail (holistic/tenancy/audit.py): deletions with their admin and what they removed, token use once an
hour, append-only and kept when the tenant's data is deleted; ReadAudit for admins only, a page at a time."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
import redis.asyncio as aioredis
from click.testing import CliRunner

from holistic.redis.keys import Keys
from holistic.tenancy.audit import TOKEN_USED, Audit
from holistic.tenancy.tenants import hash_token
from holistic.v1 import evaluation_service_pb2 as es
from holistic_app.cli import main
from holistic_client import ClientError
from tests.factories import prediction

ADMIN, TEAM = "admin-token", "team-a-token"


def test_deletions_and_token_use_are_recorded_and_survive_the_tenants_deletion(make_gateway, r):
    gw = make_gateway(
        families="accuracy", tokens=f"team-a:sha256:{hash_token(TEAM)}", admin_tokens=f"ops:sha256:{hash_token(ADMIN)}"
    )
    with gw.client(TEAM) as team, gw.client(ADMIN) as admin:
        for i in range(3):  # three calls in one hour: one token_used entry
            team.submit([prediction(f"p{i}")], model="gpt-x")
        removed = {x.key_family: x.count for x in admin.delete_model("gpt-x", "team-a").removed}
        admin.delete_tenant_data("team-a")
        entries = list(admin.iter_audit("team-a"))
        with pytest.raises(ClientError) as exc:
            list(team.iter_audit("team-a"))  # a tenant may not read the trail
        assert exc.value.code == grpc.StatusCode.PERMISSION_DENIED
        paged = list(admin.iter_audit("team-a", page_size=1))  # one entry a page
        with pytest.raises(ClientError) as bad:
            admin._call(admin.stub.ReadAudit, es.ReadAuditRequest(tenant="team-a", page_token="not-an-id"))
    assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in str(bad.value)
    assert [e.action for e in entries] == [TOKEN_USED, "delete_model", "delete_tenant_data"]
    assert [e.id for e in paged] == [e.id for e in entries]
    used, model, tenant = entries
    assert used.actor == f"token sha256:{hash_token(TEAM)[:16]}" and TEAM not in used.actor + used.details_json
    assert model.actor == tenant.actor == "ops"  # the admin's name from HOLISTIC_ADMIN_TOKENS
    assert json.loads(model.details_json) == {"model": "gpt-x", "removed": removed}
    assert json.loads(tenant.details_json)["models"] == []  # gpt-x was already gone
    assert r.exists(Keys().audit("team-a")) and r.xlen(Keys().audit("team-a")) == 3  # kept through the deletion

    shown = CliRunner().invoke(main, ["audit", "team-a", "--target", gw.address, "--token", ADMIN],
                               env={"COLUMNS": "250"})  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert (
        "audit trail of tenant team-a" in shown.output
        and "delete_model" in shown.output
        and "3 entries" in shown.output
    )
    as_json = CliRunner().invoke(main, ["audit", "team-a", "--json", "--target", gw.address, "--token", ADMIN])
    rows = [json.loads(line) for line in as_json.output.splitlines()]
    assert [row["action"] for row in rows] == [e.action for e in entries] and rows[1]["details"]["model"] == "gpt-x"


def test_token_use_once_an_hour_per_token(redis_url):
    async def run() -> list[str]:
        now = [7200.0 * 1000]
        r = aioredis.Redis.from_url(redis_url)
        trail = Audit(r, Keys(), clock=lambda: now[0])
        await r.delete(Keys().audit("t"))
        await trail.token_used("t", "tok-1")
        await trail.token_used("t", "tok-1")  # same hour: nothing new
        await trail.token_used("t", "tok-2")  # another token
        now[0] += 3600
        await trail.token_used("t", "tok-1")  # the next hour
        entries = await trail.read("t")
        await r.aclose()
        return [f"{e.actor} {e.details['hour']}" for e in entries]

    d1, d2 = hash_token("tok-1")[:16], hash_token("tok-2")[:16]
    assert asyncio.run(run()) == [f"token sha256:{d1} 7200000", f"token sha256:{d2} 7200000",
                                  f"token sha256:{d1} 7203600"]  # fmt: skip
