"""`holistic submit --wait` and Client.wait_applied: return only once every family applied what it accepted."""

from __future__ import annotations

import threading

from click.testing import CliRunner

from holistic_app.cli import main
from holistic_client.jsonl import write_predictions
from tests.factories import prediction

FAMILIES = ["accuracy", "efficiency"]


def test_submit_wait_returns_once_every_family_applied(make_gateway, make_worker, tmp_path):
    gateway = make_gateway(families=FAMILIES)
    path = tmp_path / "preds.jsonl"
    write_predictions(path, [prediction(f"p{i}", model=f"m{i % 2}", latency_s=0.5) for i in range(7)])
    workers = [make_worker(f) for f in FAMILIES]
    stop = threading.Event()

    def work() -> None:  # workers that apply whenever batches arrive, as deployed ones do
        while not stop.is_set():
            for w in workers:
                w.step(block_ms=20)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        args = ["submit", str(path), "--target", gateway.address, "--no-progress", "--batch-size", "2", "--wait"]
        result = CliRunner().invoke(main, args)
        with gateway.client() as client:  # read before the workers stop: the wait alone made them done
            profiles = {m: client.get_profile(m) for m in ("m0", "m1")}
    finally:
        stop.set()
        thread.join(10)
    assert result.exit_code == 0, result.output
    assert "applied by every family: m0, m1" in result.output
    for model, n in (("m0", 4), ("m1", 3)):
        p = profiles[model]
        assert {f.family: f.count for f in p.families if f.family in FAMILIES} == dict.fromkeys(FAMILIES, n)
        assert [(f.family, f.pending_predictions, f.pending_batches) for f in p.pending] == [
            (f, 0, 0) for f in FAMILIES
        ]
        assert p.counts.window_predictions == n


def test_submit_wait_times_out_with_a_clear_message(make_gateway, tmp_path):
    gateway = make_gateway(families=FAMILIES)
    path = tmp_path / "preds.jsonl"
    write_predictions(path, [prediction(f"p{i}", model="m") for i in range(3)])
    args = ["submit", str(path), "--target", gateway.address, "--no-progress", "--wait", "--wait-timeout", "0.2"]
    result = CliRunner().invoke(main, args)  # no worker runs: nothing is ever applied
    assert result.exit_code == 3, result.output
    assert "waiting: pending m 3" in result.output
    assert "predictions not yet applied by every family: m: 3" in result.output


def test_client_wait_applied_reports_progress_until_done(gateway, client, make_worker):
    client.submit([prediction("a"), prediction("b")], batch_id="b1", model="m")
    seen: list[dict[str, int]] = []
    workers = [make_worker(f) for f in sorted({p.family for p in client.get_profile("m").pending})]

    def progress(waiting: dict[str, int]) -> None:
        seen.append(dict(waiting))
        if waiting:  # the first look finds both pending; the workers run only then
            for w in workers:
                w.step(block_ms=1)

    profiles = client.wait_applied(["m"], timeout=60, on_progress=progress)
    assert seen[0] == {"m": 2} and seen[-1] == {}
    assert all(p.pending_predictions == 0 for p in profiles["m"].pending)


def test_profile_table_and_detail_show_pending(make_gateway, tmp_path):
    gateway = make_gateway(families=FAMILIES)
    path = tmp_path / "preds.jsonl"
    write_predictions(path, [prediction(f"p{i}", model="m", latency_s=0.5) for i in range(3)])
    assert CliRunner().invoke(main, ["submit", str(path), "--target", gateway.address, "--no-progress"]).exit_code == 0
    env = {"COLUMNS": "250"}
    table = CliRunner().invoke(main, ["profile", "m", "--target", gateway.address], env=env)
    assert table.exit_code == 0, table.output
    row = next(line for line in table.output.splitlines() if "│ m " in line)
    assert row.count("pending 3") == 3  # the predictions column, accuracy and efficiency
    detail = CliRunner().invoke(main, ["profile", "m", "--detail", "--target", gateway.address], env=env)
    assert "pending: 3 accepted predictions not yet applied by the efficiency family" in detail.output
    assert "m: accuracy (0 predictions), pending 3" in detail.output


def test_report_says_what_is_pending():
    from datetime import UTC, datetime

    from holistic.v1 import profile_pb2 as pp
    from holistic_client.report import build_report

    p = pp.Profile(model="m", pending=[pp.FamilyPending(family="accuracy", pending_predictions=4, pending_batches=1),
                                       pp.FamilyPending(family="efficiency")])  # fmt: skip
    p.counts.accepted_predictions = 4
    acc = p.dimensions.add(kind=pp.DIMENSION_KIND_ACCURACY, axis="accuracy", family="accuracy")
    acc.absent_reason = "pending: 4 accepted predictions not yet applied by the accuracy family"
    page = build_report([p], "all time", datetime(2026, 12, 5, tzinfo=UTC))
    assert "4 accepted all time; pending (accepted, not yet applied): accuracy 4" in page
    assert "<td class=num>0 pending 4</td><td class=num>pending 4</td>" in page  # the matrix row
    assert "pending: 4 accepted predictions not yet applied by the accuracy family" in page
