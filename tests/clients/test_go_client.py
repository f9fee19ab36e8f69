"""The Go client (clients/go): its offline `go test` suite, its live test against a gateway with workers,
the same fixture submitted from Go and from Python giving equal profiles, and equal batch ids."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from google.protobuf import json_format

from holistic.v1 import profile_pb2 as pp
from holistic_client.jsonl import read_predictions
from tests.clients.batch_ids import FIXTURE, MAPS, python_batch_ids
from tests.clients.conftest import need_tool, profile_differences

ROOT = Path(__file__).resolve().parents[2]
GO_DIR = ROOT / "clients" / "go"
GO = GO_DIR / "scripts" / "go.sh"
BINARY = GO_DIR / ".build" / "bin" / "holistic-go"
TOKEN = "go-token"
APT = "apt-get install -y golang-go protobuf-compiler protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev"


def go(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The go tool through clients/go/scripts/go.sh (stubs from protos/, Debian's Go sources, cached build)."""
    return subprocess.run([str(GO), *args], cwd=GO_DIR, env=dict(os.environ, **(env or {})), capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


@pytest.fixture(scope="module")
def holistic_go() -> Path:
    """The command-line example, built once per module."""
    need_tool("go", APT)
    need_tool("protoc", APT)
    need_tool("protoc-gen-go-grpc", APT)
    if not Path("/usr/share/gocode/src/google.golang.org/grpc").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"grpc-go's Debian sources are missing ({APT}); ./dev test installs them")
        pytest.skip(f"grpc-go's Debian sources are missing ({APT})")
    built = go("build", "-o", str(BINARY), "./cmd/holistic-go")
    assert built.returncode == 0, built.stdout + built.stderr
    return BINARY


def run_go_cli(binary: Path, *args: str, target: str = "127.0.0.1:1") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HOLISTIC_TARGET=target, HOLISTIC_TOKEN=TOKEN)
    return subprocess.run([str(binary), *args], env=env, capture_output=True, text=True, timeout=240)


def test_go_offline_suite_passes(holistic_go):
    """`go test ./...`: the client against an in-process fake gateway, and the CLI, without Redis."""
    result = go("test", "-timeout", "300s", "./...")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    passed = set(re.findall(r"^ok\s+(\S+)", out, re.M))
    prefix = "github.com/holistic-eval/holistic/clients/go/"
    assert passed == {prefix + "holistic", prefix + "cmd/holistic-go"}, out
    assert "FAIL" not in out


def test_go_batch_ids_equal_pythons(holistic_go):
    """The same batches get the same content-derived ids in Go and in Python, byte for byte, maps included."""
    for path, batch_size in ((FIXTURE, 20), (FIXTURE, 500), (MAPS, 2), (MAPS, 500)):
        shown = run_go_cli(holistic_go, "submit", str(path), "--model", "m", "--batch-size", str(batch_size),
                           "--dry-run")  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        from_go = [tuple(row.split("\t")) for row in shown.stdout.splitlines()]
        assert from_go == python_batch_ids(path, "m", batch_size), path
        assert len(from_go) == {(FIXTURE, 20): 3, (FIXTURE, 500): 1, (MAPS, 2): 3, (MAPS, 500): 2}[path, batch_size]


def test_go_live_suite_against_a_live_gateway(holistic_go, make_gateway, live_workers):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    env = {"HOLISTIC_TARGET": gw.address, "HOLISTIC_TOKEN": TOKEN}
    result = go("test", "-tags", "live", "-count=1", "-v", "-run", "Live", "-timeout", "300s", "./holistic/", env=env)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-6000:]
    assert re.findall(r"^--- (\w+): (\w+)", out, re.M) == [("PASS", "TestLiveSubmitProfileModelsWatchErrors")], out


def wait_applied(client, model: str, n: int) -> pp.Profile:
    deadline = time.monotonic() + 60
    while True:
        p = client.get_profile(model)
        if p.families and all(f.count == n for f in p.families):
            return p
        assert time.monotonic() < deadline, f"{model} not applied"
        time.sleep(0.1)


