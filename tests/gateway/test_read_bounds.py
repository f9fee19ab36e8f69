"""Profile reads cost bounded work whatever window is asked for (issue 14, defect 1).

The gateway reads statistics in tiers (minute, hour, day, 16 and 256 days), so a range of any length
reads a bounded number of buckets; a read beyond HOLISTIC_MAX_WINDOW_BUCKETS is INVALID_ARGUMENT,
and an unknown model is NOT_FOUND before any statistics are read. ListModels is charged to the
tenant's read budget by the models of its page (its pages: test_list_models_pages.py).
"""

from __future__ import annotations

import time

import grpc
import pytest
from grpc_status import rpc_status

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1 import evaluation_service_pb2_grpc as es_grpc
from tests.conftest import drain
from tests.factories import prediction

DAY = 86_400
EARLIEST_DATA_S = 946_684_800  # 2000-01-01: produced_at before it is refused at ingest
YEAR_9999_END = 253_402_300_799  # 9999-12-31T23:59:59Z, the last valid protobuf Timestamp


def ranged(model: str, start_s: int, end_s: int) -> es.GetProfileRequest:
    req = es.GetProfileRequest(model=model)
    req.range.start_time.seconds = start_s
    req.range.end_time.seconds = end_s
    return req


def hgetall_calls(r) -> int:
    return int(r.info("commandstats").get("cmdstat_hgetall", {}).get("calls", 0))


@pytest.fixture
def stub(gateway):
    with grpc.insecure_channel(gateway.address) as channel:
        yield es_grpc.EvaluationServiceStub(channel)


def test_any_range_reads_a_bounded_number_of_buckets_and_counts_every_tier(gateway, stub, make_worker, r):
    now = time.time()
    # noon of the day 800 days ago: a read around it rounds to hours, then to a whole day, whatever the
    # time of day now (around midnight an hour-rounded edge is already a day boundary)
    old_noon = (now - 800 * DAY) // DAY * DAY + DAY / 2
    # one prediction in each of: this minute, 40 days ago, 800 days ago (past hour retention: day tier)
    preds = [
        prediction("now", produced_at_s=now - 30),
        prediction("d40", output="Rome", produced_at_s=now - 40 * DAY),
        prediction("d800", produced_at_s=old_noon),
    ]
    stub.SubmitPredictions(es.SubmitPredictionsRequest(batch_id="b1", model="m1", predictions=preds))
    drain(make_worker("accuracy"))
    families = len(gateway.settings.families)
    # ten years first: before the tiers this read 87,600 hour buckets per family (and 1970..9999,
    # below, ~70 million: the gateway grew past 14 GB)
    r.config_resetstat()
    decade = stub.GetProfile(ranged("m1", int(now - 3650 * DAY), int(now))).profile
    assert hgetall_calls(r) <= 1 + families * (224 + 15)
    assert decade.counts.window_predictions == 3
    r.config_resetstat()
    everything = stub.GetProfile(ranged("m1", 0, YEAR_9999_END)).profile  # 1970 .. 9999
    calls = hgetall_calls(r)
    assert everything.counts.window_predictions == 3
    w = everything.window
    assert w.range.start_time.seconds == EARLIEST_DATA_S  # no data can exist before 2000-01-01
    assert w.range.end_time.seconds <= now + gateway.settings.future_skew_s + 120
    assert (w.requested_range.start_time.seconds, w.requested_range.end_time.seconds) == (0, YEAR_9999_END)
    assert (w.start_resolution_seconds, w.end_resolution_seconds) == (60, 60)
    # at most 2 x 112 edge buckets plus one per 256 days since 2000 (~39), per family, plus the meta hash
    assert calls <= 1 + families * (224 + 40)
    # 40 days ago alone, through day and 16-day buckets: the one wrong answer
    mid = stub.GetProfile(ranged("m1", int(now - 50 * DAY), int(now - 30 * DAY))).profile
    assert mid.counts.window_predictions == 1
    acc = next(d for d in mid.dimensions if d.kind == 1)  # accuracy
    assert acc.score == 0.0
    # 800 days ago: hour buckets there have expired (400-day retention), the edges round out to days
    old = stub.GetProfile(ranged("m1", int(old_noon - 600), int(old_noon + 600))).profile
    assert old.counts.window_predictions == 1
    assert (old.window.start_resolution_seconds, old.window.end_resolution_seconds) == (DAY, DAY)
    assert old.window.resolution_seconds == DAY


def test_a_read_over_the_bucket_ceiling_is_invalid_argument_naming_the_range(make_gateway):
    gw = make_gateway(max_window_buckets=20)
    with grpc.insecure_channel(gw.address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        stub.SubmitPredictions(es.SubmitPredictionsRequest(batch_id="b1", model="m1", predictions=[prediction("a")]))
        now = int(time.time())
        # 30 minutes not on an hour boundary: 30 minute buckets > 20
        start = now // 3600 * 3600 - 7200 + 60
        with pytest.raises(grpc.RpcError) as exc:
            stub.GetProfile(ranged("m1", start, start + 1800))
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        status = rpc_status.from_call(exc.value)
        assert "range" in exc.value.details() and "HOLISTIC_MAX_WINDOW_BUCKETS" in exc.value.details()
        assert status is not None
        # 10 minutes fits
        assert stub.GetProfile(ranged("m1", start, start + 600)).profile.counts.window_predictions == 0


def test_an_unknown_model_is_not_found_before_any_statistics_are_read(stub, r):
    r.config_resetstat()
    with pytest.raises(grpc.RpcError) as exc:
        stub.GetProfile(ranged("nobody", int(time.time() - 30 * DAY), int(time.time())))
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    assert hgetall_calls(r) == 0


def test_a_range_outside_valid_timestamps_is_invalid_argument(stub):
    with pytest.raises(grpc.RpcError) as exc:
        stub.GetProfile(ranged("m1", 0, YEAR_9999_END + 1))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "range.end_time" in exc.value.details()


def list_models(stub) -> list[str]:
    return [m.model for m in stub.ListModels(es.ListModelsRequest()).models]


def submit_to(stub, *models: str) -> None:
    """One prediction to each model: the tenant has these models."""
    for model in models:
        stub.SubmitPredictions(es.SubmitPredictionsRequest(batch_id="b1", model=model, predictions=[prediction("a")]))


def test_list_models_is_charged_to_the_tenants_read_budget(make_gateway):
    """A page of 60 models costs 1 + 60 // 10 = 7 buckets: at 1 bucket a second the first listing overdraws
    the budget (a read may, once) and the next, which would wait about 6 s (over 2 s), is refused."""
    gw = make_gateway(tenant_read_buckets_per_s=1)
    with grpc.insecure_channel(gw.address) as channel:
        stub = es_grpc.EvaluationServiceStub(channel)
        submit_to(stub, *(f"m{i:02}" for i in range(60)))
        assert len(list_models(stub)) == 60
        with pytest.raises(grpc.RpcError) as exc:
            list_models(stub)
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "read budget" in exc.value.details()
