"""A worker sends gen_ai.evaluation.result events for its scored predictions (HOLISTIC_OTLP_EVAL_*)."""

from __future__ import annotations

import binascii
import time
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from holistic.errors import ConfigError
from holistic.process.otlp_export import parse_headers, resolve
from holistic.settings import load_settings
from holistic.v1 import prediction_pb2 as pb
from tests.conftest import drain
from tests.factories import prediction
from tests.otlp_collector import Collector, HttpCollector


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.stop()


def _events(outcome: str) -> float:
    return REGISTRY.get_sample_value("holistic_evaluation_events_total", {"outcome": outcome}) or 0.0


def test_each_scored_prediction_sends_its_main_metric_as_the_convention_says(
    client, make_worker, make_settings, collector
):
    perturbed = prediction("p1-typo", output="Rome")
    perturbed.perturbation.name, perturbed.perturbation.original_id = "typos", "p1"
    perturbed.perturbation.family = pb.PERTURBATION_FAMILY_ROBUSTNESS
    preds = [
        prediction("p1", output="Paris", produced_at_s=1_780_000_000.5),  # multiple choice: exact_match 1
        prediction("p2", output="Rome"),  # exact_match 0
        prediction("p3", task=pb.TASK_OPEN_QA, scenario="qa", output="the capital Paris"),  # f1 2/3, no label
        prediction("p4", references=[], correct=True),  # the client's judgement
        prediction("p5", references=[]),  # nothing to score it by: no event
        perturbed,  # not in the run cell: no event
    ]
    client.submit(preds, model="m", batch_id="b1")
    worker_settings = make_settings(otlp_eval_endpoint=collector.endpoint, otlp_eval_sample_rate=1.0)
    worker = make_worker("accuracy", worker_settings)
    sent = _events("sent")
    drain(worker)
    events = {e["gen_ai.response.id"]: e for e in collector.events(4)}
    worker.evaluations.close()
    assert sorted(events) == ["p1", "p2", "p3", "p4"] and len(collector.records) == 4
    assert events["p1"] == {
        "gen_ai.evaluation.name": "exact_match",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "correct",
        "gen_ai.evaluation.explanation": "Exact match: Output equals a reference exactly (after stripping).",
        "gen_ai.response.id": "p1",
        "holistic.model": "m",
        "holistic.tenant": "default",
        "holistic.scenario": "mmlu",
        "holistic.task": "multiple_choice",
        "holistic.family": "accuracy",
    }
    assert (events["p2"]["gen_ai.evaluation.score.value"], events["p2"]["gen_ai.evaluation.score.label"]) == (
        0.0,
        "incorrect",
    )
    assert events["p3"]["gen_ai.evaluation.name"] == "f1_score"
    assert events["p3"]["gen_ai.evaluation.score.value"] == pytest.approx(2 / 3)
    assert "gen_ai.evaluation.score.label" not in events["p3"]
    assert events["p4"]["gen_ai.evaluation.score.label"] == "correct"
    resource, p1 = next((res, rec) for res, rec in collector.records if rec.attributes[4].value.string_value == "p1")
    assert resource == {"service.name": "holistic-accuracy"}
    assert p1.event_name == "gen_ai.evaluation.result" and not p1.HasField("body")  # the convention's empty body
    assert p1.time_unix_nano == 1_780_000_000_500_000_000  # when the model answered
    assert _events("sent") - sent == 4

    drain(make_worker("accuracy", worker_settings))  # nothing new: a batch is sent for once
    time.sleep(0.2)
    assert len(collector.records) == 4


def test_the_sample_is_the_hash_of_the_prediction_and_off_is_the_default(client, make_worker, make_settings, collector):
    preds = [prediction(f"p{i}") for i in range(200)]
    client.submit(preds, model="m", batch_id="b1")
    assert make_worker("accuracy").evaluations is None  # no endpoint: nothing is built, nothing sent
    worker = make_worker("accuracy", make_settings(otlp_eval_endpoint=collector.endpoint, otlp_eval_sample_rate=0.1))
    drain(worker)
    kept = sorted(p.id for p in preds if binascii.crc32(f"m\0mmlu\0{p.id}".encode()) / 2**32 < 0.1)  # by hand
    assert 5 < len(kept) < 40
    got = collector.events(len(kept))
    worker.evaluations.close()
    assert sorted(e["gen_ai.response.id"] for e in got) == kept


