"""Every key in Redis after the service scored the demo is described by holistic/redis/stored.py's inventory."""

from __future__ import annotations

import inspect

import redis

from holistic.families.registry import installed
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.redis.stored import INVENTORY, RAW_TEXT, Inventory
from holistic.tenancy.tenants import hash_token
from holistic_app.demo import SAMPLE
from holistic_client.jsonl import read_predictions
from tests.conftest import drain

TOKEN = "token-of-team-a"


def test_every_key_builder_has_a_row():
    """(The `*_glob` methods build SCAN patterns, not keys.)"""
    methods = inspect.getmembers(Keys, inspect.isfunction)
    builders = {name for name, _ in methods if not name.startswith("_") and not name.endswith("_glob")}
    assert builders == {row.builder for row in INVENTORY}


def test_rows_match_what_they_describe_and_nothing_else():
    inv, keys = Inventory(), Keys()
    assert inv.describe(keys.stats("atlas:70b", "accuracy", "m", 29_000_000)).builder == "stats"
    assert inv.describe(keys.models()).args == ("default",)
    assert inv.describe(keys.models("team-a")).args == ("<tenant>",)
    assert inv.describe(keys.instances("m", "fairness", 20_400)).builder == "instances"
    assert inv.describe(keys.stream_for(3)).content == RAW_TEXT
    assert inv.describe("hl:something-else") is None
    assert inv.describe("other:{m:x}:meta") is None
    assert inv.model_of(keys.group_values("team-a|atlas:70b", "lang")) == "team-a|atlas:70b"
    assert inv.model_of(keys.ingest("m:1", "b:1")) == "m:1"
    assert inv.model_of(keys.models("team-a")) is None


def test_a_walk_of_redis_after_the_demo_finds_only_described_keys(make_gateway, make_worker, r: redis.Redis):
    """The demo's predictions (every task, perturbations, groups, rankings, summaries) through a gateway
    with two tenants and every installed family, segments, a dead letter and a memo lease; then SCAN every key."""
    tokens = f"team-a:sha256:{hash_token(TOKEN)},{'default-token'}"
    gw = make_gateway(tokens=tokens, tenant_predictions_per_s=10**6, segment_keys=["region_server"])
    lines = [line for line in read_predictions(SAMPLE)][:1500]
    with gw.client("default-token") as default, gw.client(TOKEN) as team:
        report = default.submit_lines(iter(lines), batch_size=250)
        assert not report.rejected
        team.submit_lines(iter(lines[:100]), batch_size=100)
    workers = [make_worker(name, gw.settings) for name in installed()]
    drain(*workers)
    queue = WorkQueue(r, Keys())
    r.xadd(Keys().stream, {"v": "1", "poison": "x"})
    ((entry_id, _),) = queue.read("accuracy", "test", 1, 1)
    assert queue.deadletter("accuracy", entry_id, 1, "a test's poison entry")
    inv = Inventory()
    seen: dict[str, int] = {}
    unknown = []
    for raw in r.scan_iter(count=1000):
        name = raw.decode()
        row = inv.describe(name)
        if row is None:
            unknown.append(name)
        else:
            seen[row.builder] = seen.get(row.builder, 0) + 1
    assert unknown == []
    # the walk saw the families of keys the demo writes (the memo, its claim and rates may have expired)
    written = {"stream_for", "dead_letters_for", "models", "models_index", "sequence", "ingest", "meta", "done",
               "stats", "signatures", "instances", "group_keys", "group_values", "updates",
               "segment_values"}  # fmt: skip
    assert written <= set(seen)
