"""Submit -> workers -> profile, end to end through the gateway: values, windows, watch."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from holistic.v1 import profile_pb2 as pp
from tests.conftest import drain
from tests.factories import prediction


def dims(profile):
    return {pp.DimensionKind.Name(d.kind): d for d in profile.dimensions}


def metric(items, name):
    return next(m for m in items if m.name == name)


def test_profile_values(client, make_worker):
    now = time.time()
    preds = [
        prediction("a", output="Paris", references=["Paris"], latency_s=0.5, produced_at_s=now - 10),
        prediction("b", output="paris.", references=["Paris"], latency_s=1.5, produced_at_s=now - 9),
        prediction("c", output="Rome", references=["Paris"], latency_s=2.5, produced_at_s=now - 8),
        prediction("d", scenario="qa", task=2, output="the cat sat", references=["a cat sat down"], latency_s=3.0),
    ]
    client.submit(preds, batch_id="b1", model="m1")
    drain(make_worker("accuracy"), make_worker("efficiency"))
    p = client.get_profile("m1")
    assert p.counts.accepted_predictions == 4 and p.counts.accepted_batches == 1
    assert p.counts.window_predictions == 4
    d = dims(p)
    # mmlu accuracy = exact_match = 1/3; qa accuracy = f1 = 0.8 ("cat sat" vs "cat sat down")
    assert d["DIMENSION_KIND_ACCURACY"].score == pytest.approx((1 / 3 + 0.8) / 2, abs=1e-12)
    # latencies 0.5, 1.5, 2.5, 3.0 against the default 2 s objective
    assert d["DIMENSION_KIND_EFFICIENCY"].score == pytest.approx(0.5)
    assert not d["DIMENSION_KIND_CALIBRATION"].HasField("score")  # deployed, but its worker never ran here
    assert "no predictions with a confidence" in d["DIMENSION_KIND_CALIBRATION"].absent_reason
    assert "no non-empty outputs in this window" in d["DIMENSION_KIND_BIAS"].absent_reason  # deployed, not run
    assert [k for k, v in d.items() if v.HasField("score")] == ["DIMENSION_KIND_ACCURACY", "DIMENSION_KIND_EFFICIENCY"]
    mmlu = next(s for s in p.scenarios if s.scenario == "mmlu")
    assert (mmlu.task, mmlu.main_metric, mmlu.count) == (1, "exact_match", 3)
    assert metric(mmlu.metrics, "quasi_exact_match").value == pytest.approx(2 / 3)
    assert metric(mmlu.metrics, "latency_mean").value == pytest.approx(1.5)
    fams = {f.family: f for f in p.families}
    assert fams["accuracy"].signature.text.startswith("accuracy|v:2|")
    assert fams["efficiency"].signature.options["latency_objective_s"] == "2.0"


def test_a_family_not_deployed_is_named_as_such(settings):
    from holistic.profile import fold as profile_mod
    from holistic.stats.mergeable import Folded

    folded = {"accuracy": Folded()}  # only accuracy deployed
    d = dims(profile_mod.build("m", pp.Window(), {}, folded, settings, 0.0))
    assert d["DIMENSION_KIND_BIAS"].absent_reason == "no bias metric service runs in this deployment"


def test_windows(client, make_worker):
    now = time.time()
    old = now - 3 * 3600
    client.submit(
        [
            prediction("new", output="Paris", produced_at_s=now - 60),
            prediction("old", output="Rome", produced_at_s=old),
        ],
        batch_id="b1",
        model="m1",
    )
    drain(make_worker("accuracy"))
    assert client.get_profile("m1", "all").counts.window_predictions == 2
    last_hour = client.get_profile("m1", "1h")
    assert last_hour.counts.window_predictions == 1
    assert dims(last_hour)["DIMENSION_KIND_ACCURACY"].score == 1.0
    assert last_hour.window.resolution_seconds == 60
    assert last_hour.window.range.end_time.seconds >= int(now)
    assert client.get_profile("m1", "15m").counts.window_predictions == 1
    ranged = client.get_profile("m1", (datetime.fromtimestamp(old - 60, UTC), datetime.fromtimestamp(old + 60, UTC)))
    assert ranged.counts.window_predictions == 1
    assert dims(ranged)["DIMENSION_KIND_ACCURACY"].score == 0.0
    empty = client.get_profile(
        "m1", (datetime.fromtimestamp(now - 86400 * 30, UTC), datetime.fromtimestamp(now - 86400 * 29, UTC))
    )
    assert empty.counts.window_predictions == 0
    assert "in this window" in dims(empty)["DIMENSION_KIND_ACCURACY"].absent_reason


def test_watch_sends_a_fresh_profile_within_a_second(gateway, client, make_worker):
    client.submit([prediction("a")], batch_id="b1", model="m1")
    worker = make_worker("accuracy")
    drain(worker)
    received: list[tuple[float, pp.Profile]] = []
    with gateway.client() as watcher:
        stream = watcher.watch_profile("m1")

        def consume() -> None:
            for profile in stream:
                received.append((time.monotonic(), profile))
                if len(received) == 2:
                    return

        t = threading.Thread(target=consume, daemon=True)
        t.start()
        deadline = time.monotonic() + 5
        while not received and time.monotonic() < deadline:
            time.sleep(0.01)
        assert received and received[0][1].counts.window_predictions == 1
        client.submit([prediction("b"), prediction("c")], batch_id="b2", model="m1")
        drain(worker)
        t.join(5)
        stream.cancel() if hasattr(stream, "cancel") else None
    assert len(received) == 2
    assert received[1][1].counts.window_predictions == 3
