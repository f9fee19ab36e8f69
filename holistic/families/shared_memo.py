"""Values the replicas of one family compute once between them, claimed text by text.

A family whose compute is dominated by a deterministic function of an input that many batches share
(the summarization family embeds each news article once for every model that summarized it) wastes
its replicas when each keeps its own cache: two replicas given adjacent batches of different models
both embed the same articles. Here a replica first reads what any replica stored, then claims the
missing keys a chunk at a time (`SET NX` with a lease), computes what it won, stores it, and moves on
to the next chunk while its siblings take the chunks it lost; it waits only for keys that are still
being computed elsewhere once nothing is left for it to do, and takes a key over when the lease of
the replica that claimed it ran out (it died, or Redis lost the value).

A memo is an optimization, never a source of truth: the value read here is the one this replica would
have computed (the family keys it by everything that determines it: model hash, input digest), and
when Redis fails or is out of memory the replica computes locally, so a batch is never lost or
delayed past one lease because of it. Families stay pure: the runner hands a memo to those that ask
(`Family.share`); in-process use (tests, the embedded demo) passes none.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import redis

from holistic.redis.connection import RETRYABLE
from holistic.redis.keys import Keys

log = logging.getLogger(__name__)

Compute = Callable[[list[int]], list[bytes]]  # positions in the caller's list -> their values, in order


@dataclass
class MemoCounts:
    """What a replica's memo did, for its metrics and the tests: values read, computed, waited on."""

    read: int = 0
    computed: int = 0
    waited: int = 0
    taken_over: int = 0
    failures: int = 0