def comparable(p: pp.Profile) -> pp.Profile:
    out = pp.Profile()
    out.CopyFrom(p)
    out.ClearField("model")
    out.ClearField("compute_time")
    return out


def test_go_and_python_submissions_give_equal_profiles(holistic_go, make_gateway, live_workers):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    lines = list(read_predictions(FIXTURE))
    n = len(lines)
    assert n == 48 and all(line.prediction is not None and not line.prediction.model for line in lines)

    done = run_go_cli(holistic_go, "submit", str(FIXTURE), "--model", "go-copy", "--batch-size", "20",
                      target=gw.address)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accepted 48 predictions in 3 batches (0 already accepted earlier); rejected 0 lines" in done.stdout
    with gw.client(TOKEN) as client:
        report = client.submit_lines(lines, batch_size=20, model="py-copy")
        assert (report.accepted, report.batches, report.rejected) == (48, 3, [])
        from_go = wait_applied(client, "go-copy", n)
        from_python = wait_applied(client, "py-copy", n)
        # Python sending the same batches for go-copy sends Go's batch ids: the gateway sees duplicates.
        again = client.submit_lines(lines, batch_size=20, model="go-copy")
        assert (again.accepted, again.duplicates, again.batches) == (0, 48, 3)

    assert from_go.model == "go-copy" and from_python.model == "py-copy"
    differences = profile_differences(comparable(from_go), comparable(from_python))
    assert not differences, differences
    assert from_go.counts.accepted_predictions == 48 and from_go.counts.accepted_batches == 3
    assert [f.family for f in from_go.families] == ["accuracy", "efficiency"]

    # Go reads the profile back as Python does: its canonical JSON parses to the same message.
    shown = run_go_cli(holistic_go, "profile", "go-copy", "--json", target=gw.address)
    assert shown.returncode == 0, shown.stderr
    assert comparable(json_format.Parse(shown.stdout, pp.Profile())) == comparable(from_go)
    listed = run_go_cli(holistic_go, "models", target=gw.address)
    assert listed.returncode == 0 and {"go-copy\t48", "py-copy\t48"} <= set(listed.stdout.splitlines()), listed
    table = run_go_cli(holistic_go, "profile", "go-copy", target=gw.address)
    assert table.returncode == 0 and table.stdout.startswith("go-copy: "), table
    accuracy = next(d for d in from_go.dimensions if d.kind == pp.DIMENSION_KIND_ACCURACY)
    assert f"  accuracy     {accuracy.score:.3f}\n" in table.stdout


def test_go_cli_says_what_failed(holistic_go, make_gateway):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    denied = subprocess.run([str(holistic_go), "models", "--target", gw.address, "--token", "wrong"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert denied.returncode == 2 and denied.stderr.startswith("error: UNAUTHENTICATED: "), denied
    missing = run_go_cli(holistic_go, "profile", "ghost", target=gw.address)
    assert missing.returncode == 2 and missing.stderr.startswith("error: NOT_FOUND: "), missing


def test_go_cli_watch_prints_a_profile_per_applied_batch(holistic_go, make_gateway, live_workers):
    gw = make_gateway(tokens=TOKEN, families="accuracy,efficiency")
    lines = list(read_predictions(FIXTURE))
    with gw.client(TOKEN) as client:
        client.submit_lines(lines[:10], model="go-watch")
        wait_applied(client, "go-watch", 10)
        env = dict(os.environ, HOLISTIC_TARGET=gw.address, HOLISTIC_TOKEN=TOKEN)
        watch = subprocess.Popen([str(holistic_go), "watch", "go-watch", "--json"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        seen: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [seen.put(line) for line in watch.stdout], daemon=True).start()  # type: ignore[union-attr]
        try:
            counts = [json_format.Parse(seen.get(timeout=60), pp.Profile()).counts.window_predictions]
            client.submit_lines(lines[10:15], model="go-watch")
            while counts[-1] != 15:
                counts.append(json_format.Parse(seen.get(timeout=60), pp.Profile()).counts.window_predictions)
        finally:
            watch.terminate()
            watch.wait(30)
    assert counts[0] == 10 and counts[-1] == 15 and counts == sorted(counts), counts
