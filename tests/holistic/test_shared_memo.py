"""The memo a family's replicas share: each value computed once between them, never lost to Redis."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter

import redis

from holistic.families.shared_memo import SharedMemo
from holistic.redis.keys import Keys

KEYS = Keys("hl")


def digests(n: int) -> list[bytes]:
    return [hashlib.blake2b(str(i).encode(), digest_size=16).digest() for i in range(n)]


def value_of(d: bytes) -> bytes:
    return hashlib.sha256(d).digest() * 4


class Recorder:
    """A compute that takes `cost_s` a key and records which keys it computed."""

    def __init__(self, ds: list[bytes], cost_s: float = 0.0) -> None:
        self.ds = ds
        self.cost_s = cost_s
        self.computed: list[bytes] = []
        self.lock = threading.Lock()

    def __call__(self, positions: list[int]) -> list[bytes]:
        time.sleep(self.cost_s * len(positions))
        with self.lock:
            self.computed.extend(self.ds[p] for p in positions)
        return [value_of(self.ds[p]) for p in positions]


def memo(r: redis.Redis, owner: str, **kwargs: object) -> SharedMemo:
    return SharedMemo(r, KEYS, "fam", owner=owner, **kwargs)  # type: ignore[arg-type]


def test_a_second_replica_reads_what_the_first_computed(r):
    ds = digests(10)
    first, second = Recorder(ds), Recorder(ds)
    a, b = memo(r, "a"), memo(r, "b")
    assert a.values("ns", ds, first) == [value_of(d) for d in ds]
    assert b.values("ns", ds, second) == [value_of(d) for d in ds]
    assert sorted(first.computed) == sorted(ds) and second.computed == []
    assert (a.counts.computed, b.counts.read) == (10, 10)
    ttl = r.pttl(KEYS.memo("fam", "ns", ds[0]))
    assert 899_000 < ttl <= 900_000
    # another namespace (another model's hash) shares nothing
    third = Recorder(ds)
    memo(r, "c").values("other", ds, third)
    assert sorted(third.computed) == sorted(ds)


def test_two_replicas_given_the_same_keys_at_once_split_them_and_compute_each_once(r):
    ds = digests(24)
    compute = Recorder(ds, cost_s=0.02)
    results: dict[str, list[bytes]] = {}
    replicas = [memo(r, name) for name in ("a", "b")]

    def run(m: SharedMemo) -> None:
        results[m.owner] = m.values("ns", ds, compute)

    threads = [threading.Thread(target=run, args=(m,)) for m in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    expected = [value_of(d) for d in ds]
    assert results == {"a": expected, "b": expected}
    assert Counter(compute.computed) == Counter(ds)  # each key once, none twice
    a, b = (m.counts.computed for m in replicas)
    assert a + b == 24 and min(a, b) >= 4  # both worked: chunks of 4, claimed in turn


def test_a_key_claimed_by_a_replica_that_died_is_taken_over_after_its_lease(r):
    ds = digests(3)
    r.set(KEYS.memo_claim("fam", "ns", ds[1]), "dead", px=300)  # claimed, never stored
    compute = Recorder(ds)
    m = memo(r, "a", poll_s=0.005)
    started = time.monotonic()
    assert m.values("ns", ds, compute) == [value_of(d) for d in ds]
    assert 0.25 < time.monotonic() - started < 5
    assert sorted(compute.computed) == sorted(ds)
    assert (m.counts.waited, m.counts.taken_over) == (1, 1)


def test_a_value_stored_while_waiting_is_read_not_computed(r):
    ds = digests(2)
    claim = KEYS.memo_claim("fam", "ns", ds[0])
    r.set(claim, "other", px=10_000)

    def sibling() -> None:
        time.sleep(0.2)
        r.set(KEYS.memo("fam", "ns", ds[0]), value_of(ds[0]))

    t = threading.Thread(target=sibling)
    t.start()
    compute = Recorder(ds)
    assert memo(r, "a").values("ns", ds, compute) == [value_of(d) for d in ds]
    t.join()
    assert compute.computed == [ds[1]]


def test_without_redis_every_value_is_computed_here(redis_server, tmp_path):
    dead = redis.Redis(unix_socket_path=str(tmp_path / "nothing.sock"))
    ds = digests(5)
    compute = Recorder(ds)
    m = memo(dead, "a")
    assert m.values("ns", ds, compute) == [value_of(d) for d in ds]
    assert sorted(compute.computed) == sorted(ds) and m.counts.failures == 1


def test_out_of_memory_frees_the_claims_so_no_sibling_waits_a_lease(r):
    ds = digests(4)
    compute = Recorder(ds)

    def fill_redis_meanwhile(positions: list[int]) -> list[bytes]:
        r.config_set("maxmemory", "1")  # claimed, then Redis fills up before the values are stored
        return compute(positions)

    r.config_set("maxmemory-policy", "noeviction")
    try:
        m = memo(r, "a")
        assert m.values("ns", ds, fill_redis_meanwhile) == [value_of(d) for d in ds]
        assert [r.exists(KEYS.memo_claim("fam", "ns", d)) for d in ds] == [0] * 4
        assert [r.exists(KEYS.memo("fam", "ns", d)) for d in ds] == [0] * 4
        assert m.counts.failures >= 1
        # with Redis full from the start even a claim is refused: everything is computed here
        again = Recorder(ds)
        assert memo(r, "b").values("ns", ds, again) == [value_of(d) for d in ds]
        assert sorted(again.computed) == sorted(ds)
    finally:
        r.config_set("maxmemory", "0")
    assert sorted(compute.computed) == sorted(ds)


def test_a_claim_takes_keys_until_their_weights_reach_a_chunk(r):
    m = memo(r, "a", chunk=4)
    assert m._chunks([0, 1, 2, 3, 4, 5], None) == [[0, 1, 2, 3], [4, 5]]
    weights = [4.0, 1.0, 1.0, 2.0, 0.5, 9.0, 0.1]
    assert m._chunks(list(range(7)), weights) == [[0], [1, 2, 3], [4, 5], [6]]
    ds = digests(7)
    claims: list[list[bytes]] = []
    compute = Recorder(ds)

    def recording(positions: list[int]) -> list[bytes]:
        claims.append([ds[p] for p in positions])
        return compute(positions)

    assert m.values("ns", ds, recording, weights) == [value_of(d) for d in ds]
    assert [len(c) for c in claims] == [1, 3, 2, 1]


def test_a_compute_that_fails_frees_its_claims_and_raises(r):
    ds = digests(3)

    def broken(positions: list[int]) -> list[bytes]:
        raise RuntimeError("model crashed")

    try:
        memo(r, "a").values("ns", ds, broken)
    except RuntimeError as exc:
        assert str(exc) == "model crashed"
    else:
        raise AssertionError("the compute's error was swallowed")
    assert [r.exists(KEYS.memo_claim("fam", "ns", d)) for d in ds] == [0, 0, 0]


def test_failures_are_counted_each_time_and_logged_at_1_10_100(redis_server, tmp_path, caplog):
    dead = redis.Redis(unix_socket_path=str(tmp_path / "nothing.sock"), retry=None)
    m = memo(dead, "a")
    ds = digests(1)
    with caplog.at_level("WARNING", logger="holistic.families.shared_memo"):
        for _ in range(12):
            m.values("ns", ds, Recorder(ds))
    assert m.counts.failures == 12
    logged = [rec.getMessage() for rec in caplog.records]
    assert len(logged) == 2 and "(failure 1)" in logged[0] and "(failure 10)" in logged[1]
