"""The service on a real Redis Cluster: three masters on loopback, started with Debian's redis-server and
`redis-cli --cluster create`. Keys, Lua scripts and streams work unchanged; the work stream is sharded
over the nodes; the profiles equal those of a single Redis fed the same batches.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest
import redis
from click.testing import CliRunner
from redis.cluster import RedisCluster

from holistic.queue import envelope
from holistic.queue.janitor import sweep
from holistic.queue.work import WorkQueue, shard_of
from holistic.redis.connection import sync_client
from holistic.redis.keys import Keys
from holistic.v1 import prediction_pb2 as pb
from holistic_app.cli import main
from holistic_client import ClientError
from metric_services.runner import Worker
from tests.conftest import drain
from tests.deletion import traces_of
from tests.factories import prediction
from tests.gateway.test_delete_model import (
    a_batch_read_before_the_deletion_brings_nothing_back,
    deletes_every_key_and_entry_of_the_model_and_nothing_else,
    submits_wait_for_a_deletion_and_number_after_the_tombstone,
)
from tests.gateway.test_delete_tenant import deletes_every_model_and_key_of_the_tenant_and_nothing_else, tenants
from tests.gateway.test_request_bounds import (
    TENANTS,
    models_past_the_cap_are_refused,
    refused_batches_register_no_group_tags,
)
from tests.metric_services.test_property_batching import flatten

pytestmark = pytest.mark.slow
FAMILIES = "accuracy,efficiency,robustness"
SHARDS = 4


def _free_cluster_port() -> int:
    """A port whose cluster bus port (+10000) is free too."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 > 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port pair")


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server and redis-cli are needed for the cluster tests")
        pytest.skip("redis-server / redis-cli not installed")
    base = tmp_path_factory.mktemp("cluster")
    ports = [_free_cluster_port() for _ in range(3)]
    procs = []
    for port in ports:
        d = base / str(port)
        d.mkdir()
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
             "--cluster-config-file", str(d / "nodes.conf"), "--dir", str(d), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))  # fmt: skip
    for port in ports:
        for _ in range(200):
            try:
                redis.Redis(port=port).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
    subprocess.run(
        ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports), "--cluster-replicas", "0",
         "--cluster-yes"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    for _ in range(200):
        if b"cluster_state:ok" in redis.Redis(port=ports[0]).execute_command("CLUSTER INFO"):
            break
        time.sleep(0.05)
    yield f"redis://127.0.0.1:{ports[0]}/0", ports
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture
def rc(redis_cluster):
    client = RedisCluster.from_url(redis_cluster[0])
    client.flushall()
    yield client
    client.close()


def workload(now: float) -> list[tuple[str, list[pb.Prediction]]]:
    """Batches for six models, with robustness variants joining their originals across batches."""
    out = []
    for m in range(6):
        model = f"model-{m}"
        for b in range(3):
            preds = []
            for i in range(8):
                pid = f"{b}-{i}"
                out_text = "Paris" if (i + m) % 3 else "Rome"
                preds.append(prediction(pid, output=out_text, latency_s=0.1 * (i + 1), produced_at_s=now - 60 * b))
                if i % 2 == 0:
                    p = prediction(f"{pid}~typos", output="Rome" if i % 4 == 0 else "Paris", produced_at_s=now - 60 * b)
                    p.perturbation.name = "typos"
                    p.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
                    p.perturbation.original_id = pid
                    preds.append(p)
            out.append((model, preds))
    return out


def run(make_gateway, settings_overrides, worker_settings, batches, r) -> dict[str, dict[str, float]]:
    """The profiles of every model, after checking that the submits indexed every model for ListModels
    and that its pages list them all in name order."""
    gw = make_gateway(families=FAMILIES, **settings_overrides)
    workers = [Worker(f, worker_settings, sync_client(worker_settings)) for f in FAMILIES.split(",") for _ in range(2)]
    with gw.client() as c:
        for i, (model, preds) in enumerate(batches):
            c.submit(preds, batch_id=f"b{i}", model=model)
            if i % 3 == 0:
                drain(*workers)
        assert c.submit(batches[0][1], batch_id="b0", model=batches[0][0]).duplicate
        drain(*workers)
        models = sorted({m for m, _ in batches})
        assert r.zrange(Keys().models_index(), 0, -1) == [m.encode() for m in models]  # before any listing
        assert [m.model for m in c.list_models(page_size=4)] == models
        return {m: flatten(c.get_profile(m)) for m in models}


