"""What each metric family has not applied yet of what the gateway accepted for a model.

A profile read right after a submit would otherwise show no data and say "no predictions"; it says,
per family, how much is still on its way. Accepted counts are the model's meta hash, per family the
batches were stamped for (accepted.lua);
a family's applied batches are the set bits of its done bitmap (apply.lua), its applied predictions
the per-signature counts of its all-time statistics hash (metric_services/work.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from holistic.stats.mergeable import signature_field
from holistic.v1 import profile_pb2 as pp

PREDICTIONS, BATCHES = "accepted_predictions", "accepted_batches"  # accepted.lua's fields, ":<family>" per family
# per family, what a tenant's raw-text retention removed before the family applied it (tenancy/retention_sweep.py):
# never on its way any more
EXPIRED_PREDICTIONS, EXPIRED_BATCHES = "expired_predictions", "expired_batches"


def signature_fields(signature_ids: Iterable[str]) -> list[str]:
    """The all-time statistics fields that count a family's applied predictions."""
    return [signature_field(sid) for sid in signature_ids]


def family_pending(
    family: str, meta: Mapping[str, float], applied_batches: int, applied_counts: Sequence[bytes | None]
) -> pp.FamilyPending:
    """Accepted for the family minus applied by it, and minus what retention removed before it applied
    it, never below 0 (a count read a moment apart from the other). A model whose meta holds no
    per-family counts (all its batches accepted by a gateway from before them) compares the model's
    totals instead."""
    applied = sum(int(float(c)) for c in applied_counts if c is not None)
    per_family = any(k.startswith(BATCHES + ":") for k in meta)
    suffix = f":{family}" if per_family else ""
    expired_predictions = int(meta.get(f"{EXPIRED_PREDICTIONS}:{family}", 0))
    expired_batches = int(meta.get(f"{EXPIRED_BATCHES}:{family}", 0))
    return pp.FamilyPending(
        family=family,
        pending_predictions=max(int(meta.get(PREDICTIONS + suffix, 0)) - applied - expired_predictions, 0),
        pending_batches=max(int(meta.get(BATCHES + suffix, 0)) - applied_batches - expired_batches, 0),
    )


def mark_pending(profile: pp.Profile, pending: Sequence[pp.FamilyPending]) -> None:
    """Set profile.pending; an absent axis whose family has predictions pending says so first."""
    del profile.pending[:]
    profile.pending.extend(pending)
    waiting = {p.family: p.pending_predictions for p in pending if p.pending_predictions}
    for dim in profile.dimensions:
        n = waiting.get(dim.family)
        if n and not dim.HasField("score"):
            dim.absent_reason = f"pending: {n} accepted predictions not yet applied by the {dim.family} family" + (
                f" (so far: {dim.absent_reason})" if dim.absent_reason else ""
            )
