"""The janitor's part of per-tenant retention (holistic/tenancy/retention_sweep.py), on a real Redis with a fake clock:
raw text past a tenant's limit leaves the work stream and the dead letters (exactly that, and counted and
audited when a family had not applied it), a retention change is audited once, old -> new, and what was stored
under the old retention gets the new one's TTL; workers write buckets with their tenant's TTLs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis

from holistic.profile.windows import DAY
from holistic.queue.envelope import fields_for
from holistic.queue.janitor import enforce_retention
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys, glob_escape
from holistic.redis.scripts import Scripts
from holistic.redis.stored import Inventory
from holistic.stats.instances import SEP, Row
from holistic.tenancy.audit import RAW_TEXT_EXPIRED, RETENTION_CHANGED
from holistic.tenancy.retention import RetentionStore
from holistic.tenancy.retention_sweep import Expired, expire_raw_text, record_changes, shorten_stored
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from metric_services.shared.worst_case import SPEC
from metric_services.work import Work
from tests.conftest import drain
from tests.factories import batch
from tests.holistic.test_workqueue import add_batch

KEYS = Keys()
NOW = 2_000_030_400  # 12:00 UTC on epoch day 23148: the fake clock
GROUPS = ("accuracy", "efficiency")


def store_of(make_settings, tmp_path: Path, text: str) -> RetentionStore:
    path = tmp_path / "retention.toml"
    path.write_text(text)
    return RetentionStore(make_settings(retention_file=path))


def add_at(r, model: str, seq: int, age_s: int) -> str:
    """A batch of `model` accepted age_s before NOW (its entry id says when)."""
    request = SubmitPredictionsRequest(batch_id=f"b{seq}", model=model, predictions=batch(1))
    header = BatchEnvelope(batch_id=request.batch_id, model=model, sequence=seq, families=list(GROUPS))
    return r.xadd(KEYS.stream, fields_for(model, seq, request.SerializeToString(), header),
                  id=f"{(NOW - age_s) * 1000}-0").decode()  # fmt: skip


def audit(r, tenant: str) -> list[tuple[str, str, dict]]:
    return [(f[b"action"].decode(), f[b"actor"].decode(), json.loads(f[b"details"]))
            for _, f in r.xrange(KEYS.audit(tenant))]  # fmt: skip


def test_raw_text_past_a_tenants_limit_leaves_the_streams_and_nothing_else(r, make_settings, tmp_path):
    store = store_of(make_settings, tmp_path, '[tenants.team-a]\nraw_text = "1h"\n')
    q = WorkQueue(r, KEYS)
    for g in GROUPS:
        q.ensure_group(g)
    applied = add_at(r, "team-a|gpt", 1, 7200)  # past 1 h, every family applied it
    other = add_at(r, "team-b|gpt", 1, 7000)  # team-b has no limit
    plain = add_at(r, "gpt", 1, 6000)  # nor has the default tenant
    waiting = add_at(r, "team-a|gpt", 2, 5000)  # past 1 h; accuracy holds it, efficiency never read it
    recent = add_at(r, "team-a|gpt", 3, 3000)  # within 1 h
    got = {g: [e[0] for e in q.read(g, "c", 4 if g == "accuracy" else 3, 1)] for g in GROUPS}
    assert got["accuracy"] == [applied, other, plain, waiting] and got["efficiency"] == [applied, other, plain]
    for g in GROUPS:
        r.xack(KEYS.stream, g, applied, other, plain)
    # dead letters age by the entry they came from (src_id), not by when they were dead-lettered
    for src, model in ((f"{(NOW - 7100) * 1000}-0", "team-a|gpt"), (f"{(NOW - 100) * 1000}-0", "team-a|gpt"),
                       (f"{(NOW - 7100) * 1000}-1", "team-b|gpt")):  # fmt: skip
        r.xadd(KEYS.dead_letters, {"src_id": src, "group": "accuracy", "m": model, "s": 9, "e": b"text"})
    kept_letters = [e[0].decode() for e in r.xrange(KEYS.dead_letters)][1:]

    out = expire_raw_text(q, store, NOW)

    assert out == {"team-a": Expired(stream_entries=2, unapplied=1, dead_letters=1,
                                     by_family={"accuracy": 1, "efficiency": 1})}  # fmt: skip
    assert [e[0].decode() for e in r.xrange(KEYS.stream)] == [other, plain, recent]
    assert [e[0].decode() for e in r.xrange(KEYS.dead_letters)] == kept_letters
    assert r.xpending(KEYS.stream, "accuracy")["pending"] == 0  # the dropped entry left accuracy's pending list
    # the dropped batch (one prediction) is no longer on its way to either family (Profile.pending)
    assert r.hgetall(KEYS.meta("team-a|gpt")) == {b"expired_predictions:accuracy": b"1", b"expired_batches:accuracy":
        b"1", b"expired_predictions:efficiency": b"1", b"expired_batches:efficiency": b"1"}  # fmt: skip
    assert audit(r, "team-a") == [(RAW_TEXT_EXPIRED, "janitor", {
        "shard": 0, "raw_text_s": 3600, "stream_entries": 2, "unapplied": 1, "dead_letters": 1,
        "unapplied_by_family": {"accuracy": 1, "efficiency": 1}})]  # fmt: skip
    assert audit(r, "team-b") == []
    assert expire_raw_text(q, store, NOW) == {} and len(audit(r, "team-a")) == 1  # nothing more to remove


def test_a_retention_change_is_audited_once_old_to_new(r, make_settings, tmp_path):
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nraw_text = "1h"\n\n[tenants.team-c]\nminute = "3d"\n')
    settings = make_settings(retention_file=path, minute_retention_s=3 * DAY)
    store, scripts = RetentionStore(settings), Scripts(r)
    default = {"raw_text_s": None, "minute_s": 3 * DAY, "hour_s": settings.hour_retention_s, "day_s": None}
    changed = record_changes(r, KEYS, store, scripts)
    assert set(changed) == {"team-a"}  # team-c's entry says what the global settings keep: no change
    assert audit(r, "team-a") == [(RETENTION_CHANGED, f"janitor (HOLISTIC_RETENTION_FILE {path})",
                                   {"old": default, "new": {**default, "raw_text_s": 3600}})]  # fmt: skip
    assert record_changes(r, KEYS, store, scripts) == {}  # a second janitor, or the next pass: nothing new
    assert len(audit(r, "team-a")) == 1 and audit(r, "team-c") == []

    path.write_text('[tenants.team-a]\nraw_text = "2h"\n')
    store.reload()
    assert set(record_changes(r, KEYS, store, scripts)) == {"team-a"}
    path.write_text("")  # team-a dropped from the file: back to the global retention
    store.reload()
    assert set(record_changes(r, KEYS, store, scripts)) == {"team-a"}
    changes = [(d["old"]["raw_text_s"], d["new"]["raw_text_s"]) for _, _, d in audit(r, "team-a")]
    assert changes == [(None, 3600), (3600, 7200), (7200, None)]


def test_what_was_stored_under_a_longer_retention_gets_the_new_ttl_or_goes(r, make_settings, tmp_path):
    store = store_of(make_settings, tmp_path,
                     '[tenants.team-a]\nraw_text = "2h"\nminute = "1h"\nhour = "2d"\nday = "10d"\n')  # fmt: skip
    team_a = store.of("team-a")
    m = "team-a|gpt"
    day = NOW // DAY
    keys = {
        "minute past": (KEYS.stats(m, "accuracy", "m", (NOW - 3960) // 60 - 1), None),  # ended 66 min ago
        "minute kept": (KEYS.stats(m, "accuracy", "m", (NOW - 960) // 60 - 1), 3 * DAY),  # ended 16 min ago
        "minute short": (KEYS.stats(m, "accuracy", "m", (NOW - 60) // 60 - 1), 50),  # a TTL shorter already
        "day": (KEYS.stats(m, "accuracy", "d", day - 5), None),  # ended 4.5 days ago, no TTL
        "d16": (KEYS.stats(m, "accuracy", "d16", day // 16), None),
        "all": (KEYS.stats(m, "accuracy", "all"), None),
        "meta": (KEYS.meta(m), None),
        "instances yesterday": (KEYS.instances(m, "toxicity", day - 1), 3 * DAY),
        "instances today": (KEYS.instances(m, "toxicity", day), 3 * DAY),
        "team-b minute": (KEYS.stats("team-b|gpt", "accuracy", "m", (NOW - 3960) // 60 - 1), None),
        "default minute": (KEYS.stats("gpt", "accuracy", "m", (NOW - 3960) // 60 - 1), None),
    }
    for key, ttl in keys.values():
        r.hset(key, "n", 1)
        if ttl:
            r.expire(key, ttl)

    removed, shortened = shorten_stored(r, KEYS, "team-a", team_a, instance_ttl_s=2 * DAY, now_s=NOW)

    assert (removed, shortened) == (2, 3)
    gone = {name for name, (key, _) in keys.items() if not r.exists(key)}
    assert gone == {"minute past", "instances yesterday"}  # ended 12 h ago, past 2 h of raw text
    ttl = {name: r.ttl(key) for name, (key, _) in keys.items() if name not in gone}
    assert 2640 - 2 <= ttl["minute kept"] <= 2640  # 1 h after it ended, 16 min ago
    assert 0 < ttl["minute short"] <= 50  # EXPIRE LT: never longer
    assert 475_200 - 2 <= ttl["day"] <= 475_200  # 10 days after it ended, 4.5 days ago
    assert 50_400 - 2 <= ttl["instances today"] <= 50_400  # today ends in 12 h, then 2 h
    assert ttl["d16"] == ttl["all"] == ttl["meta"] == ttl["team-b minute"] == ttl["default minute"] == -1


def test_workers_write_buckets_with_their_tenants_ttls(r, make_settings, make_worker, tmp_path):
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nminute = "1h"\nhour = "2d"\nday = "10d"\n')
    acc = make_worker("accuracy", make_settings(retention_file=path))
    add_batch(r, "team-a|gpt", 1)
    add_batch(r, "gpt", 1)
    drain(acc)

    def ttls(model: str) -> dict[str, int]:
        """tier -> TTL of the model's accuracy statistics (one bucket per tier: one batch, one minute)."""
        inventory, found = Inventory(KEYS), {}
        for raw in r.scan_iter(match=KEYS.model_keys_glob(glob_escape(model))):
            key = raw.decode()
            if inventory.describe(key).builder == "stats":
                suffix = key.split(":st:accuracy:")[1]  # "all", or "<tier>:<bucket>"
                found[suffix.partition(":")[0]] = r.ttl(raw)
        return found

    team_a, plain = ttls("team-a|gpt"), ttls("gpt")
    assert set(team_a) == set(plain) == {"m", "h", "d", "d16", "d256", "all"}
    assert 3600 - 5 <= team_a["m"] <= 3600 and 2 * DAY - 5 <= team_a["h"] <= 2 * DAY
    assert 10 * DAY - 5 <= team_a["d"] <= 10 * DAY
    assert team_a["d16"] == team_a["d256"] == team_a["all"] == -1
    settings = acc.settings
    assert settings.minute_retention_s - 5 <= plain["m"] <= settings.minute_retention_s and plain["d"] == -1


