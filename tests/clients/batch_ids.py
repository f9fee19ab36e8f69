"""Batch ids as the Python client derives them, per batch of a file: what the other languages must match."""

from __future__ import annotations

from pathlib import Path

from holistic.v1 import evaluation_service_pb2 as es
from holistic.v1.prediction_pb2 import Prediction
from holistic_client.client import Client
from holistic_client.jsonl import read_predictions
from holistic_client.submit_encoding import content_batch_id

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "cross_language.jsonl"
MAPS = ROOT / "tests" / "fixtures" / "batch_id_maps.jsonl"  # maps out of key order: ids must not care


class _Recorder(Client):
    """The Python client's own batching, with each batch's id recorded instead of sent."""

    def __init__(self) -> None:
        super().__init__("127.0.0.1:1")  # a lazy channel: nothing connects
        self.sent: list[tuple[str, str, str]] = []

    def submit_encoded(self, encoded, *, batch_id=None, model=""):  # type: ignore[no-untyped-def,override]
        predictions = [Prediction.FromString(data) for data in encoded]
        request = es.SubmitPredictionsRequest(model=model, predictions=predictions)
        self.sent.append((content_batch_id(request), str(len(predictions)), predictions[0].model or model))
        return es.SubmitPredictionsResponse(accepted_count=len(predictions))


def python_batch_ids(path: Path, model: str, batch_size: int) -> list[tuple[str, str, str]]:
    """(id, predictions, model) per batch, in the order the Python client sends the file."""
    with _Recorder() as recorder:
        report = recorder.submit_lines(read_predictions(path), batch_size=batch_size, model=model)
    assert not report.rejected, report.rejected
    return recorder.sent
