"""The Node.js client (clients/node): its `node --test` suite against a live gateway, and the same
fixture submitted from Node and from Python giving equal profiles."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from google.protobuf import json_format

from holistic.v1 import profile_pb2 as pp
from holistic_client.jsonl import read_predictions
from tests.clients.batch_ids import MAPS, python_batch_ids
from tests.clients.conftest import need_tool, profile_differences

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "clients" / "node"
FIXTURE = ROOT / "tests" / "fixtures" / "cross_language.jsonl"
TOKEN = "node-token"


@pytest.fixture
def node() -> str:
    need_tool("node", "Node.js 20: apt-get install -y nodejs npm")
    if not (NODE_DIR / "gen" / "holistic" / "v1" / "profile_pb.js").exists():
        if os.environ.get("CI"):
            pytest.fail("clients/node is not built: run `npm ci` in clients/node (./dev test does)")
        pytest.skip("clients/node is not built (npm ci in clients/node)")
    return "node"


def run_node(node: str, *args: str, target: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOLISTIC_TARGET=target, HOLISTIC_TOKEN=TOKEN)
    return subprocess.run([node, *args], cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=timeout)


def test_node_suite_against_a_live_gateway(node, make_gateway, live_workers):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    result = run_node(node, "--test", target=gw.address)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (pass|fail|skipped) (\d+)$", out, re.M)}
    assert counts["fail"] == 0 and counts["skipped"] == 0 and counts["pass"] >= 7, counts


def test_node_suite_against_a_full_deployment(node, make_gateway, make_settings, redis_server):
    """Every family deployed, as `holistic up` runs them, and a 0.4 s latency objective: the live suite
    must not lean on the two-family gateway or on default settings."""
    from holistic.families.registry import installed, load_family
    from tests.clients.conftest import LiveWorkers

    settings = make_settings()
    assert settings.families == installed()
    efficiency = load_family("efficiency").configured(latency_objective_s=0.4)  # workers and gateway alike
    workers = LiveWorkers(settings, redis_server, tuple(efficiency if f == "efficiency" else f for f in installed()))
    try:
        gw = make_gateway(tokens=TOKEN, fold_families={"efficiency": efficiency})
        result = run_node(node, "--test", target=gw.address)
    finally:
        workers.stop()
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    counts = {k: int(v) for k, v in re.findall(r"^# (pass|fail|skipped) (\d+)$", out, re.M)}
    assert counts["fail"] == 0 and counts["skipped"] == 0 and counts["pass"] >= 7, counts


def applied(client, model: str, n: int) -> pp.Profile | None:
    p = client.get_profile(model)
    return p if p.families and all(f.count == n for f in p.families) else None


def wait_applied(client, model: str, n: int) -> pp.Profile:
    deadline = time.monotonic() + 60
    while (p := applied(client, model, n)) is None:
        assert time.monotonic() < deadline, f"{model} not applied"
        time.sleep(0.1)
    return p


def comparable(p: pp.Profile) -> pp.Profile:
    out = pp.Profile()
    out.CopyFrom(p)
    out.ClearField("model")
    out.ClearField("compute_time")
    return out


def test_node_and_python_submissions_give_equal_profiles(node, make_gateway, live_workers):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    lines = list(read_predictions(FIXTURE))
    n = len(lines)
    assert n == 48 and all(line.prediction is not None and not line.prediction.model for line in lines)

    done = run_node(node, "examples/cli.js", "submit", str(FIXTURE), "--model", "node-copy", "--batch-size", "20",
                    target=gw.address)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accepted 48 predictions in 3 batches" in done.stdout  # 20 + 20 + 8
    with gw.client(TOKEN) as client:
        report = client.submit_lines(lines, batch_size=20, model="py-copy")
        assert (report.accepted, report.batches, report.rejected) == (48, 3, [])
        from_node = wait_applied(client, "node-copy", n)
        from_python = wait_applied(client, "py-copy", n)

    assert from_node.model == "node-copy" and from_python.model == "py-copy"
    differences = profile_differences(comparable(from_node), comparable(from_python))
    assert not differences, differences
    assert from_node.counts.accepted_predictions == 48 and from_node.counts.accepted_batches == 3
    # The fixture exercises both families: accuracy over five scenarios, efficiency from timings.
    assert {s.scenario for s in from_node.scenarios} == {"mmlu", "boolq", "narrative_qa", "news_summaries",
                                                         "support_chat"}  # fmt: skip
    assert [f.family for f in from_node.families] == ["accuracy", "efficiency"]

    # And Node reads the profile back as Python does: its canonical JSON parses to the same message.
    shown = run_node(node, "examples/cli.js", "profile", "node-copy", "--json", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    read_by_node = json_format.Parse(shown.stdout, pp.Profile())
    assert comparable(read_by_node) == comparable(from_node)


NODE_BATCH_IDS = """
import { contentBatchId, HolisticClient } from "./src/index.js";
const [path, model, size] = process.argv.slice(1);
const client = new HolisticClient("127.0.0.1:1");  // the Node client's own batching; nothing is sent
client.submit = async (predictions, { model }) => {
  console.log([contentBatchId(model, predictions), predictions.length, predictions[0].model || model].join("\\t"));
  return { acceptedCount: predictions.length, duplicate: false };
};
const report = await client.submitFile(path, { model, batchSize: Number(size) });
client.close();
if (report.rejected.length) throw new Error(JSON.stringify(report.rejected));
"""


def test_node_batch_ids_equal_pythons(node):
    """The same batches get the same content-derived ids in Node and in Python, maps out of key order too."""
    for path, batch_size in ((FIXTURE, 20), (MAPS, 2), (MAPS, 500)):
        shown = subprocess.run([node, "--input-type=module", "-e", NODE_BATCH_IDS, str(path), "m", str(batch_size)],
                               cwd=NODE_DIR, capture_output=True, text=True, timeout=60)  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        from_node = [tuple(row.split("\t")) for row in shown.stdout.splitlines()]
        assert from_node == python_batch_ids(path, "m", batch_size), path