def test_per_instance_state_lives_its_tenants_raw_text_retention(r, make_settings, make_worker, tmp_path):
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nraw_text = "2h"\n')
    worker = make_worker("robustness", make_settings(retention_file=path, instance_ttl_s=2 * DAY))
    for model, kept in (("team-a|m", 2 * 3600), ("m", 2 * DAY)):  # the default tenant: HOLISTIC_INSTANCE_TTL_S
        plan = worker.instances.plan(model, SPEC, [Row(SEP.join(("s", "em", "q")), "o", 1.0, 5)], 0)
        w = Work("0-1", type("E", (), {"model": model, "seq": 1})(), "b1", 1, {}, None, 0)
        keys, args = worker._apply_args(w, plan.by_minute, plan.hashes)
        assert worker.queue.scripts.apply(keys=keys, args=args) == 1
        now = int(r.time()[0])
        # the day's hash lives until the day ends, then the tenant's raw-text retention
        assert abs(r.ttl(KEYS.instances(model, "robustness", now // DAY)) - ((now // DAY + 1) * DAY + kept - now)) <= 2


def test_the_janitor_shortens_what_is_stored_before_it_records_the_change(r, make_settings, tmp_path, monkeypatch):
    path = tmp_path / "retention.toml"
    path.write_text("")
    settings = make_settings(retention_file=path)
    store, queues = RetentionStore(settings), [WorkQueue(r, KEYS)]
    key = KEYS.stats("team-a|gpt", "accuracy", "m", int(time.time() // 60) - 120)  # ended about 2 h ago
    r.hset(key, "n", 1)
    r.expire(key, 3 * DAY)
    enforce_retention(settings, r, queues, store)
    assert r.exists(key) and audit(r, "team-a") == []

    path.write_text('[tenants.team-a]\nminute = "1h"\n')
    store.reload()

    def down(*args: object, **kwargs: object) -> None:
        raise redis.ConnectionError("Redis went away mid-pass")

    monkeypatch.setattr("holistic.queue.janitor.shorten_stored", down)
    with pytest.raises(redis.ConnectionError):
        enforce_retention(settings, r, queues, store)
    assert audit(r, "team-a") == [] and r.exists(key)  # not recorded: the next pass does it again
    monkeypatch.undo()
    enforce_retention(settings, r, queues, store)
    assert not r.exists(key) and [a for a, _, _ in audit(r, "team-a")] == [RETENTION_CHANGED]
