"""A walk of every key in Redis for what is left of a model: the test of a deletion being complete."""

from __future__ import annotations

from typing import Any

from holistic.redis.keys import Keys
from holistic.redis.stored import INVENTORY, Inventory
from holistic.tenancy.tenants import split_model

# the key families that hold model data, by the inventory: a <model> in the key (but the tombstone a deletion
# leaves, one number that expires), the streams' entries (field m), the tenants' model sets and indexes (names)
MODEL_ROWS = {row.builder for row in INVENTORY if "<model>" in row.args} - {"deleted"}
ENTRY_ROWS = {"stream_for", "dead_letters_for"}
NAME_ROWS = {"models", "models_index"}


def traces_of(r: Any, model: str) -> list[str]:
    """Everything in Redis that is of the stored model `model`: its keys, the stream entries of its batches,
    its name in its tenant's model set and index. Every key is walked (SCAN), each described by the inventory."""
    inv, keys = Inventory(), Keys()
    tenant, public = split_model(model)
    left: list[str] = []
    for raw in r.scan_iter(count=1000):
        key = raw.decode()
        row = inv.describe(key)
        assert row is not None, f"a key no row describes: {key}"
        if row.builder in MODEL_ROWS and inv.model_of(key) == model:
            left.append(key)
        elif row.builder in ENTRY_ROWS:
            left += [f"{key} {eid.decode()}" for eid, f in r.xrange(key) if f.get(b"m") == model.encode()]
        elif row.builder in NAME_ROWS and key in (keys.models(tenant), keys.models_index(tenant)):
            members = r.smembers(key) if row.builder == "models" else r.zrange(key, 0, -1)
            left += [f"{key} {public}" for m in members if m.decode() == public]
    return sorted(left)
