"""gen_ai.evaluation.result events out (HOLISTIC_OTLP_EVAL_*): what they add to a worker, and how fast they go.

1. A worker's CPU per prediction: the accuracy and calibration families' compute on the demo's predictions
   in batches of 500, alone and with the events of its sample built (HOLISTIC_OTLP_EVAL_SAMPLE_RATE 0.01
   and 1: the sampling hash, the family's prediction_scores, one LogRecord each), one core,
   time.process_time, median of --runs. Sending is off this path (a queue and a thread).
2. Sending: N records to a local OTLP logs collector, by holistic's sender (ExportLogsServiceRequest
   from opentelemetry-proto, 512 a request, one thread) over OTLP/gRPC and over OTLP/HTTP (protobuf, to a
   stdlib http.server collector), beside the OpenTelemetry SDK's own BatchLogRecordProcessor with its
   OTLP/gRPC exporter (the same 512 a batch): records a second and this process's CPU per record, until
   the collector has them all.
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc

from benchmarks._common import batches, median, sample_predictions
from benchmarks._results import Figure, record
from holistic.process import evaluation_events
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import load_settings
from metric_services import accuracy, calibration

BATCH = 500


class Counting(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def Export(self, request, context):
        k = sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
        with self.lock:
            self.n += k
        return logs_service_pb2.ExportLogsServiceResponse()


def worker_cpu_us(family: Any, envelopes: list[BatchEnvelope], rate: float | None, runs: int) -> float:
    settings = load_settings(redis_url="unix:///unused")
    times = []
    for _ in range(runs):
        start = time.process_time()
        for env in envelopes:
            family.compute(env, settings)
            if rate is None:
                continue
            for p in env.predictions:
                if evaluation_events.in_sample("bench", p.scenario, p.id, rate):
                    for score in family.prediction_scores(p, settings):
                        evaluation_events.record(score, response_id=p.id, attributes={"holistic.model": "bench"})
        times.append(time.process_time() - start)
    return median(times) / sum(len(e.predictions) for e in envelopes) * 1e6


def wait_for(collector: Counting, n: int) -> None:
    while collector.n < n:
        time.sleep(0.001)


def http_collector(collector: Counting) -> ThreadingHTTPServer:
    """OTLP/HTTP: POST /v1/logs, protobuf in and out, counted into the same Counting."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
            collector.Export(request, None)
            reply = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def holistic_sender(endpoint: str, collector: Counting, n: int) -> tuple[float, float]:
    sender = evaluation_events.EvaluationSender(endpoint, "bench", cap=n)
    rec = evaluation_events.record(evaluation_events.Score("relevance", 0.5), response_id="p1")
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        sender.offer(rec)
    wait_for(collector, n)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    sender.close()
    return n / wall, used / n * 1e6


def sdk_exporter(endpoint: str, collector: Counting, n: int) -> tuple[float, float]:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    provider = LoggerProvider()
    exporter = OTLPLogExporter(endpoint=endpoint, insecure=True)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter, max_queue_size=n, max_export_batch_size=512))
    logger = provider.get_logger("bench")
    attrs = {"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.5, "gen_ai.response.id": "p1"}
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        logger.emit(event_name="gen_ai.evaluation.result", attributes=attrs)
    provider.force_flush()
    wait_for(collector, n)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    provider.shutdown()
    return n / wall, used / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--predictions", type=int, default=20_000)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    preds = sample_predictions(args.predictions)
    envelopes = batches(preds, BATCH, int(time.time()))
    figures = []
    for family in (accuracy.FAMILY, calibration.FAMILY):
        base = worker_cpu_us(family, envelopes, None, args.runs)
        print(f"{family.name} worker, CPU µs per prediction: compute alone {base:.2f}")
        for rate in (0.01, 1.0):
            with_events = worker_cpu_us(family, envelopes, rate, args.runs)
            print(f"  with events at sample rate {rate:g}: {with_events:.2f} ({with_events / base:.3f}x)")
            figures.append(
                Figure(f"{family.name} worker CPU per prediction, events at sample rate {rate:g}", with_events, "us",
                       "the family's compute alone", base, higher_is_better=False,
                       note="choosing the sample, the family's per-prediction scores, one log record each")
            )  # fmt: skip

    collector = Counting()
    http = http_collector(collector)
    try:
        rate, cpu_us = holistic_sender(f"http://127.0.0.1:{http.server_address[1]}/v1/logs", collector, args.records)
    finally:
        http.shutdown()
    print(f"holistic sender, OTLP/HTTP: {rate:,.0f} records/s, {cpu_us:.1f} CPU µs per record (sender and collector)")
    senders = {"holistic sender, OTLP/HTTP": cpu_us}
    for name, run in (("holistic sender, OTLP/gRPC", holistic_sender), ("OpenTelemetry SDK, OTLP/gRPC", sdk_exporter)):
        collector = Counting()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(collector, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            rate, cpu_us = run(f"127.0.0.1:{port}", collector, args.records)
        finally:
            server.stop(0)
        print(f"{name}: {rate:,.0f} records/s, {cpu_us:.1f} CPU µs per record (sender and collector, one process)")
        senders[name] = cpu_us
    sdk = senders.pop("OpenTelemetry SDK, OTLP/gRPC")
    figures += [
        Figure(f"{name}: CPU per record sent", cpu_us, "us", "OpenTelemetry SDK's BatchLogRecordProcessor, OTLP/gRPC",
               sdk, higher_is_better=False, note="sender and a local collector in one process")
        for name, cpu_us in senders.items()
    ]  # fmt: skip
    record("evaluation_events", figures)


if __name__ == "__main__":
    main()
