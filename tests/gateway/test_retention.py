"""Per-tenant retention seen from the API: GetProfile over a window past the tenant's retention says which
part is gone (Window.retention_notice) and reads no bucket past it; a retention change is in the tenant's
audit trail for an admin; a watch of a deleted model ends with NOT_FOUND."""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, datetime

import grpc
import pytest
from click.testing import CliRunner

from holistic.queue.janitor import enforce_retention
from holistic.queue.work import WorkQueue
from holistic.redis.keys import Keys
from holistic.tenancy.audit import RETENTION_CHANGED
from holistic.tenancy.retention import RetentionStore
from holistic.tenancy.tenants import hash_token
from holistic_app.cli import main
from holistic_client import ClientError
from tests.conftest import drain
from tests.factories import prediction

ADMIN, TEAM, OTHER = "admin-token", "team-a-token", "default-token"
HOUR, DAY = 3600, 86_400
RETENTION = '[tenants.team-a]\nminute = "1h"\nhour = "1d"\nday = "2d"\n'
NOTICE = re.compile(
    r"minute buckets before (\d{4}-\d\d-\d\dT\d\d:\d\dZ) are past retention \(1 hour\) and gone: "
    r"the start rounded out to a whole hour"
)


@pytest.fixture
def team(make_gateway, make_settings, make_worker, tmp_path):
    """A gateway whose tenant team-a keeps minute buckets 1 h, hour buckets 1 day, day buckets 2 days."""
    path = tmp_path / "retention.toml"
    path.write_text(RETENTION)
    tokens = f"team-a:sha256:{hash_token(TEAM)},{OTHER}"
    gw = make_gateway(families="accuracy", tokens=tokens, admin_tokens=f"ops:sha256:{hash_token(ADMIN)}",
                      retention_file=path)  # fmt: skip
    return gw, make_worker("accuracy", make_settings(families="accuracy", retention_file=path))


def utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")


def test_a_window_past_the_tenants_retention_says_which_part_is_gone(team):
    gw, worker = team
    now = time.time()
    preds = [prediction("now", produced_at_s=now - 30), prediction("h3", produced_at_s=now - 3 * HOUR)]
    with gw.client(TEAM) as a, gw.client(OTHER) as default:
        a.submit(preds, model="gpt")
        default.submit(preds, model="gpt")
        drain(worker)
        start = now // HOUR * HOUR - 4 * HOUR + 1800  # not on an hour: the minute edge matters
        window = (datetime.fromtimestamp(start, tz=UTC), datetime.fromtimestamp(now, tz=UTC))
        past = a.get_profile("gpt", window)
        within = a.get_profile("gpt", (datetime.fromtimestamp(now - 1200, tz=UTC), window[1]))
        global_retention = default.get_profile("gpt", window)
        week = a.get_profile("gpt", "7d")

    m = NOTICE.fullmatch(past.window.retention_notice)
    assert m is not None, past.window.retention_notice
    assert m[1] in {utc(now - HOUR), utc(now - HOUR + 60)}  # an hour before the read
    # the minute buckets before the retention are not read: the start is cut on the hour grid
    assert past.window.start_resolution_seconds == HOUR and past.window.end_resolution_seconds == 60
    assert past.window.range.start_time.seconds == start - 1800
    assert past.counts.window_predictions == 2  # the 3-hour-old one, from its hour bucket
    assert within.window.retention_notice == "" and within.window.resolution_seconds == 60
    # the default tenant keeps minute buckets HOLISTIC_MINUTE_RETENTION_S (3 days): nothing gone
    assert global_retention.window.retention_notice == "" and global_retention.window.start_resolution_seconds == 60
    # a week reaches past all three tiers of team-a
    parts = week.window.retention_notice.split("; ")
    assert [p.split(" buckets before ")[0] for p in parts] == ["minute", "hour", "day"], parts
    assert "past retention (1 day) and gone" in parts[1] and "past retention (2 days) and gone" in parts[2]


def test_the_cli_shows_the_notice(team):
    gw, worker = team
    with gw.client(TEAM) as a:
        a.submit([prediction("p")], model="gpt")
    drain(worker)
    shown = CliRunner().invoke(main, ["profile", "gpt", "--window", "24h", "--target", gw.address, "--token", TEAM],
                               env={"COLUMNS": "250"})  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert re.search(r"gpt: minute buckets before \S+ are past retention \(1 hour\) and gone", shown.output)
    plain = CliRunner().invoke(main, ["profile", "gpt", "--window", "1h", "--target", gw.address, "--token", TEAM],
                               env={"COLUMNS": "250"})  # fmt: skip
    assert plain.exit_code == 0 and "past retention" not in plain.output