def test_cluster_gives_the_same_profiles_as_one_redis(rc, r, redis_cluster, make_gateway, make_settings):
    url, ports = redis_cluster
    batches = workload(time.time())
    cluster = {"redis_url": url, "redis_cluster": True, "queue_shards": SHARDS}
    on_cluster = run(make_gateway, cluster, make_settings(families=FAMILIES, **cluster), batches, rc)
    single = run(make_gateway, {}, make_settings(families=FAMILIES), batches, r)
    assert on_cluster.keys() == single.keys() and len(on_cluster) == 6
    for model, values in single.items():
        assert on_cluster[model].keys() == values.keys()
        for key, value in values.items():
            assert on_cluster[model][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (model, key)
        assert values["window_predictions"] == 36
    # the shards' streams live on different nodes
    nodes = {rc.get_node_from_key(Keys().stream_for(n)).port for n in range(SHARDS)}
    assert len(nodes) >= 2 and nodes <= set(ports)
    used = {shard_of(f"model-{m}", SHARDS) for m in range(6)}
    assert all(rc.xlen(Keys().stream_for(n)) > 0 for n in used)


def test_dead_letters_replay_and_trim_per_shard(rc, redis_cluster, make_gateway, make_settings):
    url, _ = redis_cluster
    overrides = {"redis_url": url, "redis_cluster": True, "queue_shards": SHARDS, "families": "accuracy"}
    s = make_settings(**overrides)
    gw = make_gateway(**overrides)
    with gw.client() as c:
        for m in range(4):
            c.submit([prediction("a"), prediction("b")], batch_id="b1", model=f"m{m}")
    shard = shard_of("m0", SHARDS)
    queue = WorkQueue(rc, Keys(), shard=shard)
    poison = rc.xadd(queue.stream, {"v": "1", "m": "m0", "s": "9", "e": b"\xff not protobuf"}).decode()
    worker = Worker("accuracy", s, sync_client(s))
    drain(worker)
    assert worker.counters.applied == 4 and worker.counters.dead_lettered == 1
    dead = queue.dead_letters()
    assert [d[1]["src_id"] for d in dead] == [poison]
    env = {"REDIS_URL": url, "HOLISTIC_REDIS_CLUSTER": "true", "HOLISTIC_QUEUE_SHARDS": str(SHARDS), "COLUMNS": "200"}
    listed = CliRunner().invoke(main, ["dlq", "list"], env=env)
    assert listed.exit_code == 0 and dead[0][0] in listed.output
    replayed = CliRunner().invoke(main, ["dlq", "replay", dead[0][0]], env=env)
    assert replayed.exit_code == 0, replayed.output
    assert queue.dead_letters() == []
    drain(worker)  # the replayed poison fails again: back in the dead letters, nothing double counted
    assert len(queue.dead_letters()) == 1
    trimmed = sum(sweep(WorkQueue(rc, Keys(), shard=n), ["accuracy"])[0] for n in range(SHARDS))
    assert trimmed >= 4 and all(rc.xlen(Keys().stream_for(n)) == 0 for n in range(SHARDS))
    with gw.client() as c:
        assert {c.get_profile(f"m{m}").counts.window_predictions for m in range(4)} == {2}


def test_a_tenants_models_past_its_cap_are_refused_on_a_cluster(rc, redis_cluster, make_gateway):
    """A cluster checks the cap before its steps (not atomically: see gateway/ingest.py); one at a time,
    the same answers as one Redis."""
    url, _ = redis_cluster
    gw = make_gateway(redis_url=url, redis_cluster=True, queue_shards=SHARDS, tenant_max_models=2, tokens=TENANTS)
    models_past_the_cap_are_refused(gw, rc)


def test_group_tags_of_refused_and_retried_batches_on_a_cluster(redis_cluster, make_gateway):
    """A cluster's submit runs groups.lua, ingest.lua and mark_queued.lua as steps: the same answers."""
    url, _ = redis_cluster
    gw = make_gateway(redis_url=url, redis_cluster=True, queue_shards=SHARDS, max_group_values=3)
    refused_batches_register_no_group_tags(gw)


def test_watches_of_models_in_different_slots_share_the_feed_loop(rc, redis_cluster, make_gateway, make_settings):
    """The watch loop reads every watched model's updates stream, one XREAD per hash slot on a cluster."""
    import threading

    url, _ = redis_cluster
    cluster = {"redis_url": url, "redis_cluster": True, "queue_shards": SHARDS}
    gw = make_gateway(families="accuracy", **cluster)
    settings = make_settings(families="accuracy", **cluster)
    worker = Worker("accuracy", settings, sync_client(settings))
    models = ["model-0", "model-1", "model-2"]
    assert len({rc.keyslot(Keys().updates(m)) for m in models}) == 3
    with gw.client() as c:
        for m in models:
            c.submit([prediction("a")], batch_id="b1", model=m)
        drain(worker)
        seen: dict[str, list[int]] = {m: [] for m in models}
        streams = {m: gw.client().watch_profile(m) for m in models}

        def consume(m: str) -> None:
            for p in streams[m]:
                seen[m].append(p.counts.window_predictions)
                if len(seen[m]) == 2:
                    return

        threads = [threading.Thread(target=consume, args=(m,), daemon=True) for m in models]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while any(not v for v in seen.values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        for m in models:
            c.submit([prediction("b"), prediction("c")], batch_id="b2", model=m)
        drain(worker)
        for t in threads:
            t.join(20)
    assert seen == {m: [1, 3] for m in models}


def _cluster(redis_cluster, families: str) -> dict[str, object]:
    return {"redis_url": redis_cluster[0], "redis_cluster": True, "queue_shards": SHARDS, "families": families}


def _workers(settings):
    def make(family: str, **kwargs):
        return Worker(family, settings, sync_client(settings), **kwargs)

    return make


def test_delete_model_on_a_cluster_leaves_nothing_of_it(rc, redis_cluster, make_gateway, make_settings):
    """The same deletion, the same answer as on one Redis: the model's keys in its slot, its entries on its
    shard's stream and dead letters (another node), its name in the default tenant's set and index."""
    overrides = _cluster(redis_cluster, "accuracy,efficiency")
    gw = make_gateway(**overrides)
    deletes_every_key_and_entry_of_the_model_and_nothing_else(gw, _workers(make_settings(**overrides)), rc)


def test_a_batch_in_flight_on_a_cluster_brings_nothing_back(rc, redis_cluster, make_gateway, make_settings):
    """On a cluster apply.lua cannot see the stream (another slot): the tombstone alone refuses the batch."""
    overrides = _cluster(redis_cluster, "accuracy")
    gw = make_gateway(**overrides)
    a_batch_read_before_the_deletion_brings_nothing_back(gw, _workers(make_settings(**overrides)), rc)


def test_submits_wait_for_a_deletion_on_a_cluster(rc, redis_cluster, make_gateway):
    submits_wait_for_a_deletion_and_number_after_the_tombstone(make_gateway(**_cluster(redis_cluster, "accuracy")), rc)


def test_a_batch_numbered_before_a_deletion_and_queued_after_it_is_taken_back(
    rc, redis_cluster, make_gateway, monkeypatch
):
    """A cluster's submit numbers its batch (ingest.lua), then another gateway deletes the model whole, then
    the submit adds the batch to the stream: mark_queued.lua finds its ingest record gone, so the gateway takes
    the entry off the stream again and answers UNAVAILABLE. Nothing of the model is left; the retry is numbered
    after the deleted batches."""
    overrides = _cluster(redis_cluster, "accuracy")
    gw, admin = make_gateway(**overrides), make_gateway(**overrides)
    fields_for = envelope.fields_for

    def deleted_meanwhile(*args, **kwargs):
        with admin.client() as a:
            assert a.delete_model("gpt-x").removed
        return fields_for(*args, **kwargs)

    with gw.client(max_attempts=1) as c:
        c.submit([prediction("a")], batch_id="b1", model="gpt-x")
        monkeypatch.setattr(envelope, "fields_for", deleted_meanwhile)
        with pytest.raises(ClientError) as exc:
            c.submit([prediction("b")], batch_id="b2", model="gpt-x")
        assert exc.value.code.name == "UNAVAILABLE" and "is being deleted" in exc.value.message
        monkeypatch.undo()
        assert traces_of(rc, "gpt-x") == []
        assert rc.get(Keys().deleted("gpt-x")) == b"2"
        assert c.submit([prediction("b")], batch_id="b2", model="gpt-x").sequence == 3


def test_delete_tenant_data_on_a_cluster(rc, redis_cluster, make_gateway, make_settings):
    """The tenant's models in their slots, its set and index in its own, the default tenant's set and index
    in two more: the same answers as one Redis."""
    overrides = _cluster(redis_cluster, "accuracy,efficiency")
    gw = tenants(make_gateway, _workers(make_settings(**overrides)), rc, **overrides)
    deletes_every_model_and_key_of_the_tenant_and_nothing_else(gw, rc)