@dataclass
class SharedMemo:
    client: redis.Redis
    keys: Keys
    family: str
    owner: str  # this replica's consumer name, stored in its claims (who holds a lease, for operators)
    ttl_s: int = 900  # how long a stored value stays: the window in which other replicas may want it
    lease_s: float = 30.0  # a claim's lifetime: after it, another replica computes the key itself
    chunk: int = 4  # keys claimed at a time: small, so siblings given the same keys split them
    poll_s: float = 0.01  # while waiting for a sibling's values
    counts: MemoCounts = field(default_factory=MemoCounts)

    def values(
        self, namespace: str, digests: Sequence[bytes], compute: Compute, weights: Sequence[float] | None = None
    ) -> list[bytes]:
        """The value of each digest (in order), computed here only where no replica stored or claims it.

        `compute(positions)` must return the values of those positions of `digests`; `namespace` names
        everything else that determines a value (the model's hash), so different models never mix.
        `weights`: each key's cost, in units of one key of `chunk` (default 1 each): a claim takes keys
        until their weights reach `chunk`, so a replica waiting for a sibling's last claim waits for
        about one key's worth of work (put the costliest keys first: they are claimed first)."""
        out: list[bytes | None] = [None] * len(digests)
        try:
            self._fill(namespace, digests, compute, out, weights)
        except (*RETRYABLE, redis.ResponseError) as exc:  # the memo is an optimization: compute the rest here
            self._failed("unavailable (%s): computing locally", exc)
            missing = [i for i, v in enumerate(out) if v is None]
            if missing:
                self._store_local(out, missing, compute)
        assert all(v is not None for v in out)
        return out  # type: ignore[return-value]

    def _failed(self, what: str, *args: object) -> None:
        """Count a failure; log the 1st, 10th, 100th, ...: a Redis refusing every batch must not flood the logs."""
        self.counts.failures += 1
        n = self.counts.failures
        if n == 10 ** (len(str(n)) - 1):
            log.warning(f"shared memo of %s (failure %d) {what}", self.family, n, *args)

    # --- the protocol ----------------------------------------------------------------------
    def _fill(
        self,
        namespace: str,
        digests: Sequence[bytes],
        compute: Compute,
        out: list[bytes | None],
        weights: Sequence[float] | None,
    ) -> None:
        value_keys = [self.keys.memo(self.family, namespace, d) for d in digests]
        claim_keys = [self.keys.memo_claim(self.family, namespace, d) for d in digests]
        missing = self._read(value_keys, list(range(len(digests))), out)
        deferred: list[int] = []
        while missing or deferred:
            for part in self._chunks(missing, weights):
                won = self._claim(claim_keys, part)
                deferred.extend(i for i in part if i not in won)
                if won:
                    self._compute_and_store(value_keys, claim_keys, sorted(won), compute, out)
            missing = []
            if deferred:
                missing = self._wait(value_keys, claim_keys, deferred, compute, out)
                deferred = []

    def _chunks(self, positions: list[int], weights: Sequence[float] | None) -> list[list[int]]:
        out: list[list[int]] = []
        part: list[int] = []
        total = 0.0
        for i in positions:
            part.append(i)
            total += 1.0 if weights is None else weights[i]
            if total >= self.chunk:
                out.append(part)
                part, total = [], 0.0
        return [*out, part] if part else out

    def _read(self, value_keys: list[str], positions: list[int], out: list[bytes | None]) -> list[int]:
        """Fill `out` from stored values; the positions still missing."""
        if not positions:
            return []
        pipe = self.client.pipeline(transaction=False)
        for i in positions:
            pipe.get(value_keys[i])
        missing = []
        for i, v in zip(positions, pipe.execute(), strict=True):
            if v is None:
                missing.append(i)
            else:
                out[i] = v
                self.counts.read += 1
        return missing

    def _claim(self, claim_keys: list[str], part: list[int]) -> set[int]:
        pipe = self.client.pipeline(transaction=False)
        for i in part:
            pipe.set(claim_keys[i], self.owner, nx=True, px=int(self.lease_s * 1000))
        return {i for i, ok in zip(part, pipe.execute(), strict=True) if ok}

    def _compute_and_store(
        self, value_keys: list[str], claim_keys: list[str], won: list[int], compute: Compute, out: list[bytes | None]
    ) -> None:
        try:
            self._store_local(out, won, compute)
        except Exception:  # the batch fails and is retried; siblings should not wait a lease for these keys
            try:
                self.client.delete(*[claim_keys[i] for i in won])
            except (*RETRYABLE, redis.ResponseError):
                pass
            raise
        pipe = self.client.pipeline(transaction=False)
        for i in won:
            pipe.set(value_keys[i], out[i], px=self.ttl_s * 1000)  # type: ignore[arg-type]
        replies = pipe.execute(raise_on_error=False)
        unstored = [i for i, r in zip(won, replies, strict=True) if isinstance(r, Exception)]
        if unstored:  # out of memory, most likely: free the claims so siblings compute rather than wait a lease
            self._failed("could not store %d values (%s)", len(unstored), replies[0])
            self.client.delete(*[claim_keys[i] for i in unstored])

    def _store_local(self, out: list[bytes | None], positions: list[int], compute: Compute) -> None:
        values = compute(positions)
        if len(values) != len(positions):
            raise ValueError(f"compute returned {len(values)} values for {len(positions)} keys")
        for i, v in zip(positions, values, strict=True):
            out[i] = v
        self.counts.computed += len(positions)

    def _wait(
        self,
        value_keys: list[str],
        claim_keys: list[str],
        deferred: list[int],
        compute: Compute,
        out: list[bytes | None],
    ) -> list[int]:
        """Wait for siblings' values; the positions to claim again (a claim lapsed without a value)."""
        self.counts.waited += len(deferred)
        pending = deferred
        deadline = time.monotonic() + self.lease_s + 1.0
        while True:
            pending = self._read(value_keys, pending, out)
            if not pending:
                return []
            pipe = self.client.pipeline(transaction=False)
            for i in pending:
                pipe.exists(claim_keys[i])
            held = pipe.execute()
            lapsed = [i for i, h in zip(pending, held, strict=True) if not h]
            if lapsed:  # its claimer died or could not store: read once more (it may have just stored), then claim
                again = self._read(value_keys, lapsed, out)
                self.counts.taken_over += len(again)
                return again + [i for i in pending if i not in lapsed]
            if time.monotonic() > deadline:  # leases are never renewed: a claim without one, set by hand
                self._store_local(out, pending, compute)
                return []
            time.sleep(self.poll_s)
