"""A profile says, per family, what was accepted but not applied yet: pending, never "no predictions"."""

from __future__ import annotations

from holistic.v1 import profile_pb2 as pp
from tests.conftest import drain
from tests.factories import prediction


def pending(profile: pp.Profile) -> dict[str, tuple[int, int]]:
    return {p.family: (p.pending_predictions, p.pending_batches) for p in profile.pending}


def test_pending_right_after_submit_then_zero_once_applied(client, make_worker):
    client.submit(
        [prediction(f"a{i}", output="Paris", references=["Paris"]) for i in range(3)], batch_id="b1", model="m"
    )
    client.submit(
        [prediction(f"b{i}", output="Rome", references=["Paris"]) for i in range(2)], batch_id="b2", model="m"
    )
    before = client.get_profile("m")
    families = {f for f in pending(before)}
    assert {"accuracy", "efficiency"} <= families
    assert pending(before) == dict.fromkeys(families, (5, 2))  # no worker ran: everything accepted is pending
    acc = next(d for d in before.dimensions if d.kind == pp.DIMENSION_KIND_ACCURACY)
    assert not acc.HasField("score")
    assert acc.absent_reason.startswith("pending: 5 accepted predictions not yet applied by the accuracy family")

    drain(make_worker("accuracy"))
    after = client.get_profile("m")
    assert pending(after)["accuracy"] == (0, 0)
    assert pending(after)["efficiency"] == (5, 2)  # its worker has not run
    acc = next(d for d in after.dimensions if d.kind == pp.DIMENSION_KIND_ACCURACY)
    assert acc.score == 0.6  # 3 of 5 exact matches

    drain(make_worker("efficiency"))
    eff = next(d for d in client.get_profile("m").dimensions if d.kind == pp.DIMENSION_KIND_EFFICIENCY)
    assert eff.absent_reason == "no predictions with timing.latency in this window"  # applied: no longer pending
    assert pending(client.get_profile("m"))["efficiency"] == (0, 0)


def test_accepted_counts_per_family_and_a_family_deployed_later():
    from holistic.profile.pending import family_pending

    # accuracy got both batches (5 predictions); efficiency was deployed after the first (3) and got the second
    meta = {
        "accepted_predictions": 5, "accepted_batches": 2, "accepted_predictions:accuracy": 5,
        "accepted_batches:accuracy": 2, "accepted_predictions:efficiency": 2, "accepted_batches:efficiency": 1,
    }  # fmt: skip
    assert family_pending("efficiency", meta, 0, []) == pp.FamilyPending(
        family="efficiency", pending_predictions=2, pending_batches=1
    )
    assert family_pending("accuracy", meta, 1, [b"3"]) == pp.FamilyPending(
        family="accuracy", pending_predictions=2, pending_batches=1
    )
    assert family_pending("bias", meta, 0, []) == pp.FamilyPending(family="bias")  # never sent a batch
    # a model accepted only by a gateway from before the per-family counts: the model's totals
    legacy = {"accepted_predictions": 5, "accepted_batches": 2}
    assert family_pending("bias", legacy, 1, [b"3", None]).pending_predictions == 2


def test_submit_counts_accepted_per_family(client, r, settings):
    from holistic.redis.keys import Keys
    from holistic.tenancy.tenants import DEFAULT_TENANT, internal_model

    client.submit([prediction(f"a{i}") for i in range(3)], batch_id="b1", model="m")
    meta = r.hgetall(Keys(settings.key_prefix).meta(internal_model(DEFAULT_TENANT, "m")))
    fams = {p.family for p in client.get_profile("m").pending}
    assert {int(meta[f"accepted_predictions:{f}".encode()]) for f in fams} == {3}
    assert {int(meta[f"accepted_batches:{f}".encode()]) for f in fams} == {1}


def test_watch_profile_carries_pending(client):
    client.submit([prediction(f"a{i}") for i in range(4)], batch_id="b1", model="m")
    stream = client.watch_profile("m")
    first = next(iter(stream))  # the current profile, sent at once
    stream.close()
    assert set(pending(first).values()) == {(4, 1)} and "accuracy" in pending(first)