def test_a_full_queue_or_a_refusing_collector_drops_counted_and_scoring_goes_on(client, make_worker, make_settings):
    down = Collector(refuse=True)
    try:
        client.submit([prediction(f"p{i}") for i in range(50)], model="m", batch_id="b1")
        settings = make_settings(otlp_eval_endpoint=down.endpoint, otlp_eval_sample_rate=1.0, otlp_eval_queue=1)
        worker = make_worker("accuracy", settings)
        full, failed = _events("dropped_queue_full"), _events("dropped_export_failed")
        drain(worker)
        worker.evaluations.close()
        dropped_full = _events("dropped_queue_full") - full
        dropped_failed = _events("dropped_export_failed") - failed
        assert dropped_full >= 48 and dropped_full + dropped_failed == 50  # none blocked, every one counted
        assert worker.counters.applied == 1 and worker.counters.predictions == 50
    finally:
        down.stop()


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_events_reach_an_otlp_grpc_or_http_collector_with_the_configured_headers(
    client, make_worker, make_settings, kind, caplog
):
    """HOLISTIC_OTLP_EVAL_HEADERS arrive as gRPC metadata or HTTP headers (values URL-decoded); an endpoint with a
    path is OTLP/HTTP, a bare host:port OTLP/gRPC; a refusing collector is logged without the secret."""
    collector = HttpCollector() if kind == "http" else Collector()
    try:
        client.submit([prediction("p1", output="Paris"), prediction("p2", output="Rome")], model="m", batch_id="b1")
        headers = "X-Api-Key=s3cr%3Dt, tenant = acme"
        worker = make_worker(
            "accuracy",
            make_settings(otlp_eval_endpoint=collector.endpoint, otlp_eval_sample_rate=1.0, otlp_eval_headers=headers),
        )
        drain(worker)
        events = {e["gen_ai.response.id"]: e for e in collector.events(2)}
        worker.evaluations.close()
        assert (events["p1"]["gen_ai.evaluation.score.value"], events["p2"]["gen_ai.evaluation.score.value"]) == (
            1.0,
            0.0,
        )
        assert collector.headers and all(
            h["x-api-key"] == "s3cr=t" and h["tenant"] == "acme" for h in collector.headers
        )
        if kind == "http":
            assert set(collector.paths) == {"/v1/logs"} and collector.headers[0]["content-type"] == (
                "application/x-protobuf"
            )
        collector.refuse = True
        client.submit([prediction("p3")], model="m", batch_id="b2")
        failed = _events("dropped_export_failed")
        with caplog.at_level("WARNING"):
            drain(worker := make_worker("accuracy", worker.settings))
            worker.evaluations.close()
        assert _events("dropped_export_failed") - failed == 1
        assert "dropped" in caplog.text and "s3cr" not in caplog.text and "s3cr" not in repr(worker.settings)
    finally:
        collector.stop()


def test_the_protocol_follows_the_setting_else_the_endpoint_and_bad_headers_name_no_value() -> None:
    assert resolve("collector:4317") == ("grpc", "collector:4317")
    assert resolve("https://collector:4317") == ("grpc", "https://collector:4317")
    assert resolve("https://collector:4318/v1/logs") == ("http/protobuf", "https://collector:4318/v1/logs")
    assert resolve("collector:4318", "http/protobuf") == ("http/protobuf", "http://collector:4318/v1/logs")
    assert resolve("http://collector:4318/otlp/logs", "http/protobuf")[1] == "http://collector:4318/otlp/logs"
    with pytest.raises(ValueError, match="without a path"):
        resolve("http://collector:4318/v1/logs", "grpc")
    assert parse_headers("a=1,,B=x%2Cy=z") == (("a", "1"), ("b", "x,y=z"))
    with pytest.raises(ConfigError) as err:
        load_settings(otlp_eval_headers="good=fine,secret-value-without-key")
    assert "HOLISTIC_OTLP_EVAL_HEADERS entry 2" in str(err.value) and "secret-value" not in str(err.value)