def test_an_admin_reads_a_retention_change_in_the_audit_trail(team, make_settings, r, tmp_path):
    gw, _ = team
    settings = make_settings(families="accuracy", retention_file=gw.settings.retention_file)
    store = RetentionStore(settings)
    queues = [WorkQueue(r, Keys())]
    enforce_retention(settings, r, queues, store)  # the janitor's pass: the file's first sight of team-a
    gw.settings.retention_file.write_text(RETENTION.replace('day = "2d"', 'day = "3d"'))
    store.reload()
    enforce_retention(settings, r, queues, store)
    enforce_retention(settings, r, queues, store)  # nothing new
    with gw.client(ADMIN) as admin:
        entries = [e for e in admin.iter_audit("team-a") if e.action == RETENTION_CHANGED]
    assert [json.loads(e.details_json)["new"]["day_s"] for e in entries] == [2 * DAY, 3 * DAY]
    assert [json.loads(e.details_json)["old"]["day_s"] for e in entries] == [None, 2 * DAY]
    assert entries[0].actor == f"janitor (HOLISTIC_RETENTION_FILE {gw.settings.retention_file})"


@pytest.mark.parametrize("how", ["delete_model", "delete_tenant_data"])
def test_a_watch_of_a_deleted_model_ends_with_not_found(make_gateway, how):
    gw = make_gateway(families="accuracy", tokens=f"team-a:sha256:{hash_token(TEAM)}",
                      admin_tokens=f"ops:sha256:{hash_token(ADMIN)}")  # fmt: skip
    with gw.client(TEAM) as a:
        a.submit([prediction("p")], model="gpt")
        a.submit([prediction("p")], model="kept")
    seen: dict[str, list[object]] = {"gpt": [], "kept": []}
    clients = {m: gw.client(TEAM) for m in seen}

    def watch(model: str) -> None:
        try:
            for p in clients[model].watch_profile(model):
                seen[model].append(p)
        except ClientError as exc:
            seen[model].append(exc)

    threads = {m: threading.Thread(target=watch, args=(m,), daemon=True) for m in seen}
    for t in threads.values():
        t.start()
    deadline = time.monotonic() + 10
    while not all(seen.values()):
        assert time.monotonic() < deadline, "the watches never answered"
        time.sleep(0.01)
    with gw.client(ADMIN) as admin:
        admin.delete_model("gpt", "team-a") if how == "delete_model" else admin.delete_tenant_data("team-a")
    began = time.monotonic()
    threads["gpt"].join(5)
    assert not threads["gpt"].is_alive(), "the watch of the deleted model stayed open"
    assert time.monotonic() - began < 2
    ended = seen["gpt"][-1]
    assert isinstance(ended, ClientError) and ended.code == grpc.StatusCode.NOT_FOUND
    assert "model 'gpt' was deleted" in str(ended)
    if how == "delete_model":  # another model's watch stays open
        time.sleep(0.6)
        assert threads["kept"].is_alive() and len(seen["kept"]) == 1
    for c in clients.values():
        c.close()
    threads["kept"].join(5)


def test_a_batch_dropped_by_raw_text_retention_is_audited_and_no_longer_pending(make_gateway, make_settings, r,
                                                                                 tmp_path):  # fmt: skip
    path = tmp_path / "retention.toml"
    path.write_text('[tenants.team-a]\nraw_text = "1s"\n')
    gw = make_gateway(families="accuracy", tokens=f"team-a:sha256:{hash_token(TEAM)}",
                      admin_tokens=f"ops:sha256:{hash_token(ADMIN)}", retention_file=path)  # fmt: skip
    settings = make_settings(families="accuracy", retention_file=path)
    with gw.client(TEAM) as a, gw.client(ADMIN) as admin:
        a.submit([prediction("p1"), prediction("p2")], model="gpt")  # no worker runs: both wait for accuracy
        before = a.get_profile("gpt")
        time.sleep(1.2)
        enforce_retention(settings, r, [WorkQueue(r, Keys())], RetentionStore(settings))
        after = a.get_profile("gpt")
        audited = [e for e in admin.iter_audit("team-a") if e.action == "raw_text_expired"]
    assert [(p.pending_predictions, p.pending_batches) for p in before.pending] == [(2, 1)]
    assert [(p.pending_predictions, p.pending_batches) for p in after.pending] == [(0, 0)]
    assert after.counts.accepted_predictions == 2  # accepted, and counted as such
    assert r.xlen(Keys().stream) == 0
    details = json.loads(audited[0].details_json)
    assert (details["stream_entries"], details["unapplied"], details["unapplied_by_family"]) == (1, 1, {"accuracy": 1})
