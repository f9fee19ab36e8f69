"""PII redaction at ingest (HOLISTIC_REDACT=on): its cost per prediction beside the gateway's validation,
and its effect on exact match when outputs and references hold emails.

Cost: the demo's predictions in batches of 500, through validate() (the Python path) and through the
redactor (gateway/redaction.py), one core, no Redis: the time each adds to a batch before it is written.
Effect: two small models scored by the accuracy family with and without redaction; "same" answers
with the reference's own email, "other" with another person's email, so its exact match is 0 as sent
and 1 redacted: redaction makes answers that differ only in PII equal.
"""

from __future__ import annotations

import argparse
import time

from benchmarks._common import median, now, sample_predictions
from benchmarks._results import Figure, record
from gateway.redaction import Redactor
from gateway.validation import validate
from holistic.queue.v1.envelope_pb2 import BatchEnvelope
from holistic.settings import Settings, load_settings
from holistic.stats.mergeable import Folded, Stats
from holistic.v1 import prediction_pb2 as pb
from holistic.v1.evaluation_service_pb2 import SubmitPredictionsRequest
from metric_services.accuracy import AccuracyFamily

BATCH = 500


def per_prediction_us(requests: list[SubmitPredictionsRequest], step: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        copies = [SubmitPredictionsRequest.FromString(r.SerializeToString()) for r in requests]
        start = now()
        for request in copies:
            step(request)  # type: ignore[operator]
        times.append(now() - start)
    return median(times) / sum(len(r.predictions) for r in requests) * 1e6


def exact_match(predictions: list[pb.Prediction], redactor: Redactor | None, settings: Settings) -> float:
    request = SubmitPredictionsRequest(model="m", predictions=predictions)
    if redactor is not None:
        redactor.request(request)
    fam = AccuracyFamily()
    merged = Stats()
    for st in fam.compute(BatchEnvelope(predictions=request.predictions), settings).values():
        merged.merge(st)
    report = fam.fold(Folded.from_stats(merged), "m", settings).report
    return next(m.value for m in report.metrics if m.name == "exact_match")


def email_pair(kind: str, n: int = 100) -> list[pb.Prediction]:
    out = []
    for i in range(n):
        ref = f"Write to user{i}@example.com"
        answer = ref if kind == "same" else f"Write to someone{i}@example.org"
        p = pb.Prediction(id=f"{kind}{i}", scenario="contact_qa", task=pb.TASK_OPEN_QA, input="Whom?", output=answer)
        p.references.append(ref)
        out.append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--predictions", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    settings = load_settings(redis_url="unix:///unused", redact="on")
    redactor = Redactor(settings)
    preds = sample_predictions(args.predictions)
    requests = [SubmitPredictionsRequest(model="bench", batch_id=f"b{i}", predictions=preds[i : i + BATCH])
                for i in range(0, len(preds), BATCH)]  # fmt: skip
    at = time.time()
    validation = per_prediction_us(requests, lambda r: validate(r, settings, at), args.runs)
    redaction = per_prediction_us(requests, redactor.request, args.runs)
    changed = sum(redactor.request(SubmitPredictionsRequest(predictions=[p])) for p in preds[:BATCH])
    print(f"{args.predictions:,} demo predictions in batches of {BATCH}; median of {args.runs} runs; one core")
    print(f"validation (Python path)   {validation:8.1f} us/prediction")
    print(f"redaction                  {redaction:8.1f} us/prediction  ({changed} of {BATCH} predictions changed)")
    plain = {kind: exact_match(email_pair(kind), None, settings) for kind in ("same", "other")}
    redacted = {kind: exact_match(email_pair(kind), redactor, settings) for kind in ("same", "other")}
    for kind in ("same", "other"):
        print(f"exact match, {kind:5} email: {plain[kind]:.2f} as sent, {redacted[kind]:.2f} redacted")
    note = "Presidio's analyzer runs only on texts a cheap regex says could hold an entity"
    figures = [
        Figure("redaction per prediction (demo data)", redaction, "us", "validation per prediction", validation,
               higher_is_better=False, note=note),
        Figure("exact match, output with another email than the reference, redacted", redacted["other"], "share",
               "as sent", plain["other"], note="redaction makes answers that differ only in PII equal"),
        Figure("exact match, output with the reference's email, redacted", redacted["same"], "share",
               "as sent", plain["same"]),
    ]  # fmt: skip
    record("redaction", figures)


if __name__ == "__main__":
    main()
